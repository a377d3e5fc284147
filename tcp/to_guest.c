// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * to_guest.c - TCP, socket -> guest: what the peer sent goes to the guest
 * straight from the socket's receive queue, which holds it until the guest
 * ACKs it; the end of each loop round, which sends and discards for all
 * the connections that the round's frames moved; and the probe of the
 * kernel features this relies on (tcp_init()).
 *
 * Theory of operation
 *
 * Data stays in the socket's receive queue until the guest ACKs it. We
 * read it with MSG_PEEK (the peek offset, SO_PEEK_OFF, marks what was sent
 * already) straight into frames reserved in the front-end's own buffers
 * (tap_seg_reserve(): with vhost-user, the guest's receive buffers, so the
 * kernel's copy is the only one), at most as much as the guest's window
 * allows. An ACK from the guest only counts the bytes it acknowledges; at
 * the end of the loop round (tcp_defer_handler()) one peek sends what the
 * new window allows, the peek offset counting past the ACKed bytes, and
 * then one recv with MSG_TRUNC discards them all (tcp_sock_discard():
 * queued on the io_uring of uring.c with the round's other calls where
 * there is one), however many ACKs the round brought. Not every round,
 * though: while the socket holds more than the guest took (the last peek
 * got all it asked for), the ACKed bytes wait until they reach
 * TCP_DISCARD_MIN (a quarter of the largest receive buffer tcp_rmem
 * allows, if less). A discard opens the peer's window, and a local peer
 * often sends its next burst on our time: the softirq that delivers the
 * window update runs the peer's transmission, and the arrival of its
 * segments, before our call returns. Fewer and larger discards cost less,
 * and the peer's smaller window meanwhile can't slow down a guest that
 * has more waiting for it anyway. Once a peek comes back short, the socket
 * is dry and every round discards again. Whatever reads the queue from its
 * head first discards at once (tcp_sock_sync()). A retransmission rewinds
 * the peek offset to the first unacknowledged byte (tcp_rewind()): the
 * queue IS the retransmission buffer.
 *
 * Without SO_PEEK_OFF (older kernels), every peek starts at the queue's
 * head: what is in flight is peeked again into a scratch area
 * (tcp_peek_skip()), which bounds what may be in flight, and ACKed bytes
 * are discarded before each peek.
 *
 * Input events: while the guest has at least TCP_QUIET_ON full frames in
 * flight, they are off altogether (tcp_quiet()): its ACKs come anyway,
 * each makes us read what the peer sent meanwhile, and otherwise every
 * arrival from the peer wakes us (on a slow guest, most rounds of a
 * transfer to it). Below TCP_QUIET_OFF frames they are back on: a receiver
 * may hold its ACK for a lone segment (delayed ACK), and with nothing in
 * flight no ACK comes at all.
 *
 * A connection whose frames found no room in the front-end is marked
 * TCP_F_BLOCKED, and tried again at the end of a round once there is a
 * fair amount of room (tcp_resume_blocked()).
 */
#include <errno.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/tcp.h"
#include "tcp/to_guest.h"
#include "tcp/window.h"
#include "uring.h"
#include "util.h"

#define TCP_BATCH 64			/* segments per socket read */
#define TCP_RESUME_ROOM (16 * 1024)	/* retry blocked ones past this room */
#define TCP_QUIET_ON 3			/* no input events from this many
					 * frames in flight */
#define TCP_QUIET_OFF 2			/* input events again below this */
#define TCP_DISCARD_MIN (1024 * 1024)	/* ACKed bytes that may wait in a
					 * socket with more for the guest (a
					 * quarter of tcp_rmem's max, if less) */
#define TCP_RMEM_PATH "/proc/sys/net/ipv4/tcp_rmem"

/* Without SO_PEEK_OFF, bytes sent already are peeked again, into here */
static uint8_t tcp_discard[65536];
#define TCP_DISCARD_IOV 256		/* so at most 16 MiB may be in flight */
/* A socket read takes at most UIO_MAXIOV pieces (more: EMSGSIZE): the
 * scratch pieces for what is in flight, then those of the frames
 */
_Static_assert(TCP_DISCARD_IOV < UIO_MAXIOV / 2,
	       "room for frames' pieces after the scratch ones");

bool tcp_peek_offset_ok;		/* kernel supports SO_PEEK_OFF */
static uint32_t tcp_discard_min;	/* see tcp_init(); 0: every round */

/**
 * tcp_quiet() - input events off while the guest has plenty in flight,
 *		 back on once it has little: see "Input events" above
 * @c:		execution context
 * @conn:	connection
 */
void tcp_quiet(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t inflight = conn->seq_to_guest - conn->seq_acked;
	uint32_t fmax = (uint32_t)tap_seg_tcp_max(c, conn->f.key.family,
						  conn->mss);
	bool quiet = conn->f.state == TCP_ST_ESTABLISHED &&
		     inflight >= fmax * ((conn->flags & TCP_F_QUIET) ?
					 TCP_QUIET_OFF : TCP_QUIET_ON);

	/* A held socket is out of the loop: tcp/migrate_*.c re-add it */
	if (conn->sock < 0 || (conn->flags & TCP_F_MIGRATED) ||
	    quiet == !!(conn->flags & TCP_F_QUIET))
		return;
	conn->flags ^= TCP_F_QUIET;
	tcp_conn_events(c, conn);
}

/**
 * tcp_data_later() - send the guest more at the end of this loop round:
 *		      all the ACKs of one batch of frames then make one read
 *		      of the socket, not one each
 * @c:		execution context
 * @conn:	connection
 *
 * Return: 0, or -1 if the connection was reset and is gone
 */
int tcp_data_later(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_DATA_DUE)
		return 0;
	if (!tcp_defer(conn))
		return tcp_data_to_guest(c, conn);
	conn->flags |= TCP_F_DATA_DUE;
	return 0;
}

/**
 * tcp_sock_sync() - discard what the guest has ACKed from the socket
 * @c:		execution context
 * @conn:	connection
 *
 * ACKs only count the bytes (acked_unread); one recv(MSG_TRUNC) here drops
 * them all, before anything that reads the queue from its head (a peek,
 * a rewind of the peek offset, SIOCINQ, a migration dump) or closes it
 * (unread data would make close() send the peer a RST).
 *
 * Return: 0, or -1 if the connection was reset and is gone
 */
int tcp_sock_sync(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t n = conn->acked_unread;
	ssize_t rc;

	if (!n || conn->sock < 0)
		return 0;
	conn->acked_unread = 0;
	rc = recv(conn->sock, NULL, n, MSG_TRUNC | MSG_DONTWAIT);
	if (rc != (ssize_t)n) {
		tcp_desync(c, conn, "discarding ACKed data", rc < 0 ? errno : 0);
		return -1;
	}
	return 0;
}

/* A discard queued by tcp_sock_discard() took fewer bytes, or failed */
static void tcp_discard_failed(struct ctx *c, uint64_t tag, int res)
{
	struct tcp_conn *conn = tcp_conn_at((unsigned)(tag >> 32));

	if (conn && conn->f.gen == (uint32_t)tag)
		tcp_desync(c, conn, "discarding ACKed data",
			   res < 0 ? -res : 0);
}

/*
 * tcp_discard_due() - drop the ACKed bytes at the end of this round, or let
 * them wait for more? See the top of the file.
 */
static bool tcp_discard_due(const struct tcp_conn *conn)
{
	return (conn->flags & TCP_F_SOCK_DRY) ||
	       conn->acked_unread >= tcp_discard_min;
}

/*
 * tcp_sock_discard() - end of round: drop the ACKed bytes, through io_uring
 * if there is a ring (the queue's head then moves at uring_flush(), before
 * anything else can read it), else at once (tcp_sock_sync())
 */
static void tcp_sock_discard(struct ctx *c, struct tcp_conn *conn)
{
	uint64_t tag = (uint64_t)tcp_idx(conn) << 32 | conn->f.gen;

	if (!tcp_peek_offset_ok || (conn->flags & TCP_F_MIGRATED) ||
	    uring_recv_trunc(conn->sock, conn->acked_unread,
			     tcp_discard_failed, tag)) {
		tcp_sock_sync(c, conn);
		return;
	}
	conn->acked_unread = 0;
}

/**
 * tcp_peek_skip() - scratch pieces for a peek that starts at the queue's head
 * @iov:	the first pieces pointed at the scratch area, unless no window
 *		is left
 * @inflight:	bytes sent already, peeked again
 * @wnd:	window, trimmed so that it fits the TCP_DISCARD_IOV scratch
 *		pieces
 *
 * Without SO_PEEK_OFF, a peek starts at the queue's head: what was sent already
 * is peeked again, into a scratch area.
 *
 * Return: number of scratch pieces in @iov
 */
static unsigned tcp_peek_skip(struct iovec *iov, uint32_t inflight,
			      uint32_t *wnd)
{
	unsigned nskip = 0;

	if (inflight + *wnd > sizeof(tcp_discard) * TCP_DISCARD_IOV)
		*wnd = inflight < sizeof(tcp_discard) * TCP_DISCARD_IOV ?
		       sizeof(tcp_discard) * TCP_DISCARD_IOV - inflight : 0;
	if (!*wnd)
		return 0;

	/* The window above keeps what is skipped within TCP_DISCARD_IOV */
	for (uint32_t skip = inflight; skip && nskip < TCP_DISCARD_IOV;
	     nskip++) {
		iov[nskip].iov_base = tcp_discard;
		iov[nskip].iov_len = MIN(skip, sizeof(tcp_discard));
		skip -= iov[nskip].iov_len;
	}
	return nskip;
}

/**
 * tcp_data_batch() - one peek: up to TCP_BATCH frames to the guest
 * @c:		execution context
 * @conn:	connection in ESTABLISHED state
 * @full:	set if the batch was full (there may be more to send)
 *
 * Frames are reserved in the front-end's own buffers (the guest's, with
 * vhost-user) and the socket data is peeked straight into them: the
 * kernel's copy is the only one.
 *
 * Return: 0, or -1 if the connection was reset and is gone
 */
static int tcp_data_batch(struct ctx *c, struct tcp_conn *conn, bool *full)
{
	size_t hdr = tap_hdr_len(conn->f.key.family), want, room = 0, off;
	struct iovec iov[UIO_MAXIOV];
	struct msghdr mh = { .msg_iov = iov };
	struct tap_seg seg[TCP_BATCH];
	uint32_t inflight, wnd, w, fmax;
	unsigned nseg = 0, nskip = 0, s;
	ssize_t n = 0;

	/* With SO_PEEK_OFF, ACKed bytes may stay at the queue's head until the
	 * end of the round: the peek offset counts past them
	 */
	if (!tcp_peek_offset_ok && tcp_sock_sync(c, conn))
		return -1;
	if (conn->f.state != TCP_ST_ESTABLISHED || (conn->flags & TCP_F_FIN_SENT))
		return 0;

	inflight = conn->seq_to_guest - conn->seq_acked;
	wnd = conn->wnd_guest > inflight ? conn->wnd_guest - inflight : 0;
	if (!tcp_peek_offset_ok)
		nskip = tcp_peek_skip(iov, inflight, &wnd);
	if (!wnd)
		goto fin;

	fmax = (uint32_t)tap_seg_tcp_max(c, conn->f.key.family, conn->mss);
	nseg = MIN((wnd + fmax - 1) / fmax, (uint32_t)TCP_BATCH);
	tap_queue_out(conn->f.qpair);
	nseg = tap_seg_reserve(c, hdr + TCP_HDR_LEN, fmax, nseg, seg,
			       iov + nskip, ARRAY_SIZE(iov) - nskip);
	if (!nseg) {
		tcp_block(conn);
		return 0;
	}

	/* Peek at most the window: trim the pieces past it. The frames'
	 * pieces say how far that goes, not the window
	 */
	for (s = 0; s < nseg; s++)
		room += seg[s].cap;
	want = wnd;
	mh.msg_iovlen = nskip + tap_seg_trim(seg, nseg, iov + nskip, &want);

	n = recvmsg(conn->sock, &mh, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0) {
		tap_seg_done(c);
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			flow_dbg_rl(conn, "recv: %s", strerror(errno));
			tcp_rst(c, conn);
			return -1;
		}
		conn->flags |= TCP_F_SOCK_DRY;
		goto fin;
	}
	/* Less than asked for: nothing more is queued behind it */
	if ((size_t)n < want + (tcp_peek_offset_ok ? 0 : inflight))
		conn->flags |= TCP_F_SOCK_DRY;
	else
		conn->flags &= ~TCP_F_SOCK_DRY;
	if (!tcp_peek_offset_ok) {
		if ((size_t)n <= inflight)
			n = 0;
		else
			n -= inflight;
	}

	w = n > 0 ? tcp_wnd_to_guest(c, conn) : 0;
	/* Each frame carries what its room holds (the same for all, as
	 * tap_seg_reserve() promises), the last one the rest
	 */
	for (s = 0, off = 0; s < nseg && off < (size_t)n; s++) {
		size_t len = MIN(seg[s].cap, (size_t)n - off);

		tcp_fill_hdr(seg[s].l2 + hdr, conn, conn->seq_to_guest,
			     TCP_ACK | (off + len == (size_t)n ? TCP_PSH : 0),
			     (uint16_t)w, TCP_HDR_LEN);
		if (tap_seg_send(c, conn->f.key.family, tcp_raddr(conn),
				 tcp_gaddr(conn), IPPROTO_TCP, &seg[s],
				 iov + nskip, TCP_HDR_LEN, len, conn->mss)) {
			/* Not queued: rewind, the data is still in the socket */
			if (tcp_peek_offset_ok) {
				int po = (int)(conn->seq_to_guest -
					       conn->seq_acked +
					       conn->acked_unread);

				if (setsockopt(conn->sock, SOL_SOCKET,
					       SO_PEEK_OFF, &po, sizeof(po))) {
					tap_seg_done(c);
					tcp_desync(c, conn, "SO_PEEK_OFF rewind",
						   errno);
					return -1;
				}
			}
			tcp_block(conn);
			break;
		}
		conn->seq_to_guest += (uint32_t)len;
		conn->flags &= ~TCP_F_ACK_DUE; /* data carries the ACK */
		off += len;
	}
	tap_seg_done(c);
	*full = !(conn->flags & TCP_F_BLOCKED) && (size_t)n == want &&
		want == room;

	if (n > 0 && !conn->timer)
		tcp_timer_arm(conn, now_ms());

fin:
	/* Peer closed and everything before the FIN went out: send our FIN */
	if ((conn->flags & TCP_F_SOCK_EOF) && !(conn->flags & TCP_F_BLOCKED)) {
		int pending = 0;

		if (!ioctl(conn->sock, SIOCINQ, &pending) &&
		    (uint32_t)pending == conn->seq_to_guest - conn->seq_acked +
					 conn->acked_unread) {
			tcp_send_ctl(c, conn, TCP_FIN | TCP_ACK,
				     conn->seq_to_guest);
			conn->seq_to_guest++;
			conn->flags |= TCP_F_FIN_SENT;
			conn->flags &= ~TCP_F_ACK_DUE;
			if (!conn->timer)
				tcp_timer_arm(conn, now_ms());
		}
	}
	return 0;
}

/**
 * tcp_data_to_guest() - send what the socket has and the guest may take
 * @c:		execution context
 * @conn:	connection in ESTABLISHED state
 *
 * Batch after batch, while they come out full: the socket's events are
 * edge-triggered, and one round may have opened a window of many batches.
 *
 * Return: 0, or -1 if the connection was reset and is gone
 */
int tcp_data_to_guest(struct ctx *c, struct tcp_conn *conn)
{
	bool full;
	int rc;

	do {
		full = false;
		rc = tcp_data_batch(c, conn, &full);
	} while (!rc && full);
	if (!rc)
		tcp_quiet(c, conn);
	return rc;
}

/**
 * tcp_rewind() - retransmit from the oldest unacknowledged byte
 * @c:		execution context
 * @conn:	connection
 *
 * Return: 0, or -1 if the connection was reset and is gone
 */
int tcp_rewind(struct ctx *c, struct tcp_conn *conn)
{
	int zero = 0;

	if (tcp_sock_sync(c, conn))
		return -1;
	if (conn->flags & TCP_F_FIN_SENT && !(conn->flags & TCP_F_FIN_ACKED))
		conn->flags &= ~TCP_F_FIN_SENT;
	conn->seq_to_guest = conn->seq_acked;
	if (tcp_peek_offset_ok &&
	    setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &zero,
		       sizeof(zero))) {
		tcp_desync(c, conn, "SO_PEEK_OFF rewind", errno);
		return -1;
	}
	conn->dup_acks = 0;
	return tcp_data_to_guest(c, conn);
}

/**
 * tcp_ack_from_guest() - the ACK and window of a segment from the guest on
 *			   an established connection: what it acknowledged
 *			   of our data, or a duplicate ACK
 * @c:		execution context
 * @conn:	connection
 * @ack:	ACK number
 * @wnd:	the guest's window, scaled
 * @bare:	the segment has no payload and no FIN (it may be a duplicate
 *		ACK)
 *
 * ACKed bytes are only counted here (dropped from the socket at the end of
 * the round); the third duplicate ACK rewinds.
 *
 * Return: 1 if the ACK or the window moved (send the guest more), 0 if not,
 *	   -1 if the segment is done with: a rewind answered it, or the
 *	   connection was reset and is gone
 */
int tcp_ack_from_guest(struct ctx *c, struct tcp_conn *conn, uint32_t ack,
		       uint32_t wnd, bool bare)
{
	int progress = 0;

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
			return -1;
		conn->seq_acked = ack;
		conn->retries = 0;
		conn->dup_acks = 0;
		conn->timer = 0;
		if (conn->seq_acked != conn->seq_to_guest)
			tcp_timer_arm(conn, now_ms());
		/* Listed, tcp_defer_handler() looks at the rest in flight */
		if (!(conn->flags & TCP_F_DEFERRED))
			tcp_quiet(c, conn);
		progress = 1;
	} else if (ack == conn->seq_acked && bare &&
		   conn->seq_to_guest != conn->seq_acked &&
		   wnd == conn->wnd_guest) {
		if (++conn->dup_acks == 3) {
			conn->wnd_guest = wnd;
			tcp_rewind(c, conn);
			return -1;
		}
	}
	if (wnd != conn->wnd_guest)
		progress = 1;
	conn->wnd_guest = wnd;
	return progress;
}

/**
 * tcp_resume_blocked() - let connections waiting for room to the guest retry
 * @c:		execution context
 *
 * Each checks whether its segments fit now, if there's a fair amount of room; a
 * window update that found none goes again first.
 */
static void tcp_resume_blocked(struct ctx *c)
{
	unsigned i, span;

	if (!tcp_blocked(false) || tap_tx_room(c) < TCP_RESUME_ROOM)
		return;
	tcp_blocked(true);
	span = flow_span();
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		/* One held out of the loop keeps its mark, and is listed
		 * again when it comes back (tcp_block_back())
		 */
		if (conn && (conn->flags & TCP_F_BLOCKED) &&
		    !(conn->flags & TCP_F_MIGRATED)) {
			conn->flags &= ~TCP_F_BLOCKED;
			if (conn->flags & TCP_F_WND_DUE) {
				conn->flags &= ~TCP_F_WND_DUE;
				if (conn->f.state == TCP_ST_ESTABLISHED &&
				    !(conn->flags & TCP_F_DRAINING))
					tcp_window_update(c, conn);
			}
			if (!(conn->flags & TCP_F_BLOCKED))
				tcp_data_to_guest(c, conn);
		}
	}
}

/**
 * tcp_defer_handler() - end of a loop round: send the coalesced ACKs, and
 *			 resume connections that waited for room to the guest
 * @c:		execution context
 */
void tcp_defer_handler(struct ctx *c)
{
	struct tcp_conn *conn;
	unsigned i;

	for (i = 0; tcp_deferred(i, &conn); i++) {
		if (!conn)
			continue;
		conn->flags &= ~TCP_F_DEFERRED;
		if (conn->flags & TCP_F_DATA_DUE) {
			conn->flags &= ~TCP_F_DATA_DUE;
			if (!(conn->flags & TCP_F_MIGRATED) &&
			    tcp_data_to_guest(c, conn))
				continue;
		}
		if (conn->flags & TCP_F_ACK_DUE)
			tcp_ack_now(c, conn);
	}

	/* The guest kicks us for new buffers only while a connection still
	 * waits; if that just started, buffers it posted right before weren't
	 * kicked for: one more look.
	 */
	tcp_rst_owed_flush(c);
	tcp_resume_blocked(c);
	if (tap_rx_kicks(c, tcp_blocked(false)))
		tcp_resume_blocked(c);

	/* Last, when no socket can be closed any more in this round: the
	 * ACKed bytes go, with io_uring all at once (uring_flush())
	 */
	for (i = 0; tcp_deferred(i, &conn); i++) {
		if (!conn)
			continue;
		conn->flags &= ~TCP_F_DEFERRED;	/* even if listed again above */
		if (conn->acked_unread && tcp_discard_due(conn))
			tcp_sock_discard(c, conn);
		tcp_quiet(c, conn);
	}
	tcp_deferred_clear();
}

/**
 * tcp_init() - probe kernel features
 * @c:		execution context
 */
void tcp_init(struct ctx *c)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), zero = 0;
	FILE *f;
	unsigned long rmax;

	(void)c;
	if (s >= 0) {
		tcp_peek_offset_ok = !setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero,
					     sizeof(zero));
		close(s);
	}
	debug("TCP: SO_PEEK_OFF %ssupported", tcp_peek_offset_ok ? "" : "not ");

	/* The largest receive buffer, tcp_rmem's third field; unknown:
	 * discard every round
	 */
	if ((f = fopen(TCP_RMEM_PATH, "re"))) {
		if (fscanf(f, "%*u %*u %lu", &rmax) == 1)
			tcp_discard_min = (uint32_t)MIN(rmax / 4,
						(unsigned long)TCP_DISCARD_MIN);
		fclose(f);
	}
	debug("TCP: ACKed data discarded from %u bytes on", tcp_discard_min);
}
