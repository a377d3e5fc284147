// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * loop.c - epoll plumbing, and nothing else.
 *
 * Theory of operation: one epoll instance; every registered fd carries a
 * union epoll_ref (type, index, generation). This file registers,
 * modifies and removes fds, and waits. It owns two fds of its own: a
 * timerfd ticking every LOOP_TICK_MS, and a signalfd for SIGTERM, SIGINT,
 * SIGHUP, SIGUSR1 and SIGUSR2 (so signals are just events, never
 * asynchronous handlers). It knows no module: which handler takes which
 * reference type, what the tick drives and what runs at the end of each
 * round is decided by the main loop in passt.c.
 *
 * Generations: loop_gen_next() hands out numbers that are never zero and
 * don't repeat for 2^32 - 1 calls. An owner that replaces an object (a
 * new front-end connection, a new kick fd) takes a new generation and
 * registers it with the fd; an event carrying an older one is stale.
 *
 * Nothing here blocks but loop_wait(). With PASST_IO_URING_WAIT=1, where
 * the kernel can (uring.c), the wait is an operation on the io_uring,
 * submitted with the calls the round queued there.
 *
 * A wait may also end at a deadline (nanoseconds, CLOCK_MONOTONIC), for
 * the front-ends' input coalescing (tap/coalesce.c), which polls a
 * fraction of a millisecond later: epoll_pwait2() takes a timeout in
 * nanoseconds. Where it's missing (Linux before 5.11, or refused), the
 * timeout is epoll_wait()'s whole milliseconds, rounded up, and with the
 * io_uring wait, such a round waits with epoll_pwait2() too.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "loop.h"
#include "uring.h"
#include "util.h"

static sigset_t loop_sigmask;
static int loop_timer_fd = -1;
static int loop_signal_fd = -1;
static uint32_t loop_gen;
static bool loop_no_pwait2;		/* epoll_pwait2() refused */

static int loop_ctl(struct ctx *c, int op, int fd, uint32_t events,
		    union epoll_ref ref)
{
	struct epoll_event ev = { .events = events, .data.u64 = ref.u64 };

	if (epoll_ctl(c->epollfd, op, fd, &ev))
		return -errno;
	return 0;
}

/**
 * loop_add() - register @fd with epoll, tagged with @ref
 * @c:		execution context
 * @fd:		file descriptor
 * @events:	epoll events
 * @ref:	reference handed back with each event
 *
 * Return: 0 or -errno
 */
int loop_add(struct ctx *c, int fd, uint32_t events, union epoll_ref ref)
{
	return loop_ctl(c, EPOLL_CTL_ADD, fd, events, ref);
}

/**
 * loop_mod() - change the events (or reference) of a registered fd
 * @c:		execution context
 * @fd:		file descriptor, registered
 * @events:	epoll events
 * @ref:	reference handed back with each event
 *
 * Return: 0 or -errno
 */
int loop_mod(struct ctx *c, int fd, uint32_t events, union epoll_ref ref)
{
	return loop_ctl(c, EPOLL_CTL_MOD, fd, events, ref);
}

/**
 * loop_del() - unregister @fd (before closing it)
 * @c:		execution context
 * @fd:		file descriptor
 */
void loop_del(struct ctx *c, int fd)
{
	epoll_ctl(c->epollfd, EPOLL_CTL_DEL, fd, NULL);
}

/**
 * loop_gen_next() - a fresh generation number for a reference
 *
 * Return: non-zero number, different from the last 2^32 - 2 ones
 */
uint32_t loop_gen_next(void)
{
	if (!++loop_gen)
		loop_gen = 1;
	return loop_gen;
}

/**
 * loop_init() - create the epoll instance and the timer, block signals
 * @c:		execution context
 *
 * Signals are blocked from here on, so none is lost, but their signalfd
 * comes from loop_signals_init(), after daemonizing: a signalfd only
 * wakes epoll for the process that created it.
 *
 * Return: 0 or -errno
 */
int loop_init(struct ctx *c)
{
	struct itimerspec its = {
		.it_interval = { 0, LOOP_TICK_MS * 1000000L },
		.it_value = { 0, LOOP_TICK_MS * 1000000L },
	};

	c->epollfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epollfd < 0)
		return -errno;

	sigemptyset(&loop_sigmask);
	sigaddset(&loop_sigmask, SIGTERM);
	sigaddset(&loop_sigmask, SIGINT);
	sigaddset(&loop_sigmask, SIGHUP);
	sigaddset(&loop_sigmask, SIGUSR1);
	sigaddset(&loop_sigmask, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &loop_sigmask, NULL))
		return -errno;

	loop_timer_fd = timerfd_create(CLOCK_MONOTONIC,
				       TFD_NONBLOCK | TFD_CLOEXEC);
	if (loop_timer_fd < 0)
		return -errno;
	if (timerfd_settime(loop_timer_fd, 0, &its, NULL))
		return -errno;
	return loop_add(c, loop_timer_fd, EPOLLIN, loop_ref(REF_TIMER, 0, 0));
}

/**
 * loop_signals_init() - receive the signals blocked by loop_init() as events
 * @c:		execution context
 *
 * Return: 0 or -errno
 */
int loop_signals_init(struct ctx *c)
{
	loop_signal_fd = signalfd(-1, &loop_sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (loop_signal_fd < 0)
		return -errno;
	return loop_add(c, loop_signal_fd, EPOLLIN,
			loop_ref(REF_SIGNAL, 0, 0));
}

/**
 * loop_signal_next() - take the next pending signal (REF_SIGNAL events)
 *
 * Return: signal number, 0 if none is pending
 */
int loop_signal_next(void)
{
	struct signalfd_siginfo si;

	if (loop_signal_fd < 0 ||
	    read(loop_signal_fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

/**
 * loop_timer_read() - acknowledge the timer tick (REF_TIMER events)
 *
 * Return: 1 if the tick had expired, 0 if not (spurious wake-up)
 */
int loop_timer_read(void)
{
	uint64_t expirations;

	return read(loop_timer_fd, &expirations, sizeof(expirations)) ==
	       sizeof(expirations);
}

/**
 * loop_wait_until() - wait for events, at most until a deadline
 * @c:		execution context
 * @ev:		events, filled in
 * @max:	size of @ev
 * @until:	deadline, ns on CLOCK_MONOTONIC
 *
 * Where epoll_pwait2() is missing or denied, epoll_wait() with the deadline in
 * whole milliseconds, rounded up.
 *
 * Return: number of events, as epoll_wait()
 */
static int loop_wait_until(struct ctx *c, struct epoll_event *ev, int max,
			   uint64_t until)
{
	uint64_t now = now_ns(), left = until > now ? until - now : 0;
	int n;

	if (uring_waits())
		uring_flush();
	if (!loop_no_pwait2) {
		struct timespec ts = {
			.tv_sec = (time_t)(left / 1000000000ULL),
			.tv_nsec = (long)(left % 1000000000ULL),
		};

		n = epoll_pwait2(c->epollfd, ev, max, &ts, NULL);
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return n;
		loop_no_pwait2 = true;
		debug("epoll_pwait2(): %s, deadlines in whole milliseconds",
		      strerror(errno));
	}
	left = MIN((left + 999999) / 1000000, (uint64_t)INT_MAX);
	return epoll_wait(c->epollfd, ev, max, (int)left);
}

/**
 * loop_wait() - wait for the next round of events
 * @c:		execution context
 * @ev:		events, filled in
 * @max:	size of @ev
 * @sleep:	false to return at once if there are none
 * @until:	if sleeping, return by this time if nothing happens (ns,
 *		CLOCK_MONOTONIC); 0: no deadline
 *
 * Return: number of events, 0 if interrupted (or none, not sleeping, or
 *	   the deadline passed); dies on other errors
 */
int loop_wait(struct ctx *c, struct epoll_event *ev, int max, bool sleep,
	      uint64_t until)
{
	int n;

	if (!sleep) {
		/* What the round queued on the ring goes now, by itself */
		if (uring_waits())
			uring_flush();
		n = epoll_wait(c->epollfd, ev, max, 0);
	} else if (until) {
		n = loop_wait_until(c, ev, max, until);
	} else if (uring_waits()) {
		/* With the round's queued calls, in one io_uring_enter() */
		n = uring_epoll_wait(c->epollfd, ev, max);
		if (n < 0) {
			errno = -n;
			n = -1;
		}
	} else {
		n = epoll_wait(c->epollfd, ev, max, -1);
	}

	if (n < 0) {
		if (errno == EINTR)
			return 0;
		die_perror("epoll_wait");
	}
	return n;
}
