// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conn.c - TCP, the lowest layer of tcp/: a connection as the flow table
 * holds it (its index, its addresses), the events of its socket in the
 * loop, and its retransmission timer. Every other file of tcp/ builds on
 * this one, and it calls none of them.
 *
 * Theory of operation
 *
 * A connection is an entry of the flow table (flow.c): whoever keeps its
 * index across calls finds it again with tcp_conn_at(), which also tells
 * a closed or reused entry from a live one. Its socket's events follow
 * its flags: EPOLLIN unless the guest's ACKs drive our reads
 * (TCP_F_QUIET, to_guest.c), EPOLLOUT while the guest waits for room or
 * data waits to be written (TCP_F_OUT_WAIT, TCP_F_TAIL). The timer is
 * TCP_RTO_MS, doubled per retry (tcp.c's tcp_timer() acts on it).
 */
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "flow.h"
#include "flow_tcp.h"
#include "loop.h"
#include "tcp/conn.h"
#include "util.h"

#define TCP_RTO_MS 1000			/* initial retransmission timeout */

/**
 * tcp_conn_at() - the connection at a flow index, for whoever kept the
 *		   index across calls (pending ACKs, migration's lists)
 * @idx:	flow table index, may be out of range
 *
 * Return: the connection, NULL if the entry isn't a live TCP flow: free,
 *	   closing (closed in this round), or reused by another protocol
 */
struct tcp_conn *tcp_conn_at(unsigned idx)
{
	union flow *flow = flow_live(idx, FLOW_TCP);

	return flow ? &flow->tcp : NULL;
}

/**
 * tcp_idx() - flow index of a connection
 * @conn:	connection
 *
 * Return: its index in the flow table
 */
unsigned tcp_idx(const struct tcp_conn *conn)
{
	return flow_idx((const union flow *)conn);
}

/**
 * tcp_gaddr() - the guest-side address of a connection, in the family's
 *		 own format (struct in_addr or struct in6_addr)
 * @conn:	connection
 *
 * Return: pointer into the flow key
 */
const void *tcp_gaddr(const struct tcp_conn *conn)
{
	const struct in6_addr *a = &conn->f.key.gaddr;

	return conn->f.key.family == AF_INET ? (const void *)&a->s6_addr[12]
					     : (const void *)a;
}

/**
 * tcp_raddr() - the remote address of a connection, as tcp_gaddr()
 * @conn:	connection
 *
 * Return: pointer into the flow key
 */
const void *tcp_raddr(const struct tcp_conn *conn)
{
	const struct in6_addr *a = &conn->f.key.raddr;

	return conn->f.key.family == AF_INET ? (const void *)&a->s6_addr[12]
					     : (const void *)a;
}

/**
 * tcpm_events() - the events of a connection's socket when it goes (back)
 *		   into the loop: a migration's held or restored socket,
 *		   input on
 * @conn:	connection
 *
 * Return: epoll events
 */
uint32_t tcpm_events(const struct tcp_conn *conn)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP | EPOLLET;

	if (conn->flags & (TCP_F_OUT_WAIT | TCP_F_TAIL))
		ev |= EPOLLOUT;
	return ev;
}

/**
 * tcp_conn_events() - set the socket's events from the flags: EPOLLOUT
 *		       while the guest waits for room or data kept, or a
 *		       migration's, does (TCP_F_TAIL), EPOLLIN unless its
 *		       ACKs drive our reads (TCP_F_QUIET)
 * @c:		execution context
 * @conn:	connection
 */
void tcp_conn_events(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t ev = tcpm_events(conn);

	if (conn->flags & TCP_F_QUIET)
		ev &= ~(uint32_t)EPOLLIN;
	loop_mod(c, conn->sock, ev, flow_ref((union flow *)conn, REF_TCP));
}

/**
 * tcp_out_wait() - wake us when the socket has room again
 * @c:		execution context
 * @conn:	connection
 */
void tcp_out_wait(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_OUT_WAIT)
		return;
	conn->flags |= TCP_F_OUT_WAIT;
	tcp_conn_events(c, conn);
}

/**
 * tcp_timer_arm() - retransmission timer: TCP_RTO_MS, doubled per retry
 * @conn:	connection
 * @now:	current time, ms
 */
void tcp_timer_arm(struct tcp_conn *conn, uint64_t now)
{
	conn->timer = now + ((uint64_t)TCP_RTO_MS << MIN(conn->retries, 6));
}
