// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * udp.c - UDP translation (placeholder until the UDP module lands: guest
 * datagrams are dropped and counted).
 */
#include "ctx.h"
#include "log.h"
#include "udp/udp.h"

void udp_input(struct ctx *c, const struct pkt *p)
{
	(void)c;
	(void)p;
	debug_rl("UDP: not translated yet, datagram dropped");
}

void udp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	(void)c;
	(void)ref;
	(void)events;
}

void udp_timer(struct ctx *c, uint64_t now)
{
	(void)c;
	(void)now;
}
