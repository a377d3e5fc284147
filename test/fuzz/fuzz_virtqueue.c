// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_virtqueue.c - vq_pop() and what the data path does with its chains
 * (copy out, copy in, used ring, dirty log), over guest memory the input
 * writes: descriptor table, available ring, indirect tables, all of it.
 *
 * Guest memory is two regions, each its own heap block of exactly the
 * mapped size, so ASan sees any access past a region: region 0 at guest
 * physical 0 (QEMU address 0x7000000), 8 KiB; region 1 at 0x10000 (QEMU
 * 0x9000000), 8 KiB, mapped at offset 256 of its block. The dirty log
 * covers only the first 16 pages, so region 1 lies past its end.
 *
 * Input: a 32-byte header, then guest memory contents (region 0, then
 * region 1; the rest is zero).
 *   h[0] bits 0-3: queue size 2^(n % 9); bit 4: ring addresses from
 *	  h[8..31] (QEMU addresses: desc, avail, used) instead of the fixed
 *	  layout; bit 5: dirty logging on
 *   h[1..2]: last_avail; h[3..4]: used_idx (little endian)
 *   h[5] bit 0: give the last chain back (vq_unpop()) and take it again
 *
 * Besides ASan and UBSan: every chain lies in guest memory and adds up;
 * no head is taken twice while we hold it (filled or given back, it may
 * come again).
 */
#include <endian.h>
#include <errno.h>

#include "fuzz_common.h"
#include "vhost/virtqueue.h"
#include "util.h"

#define R_SIZE	 8192
#define R1_OFF	 256
#define QVA0	 0x7000000ULL
#define QVA1	 0x9000000ULL
#define GPA1	 0x10000ULL
#define LOG_SIZE 2

/* Fixed layout in region 0, for queues up to 256 entries */
#define DESC_OFF  0x0
#define AVAIL_OFF 0x1000
#define USED_OFF  0x1400

static uint8_t copybuf[65536];

static bool iov_in_memory(const struct vu_mem *m, const struct vq_iov *v)
{
	unsigned i;

	for (i = 0; i < m->n; i++) {
		const struct vu_region *r = &m->r[i];

		if (v->base >= r->map && v->base - r->map <= (long)r->map_len &&
		    v->len <= r->map_len - (size_t)(v->base - r->map))
			return v->gpa >= r->gpa &&
			       v->gpa - r->gpa == (uint64_t)(v->base - r->map -
							     r->mmap_offset);
	}
	return false;
}

static void check_elem(const struct vu_mem *m, const struct virtq *vq,
		       const struct vq_elem *e)
{
	uint64_t out = 0, in = 0;
	unsigned i;

	FZ_CHECK(e->head < vq->size);
	FZ_CHECK(e->out_num + e->in_num <= VQ_IOV_MAX);
	FZ_CHECK(e->out_len + e->in_len <= UINT32_MAX);
	for (i = 0; i < e->out_num + e->in_num; i++) {
		FZ_CHECK(e->iov[i].len);
		FZ_CHECK(iov_in_memory(m, &e->iov[i]));
		if (i < e->out_num)
			out += e->iov[i].len;
		else
			in += e->iov[i].len;
	}
	FZ_CHECK(out == e->out_len && in == e->in_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vq_elem e;
	static bool held[VQ_MAX_SIZE];
	static uint64_t inflight[VQ_INFLIGHT_WORDS];
	uint8_t *r0, *r1, *log;
	struct virtq vq = { .inflight = inflight };
	struct vu_mem m;
	const uint8_t *h = data;
	unsigned pops = 0, filled = 0, max_pops;
	size_t n;
	int rc;

	if (size < 32)
		return 0;

	r0 = calloc(1, R_SIZE);
	r1 = calloc(1, R1_OFF + R_SIZE);
	log = calloc(1, LOG_SIZE);
	n = MIN(size - 32, (size_t)R_SIZE);
	memcpy(r0, data + 32, n);
	if (size - 32 > R_SIZE)
		memcpy(r1 + R1_OFF, data + 32 + R_SIZE,
		       MIN(size - 32 - R_SIZE, (size_t)R_SIZE));

	memset(&m, 0, sizeof(m));
	m.n = 2;
	m.r[0] = (struct vu_region){.gpa = 0,
				    .size = R_SIZE,
				    .qva = QVA0,
				    .map = r0,
				    .map_len = R_SIZE};
	m.r[1] = (struct vu_region){.gpa = GPA1,
				    .size = R_SIZE,
				    .qva = QVA1,
				    .mmap_offset = R1_OFF,
				    .map = r1,
				    .map_len = R1_OFF + R_SIZE};
	m.log = log;
	m.log_size = LOG_SIZE;
	m.log_on = !!(h[0] & 32);

	vq_reset(&vq);
	vq.size = 1U << ((h[0] & 15) % 9);
	if (h[0] & 16) {
		uint64_t a[3];

		memcpy(a, h + 8, sizeof(a));
		vq.desc_qva = le64toh(a[0]);
		vq.avail_qva = le64toh(a[1]);
		vq.used_qva = le64toh(a[2]);
	} else {
		vq.desc_qva = QVA0 + DESC_OFF;
		vq.avail_qva = QVA0 + AVAIL_OFF;
		vq.used_qva = QVA0 + USED_OFF;
	}
	vq.log_gpa = vq.used_qva - QVA0;
	vq.addr_set = true;
	if (vq_translate(&vq, &m))
		goto out;
	vq.started = vq.enabled = true;
	vq.last_avail = vq.avail_seen = (uint16_t)(h[1] | h[2] << 8);
	vq.used_idx = (uint16_t)(h[3] | h[4] << 8);
	FZ_CHECK(vq_ready(&vq));

	memset(held, 0, vq.size * sizeof(held[0]));
	max_pops = 2 * vq.size + 2;
	while (pops++ < max_pops) {
		rc = vq_pop(&vq, &m, &e);
		if (rc == -ENOENT || rc == -EIO)
			break;
		if (rc) {
			FZ_CHECK(e.head <= vq.size);
			FZ_CHECK(rc != -EBUSY || e.head == vq.size);
			if (e.head < vq.size) {
				FZ_CHECK(!held[e.head]);
				vq_fill(&vq, &m, filled++, e.head, 0);
			}
			continue;
		}
		check_elem(&m, &vq, &e);
		FZ_CHECK(!held[e.head]);
		held[e.head] = true;
		n = vq_copy_from(&e, 0, copybuf,
				 MIN(e.out_len, (uint64_t)sizeof(copybuf)));
		FZ_CHECK(n == MIN(e.out_len, (uint64_t)sizeof(copybuf)));
		if (e.out_len > 7)
			vq_copy_from(&e, e.out_len - 7, copybuf, 100);
		memset(copybuf, 0xa5, sizeof(copybuf));
		n = vq_copy_to(&m, &e, 0, copybuf,
			       MIN(e.in_len, (uint64_t)sizeof(copybuf)));
		FZ_CHECK(n == MIN(e.in_len, (uint64_t)sizeof(copybuf)));
		if (e.in_len > 3)
			vq_copy_to(&m, &e, e.in_len - 3, copybuf, 50);
		if ((h[5] & 1) && pops == 1) {
			vq_release(&vq, e.head);
			held[e.head] = false;
			vq_unpop(&vq, 1);
			continue;
		}
		vq_fill(&vq, &m, filled++, e.head, (uint32_t)n);
		held[e.head] = false;
		if (filled >= vq.size) {
			vq_publish(&vq, &m, filled);
			filled = 0;
		}
	}
	vq_publish(&vq, &m, filled);
	vq_notify_wanted(&vq);
	vq_avail_count(&vq);
out:
	free(log);
	free(r1);
	free(r0);
	return 0;
}

FZ_INIT_LOG
