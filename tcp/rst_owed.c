// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rst_owed.c - RSTs owed to the guest: a connection that is gone, whose
 * RST couldn't reach the guest when it went.
 *
 * Theory of operation
 *
 * A RST to the guest may find no room in the front-end (its ring full), or
 * the front-end stopped for a migration: the guest would never learn that
 * the connection is gone if it only receives. So tcp_rst() leaves the
 * connection's key and sequence numbers here (tcp_rst_owe()), the end of
 * each round sends what can go (tcp_rst_owed_flush()), and what is older
 * than TCP_RST_OWED_MS is given up. A migration takes the list to the
 * target (tcp/migrate_src.c writes skip records, which the target answers
 * with a RST) and clears it here.
 */
#include <string.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "tap/tap.h"
#include "tcp/proto.h"
#include "tcp/rst_owed.h"
#include "tcp/seg.h"
#include "util.h"

#define TCP_RST_OWED_MAX	256
#define TCP_RST_OWED_MS		30000
static struct tcp_rst_owed tcp_rst_owed[TCP_RST_OWED_MAX];
static unsigned tcp_rst_owed_n;

/**
 * tcp_rst_owe() - remember the RST @conn owes the guest (the oldest goes if
 *		   full; an earlier one for the same addresses and ports is
 *		   replaced)
 * @conn:	connection
 */
void tcp_rst_owe(const struct tcp_conn *conn)
{
	struct tcp_rst_owed *o;
	unsigned i;

	for (i = 0; i < tcp_rst_owed_n; i++) {
		if (!memcmp(&tcp_rst_owed[i].key, &conn->f.key,
			    sizeof(conn->f.key))) {
			tcp_rst_owed[i] = tcp_rst_owed[--tcp_rst_owed_n];
			break;
		}
	}
	if (tcp_rst_owed_n == TCP_RST_OWED_MAX) {
		memmove(tcp_rst_owed, tcp_rst_owed + 1,
			sizeof(tcp_rst_owed[0]) * --tcp_rst_owed_n);
		warn_rl("TCP: too many RSTs owed to the guest, dropping one");
	}
	o = &tcp_rst_owed[tcp_rst_owed_n++];
	o->key = conn->f.key;
	o->seq = conn->seq_to_guest;
	o->ack = conn->seq_from_guest;
	o->inbound = !!(conn->flags & TCP_F_INBOUND);
	o->at = now_ms();
}

/**
 * tcp_rst_owed_flush() - send the RSTs owed to the guest that can go now;
 *			  forget old ones
 * @c:		execution context
 */
void tcp_rst_owed_flush(struct ctx *c)
{
	uint64_t now = now_ms();
	unsigned i, k;

	if (!tcp_rst_owed_n || !tap_connected(c))
		return;
	for (i = 0, k = 0; i < tcp_rst_owed_n; i++) {
		struct tcp_rst_owed *o = &tcp_rst_owed[i];
		struct tcp_conn tmp = { .sock = -1 };

		tmp.f.key = o->key;
		tmp.seq_from_guest = o->ack;
		if (now - o->at > TCP_RST_OWED_MS ||
		    !tcp_send_ctl(c, &tmp, TCP_RST | TCP_ACK, o->seq))
			continue;
		tcp_rst_owed[k++] = *o;
	}
	tcp_rst_owed_n = k;
}

/**
 * tcp_rst_owed_get() - the RSTs owed to the guest (see tcp_rst_owe())
 * @list:	set to the array
 *
 * Return: how many there are
 */
unsigned tcp_rst_owed_get(const struct tcp_rst_owed **list)
{
	*list = tcp_rst_owed;
	return tcp_rst_owed_n;
}

/**
 * tcp_rst_owed_clear() - the guest runs elsewhere: someone else owes them
 */
void tcp_rst_owed_clear(void)
{
	tcp_rst_owed_n = 0;
}
