// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * seg.c - TCP, the control-segment toolbox: the header of every segment to
 * the guest, the segments without payload (SYN, ACK, FIN, RST, window
 * updates), and the marks a connection leaves for the end of the round
 * (an ACK or data due: tcp_defer(); no room to the guest: tcp_block()),
 * and the RSTs the guest is still owed for connections that are gone.
 * Below both directions, set-up and the dispatch; above conn.c and
 * window.c.
 *
 * Theory of operation
 *
 * A control segment is built in one small frame of our own and sent at
 * once (tcp_send_ctl()): its window is window.c's, its ACK number what we
 * took from the guest. ACKs for guest data are coalesced: a connection is
 * put on the end-of-round list (tcp_defer()), which to_guest.c's
 * tcp_defer_handler() walks (tcp_deferred()) once the round's frames are
 * all in. A segment that finds no room to the guest marks its connection
 * (tcp_block()), and the end of a round with room tries it again.
 *
 * RSTs owed: a RST to the guest may find no room in the front-end (its
 * ring full), or the front-end stopped for a migration, and a guest that
 * only receives would never learn that the connection is gone. So
 * tcp_rst() leaves the gone connection's key and sequence numbers here
 * (tcp_rst_owe()), the end of each round sends what can go
 * (tcp_rst_owed_flush()), and what is older than TCP_RST_OWED_MS is given
 * up. A migration takes the list to the target (tcp/migrate_src.c writes
 * skip records, which the target answers with a RST) and clears it here.
 */
#include <netinet/in.h>
#include <string.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "tcp/conn.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/window.h"
#include "util.h"

#define TCP_OPT_SYN_LEN 8	/* MSS (4) + NOP + window scale (3) */
#define TCP_DEFER_MAX 1024		/* connections with a pending ACK */
#define TCP_RST_OWED_MAX 256		/* RSTs owed to the guest, at most */
#define TCP_RST_OWED_MS 30000		/* how long one is owed */

/* One frame for control segments (SYN, ACK, FIN, RST) */
static uint8_t tcp_ctl_frame[128];

static uint32_t defer_list[TCP_DEFER_MAX];
static unsigned defer_count;
static bool tcp_blocked_any;		/* some connection waits for room */

static struct tcp_rst_owed tcp_rst_owed[TCP_RST_OWED_MAX];
static unsigned tcp_rst_owed_n;

/**
 * tcp_fill_hdr() - the 20-byte header of a segment to the guest
 * @th:		where the header goes
 * @conn:	connection: ports, and the ACK number if @flags has ACK; the
 *		largest right edge and size of our windows (@wnd_adv,
 *		@wnd_max) are updated
 * @seq:	sequence number
 * @flags:	TCP flags
 * @wnd:	window field, as sent (not scaled in a SYN)
 * @hlen:	header length with options, bytes
 */
void tcp_fill_hdr(uint8_t *th, struct tcp_conn *conn,
		  uint32_t seq, uint8_t flags, uint16_t wnd,
		  size_t hlen)
{
	uint32_t ack = (flags & TCP_ACK) ? conn->seq_from_guest : 0;

	if (flags & TCP_ACK) {
		uint32_t edge = ack + ((uint32_t)wnd << ((flags & TCP_SYN) ?
							 0 : conn->ws_ours));

		/* Never back (what the guest saw, it may send), unless the
		 * edge we have is no window's at all (not set yet)
		 */
		if (SEQ_GT(edge, conn->wnd_adv) ||
		    conn->wnd_adv - ack > (65535U << TCP_WS_OURS))
			conn->wnd_adv = edge;
		if (!(flags & TCP_SYN) && wnd > conn->wnd_max)
			conn->wnd_max = wnd;
	}

	th[0] = conn->f.key.rport >> 8;
	th[1] = conn->f.key.rport & 0xff;
	th[2] = conn->f.key.gport >> 8;
	th[3] = conn->f.key.gport & 0xff;
	th[4] = seq >> 24;
	th[5] = (seq >> 16) & 0xff;
	th[6] = (seq >> 8) & 0xff;
	th[7] = seq & 0xff;
	th[8] = ack >> 24;
	th[9] = (ack >> 16) & 0xff;
	th[10] = (ack >> 8) & 0xff;
	th[11] = ack & 0xff;
	th[12] = (uint8_t)((hlen / 4) << 4);
	th[13] = flags;
	th[14] = wnd >> 8;
	th[15] = wnd & 0xff;
	th[16] = th[17] = th[18] = th[19] = 0;	/* checksum: tap fills it */
}

/**
 * tcp_send_ctl() - send a segment without payload to the guest
 * @c:		execution context
 * @conn:	connection
 * @flags:	TCP flags; SYN adds MSS and window scale options
 * @seq:	sequence number to use
 *
 * Return: 0 or -errno
 */
int tcp_send_ctl(struct ctx *c, struct tcp_conn *conn, uint8_t flags,
			uint32_t seq)
{
	uint8_t *th = tcp_ctl_frame + tap_hdr_len(conn->f.key.family);
	size_t hlen = TCP_HDR_LEN;
	uint16_t w16;

	tap_queue_out(conn->f.qpair);

	if (flags & TCP_SYN) {
		uint16_t mss = conn->mss;
		uint8_t *o = th + TCP_HDR_LEN;

		o[0] = 2;		/* MSS */
		o[1] = 4;
		o[2] = mss >> 8;
		o[3] = mss & 0xff;
		o[4] = 1;		/* NOP */
		o[5] = 3;		/* window scale */
		o[6] = 3;
		o[7] = TCP_WS_OURS;
		/* Offer scaling on our SYN; on SYN-ACK only if the guest did */
		if ((conn->flags & TCP_F_INBOUND) || (conn->flags & TCP_F_WS))
			hlen += TCP_OPT_SYN_LEN;
		else
			hlen += 4;
		/* The window in a SYN is never scaled */
		w16 = (uint16_t)MIN(conn->sock >= 0 ?
				    tcp_sock_room(conn, NULL, NULL, NULL) :
				    65535U,
				    65535U);
	} else if (!(flags & TCP_RST) && conn->sock >= 0) {
		w16 = tcp_wnd_to_guest(c, conn);
	} else {
		w16 = 0;
	}
	tcp_fill_hdr(th, conn, seq, flags, w16, hlen);

	return tap_send_l4(c, conn->f.key.family, tcp_raddr(conn),
			   tcp_gaddr(conn), IPPROTO_TCP, tcp_ctl_frame, hlen);
}

/**
 * tcp_ack_now() - send the guest an ACK now (a pending one goes with it)
 * @c:		execution context
 * @conn:	connection
 */
void tcp_ack_now(struct ctx *c, struct tcp_conn *conn)
{
	conn->flags &= ~TCP_F_ACK_DUE;
	tcp_send_ctl(c, conn, TCP_ACK, conn->seq_to_guest);
}

/**
 * tcp_rst_unknown() - RST for a segment that matches no connection
 *		       (RFC 9293 3.10.7.1)
 * @c:		execution context
 * @p:		the guest's packet: addresses
 * @sport:	its source port
 * @dport:	its destination port
 * @seq:	its sequence number
 * @ack:	its ACK number
 * @flags:	its TCP flags
 * @plen:	its payload length
 */
void tcp_rst_unknown(struct ctx *c, const struct pkt *p,
		     uint16_t sport, uint16_t dport, uint32_t seq,
		     uint32_t ack, uint8_t flags, size_t plen)
{
	struct tcp_conn tmp = { .sock = -1 };
	const void *src = p->family == AF_INET ? (const void *)&p->src4
					       : (const void *)&p->src6;
	const void *dst = p->family == AF_INET ? (const void *)&p->dst4
					       : (const void *)&p->dst6;

	if (flags & TCP_RST)
		return;
	flow_key_set(&tmp.f.key, FLOW_TCP, p->family, src, sport, dst, dport);
	if (flags & TCP_ACK) {
		tcp_send_ctl(c, &tmp, TCP_RST, ack);
	} else {
		tmp.seq_from_guest = seq + (uint32_t)plen +
				     ((flags & TCP_SYN) ? 1 : 0) +
				     ((flags & TCP_FIN) ? 1 : 0);
		tcp_send_ctl(c, &tmp, TCP_RST | TCP_ACK, 0);
	}
}

/**
 * tcp_window_update() - the socket has room again: tell the guest, and if
 *			 we refused data we didn't keep, have it retransmitted
 *			 now rather than after its RTO: three duplicate ACKs
 *			 after the update trigger its fast retransmit (with
 *			 four segments or more outstanding, for Linux)
 * @c:		execution context
 * @conn:	connection
 *
 * An update that finds no room to the guest (its ring full) goes again
 * once there is (TCP_F_WND_DUE): the guest, after a window below one of
 * its segments, sends nothing until it hears of more, and its persist
 * timer, backed off by a long zero window (a migration's tail), may take
 * many seconds to ask.
 */
void tcp_window_update(struct ctx *c, struct tcp_conn *conn)
{
	int i;

	conn->wnd_span = 0;		/* measure the new room */
	conn->flags &= ~TCP_F_ACK_DUE;
	if (tcp_send_ctl(c, conn, TCP_ACK, conn->seq_to_guest) < 0) {
		conn->flags |= TCP_F_WND_DUE;
		tcp_block(conn);
		return;
	}
	if (!(conn->flags & TCP_F_REFUSED))
		return;
	conn->flags &= ~TCP_F_REFUSED;
	/* Duplicates: the same window, or the guest doesn't count them */
	tcp_wnd_repeat(true);
	for (i = 0; i < 3; i++)
		tcp_ack_now(c, conn);
	tcp_wnd_repeat(false);
}

/**
 * tcp_defer() - put @conn on the end-of-round list
 * @conn:	connection
 *
 * Return: false if the list is full
 */
bool tcp_defer(struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_DEFERRED)
		return true;
	if (defer_count == TCP_DEFER_MAX)
		return false;
	conn->flags |= TCP_F_DEFERRED;
	defer_list[defer_count++] = tcp_idx(conn);
	return true;
}

/**
 * tcp_block() - what @conn sends the guest found no room: try again at the
 *		 end of a round with room (tcp_resume_blocked())
 * @conn:	connection
 */
void tcp_block(struct tcp_conn *conn)
{
	conn->flags |= TCP_F_BLOCKED;
	tcp_blocked_any = true;
}

/**
 * tcp_block_back() - @conn is back in the loop after a migration held it
 *		      out (TCP_F_MIGRATED): if it waited for room to the
 *		      guest, list it for a retry again
 * @conn:	connection
 *
 * The end of a round with room (tcp_resume_blocked()) skips a connection out
 * of the loop, keeping its TCP_F_BLOCKED, and then forgets that any waited.
 * Back in the loop still marked, it would be retried by nothing: what it
 * sends goes out all the same (a send doesn't look at the mark), but not its
 * FIN to the guest, which waits until nothing does, nor a window update owed
 * (TCP_F_WND_DUE).
 */
void tcp_block_back(const struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_BLOCKED)
		tcp_blocked_any = true;
}

/**
 * tcp_deferred() - an entry of the end-of-round list (tcp_defer())
 * @i:		position in the list: the list may grow while it's walked
 * @conn:	set to the connection, NULL if it's gone meanwhile
 *
 * Return: false past the end of the list
 */
bool tcp_deferred(unsigned i, struct tcp_conn **conn)
{
	if (i >= defer_count)
		return false;
	*conn = tcp_conn_at(defer_list[i]);
	return true;
}

/**
 * tcp_deferred_clear() - the end of the round is done with the list
 */
void tcp_deferred_clear(void)
{
	defer_count = 0;
}

/**
 * tcp_blocked() - does some connection wait for room to the guest
 *		   (tcp_block())?
 * @clear:	and forget it: the caller looks at every connection now
 *
 * Return: true if one does (did, with @clear)
 */
bool tcp_blocked(bool clear)
{
	bool any = tcp_blocked_any;

	if (clear)
		tcp_blocked_any = false;
	return any;
}

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
