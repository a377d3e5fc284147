/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * coalesce.h - when to stop being woken for each of the guest's frames,
 * and poll for them instead (see coalesce.c)
 */
#ifndef TAP_COALESCE_H
#define TAP_COALESCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest wait for more frames while polling, by default (ns) */
#define COALESCE_MAX_NS_DEFAULT 2000000ULL
/* ...and the most PASST_COALESCE_US may ask for (us) */
#define COALESCE_US_MAX 100000

/* What one poll should gather (bytes, plus COALESCE_FRAME_COST a frame):
 * from a ring of the guest's, which holds a few hundred frames; from a
 * socket, which holds what the sender's buffer does (about 200 KiB of
 * memory by default, 1500-byte frames counted at 2.3 KiB each)
 */
#define COALESCE_TARGET_RING (256 * 1024)
#define COALESCE_TARGET_SOCKET (128 * 1024)

/**
 * struct coalesce - coalescing state of one input queue of the guest's
 * @target:	what a poll should gather (COALESCE_TARGET_*)
 * @last:	time of the previous pass (ns, CLOCK_MONOTONIC), 0: none
 * @streak:	bulk passes in a row, close enough together to merge
 * @single:	polls in a row that took a single frame
 * @quiet:	polls in a row that took (next to) nothing
 * @interval:	the interval of the last poll (ns)
 * @hold:	passes to let go by before trying to poll again
 * @penalty:	@hold after the next try that merges nothing
 * @polling:	frames are taken when polled for, not when they arrive
 * @woke_load:	load of the recent bulk passes made on wake-ups, each older
 *		one weighing 7/8 of the one after it...
 * @woke_ns:	...and their time since the pass before each: the rate the
 *		sender keeps up when it wakes us
 * @poll_load:	load taken by the polls of this try...
 * @poll_ns:	...and the time they took: the rate it keeps up while polled
 * @polls:	polls in this try
 * @poll_max:	the largest load one poll of this try took
 * @limit:	the most the sender had in flight when our polls starved it
 *		(load), 0 if unknown: polls aim at half of it
 * @limit_at:	when @limit was learnt or last used (ns, CLOCK_MONOTONIC)
 * @pending:	the limit the last try's polls found, if they starved the
 *		sender, until the next try confirms it
 * @starved_rate: the rate those polls moved (coalesce.c's units)
 * @verify_load: load of the passes on wake-ups since then...
 * @verify_ns:	...and their time
 */
struct coalesce {
	size_t target;
	uint64_t last;
	unsigned streak;
	unsigned single;
	unsigned quiet;
	uint64_t interval;
	unsigned hold;
	unsigned penalty;
	bool polling;
	uint64_t woke_load, woke_ns;
	uint64_t poll_load, poll_ns;
	unsigned polls;
	size_t poll_max;
	size_t limit;
	uint64_t limit_at;
	size_t pending;
	uint64_t starved_rate;
	uint64_t verify_load, verify_ns;
};

/**
 * struct coalesce_stats - what coalescing did, for the log
 * @polls:	passes made because we polled
 * @frames:	frames those polls took
 * @tries:	times polling started
 * @failed:	tries given up because a poll merged nothing
 * @woken:	bulk passes (COALESCE_MIN_BYTES or more) made on a wake-up,
 *		but for those after which the guest waited for our window
 * @held:	those of them that a hold-off kept from polling
 * @limited:	times polling ended because the guest waited for our window
 * @starved:	times polling ended because the guest moved less while we
 *		polled than when it woke us
 * @confirmed:	those after which it moved more again once it woke us
 */
struct coalesce_stats {
	uint64_t polls, frames, tries, failed, woken, held, limited, starved;
	uint64_t confirmed;
};

extern struct coalesce_stats coalesce_stats;

void coalesce_init(void);
void coalesce_conf(uint64_t max_ns);
uint64_t coalesce_max_ns(void);
void coalesce_reset(struct coalesce *s, size_t target);
uint64_t coalesce_pass(struct coalesce *s, uint64_t now, size_t bytes,
		       unsigned frames);
void coalesce_window_limited(void);
void coalesce_log_stats(void);

#endif /* TAP_COALESCE_H */
