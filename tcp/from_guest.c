// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * from_guest.c - TCP, guest -> socket: the data and FIN of the guest's
 * segments on an established connection, written to the socket in
 * batches.
 *
 * Theory of operation
 *
 * In-order segments are written to the socket, those of one batch of
 * frames with a single sendmsg() (tcp_flush_pending()); we ACK to the
 * guest what the kernel took into its send queue. The window we advertise
 * is the room the kernel is sure to have (window.c).
 *
 * Practically: the kernel may still refuse part of what that window let
 * the guest send (its accounting differs, or memory pressure shrank the
 * buffer). What it refuses inside the windows we advertised (@wnd_adv) is
 * kept, ACKed and written as the socket drains (tcp/kept.c says why the
 * guest's own retransmission won't do); what isn't kept (over kept.c's
 * bounds, or beyond our windows) isn't ACKed, and once there is room a
 * window update and three duplicate ACKs, all with the same window, ask
 * the guest to retransmit it. Out-of-order segments are dropped with a
 * duplicate ACK.
 *
 * A connection a migration holds while the guest runs here (its socket
 * waits for the repair helper to take it out of repair mode) writes
 * nothing: its in-order data and FIN are kept, inside the windows we
 * advertised, and ACKed (tcp_data_held()), and go to the socket when it
 * comes back.
 *
 * The batch keeps its connection's flow index and generation, and finds it
 * again in the flow table itself (flow_live()), as a live TCP flow.
 *
 * The ACKs the guest sends for our data are the socket -> guest side's
 * (to_guest.c, tcp_ack_from_guest()): tcp.c hands a segment there first,
 * then its data and FIN here (tcp_data_from_guest()).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/from_guest.h"
#include "tcp/kept.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/window.h"
#include "util.h"

/*
 * Guest data not yet written: consecutive in-order segments of one
 * connection, from one batch of frames, go to the socket with a single
 * sendmsg(), so the kernel builds large segments instead of one per frame.
 * The iovecs point into the front-end's frames, which stay valid until the
 * batch ends: demux_input_end() calls tcp_flush_pending() before that.
 * A connection closed with data held here loses it: tcp_flush_pending()
 * writes only to a live flow (not closing) of the same generation.
 */
#define TCP_WBATCH 128
static struct {
	int idx;			/* flow index, -1 if nothing pending */
	uint32_t gen;			/* generation of that flow */
	uint32_t next;			/* sequence number that may follow */
	unsigned niov;
	size_t len;
	struct iovec iov[TCP_WBATCH];
} tcp_pend = { .idx = -1 };

/* Ask for an ACK at the end of this loop round (coalesces many) */
static void tcp_ack_later(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_ACK_DUE)
		return;
	if (!tcp_defer(conn)) {
		tcp_ack_now(c, conn);
		return;
	}
	conn->flags |= TCP_F_ACK_DUE;
}

/**
 * tcp_write() - write guest data to the socket
 * @c:		execution context
 * @conn:	connection
 * @iov:	the segment's payload
 * @niov:	number of entries in @iov
 * @len:	length of the payload in bytes
 *
 * ACKs (later) what the socket took, and what it refused inside our windows, if
 * that can be kept.
 *
 * Return: 0, or -1 if the connection was reset and is gone
 */
static int tcp_write(struct ctx *c, struct tcp_conn *conn,
		     const struct iovec *iov, unsigned niov, size_t len)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov,
			     .msg_iovlen = niov };
	ssize_t n, kept = 0;

	/* Behind data kept, or a migration's never-sent data: none of it
	 * yet (but it may be kept too)
	 */
	if (conn->flags & TCP_F_TAIL)
		n = 0;
	else
		n = sendmsg(conn->sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			tcp_rst(c, conn);
			return -1;
		}
		n = 0;
	}
	conn->seq_from_guest += (uint32_t)n;
	if ((size_t)n < len) {
		/* The kernel took part: keep the rest, as far as our windows
		 * let the guest send it; what isn't kept isn't ACKed, and the
		 * guest must send it again once there's room
		 */
		uint32_t wnd = conn->wnd_adv - conn->seq_from_guest;

		if (SEQ_GT(conn->wnd_adv, conn->seq_from_guest))
			kept = tcp_kept_add(c, conn, iov, niov, (size_t)n,
					    MIN(len - (size_t)n, wnd));
		conn->seq_from_guest += (uint32_t)kept;
		if ((size_t)(n + kept) < len)
			conn->flags |= TCP_F_REFUSED;
		conn->wnd_span = 0;
		flow_trace(conn, "socket took %zi of %zu bytes, %zi kept", n,
			   len, kept);
		tcp_out_wait(c, conn);
	}
	tcp_window_check(conn);
	tcp_ack_later(c, conn);
	return 0;
}

/**
 * tcp_flush_pending() - write guest data held for batching
 * @c:		execution context
 *
 * Return: 0, or -1 if the connection it belonged to was reset
 */
int tcp_flush_pending(struct ctx *c)
{
	union flow *flow;

	if (tcp_pend.idx < 0)
		return 0;
	flow = flow_live((unsigned)tcp_pend.idx, FLOW_TCP);
	tcp_pend.idx = -1;
	/* Nothing goes to a socket a migration holds: it may be in repair
	 * mode (tcp_data_held() keeps what comes while it is)
	 */
	if (!flow || flow->tcp.f.gen != tcp_pend.gen ||
	    (flow->tcp.flags & TCP_F_MIGRATED))
		return 0;
	return tcp_write(c, &flow->tcp, tcp_pend.iov, tcp_pend.niov,
			 tcp_pend.len);
}

/**
 * tcp_payload_iov() - the payload of a guest segment as iovecs
 * @iov:	filled in, at most 1 + @p->ntail entries
 * @head:	contiguous start of the payload
 * @p:		parsed frame of the segment
 * @skip:	bytes of the payload to leave out at its start
 *
 * From byte @skip on: its contiguous start @head, then the frame's further
 * pieces (demux_input_part()), up to the IP packet's end.
 *
 * Return: number of entries used
 */
static unsigned tcp_payload_iov(struct iovec *iov, struct pview head,
				const struct pkt *p, size_t skip)
{
	size_t left = p->tail_len;
	unsigned n = 0, i;

	if (skip < head.len) {
		iov[n].iov_base = (void *)(head.p + skip);
		iov[n++].iov_len = head.len - skip;
		skip = 0;
	} else {
		skip -= head.len;
	}
	for (i = 0; i < p->ntail && left; i++) {
		size_t l = MIN(p->tail[i].iov_len, left);

		left -= l;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		iov[n].iov_base = (uint8_t *)p->tail[i].iov_base + skip;
		iov[n++].iov_len = l - skip;
		skip = 0;
	}
	return n;
}

/**
 * tcp_data_from_guest() - the data and FIN of a segment from the guest on an
 *			    established connection, after its ACK
 *			    (tcp_ack_from_guest())
 * @c:		execution context
 * @conn:	connection
 * @seq:	sequence number
 * @flags:	TCP flags
 * @payload:	contiguous start of the payload
 * @p:		the packet: further pieces of the payload
 *
 * Return: true if the segment is done with and the connection is still
 *	   there: the caller may send the guest more (tcp_data_later()),
 *	   false if it must not (answered, reset, or closed)
 */
bool tcp_data_from_guest(struct ctx *c, struct tcp_conn *conn,
			 uint32_t seq, uint8_t flags, struct pview payload,
			 const struct pkt *p)
{
	uint32_t plen = (uint32_t)(payload.len + p->tail_len);
	int idx = (int)flow_idx((const union flow *)conn);

	/* Unacceptable segment, e.g. a zero-window probe: answer with an ACK
	 * (RFC 9293 3.10.7.4), which also carries our current window
	 */
	if (!plen && !(flags & TCP_FIN) && seq != conn->seq_from_guest)
		tcp_ack_later(c, conn);

	/* Data: write in-order bytes to the socket, ACK what it took */
	if (plen && tcp_pend.idx == idx && seq == tcp_pend.next &&
	    !(flags & TCP_FIN) && tcp_pend.niov + 1 + p->ntail <= TCP_WBATCH) {
		tcp_pend.niov += tcp_payload_iov(tcp_pend.iov + tcp_pend.niov,
						 payload, p, 0);
		tcp_pend.len += plen;
		tcp_pend.next += plen;
		return true;
	}
	if (tcp_pend.idx == idx && tcp_flush_pending(c))
		return false;
	if (plen) {
		uint32_t skip = 0;

		if (SEQ_LT(seq, conn->seq_from_guest) &&
		    SEQ_GT(seq + plen, conn->seq_from_guest))
			skip = conn->seq_from_guest - seq;
		else if (seq != conn->seq_from_guest || (conn->flags &
							 TCP_F_GUEST_FIN)) {
			flow_trace(conn, "segment %u+%u, expected %u", seq,
				   plen, conn->seq_from_guest);
			tcp_ack_now(c, conn);	/* duplicate or gap */
			return false;
		}
		if (!(flags & TCP_FIN)) {
			/* Hold it: more may follow in this batch */
			if (tcp_pend.idx >= 0 && tcp_flush_pending(c) &&
			    !flow_live((unsigned)idx, FLOW_TCP))
				return false;
			tcp_pend.idx = idx;
			tcp_pend.gen = conn->f.gen;
			tcp_pend.niov = tcp_payload_iov(tcp_pend.iov, payload,
							p, skip);
			tcp_pend.len = plen - skip;
			tcp_pend.next = seq + plen;
			return true;
		} else {
			struct iovec iov[1 + TAP_TAIL_MAX];
			unsigned n = tcp_payload_iov(iov, payload, p, skip);

			if (tcp_write(c, conn, iov, n, plen - skip))
				return false;
		}
	}

	/* FIN: only once every byte before it is in the socket */
	if ((flags & TCP_FIN) && !(conn->flags & TCP_F_GUEST_FIN) &&
	    seq + plen == conn->seq_from_guest) {
		/* Behind data kept or a migration's, the FIN waits too */
		if (!((conn->flags & TCP_F_TAIL) && tcp_kept_fin(conn)) &&
		    shutdown(conn->sock, SHUT_WR)) {
			tcp_desync(c, conn, "shutdown", errno);
			return false;
		}
		conn->seq_from_guest++;
		conn->flags |= TCP_F_GUEST_FIN;
		tcp_ack_later(c, conn);
	} else if ((flags & TCP_FIN) && (conn->flags & TCP_F_GUEST_FIN)) {
		tcp_ack_later(c, conn);		/* retransmitted FIN */
	}

	/* Both FINs done: only then may the connection go (tcp_maybe_done()) */
	if ((conn->flags & TCP_F_GUEST_FIN) && (conn->flags & TCP_F_FIN_ACKED))
		return !tcp_maybe_done(c, conn);
	return true;
}

/**
 * tcp_data_held() - a segment from the guest for a connection a migration
 *		     holds while the guest runs here (TCP_F_GUEST_HERE): its
 *		     in-order data and FIN kept, and ACKed
 * @c:		execution context
 * @conn:	connection, held: its socket may be in repair mode
 * @seq:	sequence number
 * @ack:	ACK number
 * @flags:	TCP flags
 * @wnd:	the guest's window, scaled
 * @payload:	contiguous start of the payload
 * @p:		the packet: further pieces of the payload
 *
 * Nothing is written to the socket or read from it. The data goes to the
 * connection's tail (kept.c), within the windows we advertised (@wnd_adv,
 * which our ACKs don't move: tcp_wnd_to_guest()) and kept.c's bounds, and
 * is written when the connection comes back, before anything newer, its
 * FIN after it; ACKed, it spares the guest the retransmission timeouts
 * that would stop its upload for about as long again as the hold lasted.
 * What isn't kept (out of order, beyond the windows or the bounds) gets a
 * duplicate ACK, as on a live connection. What the guest ACKs of ours
 * waits for the connection to come back: its next segments say it again.
 *
 * The ACK's sequence number is the guest's ACK if that is ahead of ours: a
 * restored connection sends again from the first byte the guest hadn't
 * ACKed at the source (migrate_dst.c), and a Linux guest drops a segment
 * that starts before what it last acknowledged, its ACK with it.
 */
void tcp_data_held(struct ctx *c, struct tcp_conn *conn, uint32_t seq,
		   uint32_t ack, uint8_t flags, uint32_t wnd,
		   struct pview payload, const struct pkt *p)
{
	uint32_t plen = (uint32_t)(payload.len + p->tail_len);
	uint32_t from = conn->seq_from_guest, skip = 0, take = 0;
	uint32_t ours = SEQ_GT(ack, conn->seq_to_guest) ? ack
							: conn->seq_to_guest;

	if (conn->f.state != TCP_ST_ESTABLISHED || !(flags & TCP_ACK) ||
	    (flags & (TCP_SYN | TCP_RST)))
		return;
	conn->wnd_guest = wnd;

	/* In order, or its new part; not past a FIN */
	if (plen && SEQ_LE(seq, from) && SEQ_GT(seq + plen, from) &&
	    !(conn->flags & TCP_F_GUEST_FIN)) {
		uint32_t room = SEQ_GT(conn->wnd_adv, from) ?
				conn->wnd_adv - from : 0;

		skip = from - seq;
		take = MIN(plen - skip, room);
	}
	if (take) {
		struct iovec iov[1 + TAP_TAIL_MAX];
		unsigned n = tcp_payload_iov(iov, payload, p, 0);
		ssize_t kept = tcp_kept_add(c, conn, iov, n, skip, take);

		conn->seq_from_guest += (uint32_t)kept;
		flow_trace(conn, "held: %zi of %u bytes kept", kept,
			   plen - skip);
	}

	if ((flags & TCP_FIN) && !(conn->flags & TCP_F_GUEST_FIN) &&
	    seq + plen == conn->seq_from_guest &&
	    tcp_kept_add_fin(c, conn)) {
		conn->seq_from_guest++;
		conn->flags |= TCP_F_GUEST_FIN;
	}
	/* Not to an in-order pure ACK: there's nothing to answer */
	if (plen || (flags & TCP_FIN) || seq != from)
		tcp_send_ctl(c, conn, TCP_ACK, ours);
}
