/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop.h - epoll plumbing: typed references, registration, waiting, the
 * timer tick and signals as events.
 *
 * Every file descriptor registered with epoll carries a union epoll_ref:
 * what kind of object it belongs to, an index into that kind's table
 * (flow index, ring index...) and a check against reuse, so that dispatch
 * is a switch on the type and never a lookup, and so that an event for an
 * object that is gone can never be taken for a newer one in the same
 * place. Which handler takes which type is decided in passt.c, not here.
 */
#ifndef LOOP_H
#define LOOP_H

#include <stdint.h>
#include <sys/epoll.h>

struct ctx;

enum ref_type {
	REF_NONE = 0,
	REF_SIGNAL,		/* signalfd: SIGTERM, SIGINT, SIGHUP, SIGUSR* */
	REF_TIMER,		/* periodic timerfd tick */
	REF_TAP_LISTEN,		/* listening UNIX socket of the front-end */
	REF_FE_CONN,		/* the front-end's connection: the stream
				 * socket, vhost-user's control socket
				 */
	REF_ICMP,		/* ping socket of an ICMP echo flow */
	REF_TCP,		/* TCP socket of a flow */
	REF_TCP_LISTEN,		/* listening socket for a forwarded port */
	REF_UDP,		/* UDP socket of a flow */
	REF_UDP_LISTEN,		/* bound socket for a forwarded UDP port */
	REF_FE_KICK,		/* a front-end queue's kick (vhost-user) */
	REF_MIGRATE,		/* device-state pipe during a migration */
	REF_REPAIR_LISTEN,	/* passt-repair listening socket */
	REF_REPAIR,		/* passt-repair connection */
	REF_TYPE_MAX,
};

/**
 * union epoll_ref - what an epoll event refers to
 * @type:	enum ref_type
 * @idx:	index in the owner's table (flow index, ring, port...)
 * @gen:	generation of the object when it was registered: the owner
 *		bumps it whenever the object (or its fd) is replaced, and
 *		drops events whose @gen is not the current one
 * @fd:		instead of @gen, for objects that live as long as the
 *		process (listening sockets of forwarded ports): their fd
 * @u64:	the whole reference, as stored in epoll_event.data
 */
union epoll_ref {
	struct {
		uint32_t type : 8;
		uint32_t idx : 24;
		union {
			uint32_t gen;
			int32_t fd;
		};
	};
	uint64_t u64;
};

/* Period of the timer tick: every module's timer handler runs this often */
#define LOOP_TICK_MS 100

/* Events handled per epoll_wait() call: one loop round */
#define LOOP_EVENTS 64

/**
 * loop_ref() - build a reference
 * @type:	enum ref_type
 * @idx:	index in the owner's table
 * @gen:	generation (or fd, see union epoll_ref)
 *
 * Return: the reference
 */
static inline union epoll_ref loop_ref(enum ref_type type, uint32_t idx,
				       uint32_t gen)
{
	union epoll_ref ref = { .type = type, .idx = idx, .gen = gen };

	return ref;
}

int loop_init(struct ctx *c);
int loop_signals_init(struct ctx *c);
int loop_add(struct ctx *c, int fd, uint32_t events, union epoll_ref ref);
int loop_mod(struct ctx *c, int fd, uint32_t events, union epoll_ref ref);
void loop_del(struct ctx *c, int fd);
int loop_wait(struct ctx *c, struct epoll_event *ev, int max, bool sleep,
	      uint64_t until);
int loop_signal_next(void);
int loop_timer_read(void);
uint32_t loop_gen_next(void);

#endif /* LOOP_H */
