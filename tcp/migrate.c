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
 * Source (tcp_migrate_source_hold(), then _write()):
 *  1. every ESTABLISHED connection is taken out of the loop, and a socket
 *     filter that drops every incoming segment is attached (by us, or, on
 *     kernels that want CAP_NET_ADMIN for that, by passt-repair with
 *     TCP_REPAIR; SO_GET_FILTER tells which one we have). From then on
 *     the kernel neither ACKs what the peer sends (a socket in repair mode
 *     would) nor answers it with a RST: the peer retransmits until the
 *     fabric delivers to the target. The flow is marked TCP_F_MIGRATED.
 *  2. TCP_REPAIR goes on for all of them (migrate/repair.c). A socket that
 *     still owes its peer a delayed ACK leaves repair mode for a moment
 *     (tcpm_flush_acks()): the kernel's timer would send that ACK later,
 *     from the source, repair mode or not. Then each
 *     socket is dumped: TCP_INFO, MSS, timestamp, window, both queues and
 *     their sequence numbers. Towards the guest, what it hasn't ACKed is
 *     written as never sent, so any target sends it again at once. The
 *     socket stays open, in repair mode and
 *     filtered: that is the linger.
 *  3. If the migration fails (QEMU restarts the device here), the held
 *     connections come back (tcp_migrate_source_resume()): repair off,
 *     filter off, back in the loop, the peek offset where it was.
 *  4. When the linger ends, the held sockets are closed still in repair
 *     mode (tcp_migrate_source_release()): the kernel sends nothing, no
 *     FIN, no RST.
 *
 * Target (tcp_migrate_target()): for each flow of a stream that parsed
 * and validated as a whole, a socket is made, put in repair mode, bound to
 * the original local address and port, given the sequence numbers,
 * connected (no SYN in repair mode), filled with both queues, options and
 * window, and released from repair mode (which sends a window probe: the
 * peer's answer gets both ends in step). The part of the send queue never
 * sent goes in after that, as ordinary data. The flow then resumes from
 * the first byte the guest hasn't ACKed. A flow that fails is reset
 * towards the guest and closed; the others go on.
 *
 * Target, after the restore (tcp_migrate_poke_timer(), _poke()): the
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
 * restored rcv_nxt.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Largest piece written into a queue in one call (halved on ENOBUFS) */
#define TCPM_CHUNK	(64 * 1024)
#define TCPM_CHUNK_MIN	1024

static unsigned tcpm_held;		/* connections with TCP_F_MIGRATED */

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

/* Target: what the last LOAD restored, until the guest runs here */
static struct {
	struct tcpm_poked *p;
	unsigned n;
} tcpm_restored;

static void tcpm_restored_set(const int *fds, const unsigned *idx,
			      unsigned n);

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

/* Basic record of a held connection (the flow, not the socket) */
static int tcpm_basic(const struct tcp_conn *conn, struct mig_tcp_basic *b)
{
	union sockaddr_inany local, peer;
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	int tap = (conn->flags & TCP_F_INBOUND) ? 1 : 0, host = !tap;
	int sndbuf = 0;
	socklen_t sl = sizeof(sndbuf);

	memset(b, 0, sizeof(*b));
	if (getsockname(conn->sock, &local.sa, &ll) ||
	    getpeername(conn->sock, &peer.sa, &pl))
		return -errno;
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
	if (conn->flags & TCP_F_SOCK_EOF)
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

/*
 * Dump one socket in repair mode into @e and its queues (malloc'd, the
 * caller frees them). Return: 0 or -errno
 */
static int tcpm_dump(int s, struct mig_tcp_ext *e, uint8_t **sndq,
		     uint8_t **rcvq)
{
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);
	struct tcpm_window w;
	uint32_t seq, mss;
	int v, rc;

	memset(e, 0, sizeof(*e));
	*sndq = *rcvq = NULL;
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl))
		return -errno;
	e->tcpi_state = ti.tcpi_state;
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
	e->max_window = w.max_window;
	e->rcv_wnd = w.rcv_wnd;
	e->rcv_wup = w.rcv_wup;
	if (tcpm_fin_rcvd(e->tcpi_state)) {
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
	if (tcpm_fin_sent(e->tcpi_state) && e->sndq) {
		e->sndq--;
		if (e->notsent)
			e->notsent--;
	}
	if (e->sndq > MIG_QUEUE_MAX || e->notsent > e->sndq)
		return -E2BIG;
	if (e->sndq && !(*sndq = malloc(e->sndq)))
		return -ENOMEM;
	if ((rc = tcpm_peek(s, *sndq, e->sndq)))
		return rc;

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

/* Every held connection's socket, in flow order; returns how many */
static unsigned tcpm_held_fds(int *fds, unsigned max)
{
	unsigned i, n = 0, span = flow_span();

	for (i = 0; i < span && n < max; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (conn && (conn->flags & TCP_F_MIGRATED))
			fds[n++] = conn->sock;
	}
	return n;
}

/* Back in the loop, with the peek offset where our sequence numbers say */
static void tcpm_unhold(struct ctx *c, struct tcp_conn *conn)
{
	tcpm_filter_detach(conn->sock);
	if (tcp_peek_offset_ok) {
		int po = (int)(conn->seq_to_guest - conn->seq_acked);

		if (conn->flags & TCP_F_FIN_SENT)
			po--;
		setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &po,
			   sizeof(po));
	}
	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_QUIET);
	tcpm_held--;
	if (loop_add(c, conn->sock, EPOLLIN | EPOLLRDHUP | EPOLLET,
		     flow_ref((union flow *)conn, REF_TCP))) {
		tcp_rst(c, conn);
		return;
	}
}

/**
 * tcp_migrate_source_hold() - stop and silence every established connection
 * @c:		execution context
 *
 * Takes each ESTABLISHED connection out of the loop, attaches the drop-all
 * filter, and turns TCP_REPAIR on for all of them. On failure, everything
 * is given back as it was.
 *
 * Return: number of connections held, or -errno
 */
int tcp_migrate_source_hold(struct ctx *c)
{
	unsigned i, span = flow_span(), n, unfiltered = 0;
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
		 * below)
		 */
		if ((rc = tcpm_filter_attach(conn->sock)))
			attach_err = -rc;
		loop_del(c, conn->sock);
		if (tcp_peek_offset_ok)
			setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &off,
				   sizeof(off));
		conn->flags |= TCP_F_MIGRATED;
		tcpm_held++;
	}
	if (!tcpm_held)
		return 0;

	fds = calloc(tcpm_held, sizeof(*fds));
	if (!fds) {
		rc = -ENOMEM;
		goto rollback;
	}
	n = tcpm_held_fds(fds, tcpm_held);
	rc = repair_set(c, fds, n, REPAIR_ON);
	if (!rc) {
		rc = tcpm_flush_acks(c, fds, n, !attach_err);
		n = tcpm_held_fds(fds, tcpm_held);
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
	if (unfiltered) {
		/* Migrating unfiltered beats resetting the connections */
		warn("Migration: holding %u of %u connection(s) without the "
		     "drop-all filter (%s%s): the source may ACK data the "
		     "target won't get", unfiltered, n,
		     attach_err ? strerror(attach_err) : "not attached",
		     attach_err ? ", and the repair helper didn't attach it"
				: "");
	} else if (attach_err) {
		info("Migration: the repair helper attached the drop-all "
		     "filter (we can't: %s)", strerror(attach_err));
	}
	return (int)tcpm_held;

rollback:
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (conn && (conn->flags & TCP_F_MIGRATED))
			tcpm_unhold(c, conn);
	}
	return rc;
}

/**
 * tcp_migrate_source_write() - the flow stage of the stream, for the held
 *				connections
 * @b:		stream being written
 *
 * A connection whose socket can't be dumped gets a skip record (the
 * target resets it towards the guest); it stays held here all the same.
 */
void tcp_migrate_source_write(struct mig_buf *b)
{
	unsigned i, span = flow_span();

	mig_put_count(b, tcpm_held);
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		struct mig_tcp_basic basic;

		if (!conn || !(conn->flags & TCP_F_MIGRATED))
			continue;
		if (tcpm_basic(conn, &basic))
			warn("TCP flow %u: addresses unknown", i);
		mig_put_basic(b, &basic);
	}
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		uint8_t *sndq, *rcvq;
		struct mig_tcp_ext e;
		int rc;

		if (!conn || !(conn->flags & TCP_F_MIGRATED))
			continue;
		rc = tcpm_dump(conn->sock, &e, &sndq, &rcvq);
		if (rc) {
			warn("TCP flow %u: can't dump the socket (%s), the "
			     "target will reset it", i, strerror(-rc));
			memset(&e, 0, sizeof(e));
			e.tcpi_state = MIG_TCP_SKIP;
		}
		mig_put_ext(b, &e, sndq, rcvq);
		free(sndq);
		free(rcvq);
	}
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
	unsigned i, span = flow_span(), n, done = 0;
	int *fds;

	if (!tcpm_held)
		return 0;
	fds = calloc(tcpm_held, sizeof(*fds));
	if (fds) {
		n = tcpm_held_fds(fds, tcpm_held);
		if (repair_set(c, fds, n, REPAIR_OFF))
			warn("Can't clear TCP_REPAIR on resumed connections: "
			     "they will be reset");
		free(fds);
	}
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		int on = 0;
		socklen_t sl = sizeof(on);

		if (!conn || !(conn->flags & TCP_F_MIGRATED))
			continue;
		tcpm_unhold(c, conn);
		conn = tcp_conn_at(i);
		if (!conn)
			continue;
		if (!getsockopt(conn->sock, IPPROTO_TCP, TCP_REPAIR, &on,
				&sl) && on) {
			tcp_rst(c, conn);
			continue;
		}
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
 * tcp_migrate_source_release() - the linger is over: close the held
 *				  sockets, still in repair mode (silently)
 * @c:		execution context
 *
 * Return: number of connections released
 */
unsigned tcp_migrate_source_release(struct ctx *c)
{
	unsigned i, span = flow_span(), n = 0;

	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!conn || !(conn->flags & TCP_F_MIGRATED))
			continue;
		/* In repair mode, close() sends neither FIN nor RST */
		close(conn->sock);
		conn->sock = -1;
		conn->flags &= ~TCP_F_MIGRATED;
		tcp_close(c, conn, false);
		n++;
	}
	tcpm_held = 0;
	return n;
}

/**
 * tcp_migrate_held() - how many connections a migration holds
 *
 * Return: count
 */
unsigned tcp_migrate_held(void)
{
	return tcpm_held;
}

/* Write @len bytes into the selected queue, in repair mode or not */
static int tcpm_fill(int s, const uint8_t *p, uint32_t len)
{
	size_t chunk = TCPM_CHUNK;

	while (len) {
		ssize_t n = send(s, p, MIN(chunk, (size_t)len),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if ((errno == ENOBUFS || errno == ENOMEM) &&
			    chunk > TCPM_CHUNK_MIN) {
				chunk /= 2;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (uint32_t)n;
	}
	return 0;
}

static void tcpm_sockaddr(union sockaddr_inany *sa, const struct in6_addr *a,
			  uint16_t port)
{
	if (mig_addr_is_v4(a))
		sockaddr_set(sa, AF_INET, &a->s6_addr[12], port);
	else
		sockaddr_set(sa, AF_INET6, a, port);
}

/* Restore one socket, already in repair mode. Return: 0 or -errno */
static int tcpm_restore(struct ctx *c, int s, const struct mig_flow_in *f,
			int host)
{
	const struct mig_tcp_ext *e = &f->e;
	const struct mig_flowside *hs = &f->b.side[host];
	struct tcpm_opt opts[4];
	union sockaddr_inany local, peer;
	struct tcpm_window w = { e->snd_wl1, e->snd_wnd, e->max_window,
				 e->rcv_wnd, e->rcv_wup };
	uint32_t sent = e->sndq - e->notsent, seq_snd;
	unsigned nopt = 0;
	int rc, sndbuf;

	/* No SO_REUSEADDR here: TCP_REPAIR already forces address reuse
	 * (SK_FORCE_REUSE), and SO_REUSEADDR would lower that to the
	 * ordinary kind, so connections sharing a local port (inbound ones
	 * to a forwarded port) couldn't all be bound
	 */
	sndbuf = (int)MIN((uint64_t)e->sndq * 2 + 65536, (uint64_t)INT32_MAX / 2);
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	tcpm_sockaddr(&local, &hs->oaddr, hs->oport);
	tcpm_sockaddr(&peer, &hs->eaddr, hs->eport);
	if (bind(s, &local.sa, sockaddr_len(&local)))
		return -errno;
	if ((e->tcpi_options & MIG_TCPI_OPT_TIMESTAMPS) &&
	    setsockopt(s, IPPROTO_TCP, TCP_TIMESTAMP, &e->timestamp,
		       sizeof(e->timestamp)))
		return -errno;
	/* FIN_WAIT2: seq_snd is one past our FIN, queued again below */
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
	if ((rc = tcpm_fill(s, f->rcvq, e->rcvq)))
		return rc;
	if ((rc = tcpm_queue(s, TCPM_QUEUE_SEND)) ||
	    (rc = tcpm_fill(s, f->sndq, sent)))
		return rc;

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
	if (e->tcpi_state == MIG_TCP_FIN_WAIT2 && shutdown(s, SHUT_WR))
		return -errno;
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)))
		return -errno;
	tcpm_queue(s, TCPM_QUEUE_NONE);

	if ((rc = repair_set(c, &s, 1, REPAIR_OFF)))
		return rc;

	/* Never sent: ordinary data now, transmitted as usual */
	if ((rc = tcpm_fill(s, f->sndq + sent, e->notsent)))
		return rc;
	if ((e->tcpi_state == MIG_TCP_FIN_WAIT1 ||
	     e->tcpi_state == MIG_TCP_CLOSING ||
	     e->tcpi_state == MIG_TCP_LAST_ACK) && shutdown(s, SHUT_WR))
		return -errno;
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

/* The flow entry for a restored connection, in the loop */
static int tcpm_flow_new(struct ctx *c, int s, const struct mig_flow_in *f,
			 int tap, unsigned *idx)
{
	const struct mig_tcp_basic *b = &f->b;
	struct tcp_conn *conn;
	union flow *flow;

	flow = flow_alloc();
	if (!flow)
		return -ENOSPC;
	conn = &flow->tcp;
	conn->f.type = FLOW_TCP;
	tcpm_tap_key(&conn->f.key, &f->b.side[tap]);
	conn->sock = s;
	conn->f.state = TCP_ST_ESTABLISHED;
	if (b->pif[0] == MIG_PIF_HOST)
		conn->flags |= TCP_F_INBOUND;
	if (b->ws_from_tap || b->ws_to_tap)
		conn->flags |= TCP_F_WS;
	if (b->events & MIG_EV_SOCK_FIN_RCVD)
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
	tcp_sock_tune(s);
	if (flow_hash_insert(flow)) {
		conn->sock = -1;
		flow_close(flow);
		return -EEXIST;
	}
	if (loop_add(c, s, EPOLLIN | EPOLLRDHUP | EPOLLET,
		     flow_ref(flow, REF_TCP))) {
		conn->sock = -1;
		flow_close(flow);
		return -EIO;
	}
	*idx = flow_idx(flow);
	tcp_ack_now(c, conn);
	tcp_data_to_guest(c, conn);
	return 0;
}

/* RST to the guest for a flow we couldn't restore */
static void tcpm_reset_guest(struct ctx *c, const struct mig_flow_in *f,
			     int tap)
{
	struct tcp_conn tmp = { .sock = -1 };

	tcpm_tap_key(&tmp.f.key, &f->b.side[tap]);
	tmp.seq_from_guest = f->b.seq_from_tap;
	tcp_send_ctl(c, &tmp, TCP_RST | TCP_ACK, f->b.seq_to_tap);
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
		int tap = f->b.pif[0] == MIG_PIF_TAP ? 0 : 1;
		struct flow_key k;

		if (f->skip)
			continue;
		tcpm_tap_key(&k, &f->b.side[tap]);
		if (flow_hash_lookup(&k)) {
			snprintf(why, whylen, "flow %u: a connection with "
				 "the same addresses exists here already", i);
			return -EEXIST;
		}
	}
	return 0;
}

/**
 * tcp_migrate_target() - recreate the connections of a validated stream
 * @c:		execution context
 * @s:		parsed stream, checked with tcp_migrate_target_check()
 *
 * Return: number of connections restored; the others were reset towards
 *	   the guest
 */
unsigned tcp_migrate_target(struct ctx *c, const struct mig_stream_in *s)
{
	unsigned done = 0, *idx;
	uint32_t i, n = 0;
	int *fds, *ok;

	if (!s->count)
		return 0;
	fds = calloc(s->count, sizeof(*fds));
	ok = calloc(s->count, sizeof(*ok));
	idx = calloc(s->count, sizeof(*idx));
	if (!fds || !ok || !idx) {
		free(fds);
		free(ok);
		free(idx);
		return 0;
	}
	for (i = 0; i < s->count; i++) {
		const struct mig_flow_in *f = &s->flows[i];
		int host = f->b.pif[0] == MIG_PIF_HOST ? 0 : 1;
		int family = mig_addr_is_v4(&f->b.side[host].oaddr) ?
			     AF_INET : AF_INET6;

		fds[i] = -1;
		if (f->skip)
			continue;
		fds[i] = socket(family, SOCK_STREAM | SOCK_NONBLOCK |
				SOCK_CLOEXEC, IPPROTO_TCP);
		if (fds[i] >= 0)
			n++;
	}

	/* Repair on for all of them at once: compact the list for it */
	{
		int *on = calloc(n ? n : 1, sizeof(*on));
		uint32_t k = 0;

		for (i = 0; on && i < s->count; i++)
			if (fds[i] >= 0)
				on[k++] = fds[i];
		if (!on || repair_set(c, on, k, REPAIR_ON)) {
			warn("Migration: can't turn TCP_REPAIR on for the new "
			     "sockets, resetting %u connections", k);
			for (i = 0; i < s->count; i++) {
				if (fds[i] >= 0)
					close(fds[i]);
				fds[i] = -1;
			}
		}
		free(on);
	}

	for (i = 0; i < s->count; i++) {
		const struct mig_flow_in *f = &s->flows[i];
		int host = f->b.pif[0] == MIG_PIF_HOST ? 0 : 1;
		int rc;

		if (fds[i] < 0) {
			tcpm_reset_guest(c, f, !host);
			continue;
		}
		rc = tcpm_restore(c, fds[i], f, host);
		if (!rc)
			rc = tcpm_flow_new(c, fds[i], f, !host, &idx[done]);
		if (rc) {
			warn("Migration: flow %u can't be restored (%s), "
			     "resetting it", i, strerror(-rc));
			repair_set(c, &fds[i], 1, REPAIR_OFF_NO_WP);
			close(fds[i]);
			tcpm_reset_guest(c, f, !host);
			continue;
		}
		ok[done++] = fds[i];
	}
	tcpm_poke_start(ok, idx, done);
	tcpm_restored_set(ok, idx, done);
	free(fds);
	free(ok);
	free(idx);
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

/* Remember what a LOAD restored (see tcp_migrate_target_abandon()) */
static void tcpm_restored_set(const int *fds, const unsigned *idx,
			      unsigned n)
{
	unsigned i;

	free(tcpm_restored.p);
	memset(&tcpm_restored, 0, sizeof(tcpm_restored));
	if (!n || !(tcpm_restored.p = calloc(n, sizeof(*tcpm_restored.p))))
		return;
	for (i = 0; i < n; i++)
		tcpm_restored.p[i] = (struct tcpm_poked){ idx[i], fds[i] };
	tcpm_restored.n = n;
}

/**
 * tcp_migrate_target_started() - the guest runs here: the connections the
 *				  last LOAD restored are the guest's now
 */
void tcp_migrate_target_started(void)
{
	tcpm_restored_set(NULL, NULL, 0);
}

/**
 * tcp_migrate_target_abandon() - the front-end went away after a LOAD,
 *				  before the guest ran here: close what it
 *				  restored, silently
 * @c:		execution context
 *
 * The target's QEMU can still fail the migration after it gave us the
 * state: it checks the guest's virtio features only then (a guest that
 * negotiated features we don't offer), or it is killed (an aborted
 * migration). The guest then runs on the source again, and the peers'
 * connections are the source's: closing ours normally would send the
 * peers a FIN (or a RST) for them. In repair mode, close() sends nothing.
 *
 * Return: number of connections closed
 */
unsigned tcp_migrate_target_abandon(struct ctx *c)
{
	unsigned i, n = 0;
	int *fds;

	if (!tcpm_restored.n)
		return 0;
	tcpm_poke_stop();
	fds = calloc(tcpm_restored.n, sizeof(*fds));
	for (i = 0; fds && i < tcpm_restored.n; i++) {
		struct tcp_conn *conn = tcp_conn_at(tcpm_restored.p[i].idx);

		if (conn && conn->sock == tcpm_restored.p[i].sock &&
		    !(conn->flags & TCP_F_MIGRATED))
			fds[n++] = conn->sock;
	}
	if (n && repair_set(c, fds, n, REPAIR_ON))
		warn("Migration: can't turn TCP_REPAIR on for %u restored "
		     "connection(s): closing them may reach their peers", n);
	for (i = 0; i < tcpm_restored.n; i++) {
		struct tcp_conn *conn = tcp_conn_at(tcpm_restored.p[i].idx);

		if (!conn || conn->sock != tcpm_restored.p[i].sock ||
		    (conn->flags & TCP_F_MIGRATED))
			continue;
		loop_del(c, conn->sock);
		close(conn->sock);
		conn->sock = -1;
		tcp_close(c, conn, false);
	}
	free(fds);
	tcpm_restored_set(NULL, NULL, 0);
	return n;
}
