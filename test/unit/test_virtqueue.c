// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_virtqueue.c - guest memory translation and split virtqueue chains:
 * addresses across regions, chains that loop, run out of range, exceed
 * 4 GiB, misuse indirect tables, cost more than VQ_CHAIN_MAX descriptors, the used ring and dirty log updates, and
 * notifications with and without VIRTIO_RING_F_EVENT_IDX.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "vhost/virtqueue.h"
#include "test/tools/common/vring_desc.h"

#define Q 8
#define MEM 65536

/* Two regions: GPA [0, 32K) and [32K, 64K), mapped back to back here */
static uint8_t guest[MEM] __attribute__((aligned(4096)));
static uint8_t logmap[64];
static struct vu_mem m;
static uint64_t inflight[VQ_INFLIGHT_WORDS];
static struct virtq vq = { .inflight = inflight };

#define DESC_GPA 0x0
#define AVAIL_GPA 0x100
#define USED_GPA 0x200
#define BUF_GPA 0x1000

static int setup(void **state)
{
	(void)state;
	memset(guest, 0, sizeof(guest));
	memset(logmap, 0, sizeof(logmap));
	memset(&m, 0, sizeof(m));
	m.n = 2;
	m.r[0] = (struct vu_region){ .gpa = 0, .size = MEM / 2,
				     .qva = 0x7000000, .map = guest,
				     .map_len = MEM / 2 };
	m.r[1] = (struct vu_region){ .gpa = MEM / 2, .size = MEM / 2,
				     .qva = 0x9000000, .map = guest + MEM / 2,
				     .map_len = MEM / 2 };
	vq_reset(&vq);
	vq.size = Q;
	vq.desc_qva = 0x7000000 + DESC_GPA;
	vq.avail_qva = 0x7000000 + AVAIL_GPA;
	vq.used_qva = 0x7000000 + USED_GPA;
	vq.log_gpa = USED_GPA;
	vq.addr_set = true;
	assert_int_equal(vq_translate(&vq, &m), 0);
	vq.started = true;
	return 0;
}

static void desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
		 uint16_t next)
{
	uint8_t *d = guest + DESC_GPA + 16 * i;

	vring_desc_put(d, addr, len, flags, next);
}

static uint16_t avail_idx;

static void offer(uint16_t head)
{
	uint16_t h = htole16(head), i;

	memcpy(guest + AVAIL_GPA + 4 + 2 * (avail_idx % Q), &h, 2);
	avail_idx++;
	i = htole16(avail_idx);
	memcpy(guest + AVAIL_GPA + 2, &i, 2);
}

static int pop_one(struct vq_elem *e)
{
	return vq_pop(&vq, &m, e);
}

static void test_empty_ring_gives_enoent(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	assert_int_equal(pop_one(&e), -ENOENT);
}

static void test_chain_of_two_readable_then_writable(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(0, BUF_GPA, 100, VQ_DESC_F_NEXT, 3);
	desc(3, BUF_GPA + 200, 50, VQ_DESC_F_WRITE, 0);
	offer(0);
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(e.head, 0);
	assert_int_equal(e.out_num, 1);
	assert_int_equal(e.in_num, 1);
	assert_int_equal(e.out_len, 100);
	assert_int_equal(e.in_len, 50);
	assert_ptr_equal(e.iov[0].base, guest + BUF_GPA);
	assert_int_equal(pop_one(&e), -ENOENT);
}

static void test_buffer_across_regions_is_split(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(1, MEM / 2 - 10, 30, 0, 0);
	offer(1);
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.iov[0].len, 10);
	assert_int_equal(e.iov[1].len, 20);
	assert_ptr_equal(e.iov[1].base, guest + MEM / 2);
	assert_int_equal(e.iov[1].gpa, MEM / 2);
}

static void test_self_loop_is_refused(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(2, BUF_GPA, 10, VQ_DESC_F_NEXT, 2);
	offer(2);
	assert_int_equal(pop_one(&e), -ELOOP);
	assert_int_equal(e.head, 2);
	/* The bad chain was consumed: the ring goes on */
	assert_int_equal(pop_one(&e), -ENOENT);
}

static void test_cycle_of_two_is_refused(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(4, BUF_GPA, 10, VQ_DESC_F_NEXT, 5);
	desc(5, BUF_GPA, 10, VQ_DESC_F_NEXT, 4);
	offer(4);
	assert_int_equal(pop_one(&e), -ELOOP);
}

static void test_next_and_head_out_of_range(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(0, BUF_GPA, 10, VQ_DESC_F_NEXT, Q);
	offer(0);
	assert_int_equal(pop_one(&e), -EINVAL);
	offer(Q + 3);
	assert_int_equal(pop_one(&e), -EINVAL);
	assert_int_equal(e.head, Q);	/* no valid id to return */
}

static void test_total_over_4g_is_refused(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	/* Valid address, but together more than a used length can hold */
	desc(0, BUF_GPA, 0x80000000, VQ_DESC_F_NEXT, 1);
	desc(1, BUF_GPA, 0x80000000, 0, 0);
	offer(0);
	assert_int_not_equal(pop_one(&e), 0);
}

static void test_buffer_outside_memory_is_refused(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(0, MEM - 4, 8, 0, 0);
	offer(0);
	assert_int_equal(pop_one(&e), -EFAULT);
	desc(0, UINT64_MAX - 3, 8, 0, 0);
	offer(0);
	assert_int_equal(pop_one(&e), -EFAULT);
}

static void test_readable_after_writable_is_refused(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(0, BUF_GPA, 10, VQ_DESC_F_WRITE | VQ_DESC_F_NEXT, 1);
	desc(1, BUF_GPA, 10, 0, 0);
	offer(0);
	assert_int_equal(pop_one(&e), -EINVAL);
}

static void test_indirect_table_rules(void **state)
{
	const uint64_t tbl = 0x2000;
	struct vq_elem e;
	uint8_t *t = guest + tbl;

	(void)state;
	avail_idx = 0;
	/* A good one: two entries, readable then writable */
	memset(t, 0, 64);
	{
		uint64_t a = htole64(BUF_GPA);
		uint32_t l = htole32(20);
		uint16_t f = htole16(VQ_DESC_F_NEXT), n = htole16(1);

		memcpy(t, &a, 8);
		memcpy(t + 8, &l, 4);
		memcpy(t + 12, &f, 2);
		memcpy(t + 14, &n, 2);
		f = htole16(VQ_DESC_F_WRITE);
		memcpy(t + 16, &a, 8);
		memcpy(t + 24, &l, 4);
		memcpy(t + 28, &f, 2);
	}
	desc(0, tbl, 32, VQ_DESC_F_INDIRECT, 0);
	offer(0);
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(e.out_len, 20);
	assert_int_equal(e.in_len, 20);
	vq_release(&vq, e.head);

	/* Length not a multiple of 16 */
	desc(0, tbl, 20, VQ_DESC_F_INDIRECT, 0);
	offer(0);
	assert_int_equal(pop_one(&e), -EINVAL);
	/* Table outside memory */
	desc(0, MEM + 0x1000, 32, VQ_DESC_F_INDIRECT, 0);
	offer(0);
	assert_int_equal(pop_one(&e), -EFAULT);
	/* Nested indirection */
	{
		uint16_t f = htole16(VQ_DESC_F_INDIRECT);

		memcpy(t + 12, &f, 2);
	}
	desc(0, tbl, 32, VQ_DESC_F_INDIRECT, 0);
	offer(0);
	assert_int_equal(pop_one(&e), -EINVAL);
	/* Entry looping on itself inside the table */
	{
		uint16_t f = htole16(VQ_DESC_F_NEXT), n = 0;

		memcpy(t + 12, &f, 2);
		memcpy(t + 14, &n, 2);
	}
	offer(0);
	assert_int_equal(pop_one(&e), -ELOOP);
}

/* An indirect table of @n entries from @tbl, each @len bytes at BUF_GPA,
 * chained in order
 */
static void indirect_chain(uint64_t tbl, unsigned n, uint32_t len)
{
	unsigned i;

	for (i = 0; i < n; i++)
		vring_desc_put(guest + tbl + 16 * i, BUF_GPA, len,
			       i + 1 < n ? VQ_DESC_F_NEXT : 0,
			       (uint16_t)(i + 1 < n ? i + 1 : 0));
	desc(0, tbl, 16 * n, VQ_DESC_F_INDIRECT, 0);
	offer(0);
}

/* What a chain costs is bounded, whatever it holds: VQ_CHAIN_MAX
 * descriptors read, then -E2BIG; zero-length ones count too. The most
 * pieces there can be, through an indirect table, still pass
 */
static void test_chain_walk_is_bounded(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	indirect_chain(0x3000, 1000, 0);
	assert_int_equal(pop_one(&e), -E2BIG);
	assert_int_equal(e.walked, VQ_CHAIN_MAX);
	assert_int_equal(e.head, 0);

	indirect_chain(0x3000, VQ_IOV_MAX, 1);
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(e.walked, VQ_IOV_MAX + 1);
	assert_int_equal(e.out_num, VQ_IOV_MAX);
	vq_release(&vq, e.head);

	/* The head alone: nothing to walk */
	assert_int_equal(pop_one(&e), -ENOENT);
	assert_int_equal(e.walked, 0);
}

static void test_impossible_avail_idx_is_eio(void **state)
{
	struct vq_elem e;
	uint16_t i = htole16(Q + 1);

	(void)state;
	memcpy(guest + AVAIL_GPA + 2, &i, 2);
	assert_int_equal(pop_one(&e), -EIO);
	assert_int_equal(vq.last_avail, 0);	/* nothing taken */
}

static void test_ring_outside_memory_is_not_translated(void **state)
{
	(void)state;
	vq.used_qva = 0x7000000 + MEM / 2 - 8;	/* runs off region 0 */
	assert_int_equal(vq_translate(&vq, &m), -EFAULT);
	assert_null(vq.desc);
	assert_false(vq_ready(&vq));
	vq.used_qva = 0x7000000 + USED_GPA + 2;	/* misaligned */
	assert_int_equal(vq_translate(&vq, &m), -EFAULT);
}

static void test_used_ring_fill_publish_and_log(void **state)
{
	struct vq_elem e;
	uint16_t idx;
	uint32_t v;

	(void)state;
	m.log = logmap;
	m.log_size = sizeof(logmap);
	m.log_on = true;
	avail_idx = 0;
	desc(0, MEM / 2 + 0x1000, 64, VQ_DESC_F_WRITE, 0);
	offer(0);
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(vq_copy_to(&m, &e, 0, "hello", 5), 5);
	assert_memory_equal(guest + MEM / 2 + 0x1000, "hello", 5);
	vq_fill(&vq, &m, 0, e.head, 5);
	vq_publish(&vq, &m, 1);
	memcpy(&idx, guest + USED_GPA + 2, 2);
	assert_int_equal(le16toh(idx), 1);
	memcpy(&v, guest + USED_GPA + 8, 4);
	assert_int_equal(le32toh(v), 5);
	/* Page of the buffer (GPA 0x9000 -> page 9) and of the used ring */
	assert_true(logmap[1] & (1 << 1));
	assert_true(logmap[0] & 1);
	assert_true(m.log_dirty);
	/* Copying more than the chain holds stops at its end */
	assert_int_equal(vq_copy_to(&m, &e, 60, "hello", 5), 4);
}

static void test_unpop_gives_chains_back(void **state)
{
	struct vq_elem e;

	(void)state;
	avail_idx = 0;
	desc(0, BUF_GPA, 10, VQ_DESC_F_WRITE, 0);
	offer(0);
	assert_int_equal(pop_one(&e), 0);
	vq_release(&vq, e.head);
	vq_unpop(&vq, 1);
	assert_int_equal(vq_avail_count(&vq), 1);
	assert_int_equal(pop_one(&e), 0);
	/* Given back without vq_release(), it's still ours: no second go */
	vq_unpop(&vq, 1);
	assert_int_equal(pop_one(&e), -EBUSY);
}

/* The driver may not make a head available again before it came back:
 * the entry is taken, but gives no chain, so that the used ring never
 * names it twice for one offer, and nothing of ours holds it twice
 */
static void test_head_in_flight_is_not_taken_twice(void **state)
{
	struct vq_elem e, e2;
	unsigned i;

	(void)state;
	avail_idx = 0;
	desc(2, BUF_GPA, 10, VQ_DESC_F_WRITE, 0);
	for (i = 0; i < Q; i++)
		offer(2);	/* the same head in every entry */
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(e.head, 2);
	assert_int_equal(pop_one(&e2), -EBUSY);
	assert_int_equal(e2.head, Q);	/* nothing to return */
	assert_int_equal(vq.last_avail, 2);	/* the entry was taken */
	/* Used: the driver's again, and the next entry gives it */
	vq_fill(&vq, &m, 0, e.head, 0);
	vq_publish(&vq, &m, 1);
	assert_int_equal(pop_one(&e), 0);
	assert_int_equal(e.head, 2);
	/* A bad chain isn't ours: its head may come again */
	desc(3, BUF_GPA, 10, VQ_DESC_F_NEXT, 3);	/* a loop */
	avail_idx = vq.last_avail;
	offer(3);
	offer(3);
	assert_int_equal(pop_one(&e2), -ELOOP);
	assert_int_equal(e2.head, 3);
	assert_int_equal(pop_one(&e2), -ELOOP);
	/* A new ring: whatever was in flight is forgotten */
	assert_int_equal(vq_translate(&vq, &m), 0);
	avail_idx = vq.last_avail;
	offer(2);
	assert_int_equal(pop_one(&e), 0);
}

/* Indirect tables are read with 64-bit loads: 8-byte aligned ones only */
static void test_misaligned_indirect_table_is_refused(void **state)
{
	static const unsigned offs[] = { 1, 4, 12, 15 };
	const uint64_t tbl = 0x2000;
	struct vq_elem e;
	unsigned i;

	(void)state;
	avail_idx = 0;
	for (i = 0; i < 5; i++) {
		uint64_t at = tbl + (i < 4 ? offs[i] : 8);
		uint64_t a = htole64(BUF_GPA);
		uint32_t l = htole32(20);
		uint16_t f = htole16(VQ_DESC_F_WRITE);

		memset(guest + tbl, 0, 64);
		memcpy(guest + at, &a, 8);
		memcpy(guest + at + 8, &l, 4);
		memcpy(guest + at + 12, &f, 2);
		desc(0, at, 16, VQ_DESC_F_INDIRECT, 0);
		offer(0);
		if (i < 4) {
			assert_int_equal(pop_one(&e), -EINVAL);
			continue;
		}
		/* 8 bytes off a 16-byte boundary: fine */
		assert_int_equal(pop_one(&e), 0);
		assert_int_equal(e.in_len, 20);
	}
}

static void test_log_never_writes_past_bitmap(void **state)
{
	uint8_t small[2] = { 0 };

	(void)state;
	m.log = small;
	m.log_size = 1;
	m.log_on = true;
	vu_log_write(&m, 0, 64 * 4096);
	assert_int_equal(small[0], 0xff);
	assert_int_equal(small[1], 0);
	vu_log_write(&m, UINT64_MAX - 10, 100);	/* wraps: ignored */
}

static uint16_t guest16(uint64_t gpa)
{
	uint16_t v;

	memcpy(&v, guest + gpa, 2);
	return le16toh(v);
}

static void put16(uint64_t gpa, uint16_t v)
{
	v = htole16(v);
	memcpy(guest + gpa, &v, 2);
}

/* Publish @n used entries (head 0, length 0) */
static void publish(unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		vq_fill(&vq, &m, i, 0, 0);
	vq_publish(&vq, &m, n);
}

#define USED_EVENT_GPA (AVAIL_GPA + 4 + 2 * Q)
#define AVAIL_EVENT_GPA (USED_GPA + 4 + 8 * Q)

static void test_no_interrupt_flag_without_event_idx(void **state)
{
	(void)state;
	publish(1);
	assert_true(vq_notify_wanted(&vq));
	put16(AVAIL_GPA, VQ_AVAIL_F_NO_INTERRUPT);
	publish(1);
	assert_false(vq_notify_wanted(&vq));
	put16(USED_EVENT_GPA, 1);	/* means nothing without EVENT_IDX */
	put16(AVAIL_GPA, 0);
	assert_true(vq_notify_wanted(&vq));
}

static void test_event_idx_interrupts_past_used_event(void **state)
{
	(void)state;
	vq.event_idx = true;
	put16(AVAIL_GPA, VQ_AVAIL_F_NO_INTERRUPT);	/* ignored now */
	put16(USED_EVENT_GPA, 5);
	publish(1);
	assert_true(vq_notify_wanted(&vq));	/* first one: always */
	publish(1);				/* used->idx 2 */
	assert_false(vq_notify_wanted(&vq));
	publish(4);				/* 6: entry 6 passed 5 */
	assert_true(vq_notify_wanted(&vq));
	publish(1);				/* 7: 5 was passed before */
	assert_false(vq_notify_wanted(&vq));
	put16(USED_EVENT_GPA, 7);
	publish(1);				/* 8 */
	assert_true(vq_notify_wanted(&vq));
	/* Across the 16-bit wrap */
	vq.used_idx = 65534;
	vq.signalled = 65534;
	put16(USED_EVENT_GPA, 65535);
	publish(1);
	assert_false(vq_notify_wanted(&vq));
	publish(2);				/* 65535 -> 1: past 65535 */
	assert_true(vq_notify_wanted(&vq));
	/* A new ring: the first decision is an interrupt again */
	assert_int_equal(vq_translate(&vq, &m), 0);
	publish(1);
	assert_true(vq_notify_wanted(&vq));
}

static void test_event_idx_kicks_move_avail_event(void **state)
{
	(void)state;
	vq.event_idx = true;
	m.log = logmap;
	m.log_size = sizeof(logmap);
	m.log_on = true;
	avail_idx = 0;
	desc(0, BUF_GPA, 10, VQ_DESC_F_WRITE, 0);
	offer(0);
	offer(0);
	offer(0);
	put16(AVAIL_EVENT_GPA, 0);
	/* On: avail_event at what the driver published, look again */
	assert_true(vq_kicks(&vq, &m, true));
	assert_int_equal(guest16(AVAIL_EVENT_GPA), 3);
	assert_true(logmap[0] & 1);
	assert_true(m.log_dirty);
	assert_false(vq_kicks(&vq, &m, true));	/* nothing new */
	/* Off writes nothing, flags included */
	assert_false(vq_kicks(&vq, &m, false));
	assert_int_equal(guest16(AVAIL_EVENT_GPA), 3);
	assert_int_equal(guest16(USED_GPA), 0);
	/* The driver published more: on moves the event along */
	offer(0);
	assert_true(vq_kicks(&vq, &m, true));
	assert_int_equal(guest16(AVAIL_EVENT_GPA), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(t) cmocka_unit_test_setup(t, setup)
		T(test_empty_ring_gives_enoent),
		T(test_chain_of_two_readable_then_writable),
		T(test_buffer_across_regions_is_split),
		T(test_self_loop_is_refused),
		T(test_cycle_of_two_is_refused),
		T(test_next_and_head_out_of_range),
		T(test_total_over_4g_is_refused),
		T(test_buffer_outside_memory_is_refused),
		T(test_readable_after_writable_is_refused),
		T(test_indirect_table_rules),
		T(test_chain_walk_is_bounded),
		T(test_impossible_avail_idx_is_eio),
		T(test_ring_outside_memory_is_not_translated),
		T(test_used_ring_fill_publish_and_log),
		T(test_unpop_gives_chains_back),
		T(test_head_in_flight_is_not_taken_twice),
		T(test_misaligned_indirect_table_is_refused),
		T(test_log_never_writes_past_bitmap),
		T(test_no_interrupt_flag_without_event_idx),
		T(test_event_idx_interrupts_past_used_event),
		T(test_event_idx_kicks_move_avail_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
