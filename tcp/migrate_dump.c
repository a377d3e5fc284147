// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate_dump.c - TCP migration, the source side: the flow stage of the
 * stream, one record per held connection (see doc/migration.md).
 *
 * Theory of operation
 *
 * Once the connections are held (migrate_src.c, steps 1 and 2), each
 * socket's TCP state is read first, then its record is written from the
 * socket itself: TCP_INFO, MSS, timestamp, the window as it was before
 * the hold closed it, both queues and their sequence numbers (migrate.c
 * says how they are counted). Towards the guest, what it hasn't ACKed is
 * written as never sent, so any target sends it again at once. A socket
 * that can't be moved any more, or dumped, gets a skip record, and so does
 * every RST the guest is still owed (seg.c): the target answers each
 * with a RST to the guest.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "log.h"
#include "repair/format.h"
#include "repair/tcp_info.h"
#include "tcp/conn.h"
#include "tcp/kept.h"
#include "tcp/migrate.h"
#include "tcp/migrate_internal.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/to_guest.h"
#include "tcp/window.h"
#include "util.h"

/* Is our FIN in the send queue's sequence space? */
static bool tcpm_fin_sent(uint8_t st)
{
	return st == MIG_TCP_FIN_WAIT1 || st == MIG_TCP_FIN_WAIT2 ||
	       st == MIG_TCP_CLOSING || st == MIG_TCP_LAST_ACK;
}

/* Is @st a state we can move (the extended record's states)? */
static bool tcpm_movable(uint8_t st)
{
	return st == MIG_TCP_ESTABLISHED || tcpm_fin_sent(st) ||
	       st == MIG_TCP_CLOSE_WAIT;
}

/**
 * struct tcpm_info - what the dump takes from a held socket's TCP_INFO,
 *		      read once (tcpm_sock_state())
 * @state:	the kernel's state (tcpi_state)
 * @options:	tcpi_options
 * @snd_ws:	send window scale
 * @rcv_ws:	receive window scale
 * @scales:	the kernel gave the scales (tcpi_flags7 is in its layout)
 */
struct tcpm_info {
	uint8_t state;
	uint8_t options;
	uint8_t snd_ws;
	uint8_t rcv_ws;
	bool scales;
};

/**
 * tcpm_sock_state() - what the kernel says of a held socket
 * @s:		the socket
 * @fin_rcvd:	set if the peer's FIN is in it
 * @si:		set to what the dump needs of the same TCP_INFO
 *
 * Its state as the stream will carry it, and whether the peer's FIN is in it. A
 * socket in CLOSE without an error closed cleanly from FIN_WAIT2 or LAST_ACK
 * (see the top of migrate.c): FIN_WAIT2 with the peer's FIN.
 *
 * Return: the state, or MIG_TCP_SKIP if the socket can't be moved (reset, timed
 *	out, unknown)
 */
static uint8_t tcpm_sock_state(int s, bool *fin_rcvd, struct tcpm_info *si)
{
	struct tcp_info_k ti;
	socklen_t sl;
	int err = 0, n;

	*fin_rcvd = false;
	memset(si, 0, sizeof(*si));
	n = tcp_info_get(s, &ti);
	if (n < 0 || !TCP_INFO_HAS(n, tcpi_state))
		return MIG_TCP_SKIP;
	/* Window scales in byte 6 */
	*si = (struct tcpm_info){ ti.tcpi_state, ti.tcpi_options,
				  ti.tcpi_snd_wscale, ti.tcpi_rcv_wscale,
				  TCP_INFO_HAS(n, tcpi_flags7) };
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

/**
 * tcpm_basic() - basic record of a held connection (the flow, not the socket)
 * @c:		execution context
 * @conn:	connection
 * @fin_rcvd:	the peer's FIN is in the socket's state
 * @b:		the record, filled in
 *
 * Basic record of a held connection (the flow, not the socket); @fin_rcvd: the
 * peer's FIN is in the socket's state
 *
 * Return: 0 or -errno
 */
static int tcpm_basic(const struct ctx *c, const struct tcp_conn *conn,
		      bool fin_rcvd, struct mig_tcp_basic *b)
{
	/* Families set: the analyzer can't tell getsockname() fills them */
	union sockaddr_inany local = { .sa.sa_family = AF_UNSPEC };
	union sockaddr_inany peer = { .sa.sa_family = AF_UNSPEC };
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
	/* Our SYN-ACK sent, the guest's ACK not here yet (tcpm_movable()):
	 * its window comes with that ACK. Until then, one segment's worth,
	 * so that the target sends something the guest answers: with 0, a
	 * guest that had nothing to send, its ACK lost, would never say.
	 * And an ACK from the guest is due: for our SYN-ACK, which it may
	 * never have had (sent into a ring the switch-over had stopped
	 * already). Our target sends it again as soon as the guest runs
	 * there (migrate_dst.c): a guest in SYN-SENT ignores anything else,
	 * and would wait for its own SYN's retransmission, seconds later
	 */
	if (conn->f.state == TCP_ST_SYNACK_TO_GUEST) {
		if (!b->wnd_from_tap)
			b->wnd_from_tap = (uint16_t)MAX((uint32_t)conn->mss >>
							conn->ws_guest, 1U);
		b->flags |= MIG_F_ACK_FROM_TAP_DUE;
	}
	/* What the guest may send: up to the largest edge we advertised
	 * (rounded up to the field), not the window we'd offer now (0 while
	 * a tail waits: the target would refuse what the guest has in
	 * flight, and leave it to the guest's RTO, doubled by each of those
	 * refusals: tcp/kept.c)
	 */
	b->wnd_to_tap = tcp_wnd_offered(conn);
	if (SEQ_GT(conn->wnd_adv, conn->seq_from_guest)) {
		uint32_t g = (1U << conn->ws_ours) - 1;
		uint32_t w = (conn->wnd_adv - conn->seq_from_guest + g) >>
			     conn->ws_ours;

		b->wnd_to_tap = (uint16_t)MAX((uint32_t)b->wnd_to_tap,
					      MIN(w, 65535U));
	}
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

/**
 * tcpm_basic_owed() - basic record for a RST the guest is owed
 * @c:		execution context
 * @o:		the RST owed (seg.c, tcp_rst_owe())
 * @b:		the record, filled in
 *
 * The connection is gone here, and goes as a skip record, so that the target
 * sends the RST. The HOST side is what it would be, as far as the flow tells:
 * the peer, and, for the local address, unspecified with the guest's port
 * (unique with the peer, as the real one was).
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

/**
 * tcpm_peek_rcvq() - read bytes of the receive queue (repair mode), exactly
 * @s:		the socket
 * @buf:	where the bytes go
 * @len:	number of bytes to read
 *
 * A read stops at the mark of urgent data (tcp_recvmsg_locked(), even with
 * SO_OOBINLINE), so with a peek offset (Linux 6.9; the hold set it to 0, the
 * head of the queue), go on from where the last one stopped.
 *
 * Return: 0 or -errno
 */
static int tcpm_peek_rcvq(int s, uint8_t *buf, uint32_t len)
{
	uint32_t got = 0;
	ssize_t n;

	if (!len)
		return 0;
	if (!tcp_peek_offset_ok)
		return tcpm_peek(s, buf, len);
	while (got < len) {
		n = recv(s, buf + got, len - got, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;
		got += (uint32_t)n;
	}
	return 0;
}

/**
 * tcpm_dump() - dump one held socket (repair mode) and its queues
 * @conn:	the connection
 * @st:		its state as tcpm_sock_state() gave it
 * @si:		what tcpm_sock_state() read of its TCP_INFO
 * @e:		the extended record, filled in
 * @sndq:	set to the send queue, malloc'd (the caller frees it)
 * @rcvq:	set to the receive queue, malloc'd (the caller frees it)
 *
 * Never-sent data still waiting in our memory (TCP_F_TAIL: a migration came
 * before it drained) goes at the end of the send queue, as never sent, and its
 * FIN with it.
 *
 * Return: 0 or -errno
 */
static int tcpm_dump(const struct tcp_conn *conn, uint8_t st,
		     const struct tcpm_info *si, struct mig_tcp_ext *e,
		     uint8_t **sndq, uint8_t **rcvq)
{
	const struct tcpm_tail *tail = tcpm_tail_of(conn);
	uint32_t seq, mss, more = tail ? tail->len - tail->off : 0;
	int s = conn->sock, v, rc;
	struct tcpm_window w;

	memset(e, 0, sizeof(*e));
	*sndq = *rcvq = NULL;
	if (!si->scales)
		return -EIO;
	e->tcpi_state = st;
	e->tcpi_options = si->options;
	e->snd_ws = si->snd_ws;
	e->rcv_ws = si->rcv_ws;
	if ((rc = tcpm_get_u32(s, TCP_MAXSEG, &mss)))
		return rc;
	e->mss = mss;
	if (si->options & TCPI_OPT_TIMESTAMPS) {
		if ((rc = tcpm_get_u32(s, TCP_TIMESTAMP, &e->timestamp)))
			return rc;
		tcpm_ts_freeze(conn, e->timestamp,
			       si->options & TCPM_TCPI_OPT_USEC_TS);
	}
	if ((rc = tcpm_get_window(s, &w)))
		return rc;
	e->snd_wl1 = w.snd_wl1;
	e->snd_wnd = w.snd_wnd;
	tcpm_saved_window(conn, &e->snd_wnd);	/* the hold closed it */
	e->max_window = w.max_window;
	e->rcv_wnd = w.rcv_wnd;
	e->rcv_wup = w.rcv_wup;
	if (tcpm_fin_rcvd(st) || si->state == TCPM_TCP_CLOSE) {
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
	if (tcpm_fin_sent(si->state) && e->sndq) {
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
		/* *sndq is NULL only if sndq + more is 0 (it can't wrap:
		 * checked against MIG_QUEUE_MAX above)
		 */
		if (more)
			/* NOLINTNEXTLINE(*.NonNullParamChecker) */
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
	/* The receive queue stays selected: repair mode only reads it,
	 * and on again (a poke, on a target) selects none
	 */
	return tcpm_peek_rcvq(s, *rcvq, e->rcvq);
}

/**
 * tcpm_write_owed() - the records of the RSTs owed to the guest
 * @c:		execution context
 * @b:		stream buffer being written
 * @ext:	write the skip records, not the basic ones
 *
 * After the held connections: their basic records (@ext false), or their skip
 * records (@ext true), in the same order.
 *
 * Return: how many
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
 * The RSTs the guest is owed for connections already gone (seg.c) go as
 * skip records too.
 */
void tcp_migrate_source_write(struct ctx *c, struct mig_buf *b)
{
	unsigned i, span = flow_span(), n = 0, k, nowed, owed = 0;
	const struct tcp_rst_owed *ow;
	struct tcpm_info *si;
	uint64_t t = now_ns();
	unsigned us_basic;
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
	si = calloc(n ? n : 1, sizeof(*si));
	if (!st || !fin || !si) {
		free(st);
		free(fin);
		free(si);
		b->err = -ENOMEM;
		return;
	}

	mig_put_count(b, n + owed);
	for (i = 0, k = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		struct mig_tcp_basic basic;

		if (!tcpm_is_held(conn))
			continue;
		st[k] = tcpm_sock_state(conn->sock, &fin[k], &si[k]);
		if (st[k] == MIG_TCP_SKIP)
			flow_warn(conn, "the connection is gone (reset or "
				  "timed out), the target will reset it");
		else if (fin[k])
			conn->flags |= TCP_F_SOCK_EOF;
		if (tcpm_basic(c, conn, fin[k], &basic)) {
			flow_warn(conn, "addresses unknown");
			b->err = -EINVAL;
		}
		mig_put_basic(b, &basic);
		k++;
	}
	tcpm_write_owed(c, b, false);
	us_basic = tcpm_lap(&t);
	for (i = 0, k = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		uint8_t *sndq = NULL, *rcvq = NULL;
		struct mig_tcp_ext e;
		int rc = -ENOTCONN;

		if (!tcpm_is_held(conn))
			continue;
		if (st[k] != MIG_TCP_SKIP) {
			rc = tcpm_dump(conn, st[k], &si[k], &e, &sndq,
				       &rcvq);
			if (rc)
				flow_warn(conn, "can't dump the socket (%s), "
					  "the target will reset it",
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
	free(si);
	tcpm_write_owed(c, b, true);
	debug("Migration: %u connection(s) dumped: %u us states and basic "
	      "records, %u us sockets", n, us_basic, tcpm_lap(&t));
}
