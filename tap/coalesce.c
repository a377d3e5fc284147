// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * coalesce.c - input coalescing: when to stop being woken for each of the
 * guest's frames, and poll for them instead. The policy only; the
 * front-ends (vhost/net.c, stream.c) switch their notifications and the loop
 * (loop_wait()'s deadline) does the waking.
 *
 * Theory of operation
 *
 * A guest whose CPU is slow next to ours (an emulated one, or a busy
 * one) sends a bulk transfer as a trickle of large frames: under TCG, a
 * 64 KiB TSO frame every third of a millisecond. Each one kicks us awake
 * (vhost-user) or makes the socket readable (stream), and each wake-up
 * costs more than the frame itself: the switch in and out, the write to
 * the TCP socket waking the peer, the ACK back to the guest and the
 * interrupt that delivers it. Measured there, the daemon's CPU time per
 * GiB was the wake-ups' count times a fixed cost. Taking several frames
 * per wake-up halves it, and the guest, which no longer kicks for every
 * frame, sends faster. That is what NICs do with interrupt moderation
 * and Linux's NAPI with deferred interrupts (gro_flush_timeout).
 *
 * A front-end reports each pass over an input queue, how many bytes and
 * frames it took, to coalesce_pass(), which answers either 0 (turn the
 * notifications on, as usual) or a time: leave them off, and take the
 * frames then. A pass's load is its bytes plus COALESCE_FRAME_COST per
 * frame (what a frame costs the queue beyond its bytes: descriptors,
 * socket buffer overhead). The rules:
 *
 *  - A pass of less than COALESCE_MIN_BYTES is interactive traffic, ACKs,
 *    or the end of a transfer: notifications on. Request/response traffic
 *    of small messages never polls, so its round trip is untouched.
 *  - A pass whose load reaches the queue's target (what a poll should
 *    gather: COALESCE_TARGET_RING for a vhost-user ring, the smaller
 *    COALESCE_TARGET_SOCKET for the stream socket, whose sender blocks
 *    once its socket buffer is full) carries enough already: a fast
 *    guest's wake-ups are cheap per byte. Notifications on.
 *  - Otherwise, after COALESCE_STREAK such passes in a row, each within the
 *    longest interval of the one before, we poll. The interval is the
 *    time the last pass's rate needs to gather the target, and at least
 *    three of its frames' spacing, so that a poll merges a few; at most
 *    the longest interval (PASST_COALESCE_US, 2 ms by default); if that's
 *    below COALESCE_MIN_NS, the sender is fast: notifications on.
 *  - While polling, each poll is a pass and sets the next interval by the
 *    rate it saw.
 *  - Two polls in a row that take less than COALESCE_MIN_BYTES end
 *    polling: the transfer ended. One may be a pause: the guest waits for
 *    the ACKs the poll sends (under TCG, at 1500 bytes a frame, ending at
 *    the first such poll ended most tries after a few polls, and most
 *    frames were taken with notifications after all).
 *  - A pass after which the guest waits for our window (the TCP layer
 *    says so: coalesce_window_limited()) ends polling, and a streak: the
 *    guest sends as fast as we ACK, so a poll only lengthens its round
 *    trip, and the rate it shows is the one our polling sets. Without
 *    this, a fast guest behind a slower link was held at the longest
 *    interval, a window per poll, at half the throughput.
 *  - Polls that starve the sender end polling (issue 52). A sender that
 *    keeps only a few frames in flight (a small ring, byte queue limits,
 *    a socket buffer) fills them, then waits for us: a poll finds those
 *    few however long it waited, the rate it sees is the one our polling
 *    sets, and each next interval is longer than the last, up to the
 *    longest: 21 frames of 1514 bytes every 2 ms, a hundredth of what
 *    the sender moved with notifications. So we compare what polling
 *    gives with what notifications gave, whatever the reason: the rate
 *    of the recent passes on wake-ups (load over time, each older pass
 *    weighing 7/8 of the next) with that of the try's polls (the same).
 *    A try whose polls move less than 7/8 of it ends, with the hold-off
 *    below (before eight polls tell, less than half ends it; the first
 *    poll alone, less than a quarter: one poll may find a pause). The
 *    passes that start a try are a burst, though (a streak of bulk ones
 *    close together), so the verdict is checked: over the hold-off
 *    (every pass of it), the sender must move more than 8/7 of what the
 *    polls moved, or the next try comes at once. If it does, the most
 *    one poll took is the most it has in flight, its limit: tries aim at
 *    half of it instead of the target, so the sender never runs dry
 *    before a poll, and none starts if that is under three of its
 *    frames or the shortest interval (a fast sender with few frames in
 *    flight wakes us for each batch, as with coalescing off). A limit
 *    that polls don't starve grows by 1/128 a poll (one learnt from a
 *    slow start, whose guest waits for the ACKs our polls hold, is too
 *    low), goes when a pass takes more than it, or 100 ms after it was
 *    last used. In a model of such senders (test_coalesce.c: 1 to 1000
 *    frames of 1514 bytes or 64 KiB in flight, one every 1.25 to 330
 *    us) each moves 97.5 % or more of what it moves with notifications,
 *    in as many passes or fewer.
 *  - Two polls in a row that take a single frame each merged nothing,
 *    which is what a request/response exchange of large messages looks
 *    like (each waits for the answer to the one before): polling ends,
 *    and the next try waits out @penalty passes, which doubles up to
 *    COALESCE_PENALTY_MAX with each such failure and starts over after a
 *    poll that merged frames. (A sender held to one frame per ACK by our
 *    window, as at the start of a connection whose socket's send buffer
 *    hasn't grown yet, ends up here too if the window rule above misses
 *    it.)
 *
 * Under TCG this cut the CPU time per GiB guest -> peer by a third or
 * more, and left a fast guest, traffic towards the guest and round trips
 * alone. The figures, and the variants tried on the way, are in
 * doc/bench-history.md ("Input coalescing" and the two sections after it).
 *
 * The cost is latency while polling: a frame of another flow that the
 * guest sends during a bulk transfer waits for the next poll, at most the
 * longest interval. Nothing is lost or reordered: the frames wait in the
 * guest's ring or in our socket, as they would behind a busy loop round.
 * PASST_COALESCE_US sets the longest interval; 0 turns coalescing off.
 */
#include <errno.h>
#include <stdlib.h>

#include "env.h"
#include "log.h"
#include "tap/coalesce.h"
#include "util.h"

/* Less than this in a pass: not a bulk transfer */
#define COALESCE_MIN_BYTES (8 * 1024)
/* What a frame costs a queue beyond its bytes, in a pass's load */
#define COALESCE_FRAME_COST 1024
/* Bulk passes in a row before we poll */
#define COALESCE_STREAK 3
/* Polls gather at least this many frames' spacing */
#define COALESCE_SPACINGS 3
/* Polls in a row that take a single frame: the try merged nothing */
#define COALESCE_SINGLE_MAX 2
/* Polls in a row that take (next to) nothing: the transfer ended */
#define COALESCE_QUIET_MAX 2
/* Shorter intervals save too little: notifications on */
#define COALESCE_MIN_NS 100000ULL
/* Passes to let go by after a try that merged nothing, at first and most */
#define COALESCE_PENALTY_MIN 8
#define COALESCE_PENALTY_MAX 1024
/* Longer gaps than this don't count for the rate (a stalled loop) */
#define COALESCE_DT_MAX 1000000000ULL
/* Each pass weighs this many eighths of the next in the recent rates */
#define COALESCE_DECAY_8THS 7
/* Polls moving less than this many eighths of the rate on wake-ups
 * starve the sender, once COALESCE_JUDGE_POLLS polls of a try tell (a
 * poll takes a few large frames: one more or less is a quarter); before
 * that, less than half of it, and the first poll alone, less than a
 * quarter (one poll may find a pause)
 */
#define COALESCE_STARVED_8THS 7
#define COALESCE_JUDGE_POLLS 8
/* The sender's limit learnt from starved polls is kept this long (ns)
 * after the last poll that used it
 */
#define COALESCE_LIMIT_NS 100000000ULL

struct coalesce_stats coalesce_stats;
static uint64_t coalesce_max = COALESCE_MAX_NS_DEFAULT;
static bool coalesce_limited;	/* since the last pass: see below */

/**
 * coalesce_window_limited() - the guest now waits for our window (a TCP
 *			       connection of the pass under way has little or
 *			       none left): the pass must not lead to polling
 */
void coalesce_window_limited(void)
{
	coalesce_limited = true;
}

/**
 * coalesce_conf() - set the longest interval between polls
 * @max_ns:	nanoseconds, 0 to never poll
 */
void coalesce_conf(uint64_t max_ns)
{
	coalesce_max = max_ns;
}

/**
 * coalesce_init() - the longest interval from PASST_COALESCE_US, if set:
 *		     microseconds, 0 (off) to COALESCE_US_MAX; dies on others
 */
void coalesce_init(void)
{
	const char *v = env_get()->coalesce_us;
	unsigned long us;
	char *end;

	if (!v)
		return;
	errno = 0;
	us = strtoul(v, &end, 10);
	if (!*v || *end || errno || us > COALESCE_US_MAX)
		die("PASST_COALESCE_US: '%s' is not a number of microseconds "
		    "from 0 (off) to %u", v, COALESCE_US_MAX);
	coalesce_conf((uint64_t)us * 1000);
	if (us)
		info("Input coalescing: at most %lu us between polls", us);
	else
		info("Input coalescing: off");
}

/**
 * coalesce_max_ns() - the longest interval between polls
 *
 * Return: nanoseconds, 0 if coalescing is off
 */
uint64_t coalesce_max_ns(void)
{
	return coalesce_max;
}

/**
 * coalesce_reset() - forget a queue's history (a new or restarted queue)
 * @s:		coalescing state
 * @target:	what a poll should gather (COALESCE_TARGET_*)
 */
void coalesce_reset(struct coalesce *s, size_t target)
{
	s->target = target;
	s->last = 0;
	s->streak = s->single = s->quiet = s->hold = 0;
	s->interval = 0;
	s->penalty = COALESCE_PENALTY_MIN;
	s->polling = false;
	s->woke_load = s->woke_ns = 0;
	s->poll_load = s->poll_ns = 0;
	s->polls = 0;
	s->poll_max = 0;
	s->limit = 0;
	s->limit_at = 0;
	s->pending = 0;
	s->starved_rate = 0;
	s->verify_load = s->verify_ns = 0;
}

/* Notifications on again; @penalty: hold the next try off */
static uint64_t coalesce_stop(struct coalesce *s, bool penalty)
{
	s->streak = s->single = s->quiet = 0;
	if (s->polling && penalty) {
		s->hold = s->penalty;
		s->penalty = MIN(s->penalty * 2, COALESCE_PENALTY_MAX);
	}
	s->polling = false;
	s->poll_load = s->poll_ns = 0;
	s->polls = 0;
	s->poll_max = 0;
	return 0;
}

/* Add a pass of @load in @dt to recent sums of load and time */
static void coalesce_sum(uint64_t *load_sum, uint64_t *ns_sum, size_t load,
			 uint64_t dt)
{
	*load_sum = *load_sum * COALESCE_DECAY_8THS / 8 + load;
	*ns_sum = *ns_sum * COALESCE_DECAY_8THS / 8 + dt;
}

/* A rate, in bytes of load per 65536 ns, for comparisons; 0 without time */
static uint64_t coalesce_rate(uint64_t load, uint64_t ns)
{
	return ns ? load * 65536 / ns : 0;
}

/* Do our polls starve the sender: take less of its frames, for the time
 * they take, than it sent while it woke us? A sender that keeps only a
 * few frames in flight fills them, then waits for us: a poll then finds
 * the same few however long it waited, and waiting longer only slows it
 */
static bool coalesce_starved(const struct coalesce *s)
{
	uint64_t woke = coalesce_rate(s->woke_load, s->woke_ns);
	uint64_t polled = coalesce_rate(s->poll_load, s->poll_ns);

	if (!woke || !s->poll_ns)
		return false;
	if (s->polls < 2)
		return polled * 4 < woke;
	if (s->polls < COALESCE_JUDGE_POLLS)
		return polled * 2 < woke;
	return polled * 8 < woke * COALESCE_STARVED_8THS;
}

/* The last try ended as starving the sender: did it move more again once
 * it woke us, over the hold-off that followed (all its passes: not only
 * bulk ones close together, as those that start a try)? Then the limit
 * its polls found holds. If not, the polls were slower because the
 * sender was, or the passes that started the try were a burst: no limit,
 * and the next try may come soon
 */
static void coalesce_verify(struct coalesce *s, uint64_t now)
{
	uint64_t woke = coalesce_rate(s->verify_load, s->verify_ns);

	if (s->starved_rate * 8 < woke * COALESCE_STARVED_8THS) {
		coalesce_stats.confirmed++;
		s->limit = s->pending;
		s->limit_at = now;
	} else {
		s->penalty = COALESCE_PENALTY_MIN;
	}
	s->pending = 0;
	s->verify_load = s->verify_ns = 0;
}

/**
 * coalesce_pass() - a pass over an input queue: poll next time, or not?
 * @s:		the queue's coalescing state (coalesce_reset() first)
 * @now:	time of the pass (ns, CLOCK_MONOTONIC)
 * @bytes:	bytes the pass took
 * @frames:	frames the pass took
 *
 * Return: 0 to turn notifications on; else leave them off and make the
 *	   next pass at this time (ns, CLOCK_MONOTONIC)
 */
uint64_t coalesce_pass(struct coalesce *s, uint64_t now, size_t bytes,
		       unsigned frames)
{
	uint64_t dt = s->last && now > s->last ? now - s->last : UINT64_MAX;
	size_t load = bytes + (size_t)frames * COALESCE_FRAME_COST;
	bool limited = coalesce_limited;
	uint64_t iv, sp;
	size_t tgt;

	coalesce_limited = false;
	s->last = now;
	if (s->polling) {
		coalesce_stats.polls++;
		coalesce_stats.frames += frames;
		coalesce_sum(&s->poll_load, &s->poll_ns, load,
			     MIN(dt, COALESCE_DT_MAX));
		s->polls++;
		s->poll_max = MAX(s->poll_max, load);
	} else if (dt <= coalesce_max) {
		coalesce_sum(&s->woke_load, &s->woke_ns, load, dt);
		if (s->pending) {
			s->verify_load += load;
			s->verify_ns += dt;
		}
	} else {
		s->woke_load = s->woke_ns = 0;
	}
	/* A limit is a guess: forget it after a while, or when exceeded */
	if (s->limit && (now - s->limit_at > COALESCE_LIMIT_NS ||
			 load > s->limit + s->limit / 8))
		s->limit = 0;
	tgt = s->limit ? MIN(s->target, s->limit / 2) : s->target;

	if (!coalesce_max || !s->target)
		return coalesce_stop(s, false);
	if (limited) {
		if (s->polling)
			coalesce_stats.limited++;
		return coalesce_stop(s, false);
	}
	if (!frames || bytes < COALESCE_MIN_BYTES) {
		/* A pause, perhaps: the guest may wait for what we send */
		if (s->polling && ++s->quiet < COALESCE_QUIET_MAX)
			return now + s->interval;
		return coalesce_stop(s, false);
	}
	s->quiet = 0;

	if (s->polling) {
		if (frames == 1 && ++s->single >= COALESCE_SINGLE_MAX) {
			coalesce_stats.failed++;
			return coalesce_stop(s, true);
		}
		if (coalesce_starved(s)) {
			/* It can't have more in flight than our polls found:
			 * the next try aims at half of that
			 */
			coalesce_stats.starved++;
			debug_rl("coalescing: %u polls moved %llu B/ms, the "
				 "sender %llu B/ms on wake-ups: starved, at "
				 "most %zu in flight",
				 s->polls,
				 (unsigned long long)(coalesce_rate(s->poll_load,
					s->poll_ns) * 1000000 / 65536),
				 (unsigned long long)(coalesce_rate(s->woke_load,
					s->woke_ns) * 1000000 / 65536),
				 s->poll_max);
			s->pending = s->poll_max;
			s->starved_rate = coalesce_rate(s->poll_load,
							s->poll_ns);
			s->verify_load = s->verify_ns = 0;
			return coalesce_stop(s, true);
		}
		if (frames > 1) {
			s->single = 0;
			s->penalty = COALESCE_PENALTY_MIN;
		}
		/* A limit that polls don't starve may be too low: raise it
		 * by 1/128 a poll (doubled in 89 polls), and keep it
		 */
		if (s->limit) {
			s->limit += s->limit / 128;
			s->limit_at = now;
			if (s->limit >= 2 * s->target)
				s->limit = 0;
		}
	} else {
		coalesce_stats.woken++;
		if (s->hold) {
			coalesce_stats.held++;
			if (!--s->hold && s->pending)
				coalesce_verify(s, now);
			return 0;
		}
		if (load >= tgt || dt > coalesce_max) {
			s->streak = load >= tgt ? 0 : 1;
			return 0;
		}
		if (++s->streak < COALESCE_STREAK)
			return 0;
	}

	/* Gather the target at the rate this pass saw, a few frames at least;
	 * if a few frames are more than half of what the sender can have in
	 * flight, a poll can't merge them without starving it
	 */
	dt = MIN(dt, COALESCE_DT_MAX);
	iv = dt * tgt / load;
	sp = dt * COALESCE_SPACINGS / frames;
	if (sp > iv) {
		if (s->limit)
			return coalesce_stop(s, false);
		iv = sp;
	}
	if (iv < COALESCE_MIN_NS)
		return coalesce_stop(s, false);
	if (!s->polling)
		coalesce_stats.tries++;
	s->polling = true;
	s->interval = MIN(iv, coalesce_max);
	return now + s->interval;
}

/**
 * coalesce_log_stats() - report what coalescing did (SIGUSR1, exit), if any
 */
void coalesce_log_stats(void)
{
	const struct coalesce_stats *st = &coalesce_stats;

	if (!st->tries)
		return;
	info("coalescing: polled %llu times for %llu frames, started %llu "
	     "times, %llu of them given up as merging nothing, %llu ended "
	     "by a guest waiting for our window, %llu as starving it (%llu "
	     "confirmed); %llu bulk passes on wake-ups, %llu of them held "
	     "off",
	     (unsigned long long)st->polls, (unsigned long long)st->frames,
	     (unsigned long long)st->tries, (unsigned long long)st->failed,
	     (unsigned long long)st->limited, (unsigned long long)st->starved,
	     (unsigned long long)st->confirmed,
	     (unsigned long long)st->woken, (unsigned long long)st->held);
}
