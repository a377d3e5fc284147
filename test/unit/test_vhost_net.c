// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_vhost_net.c - the vhost-user RX path against RX rings a guest lays out
 * badly: frames reserved in place (vu_net_seg_reserve()) get their full
 * room or aren't reserved, within the iovecs the caller has, and never the
 * same head twice; tap_seg_trim() stays within the frames' own pieces;
 * vu_net_send() gives back what it took when the next chain is one it
 * holds already.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "ctx.h"
#include "tap/tap.h"
#include "vhost/net.h"
#include "test/tools/common/vring_desc.h"

#define Q 256
#define MEM (1 << 20)
#define QVA 0x7000000ULL

#define DESC_GPA 0x0
#define AVAIL_GPA 0x1000
#define USED_GPA 0x2000
#define BUF_GPA 0x10000

/* TCP over IPv4 behind Ethernet, and an MSS's worth */
#define HLEN (14 + 20 + 20)
#define PLEN 1460

static uint8_t guest[MEM] __attribute__((aligned(4096)));
static uint64_t inflight[VQ_INFLIGHT_WORDS];
static struct ctx c;
static struct virtq *vq = &vu_dev.vq[VU_RX_Q];
static uint16_t avail_idx;

static int setup(void **state)
{
	(void)state;
	memset(guest, 0, sizeof(guest));
	memset(&vu_dev.mem, 0, sizeof(vu_dev.mem));
	vu_dev.mem.n = 1;
	vu_dev.mem.r[0] = (struct vu_region){ .gpa = 0, .size = MEM,
					      .qva = QVA, .map = guest,
					      .map_len = MEM };
	vu_dev.fd = 1000;	/* "connected": never used for I/O here */
	vu_dev.features = 0;	/* no MRG_RXBUF, no offloads */
	vq->inflight = inflight;
	vq_reset(vq);
	vq->size = Q;
	vq->desc_qva = QVA + DESC_GPA;
	vq->avail_qva = QVA + AVAIL_GPA;
	vq->used_qva = QVA + USED_GPA;
	vq->addr_set = true;
	assert_int_equal(vq_translate(vq, &vu_dev.mem), 0);
	vq->started = vq->enabled = true;
	vu_net_rx_select(0);
	avail_idx = 0;
	return 0;
}

static void desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	uint8_t *d = guest + DESC_GPA + 16 * i;

	vring_desc_put(d, addr, len, flags, next);
}

static void offer(uint16_t head)
{
	uint16_t h = htole16(head), i;

	memcpy(guest + AVAIL_GPA + 4 + 2 * (avail_idx % Q), &h, 2);
	avail_idx++;
	i = htole16(avail_idx);
	memcpy(guest + AVAIL_GPA + 2, &i, 2);
}

static uint16_t used_idx(void)
{
	uint16_t v;

	memcpy(&v, guest + USED_GPA + 2, 2);
	return le16toh(v);
}

/* Issue 42's chain at head @h: 64 descriptors, 66 bytes (virtio-net and
 * frame headers, exactly), then 63 of 24 bytes: 61 pieces for an MSS
 */
static void chain_issue42(uint16_t h, uint64_t buf)
{
	unsigned i;

	desc(h, buf, 12 + HLEN, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT,
	     (uint16_t)(h + 1));
	buf += 12 + HLEN;
	for (i = 1; i < 64; i++, buf += 24)
		desc(h + i, buf, 24,
		     VQ_DESC_F_WRITE | (i < 63 ? VQ_DESC_F_NEXT : 0),
		     (uint16_t)(h + i + 1));
}

/* Without MRG_RXBUF, a frame is one chain: when the iovecs run out in the
 * middle of one, the frame would be short. Issue 42: it was reserved so,
 * and TCP, counting on full frames, walked past the end of its iovec
 * array. It must be given back instead
 */
static void test_frame_without_full_room_is_given_back(void **state)
{
	struct tap_seg seg[4];
	struct iovec iov[4 * 61];
	unsigned n, i;

	(void)state;
	for (i = 0; i < 4; i++) {
		chain_issue42((uint16_t)(64 * i), BUF_GPA + 0x1000 * i);
		offer((uint16_t)(64 * i));
	}
	/* Room for three frames' pieces and 60 of the fourth's */
	n = vu_net_seg_reserve(&c, HLEN, PLEN, 4, seg, iov, 3 * 61 + 60);
	assert_int_equal(n, 3);
	for (i = 0; i < n; i++) {
		assert_int_equal(seg[i].cap, PLEN);
		assert_int_equal(seg[i].niov, 61);
		assert_int_equal(seg[i].iov, 61 * i);
	}
	assert_int_equal(vq->last_avail, 3);	/* the fourth went back */

	/* Nothing sent: all back, and none of them ours any more */
	vu_net_seg_done(&c);
	assert_int_equal(vq->last_avail, 0);
	assert_int_equal(used_idx(), 0);
	n = vu_net_seg_reserve(&c, HLEN, PLEN, 4, seg, iov, 4 * 61);
	assert_int_equal(n, 4);
	vu_net_seg_done(&c);
}

/* The same head in every entry: one frame, not one per entry (their
 * buffers would be the same), and the rest stays available
 */
static void test_same_head_is_reserved_once(void **state)
{
	struct tap_seg seg[8];
	struct iovec iov[UIO_MAXIOV];
	unsigned n, i;

	(void)state;
	chain_issue42(0, BUF_GPA);
	for (i = 0; i < Q; i++)
		offer(0);
	n = vu_net_seg_reserve(&c, HLEN, PLEN, 8, seg, iov, UIO_MAXIOV);
	assert_int_equal(n, 1);
	assert_int_equal(vq->last_avail, 1);
	assert_false(vq->broken);
	vu_net_seg_done(&c);
	assert_int_equal(vq->last_avail, 0);
	/* Sent and used: the next entry gives the head again */
	n = vu_net_seg_reserve(&c, HLEN, PLEN, 8, seg, iov, UIO_MAXIOV);
	assert_int_equal(n, 1);
	memset(seg[0].l2, 0, HLEN);
	assert_int_equal(vu_net_seg_commit(&c, &seg[0], iov, HLEN + 100, 0, 0,
					   0, AF_INET), 0);
	vu_net_seg_done(&c);
	assert_int_equal(used_idx(), 1);
	n = vu_net_seg_reserve(&c, HLEN, PLEN, 8, seg, iov, UIO_MAXIOV);
	assert_int_equal(n, 1);
	assert_int_equal(vq->last_avail, 2);
	vu_net_seg_done(&c);
}

/* With MRG_RXBUF, tiny chains: every frame takes many, within the
 * iovecs given, all frames full
 */
static void test_mergeable_frames_stay_within_the_iovecs(void **state)
{
	struct tap_seg seg[64];
	struct iovec iov[100];
	size_t total = 0;
	unsigned n, i, niov = 0;

	(void)state;
	vu_dev.features = 1ULL << VIRTIO_NET_F_MRG_RXBUF;
	/* Chains of two descriptors: 80 bytes, then 100 */
	for (i = 0; i < Q / 2; i++) {
		desc(2 * i, BUF_GPA + 256 * i, 80,
		     VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, (uint16_t)(2 * i + 1));
		desc(2 * i + 1, BUF_GPA + 256 * i + 80, 100, VQ_DESC_F_WRITE,
		     0);
		offer((uint16_t)(2 * i));
	}
	n = vu_net_seg_reserve(&c, HLEN, PLEN, 64, seg, iov, 100);
	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(seg[i].cap, PLEN);
		assert_int_equal(seg[i].iov, niov);
		niov += seg[i].niov;
	}
	assert_true(niov <= 100);

	/* Trimmed to more than they hold: all of them, no further */
	total = 1 << 20;
	assert_int_equal(tap_seg_trim(seg, n, iov, &total), niov);
	assert_int_equal(total, (size_t)n * PLEN);
	/* ...or to less: cut inside the second frame */
	total = PLEN + 30;
	i = tap_seg_trim(seg, n, iov, &total);
	assert_int_equal(total, PLEN + 30);
	assert_true(i > seg[1].iov && i <= seg[1].iov + seg[1].niov);
	vu_net_seg_done(&c);
	assert_int_equal(vq->last_avail, 0);
}

/* A frame spanning chains (MRG_RXBUF) whose next chain is one it holds
 * already: nothing sent, everything given back
 */
static void test_send_stops_at_a_head_it_holds(void **state)
{
	uint8_t frame[300] = { 0 };

	(void)state;
	vu_dev.features = 1ULL << VIRTIO_NET_F_MRG_RXBUF;
	desc(5, BUF_GPA, 200, VQ_DESC_F_WRITE, 0);
	offer(5);
	offer(5);
	assert_int_equal(vu_net_send(&c, frame, sizeof(frame)), -ENOBUFS);
	assert_int_equal(vq->last_avail, 0);
	assert_int_equal(used_idx(), 0);
	assert_false(vq->broken);
	/* A frame that fits one chain goes, twice */
	assert_int_equal(vu_net_send(&c, frame, 100), 0);
	assert_int_equal(vu_net_send(&c, frame, 100), 0);
	assert_int_equal(used_idx(), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(t) cmocka_unit_test_setup(t, setup)
		T(test_frame_without_full_room_is_given_back),
		T(test_same_head_is_reserved_once),
		T(test_mergeable_frames_stay_within_the_iovecs),
		T(test_send_stops_at_a_head_it_holds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
