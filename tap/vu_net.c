// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vu_net.c - the virtio-net data path of the vhost-user front-end: guest
 * frames in from the TX ring, frames out into the RX ring.
 *
 * Theory of operation
 *
 * Every buffer the guest posts carries a 12-byte virtio-net header (VIRTIO
 * 1.x, section 5.1.6) before the Ethernet frame. We offer no offloads, so
 * frames are plain and at most the MTU long, the header's only field that
 * matters is num_buffers on RX, and its flags are always zero.
 *
 * TX (guest to us, ring 1): on a kick, chains are taken from the ring, at
 * most VU_TX_BUDGET per call. A frame that lies in one piece of guest
 * memory after the header is handed to tap_input() in place: tap_input()
 * parses through bounds-checked views, so the guest changing the bytes
 * under us can confuse the parse but never make it read out of bounds.
 * A frame spread over several pieces is gathered into a static buffer
 * first. Protocols may keep pointers into the frames until
 * tap_input_end(), which we call at the end of the batch, before the
 * chains go back to the used ring (length 0) with one index update, and
 * after each gathered frame, as the next one reuses the buffer. If the budget ran out with
 * chains left, we write to our own kick eventfd so the loop comes back
 * to them after serving everybody else. A disabled (but started) ring is
 * drained and its frames dropped, as the spec asks.
 *
 * RX (us to the guest, ring 0): tap_send_frame() lands in vu_net_send(),
 * which copies the frame once, straight into the guest's buffers: the
 * header into the first chain, then the frame, continuing into further
 * chains (MRG_RXBUF) until it fits; num_buffers is then patched in the
 * first chain's header and all the chains' used entries are published with
 * one index update. Without buffers we give the chains back and return
 * -ENOBUFS: TCP keeps its data in the socket and tries again once
 * vu_net_room() (tap_tx_room()) says there is room, which it checks after
 * every loop round; a kick on the RX ring wakes the loop for that.
 * vu_net_room() estimates the room as available chains times the average
 * chain capacity seen so far.
 *
 * Interrupts: publishing used entries only marks a ring; vu_net_flush()
 * (tap_flush(), once per loop round) writes the call eventfds of the
 * marked rings unless the driver asked for no interrupts, and the log
 * eventfd if dirty pages were logged.
 *
 * A ring whose chains break the rules badly on RX (no writable buffer,
 * loops, addresses outside guest memory), or whose available index is
 * impossible, is marked broken and ignored until QEMU sets it up again;
 * on TX, a bad chain is returned with length 0 and the ring goes on.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "tap/tap.h"
#include "tap/vhost_user.h"
#include "util.h"

/* Chains taken from the TX ring per call, before yielding to the loop */
#define VU_TX_BUDGET 256
/* Frames up to this long (after the header) are accepted from the guest */
#define VU_FRAME_MAX 65535
/* Guess of the capacity of one RX chain until we've seen some */
#define VU_RX_CAP_GUESS 1536

static uint8_t tx_buf[VU_FRAME_MAX];
static struct vq_elem tx_elem;

static struct vq_elem rx_first, rx_elem;
static uint16_t rx_heads[VQ_MAX_SIZE];
static uint32_t rx_lens[VQ_MAX_SIZE];

static struct {
	uint64_t tx_bad, tx_dropped, rx_nobufs;
} vu_stats;

/* Mark a ring broken: ignore it until it is set up again */
static void vu_net_broken(struct virtq *vq, unsigned i, const char *why)
{
	warn_rl("vhost-user: ring %u: %s, ignoring it until it is set up "
		"again", i, why);
	vq->broken = true;
}

/* Hand one TX chain's frame to tap_input() */
static void vu_net_tx_one(struct ctx *c, const struct vq_elem *e)
{
	size_t len, off = VU_NET_HDR_LEN;
	unsigned i;

	if (e->out_len < VU_NET_HDR_LEN + 14 ||
	    e->out_len - VU_NET_HDR_LEN > VU_FRAME_MAX) {
		vu_stats.tx_dropped++;
		debug_rl("vhost-user: TX chain of %llu bytes dropped",
			 (unsigned long long)e->out_len);
		return;
	}
	len = e->out_len - VU_NET_HDR_LEN;

	/* Find the piece the frame starts in: in place if it all fits */
	for (i = 0; i < e->out_num; i++) {
		if (off < e->iov[i].len)
			break;
		off -= e->iov[i].len;
	}
	if (i < e->out_num && e->iov[i].len - off >= len) {
		tap_input(c, e->iov[i].base + off, len);
		return;
	}
	if (vq_copy_from(e, VU_NET_HDR_LEN, tx_buf, len) != len)
		return;
	tap_input(c, tx_buf, len);
	/* The next gathered frame overwrites tx_buf: end the batch here */
	tap_input_end(c);
}

/**
 * vu_net_tx() - take frames from the guest's TX ring
 * @c:		execution context
 */
void vu_net_tx(struct ctx *c)
{
	struct vu_dev *d = &vu_dev;
	struct virtq *vq = &d->vq[VU_TX_Q];
	unsigned n = 0, budget;
	uint64_t one = 1;
	int rc;

	if (!vq_ready(vq))
		return;
	for (budget = 0; budget < VU_TX_BUDGET; budget++) {
		rc = vq_pop(vq, &d->mem, &tx_elem);
		if (rc == -ENOENT)
			break;
		if (rc == -EIO) {
			vu_net_broken(vq, VU_TX_Q, "impossible avail index");
			break;
		}
		if (rc) {
			vu_stats.tx_bad++;
			warn_rl("vhost-user: bad TX descriptor chain (%s), "
				"dropped", strerror(-rc));
			if (tx_elem.head < vq->size)
				vq_fill(vq, &d->mem, n++, tx_elem.head, 0);
			continue;
		}
		trace("vhost-user: TX chain %u: %llu bytes in %u pieces",
		      tx_elem.head, (unsigned long long)tx_elem.out_len,
		      tx_elem.out_num);
		if (vq->enabled)
			vu_net_tx_one(c, &tx_elem);
		vq_fill(vq, &d->mem, n++, tx_elem.head, 0);
		/* tap_input() can't stop the ring, but be safe */
		if (!vq_ready(vq))
			break;
	}
	/* Protocols may point into the frames until this: before the guest
	 * gets its buffers back
	 */
	tap_input_end(c);
	if (vq->desc)
		vq_publish(vq, &d->mem, n);

	/* More than our budget: come back after the others had their turn */
	if (budget == VU_TX_BUDGET && vq_ready(vq) && vq->kick_fd >= 0 &&
	    write(vq->kick_fd, &one, sizeof(one)) < 0)
		debug("vhost-user: self-kick: %s", strerror(errno));
}

/**
 * vu_net_connected() - can frames be sent to the guest now?
 * @c:		execution context
 *
 * Return: non-zero if the RX ring is started and enabled
 */
int vu_net_connected(const struct ctx *c)
{
	const struct virtq *vq = &vu_dev.vq[VU_RX_Q];

	(void)c;
	return vu_dev.fd >= 0 && vq_ready(vq) && vq->enabled;
}

/**
 * vu_net_send() - copy one frame into the guest's RX buffers
 * @c:		execution context
 * @frame:	Ethernet frame
 * @len:	its length
 *
 * Return: 0, -ENOTCONN if the RX ring isn't running, -ENOBUFS if the
 *	   guest posted too few buffers (nothing was consumed), -EMSGSIZE
 *	   if the frame can't fit one buffer and MRG_RXBUF is off
 */
int vu_net_send(struct ctx *c, const void *frame, size_t len)
{
	struct vu_dev *d = &vu_dev;
	struct virtq *vq = &d->vq[VU_RX_Q];
	bool mrg = d->features & (1ULL << VIRTIO_NET_F_MRG_RXBUF);
	uint8_t hdr[VU_NET_HDR_LEN] = { 0 };
	size_t total = VU_NET_HDR_LEN + len, done = 0;
	unsigned n = 0, i;
	uint16_t nbuf;

	if (!vu_net_connected(c))
		return -ENOTCONN;

	hdr[10] = 1;	/* num_buffers, patched below if more */
	while (done < total) {
		struct vq_elem *e = n ? &rx_elem : &rx_first;
		size_t w = 0, hw;
		int rc;

		if (n >= vq->size) {
			vq_unpop(vq, n);
			return -ENOBUFS;
		}
		rc = vq_pop(vq, &d->mem, e);
		if (rc == -ENOENT) {
			vq_unpop(vq, n);
			vu_stats.rx_nobufs++;
			return -ENOBUFS;
		}
		if (rc || !e->in_num || e->out_num) {
			vq_unpop(vq, n + (rc == -EIO ? 0 : 1));
			vu_net_broken(vq, VU_RX_Q, rc == -EIO ?
				      "impossible avail index" :
				      "bad RX descriptor chain");
			return -ENOTCONN;
		}
		if (!mrg && e->in_len < total) {
			vq_unpop(vq, 1);
			debug_rl("vhost-user: RX buffer of %llu bytes too "
				 "small for a %zu-byte frame",
				 (unsigned long long)e->in_len, len);
			return -EMSGSIZE;
		}

		if (done < VU_NET_HDR_LEN) {
			hw = vq_copy_to(&d->mem, e, 0, hdr + done,
					VU_NET_HDR_LEN - done);
			done += hw;
			w += hw;
		}
		if (done >= VU_NET_HDR_LEN) {
			size_t fw = vq_copy_to(&d->mem, e, w,
					       (const uint8_t *)frame +
					       (done - VU_NET_HDR_LEN),
					       total - done);
			done += fw;
			w += fw;
		}
		vq->cap_est = vq->cap_est ?
			      (uint32_t)((vq->cap_est * 7ULL + e->in_len) / 8) :
			      (uint32_t)e->in_len;
		rx_heads[n] = e->head;
		rx_lens[n] = (uint32_t)w;
		n++;
	}

	if (n > 1) {
		nbuf = htole16((uint16_t)n);
		/* The header may itself span chains if they're tiny */
		if (rx_first.in_len >= VU_NET_HDR_LEN) {
			vq_copy_to(&d->mem, &rx_first, 10, &nbuf, 2);
		} else {
			vq_unpop(vq, n);
			return -ENOBUFS;
		}
	}
	for (i = 0; i < n; i++)
		vq_fill(vq, &d->mem, i, rx_heads[i], rx_lens[i]);
	vq_publish(vq, &d->mem, n);
	return 0;
}

/**
 * vu_net_room() - approximate bytes the guest's posted RX buffers can take
 * @c:		execution context
 *
 * Return: available chains times their estimated capacity, 0 if the RX
 *	   ring isn't running
 */
size_t vu_net_room(const struct ctx *c)
{
	const struct virtq *vq = &vu_dev.vq[VU_RX_Q];
	uint32_t cap;
	int n;

	if (!vu_net_connected(c))
		return 0;
	n = vq_avail_count(vq);
	if (n <= 0)
		return 0;
	cap = vq->cap_est ? vq->cap_est : VU_RX_CAP_GUESS;
	if (cap <= VU_NET_HDR_LEN)
		return 0;
	return (size_t)n * (cap - VU_NET_HDR_LEN);
}

/**
 * vu_net_flush() - interrupt the guest for rings with new used entries,
 *		    and tell QEMU about dirty pages
 * @c:		execution context
 */
void vu_net_flush(struct ctx *c)
{
	struct vu_dev *d = &vu_dev;
	uint64_t one = 1;
	unsigned i;

	(void)c;
	for (i = 0; i < VU_QUEUES; i++) {
		struct virtq *vq = &d->vq[i];

		if (!vq->need_call || !vq_ready(vq))
			continue;
		vq->need_call = false;
		if (vq->call_fd < 0 || !vq_notify_wanted(vq))
			continue;
		if (write(vq->call_fd, &one, sizeof(one)) < 0)
			debug_rl("vhost-user: call fd write: %s",
				 strerror(errno));
	}
	if (d->mem.log_dirty) {
		d->mem.log_dirty = false;
		if (d->log_call_fd >= 0 &&
		    write(d->log_call_fd, &one, sizeof(one)) < 0)
			debug_rl("vhost-user: log fd write: %s",
				 strerror(errno));
	}
}
