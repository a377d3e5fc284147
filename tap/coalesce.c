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
}

/* Notifications on again; @penalty: the try merged nothing */
static uint64_t coalesce_stop(struct coalesce *s, bool penalty)
{
	s->streak = s->single = s->quiet = 0;
	if (s->polling && penalty) {
		coalesce_stats.failed++;
		s->hold = s->penalty;
		s->penalty = MIN(s->penalty * 2, COALESCE_PENALTY_MAX);
	}
	s->polling = false;
	return 0;
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
	uint64_t iv;

	coalesce_limited = false;
	s->last = now;
	if (s->polling) {
		coalesce_stats.polls++;
		coalesce_stats.frames += frames;
	}
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
		if (frames > 1) {
			s->single = 0;
			s->penalty = COALESCE_PENALTY_MIN;
		} else if (++s->single >= COALESCE_SINGLE_MAX) {
			return coalesce_stop(s, true);
		}
	} else {
		coalesce_stats.woken++;
		if (s->hold) {
			coalesce_stats.held++;
			s->hold--;
			return 0;
		}
		if (load >= s->target || dt > coalesce_max) {
			s->streak = load >= s->target ? 0 : 1;
			return 0;
		}
		if (++s->streak < COALESCE_STREAK)
			return 0;
	}

	/* Gather the target at the rate this pass saw, a few frames at least */
	dt = MIN(dt, COALESCE_DT_MAX);
	iv = MAX(dt * s->target / load, dt * COALESCE_SPACINGS / frames);
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
	     "by a guest waiting for our window; %llu bulk passes on "
	     "wake-ups, %llu of them held off",
	     (unsigned long long)st->polls, (unsigned long long)st->frames,
	     (unsigned long long)st->tries, (unsigned long long)st->failed,
	     (unsigned long long)st->limited,
	     (unsigned long long)st->woken, (unsigned long long)st->held);
}
