// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcp.c - TCP translation: the guest's TCP connections become ordinary
 * sockets of our namespace, and connections to forwarded ports become
 * connections to the guest. This file owns the state machine (the guest's
 * segments dispatched by state, the socket's events) and the timers;
 * connect.c opens connections, to_guest.c and from_guest.c carry the
 * data, close.c ends them, seg.c builds the segments without payload
 * (SYN, ACK, FIN, RST), window.c says the window, conn.c is the
 * connection itself.
 *
 * Theory of operation
 *
 * We terminate the guest's TCP ourselves, with a deliberately small state
 * machine, and let the kernel run the real TCP towards the peer. The two
 * halves are glued without buffering any payload in our memory:
 *
 *  socket -> guest (to_guest.c): data stays in the socket's receive queue
 *	until the guest ACKs it, and is peeked straight into the front-end's
 *	frames; the queue IS the retransmission buffer.
 *
 *  guest -> socket (from_guest.c): in-order segments are written to the
 *	socket, and we ACK to the guest exactly what the kernel took, never
 *	more; the window we advertise is the room the kernel is sure to have.
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
 *	again once it can go, or goes with the migration (seg.c).
 *
 * A connection restored by a migration may have to write data the source
 * had queued before anything new from the guest (TCP_F_TAIL, see
 * tcp/kept.c), and so does one whose socket refused data we kept
 * (TCP_F_TAIL | TCP_F_KEPT, tcp/kept.c): meanwhile the window towards the
 * guest is 0, its FIN waits, and EPOLLOUT drives tcp_kept_write().
 * A connection a migration holds (TCP_F_MIGRATED: its socket deaf, out of
 * the loop, maybe in repair mode) takes nothing from the guest, which runs
 * elsewhere, or will; unless the guest runs here (TCP_F_GUEST_HERE: the
 * migration failed, or the connection was restored here, and the repair
 * helper that would take the socket out of repair mode is late): then its
 * data is kept and ACKed as above (from_guest.c, tcp_data_held()).
 *
 * Timers (checked every loop tick): retransmission to the guest (RTO
 * starting at TCP_RTO_MS, doubling: conn.c; TCP_MAX_RETRIES then reset),
 * the handshake deadlines, and an idle timeout. A full connection table makes
 * us refuse new connections with RST (logged, rate-limited); half-open
 * connections and descriptors are reclaimed as connect.c says.
 *
 * Epoll: sockets are edge-triggered for input, because data we peeked and
 * are waiting to have ACKed stays readable; progress after an ACK or a
 * window update is driven from the guest side instead. EPOLLOUT is armed
 * only while connecting or when the guest waits for send-buffer room.
 * While the guest has much in flight, input events are off altogether
 * (to_guest.c, tcp_quiet()). EPOLLRDHUP, EPOLLERR and EPOLLHUP always
 * stay on, and the retransmission timer runs as ever.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/connect.h"
#include "tcp/from_guest.h"
#include "tcp/kept.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/tcp.h"
#include "tcp/to_guest.h"
#include "tcp/window.h"
#include "util.h"

#define TCP_MAX_RETRIES 7		/* then reset both sides */
#define TCP_SYN_RETRIES 4		/* SYN to guest, then give up */
#define TCP_IDLE_MS (2 * 3600 * 1000ULL)

/* tcp_established() - handshake done, in either direction */
static void tcp_established(struct tcp_conn *conn)
{
	conn->f.state = TCP_ST_ESTABLISHED;
	conn->retries = 0;
	conn->timer = 0;
	flow_trace(conn, "established");
}

/**
 * tcp_input_established() - segment from the guest on an established
 *			      connection: its ACK (to_guest.c), then its data
 *			      and FIN (from_guest.c), then more for the guest
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
static void tcp_input_established(struct ctx *c, struct tcp_conn *conn,
				  uint32_t seq, uint32_t ack, uint8_t flags,
				  uint32_t wnd, struct pview payload,
				  const struct pkt *p, bool progress)
{
	bool bare = !payload.len && !p->tail_len && !(flags & TCP_FIN);
	int rc;

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

	if ((rc = tcp_ack_from_guest(c, conn, ack, wnd, bare)) < 0)
		return;
	if (tcp_data_from_guest(c, conn, seq, flags, payload, p) &&
	    (progress || rc))
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
	if ((conn->flags & TCP_F_MIGRATED) &&
	    !(conn->flags & TCP_F_GUEST_HERE))
		return;		/* the guest runs elsewhere now, or will */
	conn->last_ms = (uint32_t)now_ms();
	conn->f.qpair = tap_queue_in();
	if (conn->flags & TCP_F_MIGRATED) {
		/* Held while the guest runs here: its data waits, kept */
		tcp_data_held(c, conn, seq, ack, flags,
			      (uint32_t)win << conn->ws_guest, payload, p);
		return;
	}

	if (flags & TCP_RST) {
		/* Accept only an RST inside what we expect (RFC 5961 lite) */
		if (conn->f.state == TCP_ST_SYN_TO_GUEST ||
		    (SEQ_GE(seq, conn->seq_from_guest) &&
		     SEQ_LT(seq, conn->seq_from_guest + 65536U * 16))) {
			flow_trace(conn, "RST from guest");
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
		conn->wnd_adv = conn->seq_from_guest;
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
		/* Our SYN-ACK, or more: a connection restored as one in its
		 * handshake may be past it at the guest (tcpm_handshake() in
		 * tcp/migrate_dst.c can't tell from another source's record),
		 * whose ACK then counts what it had before the migration. The
		 * data after seq_isn + 1 goes to it again, the ACK past it
		 * taken as any restored connection's
		 */
		if (!(flags & TCP_ACK) || SEQ_LT(ack, conn->seq_isn + 1))
			return;
		conn->seq_acked = conn->seq_isn + 1;
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
			flow_trace(conn, "socket error %s", strerror(e));
			tcp_rst(c, conn);
			return;
		}
		conn->flags |= TCP_F_SOCK_EOF;	/* HUP after both FINs */
	}
	if (events & EPOLLRDHUP)
		conn->flags |= TCP_F_SOCK_EOF;

	if ((events & EPOLLOUT) && (conn->flags & TCP_F_TAIL)) {
		int rc = tcp_kept_write(conn);

		if (rc < 0) {
			tcp_desync(c, conn, (conn->flags & TCP_F_KEPT) ?
					    "writing refused data" :
					    "writing migrated data", -rc);
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
 * tcp_log_conns() - each connection's state, at debug level (SIGUSR1): where
 *		     a transfer that stopped moving stands on our side
 */
void tcp_log_conns(void)
{
	unsigned i, span = flow_span();
	uint64_t now = now_ms();

	if (log_level < LOG_LVL_DEBUG)
		return;
	for (i = 0; i < span; i++) {
		const struct tcp_conn *conn = tcp_conn_at(i);

		if (!conn)
			continue;
		flow_dbg(conn, "state %u flags 0x%x; from guest: next %u, "
			 "window left %d of %u (ratio %u/65536), offered now "
			 "%u; to guest: %u in flight, window %u, %u ACKed "
			 "unread; timer %lld ms, retries %u", conn->f.state,
			 conn->flags, conn->seq_from_guest,
			 (int32_t)(conn->wnd_edge - conn->seq_from_guest),
			 conn->wnd_span, conn->wnd_ratio,
			 conn->sock >= 0 ? (unsigned)tcp_wnd_offered(conn) <<
					   conn->ws_ours : 0,
			 conn->seq_to_guest - conn->seq_acked, conn->wnd_guest,
			 conn->acked_unread,
			 conn->timer ? (long long)(conn->timer - now) : 0LL,
			 conn->retries);
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
		if ((uint32_t)now - conn->last_ms > TCP_IDLE_MS) {
			flow_dbg_rl(conn, "idle, reset");
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
				flow_dbg_rl(conn, "guest not ACKing, reset");
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
