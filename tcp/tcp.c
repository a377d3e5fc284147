// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcp.c - TCP translation: the guest's TCP connections become ordinary
 * sockets of our namespace, and connections to forwarded ports become
 * connections to the guest.
 *
 * Theory of operation
 *
 * We terminate the guest's TCP ourselves, with a deliberately small state
 * machine, and let the kernel run the real TCP towards the peer. The two
 * halves are glued without buffering any payload in our memory:
 *
 *  socket -> guest: data stays in the socket's receive queue until the
 *	guest ACKs it. We read it with MSG_PEEK (the peek offset, SO_PEEK_OFF,
 *	marks what was sent already) straight into frames reserved in the
 *	front-end's own buffers (tap_seg_reserve(): with vhost-user, the
 *	guest's receive buffers, so the kernel's copy is the only one), at
 *	most as much as the guest's window allows. An ACK from the guest
 *	only counts the bytes it acknowledges; at the end of the loop round
 *	(tcp_defer_handler()) one peek sends what the new window allows, the
 *	peek offset counting past the ACKed bytes, and then one recv with
 *	MSG_TRUNC discards them all (tcp_sock_discard(): queued on the
 *	io_uring of uring.c with the round's other calls where there is one),
 *	however many ACKs the round brought. Not every round, though: while
 *	the socket holds more than the guest took (the last peek got all it
 *	asked for), the ACKed bytes wait until they reach TCP_DISCARD_MIN (a
 *	quarter of the largest receive buffer tcp_rmem allows, if less). A
 *	discard opens the peer's window, and a local peer often sends its
 *	next burst on our time: the softirq that delivers the window update
 *	runs the peer's transmission, and the arrival of its segments,
 *	before our call returns. Fewer and larger discards cost less, and
 *	the peer's smaller window meanwhile can't slow down a guest that
 *	has more waiting for it anyway. Once a peek comes back short, the
 *	socket is dry and every round discards again. Whatever reads the
 *	queue from its head first discards at once (tcp_sock_sync()). A
 *	retransmission rewinds the peek offset to the first unacknowledged
 *	byte: the queue IS the retransmission buffer.
 *
 *  guest -> socket: in-order segments are written to the socket, those of
 *	one batch of frames with a single sendmsg() (tcp_flush_pending());
 *	we ACK to the guest exactly what the kernel took into its send
 *	queue, never more. The window we advertise is the room the kernel
 *	is sure to have (SO_MEMINFO: buffer size minus queued memory, less a
 *	margin for overhead), so the guest practically never sends what
 *	can't be taken; if it does, the rest isn't ACKed, and once there is
 *	room a window update and three duplicate ACKs make the guest
 *	retransmit it at once. Out-of-order segments are dropped with a
 *	duplicate ACK.
 *
 * Sequence numbers towards the guest are our own (RFC 6528: a keyed hash
 * of the four-tuple plus a 4 µs clock); sequence numbers from the guest
 * are tracked as is. We offer window scaling when the guest does, and an
 * MSS derived from the MTU. No timestamps, no SACK: the link to the guest
 * is a local queue that neither reorders nor loses unless we drop.
 *
 * States (f.state), and FIN/RST in both directions:
 *
 *   guest SYN -> CONNECTING (non-blocking connect) -> connected:
 *	SYN-ACK to guest -> SYNACK_TO_GUEST -> guest ACK -> ESTABLISHED
 *	(connect refused: RST to guest; unreachable: ICMP error to guest)
 *   peer connects to a forwarded port -> accept -> SYN to guest ->
 *	SYN_TO_GUEST -> guest SYN-ACK -> ACK -> ESTABLISHED
 *   guest FIN: once all data before it reached the socket, shutdown(WR)
 *	and ACK the FIN (GUEST_FIN). Peer FIN (EOF on the socket): once all
 *	data before it reached the guest, FIN to guest (FIN_SENT), and when
 *	the guest ACKs it, FIN_ACKED. Both done: close, free the flow, once
 *	the socket has sent the peer everything (DRAINING until then: a
 *	closed socket would be the kernel's alone, and a migration wouldn't
 *	see it).
 *   guest RST: close the socket with SO_LINGER 0 (the kernel sends RST).
 *   socket error / peer RST: RST to the guest, close. A RST the guest
 *	couldn't get (its ring full, or stopped for a migration) is sent
 *	again once it can go, or goes with the migration (tcp_rst_owe()).
 *
 * A connection restored by a migration may have to write data the source
 * had queued before anything new from the guest (TCP_F_TAIL, see
 * tcp/migrate.c): meanwhile the window towards the guest is 0, its FIN
 * waits, and EPOLLOUT drives tcp_migrate_tail().
 *
 * Timers (checked every loop tick): retransmission to the guest (RTO
 * starting at TCP_RTO_MS, doubling, TCP_MAX_RETRIES then reset), the
 * handshake deadlines, and an idle timeout. A full connection table makes
 * us refuse new connections with RST (logged, rate-limited). Reclaim (see
 * flow.c): at most TCP_HALF_OPEN_MAX connections opened by the guest are
 * half-open (our connect() to the remote in progress); a SYN beyond that
 * resets the oldest of them. A SYN that finds no descriptor left closes
 * the least recently used UDP or ICMP echo flow, or else the oldest
 * half-open connection, and tries again.
 *
 * Epoll: sockets are edge-triggered for input, because data we peeked and
 * are waiting to have ACKed stays readable; progress after an ACK or a
 * window update is driven from the guest side instead. EPOLLOUT is armed
 * only while connecting or when the guest waits for send-buffer room.
 * While the guest has at least TCP_QUIET_ON full frames in flight, input
 * events are off altogether (tcp_quiet()): its ACKs come anyway, each
 * makes us read what the peer sent meanwhile, and otherwise every arrival
 * from the peer wakes us (on a slow guest, most rounds of a transfer to
 * it). Below TCP_QUIET_OFF frames they are back on: a receiver may hold
 * its ACK for a lone segment (delayed ACK), and with nothing in flight no
 * ACK comes at all. EPOLLRDHUP, EPOLLERR and EPOLLHUP always stay on, and
 * the retransmission timer runs as ever.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "log.h"
#include "loop.h"
#include "net/icmp_err.h"
#include "net/packet.h"
#include "tap/coalesce.h"
#include "tap/tap.h"
#include "tcp/migrate.h"
#include "tcp/tcp.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_internal.h"
#include "uring.h"
#include "util.h"

#define TCP_HDR_LEN 20
#define TCP_OPT_SYN_LEN 8	/* MSS (4) + NOP + window scale (3) */


#define TCP_RTO_MS 1000			/* initial retransmission timeout */
#define TCP_MAX_RETRIES 7		/* then reset both sides */
#define TCP_SYN_RETRIES 4		/* SYN to guest, then give up */
#define TCP_CONNECT_TIMEOUT_MS (60 * 1000)
#define TCP_HALF_OPEN_MAX 4096		/* guest connections still waiting
					 * for the remote (flow.c, Reclaim) */
#define TCP_IDLE_MS (2 * 3600 * 1000ULL)
#define TCP_WS_OURS 8			/* our window scale when offered */
#define TCP_BATCH 64			/* segments per socket read */
#define TCP_DEFER_MAX 1024		/* connections with a pending ACK */
#define TCP_RESUME_ROOM (16 * 1024)	/* retry blocked ones past this room */
#define TCP_WND_KEEP (256 * 1024)	/* measure the room below this left */
#define TCP_QUIET_ON 3			/* no input events from this many
					 * frames in flight */
#define TCP_QUIET_OFF 2			/* input events again below this */
#define TCP_LIMITED_ROOM (64 * 1024)	/* less window left: the guest waits */
#define TCP_DISCARD_MIN (1024 * 1024)	/* ACKed bytes that may wait in a
					 * socket with more for the guest (a
					 * quarter of tcp_rmem's max, if less) */
#define TCP_RMEM_PATH "/proc/sys/net/ipv4/tcp_rmem"
#define TCP_DRAIN_MS 200		/* a closed connection's socket still
					 * sending: look again this often */

#define SEQ_LT(a, b) ((int32_t)((a) - (b)) < 0)
#define SEQ_LE(a, b) ((int32_t)((a) - (b)) <= 0)
#define SEQ_GT(a, b) ((int32_t)((a) - (b)) > 0)
#define SEQ_GE(a, b) ((int32_t)((a) - (b)) >= 0)


/* One frame for control segments (SYN, ACK, FIN, RST) */
static uint8_t tcp_ctl_frame[128];

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

/*
 * Guest data not yet written: consecutive in-order segments of one
 * connection, from one batch of frames, go to the socket with a single
 * sendmsg(), so the kernel builds large segments instead of one per frame.
 * The iovecs point into the front-end's frames, which stay valid until the
 * batch ends: tap_input_end() calls tcp_flush_pending() before that.
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
static uint32_t defer_list[TCP_DEFER_MAX];
static unsigned defer_count;
static bool tcp_blocked_any;		/* some connection waits for room */

/* Connection at a flow index, NULL if it's gone (closed in this round) */
struct tcp_conn *tcp_conn_at(unsigned idx)
{
	union flow *flow = flow_live(idx, FLOW_TCP);

	return flow ? &flow->tcp : NULL;
}

static unsigned tcp_idx(const struct tcp_conn *conn)
{
	return flow_idx((const union flow *)conn);
}

/* The guest-side and remote addresses of a connection, in the family's
 * own format (struct in_addr or struct in6_addr)
 */
static const void *tcp_gaddr(const struct tcp_conn *conn)
{
	const struct in6_addr *a = &conn->f.key.gaddr;

	return conn->f.key.family == AF_INET ? (const void *)&a->s6_addr[12]
					     : (const void *)a;
}

static const void *tcp_raddr(const struct tcp_conn *conn)
{
	const struct in6_addr *a = &conn->f.key.raddr;

	return conn->f.key.family == AF_INET ? (const void *)&a->s6_addr[12]
					     : (const void *)a;
}

/* RFC 6528: ISN = M + F(4-tuple, secret), M a 4 µs timer */
static uint32_t tcp_isn(const struct flow_key *k)
{
	struct timespec ts;
	uint64_t m;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	m = ((uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec) >> 12;
	return (uint32_t)(flow_key_hash(k) + m);
}

/*
 * tcp_sock_room() - free room in the socket's send buffer: the window we
 * offer the guest. The kernel accepts data while the memory it has queued
 * (payload plus overhead) is below the buffer size, so this much payload is
 * always taken. *@low says the kernel itself considers the socket not
 * writable, which is also when it grows the buffer (autotuning) and
 * signals EPOLLOUT once there is room again; *@idle, that its send queue
 * is empty. Either may be NULL.
 */
static uint32_t tcp_sock_room(const struct tcp_conn *conn, bool *low,
			      bool *idle)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t sl = sizeof(mi);
	uint32_t sndbuf, queued, room;

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
	/* Segments cost the kernel more than their payload: keep a margin,
	 * or the last segment of a window would be refused
	 */
	room -= room / 4;
	return MIN(room, (uint32_t)65535 << conn->ws_ours);
}

/* The socket's events, from the flags: EPOLLOUT while the guest waits for
 * room or a migration's never-sent data does (TCP_F_TAIL), EPOLLIN unless
 * its ACKs drive our reads (TCP_F_QUIET)
 */
static void tcp_conn_events(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t ev = EPOLLRDHUP | EPOLLET;

	if (!(conn->flags & TCP_F_QUIET))
		ev |= EPOLLIN;
	if (conn->flags & (TCP_F_OUT_WAIT | TCP_F_TAIL))
		ev |= EPOLLOUT;
	loop_mod(c, conn->sock, ev, flow_ref((union flow *)conn, REF_TCP));
}

/* tcp_out_wait() - wake us when the socket has room again */
static void tcp_out_wait(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_OUT_WAIT)
		return;
	conn->flags |= TCP_F_OUT_WAIT;
	tcp_conn_events(c, conn);
}

/*
 * tcp_quiet() - input events off while the guest has plenty in flight,
 * back on once it has little: see "Epoll" above
 */
static void tcp_quiet(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t inflight = conn->seq_to_guest - conn->seq_acked;
	uint32_t fmax = (uint32_t)tap_seg_tcp_max(c, conn->f.key.family,
						  conn->mss);
	bool quiet = conn->f.state == TCP_ST_ESTABLISHED &&
		     inflight >= fmax * ((conn->flags & TCP_F_QUIET) ?
					 TCP_QUIET_OFF : TCP_QUIET_ON);

	/* A held socket is out of the loop: tcp/migrate.c re-adds it */
	if (conn->sock < 0 || (conn->flags & TCP_F_MIGRATED) ||
	    quiet == !!(conn->flags & TCP_F_QUIET))
		return;
	conn->flags ^= TCP_F_QUIET;
	tcp_conn_events(c, conn);
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
	return (uint16_t)MIN(tcp_sock_room(conn, NULL, NULL) >> conn->ws_ours,
			     65535U);
}

/*
 * tcp_wnd_to_guest() - the window field for a segment to the guest
 *
 * The free room of the socket's send buffer. When the kernel finds the
 * socket short of room, arm EPOLLOUT: that lets the kernel grow the buffer
 * as the peer ACKs, and a window update follows once there is room. The
 * kernel only signals that after it ran out of space, so this can't spin.
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
 */
static uint16_t tcp_wnd_to_guest(struct ctx *c, struct tcp_conn *conn)
{
	uint32_t room = conn->wnd_edge - conn->seq_from_guest;
	/* Idle at the measurement, and the socket took nothing since */
	bool keep = (conn->flags & TCP_F_WND_IDLE) && room == conn->wnd_span;
	bool low, idle;

	/* A migration's never-sent data goes first: nothing from the guest
	 * until it's in the socket (tcp_window_update() reopens the window)
	 */
	if (conn->flags & TCP_F_TAIL)
		return 0;

	if (!conn->wnd_span || SEQ_GT(conn->seq_from_guest, conn->wnd_edge) ||
	    (!keep && room < MAX(conn->wnd_span / 2, TCP_WND_KEEP))) {
		room = tcp_sock_room(conn, &low, &idle);
		if (low && conn->f.state == TCP_ST_ESTABLISHED)
			tcp_out_wait(c, conn);
		conn->wnd_span = room;
		conn->wnd_edge = conn->seq_from_guest + room;
		if (idle)
			conn->flags |= TCP_F_WND_IDLE;
		else
			conn->flags &= ~TCP_F_WND_IDLE;
	}
	return (uint16_t)MIN(room >> conn->ws_ours, 65535U);
}

/* tcp_fill_hdr() - the 20-byte header of a segment to the guest */
static void tcp_fill_hdr(uint8_t *th, const struct tcp_conn *conn,
			 uint32_t seq, uint8_t flags, uint16_t wnd,
			 size_t hlen)
{
	uint32_t ack = (flags & TCP_ACK) ? conn->seq_from_guest : 0;

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

	tap_queue_out(c, conn->f.qpair);

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
				    tcp_sock_room(conn, NULL, NULL) : 65535U,
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

void tcp_ack_now(struct ctx *c, struct tcp_conn *conn)
{
	conn->flags &= ~TCP_F_ACK_DUE;
	tcp_send_ctl(c, conn, TCP_ACK, conn->seq_to_guest);
}

/*
 * tcp_window_update() - the socket has room again: tell the guest, and if
 * we refused data, have it retransmitted now rather than after its RTO:
 * three duplicate ACKs after the update trigger its fast retransmit
 */
static void tcp_window_update(struct ctx *c, struct tcp_conn *conn)
{
	int i;

	conn->wnd_span = 0;		/* measure the new room */
	tcp_ack_now(c, conn);
	if (!(conn->flags & TCP_F_REFUSED))
		return;
	conn->flags &= ~TCP_F_REFUSED;
	for (i = 0; i < 3; i++)
		tcp_ack_now(c, conn);
}

/* Put @conn on the end-of-round list; false if the list is full */
static bool tcp_defer(struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_DEFERRED)
		return true;
	if (defer_count == TCP_DEFER_MAX)
		return false;
	conn->flags |= TCP_F_DEFERRED;
	defer_list[defer_count++] = tcp_idx(conn);
	return true;
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
 * Send the guest more at the end of this loop round: all the ACKs of one
 * batch of frames then make one read of the socket, not one each.
 * Return: 0, or -1 if the connection was reset and is gone
 */
static int tcp_data_later(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->flags & TCP_F_DATA_DUE)
		return 0;
	if (!tcp_defer(conn))
		return tcp_data_to_guest(c, conn);
	conn->flags |= TCP_F_DATA_DUE;
	return 0;
}

/*
 * tcp_conn_free() - forget a connection; the socket is already handled.
 * Guest data held for it in a batch dies with it: it must never reach
 * the socket of a connection that later gets the same slot.
 */
static void tcp_conn_free(struct tcp_conn *conn)
{
	union flow *flow = (union flow *)conn;

	if (tcp_pend.idx == (int)tcp_idx(conn))
		tcp_pend.idx = -1;
	if (conn->flags & TCP_F_TAIL)
		tcp_migrate_tail_drop(conn);
	conn->flags &= ~TCP_F_ACK_DUE;
	flow_close(flow);
}

/*
 * tcp_desync() - a socket call we rely on to keep both sides in step
 * failed: reset this connection rather than go on with wrong sequence
 * numbers, and say which call it was (once: the connection is gone then)
 */
static void tcp_desync(struct ctx *c, struct tcp_conn *conn,
		       const char *what, int e)
{
	warn_rl("TCP flow %u: %s failed (%s), resetting the connection",
		tcp_idx(conn), what, e ? strerror(e) : "short");
	tcp_rst(c, conn);
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
 * them wait for more? See "socket -> guest" above.
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

/* tcp_close() - close the socket gracefully, or with RST if @rst */
void tcp_close(struct ctx *c, struct tcp_conn *conn, bool rst)
{
	if (conn->sock >= 0) {
		if (rst) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(conn->sock, SOL_SOCKET, SO_LINGER, &l,
				   sizeof(l));
		} else if (conn->acked_unread) {
			/* Unread data would turn close() into a RST */
			recv(conn->sock, NULL, conn->acked_unread,
			     MSG_TRUNC | MSG_DONTWAIT);
		}
		conn->acked_unread = 0;
		loop_del(c, conn->sock);
		close(conn->sock);
		conn->sock = -1;
	}
	tcp_conn_free(conn);
}

/*
 * RSTs to the guest that couldn't be sent (the front-end had no room, or
 * was stopped for a migration): the guest would never learn that the
 * connection is gone if it only receives. Sent again at the end of each
 * round once frames can go (tcp_rst_owed_flush()), given up after
 * TCP_RST_OWED_MS, and a migration takes them to the target (tcp/migrate.c
 * writes them as skip records, which the target answers with a RST).
 */
#define TCP_RST_OWED_MAX	256
#define TCP_RST_OWED_MS		30000
static struct tcp_rst_owed tcp_rst_owed[TCP_RST_OWED_MAX];
static unsigned tcp_rst_owed_n;

/* Remember the RST @conn owes the guest (the oldest goes if full; an
 * earlier one for the same addresses and ports is replaced)
 */
static void tcp_rst_owe(const struct tcp_conn *conn)
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

/* Send the RSTs owed to the guest that can go now; forget old ones */
static void tcp_rst_owed_flush(struct ctx *c)
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

/* tcp_rst() - reset both sides: RST to the guest, RST to the peer */
void tcp_rst(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->f.state != TCP_ST_CONNECTING &&
	    tcp_send_ctl(c, conn, TCP_RST | TCP_ACK, conn->seq_to_guest))
		tcp_rst_owe(conn);
	tcp_close(c, conn, true);
}

static void tcp_timer_arm(struct tcp_conn *conn, uint64_t now)
{
	conn->timer = now + ((uint64_t)TCP_RTO_MS << MIN(conn->retries, 6));
}

/*
 * tcp_maybe_done() - both directions closed: release the connection, once
 * the socket has nothing left to send. What the guest sent may still wait
 * in the socket behind a slow path: closed, the socket would be the
 * kernel's alone, and a migration wouldn't see it (the peer would get a
 * reset from the target's kernel, with part of the data). So the flow
 * stays (TCP_F_DRAINING, its timer checking SIOCOUTQ) until the peer has
 * ACKed all of it and our FIN.
 */
static bool tcp_maybe_done(struct ctx *c, struct tcp_conn *conn)
{
	int outq = 0;

	/* A migration's never-sent data must reach the socket first */
	if (conn->flags & TCP_F_TAIL)
		return false;
	if ((conn->flags & TCP_F_GUEST_FIN) && (conn->flags & TCP_F_FIN_ACKED)) {
		/* The guest's FIN may be what closed it: ACK it now, the
		 * deferred ACK would find the connection gone
		 */
		if (conn->flags & TCP_F_ACK_DUE)
			tcp_ack_now(c, conn);
		if (!ioctl(conn->sock, SIOCOUTQ, &outq) && outq > 0) {
			conn->flags |= TCP_F_DRAINING;
			conn->timer = now_ms() + TCP_DRAIN_MS;
			return false;
		}
		tcp_close(c, conn, false);
		return true;
	}
	return false;
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
	if (!tcp_peek_offset_ok &&
	    inflight + wnd > sizeof(tcp_discard) * TCP_DISCARD_IOV)
		wnd = inflight < sizeof(tcp_discard) * TCP_DISCARD_IOV ?
		      sizeof(tcp_discard) * TCP_DISCARD_IOV - inflight : 0;
	if (!wnd)
		goto fin;

	if (!tcp_peek_offset_ok) {
		/* Skip what was sent already by peeking it into a scratch
		 * area (the window above keeps it within TCP_DISCARD_IOV)
		 */
		for (uint32_t skip = inflight; skip && nskip < TCP_DISCARD_IOV;
		     nskip++) {
			iov[nskip].iov_base = tcp_discard;
			iov[nskip].iov_len = MIN(skip, sizeof(tcp_discard));
			skip -= iov[nskip].iov_len;
		}
	}

	fmax = (uint32_t)tap_seg_tcp_max(c, conn->f.key.family, conn->mss);
	nseg = MIN((wnd + fmax - 1) / fmax, (uint32_t)TCP_BATCH);
	tap_queue_out(c, conn->f.qpair);
	nseg = tap_seg_reserve(c, hdr + TCP_HDR_LEN, fmax, nseg, seg,
			       iov + nskip, ARRAY_SIZE(iov) - nskip);
	if (!nseg) {
		conn->flags |= TCP_F_BLOCKED;
		tcp_blocked_any = true;
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
			debug_rl("TCP flow %u: recv: %s", tcp_idx(conn),
			      strerror(errno));
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
			conn->flags |= TCP_F_BLOCKED;
			tcp_blocked_any = true;
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

/*
 * tcp_rewind() - retransmit from the oldest unacknowledged byte
 * Return: 0, or -1 if the connection was reset and is gone
 */
static int tcp_rewind(struct ctx *c, struct tcp_conn *conn)
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

/* Options of a guest SYN or SYN-ACK: MSS and window scale */
static void tcp_parse_syn_opts(struct pview opts, uint16_t *mss, int *ws)
{
	size_t off = 0;

	*mss = 536;
	*ws = -1;
	while (off < opts.len) {
		uint8_t kind, len;

		if (!pv_u8(opts, off, &kind) || kind == 0)
			return;
		if (kind == 1) {
			off++;
			continue;
		}
		if (!pv_u8(opts, off + 1, &len) || len < 2)
			return;
		if (kind == 2 && len == 4) {
			uint16_t v;

			if (pv_be16(opts, off + 2, &v) && v)
				*mss = v;
		} else if (kind == 3 && len == 3) {
			uint8_t v;

			if (pv_u8(opts, off + 2, &v))
				*ws = MIN(v, 14);
		}
		off += len;
	}
}

/* Largest payload the guest link carries, from the MTU */
static uint16_t tcp_mss_link(const struct ctx *c, int family)
{
	int mtu = c->mtu ? c->mtu : 1500;

	mtu = MIN(mtu, FRAME_MAX_LEN - ETH_HDR_LEN);
	return (uint16_t)(mtu - (family == AF_INET ? 20 : 40) - TCP_HDR_LEN);
}

void tcp_sock_tune(int s)
{
	int one = 1, zero = 0;

	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (tcp_peek_offset_ok)
		setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero));
}

/* RST for a segment that matches no connection (RFC 9293 3.10.7.1) */
static void tcp_rst_unknown(struct ctx *c, const struct pkt *p,
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

static void tcp_connect_failed(struct ctx *c, struct tcp_conn *conn, int e);
static void tcp_connect_done(struct ctx *c, struct tcp_conn *conn);

/*
 * Half-open connections from the guest, oldest first: every connection
 * the guest opened goes in when its SYN arrives, and is taken out when it
 * reaches the front. Whatever the remote has answered (or is gone) by
 * then is simply dropped; whatever still waits for it is reset. So at most
 * TCP_HALF_OPEN_MAX connections are half-open at any time, and a SYN
 * flood pushes out its own oldest SYNs, not established connections.
 */
static struct {
	uint32_t idx;
	uint32_t gen;
} tcp_half_open[TCP_HALF_OPEN_MAX];
static unsigned tcp_half_open_first, tcp_half_open_n;

/* Is @conn a connection from the guest still waiting for the remote?
 * (Once the remote has answered, the guest's ACK may be queued behind a
 * whole flood of its own SYNs: such connections are bounded by the SYN-ACK
 * retries, not here.)
 */
static bool tcp_is_half_open(const struct tcp_conn *conn)
{
	return !(conn->flags & TCP_F_INBOUND) &&
	       conn->f.state == TCP_ST_CONNECTING;
}

/* Reset a half-open connection: the guest gets a RST for its SYN */
static void tcp_half_open_reset(struct ctx *c, struct tcp_conn *conn)
{
	debug_rl("TCP flow %u: oldest half-open connection reset for a new "
		 "one", tcp_idx(conn));
	tcp_send_ctl(c, conn, TCP_RST | TCP_ACK, 0);
	tcp_close(c, conn, true);
}

/* Has the remote answered @s, with its completion not yet taken from
 * epoll? (Under a SYN flood the daemon may be a round or two behind the
 * kernel, and an ordinary connection's handshake would otherwise be the
 * oldest entry when room is made.) One getsockopt() per reclaim, only
 * while the half-open share is full.
 */
static bool tcp_sock_connected(int s)
{
	uint8_t state = 0;
	socklen_t sl = sizeof(state);

	return !getsockopt(s, IPPROTO_TCP, TCP_INFO, &state, &sl) && sl &&
	       state == TCP_ESTABLISHED;
}

/* Take the oldest entry off the list; reset it if the remote still hasn't
 * answered, or else send the guest the SYN-ACK it is due.
 * Return: true if a connection was reset
 */
static bool tcp_half_open_pop(struct ctx *c)
{
	unsigned i = tcp_half_open_first;
	union flow *flow;

	if (!tcp_half_open_n)
		return false;
	tcp_half_open_first = (i + 1) % TCP_HALF_OPEN_MAX;
	tcp_half_open_n--;

	flow = flow_live(tcp_half_open[i].idx, FLOW_TCP);
	if (!flow || flow->f.gen != tcp_half_open[i].gen ||
	    !tcp_is_half_open(&flow->tcp))
		return false;
	if (tcp_sock_connected(flow->tcp.sock)) {
		tcp_connect_done(c, &flow->tcp);
		return false;
	}
	tcp_half_open_reset(c, &flow->tcp);
	return true;
}

/* A guest SYN made a new connection: note it, and make room for it */
static void tcp_half_open_push(struct ctx *c, const union flow *flow)
{
	unsigned i;

	if (tcp_half_open_n == TCP_HALF_OPEN_MAX) {
		if (tcp_half_open_pop(c))
			warn_rl("TCP: more than %u half-open connections from "
				"the guest, resetting the oldest",
				TCP_HALF_OPEN_MAX);
	}
	i = (tcp_half_open_first + tcp_half_open_n) % TCP_HALF_OPEN_MAX;
	tcp_half_open[i].idx = flow_idx(flow);
	tcp_half_open[i].gen = flow->f.gen;
	tcp_half_open_n++;
}

/* No descriptor left for a new connection: make one free, see flow.c.
 * Return: true if something was closed
 */
static bool tcp_reclaim_fd(struct ctx *c)
{
	if (!flow_reclaim_dgram(c, now_ms(), 0))
		return true;
	while (tcp_half_open_n)
		if (tcp_half_open_pop(c))
			return true;
	return false;
}

/* Guest SYN: open a socket and start connecting */
static void tcp_conn_from_guest(struct ctx *c, const struct pkt *p,
				const struct flow_key *k, uint32_t seq,
				struct pview opts)
{
	union sockaddr_inany sa;
	struct tcp_conn *conn;
	union flow *flow;
	uint16_t mss;
	int ws, s, rc;

	rc = fwd_nat_outbound(c, p->family, p->family == AF_INET ?
			      (const void *)&p->dst4 : (const void *)&p->dst6,
			      k->rport, &sa);
	if (rc) {
		debug_rl("TCP: guest connection to unsupported destination");
		return;
	}

	flow = flow_alloc();
	if (!flow) {
		warn_rl("TCP: flow table full, refusing guest connection");
		tcp_rst_unknown(c, p, k->gport, k->rport, seq, 0, TCP_SYN, 0);
		return;
	}
	conn = &flow->tcp;
	conn->f.type = FLOW_TCP;
	conn->f.key = *k;
	conn->f.qpair = tap_queue_in(c);
	conn->sock = -1;

	s = fwd_socket(c, sa.sa.sa_family, SOCK_STREAM);
	if ((s == -EMFILE || s == -ENFILE) && tcp_reclaim_fd(c))
		s = fwd_socket(c, sa.sa.sa_family, SOCK_STREAM);
	if (s < 0) {
		warn_rl("TCP: can't create socket: %s", strerror(-s));
		flow_close(flow);
		tcp_rst_unknown(c, p, k->gport, k->rport, seq, 0, TCP_SYN, 0);
		return;
	}
	conn->sock = s;
	tcp_sock_tune(s);

	tcp_parse_syn_opts(opts, &mss, &ws);
	conn->mss = MIN(mss, tcp_mss_link(c, p->family));
	if (ws >= 0) {
		conn->flags |= TCP_F_WS;
		conn->ws_guest = (uint8_t)ws;
		conn->ws_ours = TCP_WS_OURS;
	}
	conn->seq_from_guest = seq + 1;
	conn->seq_isn = tcp_isn(k);
	conn->seq_to_guest = conn->seq_isn;
	conn->seq_acked = conn->seq_isn;
	conn->f.state = TCP_ST_CONNECTING;
	conn->last_ms = now_ms();
	conn->timer = conn->last_ms + TCP_CONNECT_TIMEOUT_MS;
	tcp_half_open_push(c, flow);

	if (flow_hash_insert(flow) ||
	    loop_add(c, s, EPOLLOUT | EPOLLRDHUP | EPOLLET,
		     flow_ref(flow, REF_TCP))) {
		tcp_close(c, conn, true);
		return;
	}

	rc = connect(s, &sa.sa, sockaddr_len(&sa));
	if (rc && errno != EINPROGRESS) {
		int e = errno;

		tcp_connect_failed(c, conn, e);
		return;
	}
	trace("TCP flow %u: connecting", tcp_idx(conn));
}

/* tcp_connect_failed() - connect() failed: RST, or ICMP error if unreachable */
static void tcp_connect_failed(struct ctx *c, struct tcp_conn *conn, int e)
{
	debug_rl("TCP flow %u: connect: %s", tcp_idx(conn), strerror(e));
	if (e == EHOSTUNREACH || e == ENETUNREACH || e == EACCES ||
	    e == EPERM)
		icmp_err_unreach(c, conn->f.key.family, IPPROTO_TCP,
				 tcp_gaddr(conn), conn->f.key.gport,
				 tcp_raddr(conn), conn->f.key.rport,
				 conn->seq_from_guest - 1, e);
	else
		tcp_send_ctl(c, conn, TCP_RST | TCP_ACK, 0);
	tcp_close(c, conn, false);
}

/* tcp_connect_done() - the remote answered: SYN-ACK to the guest */
static void tcp_connect_done(struct ctx *c, struct tcp_conn *conn)
{
	tcp_conn_events(c, conn);
	conn->f.state = TCP_ST_SYNACK_TO_GUEST;
	conn->retries = 0;
	tcp_send_ctl(c, conn, TCP_SYN | TCP_ACK, conn->seq_isn);
	conn->seq_to_guest = conn->seq_isn + 1;
	conn->seq_acked = conn->seq_isn + 1;
	tcp_timer_arm(conn, now_ms());
}

/* tcp_established() - handshake done, in either direction */
static void tcp_established(struct tcp_conn *conn)
{
	conn->f.state = TCP_ST_ESTABLISHED;
	conn->retries = 0;
	conn->timer = 0;
	trace("TCP flow %u: established", tcp_idx(conn));
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

/*
 * tcp_write() - write guest data to the socket, ACK (later) what it took
 * Return: 0, or -1 if the connection was reset and is gone
 */
static int tcp_write(struct ctx *c, struct tcp_conn *conn,
		     const struct iovec *iov, unsigned niov, size_t len)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov,
			     .msg_iovlen = niov };
	ssize_t n;

	/* Behind a migration's never-sent data: none of it yet */
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
		/* The kernel took part: what's left isn't ACKed, and the
		 * guest must send it again once there's room
		 */
		conn->flags |= TCP_F_REFUSED;
		conn->wnd_span = 0;
		trace("TCP flow %u: socket took %zi of %zu bytes",
		      tcp_idx(conn), n, len);
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

/*
 * tcp_payload_iov() - the payload of a guest segment as iovecs, from byte
 * @skip on: its contiguous start @head, then the frame's further pieces
 * (tap_input_part()), up to the IP packet's end. @iov takes at most
 * 1 + @p->ntail entries. Return: number of entries used
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

/* Segment from the guest on an established connection */
static void tcp_input_established(struct ctx *c, struct tcp_conn *conn,
				  uint32_t seq, uint32_t ack, uint8_t flags,
				  uint32_t wnd, struct pview payload,
				  const struct pkt *p, bool progress)
{
	uint32_t plen = (uint32_t)(payload.len + p->tail_len);


	if (flags & TCP_SYN) {		/* retransmitted SYN or SYN-ACK */
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
			trace("TCP flow %u: segment %u+%u, expected %u",
			      tcp_idx(conn), seq, plen, conn->seq_from_guest);
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
		/* Behind a migration's never-sent data, the FIN waits too */
		if (!((conn->flags & TCP_F_TAIL) &&
		      tcp_migrate_tail_fin(conn)) &&
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

/**
 * tcp_input() - handle a TCP segment from the guest
 * @c:		execution context
 * @p:		parsed packet, proto TCP
 */
void tcp_input(struct ctx *c, const struct pkt *p)
{
	uint16_t sport, dport, win;
	uint32_t seq, ack;
	uint8_t doff, flags;
	struct pview payload, opts;
	struct tcp_conn *conn;
	struct flow_key k;
	union flow *flow;
	const void *src = p->family == AF_INET ? (const void *)&p->src4
					       : (const void *)&p->src6;
	const void *dst = p->family == AF_INET ? (const void *)&p->dst4
					       : (const void *)&p->dst6;

	if (p->frag || !pv_be16(p->l4, 0, &sport) ||
	    !pv_be16(p->l4, 2, &dport) || !pv_be32(p->l4, 4, &seq) ||
	    !pv_be32(p->l4, 8, &ack) || !pv_u8(p->l4, 12, &doff) ||
	    !pv_u8(p->l4, 13, &flags) || !pv_be16(p->l4, 14, &win)) {
		debug_rl("TCP: truncated segment from guest dropped");
		return;
	}
	doff = (uint8_t)((doff >> 4) * 4);
	if (doff < TCP_HDR_LEN || doff > p->l4.len) {
		debug_rl("TCP: bad data offset from guest, dropped");
		return;
	}
	opts = pv_sub(p->l4, TCP_HDR_LEN, doff - TCP_HDR_LEN);
	payload = pv_tail(p->l4, doff);

	flow_key_set(&k, FLOW_TCP, p->family, src, sport, dst, dport);
	flow = flow_hash_lookup(&k);
	if (!flow) {
		if ((flags & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) ==
		    TCP_SYN && !c->no_tcp)
			tcp_conn_from_guest(c, p, &k, seq, opts);
		else
			tcp_rst_unknown(c, p, sport, dport, seq, ack, flags,
					payload.len + p->tail_len);
		return;
	}
	conn = &flow->tcp;
	if (conn->flags & TCP_F_MIGRATED)
		return;		/* the guest runs elsewhere now */
	conn->last_ms = now_ms();
	conn->f.qpair = tap_queue_in(c);

	if (flags & TCP_RST) {
		/* Accept only an RST inside what we expect (RFC 5961 lite) */
		if (conn->f.state == TCP_ST_SYN_TO_GUEST ||
		    (SEQ_GE(seq, conn->seq_from_guest) &&
		     SEQ_LT(seq, conn->seq_from_guest + 65536U * 16))) {
			trace("TCP flow %u: RST from guest", tcp_idx(conn));
			/* Both FINs done, the socket still sending what we
			 * ACKed to the guest: that is the peer's, whatever
			 * the guest's socket says now (a closed one answers
			 * any late segment of ours with a RST)
			 */
			tcp_close(c, conn, !(conn->flags & TCP_F_DRAINING));
		}
		return;
	}

	switch (conn->f.state) {
	case TCP_ST_CONNECTING:
		return;		/* SYN retransmission: still connecting */
	case TCP_ST_SYN_TO_GUEST: {
		uint16_t mss;
		int ws;

		if ((flags & (TCP_SYN | TCP_ACK)) != (TCP_SYN | TCP_ACK) ||
		    ack != conn->seq_isn + 1)
			return;
		tcp_parse_syn_opts(opts, &mss, &ws);
		conn->mss = MIN(mss, tcp_mss_link(c, p->family));
		if (ws >= 0) {
			conn->flags |= TCP_F_WS;
			conn->ws_guest = (uint8_t)ws;
		} else {
			conn->ws_ours = 0;
		}
		conn->seq_from_guest = seq + 1;
		conn->seq_acked = ack;
		conn->wnd_guest = win;
		tcp_ack_now(c, conn);
		tcp_established(conn);
		tcp_data_to_guest(c, conn);
		return;
	}
	case TCP_ST_SYNACK_TO_GUEST:
		if (flags & TCP_SYN) {
			tcp_send_ctl(c, conn, TCP_SYN | TCP_ACK, conn->seq_isn);
			return;
		}
		if (!(flags & TCP_ACK) || ack != conn->seq_isn + 1)
			return;
		conn->seq_acked = ack;
		conn->wnd_guest = (uint32_t)win << conn->ws_guest;
		tcp_established(conn);
		/* The ACK may carry data or FIN already */
		tcp_input_established(c, conn, seq, ack, flags,
				      (uint32_t)win << conn->ws_guest, payload,
				      p, true);
		return;
	case TCP_ST_ESTABLISHED:
		tcp_input_established(c, conn, seq, ack, flags,
				      (uint32_t)win << conn->ws_guest, payload,
				      p, false);
		return;
	}
}

/**
 * tcp_sock_handler() - events on a connection's socket
 * @c:		execution context
 * @ref:	epoll reference: flow index and fd
 * @events:	epoll events
 */
void tcp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	union flow *flow = flow_from_ref(ref, FLOW_TCP);
	struct tcp_conn *conn = flow ? &flow->tcp : NULL;
	int e = 0;
	socklen_t sl = sizeof(e);

	/* A held socket is out of the loop: this event was queued before */
	if (!conn || conn->sock < 0 || (conn->flags & TCP_F_MIGRATED))
		return;

	if (conn->f.state == TCP_ST_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(conn->sock, SOL_SOCKET, SO_ERROR, &e, &sl) ||
		    e) {
			tcp_connect_failed(c, conn, e ? e : errno);
			return;
		}
		tcp_connect_done(c, conn);
		return;
	}

	if (events & (EPOLLERR | EPOLLHUP)) {
		getsockopt(conn->sock, SOL_SOCKET, SO_ERROR, &e, &sl);
		if (e || (events & EPOLLERR)) {
			trace("TCP flow %u: socket error %s", tcp_idx(conn),
			      strerror(e));
			tcp_rst(c, conn);
			return;
		}
		conn->flags |= TCP_F_SOCK_EOF;	/* HUP after both FINs */
	}
	if (events & EPOLLRDHUP)
		conn->flags |= TCP_F_SOCK_EOF;

	if ((events & EPOLLOUT) && (conn->flags & TCP_F_TAIL)) {
		int rc = tcp_migrate_tail(conn);

		if (rc < 0) {
			tcp_desync(c, conn, "writing migrated data", -rc);
			return;
		}
		if (!rc)
			events &= ~EPOLLOUT;	/* still waiting for room */
		else
			conn->flags |= TCP_F_OUT_WAIT;	/* update below */
		if (rc && tcp_maybe_done(c, conn))
			return;
	}
	if ((events & EPOLLOUT) && (conn->flags & TCP_F_OUT_WAIT)) {
		conn->flags &= ~TCP_F_OUT_WAIT;
		tcp_conn_events(c, conn);
		/* Draining, the guest has sent all it will: its socket may
		 * be gone, and would answer an update with a RST
		 */
		if (conn->f.state == TCP_ST_ESTABLISHED &&
		    !(conn->flags & TCP_F_DRAINING))
			tcp_window_update(c, conn);
	}
	if (conn->f.state == TCP_ST_ESTABLISHED &&
	    (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
		tcp_data_to_guest(c, conn);
}

/**
 * tcp_listen_handler() - a peer connects to a forwarded port
 * @c:		execution context
 * @ref:	epoll reference: idx is the host port, fd the listener
 */
void tcp_listen_handler(struct ctx *c, union epoll_ref ref)
{
	int i;

	/* Queued before a migration stopped the listeners (tcp/migrate.c) */
	if (tcp_migrate_listen_paused())
		return;
	for (i = 0; i < 32; i++) {
		union sockaddr_inany peer;
		socklen_t sl = sizeof(peer);
		union inany_addr gsrc, gdst;
		struct tcp_conn *conn;
		struct flow_key k;
		union flow *flow;
		uint16_t gport;
		int s, family;

		s = accept4(ref.fd, &peer.sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (s < 0)
			return;

		family = fwd_nat_inbound(c, &peer, &gsrc);
		if (family < 0 || !fwd_guest_addr(c, family, &gdst) ||
		    c->no_tcp) {
			debug_rl("TCP: inbound connection can't be mapped");
			close(s);
			continue;
		}
		gport = fwd_port_target(&c->tcp_fwd, FWD_REF_PORT(ref.idx));
		flow_key_set(&k, FLOW_TCP, family, &gdst, gport, &gsrc,
			     sockaddr_port(&peer));
		if (flow_hash_lookup(&k) || !(flow = flow_alloc())) {
			warn_rl("TCP: flow table full or duplicate, "
				"refusing inbound connection");
			close(s);
			continue;
		}
		conn = &flow->tcp;
		conn->f.type = FLOW_TCP;
		conn->f.key = k;
		conn->sock = s;
		conn->flags = TCP_F_INBOUND;
		conn->mss = tcp_mss_link(c, family);
		conn->ws_ours = TCP_WS_OURS;
		conn->seq_isn = tcp_isn(&k);
		conn->seq_to_guest = conn->seq_isn + 1;
		conn->seq_acked = conn->seq_isn;
		conn->f.state = TCP_ST_SYN_TO_GUEST;
		conn->last_ms = now_ms();
		tcp_sock_tune(s);
		if (flow_hash_insert(flow) ||
		    loop_add(c, s, EPOLLIN | EPOLLRDHUP | EPOLLET,
			     flow_ref(flow, REF_TCP))) {
			tcp_close(c, conn, true);
			continue;
		}
		tcp_send_ctl(c, conn, TCP_SYN, conn->seq_isn);
		tcp_timer_arm(conn, conn->last_ms);
	}
}

/**
 * tcp_timer() - retransmissions, handshake deadlines, idle connections
 * @c:		execution context
 * @now:	current time, ms
 */
void tcp_timer(struct ctx *c, uint64_t now)
{
	unsigned i, span = flow_span();

	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!conn || (conn->flags & TCP_F_MIGRATED))
			continue;
		if (now - conn->last_ms > TCP_IDLE_MS) {
			debug_rl("TCP flow %u: idle, reset", i);
			tcp_rst(c, conn);
			continue;
		}
		if (!conn->timer || now < conn->timer)
			continue;

		switch (conn->f.state) {
		case TCP_ST_CONNECTING:
			tcp_connect_failed(c, conn, ETIMEDOUT);
			continue;
		case TCP_ST_SYN_TO_GUEST:
			if (++conn->retries > TCP_SYN_RETRIES) {
				tcp_close(c, conn, true);
				continue;
			}
			tcp_send_ctl(c, conn, TCP_SYN, conn->seq_isn);
			break;
		case TCP_ST_SYNACK_TO_GUEST:
			if (++conn->retries > TCP_SYN_RETRIES) {
				tcp_rst(c, conn);
				continue;
			}
			tcp_send_ctl(c, conn, TCP_SYN | TCP_ACK, conn->seq_isn);
			break;
		case TCP_ST_ESTABLISHED:
			if (conn->flags & TCP_F_DRAINING) {
				if (!tcp_maybe_done(c, conn))
					conn->timer = now + TCP_DRAIN_MS;
				continue;
			}
			if (conn->seq_acked == conn->seq_to_guest) {
				conn->timer = 0;
				continue;
			}
			if (++conn->retries > TCP_MAX_RETRIES) {
				debug_rl("TCP flow %u: guest not ACKing, reset",
				      i);
				tcp_rst(c, conn);
				continue;
			}
			if (tcp_rewind(c, conn))
				continue;
			break;
		}
		tcp_timer_arm(conn, now);
	}
}

/* Connections that waited for room to the guest check themselves whether
 * their segments fit now, if there's a fair amount of room
 */
static void tcp_resume_blocked(struct ctx *c)
{
	unsigned i, span;

	if (!tcp_blocked_any || tap_tx_room(c) < TCP_RESUME_ROOM)
		return;
	tcp_blocked_any = false;
	span = flow_span();
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (conn && (conn->flags & TCP_F_BLOCKED) &&
		    !(conn->flags & TCP_F_MIGRATED)) {
			conn->flags &= ~TCP_F_BLOCKED;
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
	unsigned i;

	for (i = 0; i < defer_count; i++) {
		struct tcp_conn *conn = tcp_conn_at(defer_list[i]);

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
	if (tap_rx_kicks(c, tcp_blocked_any))
		tcp_resume_blocked(c);

	/* Last, when no socket can be closed any more in this round: the
	 * ACKed bytes go, with io_uring all at once (uring_flush())
	 */
	for (i = 0; i < defer_count; i++) {
		struct tcp_conn *conn = tcp_conn_at(defer_list[i]);

		if (!conn)
			continue;
		conn->flags &= ~TCP_F_DEFERRED;	/* even if listed again above */
		if (conn->acked_unread && tcp_discard_due(conn))
			tcp_sock_discard(c, conn);
		tcp_quiet(c, conn);
	}
	defer_count = 0;
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
