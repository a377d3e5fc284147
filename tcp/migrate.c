// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate.c - moving established TCP connections to another instance
 * (live migration, vhost-user mode), with TCP_REPAIR.
 *
 * Theory of operation
 *
 * Our connections keep no payload of their own: the socket's receive
 * queue holds what the guest hasn't ACKed yet (from seq_acked on), the
 * send queue what the peer hasn't. So a connection is its flow entry plus
 * its socket's queues and TCP state, and TCP_REPAIR lets us read both
 * queues and the state out of the kernel and write them into a new
 * socket elsewhere (see doc/migration.md for the stream).
 *
 * Whatever can't be moved ends the way it really ended: a connection
 * reset or timed out before the dump goes out as a skip record, which
 * the target turns into a RST to the guest; one that completed after the
 * state was taken, or all of them when there is no TCP_REPAIR, is reset
 * towards its peer when the source's linger ends (a FIN would tell the
 * peer that the guest closed it, and a cut upload would look complete).
 *
 * Source (tcp_migrate_source_hold(), then _write()):
 *  0. from the SAVE on, the listening sockets of forwarded ports take
 *     nothing (tcp_migrate_listen()): no accept(), and they drop SYNs
 *     (IP_MINTTL 255, and the drop-all filter where the kernel lets us),
 *     so that a peer's SYN is sent again until it reaches the target. A
 *     connection accepted here could only be reset.
 *  1. every ESTABLISHED connection is taken out of the loop, and made
 *     deaf: a socket filter that drops every incoming segment (by us, or,
 *     on kernels that want CAP_NET_ADMIN for that, by passt-repair with
 *     TCP_REPAIR; SO_GET_FILTER tells which one we have), and IP_MINTTL
 *     (IPV6_MINHOPCOUNT) 255, which any process may set and which drops
 *     every segment that crossed a router or came from a host with the
 *     usual initial TTL. From then on the kernel neither ACKs what the
 *     peer sends (a socket in repair mode would) nor answers it with a
 *     RST: the peer retransmits until the fabric delivers to the target.
 *     The flow is marked TCP_F_MIGRATED. An event already queued for it
 *     is ignored (tcp.c).
 *  2. TCP_REPAIR goes on for all of them (migrate/repair.c). A socket that
 *     still owes its peer a delayed ACK leaves repair mode for a moment
 *     (tcpm_flush_acks()): the kernel's timer would send that ACK later,
 *     from the source, repair mode or not. Then each socket's send window
 *     is closed (TCP_REPAIR_WINDOW, snd_wnd 0; the value is kept for the
 *     dump and a resume): repair mode doesn't stop the kernel from
 *     sending new data by itself, when earlier segments leave a queue
 *     (TCP small queues) or the pacing timer fires, and data sent after
 *     the dump is data the target believes never sent: the peer's ACKs
 *     for it would be beyond anything the target sent, which the target
 *     drops, and the connection would stall for good (seen through a
 *     4 Mbit/s link with 2 s of queue). Then the TCP state of each is
 *     read first (TCP_INFO), because the state says what the loop may
 *     not have seen yet: a FIN the kernel took after our last look is in
 *     tcpi_state, not in our flags, and a socket reset or timed out
 *     meanwhile is in CLOSE with an error. The FIN flags of the record
 *     come from the state; a dead socket gets a skip record. Then each
 *     socket is dumped: TCP_INFO, MSS, timestamp, window, both queues and
 *     their sequence numbers. Towards the guest, what it hasn't ACKed is
 *     written as never sent, so any target sends it again at once. The
 *     socket stays open, in repair mode and deaf: that is the linger.
 *  3. If the migration fails (QEMU restarts the device here), the held
 *     connections come back (tcp_migrate_source_resume()): repair off,
 *     filter and TTL limit off, back in the loop, the peek offset where it
 *     was; the listeners take connections again.
 *  4. When the linger ends, the held sockets are closed still in repair
 *     mode (tcp_migrate_source_release()): the kernel sends nothing, no
 *     FIN, no RST. Every other connection is reset (see above).
 *
 * Target, at the LOAD (tcp_migrate_target()): for each flow of a stream
 * that parsed and validated as a whole, a socket is made, put in repair
 * mode and made deaf, given the MSS as TCP_MAXSEG (the kernel sizes its
 * segments at connect() from the MSS clamp, and TCP_REPAIR_OPTIONS sets
 * the clamp but never sizes them again: without it they would stay at
 * the default 536 bytes less options for good), bound to the original
 * local address and port, given the timestamp and the sequence numbers,
 * and connected (no SYN in repair mode). Nothing more yet: the connection
 * is "parked" (TCP_F_PARKED), out of the loop. Until the guest runs here,
 * the migration may still fail and the source resume the guest: a parked
 * socket sends nothing at all (no window probe, no data, no timer), and
 * if the front-end goes away first, or the process ends, it is closed in
 * repair mode, which sends nothing either. A live socket closed there
 * would send the peer a FIN or a RST, with exact sequence numbers, and
 * tear down the connection the source just resumed.
 *
 * Target, when the guest runs (the first ring start after the LOAD,
 * tcp_migrate_target_release()): each parked socket is given its
 * options (window scales, MSS, SACK, timestamps) first, then its queues:
 * the receive queue, and the part of the send queue that was sent and
 * not acknowledged, which in repair mode counts as sent already. That
 * part must all go in now: the peer's acknowledgements would cover it,
 * and an acknowledgement beyond what a socket has sent is dropped. It
 * fits in the send buffer a new socket gets from autotuning unless the
 * source had more in flight than that (a long fat path): then, and only
 * then, the buffer is set with SO_SNDBUF, which caps it at twice
 * net.core.wmem_max and keeps it at that size (no autotuning for that
 * connection). Then FIN_WAIT2's FIN (shutdown() in repair mode), the
 * window, and repair mode off for all of them (the kernel sends a
 * window probe: the peer's answer gets both ends in step). The part of
 * the send queue never sent goes in after that, as ordinary data: as
 * much as the socket takes. A socket's send buffer grows by autotuning
 * (tcp_wmem) over the connection's life, and the source's may hold far
 * more than a new socket, or SO_SNDBUF, can (twice net.core.wmem_max:
 * 416 KiB with Debian's default): what doesn't fit is kept (TCP_F_TAIL)
 * and written as the socket drains (EPOLLOUT), before anything new from
 * the guest, whose window stays closed until then, and its FIN waits
 * too. That is the one place where we keep payload in our memory: the
 * bytes came in the migration's stream, the guest has let go of them
 * (the source ACKed them), and the only other place they could wait is
 * a send buffer that the kernel won't make that large. They are written
 * out, never added to. Then FIN_WAIT1, CLOSING and LAST_ACK get their FIN
 * again, the flow goes in the loop and resumes from the first byte the
 * guest hasn't ACKed. A flow that fails before its socket leaves repair
 * mode is closed in repair mode (nothing to the peer) and reset towards
 * the guest; the others go on.
 *
 * Target, after the release (tcp_migrate_poke_timer(), _poke()): the
 * fabric may keep delivering the peer's segments to the source for a
 * while, where they are dropped, and both ends back their retransmission
 * timers off meanwhile. So each restored socket is "poked" for a bounded
 * time: TCP_REPAIR on and off again, which makes the kernel send a window
 * probe (an ACK with an old sequence number). The peer must answer it with
 * an ACK: once the fabric has switched, that ACK reaches us, acknowledges
 * what the peer got, and our sender goes on at once instead of waiting
 * for its own backed-off timer. Pokes come every TCPM_POKE_MS (longer
 * than the peer's rate limit for such answers, tcp_invalid_ratelimit)
 * for TCPM_POKE_FAST_MS, then less and less often until TCPM_POKE_FOR_MS,
 * and stop for a socket as soon as anything from its peer has arrived.
 * SIGUSR2 on the target (the launcher: "the fabric has switched") pokes
 * at once, and once more after the peer's rate limit.
 *
 * Sequence numbers and FINs, as upstream passt writes and reads them
 * (checked against its binary and the wire, migrate_interop.sh): queue
 * lengths are data bytes only. Our FIN is in SIOCOUTQ while it isn't
 * ACKed (one less then); seq_snd is always snd_una, so in FIN_WAIT2 it
 * is one past the FIN, and the target queues the FIN again (shutdown()
 * in repair mode) at seq_snd - 1. The peer's FIN is never in SIOCINQ,
 * but it is in TCP_QUEUE_SEQ (rcv_nxt): seq_rcv = rcv_nxt - SIOCINQ is
 * one past the first unread byte in CLOSE_WAIT, LAST_ACK and CLOSING,
 * and rcv_wup is written one less (rcv_wnd one more) to stay within the
 * restored rcv_nxt. A socket that went from FIN_WAIT2 or LAST_ACK to
 * CLOSE cleanly (both FINs exchanged, ours acknowledged) is written as
 * FIN_WAIT2 with the peer's FIN received, which is what it was a moment
 * before: the target delivers what is left and both FINs to the guest.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "log.h"
#include "loop.h"
#include "migrate/format.h"
#include "migrate/repair.h"
#include "tcp/migrate.h"
#include "tcp/tcp_internal.h"
#include "util.h"

#ifndef TCP_REPAIR_WINDOW
#define TCP_REPAIR_WINDOW 29
#endif
#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT 73
#endif

/* Our own copies of the kernel's repair structures (uapi linux/tcp.h) */
struct tcpm_opt {
	uint32_t code, val;
};

struct tcpm_window {
	uint32_t snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;
};

#define TCPM_OPT_MSS		2
#define TCPM_OPT_WINDOW		3
#define TCPM_OPT_SACK_PERM	4
#define TCPM_OPT_TIMESTAMP	8

#define TCPM_QUEUE_NONE	0
#define TCPM_QUEUE_RECV	1
#define TCPM_QUEUE_SEND	2

/* Linux TCP states we look at beyond the migrated ones (tcpi_state) */
#define TCPM_TCP_CLOSE	7

/* Largest MSS TCP_MAXSEG takes (the kernel's MAX_TCP_WINDOW) */
#define TCPM_MAXSEG_MAX	32767

/* Largest piece written into a queue in one call (halved on ENOBUFS) */
#define TCPM_CHUNK	(64 * 1024)
#define TCPM_CHUNK_MIN	1024

/* Segments with a lower TTL (hop limit) are dropped: all but a peer's on
 * the same link that sends with the largest one (IP_MINTTL, RFC 5082)
 */
#define TCPM_DEAF_TTL	255

/* Target: poking the peers of restored sockets (see the top of the file) */
#define TCPM_POKE_MS		600	/* > the peer's 500 ms rate limit */
#define TCPM_POKE_LIMIT_MS	520	/* that limit (tcp_invalid_ratelimit) */
#define TCPM_POKE_FAST_MS	5000	/* every TCPM_POKE_MS until then */
#define TCPM_POKE_SLOW_MS	4000	/* the longest interval after that */
#define TCPM_POKE_FOR_MS	30000	/* no poke after this */

struct tcpm_poked {
	unsigned idx;			/* flow index */
	int sock;			/* its socket when restored */
};

static struct {
	struct tcpm_poked *p;
	unsigned n;
	uint64_t start, next, interval, again, last;
} tcpm_poke;

static void tcpm_poke_start(const int *fds, const unsigned *idx, unsigned n);

/**
 * struct tcpm_parked - target: a connection restored at the LOAD, waiting
 *			for the guest to run here (see
 *			tcp_migrate_target_release())
 * @idx:	flow index; TCPM_NO_FLOW if it failed at the LOAD (then only
 *		the guest is told, with a RST, at the release)
 * @gen:	flow generation, against reuse
 * @f:		its records and queues, in the stream we keep meanwhile
 */
struct tcpm_parked {
	unsigned idx;
	uint32_t gen;
	const struct mig_flow_in *f;
};
#define TCPM_NO_FLOW	(~0U)

/* Target: the stream and what it restored, until the release */
static struct {
	uint8_t *buf;			/* the stream: queues point in it */
	struct mig_flow_in *flows;	/* parsed records */
	struct tcpm_parked *p;
	unsigned n;
} tcpm_park;

/**
 * struct tcpm_tail - never-sent data from a migration that the socket
 *		      couldn't take yet (TCP_F_TAIL): written as it drains
 * @idx:	flow index
 * @gen:	flow generation
 * @p:		the bytes (ours: copied out of the stream)
 * @len:	how many
 * @off:	how many of them are written
 * @fin:	shutdown(SHUT_WR) once they all are
 */
struct tcpm_tail {
	unsigned idx;
	uint32_t gen;
	uint8_t *p;
	uint32_t len, off;
	bool fin;
};

static struct tcpm_tail *tcpm_tails;
static unsigned tcpm_ntails, tcpm_tails_cap;

/* Listeners of forwarded ports taking nothing (see the top of the file) */
static bool tcpm_listen_paused;

/**
 * struct tcpm_wnd - source: the send window of a held socket, which the
 *		     hold closes (see tcpm_shut_window())
 * @idx:	flow index
 * @gen:	flow generation
 * @snd_wnd:	the peer's window as it was
 */
struct tcpm_wnd {
	unsigned idx;
	uint32_t gen;
	uint32_t snd_wnd;
};

static struct tcpm_wnd *tcpm_wnds;
static unsigned tcpm_nwnds;

/* ret #0: the filter that drops every segment before TCP sees it */
static int tcpm_filter_attach(int s)
{
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = { .len = 1, .filter = &drop };

	return setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog)) ? -errno : 0;
}

/* Has @s a socket filter (ours, or the repair helper's)? */
static bool tcpm_filtered(int s)
{
	socklen_t len = 0;

	return !getsockopt(s, SOL_SOCKET, SO_GET_FILTER, NULL, &len) && len;
}

static void tcpm_filter_detach(int s)
{
	int zero = 0;

	setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof(zero));
}

/* The family of socket @s, AF_UNSPEC if unknown */
static int tcpm_family(int s)
{
	union sockaddr_inany sa;
	socklen_t sl = sizeof(sa);

	if (getsockname(s, &sa.sa, &sl))
		return AF_UNSPEC;
	return sa.sa.sa_family;
}

/*
 * Deaf or not: @on, drop every segment that doesn't come with the largest
 * TTL (hop limit) before TCP sees it; off, take them again. No privilege
 * needed, unlike a socket filter on some kernels. Return: 0 or -errno
 */
static int tcpm_deaf(int s, bool on)
{
	int v = on ? TCPM_DEAF_TTL : 0;

	if (tcpm_family(s) == AF_INET6)
		return setsockopt(s, IPPROTO_IPV6, IPV6_MINHOPCOUNT, &v,
				  sizeof(v)) ? -errno : 0;
	return setsockopt(s, IPPROTO_IP, IP_MINTTL, &v, sizeof(v)) ?
	       -errno : 0;
}

static int tcpm_queue(int s, int q)
{
	return setsockopt(s, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ?
	       -errno : 0;
}

static int tcpm_get_u32(int s, int opt, uint32_t *v)
{
	socklen_t sl = sizeof(*v);

	return getsockopt(s, IPPROTO_TCP, opt, v, &sl) ? -errno : 0;
}

static int tcpm_get_window(int s, struct tcpm_window *w)
{
	socklen_t sl = sizeof(*w);

	return getsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, w, &sl) ?
	       -errno : 0;
}

/* Is our FIN in the send queue's sequence space? */
static bool tcpm_fin_sent(uint8_t st)
{
	return st == MIG_TCP_FIN_WAIT1 || st == MIG_TCP_FIN_WAIT2 ||
	       st == MIG_TCP_CLOSING || st == MIG_TCP_LAST_ACK;
}

/* Has the peer's FIN been counted in the receive queue's? */
static bool tcpm_fin_rcvd(uint8_t st)
{
	return st == MIG_TCP_CLOSE_WAIT || st == MIG_TCP_LAST_ACK ||
	       st == MIG_TCP_CLOSING;
}

/* Is @st a state we can move (the extended record's states)? */
static bool tcpm_movable(uint8_t st)
{
	return st == MIG_TCP_ESTABLISHED || tcpm_fin_sent(st) ||
	       st == MIG_TCP_CLOSE_WAIT;
}

/*
 * What the kernel says of a held socket: its state as the stream will
 * carry it, and whether the peer's FIN is in it. A socket in CLOSE
 * without an error closed cleanly from FIN_WAIT2 or LAST_ACK (see the top
 * of the file): FIN_WAIT2 with the peer's FIN. Return: the state, or
 * MIG_TCP_SKIP if the socket can't be moved (reset, timed out, unknown)
 */
static uint8_t tcpm_sock_state(int s, bool *fin_rcvd)
{
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);
	int err = 0;

	*fin_rcvd = false;
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl) || !sl)
		return MIG_TCP_SKIP;
	if (ti.tcpi_state == TCPM_TCP_CLOSE) {
		sl = sizeof(err);
		if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &sl) || err)
			return MIG_TCP_SKIP;
		*fin_rcvd = true;
		return MIG_TCP_FIN_WAIT2;
	}
	if (!tcpm_movable(ti.tcpi_state))
		return MIG_TCP_SKIP;
	*fin_rcvd = tcpm_fin_rcvd(ti.tcpi_state);
	return ti.tcpi_state;
}

/* The address and port of a sockaddr, as a flowside stores them */
static void tcpm_side_set(struct in6_addr *a, uint16_t *port,
			  const union sockaddr_inany *sa)
{
	if (sa->sa.sa_family == AF_INET) {
		memset(a, 0, sizeof(*a));
		a->s6_addr[10] = a->s6_addr[11] = 0xff;
		memcpy(&a->s6_addr[12], &sa->sa4.sin_addr, 4);
		*port = ntohs(sa->sa4.sin_port);
	} else {
		*a = sa->sa6.sin6_addr;
		*port = ntohs(sa->sa6.sin6_port);
	}
}

/*
 * The peer of @conn's socket, if the socket can't tell any more (it was
 * reset): where we connected to, or whom we accepted, as the flow says
 */
static void tcpm_peer_of_flow(const struct ctx *c, const struct tcp_conn *conn,
			      union sockaddr_inany *peer)
{
	const struct in6_addr *ra = &conn->f.key.raddr;
	const void *a = conn->f.key.family == AF_INET ?
			(const void *)&ra->s6_addr[12] : (const void *)ra;

	if ((conn->flags & TCP_F_INBOUND) ||
	    fwd_nat_outbound(c, conn->f.key.family, a, conn->f.key.rport, peer))
		sockaddr_set(peer, conn->f.key.family, a, conn->f.key.rport);
}

/*
 * Basic record of a held connection (the flow, not the socket); @fin_rcvd:
 * the peer's FIN is in the socket's state
 */
static int tcpm_basic(const struct ctx *c, const struct tcp_conn *conn,
		      bool fin_rcvd, struct mig_tcp_basic *b)
{
	union sockaddr_inany local, peer;
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	int tap = (conn->flags & TCP_F_INBOUND) ? 1 : 0, host = !tap;
	int sndbuf = 0;
	socklen_t sl = sizeof(sndbuf);

	memset(b, 0, sizeof(*b));
	if (getsockname(conn->sock, &local.sa, &ll))
		return -errno;
	if (getpeername(conn->sock, &peer.sa, &pl))
		tcpm_peer_of_flow(c, conn, &peer);
	getsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl);

	/* The side that opened the connection comes first */
	b->pif[tap] = MIG_PIF_TAP;
	b->pif[host] = MIG_PIF_HOST;
	b->side[tap].eaddr = conn->f.key.gaddr;
	b->side[tap].eport = conn->f.key.gport;
	b->side[tap].oaddr = conn->f.key.raddr;
	b->side[tap].oport = conn->f.key.rport;
	tcpm_side_set(&b->side[host].oaddr, &b->side[host].oport, &local);
	tcpm_side_set(&b->side[host].eaddr, &b->side[host].eport, &peer);

	b->retries = MIN(conn->retries, 7);
	b->ws_from_tap = conn->ws_guest;
	b->ws_to_tap = conn->ws_ours;
	/* The state bits are exclusive, as upstream keeps them: with
	 * TAP_SYN_RCVD or SOCK_ACCEPTED next to ESTABLISHED, upstream's target
	 * takes the connection for one still in its handshake and resets it
	 * at the guest's first segment. Who opened it is in the pif order.
	 */
	b->events = MIG_EV_ESTABLISHED;
	if ((conn->flags & TCP_F_SOCK_EOF) || fin_rcvd)
		b->events |= MIG_EV_SOCK_FIN_RCVD;
	if (conn->flags & TCP_F_GUEST_FIN)
		b->events |= MIG_EV_TAP_FIN_RCVD | MIG_EV_SOCK_FIN_SENT;
	/* What the guest hasn't acknowledged is written as never sent, our
	 * FIN too, so that the target sends it all again at once: its ACK
	 * may have reached us after the state was taken, and upstream's
	 * target doesn't time what it believes in flight from a restore, so
	 * it would wait for an ACK the guest already sent
	 */
	if ((conn->flags & TCP_F_FIN_SENT) && (conn->flags & TCP_F_FIN_ACKED))
		b->events |= MIG_EV_TAP_FIN_SENT | MIG_EV_TAP_FIN_ACKED;
	b->tap_mss = conn->mss & ~3U;
	b->sndbuf = (uint32_t)(sndbuf > 0 ? sndbuf : 0) >> 8;
	b->wnd_from_tap = (uint16_t)MIN(conn->wnd_guest >> conn->ws_guest,
					65535U);
	b->wnd_to_tap = tcp_wnd_offered(conn);
	b->seq_to_tap = conn->seq_acked;
	b->seq_ack_from_tap = conn->seq_acked;
	b->seq_from_tap = conn->seq_from_guest;
	b->seq_ack_to_tap = conn->seq_from_guest;
	/* We don't keep the guest's ISN: any number before everything still
	 * to come from the guest serves where a reader compares with it
	 */
	b->seq_init_from_tap = conn->seq_from_guest - 1;
	return 0;
}

/*
 * Basic record for a RST the guest is owed (tcp.c, tcp_rst_owe()): the
 * connection is gone here, and goes as a skip record, so that the target
 * sends the RST. The HOST side is what it would be, as far as the flow
 * tells: the peer, and, for the local address, unspecified with the
 * guest's port (unique with the peer, as the real one was)
 */
static void tcpm_basic_owed(const struct ctx *c, const struct tcp_rst_owed *o,
			    struct mig_tcp_basic *b)
{
	int tap = o->inbound ? 1 : 0, host = !tap;
	struct tcp_conn tmp = { .sock = -1 };
	union sockaddr_inany local, peer;

	memset(b, 0, sizeof(*b));
	tmp.f.key = o->key;
	if (o->inbound)
		tmp.flags |= TCP_F_INBOUND;
	tcpm_peer_of_flow(c, &tmp, &peer);
	sockaddr_set(&local, o->key.family, o->key.family == AF_INET ?
		     (const void *)&(struct in_addr){ 0 } :
		     (const void *)&in6addr_any, o->key.gport);
	b->pif[tap] = MIG_PIF_TAP;
	b->pif[host] = MIG_PIF_HOST;
	b->side[tap].eaddr = o->key.gaddr;
	b->side[tap].eport = o->key.gport;
	b->side[tap].oaddr = o->key.raddr;
	b->side[tap].oport = o->key.rport;
	tcpm_side_set(&b->side[host].oaddr, &b->side[host].oport, &local);
	tcpm_side_set(&b->side[host].eaddr, &b->side[host].eport, &peer);
	b->events = MIG_EV_ESTABLISHED;
	b->seq_to_tap = b->seq_ack_from_tap = o->seq;
	b->seq_from_tap = b->seq_ack_to_tap = o->ack;
	b->seq_init_from_tap = o->ack - 1;
}

/* Read @len bytes of the selected queue (repair mode), exactly */
static int tcpm_peek(int s, uint8_t *buf, uint32_t len)
{
	ssize_t n;

	if (!len)
		return 0;
	n = recv(s, buf, len, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return (uint32_t)n == len ? 0 : -EIO;
}

/* The tail of never-sent data waiting for @conn's socket, NULL if none */
static struct tcpm_tail *tcpm_tail_of(const struct tcp_conn *conn)
{
	unsigned i, idx = flow_idx((const union flow *)conn);

	if (!(conn->flags & TCP_F_TAIL))
		return NULL;
	for (i = 0; i < tcpm_ntails; i++) {
		if (tcpm_tails[i].idx == idx &&
		    tcpm_tails[i].gen == conn->f.gen)
			return &tcpm_tails[i];
	}
	return NULL;
}

/* The peer's send window of a held @conn before the hold closed it */
static bool tcpm_saved_window(const struct tcp_conn *conn, uint32_t *wnd)
{
	unsigned i, idx = flow_idx((const union flow *)conn);

	for (i = 0; i < tcpm_nwnds; i++) {
		if (tcpm_wnds[i].idx == idx &&
		    tcpm_wnds[i].gen == conn->f.gen) {
			*wnd = tcpm_wnds[i].snd_wnd;
			return true;
		}
	}
	return false;
}

/*
 * Dump one held socket (repair mode) of @conn into @e and its queues
 * (malloc'd, the caller frees them), @st being its state as
 * tcpm_sock_state() gave it. Never-sent data still waiting in our memory
 * (TCP_F_TAIL: a migration came before it drained) goes at the end of the
 * send queue, as never sent, and its FIN with it. Return: 0 or -errno
 */
static int tcpm_dump(const struct tcp_conn *conn, uint8_t st,
		     struct mig_tcp_ext *e, uint8_t **sndq, uint8_t **rcvq)
{
	const struct tcpm_tail *tail = tcpm_tail_of(conn);
	uint32_t seq, mss, more = tail ? tail->len - tail->off : 0;
	int s = conn->sock, v, rc;
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);
	struct tcpm_window w;

	memset(e, 0, sizeof(*e));
	*sndq = *rcvq = NULL;
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl))
		return -errno;
	e->tcpi_state = st;
	e->tcpi_options = ti.tcpi_options;
	e->snd_ws = ti.tcpi_snd_wscale;
	e->rcv_ws = ti.tcpi_rcv_wscale;
	if ((rc = tcpm_get_u32(s, TCP_MAXSEG, &mss)))
		return rc;
	e->mss = mss;
	if ((ti.tcpi_options & TCPI_OPT_TIMESTAMPS) &&
	    (rc = tcpm_get_u32(s, TCP_TIMESTAMP, &e->timestamp)))
		return rc;
	if ((rc = tcpm_get_window(s, &w)))
		return rc;
	e->snd_wl1 = w.snd_wl1;
	e->snd_wnd = w.snd_wnd;
	tcpm_saved_window(conn, &e->snd_wnd);	/* the hold closed it */
	e->max_window = w.max_window;
	e->rcv_wnd = w.rcv_wnd;
	e->rcv_wup = w.rcv_wup;
	if (tcpm_fin_rcvd(st) || ti.tcpi_state == TCPM_TCP_CLOSE) {
		e->rcv_wup--;
		e->rcv_wnd++;
	}

	/* Send queue: its bytes, and where it starts */
	if ((rc = tcpm_queue(s, TCPM_QUEUE_SEND)))
		return rc;
	if (ioctl(s, SIOCOUTQ, &v))
		return -errno;
	e->sndq = (uint32_t)v;
	if (ioctl(s, SIOCOUTQNSD, &v))
		return -errno;
	e->notsent = (uint32_t)v;
	if ((rc = tcpm_get_u32(s, TCP_QUEUE_SEQ, &seq)))
		return rc;
	e->seq_snd = seq - e->sndq;
	/* A FIN not ACKed yet is the last thing in the queue: data only.
	 * Once it is ACKed (FIN_WAIT2), seq_snd is snd_una, one past the
	 * FIN, as upstream writes it: the target queues the FIN again at
	 * seq_snd - 1
	 */
	if (tcpm_fin_sent(ti.tcpi_state) && e->sndq) {
		e->sndq--;
		if (e->notsent)
			e->notsent--;
	}
	if ((uint64_t)e->sndq + more > MIG_QUEUE_MAX || e->notsent > e->sndq)
		return -E2BIG;
	if (e->sndq + more && !(*sndq = malloc(e->sndq + more)))
		return -ENOMEM;
	if ((rc = tcpm_peek(s, *sndq, e->sndq)))
		return rc;
	if (tail) {
		/* Ours, after the socket's: never sent, FIN behind them */
		memcpy(*sndq + e->sndq, tail->p + tail->off, more);
		e->sndq += more;
		e->notsent += more;
		if (tail->fin && e->tcpi_state == MIG_TCP_ESTABLISHED)
			e->tcpi_state = MIG_TCP_FIN_WAIT1;
		else if (tail->fin && e->tcpi_state == MIG_TCP_CLOSE_WAIT)
			e->tcpi_state = MIG_TCP_LAST_ACK;
	}

	/* Receive queue: what the guest hasn't ACKed yet */
	if ((rc = tcpm_queue(s, TCPM_QUEUE_RECV)))
		return rc;
	if (ioctl(s, SIOCINQ, &v))
		return -errno;
	e->rcvq = (uint32_t)v;
	if ((rc = tcpm_get_u32(s, TCP_QUEUE_SEQ, &seq)))
		return rc;
	/* SIOCINQ counts data bytes only (the kernel leaves the peer's FIN
	 * out), and TCP_QUEUE_SEQ is rcv_nxt, one past that FIN: seq_rcv is
	 * then one past the first unread byte, as upstream writes it, and
	 * the target's rcv_nxt, seq_rcv + rcvq, is the peer's snd_nxt
	 */
	e->seq_rcv = seq - e->rcvq;
	if (e->rcvq > MIG_QUEUE_MAX)
		return -E2BIG;
	if (e->rcvq && !(*rcvq = malloc(e->rcvq)))
		return -ENOMEM;
	if ((rc = tcpm_peek(s, *rcvq, e->rcvq)))
		return rc;
	tcpm_queue(s, TCPM_QUEUE_NONE);
	return 0;
}

/*
 * Does @s (in repair mode) owe its peer an ACK that a window probe can
 * clear? The kernel sets rcv_wup to rcv_nxt with every segment it sends,
 * so they differ exactly while data came in that no ACK has covered yet: a
 * delayed ACK is pending. The kernel sends probes in ESTABLISHED only
 */
static bool tcpm_ack_owed(int s)
{
	struct tcp_info ti;
	struct tcpm_window w;
	socklen_t sl = sizeof(ti);
	uint32_t rcv_nxt;
	bool owed;

	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl) ||
	    ti.tcpi_state != TCP_ESTABLISHED)
		return false;
	if (tcpm_queue(s, TCPM_QUEUE_RECV))
		return true;
	owed = tcpm_get_u32(s, TCP_QUEUE_SEQ, &rcv_nxt) ||
	       tcpm_get_window(s, &w) || w.rcv_wup != rcv_nxt;
	tcpm_queue(s, TCPM_QUEUE_NONE);
	return owed;
}

/*
 * Held sockets in repair mode may still owe their peer a delayed ACK, and
 * the kernel's timer sends it (pure ACKs don't look at repair mode) up to
 * 200 ms later: from the source, after the migration, advancing the peer's
 * snd_una. So those sockets leave repair mode once and go back in it:
 * TCP_REPAIR_OFF sends a window probe, and any segment sent counts as the
 * ACK owed, which clears the pending one. The probe's sequence number is
 * an old one, so the peer doesn't take its ACK (it answers with its own,
 * which the filter drops): what the ACK would have covered stays unacked
 * at the peer, to be sent again to the target.
 * The repair helper's "off" takes the drop-all filter away for that
 * moment: ours goes back at once (@refilter), and the helper's "on"
 * attaches it again. More data may come in meanwhile, hence the rounds.
 * Return: 0, or -errno from repair_set() (some may be out of repair mode)
 */
static int tcpm_flush_acks(struct ctx *c, int *fds, unsigned n,
			   bool refilter)
{
	unsigned i, k, round;
	int rc;

	for (round = 0; round < 3; round++) {
		for (i = 0, k = 0; i < n; i++) {
			if (tcpm_ack_owed(fds[i]))
				fds[k++] = fds[i];
		}
		if (!k)
			return 0;
		debug("Migration: %u held connection(s) owe an ACK, clearing "
		      "it with a window probe (round %u)", k, round + 1);
		if ((rc = repair_set(c, fds, k, REPAIR_OFF)))
			return rc;
		for (i = 0; refilter && i < k; i++) {
			if (!tcpm_filtered(fds[i]))
				tcpm_filter_attach(fds[i]);
		}
		if ((rc = repair_set(c, fds, k, REPAIR_ON)))
			return rc;
		n = k;
	}
	warn("Migration: %u held connection(s) may still owe an ACK, which "
	     "the source would send after the migration", n);
	return 0;
}

/* A connection the source holds (not one a target restored and parks) */
static bool tcpm_is_held(const struct tcp_conn *conn)
{
	return conn && (conn->flags & (TCP_F_MIGRATED | TCP_F_PARKED)) ==
		       TCP_F_MIGRATED;
}

/* Every held connection's socket, in flow order; returns how many */
static unsigned tcpm_held_fds(int *fds, unsigned max)
{
	unsigned i, n = 0, span = flow_span();

	for (i = 0; i < span && n < max; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (tcpm_is_held(conn))
			fds[n++] = conn->sock;
	}
	return n;
}

/* The events of a connection's socket in the loop (see tcp.c) */
static uint32_t tcpm_events(const struct tcp_conn *conn)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP | EPOLLET;

	if (conn->flags & (TCP_F_OUT_WAIT | TCP_F_TAIL))
		ev |= EPOLLOUT;
	return ev;
}

/* Back in the loop, with the peek offset where our sequence numbers say */
static void tcpm_unhold(struct ctx *c, struct tcp_conn *conn)
{
	tcpm_filter_detach(conn->sock);
	tcpm_deaf(conn->sock, false);
	if (tcp_peek_offset_ok) {
		int po = (int)(conn->seq_to_guest - conn->seq_acked);

		if (conn->flags & TCP_F_FIN_SENT)
			po--;
		setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &po,
			   sizeof(po));
	}
	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_QUIET);
	if (loop_add(c, conn->sock, tcpm_events(conn),
		     flow_ref((union flow *)conn, REF_TCP)))
		tcp_rst(c, conn);
}

/*
 * Close the send window of each held socket (see the top of the file),
 * keeping the peer's value in tcpm_wnds
 */
static void tcpm_shut_window(void)
{
	unsigned i, span = flow_span(), n = 0;

	free(tcpm_wnds);
	tcpm_nwnds = 0;
	for (i = 0; i < span; i++)
		n += tcpm_is_held(tcp_conn_at(i));
	if (!n || !(tcpm_wnds = calloc(n, sizeof(*tcpm_wnds))))
		return;
	for (i = 0; i < span && tcpm_nwnds < n; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		struct tcpm_window w;

		if (!tcpm_is_held(conn) || tcpm_get_window(conn->sock, &w))
			continue;
		tcpm_wnds[tcpm_nwnds++] = (struct tcpm_wnd){ i, conn->f.gen,
							    w.snd_wnd };
		w.snd_wnd = 0;
		if (setsockopt(conn->sock, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w,
			       sizeof(w)))
			tcpm_nwnds--;
	}
}

/* Open the send window of a held @conn again, as the peer last said */
static void tcpm_open_window(const struct tcp_conn *conn)
{
	struct tcpm_window w;
	uint32_t wnd;

	if (!tcpm_saved_window(conn, &wnd) || tcpm_get_window(conn->sock, &w))
		return;
	w.snd_wnd = wnd;
	setsockopt(conn->sock, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w));
}

static void tcpm_wnds_free(void)
{
	free(tcpm_wnds);
	tcpm_wnds = NULL;
	tcpm_nwnds = 0;
}

/* Is TCP_REPAIR on for @s? */
static bool tcpm_in_repair(int s)
{
	socklen_t sl = sizeof(int);
	int on = 0;

	return !getsockopt(s, IPPROTO_TCP, TCP_REPAIR, &on, &sl) && on;
}

/**
 * tcp_migrate_listen() - forwarded ports take connections, or not
 * @c:		execution context
 * @on:		take them (the normal case), or drop their SYNs silently
 *
 * Off from the SAVE on (see the top of the file): no accept(), and the
 * listening sockets drop what arrives (TTL limit, and the drop-all filter
 * if the kernel lets us attach it), so that the kernel doesn't complete
 * handshakes for connections that could only be reset; the peers send
 * their SYNs again, and reach the target once the fabric has switched.
 * On again when the migration fails and the guest runs here again.
 */
void tcp_migrate_listen(struct ctx *c, bool on)
{
	const int *fds;
	unsigned i, n = fwd_tcp_listeners(&fds);

	if (tcpm_listen_paused == !on)
		return;
	tcpm_listen_paused = !on;
	for (i = 0; i < n; i++) {
		union sockaddr_inany sa;
		socklen_t sl = sizeof(sa);
		uint32_t ref;

		if (getsockname(fds[i], &sa.sa, &sl))
			continue;
		ref = FWD_REF(sockaddr_port(&sa), sa.sa.sa_family);
		if (on) {
			tcpm_filter_detach(fds[i]);
			tcpm_deaf(fds[i], false);
		} else {
			tcpm_filter_attach(fds[i]);
			tcpm_deaf(fds[i], true);
		}
		loop_mod(c, fds[i], on ? EPOLLIN : 0,
			 loop_ref(REF_TCP_LISTEN, ref, (uint32_t)fds[i]));
	}
	if (n)
		debug("Migration: %u forwarded TCP port listener(s) %s", n,
		      on ? "taking connections again" : "dropping SYNs");
}

/**
 * tcp_migrate_listen_paused() - do forwarded ports take no connections now?
 *
 * Return: true between a SAVE and the end of the migration (or its failure)
 */
bool tcp_migrate_listen_paused(void)
{
	return tcpm_listen_paused;
}

/**
 * tcp_migrate_source_hold() - stop and silence every established connection
 * @c:		execution context
 *
 * Takes each ESTABLISHED connection out of the loop, makes its socket
 * deaf (drop-all filter, TTL limit), and turns TCP_REPAIR on for all of
 * them. On failure, everything is given back as it was.
 *
 * Return: number of connections held, or -errno
 */
int tcp_migrate_source_hold(struct ctx *c)
{
	unsigned i, span = flow_span(), n, held = 0, unfiltered = 0;
	int *fds, rc, attach_err = 0;

	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		int off = -1;

		if (!conn || conn->f.state != TCP_ST_ESTABLISHED ||
		    conn->sock < 0 || (conn->flags & TCP_F_MIGRATED))
			continue;
		/* The queue must start at seq_acked: ACKed bytes go first */
		if (tcp_sock_sync(c, conn))
			continue;
		/* Some kernels want CAP_NET_ADMIN for any socket filter:
		 * then our passt-repair attaches it with TCP_REPAIR (checked
		 * below), and the TTL limit works anyway
		 */
		if ((rc = tcpm_filter_attach(conn->sock)))
			attach_err = -rc;
		tcpm_deaf(conn->sock, true);
		loop_del(c, conn->sock);
		if (tcp_peek_offset_ok)
			setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &off,
				   sizeof(off));
		conn->flags |= TCP_F_MIGRATED;
		held++;
	}
	if (!held)
		return 0;

	fds = calloc(held, sizeof(*fds));
	if (!fds) {
		rc = -ENOMEM;
		goto rollback;
	}
	n = tcpm_held_fds(fds, held);
	rc = repair_set(c, fds, n, REPAIR_ON);
	if (!rc) {
		rc = tcpm_flush_acks(c, fds, n, !attach_err);
		n = tcpm_held_fds(fds, held);
	}
	if (rc) {
		/* Some may be in repair mode: take them out silently */
		repair_set(c, fds, n, REPAIR_OFF_NO_WP);
		free(fds);
		goto rollback;
	}
	for (i = 0; i < n; i++)
		unfiltered += !tcpm_filtered(fds[i]);
	free(fds);
	tcpm_shut_window();
	if (unfiltered) {
		info("Migration: holding %u of %u connection(s) without the "
		     "drop-all filter (%s%s), deaf by their TTL limit alone",
		     unfiltered, n,
		     attach_err ? strerror(attach_err) : "not attached",
		     attach_err ? ", and the repair helper didn't attach it"
				: "");
	} else if (attach_err) {
		info("Migration: the repair helper attached the drop-all "
		     "filter (we can't: %s)", strerror(attach_err));
	}
	return (int)held;

rollback:
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!tcpm_is_held(conn))
			continue;
		/* Still in repair mode (no helper any more): it can't move
		 * data; closed in repair mode, it sends the peer nothing
		 */
		if (tcpm_in_repair(conn->sock)) {
			conn->flags &= ~TCP_F_MIGRATED;
			tcp_rst(c, conn);
			continue;
		}
		tcpm_unhold(c, conn);
	}
	return rc;
}

/*
 * The RSTs owed to the guest, after the held connections: their basic
 * records (@ext false), or their skip records (@ext true), in the same
 * order. Return: how many
 */
static unsigned tcpm_write_owed(const struct ctx *c, struct mig_buf *b,
				bool ext)
{
	const struct tcp_rst_owed *ow;
	unsigned i, n = tcp_rst_owed_get(&ow), k = 0;

	for (i = 0; i < n; i++) {
		struct mig_tcp_basic basic;
		struct mig_tcp_ext e;

		if (flow_hash_lookup(&ow[i].key))
			continue;
		k++;
		if (ext) {
			memset(&e, 0, sizeof(e));
			e.tcpi_state = MIG_TCP_SKIP;
			mig_put_ext(b, &e, NULL, NULL);
			continue;
		}
		tcpm_basic_owed(c, &ow[i], &basic);
		mig_put_basic(b, &basic);
	}
	return k;
}

/**
 * tcp_migrate_source_write() - the flow stage of the stream, for the held
 *				connections
 * @c:		execution context
 * @b:		stream being written
 *
 * The state of each socket is read first: the FIN flags of its record come
 * from it, and a socket that can't be moved any more (reset or timed out
 * after our last look) gets a skip record, so that the target resets it
 * towards the guest. So does one that can't be dumped. Either stays held
 * here all the same: if the migration fails, the loop finds its error.
 * The RSTs the guest is owed for connections already gone (tcp.c) go as
 * skip records too.
 */
void tcp_migrate_source_write(struct ctx *c, struct mig_buf *b)
{
	unsigned i, span = flow_span(), n = 0, k, nowed, owed = 0;
	const struct tcp_rst_owed *ow;
	uint8_t *st;
	bool *fin;

	for (i = 0; i < span; i++)
		n += tcpm_is_held(tcp_conn_at(i));
	nowed = tcp_rst_owed_get(&ow);
	for (i = 0; i < nowed; i++)
		owed += !flow_hash_lookup(&ow[i].key);
	if (owed)
		info("Migration: %u RST(s) the guest is owed go with the state",
		     owed);
	st = calloc(n ? n : 1, sizeof(*st));
	fin = calloc(n ? n : 1, sizeof(*fin));
	if (!st || !fin) {
		free(st);
		free(fin);
		b->err = -ENOMEM;
		return;
	}

	mig_put_count(b, n + owed);
	for (i = 0, k = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		struct mig_tcp_basic basic;

		if (!tcpm_is_held(conn))
			continue;
		st[k] = tcpm_sock_state(conn->sock, &fin[k]);
		if (st[k] == MIG_TCP_SKIP)
			warn("TCP flow %u: the connection is gone (reset or "
			     "timed out), the target will reset it", i);
		else if (fin[k])
			conn->flags |= TCP_F_SOCK_EOF;
		if (tcpm_basic(c, conn, fin[k], &basic)) {
			warn("TCP flow %u: addresses unknown", i);
			b->err = -EINVAL;
		}
		mig_put_basic(b, &basic);
		k++;
	}
	tcpm_write_owed(c, b, false);
	for (i = 0, k = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		uint8_t *sndq = NULL, *rcvq = NULL;
		struct mig_tcp_ext e;
		int rc = -ENOTCONN;

		if (!tcpm_is_held(conn))
			continue;
		if (st[k] != MIG_TCP_SKIP) {
			rc = tcpm_dump(conn, st[k], &e, &sndq, &rcvq);
			if (rc)
				warn("TCP flow %u: can't dump the socket (%s), "
				     "the target will reset it", i,
				     strerror(-rc));
		}
		if (rc) {
			free(sndq);
			free(rcvq);
			sndq = rcvq = NULL;
			memset(&e, 0, sizeof(e));
			e.tcpi_state = MIG_TCP_SKIP;
		}
		mig_put_ext(b, &e, sndq, rcvq);
		free(sndq);
		free(rcvq);
		k++;
	}
	free(st);
	free(fin);
	tcpm_write_owed(c, b, true);
}

/**
 * tcp_migrate_source_resume() - the migration failed: take the held
 *				 connections back
 * @c:		execution context
 *
 * Return: number of connections resumed
 */
unsigned tcp_migrate_source_resume(struct ctx *c)
{
	unsigned i, span = flow_span(), n, held = 0, done = 0;
	int *fds;

	tcp_migrate_listen(c, true);
	for (i = 0; i < span; i++)
		held += tcpm_is_held(tcp_conn_at(i));
	if (!held)
		return 0;
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (tcpm_is_held(conn))
			tcpm_open_window(conn);
	}
	tcpm_wnds_free();
	fds = calloc(held, sizeof(*fds));
	if (fds) {
		n = tcpm_held_fds(fds, held);
		if (repair_set(c, fds, n, REPAIR_OFF))
			warn("Can't clear TCP_REPAIR on resumed connections: "
			     "they will be reset");
		free(fds);
	}
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!tcpm_is_held(conn))
			continue;
		if (tcpm_in_repair(conn->sock)) {
			/* Can't move data: reset it (nothing to the peer
			 * from a socket in repair mode)
			 */
			conn->flags &= ~TCP_F_MIGRATED;
			tcp_rst(c, conn);
			continue;
		}
		tcpm_unhold(c, conn);
		conn = tcp_conn_at(i);
		if (!conn)
			continue;
		/* Resend what the guest didn't ACK: it may have been lost */
		conn->seq_to_guest = conn->seq_acked;
		conn->flags &= ~TCP_F_FIN_SENT;
		if (tcp_peek_offset_ok) {
			int zero = 0;

			setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &zero,
				   sizeof(zero));
		}
		tcp_ack_now(c, conn);
		tcp_data_to_guest(c, conn);
		done++;
	}
	return done;
}

/**
 * tcp_migrate_source_release() - the connections are the target's now:
 *				  close the held sockets silently, and reset
 *				  every other one
 * @c:		execution context
 *
 * The held sockets are closed still in repair mode: the kernel sends
 * neither FIN nor RST. A connection that wasn't held (completed after the
 * state was taken, or none was held for lack of TCP_REPAIR) can't go on
 * anywhere: it is reset towards its peer, which a FIN would mislead.
 *
 * Return: number of held connections closed silently
 */
unsigned tcp_migrate_source_release(struct ctx *c)
{
	unsigned i, span = flow_span(), n = 0, reset = 0;

	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!conn || (conn->flags & TCP_F_PARKED))
			continue;
		if (conn->flags & TCP_F_MIGRATED) {
			/* In repair mode, close() sends neither FIN nor RST */
			close(conn->sock);
			conn->sock = -1;
			conn->flags &= ~TCP_F_MIGRATED;
			tcp_close(c, conn, false);
			n++;
		} else {
			tcp_close(c, conn, true);
			reset++;
		}
	}
	tcpm_wnds_free();
	tcp_rst_owed_clear();	/* the target sent them */
	if (reset)
		info("Migration: %u connection(s) that didn't move reset "
		     "towards their peers", reset);
	return n;
}

/**
 * tcp_migrate_source_unborn() - the migration went through: reset the
 *				 connections still in their handshake
 * @c:		execution context
 *
 * They weren't held (only established ones move): a connection the guest
 * opened is tried again from the target (its SYN is sent again), one a
 * peer opened is the target's to take when the peer tries again. Reset
 * now, the peer learns at once that this attempt is over, instead of when
 * the linger ends.
 *
 * Return: how many were reset
 */
unsigned tcp_migrate_source_unborn(struct ctx *c)
{
	unsigned i, span = flow_span(), n = 0;

	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!conn || conn->f.state == TCP_ST_ESTABLISHED ||
		    (conn->flags & TCP_F_MIGRATED))
			continue;
		tcp_close(c, conn, true);
		n++;
	}
	return n;
}

/**
 * tcp_migrate_held() - how many connections a migration holds as source
 *
 * Return: count
 */
unsigned tcp_migrate_held(void)
{
	unsigned i, span = flow_span(), n = 0;

	for (i = 0; i < span; i++)
		n += tcpm_is_held(tcp_conn_at(i));
	return n;
}

/* ---- never-sent data kept for a restored socket (TCP_F_TAIL) ---- */

/*
 * Write what the socket takes of @len bytes at @p, in repair mode (into
 * the selected queue) or not. Return: bytes written (fewer than @len:
 * the socket is full), or -errno
 */
static ssize_t tcpm_fill(int s, const uint8_t *p, uint32_t len)
{
	size_t chunk = TCPM_CHUNK;
	uint32_t done = 0;

	while (done < len) {
		ssize_t n = send(s, p + done, MIN(chunk, (size_t)(len - done)),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if ((errno == ENOBUFS || errno == ENOMEM) &&
			    chunk > TCPM_CHUNK_MIN) {
				chunk /= 2;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		done += (uint32_t)n;
	}
	return done;
}

/* Keep @len bytes at @p for @conn, to write as its socket drains */
static int tcpm_tail_add(struct tcp_conn *conn, const uint8_t *p,
			 uint32_t len, bool fin)
{
	struct tcpm_tail *t;

	if (tcpm_ntails == tcpm_tails_cap) {
		unsigned cap = tcpm_tails_cap ? tcpm_tails_cap * 2 : 16;

		t = realloc(tcpm_tails, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		tcpm_tails = t;
		tcpm_tails_cap = cap;
	}
	t = &tcpm_tails[tcpm_ntails];
	if (!(t->p = malloc(len)))
		return -ENOMEM;
	memcpy(t->p, p, len);
	t->idx = flow_idx((union flow *)conn);
	t->gen = conn->f.gen;
	t->len = len;
	t->off = 0;
	t->fin = fin;
	tcpm_ntails++;
	conn->flags |= TCP_F_TAIL;
	return 0;
}

/* Forget @t (its connection's flag is the caller's) */
static void tcpm_tail_free(struct tcpm_tail *t)
{
	free(t->p);
	*t = tcpm_tails[--tcpm_ntails];
}

/**
 * tcp_migrate_tail() - the socket has room: write more of the migration's
 *			never-sent data (TCP_F_TAIL), then its FIN if due
 * @conn:	connection
 *
 * Return: 1 if all of it is written (TCP_F_TAIL cleared), 0 if some waits
 *	   for more room, -errno if the socket refused it for good
 */
int tcp_migrate_tail(struct tcp_conn *conn)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);
	bool fin;
	ssize_t n;

	if (!t) {
		conn->flags &= ~TCP_F_TAIL;
		return 1;
	}
	n = tcpm_fill(conn->sock, t->p + t->off, t->len - t->off);
	if (n < 0)
		return (int)n;
	t->off += (uint32_t)n;
	if (t->off < t->len)
		return 0;
	fin = t->fin;
	tcpm_tail_free(t);
	conn->flags &= ~TCP_F_TAIL;
	debug("TCP flow %u: the migrated data is all in the socket",
	      flow_idx((union flow *)conn));
	if (fin && shutdown(conn->sock, SHUT_WR))
		return -errno;
	return 1;
}

/**
 * tcp_migrate_tail_fin() - the guest's FIN for a connection whose socket
 *			    still waits for migrated data: send it after that
 * @conn:	connection with TCP_F_TAIL
 *
 * Return: true if the FIN will follow the data, false if there's no data
 *	   waiting (shut the socket down now)
 */
bool tcp_migrate_tail_fin(struct tcp_conn *conn)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);

	if (!t)
		return false;
	t->fin = true;
	return true;
}

/**
 * tcp_migrate_tail_drop() - the connection is closed: forget its data
 * @conn:	connection with TCP_F_TAIL
 */
void tcp_migrate_tail_drop(struct tcp_conn *conn)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);

	if (t)
		tcpm_tail_free(t);
	conn->flags &= ~TCP_F_TAIL;
}

/* ---- target: restore at the LOAD, release when the guest runs ---- */

static void tcpm_sockaddr(union sockaddr_inany *sa, const struct in6_addr *a,
			  uint16_t port)
{
	if (mig_addr_is_v4(a))
		sockaddr_set(sa, AF_INET, &a->s6_addr[12], port);
	else
		sockaddr_set(sa, AF_INET6, a, port);
}

/* Index of the HOST side of a record (the other is the TAP side) */
static int tcpm_host(const struct mig_flow_in *f)
{
	return f->b.pif[0] == MIG_PIF_HOST ? 0 : 1;
}

/*
 * Restore, at the LOAD, what doesn't make a socket speak (@s is in repair
 * mode): MSS, address, timestamp, sequence numbers, connect().
 * Return: 0 or -errno
 */
static int tcpm_restore_conn(int s, const struct mig_flow_in *f)
{
	const struct mig_tcp_ext *e = &f->e;
	const struct mig_flowside *hs = &f->b.side[tcpm_host(f)];
	union sockaddr_inany local, peer;
	int mss = (int)e->mss, rc;
	uint32_t seq_snd;

	/* No SO_REUSEADDR here: TCP_REPAIR already forces address reuse
	 * (SK_FORCE_REUSE), and SO_REUSEADDR would lower that to the
	 * ordinary kind, so connections sharing a local port (inbound ones
	 * to a forwarded port) couldn't all be bound
	 */
	tcpm_deaf(s, true);
	/* connect() sizes the segments from the MSS clamp: see the top. At
	 * most what TCP_MAXSEG takes (loopback's is larger): best effort
	 */
	mss = MIN(mss, TCPM_MAXSEG_MAX);
	setsockopt(s, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss));
	tcpm_sockaddr(&local, &hs->oaddr, hs->oport);
	tcpm_sockaddr(&peer, &hs->eaddr, hs->eport);
	if (bind(s, &local.sa, sockaddr_len(&local)))
		return -errno;
	if ((e->tcpi_options & MIG_TCPI_OPT_TIMESTAMPS) &&
	    setsockopt(s, IPPROTO_TCP, TCP_TIMESTAMP, &e->timestamp,
		       sizeof(e->timestamp)))
		return -errno;
	/* FIN_WAIT2: seq_snd is one past our FIN, queued again later */
	seq_snd = e->seq_snd - (e->tcpi_state == MIG_TCP_FIN_WAIT2 ? 1 : 0);
	if ((rc = tcpm_queue(s, TCPM_QUEUE_SEND)) ||
	    setsockopt(s, IPPROTO_TCP, TCP_QUEUE_SEQ, &seq_snd,
		       sizeof(seq_snd)))
		return rc ? rc : -errno;
	if ((rc = tcpm_queue(s, TCPM_QUEUE_RECV)) ||
	    setsockopt(s, IPPROTO_TCP, TCP_QUEUE_SEQ, &e->seq_rcv,
		       sizeof(e->seq_rcv)))
		return rc ? rc : -errno;
	if (connect(s, &peer.sa, sockaddr_len(&peer)) && errno != EINPROGRESS)
		return -errno;
	tcpm_queue(s, TCPM_QUEUE_NONE);
	return 0;
}

/*
 * Write the part of the send queue that was sent, in repair mode, all of
 * it (see the top of the file): if the buffer a new socket has can't take
 * it, give the socket the buffer it needs (SO_SNDBUF). Return: 0 or -errno
 */
static int tcpm_fill_sent(int s, const uint8_t *p, uint32_t len)
{
	ssize_t n = tcpm_fill(s, p, len);
	int want, got = 0;
	socklen_t sl = sizeof(got);

	if (n < 0 || (uint32_t)n == len)
		return n < 0 ? (int)n : 0;
	want = (int)MIN((uint64_t)len * 2 + TCPM_CHUNK,
			(uint64_t)INT32_MAX / 2);
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
	getsockopt(s, SOL_SOCKET, SO_SNDBUF, &got, &sl);
	info("Migration: %u bytes in flight to restore, more than a new "
	     "socket's buffer: its send buffer is now %i bytes, fixed",
	     len, got);
	p += n;
	len -= (uint32_t)n;
	n = tcpm_fill(s, p, len);
	if (n < 0)
		return (int)n;
	return (uint32_t)n == len ? 0 : -ENOBUFS;
}

/*
 * Restore, when the guest runs, what makes the socket a connection again
 * (@s, connected in repair mode): options, queues (the sent part of the
 * send queue only), FIN_WAIT2's FIN, window. Return: 0 or -errno
 */
static int tcpm_restore_queues(int s, const struct mig_flow_in *f)
{
	const struct mig_tcp_ext *e = &f->e;
	struct tcpm_window w = { e->snd_wl1, e->snd_wnd, e->max_window,
				 e->rcv_wnd, e->rcv_wup };
	uint32_t sent = e->sndq - e->notsent;
	struct tcpm_opt opts[4];
	unsigned nopt = 0;
	ssize_t n;
	int rc;

	/* Options first: the queues are written with them in effect */
	opts[nopt++] = (struct tcpm_opt){ TCPM_OPT_WINDOW,
					  e->snd_ws | ((uint32_t)e->rcv_ws << 16) };
	opts[nopt++] = (struct tcpm_opt){ TCPM_OPT_MSS, e->mss };
	if (e->tcpi_options & MIG_TCPI_OPT_SACK)
		opts[nopt++] = (struct tcpm_opt){ TCPM_OPT_SACK_PERM, 0 };
	if (e->tcpi_options & MIG_TCPI_OPT_TIMESTAMPS)
		opts[nopt++] = (struct tcpm_opt){ TCPM_OPT_TIMESTAMP, 0 };
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_OPTIONS, opts,
		       nopt * sizeof(opts[0])))
		return -errno;

	/* The receive queue grows as it's written (the kernel raises an
	 * unlocked buffer to what it holds): all of it goes in
	 */
	if ((rc = tcpm_queue(s, TCPM_QUEUE_RECV)))
		return rc;
	n = tcpm_fill(s, f->rcvq, e->rcvq);
	if (n < 0 || (uint32_t)n < e->rcvq)
		return n < 0 ? (int)n : -ENOBUFS;
	if ((rc = tcpm_queue(s, TCPM_QUEUE_SEND)) ||
	    (rc = tcpm_fill_sent(s, f->sndq, sent)))
		return rc;
	if (e->tcpi_state == MIG_TCP_FIN_WAIT2 && shutdown(s, SHUT_WR))
		return -errno;
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)))
		return -errno;
	tcpm_queue(s, TCPM_QUEUE_NONE);
	return 0;
}

/* The flow key of a record's TAP side (guest address and port first) */
static void tcpm_tap_key(struct flow_key *k, const struct mig_flowside *ts)
{
	int family = mig_addr_is_v4(&ts->oaddr) ? AF_INET : AF_INET6;

	flow_key_set(k, FLOW_TCP, family,
		     family == AF_INET ? (const void *)&ts->eaddr.s6_addr[12]
				       : (const void *)&ts->eaddr, ts->eport,
		     family == AF_INET ? (const void *)&ts->oaddr.s6_addr[12]
				       : (const void *)&ts->oaddr, ts->oport);
}

/*
 * The flow entry for a restored connection, parked: out of the loop, its
 * socket in repair mode. The peer's FIN is in the FIN flag of the record
 * or in its state (a source may have missed it in its flags: we did)
 */
static int tcpm_flow_new(int s, const struct mig_flow_in *f, unsigned *idx,
			 uint32_t *gen)
{
	const struct mig_tcp_basic *b = &f->b;
	struct tcp_conn *conn;
	union flow *flow;

	flow = flow_alloc();
	if (!flow)
		return -ENOSPC;
	conn = &flow->tcp;
	conn->f.type = FLOW_TCP;
	tcpm_tap_key(&conn->f.key, &f->b.side[!tcpm_host(f)]);
	conn->sock = s;
	conn->f.state = TCP_ST_ESTABLISHED;
	conn->flags = TCP_F_MIGRATED | TCP_F_PARKED;
	if (b->pif[0] == MIG_PIF_HOST)
		conn->flags |= TCP_F_INBOUND;
	if (b->ws_from_tap || b->ws_to_tap)
		conn->flags |= TCP_F_WS;
	if ((b->events & MIG_EV_SOCK_FIN_RCVD) ||
	    tcpm_fin_rcvd(f->e.tcpi_state))
		conn->flags |= TCP_F_SOCK_EOF;
	if (b->events & MIG_EV_TAP_FIN_RCVD)
		conn->flags |= TCP_F_GUEST_FIN;
	if ((b->events & MIG_EV_TAP_FIN_SENT) &&
	    (b->events & MIG_EV_TAP_FIN_ACKED))
		conn->flags |= TCP_F_FIN_SENT | TCP_F_FIN_ACKED;
	conn->ws_guest = b->ws_from_tap;
	conn->ws_ours = b->ws_to_tap;
	conn->mss = (uint16_t)MIN(MAX(b->tap_mss, 536U), 65535U);
	conn->seq_acked = b->seq_ack_from_tap;
	conn->seq_from_guest = b->seq_from_tap;
	conn->seq_isn = b->seq_ack_from_tap - 1;
	/* Everything the guest hasn't ACKed is sent again from the queue */
	conn->seq_to_guest = conn->seq_acked;
	conn->wnd_guest = (uint32_t)b->wnd_from_tap << b->ws_from_tap;
	conn->last_ms = now_ms();
	if (flow_hash_insert(flow)) {
		conn->sock = -1;
		flow_close(flow);
		return -EEXIST;
	}
	*idx = flow_idx(flow);
	*gen = flow->f.gen;
	return 0;
}

/* RST to the guest for a flow we couldn't restore */
static void tcpm_reset_guest(struct ctx *c, const struct mig_flow_in *f)
{
	struct tcp_conn tmp = { .sock = -1 };

	tcpm_tap_key(&tmp.f.key, &f->b.side[!tcpm_host(f)]);
	tmp.seq_from_guest = f->b.seq_from_tap;
	tcp_send_ctl(c, &tmp, TCP_RST | TCP_ACK, f->b.seq_to_tap);
}

/* Forget a parked connection, closing its socket in repair mode (silent) */
static void tcpm_park_close(struct tcp_conn *conn)
{
	/* In repair mode, close() sends neither FIN nor RST */
	close(conn->sock);
	conn->sock = -1;
	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED);
	flow_close((union flow *)conn);
}

/* The parked connection of @p, NULL if it's gone or failed at the LOAD */
static struct tcp_conn *tcpm_parked_conn(const struct tcpm_parked *p)
{
	struct tcp_conn *conn;

	if (p->idx == TCPM_NO_FLOW || !(conn = tcp_conn_at(p->idx)) ||
	    conn->f.gen != p->gen || !(conn->flags & TCP_F_PARKED))
		return NULL;
	return conn;
}

/* Let go of the stream and the list */
static void tcpm_park_free(void)
{
	free(tcpm_park.buf);
	free(tcpm_park.flows);
	free(tcpm_park.p);
	memset(&tcpm_park, 0, sizeof(tcpm_park));
}

/**
 * tcp_migrate_target_check() - would these flows clash with ours?
 * @s:		parsed stream
 * @why:	filled with the reason, if so
 * @whylen:	size of @why
 *
 * Return: 0, or -EEXIST if a flow of the stream exists here already
 */
int tcp_migrate_target_check(const struct mig_stream_in *s, char *why,
			     size_t whylen)
{
	uint32_t i;

	for (i = 0; i < s->count; i++) {
		const struct mig_flow_in *f = &s->flows[i];
		struct flow_key k;

		if (f->skip)
			continue;
		tcpm_tap_key(&k, &f->b.side[!tcpm_host(f)]);
		if (flow_hash_lookup(&k)) {
			snprintf(why, whylen, "flow %u: a connection with "
				 "the same addresses exists here already", i);
			return -EEXIST;
		}
	}
	return 0;
}

/**
 * tcp_migrate_target() - recreate the connections of a validated stream,
 *			  parked until the guest runs here
 * @c:		execution context
 * @s:		parsed stream, checked with tcp_migrate_target_check():
 *		its flows are ours from now on (@s->flows is set to NULL)
 * @buf:	the stream's bytes, where its queues are: ours from now on
 *		(set to NULL)
 *
 * Each connection's socket is connected in repair mode and stays so, and
 * silent, until tcp_migrate_target_release() (see the top of the file).
 * One that fails here is closed (nothing reaches its peer) and will be
 * reset towards the guest when it runs here.
 *
 * Return: number of connections restored so far
 */
unsigned tcp_migrate_target(struct ctx *c, struct mig_stream_in *s,
			    uint8_t **buf)
{
	unsigned done = 0, k = 0;
	uint32_t i;
	int *fds;

	tcp_migrate_target_drop(c);
	if (!s->count)
		return 0;
	tcpm_park.p = calloc(s->count, sizeof(*tcpm_park.p));
	fds = calloc(s->count, sizeof(*fds));
	if (!tcpm_park.p || !fds) {
		free(fds);
		free(tcpm_park.p);
		tcpm_park.p = NULL;
		return 0;
	}
	tcpm_park.buf = *buf;
	tcpm_park.flows = s->flows;
	tcpm_park.n = s->count;
	*buf = NULL;
	s->flows = NULL;

	for (i = 0; i < tcpm_park.n; i++) {
		const struct mig_flow_in *f = &tcpm_park.flows[i];
		int family = mig_addr_is_v4(&f->b.side[tcpm_host(f)].oaddr) ?
			     AF_INET : AF_INET6;

		tcpm_park.p[i] = (struct tcpm_parked){ TCPM_NO_FLOW, 0, f };
		fds[i] = -1;
		if (f->skip)
			continue;
		fds[i] = socket(family, SOCK_STREAM | SOCK_NONBLOCK |
				SOCK_CLOEXEC, IPPROTO_TCP);
	}

	/* Repair on for all of them at once: compact the list for it */
	{
		int *on = calloc(tcpm_park.n, sizeof(*on));

		for (i = 0; on && i < tcpm_park.n; i++)
			if (fds[i] >= 0)
				on[k++] = fds[i];
		if (!on || repair_set(c, on, k, REPAIR_ON)) {
			warn("Migration: can't turn TCP_REPAIR on for the new "
			     "sockets, resetting %u connections", k);
			for (i = 0; i < tcpm_park.n; i++) {
				if (fds[i] >= 0)
					close(fds[i]);
				fds[i] = -1;
			}
		}
		free(on);
	}

	for (i = 0; i < tcpm_park.n; i++) {
		struct tcpm_parked *p = &tcpm_park.p[i];
		int rc;

		if (fds[i] < 0)
			continue;
		rc = tcpm_restore_conn(fds[i], p->f);
		if (!rc)
			rc = tcpm_flow_new(fds[i], p->f, &p->idx, &p->gen);
		if (rc) {
			warn("Migration: flow %u can't be restored (%s), "
			     "resetting it", i, strerror(-rc));
			close(fds[i]);	/* in repair mode: silent */
			continue;
		}
		done++;
	}
	free(fds);
	return done;
}

/**
 * tcp_migrate_parked() - how many restored connections wait for the guest
 *
 * Return: number of records of the stream kept for the release (restored
 *	   or not), 0 if there is none
 */
unsigned tcp_migrate_parked(void)
{
	return tcpm_park.n;
}

/**
 * tcp_migrate_target_drop() - the guest won't run here: close the parked
 *			       connections silently
 * @c:		execution context
 *
 * Return: how many were closed
 */
unsigned tcp_migrate_target_drop(struct ctx *c)
{
	unsigned i, n = 0;

	(void)c;
	for (i = 0; i < tcpm_park.n; i++) {
		struct tcp_conn *conn = tcpm_parked_conn(&tcpm_park.p[i]);

		if (!conn)
			continue;
		tcpm_park_close(conn);
		n++;
	}
	tcpm_park_free();
	return n;
}

/* Parked @conn out of repair mode: the never-sent part, a FIN, the loop */
static int tcpm_go(struct ctx *c, struct tcp_conn *conn,
		   const struct mig_flow_in *f)
{
	const struct mig_tcp_ext *e = &f->e;
	uint32_t sent = e->sndq - e->notsent;
	bool fin = e->tcpi_state == MIG_TCP_FIN_WAIT1 ||
		   e->tcpi_state == MIG_TCP_CLOSING ||
		   e->tcpi_state == MIG_TCP_LAST_ACK;
	ssize_t n;
	int rc;

	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED);
	tcpm_deaf(conn->sock, false);
	tcpm_filter_detach(conn->sock);
	tcp_sock_tune(conn->sock);
	/* Never sent: ordinary data now, what the socket takes; the rest as
	 * it drains, then the FIN
	 */
	n = tcpm_fill(conn->sock, f->sndq + sent, e->notsent);
	if (n < 0)
		return (int)n;
	if ((uint32_t)n < e->notsent) {
		if ((rc = tcpm_tail_add(conn, f->sndq + sent + n,
					e->notsent - (uint32_t)n, fin)))
			return rc;
		debug("TCP flow %u: %zi of %u never-sent bytes in the socket, "
		      "the rest as it drains", flow_idx((union flow *)conn),
		      n, e->notsent);
	} else if (fin && shutdown(conn->sock, SHUT_WR)) {
		return -errno;
	}
	if (loop_add(c, conn->sock, tcpm_events(conn),
		     flow_ref((union flow *)conn, REF_TCP)))
		return -EIO;
	/* Both FINs done for the guest: closed once the socket is drained */
	if ((conn->flags & TCP_F_GUEST_FIN) &&
	    (conn->flags & TCP_F_FIN_ACKED)) {
		conn->flags |= TCP_F_DRAINING;
		conn->timer = now_ms();
	}
	return 0;
}

/**
 * tcp_migrate_target_release() - the guest runs here: the parked
 *				  connections go live
 * @c:		execution context
 * @reset:	set to the number of connections reset towards the guest
 *
 * Return: number of connections that went live
 */
unsigned tcp_migrate_target_release(struct ctx *c, unsigned *reset)
{
	unsigned i, k = 0, done = 0, *idx;
	int *fds;

	*reset = 0;
	if (!tcpm_park.n)
		return 0;
	fds = calloc(tcpm_park.n, sizeof(*fds));
	idx = calloc(tcpm_park.n, sizeof(*idx));
	if (!fds || !idx) {
		free(fds);
		free(idx);
		*reset = tcpm_park.n;
		for (i = 0; i < tcpm_park.n; i++)
			tcpm_reset_guest(c, tcpm_park.p[i].f);
		tcp_migrate_target_drop(c);
		return 0;
	}

	/* Options, queues and window, still in repair mode */
	for (i = 0; i < tcpm_park.n; i++) {
		struct tcpm_parked *p = &tcpm_park.p[i];
		struct tcp_conn *conn = tcpm_parked_conn(p);
		int rc;

		if (!conn)
			continue;
		if ((rc = tcpm_restore_queues(conn->sock, p->f))) {
			warn("Migration: flow %u can't be restored (%s), "
			     "resetting it", i, strerror(-rc));
			tcpm_park_close(conn);
			continue;
		}
		fds[k++] = conn->sock;
	}

	/* Repair off for all at once: the window probes go out */
	if (k && repair_set(c, fds, k, REPAIR_OFF))
		warn("Migration: can't clear TCP_REPAIR on restored "
		     "connections: those left in repair mode are reset");

	for (i = 0; i < tcpm_park.n; i++) {
		struct tcpm_parked *p = &tcpm_park.p[i];
		struct tcp_conn *conn = tcpm_parked_conn(p);
		int rc;

		if (!conn) {
			tcpm_reset_guest(c, p->f);
			(*reset)++;
			continue;
		}
		if (tcpm_in_repair(conn->sock)) {
			tcpm_park_close(conn);
			tcpm_reset_guest(c, p->f);
			(*reset)++;
			continue;
		}
		if ((rc = tcpm_go(c, conn, p->f))) {
			warn("Migration: flow %u: %s after the restore, "
			     "resetting it", i, strerror(-rc));
			conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED);
			tcp_rst(c, conn);
			(*reset)++;
			continue;
		}
		fds[done] = conn->sock;
		idx[done++] = p->idx;
		tcp_ack_now(c, conn);
		tcp_data_to_guest(c, conn);
	}
	tcpm_poke_start(fds, idx, done);
	free(fds);
	free(idx);
	tcpm_park_free();
	return done;
}

/* TCP_INFO as far as tcpi_segs_in (Linux 4.2), beyond glibc's copy */
struct tcpm_info {
	struct tcp_info ti;
	uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
	uint32_t segs_out, segs_in;
};

/* Has anything from the peer reached this socket? */
static bool tcpm_heard(int s)
{
	struct tcpm_info i;
	socklen_t sl = sizeof(i);

	memset(&i, 0, sizeof(i));
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &i, &sl))
		return true;	/* nothing to poke any more */
	return sl >= sizeof(i) && i.segs_in;
}

/* The restored sockets still to poke (the rest leave the list), in @fds */
static unsigned tcpm_poke_fds(int *fds)
{
	unsigned i, n = 0;

	for (i = 0; i < tcpm_poke.n; i++) {
		struct tcp_conn *conn = tcp_conn_at(tcpm_poke.p[i].idx);

		if (!conn || conn->sock != tcpm_poke.p[i].sock ||
		    conn->f.state != TCP_ST_ESTABLISHED ||
		    (conn->flags & TCP_F_MIGRATED) || tcpm_heard(conn->sock))
			continue;
		tcpm_poke.p[n] = tcpm_poke.p[i];
		fds[n++] = conn->sock;
	}
	tcpm_poke.n = n;
	return n;
}

static void tcpm_poke_stop(void)
{
	free(tcpm_poke.p);
	memset(&tcpm_poke, 0, sizeof(tcpm_poke));
}

/* TCP_REPAIR on and off: each socket sends a window probe */
static unsigned tcpm_poke_now(struct ctx *c, uint64_t now)
{
	unsigned n, i, stuck;
	int *fds, on;

	if (!tcpm_poke.n)
		return 0;
	fds = calloc(tcpm_poke.n, sizeof(*fds));
	if (!fds)
		return 0;
	n = tcpm_poke_fds(fds);
	if (!n) {
		free(fds);
		tcpm_poke_stop();
		return 0;
	}
	if (!repair_set(c, fds, n, REPAIR_ON) &&
	    !repair_set(c, fds, n, REPAIR_OFF)) {
		debug("Migration: poked %u restored connection(s), %llu ms "
		      "after the restore", n,
		      (unsigned long long)(now - tcpm_poke.start));
		tcpm_poke.next = now + tcpm_poke.interval;
		tcpm_poke.last = now;
		free(fds);
		return n;
	}

	/* Some may be in repair mode: take them out quietly if we can, and
	 * reset those that stay in it (they can't move data). No more pokes
	 */
	repair_set(c, fds, n, REPAIR_OFF_NO_WP);
	for (i = 0, stuck = 0; i < n; i++) {
		struct tcp_conn *conn = tcp_conn_at(tcpm_poke.p[i].idx);
		socklen_t sl = sizeof(on);

		on = 0;
		if (getsockopt(fds[i], IPPROTO_TCP, TCP_REPAIR, &on, &sl) ||
		    !on || !conn || conn->sock != fds[i])
			continue;
		tcp_rst(c, conn);
		stuck++;
	}
	if (stuck)
		warn("Migration: can't clear TCP_REPAIR after a poke, reset "
		     "%u connection(s)", stuck);
	else
		debug("Migration: can't poke (no TCP_REPAIR), stopping");
	free(fds);
	tcpm_poke_stop();
	return 0;
}

/* After a restore: poke the restored sockets from now on */
static void tcpm_poke_start(const int *fds, const unsigned *idx, unsigned n)
{
	unsigned i;

	tcpm_poke_stop();
#ifdef TCP_MIGRATE_NO_POKE
	(void)fds;
	(void)idx;
	(void)n;
	(void)i;
	return;
#else
	if (!n || !(tcpm_poke.p = calloc(n, sizeof(*tcpm_poke.p))))
		return;
	for (i = 0; i < n; i++)
		tcpm_poke.p[i] = (struct tcpm_poked){ idx[i], fds[i] };
	tcpm_poke.n = n;
	tcpm_poke.start = now_ms();
	tcpm_poke.interval = TCPM_POKE_MS;
	tcpm_poke.next = tcpm_poke.start + TCPM_POKE_MS;
#endif
}

/**
 * tcp_migrate_poke_timer() - target: poke the peers of restored sockets
 *			      now and then, for a while after the restore
 * @c:		execution context
 * @now:	current time, ms
 */
void tcp_migrate_poke_timer(struct ctx *c, uint64_t now)
{
	if (!tcpm_poke.n)
		return;
	if (now >= tcpm_poke.start + TCPM_POKE_FOR_MS) {
		tcpm_poke_stop();
		return;
	}
	if (tcpm_poke.again && now >= tcpm_poke.again) {
		tcpm_poke.again = 0;
		tcpm_poke_now(c, now);
		return;
	}
	if (now < tcpm_poke.next)
		return;
	if (now >= tcpm_poke.start + TCPM_POKE_FAST_MS)
		tcpm_poke.interval = MIN(tcpm_poke.interval * 2,
					 (uint64_t)TCPM_POKE_SLOW_MS);
	tcpm_poke_now(c, now);
}

/**
 * tcp_migrate_poke() - target: the fabric has switched (SIGUSR2), poke
 *			the peers of restored sockets we haven't heard from
 * @c:		execution context
 *
 * The peer answers at most one probe in TCPM_POKE_LIMIT_MS: pokes at once
 * if the last one is older than that, else as soon as it is. Once more
 * TCPM_POKE_MS later, in case. The timed pokes go on.
 *
 * Return: how many sockets are waiting for a poke
 */
unsigned tcp_migrate_poke(struct ctx *c)
{
	uint64_t now = now_ms();

	if (!tcpm_poke.n)
		return 0;
	if (tcpm_poke.last && now < tcpm_poke.last + TCPM_POKE_LIMIT_MS) {
		tcpm_poke.again = tcpm_poke.last + TCPM_POKE_LIMIT_MS;
		return tcpm_poke.n;
	}
	if (tcpm_poke_now(c, now))
		tcpm_poke.again = now + TCPM_POKE_MS;
	return tcpm_poke.n;
}
