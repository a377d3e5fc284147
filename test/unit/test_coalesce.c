// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_coalesce.c - input coalescing's policy (tap/coalesce.c), with time
 * passed in: a slow guest's bulk trickle is polled for after a streak, at
 * the interval its rate needs to gather the queue's target (and a few of
 * its frames), capped; a fast guest, small messages, passes far apart and
 * a disabled setting never poll; two polls in a row that merge nothing
 * stop polling and hold off the next try for longer each time; a guest
 * that waits for our window is never polled; polls that starve a sender
 * with few frames in flight end, and later tries aim at half of what it
 * had in flight; PASST_COALESCE_US sets the cap or is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "env.h"
#include "tap/coalesce.h"
#include "util.h"

#define US 1000ULL
#define MS 1000000ULL
#define KIB 1024

/* A TCG guest: a 60 KiB TSO frame every 330 us */
#define SLOW_BYTES (60 * KIB)
#define SLOW_GAP (330 * US)

static int setup(void **state)
{
	(void)state;
	coalesce_conf(COALESCE_MAX_NS_DEFAULT);
	return 0;
}

/* Feed @n passes of @bytes in @frames, @gap apart, from @t; the time of
 * the last in @t, and the last answer returned
 */
static uint64_t passes(struct coalesce *s, uint64_t *t, unsigned n,
		       uint64_t gap, size_t bytes, unsigned frames)
{
	uint64_t r = 0;

	while (n--) {
		*t += gap;
		r = coalesce_pass(s, *t, bytes, frames);
	}
	return r;
}

/* Start polling a slow trickle (the third pass does); the time of the last
 * pass in @t
 */
static uint64_t start_polling(struct coalesce *s, uint64_t *t)
{
	uint64_t at = passes(s, t, 2, SLOW_GAP, SLOW_BYTES, 1);

	assert_int_equal(at, 0);
	return passes(s, t, 1, SLOW_GAP, SLOW_BYTES, 1);
}

/* Cap the interval at @cap, and start polling a slow trickle from a ring,
 * which the cap holds back; the time of the poll
 */
static uint64_t start_capped(struct coalesce *s, uint64_t *t, uint64_t cap)
{
	uint64_t at;

	coalesce_conf(cap);
	coalesce_reset(s, COALESCE_TARGET_RING);
	at = start_polling(s, t);
	assert_int_equal(at, *t + cap);
	return at;
}

static void test_slow_bulk_polls_after_a_streak_at_the_rate(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS, at;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	/* 256 KiB at 60 KiB (and a frame's cost) per 330 us: 1.38 ms */
	at = start_polling(&s, &t);
	assert_true(at > t + 1380 * US && at < t + 1390 * US);
	assert_true(s.polling);

	/* From a socket, half as much: 692 us, but a poll comes at least
	 * three of the frames' spacings later
	 */
	coalesce_reset(&s, COALESCE_TARGET_SOCKET);
	at = start_polling(&s, &t);
	assert_int_equal(at, t + 3 * SLOW_GAP);

	/* 64 KiB frames every 800 us: three of them take 2.4 ms, capped */
	coalesce_reset(&s, COALESCE_TARGET_SOCKET);
	assert_int_equal(passes(&s, &t, 2, 800 * US, 64 * KIB, 1), 0);
	at = passes(&s, &t, 1, 800 * US, 64 * KIB, 1);
	assert_int_equal(at, t + 2 * MS);
}

static void test_polls_that_merge_frames_go_on_at_their_rate(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS, at;

	(void)state;
	at = start_capped(&s, &t, 1 * MS);

	/* Three frames, 180 KiB in 1 ms: still under 256 KiB, the cap */
	t = at;
	assert_int_equal(coalesce_pass(&s, t, 180 * KIB, 3), t + 1 * MS);
	/* 512 KiB (with 8 frames' cost) in 1 ms: 256 KiB takes half */
	t += 1 * MS;
	assert_int_equal(coalesce_pass(&s, t, 504 * KIB, 8), t + 500 * US);
	/* 2 MiB in 500 us: under 100 us for 256 KiB, kicks on again */
	t += 500 * US;
	assert_int_equal(coalesce_pass(&s, t, 2048 * KIB, 32), 0);
	assert_false(s.polling);
}

static void test_a_fast_guest_never_polls(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	/* Passes that carry a wake-up's worth already */
	assert_int_equal(passes(&s, &t, 100, 500 * US, 800 * KIB, 13), 0);
	/* 200 KiB every 50 us: 256 KiB would take 64 us, not worth it */
	assert_int_equal(passes(&s, &t, 100, 50 * US, 200 * KIB, 4), 0);
	assert_false(s.polling);
}

static void test_small_messages_never_poll(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	/* Request/response of 64 bytes, and ACKs of a transfer to the guest */
	assert_int_equal(passes(&s, &t, 1000, 100 * US, 64, 1), 0);
	assert_int_equal(passes(&s, &t, 1000, 20 * US, 4 * 66, 4), 0);
}

static void test_bulk_passes_far_apart_never_poll(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	/* 60 KiB every 5 ms: nothing to merge within the cap */
	assert_int_equal(passes(&s, &t, 100, 5 * MS, SLOW_BYTES, 1), 0);
	/* A streak broken by one long gap starts over with that pass */
	assert_int_equal(passes(&s, &t, 1, SLOW_GAP, SLOW_BYTES, 1), 0);
	assert_int_equal(passes(&s, &t, 1, 3 * MS, SLOW_BYTES, 1), 0);
	assert_int_equal(passes(&s, &t, 1, SLOW_GAP, SLOW_BYTES, 1), 0);
	assert_int_not_equal(passes(&s, &t, 1, SLOW_GAP, SLOW_BYTES, 1), 0);
}

static void test_polls_merging_nothing_hold_off_longer_each_time(
	void **state)
{
	struct coalesce_stats st0 = coalesce_stats;
	unsigned fail, hold, held = 0;
	uint64_t t = 5 * MS, at;
	struct coalesce s;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	for (fail = 0, hold = 8; fail < 8; fail++, hold = MIN(hold * 2, 1024)) {
		at = start_polling(&s, &t);
		assert_int_not_equal(at, 0);
		/* One large message per poll: each waits for the answer.
		 * One such poll may be bad luck, two in a row aren't.
		 */
		t = at;
		at = coalesce_pass(&s, t, 100 * KIB, 1);
		assert_int_not_equal(at, 0);
		t = at;
		assert_int_equal(coalesce_pass(&s, t, 100 * KIB, 1), 0);
		assert_false(s.polling);
		/* Kicks for that many passes, whatever they look like */
		assert_int_equal(passes(&s, &t, hold, SLOW_GAP, SLOW_BYTES, 1),
				 0);
		held += hold;
	}
	/* The log's counters: each try took three passes on wake-ups (the
	 * third started it), and every pass held off was one too
	 */
	assert_int_equal(coalesce_stats.tries - st0.tries, 8);
	assert_int_equal(coalesce_stats.failed - st0.failed, 8);
	assert_int_equal(coalesce_stats.held - st0.held, held);
	assert_int_equal(coalesce_stats.woken - st0.woken, held + 8 * 3);

	/* A poll that merges frames starts the penalty over, and the count
	 * of single-frame polls (it catches up with the trickle's rate: 10
	 * frames in the longest interval, after a single one)
	 */
	at = start_polling(&s, &t);
	t = at;
	at = coalesce_pass(&s, t, 100 * KIB, 1);
	t = at;
	at = coalesce_pass(&s, t, 600 * KIB, 10);
	assert_int_not_equal(at, 0);
	t = at;
	at = coalesce_pass(&s, t, 100 * KIB, 1);
	assert_int_not_equal(at, 0);
	t = at;
	assert_int_equal(coalesce_pass(&s, t, 100 * KIB, 1), 0);
	assert_int_equal(passes(&s, &t, 8, SLOW_GAP, SLOW_BYTES, 1), 0);
	assert_int_not_equal(start_polling(&s, &t), 0);
}

static void test_two_quiet_polls_stop_without_holding_off(
	void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS, at;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	at = start_polling(&s, &t);
	/* One poll finds ACKs only: perhaps a pause, the same interval */
	t = at;
	at = coalesce_pass(&s, t, 3 * 66, 3);
	assert_int_equal(at, t + s.interval);
	assert_true(s.polling);
	/* and again: the transfer ended */
	t = at;
	assert_int_equal(coalesce_pass(&s, t, 66, 1), 0);
	assert_false(s.polling);
	/* A quiet poll between two busy ones doesn't count (the second
	 * takes what the trickle sent over both)
	 */
	at = start_polling(&s, &t);
	t = at;
	at = coalesce_pass(&s, t, 0, 0);
	assert_int_not_equal(at, 0);
	t = at;
	at = coalesce_pass(&s, t, 480 * KIB, 8);
	assert_int_not_equal(at, 0);
	t = at;
	at = coalesce_pass(&s, t, 66, 1);
	assert_int_not_equal(at, 0);
	t = at;
	assert_int_equal(coalesce_pass(&s, t, 66, 1), 0);
	/* The next transfer polls after a streak again, no penalty */
	assert_int_not_equal(start_polling(&s, &t), 0);
}

static void test_the_cap_is_configurable_and_zero_turns_it_off(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS, at;

	(void)state;
	at = start_capped(&s, &t, 500 * US);

	/* Off: polling stops at the next pass, and never starts again */
	coalesce_conf(0);
	assert_int_equal(coalesce_pass(&s, at, 120 * KIB, 2), 0);
	assert_false(s.polling);
	assert_int_equal(passes(&s, &t, 100, SLOW_GAP, SLOW_BYTES, 1), 0);

	/* Frames further apart than the cap can't be merged within it */
	coalesce_conf(300 * US);
	coalesce_reset(&s, COALESCE_TARGET_RING);
	assert_int_equal(passes(&s, &t, 100, SLOW_GAP, SLOW_BYTES, 1), 0);
}

static void test_reset_forgets_polling(void **state)
{
	struct coalesce s;
	uint64_t t = 5 * MS;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	assert_int_not_equal(start_polling(&s, &t), 0);
	coalesce_reset(&s, COALESCE_TARGET_RING);
	assert_false(s.polling);
	assert_int_equal(passes(&s, &t, 2, SLOW_GAP, SLOW_BYTES, 1), 0);
}

/* Frames of 1514 bytes, and their load (bytes and a frame's cost each) */
#define F1500 1514
#define L1500(n) ((n) * (F1500 + 1024))

/* A sender that makes a frame of @len bytes every @gap, and keeps at
 * most @limit of them in flight, for @secs: woken, we take what it made
 * since the last pass (it wakes us every @per frames); polled, what it
 * made until the poll, at most @limit (then it waited, from its last
 * frame until the poll). Returns the frames taken by polls, and the
 * frames taken in all in @total
 */
static uint64_t sender(struct coalesce *s, uint64_t *t, uint64_t secs,
		       uint64_t gap, size_t len, unsigned per, unsigned limit,
		       uint64_t *total)
{
	uint64_t end = *t + secs, polled = 0, at = 0, made = *t;
	unsigned n;

	*total = 0;
	while (*t < end) {
		if (at) {
			n = (unsigned)MIN((at - made) / gap, limit);
			made = n == limit ? at : made + n * gap;
			*t = at;
			polled += n;
		} else {
			n = per;
			*t += gap * per;
			made = *t;
		}
		*total += n;
		at = coalesce_pass(s, *t, n * len, n);
	}
	return polled;
}

static void test_polls_that_starve_a_sender_end_and_it_keeps_waking_us(
	void **state)
{
	struct coalesce_stats st0 = coalesce_stats;
	uint64_t t = 5 * MS, at, total, polled;
	struct coalesce s;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	/* A fast guest with 21 frames in flight at most (issue 52): 8 of
	 * them in each pass, 10 us apart, when it wakes us. Its rate says a
	 * poll gathers the target in 129 us...
	 */
	assert_int_equal(passes(&s, &t, 2, 10 * US, 8 * F1500, 8), 0);
	at = passes(&s, &t, 1, 10 * US, 8 * F1500, 8);
	assert_true(at > t + 125 * US && at < t + 135 * US);
	/* ...but it finds the 21 frames the guest sent in the first 26 us,
	 * after which it waited for us: a fifth of its rate. Polling ends
	 * at once, rather than wait longer next time
	 */
	t = at;
	assert_int_equal(coalesce_pass(&s, t, 21 * F1500, 21), 0);
	assert_false(s.polling);
	assert_int_equal(s.pending, L1500(21));
	assert_int_equal(coalesce_stats.starved - st0.starved, 1);
	/* Once it wakes us again (the hold-off, a streak), it moves more:
	 * its limit holds. Half of the 21 frames takes it 13 us: not worth
	 * a poll, while the limit lasts (100 ms)
	 */
	assert_int_equal(passes(&s, &t, 900, 10 * US, 8 * F1500, 8), 0);
	assert_int_equal(s.limit, L1500(21));
	assert_int_equal(coalesce_stats.confirmed - st0.confirmed, 1);
	assert_int_equal(coalesce_stats.tries - st0.tries, 1);
	/* Then the limit is forgotten, and it may be tried again */
	t += 100 * MS;
	assert_int_equal(passes(&s, &t, 2, 10 * US, 8 * F1500, 8), 0);
	assert_int_not_equal(passes(&s, &t, 1, 10 * US, 8 * F1500, 8), 0);
	assert_int_equal(s.limit, 0);

	/* Over two seconds of that: a try every 100 ms, each ending at its
	 * first poll; the guest moves 99 % of what it moves when it wakes
	 * us every time
	 */
	coalesce_reset(&s, COALESCE_TARGET_RING);
	st0 = coalesce_stats;
	polled = sender(&s, &t, 2000 * MS, 1250, F1500, 8, 21, &total);
	assert_true(coalesce_stats.tries - st0.tries <= 25);
	assert_true(polled * 100 < total);
	assert_true(total > 2000 * MS / 1250 * 99 / 100);
}

static void test_a_sender_polls_starved_is_polled_at_half_its_limit(
	void **state)
{
	uint64_t t = 5 * MS, at, total, polled;
	struct coalesce s;
	unsigned i;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_RING);
	/* A slower guest, a 1514-byte frame every 25 us, at most 64 in
	 * flight (162 KB of load: less than a ring's target). It wakes us
	 * for every 6: polls at the longest interval...
	 */
	assert_int_equal(passes(&s, &t, 2, 150 * US, 6 * F1500, 6), 0);
	at = passes(&s, &t, 1, 150 * US, 6 * F1500, 6);
	assert_int_equal(at, t + 2 * MS);
	/* ...find 64 frames (in 1.6 ms, then it waits): 0.8 of its rate,
	 * and then again, however long they wait: starved, as eight polls
	 * tell
	 */
	for (i = 0; i < 7; i++) {
		t = at;
		at = coalesce_pass(&s, t, 64 * F1500, 64);
		assert_int_equal(at, t + 2 * MS);
	}
	t = at;
	assert_int_equal(coalesce_pass(&s, t, 64 * F1500, 64), 0);
	assert_int_equal(s.pending, L1500(64));
	/* After the hold-off, which confirms it, a try aims at 32 frames:
	 * 800 us, which the guest fills without waiting
	 */
	assert_int_equal(passes(&s, &t, 8, 150 * US, 6 * F1500, 6), 0);
	assert_int_equal(passes(&s, &t, 2, 150 * US, 6 * F1500, 6), 0);
	at = passes(&s, &t, 1, 150 * US, 6 * F1500, 6);
	assert_int_equal(at, t + 800 * US);

	/* Over two seconds: most frames taken by polls, and the guest moves
	 * at least 95 % of what it moves when it wakes us every time
	 */
	coalesce_reset(&s, COALESCE_TARGET_RING);
	polled = sender(&s, &t, 2000 * MS, 25 * US, F1500, 6, 64, &total);
	assert_true(polled * 10 > total * 8);
	assert_true(total > 2000 * MS / (25 * US) * 95 / 100);
}

static void test_no_sender_moves_less_for_being_polled(void **state)
{
	static const unsigned limits[] = { 1, 2, 4, 8, 21, 40, 64, 80, 90,
					   100, 128, 256, 1000 };
	static const uint64_t gaps[] = { 1250, 5 * US, 25 * US, 100 * US,
					 330 * US };
	static const size_t lens[] = { F1500, 64 * KIB };
	unsigned li, gi, ni, per;
	uint64_t t = 5 * MS, total;
	struct coalesce s;

	(void)state;
	/* Senders of 1514-byte and 64 KiB frames, one every 1.25 to 330 us
	 * (9.7 Gbit/s to 37 Mbit/s of the small ones), with 1 to 1000
	 * frames in flight at most, waking us every 6 frames (every one of
	 * 64 KiB), for two seconds each: each moves at least 95 % of what
	 * it could (97.5 % here, as it is), and we take its frames in as
	 * many passes as when it wakes us for each, or fewer
	 */
	for (li = 0; li < ARRAY_SIZE(lens); li++) {
		for (gi = 0; gi < ARRAY_SIZE(gaps); gi++) {
			for (ni = 0; ni < ARRAY_SIZE(limits); ni++) {
				uint64_t st_polls = coalesce_stats.polls;
				uint64_t st_woken = coalesce_stats.woken;
				uint64_t passes_made;

				per = MIN(lens[li] > F1500 ? 1 : 6, limits[ni]);
				coalesce_reset(&s, COALESCE_TARGET_RING);
				sender(&s, &t, 2000 * MS, gaps[gi], lens[li],
				       per, limits[ni], &total);
				passes_made = coalesce_stats.polls - st_polls +
					      coalesce_stats.woken - st_woken;
				assert_true(total * 100 >=
					    2000 * MS / gaps[gi] * 95);
				assert_true(passes_made <= total / per + 1);
			}
		}
	}
}

/* coalesce_init() with PASST_COALESCE_US=@v in a child: its exit status,
 * and the cap it set, in us, through the status if it returned
 */
static int init_with(const char *v, unsigned *us)
{
	int st;
	pid_t pid = fork();

	if (!pid) {
		setenv("PASST_COALESCE_US", v, 1);
		env_init();
		coalesce_init();
		_exit((int)(coalesce_max_ns() / (50 * US)));
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	*us = (unsigned)WEXITSTATUS(st) * 50;
	return WEXITSTATUS(st);
}

static void test_passt_coalesce_us_sets_the_cap_or_is_refused(void **state)
{
	unsigned us;

	(void)state;
	unsetenv("PASST_COALESCE_US");
	env_init();
	coalesce_init();
	assert_int_equal(coalesce_max_ns(), COALESCE_MAX_NS_DEFAULT);

	init_with("0", &us);
	assert_int_equal(us, 0);
	init_with("250", &us);
	assert_int_equal(us, 250);
	init_with("5000", &us);
	assert_int_equal(us, 5000);
	/* Empty is unset (env.c): the default */
	init_with("", &us);
	assert_int_equal(us, COALESCE_MAX_NS_DEFAULT / 1000);

	/* die() exits with EXIT_FAILURE: status 1, which reads as 50 us */
	assert_int_equal(init_with("abc", &us), 1);
	assert_int_equal(init_with("-5", &us), 1);
	assert_int_equal(init_with("12ms", &us), 1);
	assert_int_equal(init_with("100001", &us), 1);
}

static void test_a_guest_waiting_for_our_window_is_never_polled(
	void **state)
{
	uint64_t limited0 = coalesce_stats.limited, t = 5 * MS, at;
	struct coalesce s;
	unsigned i;

	(void)state;
	coalesce_reset(&s, COALESCE_TARGET_SOCKET);
	/* Polling, then a poll after which the guest waits for our window:
	 * notifications on at once, counted, and no hold-off
	 */
	at = start_polling(&s, &t);
	assert_int_not_equal(at, 0);
	t = at;
	coalesce_window_limited();
	assert_int_equal(coalesce_pass(&s, t, 3 * SLOW_BYTES, 3), 0);
	assert_false(s.polling);
	assert_int_equal(s.hold, 0);
	assert_int_equal(coalesce_stats.limited - limited0, 1);
	/* A trickle that waits for the window after each pass never starts */
	for (i = 0; i < 10; i++) {
		t += SLOW_GAP;
		coalesce_window_limited();
		assert_int_equal(coalesce_pass(&s, t, SLOW_BYTES, 1), 0);
	}
	/* and one such pass breaks a streak: three more are needed */
	assert_int_equal(passes(&s, &t, 2, SLOW_GAP, SLOW_BYTES, 1), 0);
	t += SLOW_GAP;
	coalesce_window_limited();
	assert_int_equal(coalesce_pass(&s, t, SLOW_BYTES, 1), 0);
	assert_int_equal(passes(&s, &t, 2, SLOW_GAP, SLOW_BYTES, 1), 0);
	assert_int_not_equal(passes(&s, &t, 1, SLOW_GAP, SLOW_BYTES, 1), 0);
	/* The note holds for one pass only */
	assert_true(s.polling);
	assert_int_equal(coalesce_stats.limited - limited0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(
			test_slow_bulk_polls_after_a_streak_at_the_rate, setup),
		cmocka_unit_test_setup(
			test_polls_that_merge_frames_go_on_at_their_rate,
			setup),
		cmocka_unit_test_setup(test_a_fast_guest_never_polls, setup),
		cmocka_unit_test_setup(test_small_messages_never_poll, setup),
		cmocka_unit_test_setup(test_bulk_passes_far_apart_never_poll,
				       setup),
		cmocka_unit_test_setup(
			test_polls_merging_nothing_hold_off_longer_each_time,
			setup),
		cmocka_unit_test_setup(
			test_two_quiet_polls_stop_without_holding_off,
			setup),
		cmocka_unit_test_setup(
			test_a_guest_waiting_for_our_window_is_never_polled,
			setup),
		cmocka_unit_test_setup(
			test_the_cap_is_configurable_and_zero_turns_it_off,
			setup),
		cmocka_unit_test_setup(
			test_polls_that_starve_a_sender_end_and_it_keeps_waking_us,
			setup),
		cmocka_unit_test_setup(
			test_a_sender_polls_starved_is_polled_at_half_its_limit,
			setup),
		cmocka_unit_test_setup(
			test_no_sender_moves_less_for_being_polled, setup),
		cmocka_unit_test_setup(test_reset_forgets_polling, setup),
		cmocka_unit_test_setup(
			test_passt_coalesce_us_sets_the_cap_or_is_refused,
			setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
