// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_flow.c - flow table and flow hash: allocation, counting, lookups,
 * collisions and deletion inside probe runs; the reclaim order of UDP and
 * ICMP echo flows; the per-flow log prefix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "flow.h"
#include "log.h"

static int setup(void **state)
{
	(void)state;
	flow_init();
	return 0;
}

static void key4(struct flow_key *k, uint32_t g, uint16_t gp, uint32_t r,
		 uint16_t rp)
{
	struct in_addr ga = {htonl(g)}, ra = {htonl(r)};

	flow_key_set(k, FLOW_UDP, AF_INET, &ga, gp, &ra, rp);
}

/* Close, and end the loop round: the entry is free again */
static void free_now(union flow *f)
{
	flow_close(f);
	flow_defer_free();
}

static union flow *new_hashed(const struct flow_key *k)
{
	union flow *f = flow_alloc();

	assert_non_null(f);
	f->f.type = FLOW_UDP;
	f->f.key = *k;
	assert_int_equal(flow_hash_insert(f), 0);
	return f;
}

static void test_alloc_gives_distinct_entries_and_counts_them(void **state)
{
	union flow *a, *b;

	(void)state;
	assert_int_equal(flow_count(), 0);
	a = flow_alloc();
	b = flow_alloc();
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal(a->f.type, FLOW_NONE);
	assert_int_equal(flow_count(), 2);
	assert_ptr_equal(flow_at(flow_idx(a)), a);
	assert_ptr_equal(flow_at(flow_idx(b)), b);
	assert_true(flow_span() >= 2);

	free_now(a);
	assert_int_equal(flow_count(), 1);
	free_now(b);
}

static void test_freeing_all_returns_table_to_baseline(void **state)
{
	union flow *f[10];
	unsigned i;

	(void)state;
	for (i = 0; i < 10; i++)
		f[i] = flow_alloc();
	assert_int_equal(flow_span(), 10);
	for (i = 0; i < 10; i++)
		free_now(f[i]);
	assert_int_equal(flow_count(), 0);
	assert_int_equal(flow_span(), 0);

	/* And it starts over from index 0 */
	f[0] = flow_alloc();
	assert_int_equal(flow_idx(f[0]), 0);
	free_now(f[0]);
}

static void test_freed_entry_is_reused_and_zeroed(void **state)
{
	union flow *a, *b, *c;
	unsigned idx;

	(void)state;
	a = flow_alloc();
	b = flow_alloc();
	idx = flow_idx(b);
	b->f.type = FLOW_ICMP;
	b->icmp.sock = 42;
	free_now(b);
	c = flow_alloc();
	assert_int_equal(flow_idx(c), idx);
	assert_int_equal(c->f.type, FLOW_NONE);
	assert_int_equal(c->icmp.sock, 0);
	free_now(c);
	free_now(a);
}

static void test_full_table_returns_null_then_recovers(void **state)
{
	static union flow *all[FLOW_MAX];
	unsigned i, idx;

	(void)state;
	for (i = 0; i < FLOW_MAX; i++) {
		all[i] = flow_alloc();
		assert_non_null(all[i]);
	}
	assert_int_equal(flow_count(), FLOW_MAX);
	assert_null(flow_alloc());
	assert_int_equal(flow_count(), FLOW_MAX);

	idx = flow_idx(all[1234]);
	free_now(all[1234]);
	all[1234] = flow_alloc();
	assert_non_null(all[1234]);
	assert_int_equal(flow_idx(all[1234]), idx);

	for (i = 0; i < FLOW_MAX; i++)
		free_now(all[i]);
	assert_int_equal(flow_count(), 0);
}

static void test_flow_at_rejects_out_of_range_index(void **state)
{
	(void)state;
	assert_null(flow_at(FLOW_MAX));
	assert_null(flow_at(~0U));
	assert_non_null(flow_at(FLOW_MAX - 1));
}

static void test_hash_finds_inserted_flow_and_forgets_removed(void **state)
{
	struct flow_key k, other;
	union flow *f;

	(void)state;
	key4(&k, 0x0a000002, 1000, 0x08080808, 53);
	key4(&other, 0x0a000002, 1001, 0x08080808, 53);
	assert_null(flow_hash_lookup(&k));

	f = new_hashed(&k);
	assert_ptr_equal(flow_hash_lookup(&k), f);
	assert_null(flow_hash_lookup(&other));

	flow_hash_remove(f);
	assert_null(flow_hash_lookup(&k));
	free_now(f);
}

static void test_hash_rejects_duplicate_key(void **state)
{
	struct flow_key k;
	union flow *a, *b;

	(void)state;
	key4(&k, 1, 2, 3, 4);
	a = new_hashed(&k);
	b = flow_alloc();
	b->f.key = k;
	assert_int_equal(flow_hash_insert(b), -EEXIST);
	assert_int_equal(flow_hash_insert(a), -EINVAL);
	free_now(b);
	free_now(a);
	assert_int_equal(flow_count(), 0);
}

static void test_free_removes_flow_from_hash(void **state)
{
	struct flow_key k;
	union flow *f;

	(void)state;
	key4(&k, 5, 6, 7, 8);
	f = new_hashed(&k);
	free_now(f);
	assert_null(flow_hash_lookup(&k));
}

static void test_closed_slot_not_reused_within_the_round(void **state)
{
	union flow *a, *b;
	unsigned idx;

	(void)state;
	a = flow_alloc();
	a->f.type = FLOW_TCP;
	idx = flow_idx(a);
	flow_close(a);
	/* Still taken until the round ends, and no longer "live" */
	b = flow_alloc();
	assert_int_not_equal(flow_idx(b), idx);
	assert_null(flow_live(idx, FLOW_TCP));
	assert_int_equal(flow_count(), 2);
	flow_defer_free();
	assert_int_equal(flow_count(), 1);
	free_now(b);
	assert_int_equal(flow_count(), 0);
}

static void test_close_unhashes_at_once(void **state)
{
	struct flow_key k;
	union flow *a, *b;

	(void)state;
	key4(&k, 9, 10, 11, 12);
	a = new_hashed(&k);
	flow_close(a);
	assert_null(flow_hash_lookup(&k));
	/* The same addresses may open a new flow in the same round */
	b = new_hashed(&k);
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(flow_hash_lookup(&k), b);
	flow_defer_free();
	free_now(b);
	assert_int_equal(flow_count(), 0);
}

static void test_reference_of_earlier_flow_in_slot_is_refused(void **state)
{
	union epoll_ref ref_a, ref_b;
	union flow *a, *b;

	(void)state;
	a = flow_alloc();
	a->f.type = FLOW_TCP;
	ref_a = flow_ref(a, REF_TCP);
	assert_ptr_equal(flow_from_ref(ref_a, FLOW_TCP), a);
	assert_null(flow_from_ref(ref_a, FLOW_UDP));
	free_now(a);
	assert_null(flow_from_ref(ref_a, FLOW_TCP));

	/* The slot comes back with a new generation */
	b = flow_alloc();
	b->f.type = FLOW_TCP;
	assert_int_equal(flow_idx(b), ref_a.idx);
	ref_b = flow_ref(b, REF_TCP);
	assert_int_not_equal(ref_b.gen, ref_a.gen);
	assert_int_not_equal(ref_b.gen, 0);
	assert_null(flow_from_ref(ref_a, FLOW_TCP));
	assert_ptr_equal(flow_from_ref(ref_b, FLOW_TCP), b);
	free_now(b);
}

static void test_key_distinguishes_family_and_type(void **state)
{
	struct in6_addr g6 = {
		.s6_addr = {[10] = 0xff, [11] = 0xff, [12] = 10, [15] = 2}};
	struct in6_addr r6 = {
		.s6_addr = {[10] = 0xff, [11] = 0xff, [12] = 1, [15] = 1}};
	struct in_addr g4 = {htonl(0x0a000002)}, r4 = {htonl(0x01000001)};
	struct flow_key k4, k6, kt;
	union flow *f;

	(void)state;
	flow_key_set(&k4, FLOW_UDP, AF_INET, &g4, 1, &r4, 2);
	flow_key_set(&k6, FLOW_UDP, AF_INET6, &g6, 1, &r6, 2);
	flow_key_set(&kt, FLOW_TCP, AF_INET, &g4, 1, &r4, 2);

	/* Same bytes in the address fields: IPv4 is stored v4-mapped */
	assert_memory_equal(&k4.gaddr, &k6.gaddr, 16);

	f = new_hashed(&k4);
	assert_ptr_equal(flow_hash_lookup(&k4), f);
	assert_null(flow_hash_lookup(&k6));
	assert_null(flow_hash_lookup(&kt));
	free_now(f);
}

/* Find @n keys whose home bucket is @bucket */
static void keys_in_bucket(unsigned bucket, struct flow_key *out, int n)
{
	uint32_t g, p;
	int found = 0;

	for (g = 1; found < n; g++) {
		for (p = 0; p < 65536 && found < n; p++) {
			key4(&out[found], g, (uint16_t)p, 0x01020304, 80);
			if (flow_hash_bucket(&out[found]) == bucket)
				found++;
		}
		assert_true(g < 1000);
	}
}

static void test_colliding_keys_survive_removal_of_first(void **state)
{
	struct flow_key k[3];
	union flow *f[3];
	int i;

	(void)state;
	keys_in_bucket(flow_hash_bucket(&(struct flow_key){0}) ^ 1, k, 3);
	for (i = 0; i < 3; i++)
		f[i] = new_hashed(&k[i]);
	for (i = 0; i < 3; i++)
		assert_ptr_equal(flow_hash_lookup(&k[i]), f[i]);

	free_now(f[0]);
	assert_null(flow_hash_lookup(&k[0]));
	assert_ptr_equal(flow_hash_lookup(&k[1]), f[1]);
	assert_ptr_equal(flow_hash_lookup(&k[2]), f[2]);

	free_now(f[2]);
	assert_ptr_equal(flow_hash_lookup(&k[1]), f[1]);
	free_now(f[1]);
	assert_int_equal(flow_count(), 0);
}

static void test_collision_run_wrapping_past_last_bucket(void **state)
{
	struct flow_key k[4];
	union flow *f[4];
	int i;

	(void)state;
	/* Runs starting in the last bucket continue at bucket 0 */
	keys_in_bucket(FLOW_HASH_SIZE - 1, k, 4);
	for (i = 0; i < 4; i++)
		f[i] = new_hashed(&k[i]);

	free_now(f[1]);
	for (i = 0; i < 4; i++) {
		if (i != 1)
			assert_ptr_equal(flow_hash_lookup(&k[i]), f[i]);
	}
	free_now(f[0]);
	assert_ptr_equal(flow_hash_lookup(&k[2]), f[2]);
	assert_ptr_equal(flow_hash_lookup(&k[3]), f[3]);
	free_now(f[3]);
	assert_ptr_equal(flow_hash_lookup(&k[2]), f[2]);
	free_now(f[2]);
	assert_int_equal(flow_count(), 0);
}

static void test_many_flows_stay_findable_through_churn(void **state)
{
	enum { N = 20000 };
	static union flow *f[N];
	static struct flow_key k[N];
	unsigned i, round;

	(void)state;
	for (i = 0; i < N; i++) {
		key4(&k[i], 0x0a000002, (uint16_t)i, 0x0a000001 + i % 7, 443);
		f[i] = new_hashed(&k[i]);
	}
	assert_int_equal(flow_count(), N);

	for (round = 0; round < 3; round++) {
		for (i = round; i < N; i += 3) {
			free_now(f[i]);
			f[i] = NULL;
		}
		for (i = 0; i < N; i++) {
			if (f[i])
				assert_ptr_equal(flow_hash_lookup(&k[i]), f[i]);
			else
				assert_null(flow_hash_lookup(&k[i]));
		}
		for (i = round; i < N; i += 3)
			f[i] = new_hashed(&k[i]);
	}

	for (i = 0; i < N; i++)
		free_now(f[i]);
	assert_int_equal(flow_count(), 0);
}

/* A UDP flow without a socket, used at @ms */
static union flow *dgram_at(uint64_t ms)
{
	union flow *f = flow_alloc();

	assert_non_null(f);
	f->f.type = FLOW_UDP;
	f->udp.sock = f->udp.lsock = -1;
	f->udp.last_ms = ms;
	flow_lru_touch(f);
	return f;
}

static void test_reclaim_takes_least_recently_used_idle_flow(void **state)
{
	union flow *a, *b, *c, *i;

	(void)state;
	a = dgram_at(1000);
	b = dgram_at(2000);
	c = dgram_at(3000);
	i = flow_alloc();
	i->f.type = FLOW_ICMP;
	i->icmp.sock = -1;
	i->icmp.last_ms = 3500;
	flow_lru_touch(i);
	assert_int_equal(flow_dgram_count(), 4);

	/* a is used again: b is now the least recently used */
	a->udp.last_ms = 4000;
	flow_lru_touch(a);

	/* Not idle long enough: nothing is taken */
	assert_int_equal(flow_reclaim_dgram(NULL, 2500, FLOW_RECLAIM_IDLE_MS),
			 -EBUSY);
	assert_int_equal(flow_reclaim_dgram(NULL, 3000, FLOW_RECLAIM_IDLE_MS),
			 0);
	assert_true(b->f.closing);
	assert_false(a->f.closing || c->f.closing || i->f.closing);
	/* Closed, but its entry still counts until the round ends */
	assert_int_equal(flow_dgram_count(), 4);
	flow_defer_free();
	assert_int_equal(flow_dgram_count(), 3);

	/* Then c, then the ICMP flow, then a; then none is left */
	assert_int_equal(flow_reclaim_dgram(NULL, 9000, 0), 0);
	assert_true(c->f.closing);
	assert_int_equal(flow_reclaim_dgram(NULL, 9000, 0), 0);
	assert_true(i->f.closing);
	assert_int_equal(flow_reclaim_dgram(NULL, 9000, 0), 0);
	assert_true(a->f.closing);
	assert_int_equal(flow_reclaim_dgram(NULL, 9000, 0), -ENOENT);
	flow_defer_free();
	assert_int_equal(flow_dgram_count(), 0);
	assert_int_equal(flow_count(), 0);
}

static void test_closed_dgram_flow_leaves_the_use_list(void **state)
{
	union flow *a, *b;

	(void)state;
	a = dgram_at(1000);
	b = dgram_at(2000);
	free_now(a);
	assert_int_equal(flow_dgram_count(), 1);
	/* a is gone from the list: b is the one taken */
	assert_int_equal(flow_reclaim_dgram(NULL, 5000, 0), 0);
	assert_true(b->f.closing);
	flow_defer_free();
	assert_int_equal(flow_count(), 0);
}

/* What the log file holds, NUL-terminated, in @buf */
static void log_read(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void test_flow_log_prefixes_type_and_index(void **state)
{
	char path[] = "/tmp/test_flow_log.XXXXXX", buf[4096], want[64];
	enum log_level saved = log_level;
	union flow *u, *t, *i;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(log_open_file(path), 0);
	log_to_stderr(false);

	u = flow_alloc();
	t = flow_alloc();
	i = flow_alloc();
	u->f.type = FLOW_UDP;
	t->f.type = FLOW_TCP;
	i->f.type = FLOW_ICMP;

	log_level = LOG_LVL_DEBUG;
	flow_dbg(&u->udp, "closed");
	flow_warn_rl(&t->tcp, "%s failed (%s)", "write", "short");
	flow_dbg_rl(i, "opened, identifier %u", 7U);
	/* Below the level: nothing */
	flow_trace(&t->tcp, "not logged");
	log_level = LOG_LVL_INFO;
	flow_dbg(&u->udp, "not logged either");
	log_level = saved;
	log_close();
	log_to_stderr(true);

	log_read(path, buf, sizeof(buf));
	unlink(path);
	snprintf(want, sizeof(want), "UDP flow %u: closed\n", flow_idx(u));
	assert_non_null(strstr(buf, want));
	snprintf(want, sizeof(want), "TCP flow %u: write failed (short)\n",
		 flow_idx(t));
	assert_non_null(strstr(buf, want));
	snprintf(want, sizeof(want), "ICMP flow %u: opened, identifier 7\n",
		 flow_idx(i));
	assert_non_null(strstr(buf, want));
	assert_null(strstr(buf, "not logged"));
	assert_string_equal(flow_type_name(FLOW_NONE), "free");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(
			test_alloc_gives_distinct_entries_and_counts_them,
			setup),
		cmocka_unit_test_setup(
			test_freeing_all_returns_table_to_baseline, setup),
		cmocka_unit_test_setup(test_freed_entry_is_reused_and_zeroed,
				       setup),
		cmocka_unit_test_setup(
			test_full_table_returns_null_then_recovers, setup),
		cmocka_unit_test_setup(test_flow_at_rejects_out_of_range_index,
				       setup),
		cmocka_unit_test_setup(
			test_hash_finds_inserted_flow_and_forgets_removed,
			setup),
		cmocka_unit_test_setup(test_hash_rejects_duplicate_key, setup),
		cmocka_unit_test_setup(test_free_removes_flow_from_hash, setup),
		cmocka_unit_test_setup(test_closed_slot_not_reused_within_the_round,
				       setup),
		cmocka_unit_test_setup(test_close_unhashes_at_once, setup),
		cmocka_unit_test_setup(
			test_reference_of_earlier_flow_in_slot_is_refused,
			setup),
		cmocka_unit_test_setup(test_key_distinguishes_family_and_type,
				       setup),
		cmocka_unit_test_setup(
			test_colliding_keys_survive_removal_of_first, setup),
		cmocka_unit_test_setup(
			test_collision_run_wrapping_past_last_bucket, setup),
		cmocka_unit_test_setup(
			test_many_flows_stay_findable_through_churn, setup),
		cmocka_unit_test_setup(
			test_reclaim_takes_least_recently_used_idle_flow,
			setup),
		cmocka_unit_test_setup(
			test_closed_dgram_flow_leaves_the_use_list, setup),
		cmocka_unit_test_setup(test_flow_log_prefixes_type_and_index,
				       setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
