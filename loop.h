/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop.h - the epoll event loop, its typed references, and the timer tick.
 *
 * Every file descriptor registered with epoll carries a union epoll_ref:
 * what kind of thing it is, an index into that kind's table (flow index,
 * for instance) and the fd itself, so dispatch is a switch on the type and
 * never a lookup.
 */
#ifndef LOOP_H
#define LOOP_H

#include <stdint.h>

struct ctx;

enum ref_type {
	REF_NONE = 0,
	REF_SIGNAL,		/* signalfd: SIGTERM, SIGINT, SIGHUP */
	REF_TIMER,		/* periodic timerfd tick */
	REF_TAP_LISTEN,		/* listening UNIX socket of the front-end */
	REF_TAP,		/* connected front-end socket */
	REF_ICMP,		/* ping socket of an ICMP echo flow */
	REF_TCP,		/* TCP socket of a flow */
	REF_TCP_LISTEN,		/* listening socket for a forwarded port */
	REF_UDP,		/* UDP socket of a flow */
	REF_UDP_LISTEN,		/* bound socket for a forwarded UDP port */
	REF_VU_CTRL,		/* vhost-user control socket */
	REF_VU_KICK,		/* vhost-user kick eventfd */
	REF_REPAIR_LISTEN,	/* passt-repair listening socket */
	REF_REPAIR,		/* passt-repair connection */
	REF_TYPE_MAX,
};

union epoll_ref {
	struct {
		uint32_t type : 8;
		uint32_t idx : 24;
		int32_t fd;
	};
	uint64_t u64;
};

/* Period of the timer tick: every module's timer handler runs this often */
#define LOOP_TICK_MS 100

int loop_init(struct ctx *c);
int loop_signals_init(struct ctx *c);
int loop_add(struct ctx *c, int fd, uint32_t events, enum ref_type type,
	     uint32_t idx);
int loop_mod(struct ctx *c, int fd, uint32_t events, enum ref_type type,
	     uint32_t idx);
void loop_del(struct ctx *c, int fd);
void loop_run(struct ctx *c);

#endif /* LOOP_H */
