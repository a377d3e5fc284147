// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * connect.c - TCP connection set-up: a guest SYN becomes a non-blocking
 * connect() (tcp_conn_from_guest()), a peer's connection to a forwarded
 * port becomes a SYN to the guest (tcp_listen_handler()), and the
 * half-open connections and descriptors they use are reclaimed.
 *
 * Theory of operation
 *
 * Both directions get a flow entry keyed by the guest's four-tuple, an
 * ISN of our own (RFC 6528), the MSS the link allows (and the guest's, if
 * less), and window scaling when the guest offers it; the state machine
 * (tcp.c) takes over from there.
 *
 * Reclaim (see flow.c): at most TCP_HALF_OPEN_MAX connections opened by
 * the guest are half-open (our connect() to the remote in progress); a
 * SYN beyond that resets the oldest of them. A SYN that finds no
 * descriptor left closes the least recently used UDP or ICMP echo flow,
 * or else the oldest half-open connection, and tries again.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "fwd/fwd.h"
#include "local/local.h"
#include "log.h"
#include "loop.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/connect.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/tcp.h"
#include "tcp/to_guest.h"
#include "util.h"

#define TCP_CONNECT_TIMEOUT_MS (60 * 1000)
#define TCP_HALF_OPEN_MAX 4096		/* guest connections still waiting
					 * for the remote (see above) */

/* RFC 6528: ISN = M + F(4-tuple, secret), M a 4 µs timer */
static uint32_t tcp_isn(const struct flow_key *k)
{
	struct timespec ts;
	uint64_t m;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	m = ((uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec) >> 12;
	return (uint32_t)(flow_key_hash(k) + m);
}

/**
 * tcp_parse_syn_opts() - options of a guest SYN or SYN-ACK: MSS and window
 *			  scale
 * @opts:	the options
 * @mss:	set to the MSS, 536 if absent
 * @ws:		set to the window scale, -1 if absent
 */
void tcp_parse_syn_opts(struct pview opts, uint16_t *mss, int *ws)
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

/**
 * tcp_mss_link() - largest payload the guest link carries, from the MTU
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 *
 * Return: MSS
 */
uint16_t tcp_mss_link(const struct ctx *c, int family)
{
	int mtu = c->mtu ? c->mtu : 1500;

	mtu = MIN(mtu, FRAME_MAX_LEN - ETH_HDR_LEN);
	mtu -= family == AF_INET ? IP4_HDR_LEN : IP6_HDR_LEN;
	return (uint16_t)(mtu - TCP_HDR_LEN);
}

/**
 * tcp_sock_tune() - options of a new connection's socket: no Nagle, urgent
 *		     data kept in the stream, and the peek offset where
 *		     there is one
 * @s:		socket
 *
 * We don't carry urgent data as such to the guest: it is a byte of the
 * stream like any other. Without SO_OOBINLINE the kernel takes it out of
 * the stream (a read steps over it) and SIOCINQ stops at it, so the guest
 * would miss it, and a migration would dump the receive queue up to it.
 */
void tcp_sock_tune(int s)
{
	int one = 1, zero = 0;

	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one));
	if (tcp_peek_offset_ok)
		setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero));
}

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
	flow_dbg_rl(conn, "oldest half-open connection reset for a new one");
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

/**
 * tcp_half_open_pop() - take the oldest entry off the half-open list
 * @c:		execution context
 *
 * Resets it if the remote still hasn't answered, or else sends the guest the
 * SYN-ACK it is due.
 *
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

/**
 * tcp_conn_from_guest() - guest SYN: open a socket and start connecting
 * @c:		execution context
 * @p:		the SYN
 * @k:		its flow key
 * @seq:	its sequence number
 * @opts:	its TCP options
 */
void tcp_conn_from_guest(struct ctx *c, const struct pkt *p,
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
	conn->f.qpair = tap_queue_in();
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
	conn->wnd_adv = conn->seq_from_guest;	/* no window advertised yet */
	conn->seq_isn = tcp_isn(k);
	conn->seq_to_guest = conn->seq_isn;
	conn->seq_acked = conn->seq_isn;
	conn->f.state = TCP_ST_CONNECTING;
	conn->timer = now_ms();
	conn->last_ms = (uint32_t)conn->timer;
	conn->timer += TCP_CONNECT_TIMEOUT_MS;
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
	flow_trace(conn, "connecting");
}

/**
 * tcp_connect_failed() - connect() failed: RST, or ICMP error if
 *			  unreachable
 * @c:		execution context
 * @conn:	connection, gone on return
 * @e:		connect()'s errno
 */
void tcp_connect_failed(struct ctx *c, struct tcp_conn *conn, int e)
{
	flow_dbg_rl(conn, "connect: %s", strerror(e));
	if (e == EHOSTUNREACH || e == ENETUNREACH || e == EACCES ||
	    e == EPERM)
		local_unreach(c, conn->f.key.family, IPPROTO_TCP,
			      tcp_gaddr(conn), conn->f.key.gport,
			      tcp_raddr(conn), conn->f.key.rport,
			      conn->seq_from_guest - 1, e);
	else
		tcp_send_ctl(c, conn, TCP_RST | TCP_ACK, 0);
	tcp_close(c, conn, false);
}

/**
 * tcp_connect_done() - the remote answered: SYN-ACK to the guest
 * @c:		execution context
 * @conn:	connection
 */
void tcp_connect_done(struct ctx *c, struct tcp_conn *conn)
{
	tcp_conn_events(c, conn);
	conn->f.state = TCP_ST_SYNACK_TO_GUEST;
	conn->retries = 0;
	tcp_send_ctl(c, conn, TCP_SYN | TCP_ACK, conn->seq_isn);
	conn->seq_to_guest = conn->seq_isn + 1;
	conn->seq_acked = conn->seq_isn + 1;
	tcp_timer_arm(conn, now_ms());
}

/* Listeners of forwarded ports taking nothing, during a migration */
static bool tcp_listen_off;

/**
 * tcp_listen_pause() - forwarded ports stop taking connections, or take
 *			them again
 * @paused:	true from a migration's SAVE on (tcp_migrate_listen(), which
 *		also silences the listening sockets), false again after
 */
void tcp_listen_pause(bool paused)
{
	tcp_listen_off = paused;
}

/**
 * tcp_listen_paused() - do forwarded ports take no connections now?
 *
 * Return: true while tcp_listen_pause() says so
 */
bool tcp_listen_paused(void)
{
	return tcp_listen_off;
}

/**
 * tcp_listen_handler() - a peer connects to a forwarded port
 * @c:		execution context
 * @ref:	epoll reference: idx is the host port, fd the listener
 */
void tcp_listen_handler(struct ctx *c, union epoll_ref ref)
{
	int i;

	/* Queued before a migration stopped the listeners (migrate_src.c) */
	if (tcp_listen_paused())
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
		conn->timer = now_ms();	/* armed below */
		conn->last_ms = (uint32_t)conn->timer;
		tcp_sock_tune(s);
		if (flow_hash_insert(flow) ||
		    loop_add(c, s, EPOLLIN | EPOLLRDHUP | EPOLLET,
			     flow_ref(flow, REF_TCP))) {
			tcp_close(c, conn, true);
			continue;
		}
		tcp_send_ctl(c, conn, TCP_SYN, conn->seq_isn);
		tcp_timer_arm(conn, conn->timer);
	}
}
