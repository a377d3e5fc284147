// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * from_guest.c - TCP, guest -> socket: the guest's segments on an
 * established connection (its data, ACKs, window and FIN), written to the
 * socket in batches, and the window we offer the guest.
 *
 * Theory of operation
 *
 * In-order segments are written to the socket, those of one batch of
 * frames with a single sendmsg() (tcp_flush_pending()); we ACK to the
 * guest what the kernel took into its send queue. The window we advertise
 * is the room the kernel is sure to have (SO_MEMINFO: buffer size minus
 * queued memory, scaled by the queue's ratio of payload to memory, less a
 * margin), so the guest practically never sends what can't be taken
 * (tcp_sock_room()).
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
 * A window smaller than one of the guest's segments leaves a Linux guest
 * waiting for its persist timer (hundreds of ms, doubling with its RTO)
 * when nothing of it is in flight, and the kernel signals no EPOLLOUT for
 * "room for a segment" while it considers the socket writable. Linux
 * sends segments of its MSS, or half the largest window it saw if that's
 * less (so small windows from the start are no trouble: its segments are
 * small too); memory pressure, though, shrinks the send buffer to a few
 * kB after windows of megabytes. So a writable socket gets a window of one
 * such segment at least (@wnd_max, the largest window we sent): what it
 * doesn't take of that is kept.
 *
 * The ACKs the guest sends for our data only count the bytes here: the
 * socket -> guest side (to_guest.c) discards and sends more at the end of
 * the round.
 */
#include <errno.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ctx.h"
#include "flow.h"
#include "log.h"
#include "net/packet.h"
#include "tap/coalesce.h"
#include "tap/tap.h"
#include "tcp/conn.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_internal.h"
#include "util.h"

#define TCP_WND_KEEP (256 * 1024)	/* measure the room below this left */
#define TCP_LIMITED_ROOM (64 * 1024)	/* less window left: the guest waits */
#define TCP_RATIO_BYTES (16 * 1024)	/* queued payload that tells its ratio */
#define TCP_RATIO_PRIOR (1U << 15)	/* ratio until one is measured: half */

/*
 * Guest data not yet written: consecutive in-order segments of one
 * connection, from one batch of frames, go to the socket with a single
 * sendmsg(), so the kernel builds large segments instead of one per frame.
 * The iovecs point into the front-end's frames, which stay valid until the
 * batch ends: demux_input_end() calls tcp_flush_pending() before that.
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

/* Send the window of the last segment again: duplicate ACKs */
static bool tcp_wnd_same;

/**
 * tcp_pend_forget() - a connection is going: guest data held for it in a
 *		       batch dies with it (see tcp_conn_free())
 * @conn:	connection
 */
void tcp_pend_forget(const struct tcp_conn *conn)
{
	if (tcp_pend.idx == (int)tcp_idx(conn))
		tcp_pend.idx = -1;
}

/**
 * tcp_sock_room() - free room in the socket's send buffer: the window we
 *		     offer the guest
 * @conn:	connection
 * @low:	set if the kernel finds the socket short of room, or NULL
 * @idle:	set if the socket's send queue is empty, or NULL
 * @ratio:	updated connection ratio, if the queue held enough, or NULL
 *
 * The kernel accepts data while the memory it has queued (payload plus
 * overhead) is below the buffer size, but the window is payload: the free
 * memory is scaled by the queue's own ratio of payload (SIOCOUTQ) to
 * memory. That overhead is a few percent with large segments, but the
 * kernel bounds its segments to half the peer's largest window, and
 * behind a peer with a tiny receive buffer a segment of 2 kB costs as
 * much again. (With a fixed margin, the guest then sent what the socket
 * refused, each retransmission after its RTO was refused again, and the
 * RTO doubled to a stall of a minute.) The ratio differs between segments
 * (the first ones of a connection, or those coalesced, are large), so the
 * connection keeps one: TCP_RATIO_PRIOR until the first measurement, then
 * that measurement, then it falls to a lower one at once and rises towards
 * a higher one slowly; the window takes the lower of it and the queue's.
 * A queue holding too little to tell leaves the connection's. *@low says
 * the kernel itself considers the socket not writable, which is also when
 * it grows the buffer (autotuning) and signals EPOLLOUT once there is
 * room again.
 *
 * Return: room, bytes
 */
uint32_t tcp_sock_room(const struct tcp_conn *conn, bool *low,
		       bool *idle, uint16_t *ratio)
{
	uint32_t mi[SK_MEMINFO_VARS];
	uint32_t sndbuf, queued, room, r;
	socklen_t sl = sizeof(mi);
	int outq = 0;

	if (getsockopt(conn->sock, SOL_SOCKET, SO_MEMINFO, mi, &sl) ||
	    sl < (SK_MEMINFO_WMEM_QUEUED + 1) * sizeof(uint32_t)) {
		if (low)
			*low = false;
		if (idle)
			*idle = false;
		return 0;
	}
	sndbuf = mi[SK_MEMINFO_SNDBUF];
	queued = mi[SK_MEMINFO_WMEM_QUEUED];
	room = sndbuf > queued ? sndbuf - queued : 0;
	if (low)
		*low = room < queued / 2;
	if (idle)
		*idle = !queued;

	r = conn->wnd_ratio ? conn->wnd_ratio : TCP_RATIO_PRIOR;
	if (room && queued > TCP_RATIO_BYTES &&
	    !ioctl(conn->sock, SIOCOUTQ, &outq) &&
	    outq >= TCP_RATIO_BYTES && (uint32_t)outq < queued) {
		uint32_t m = (uint32_t)(((uint64_t)outq << 16) / queued);
		uint32_t next = m;

		/* A few large segments can hide behind many small ones:
		 * believe the first ratio and a lower one at once, a higher
		 * one slowly (this window keeps the lower)
		 */
		if (conn->wnd_ratio && m > r)
			next = r + (m - r) / 8;
		else
			r = m;
		if (ratio)
			*ratio = (uint16_t)next;
	}
	room = (uint32_t)(((uint64_t)room * r) >> 16);
	/* Keep a margin: the next segment's overhead, or a ratio from a
	 * queue of other segments, would have the last one refused
	 */
	room -= room / 4;
	return MIN(room, (uint32_t)65535 << conn->ws_ours);
}

/**
 * tcp_wnd_offered() - the window field we'd put in a segment to the guest
 *		       now (unscaled, as sent), without side effects
 * @conn:	connection
 *
 * Return: window field
 */
uint16_t tcp_wnd_offered(const struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_TAIL)
		return 0;
	return (uint16_t)MIN(tcp_sock_room(conn, NULL, NULL, NULL) >>
			     conn->ws_ours,
			     65535U);
}

/**
 * tcp_wnd_to_guest() - the window field for a segment to the guest
 * @c:		execution context
 * @conn:	connection
 *
 * The free room of the socket's send buffer. When the kernel finds the
 * socket short of room, arm EPOLLOUT: that lets the kernel grow the buffer
 * as the peer ACKs, and a window update follows once there is room. The
 * kernel only signals that after it ran out of space, so this can't spin.
 *
 * A writable socket gets a window of one of the guest's segments at least
 * (see the top): what it doesn't take of that is kept.
 *
 * One measurement serves many segments: the room it found, less what the
 * socket took from the guest since, is still there (the peer's ACKs only
 * add to it), so the window keeps the same right edge, and the socket is
 * asked again once half of that room is used up (or it refused data, or
 * signalled room: tcp_window_update()). Guest to socket, that saves a
 * getsockopt() per batch of frames. Below TCP_WND_KEEP left, every
 * segment asks again, as before: a small buffer must be seen to run low,
 * or it never grows (EPOLLOUT above), and a Linux sender with a window
 * under one of its segments waits for an ACK that moves the edge (its
 * persist timer, hundreds of ms, if nothing is in flight).
 * Except while the socket took nothing since a measurement that found its
 * send queue empty (TCP_F_WND_IDLE): then nothing can run low, and the
 * kernel grows the buffer only as the peer ACKs data, so the room is what
 * it was. That saves a getsockopt() per batch towards a guest that only
 * receives (the buffer then keeps its first, small size).
 *
 * Return: window field, as sent (scaled)
 */
uint16_t tcp_wnd_to_guest(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t room = conn->wnd_edge - conn->seq_from_guest;
	/* Idle at the measurement, and the socket took nothing since */
	bool keep = (conn->flags & TCP_F_WND_IDLE) && room == conn->wnd_span;
	bool low, idle;
	uint32_t seg;

	/* Data kept, or a migration's never-sent data, goes first: nothing
	 * from the guest until it's in the socket (tcp_window_update()
	 * reopens the window)
	 */
	if (conn->flags & TCP_F_TAIL)
		return 0;

	if (!tcp_wnd_same &&
	    (!conn->wnd_span || SEQ_GT(conn->seq_from_guest, conn->wnd_edge) ||
	     (!keep && room < MAX(conn->wnd_span / 2, TCP_WND_KEEP)))) {
		room = tcp_sock_room(conn, &low, &idle, &conn->wnd_ratio);
		if (low && conn->f.state == TCP_ST_ESTABLISHED)
			tcp_out_wait(c, conn);
		/* A writable socket: one of the guest's segments at least,
		 * rounded up to what the window field can say
		 */
		seg = MIN((uint32_t)conn->mss,
			  ((uint32_t)conn->wnd_max << conn->ws_ours) / 2);
		if (!low && room < seg &&
		    conn->f.state == TCP_ST_ESTABLISHED &&
		    tcp_kept_can(c, conn, seg)) {
			uint32_t g = 1U << conn->ws_ours;

			room = (seg + g - 1) & ~(g - 1);
		}
		conn->wnd_span = room;
		conn->wnd_edge = conn->seq_from_guest + room;
		if (idle)
			conn->flags |= TCP_F_WND_IDLE;
		else
			conn->flags &= ~TCP_F_WND_IDLE;
	}
	return (uint16_t)MIN(room >> conn->ws_ours, 65535U);
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
	tcp_wnd_same = true;
	for (i = 0; i < 3; i++)
		tcp_ack_now(c, conn);
	tcp_wnd_same = false;
}

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

/*
 * tcp_window_check() - after a write of the guest's data: does the guest
 * now wait for our window? It does if what is left of the window we
 * offered is less than TCP_LIMITED_ROOM (a large frame) or a quarter of
 * the room measured, or if the room is to be measured again (the socket
 * refused some, or signalled room after running low). Then input
 * coalescing mustn't poll (tap/coalesce.c): the guest's pace is our ACKs'.
 */
static void tcp_window_check(const struct tcp_conn *conn)
{
	uint32_t left = conn->wnd_edge - conn->seq_from_guest;

	if (!conn->wnd_span ||
	    SEQ_GT(conn->seq_from_guest, conn->wnd_edge) ||
	    left < MAX(TCP_LIMITED_ROOM, conn->wnd_span / 4))
		coalesce_window_limited();
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

		if (SEQ_GT(conn->wnd_adv, conn->seq_from_guest) &&
		    (kept = tcp_kept_add(c, conn, iov, niov, (size_t)n,
					 MIN(len - (size_t)n, wnd))) < 0) {
			tcp_desync(c, conn, "keeping refused data", ENOMEM);
			return -1;
		}
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
	struct tcp_conn *conn;

	if (tcp_pend.idx < 0)
		return 0;
	conn = tcp_conn_at((unsigned)tcp_pend.idx);
	tcp_pend.idx = -1;
	if (!conn || conn->f.gen != tcp_pend.gen)
		return 0;
	return tcp_write(c, conn, tcp_pend.iov, tcp_pend.niov, tcp_pend.len);
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
 * tcp_input_established() - segment from the guest on an established
 *			      connection
 * @c:		execution context
 * @conn:	connection
 * @seq:	sequence number
 * @ack:	ACK number
 * @flags:	TCP flags
 * @wnd:	the guest's window, scaled
 * @payload:	contiguous start of the payload
 * @p:		the packet: further pieces of the payload
 * @progress:	send the guest more even if this segment moves nothing
 */
void tcp_input_established(struct ctx *c, struct tcp_conn *conn,
			   uint32_t seq, uint32_t ack, uint8_t flags,
			   uint32_t wnd, struct pview payload,
			   const struct pkt *p, bool progress)
{
	uint32_t plen = (uint32_t)(payload.len + p->tail_len);

	if (flags & TCP_SYN) {		/* retransmitted SYN or SYN-ACK */
		/* The guest's own SYN again, and it never acknowledged ours:
		 * our SYN-ACK was lost (the connection moved in a migration
		 * right after we sent it: tcp/migrate_src.c). A socket in
		 * SYN-SENT drops a bare ACK: it needs the SYN-ACK again
		 */
		if (!(flags & TCP_ACK) && !(conn->flags & TCP_F_INBOUND) &&
		    seq + 1 == conn->seq_from_guest &&
		    conn->seq_acked == conn->seq_isn + 1) {
			tcp_send_ctl(c, conn, TCP_SYN | TCP_ACK, conn->seq_isn);
			return;
		}
		tcp_ack_now(c, conn);
		return;
	}
	if (!(flags & TCP_ACK))
		return;

	/* ACK: discard what the guest has, from the socket's queue */
	if (SEQ_GT(ack, conn->seq_acked) && SEQ_LE(ack, conn->seq_to_guest)) {
		uint32_t acked = ack - conn->seq_acked;

		if ((conn->flags & TCP_F_FIN_SENT) && ack == conn->seq_to_guest) {
			conn->flags |= TCP_F_FIN_ACKED;
			acked--;
		}
		/* Dropped from the socket at the end of the round */
		conn->acked_unread += acked;
		if (acked && !tcp_defer(conn) && tcp_sock_sync(c, conn))
			return;
		conn->seq_acked = ack;
		conn->retries = 0;
		conn->dup_acks = 0;
		conn->timer = 0;
		if (conn->seq_acked != conn->seq_to_guest)
			tcp_timer_arm(conn, now_ms());
		/* Listed, tcp_defer_handler() looks at the rest in flight */
		if (!(conn->flags & TCP_F_DEFERRED))
			tcp_quiet(c, conn);
		progress = true;
	} else if (ack == conn->seq_acked && !plen && !(flags & TCP_FIN) &&
		   conn->seq_to_guest != conn->seq_acked &&
		   wnd == conn->wnd_guest) {
		if (++conn->dup_acks == 3) {
			conn->wnd_guest = wnd;
			tcp_rewind(c, conn);
			return;
		}
	}
	if (wnd != conn->wnd_guest)
		progress = true;
	conn->wnd_guest = wnd;

	/* Unacceptable segment, e.g. a zero-window probe: answer with an ACK
	 * (RFC 9293 3.10.7.4), which also carries our current window
	 */
	if (!plen && !(flags & TCP_FIN) && seq != conn->seq_from_guest)
		tcp_ack_later(c, conn);

	/* Data: write in-order bytes to the socket, ACK what it took */
	if (plen && tcp_pend.idx == (int)tcp_idx(conn) && seq == tcp_pend.next &&
	    !(flags & TCP_FIN) && tcp_pend.niov + 1 + p->ntail <= TCP_WBATCH) {
		tcp_pend.niov += tcp_payload_iov(tcp_pend.iov + tcp_pend.niov,
						 payload, p, 0);
		tcp_pend.len += plen;
		tcp_pend.next += plen;
		goto out;
	}
	if (tcp_pend.idx == (int)tcp_idx(conn) && tcp_flush_pending(c))
		return;
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
			return;
		}
		if (!(flags & TCP_FIN)) {
			/* Hold it: more may follow in this batch */
			if (tcp_pend.idx >= 0 && tcp_flush_pending(c) &&
			    !tcp_conn_at(tcp_idx(conn)))
				return;
			tcp_pend.idx = (int)tcp_idx(conn);
			tcp_pend.gen = conn->f.gen;
			tcp_pend.niov = tcp_payload_iov(tcp_pend.iov, payload,
							p, skip);
			tcp_pend.len = plen - skip;
			tcp_pend.next = seq + plen;
			goto out;
		} else {
			struct iovec iov[1 + TAP_TAIL_MAX];
			unsigned n = tcp_payload_iov(iov, payload, p, skip);

			if (tcp_write(c, conn, iov, n, plen - skip))
				return;
		}
	}

	/* FIN: only once every byte before it is in the socket */
	if ((flags & TCP_FIN) && !(conn->flags & TCP_F_GUEST_FIN) &&
	    seq + plen == conn->seq_from_guest) {
		/* Behind data kept or a migration's, the FIN waits too */
		if (!((conn->flags & TCP_F_TAIL) && tcp_kept_fin(conn)) &&
		    shutdown(conn->sock, SHUT_WR)) {
			tcp_desync(c, conn, "shutdown", errno);
			return;
		}
		conn->seq_from_guest++;
		conn->flags |= TCP_F_GUEST_FIN;
		tcp_ack_later(c, conn);
	} else if ((flags & TCP_FIN) && (conn->flags & TCP_F_GUEST_FIN)) {
		tcp_ack_later(c, conn);		/* retransmitted FIN */
	}

	if (tcp_maybe_done(c, conn))
		return;
out:
	if (progress)
		tcp_data_later(c, conn);
}
