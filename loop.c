// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * loop.c - epoll registration helpers and the main loop.
 *
 * Theory of operation: one epoll instance; every registered fd carries a
 * union epoll_ref (type, index, fd). loop_run() waits, then hands each event
 * to the owner of its type. Two fds are always there: a signalfd for
 * SIGTERM/SIGINT/SIGHUP/SIGUSR1 (so signals are just events, never async handlers)
 * and a timerfd ticking every LOOP_TICK_MS, which drives every module's
 * timeouts. After each batch of events, frames queued for the guest are
 * flushed in one go (tap_flush()).
 *
 * The loop never blocks anywhere but in epoll_wait().
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "log.h"
#include "loop.h"
#include "util.h"
#include "tap/tap.h"
#include "tap/stream.h"
#include "tap/vhost_user.h"
#include "net/icmp.h"
#include "net/ndp.h"
#include "tcp/tcp.h"
#include "udp/udp.h"

#define LOOP_EVENTS 64

static int loop_ctl(struct ctx *c, int op, int fd, uint32_t events,
		    enum ref_type type, uint32_t idx)
{
	union epoll_ref ref = { .type = type, .idx = idx, .fd = fd };
	struct epoll_event ev = { .events = events, .data.u64 = ref.u64 };

	if (epoll_ctl(c->epollfd, op, fd, &ev))
		return -errno;
	return 0;
}

/**
 * loop_add() - register @fd with epoll, tagged with @type and @idx
 * Return: 0 or -errno
 */
int loop_add(struct ctx *c, int fd, uint32_t events, enum ref_type type,
	     uint32_t idx)
{
	return loop_ctl(c, EPOLL_CTL_ADD, fd, events, type, idx);
}

/**
 * loop_mod() - change the events (or reference) of a registered fd
 * Return: 0 or -errno
 */
int loop_mod(struct ctx *c, int fd, uint32_t events, enum ref_type type,
	     uint32_t idx)
{
	return loop_ctl(c, EPOLL_CTL_MOD, fd, events, type, idx);
}

/**
 * loop_del() - unregister @fd (before closing it)
 */
void loop_del(struct ctx *c, int fd)
{
	epoll_ctl(c->epollfd, EPOLL_CTL_DEL, fd, NULL);
}

static sigset_t loop_sigmask;

/**
 * loop_init() - create the epoll instance and the timer, block signals
 * Return: 0 or -errno
 *
 * Signals are blocked from here on, so none is lost, but their signalfd
 * comes from loop_signals_init(), after daemonizing: a signalfd only
 * wakes epoll for the process that created it.
 */
int loop_init(struct ctx *c)
{
	struct itimerspec its = {
		.it_interval = { 0, LOOP_TICK_MS * 1000000L },
		.it_value = { 0, LOOP_TICK_MS * 1000000L },
	};
	int fd;

	c->epollfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epollfd < 0)
		return -errno;

	sigemptyset(&loop_sigmask);
	sigaddset(&loop_sigmask, SIGTERM);
	sigaddset(&loop_sigmask, SIGINT);
	sigaddset(&loop_sigmask, SIGHUP);
	sigaddset(&loop_sigmask, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &loop_sigmask, NULL))
		return -errno;

	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL))
		return -errno;
	return loop_add(c, fd, EPOLLIN, REF_TIMER, 0);
}

/**
 * loop_signals_init() - receive SIGTERM, SIGINT, SIGHUP, SIGUSR1 as events
 * Return: 0 or -errno
 */
int loop_signals_init(struct ctx *c)
{
	int fd = signalfd(-1, &loop_sigmask, SFD_NONBLOCK | SFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	return loop_add(c, fd, EPOLLIN, REF_SIGNAL, 0);
}

static void loop_signal(struct ctx *c, int fd)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			info("Signal %u received, exiting", si.ssi_signo);
			c->quit = true;
			break;
		case SIGUSR1:
			flow_log_stats();
			tap_log_stats();
			break;
		default:
			debug("Signal %u ignored", si.ssi_signo);
		}
	}
}

static void loop_timer(struct ctx *c, int fd)
{
	uint64_t expirations, now = now_ms();

	if (read(fd, &expirations, sizeof(expirations)) < 0)
		return;
	icmp_timer(c, now);
	ndp_timer(c, now);
	tcp_timer(c, now);
	udp_timer(c, now);
}

static void loop_dispatch(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	switch (ref.type) {
	case REF_SIGNAL:
		loop_signal(c, ref.fd);
		break;
	case REF_TIMER:
		loop_timer(c, ref.fd);
		break;
	case REF_TAP_LISTEN:
		if (c->mode == MODE_VU)
			vu_listen_handler(c);
		else
			stream_listen_handler(c);
		break;
	case REF_VU_CTRL:
		vu_ctrl_handler(c, events);
		break;
	case REF_VU_KICK:
		vu_kick_handler(c, ref.idx, ref.fd);
		break;
	case REF_TAP:
		stream_handler(c, events);
		break;
	case REF_ICMP:
		icmp_sock_handler(c, ref, events);
		break;
	case REF_TCP:
		tcp_sock_handler(c, ref, events);
		break;
	case REF_TCP_LISTEN:
		tcp_listen_handler(c, ref);
		break;
	case REF_UDP:
	case REF_UDP_LISTEN:
		udp_sock_handler(c, ref, events);
		break;
	default:
		debug("event for unhandled reference type %u", ref.type);
		break;
	}
}

/**
 * loop_run() - run until a signal or a front-end event asks us to stop
 */
void loop_run(struct ctx *c)
{
	struct epoll_event ev[LOOP_EVENTS];
	int n, i;

	while (!c->quit) {
		n = epoll_wait(c->epollfd, ev, LOOP_EVENTS, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die_perror("epoll_wait");
		}
		for (i = 0; i < n && !c->quit; i++) {
			union epoll_ref ref = { .u64 = ev[i].data.u64 };

			loop_dispatch(c, ref, ev[i].events);
		}
		tcp_defer_handler(c);
		tap_flush(c);
	}
}
