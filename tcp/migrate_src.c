// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate_src.c - TCP migration, the source side: holding the connections
 * from the SAVE on, resuming them if the migration fails, releasing them
 * when the linger ends; the listeners of forwarded ports meanwhile.
 *
 * Theory of operation
 *
 * Source (tcp_migrate_source_hold(), then _write(), in migrate_dump.c):
 *  0. from the SAVE on, the listening sockets of forwarded ports take
 *     nothing (tcp_migrate_listen()): no accept(), and they drop SYNs
 *     (IP_MINTTL 255, and the drop-all filter where the kernel lets us),
 *     so that a peer's SYN is sent again until it reaches the target. A
 *     connection accepted here could only be reset.
 *  1. every ESTABLISHED connection is taken out of the loop, and made
 *     deaf: IP_MINTTL (IPV6_MINHOPCOUNT) 255, which any process may set
 *     and which drops every segment that crossed a router or came from a
 *     host with the usual initial TTL, and, with repair mode (step 2), a
 *     socket filter that drops every incoming segment (by passt-repair,
 *     which attaches it to a deaf socket with TCP_REPAIR, or by us where
 *     it didn't and the kernel lets us; SO_GET_FILTER tells). From then
 *     on the kernel neither ACKs what the peer sends (a socket in repair
 *     mode would) nor answers it with a RST: the peer retransmits until
 *     the fabric delivers to the target.
 *     The flow is marked TCP_F_MIGRATED. An event already queued for it
 *     is ignored (tcp.c).
 *  2. TCP_REPAIR goes on for all of them (repair/repair.c). A socket that
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
 *     4 Mbit/s link with 2 s of queue). Then (migrate_dump.c) the TCP
 *     state of each is read first (TCP_INFO), because the state says what
 *     the loop may not have seen yet: a FIN the kernel took after our
 *     last look is in tcpi_state, not in our flags, and a socket reset or
 *     timed out meanwhile is in CLOSE with an error. The FIN flags of the
 *     record come from the state; a dead socket gets a skip record. Then
 *     each socket is dumped: TCP_INFO, MSS, timestamp, window, both
 *     queues and their sequence numbers. Towards the guest, what it
 *     hasn't ACKed is written as never sent, so any target sends it again
 *     at once. The socket stays open, in repair mode and deaf: that is
 *     the linger.
 *  3. If the migration fails (QEMU restarts the device here), the held
 *     connections come back (tcp_migrate_source_resume()): repair off,
 *     filter and TTL limit off, back in the loop, the peek offset where it
 *     was; the listeners take connections again. Those whose sockets
 *     can't leave repair mode yet (the helper is late, or gone) stay held
 *     until it answers, while the guest runs here (TCP_F_GUEST_HERE):
 *     what the guest sends them meanwhile is kept and ACKed (tcp/kept.c,
 *     tcp_data_held()), inside the windows it had, and written to the
 *     socket first when they come back (EPOLLOUT, as any kept data).
 *  4. When the linger ends, the held sockets are closed still in repair
 *     mode (tcp_migrate_source_release()): the kernel sends nothing, no
 *     FIN, no RST. Every other connection is reset (see migrate.c).
 *
 * The target's side is migrate_dst.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "log.h"
#include "loop.h"
#include "repair/repair.h"
#include "repair/tcp_info.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/connect.h"
#include "tcp/migrate.h"
#include "tcp/migrate_internal.h"
#include "tcp/seg.h"
#include "tcp/to_guest.h"
#include "util.h"

/**
 * struct tcpm_wnd - source: what the hold changes in a held socket and a
 *		     resume puts back: its send window (see
 *		     tcpm_shut_window()) and its timestamp clock (see
 *		     tcpm_ts_freeze())
 * @idx:	flow index
 * @gen:	flow generation
 * @snd_wnd:	the peer's window as it was
 * @ts:		the timestamp clock as dumped, if @ts_at
 * @ts_at:	when it was dumped (ms), 0 if the clock wasn't moved
 * @ts_us:	the clock counts microseconds (TCPI_OPT_USEC_TS)
 */
struct tcpm_wnd {
	unsigned idx;
	uint32_t gen;
	uint32_t snd_wnd;
	uint32_t ts;
	uint64_t ts_at;
	bool ts_us;
};

/* How far back a held socket's timestamp clock goes after the dump: far
 * more than any linger, far less than the 2^31 of PAWS
 */
#define TCPM_TS_BACK	(1U << 30)

static struct tcpm_wnd *tcpm_wnds;
static unsigned tcpm_nwnds;

/**
 * tcpm_wnd_of() - the entry of a held connection in tcpm_wnds
 * @conn:	connection
 *
 * The table is in flow order (tcpm_shut_window()), searched in halves, as the
 * dump and the resume look up every connection in the downtime.
 *
 * Return: the entry, NULL if none
 */
static struct tcpm_wnd *tcpm_wnd_of(const struct tcp_conn *conn)
{
	unsigned lo = 0, hi = tcpm_nwnds;
	unsigned idx = flow_idx((const union flow *)conn);

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (tcpm_wnds[mid].idx < idx) {
			lo = mid + 1;
		} else if (tcpm_wnds[mid].idx > idx) {
			hi = mid;
		} else {
			return tcpm_wnds[mid].gen == conn->f.gen ?
			       &tcpm_wnds[mid] : NULL;
		}
	}
	return NULL;
}

/**
 * tcpm_saved_window() - the peer's send window of a held @conn before the
 *			 hold closed it
 * @conn:	connection
 * @wnd:	set to the window
 *
 * Return: false if there is none kept for it
 */
bool tcpm_saved_window(const struct tcp_conn *conn, uint32_t *wnd)
{
	const struct tcpm_wnd *w = tcpm_wnd_of(conn);

	if (!w)
		return false;
	*wnd = w->snd_wnd;
	return true;
}

/**
 * tcpm_ts_freeze() - a held socket's timestamp clock was dumped: set it
 *		      far back, until the migration is over or fails
 * @conn:	held connection, in repair mode
 * @ts:		the clock as dumped (TCP_TIMESTAMP)
 * @us:		the clock counts microseconds
 *
 * A held socket may still send: its retransmission timer runs (see the
 * top of the file). Each such segment would carry a timestamp past the
 * dumped one, the peer would take it as its ts_recent, and the target,
 * whose clock starts from the dumped value when the state arrives, would
 * be behind it: the peer would drop the target's data (PAWS) and, since
 * Linux 6.14, its window probes (PAWSOldAck) until the target's clock
 * caught up. With the clock far back, the peer drops the source's
 * segments instead, and the target is ahead of everything the peer took.
 */
void tcpm_ts_freeze(const struct tcp_conn *conn, uint32_t ts, bool us)
{
	struct tcpm_wnd *w = tcpm_wnd_of(conn);
	uint32_t back = ts - TCPM_TS_BACK;	/* even: the unit bit stays */

	if (!w || setsockopt(conn->sock, IPPROTO_TCP, TCP_TIMESTAMP, &back,
			     sizeof(back)))
		return;
	w->ts = ts;
	w->ts_at = now_ms();
	w->ts_us = us;
}

/*
 * The clock of a held @conn as it would be had the hold not moved it. The
 * value's lowest bit says whether the clock counts microseconds (Linux
 * 6.7: TCP_TIMESTAMP sets tcp_usec_ts from it), so it is kept as dumped:
 * an odd sum would switch a millisecond clock to microseconds, a thousand
 * times faster, and the peer's ts_recent with it
 */
static void tcpm_ts_thaw(const struct tcp_conn *conn)
{
	struct tcpm_wnd *w = tcpm_wnd_of(conn);
	uint32_t ts;

	if (!w || !w->ts_at)
		return;
	ts = w->ts + (uint32_t)(now_ms() - w->ts_at) * (w->ts_us ? 1000 : 1);
	ts = (ts & ~1U) | (w->ts & 1U);
	setsockopt(conn->sock, IPPROTO_TCP, TCP_TIMESTAMP, &ts, sizeof(ts));
	w->ts_at = 0;
}

/**
 * tcpm_ack_owed() - does a socket owe its peer an ACK a window probe can clear?
 * @s:		the socket, in repair mode
 *
 * The kernel sets rcv_wup to rcv_nxt with every segment it sends, so they
 * differ exactly while data came in that no ACK has covered yet: a delayed ACK
 * is pending. The kernel sends probes in ESTABLISHED only.
 *
 * Return: true if so
 */
static bool tcpm_ack_owed(int s)
{
	struct tcp_info_k ti;
	struct tcpm_window w;
	uint32_t rcv_nxt;
	int n;

	/* The queue stays selected: the dump selects its own, and repair
	 * mode on again (tcpm_flush_acks()) selects none
	 */
	if (!tcpm_queue(s, TCPM_QUEUE_RECV) &&
	    !tcpm_get_u32(s, TCP_QUEUE_SEQ, &rcv_nxt) &&
	    !tcpm_get_window(s, &w) && w.rcv_wup == rcv_nxt)
		return false;
	/* The state last, for the few that may owe one */
	n = tcp_info_get(s, &ti);
	return n >= 0 && TCP_INFO_HAS(n, tcpi_state) &&
	       ti.tcpi_state == TCP_ESTABLISHED;
}

/**
 * tcpm_flush_acks() - have held sockets send the delayed ACKs they owe, now
 * @c:		execution context
 * @fds:	the sockets, in repair mode (reordered)
 * @n:		number of entries in @fds
 * @refilter:	attach our drop-all filter again at once
 *
 * Held sockets in repair mode (those tcpm_ack_owed() found owing in a first
 * look) may still owe their peer a delayed ACK, and the
 * kernel's timer sends it (pure ACKs don't look at repair mode) up to 200 ms
 * later: from the source, after the migration, advancing the peer's snd_una. So
 * those sockets leave repair mode once and go back in it: TCP_REPAIR_OFF sends
 * a window probe, and any segment sent counts as the ACK owed, which clears the
 * pending one. The probe's sequence number is an old one, so the peer doesn't
 * take its ACK (it answers with its own, which the filter drops): what the ACK
 * would have covered stays unacked at the peer, to be sent again to the target.
 * The repair helper's "off" takes the drop-all filter away for that moment:
 * ours goes back at once (@refilter), and the helper's "on" attaches it again.
 * More data may come in meanwhile, hence the rounds.
 *
 * Return: 0, or -errno from repair_set() (some may be out of repair mode)
 */
static int tcpm_flush_acks(struct ctx *c, int *fds, unsigned n,
			   bool refilter)
{
	unsigned i, k = n, round;
	int rc;

	for (round = 0; round < 3; round++) {
		for (i = 0, k = 0; round && i < n; i++) {
			if (tcpm_ack_owed(fds[i]))
				fds[k++] = fds[i];
		}
		if (!round)
			k = n;
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

/*
 * Can @conn move? Established, or connected with our SYN-ACK sent to the
 * guest: the guest's ACK may be in the TX ring the switch-over stopped,
 * with its first data, and the target takes them from there (a flow it
 * didn't know would get a RST, after the guest had its connection). It
 * goes as established, our SYN acknowledged, an ACK from the guest due
 * (migrate_dump.c): the SYN-ACK is in the guest's memory already (the
 * used ring moves with it), or, sent into a stopped ring or dropped for
 * lack of buffers, the target sends it again (migrate_dst.c)
 */
static bool tcpm_conn_movable(const struct tcp_conn *conn)
{
	return conn && conn->sock >= 0 && !(conn->flags & TCP_F_MIGRATED) &&
	       (conn->f.state == TCP_ST_ESTABLISHED ||
		conn->f.state == TCP_ST_SYNACK_TO_GUEST);
}

/**
 * tcpm_is_held() - a connection the source holds (not one a target
 *		    restored and parks)?
 * @conn:	connection, or NULL
 *
 * Return: true if it is
 */
bool tcpm_is_held(const struct tcp_conn *conn)
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

/**
 * tcpm_unhold() - a held connection back in the loop, its peek offset set
 * @c:		execution context
 * @conn:	connection
 *
 * Back in the loop, with the peek offset where our sequence numbers say
 */
static void tcpm_unhold(struct ctx *c, struct tcp_conn *conn)
{
	tcpm_filter_detach(conn->sock);
	tcpm_deaf(conn->sock, AF_UNSPEC, false);
	if (tcp_peek_offset_ok) {
		int po = (int)(conn->seq_to_guest - conn->seq_acked);

		/* Our FIN is in that span, not in the socket; a FIN the
		 * guest ACKed leaves no span at all (-1 would turn the
		 * offset off, and a peek would start at the queue's head)
		 */
		if ((conn->flags & TCP_F_FIN_SENT) && po > 0)
			po--;
		setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &po,
			   sizeof(po));
	}
	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_GUEST_HERE | TCP_F_QUIET);
	tcp_block_back(conn);
	if (loop_add(c, conn->sock, tcpm_events(conn),
		     flow_ref((union flow *)conn, REF_TCP)))
		tcp_rst(c, conn);
}

/*
 * A held connection goes back to the loop, unless its socket is still in
 * repair mode (no helper to clear it): that one can't move data and is
 * reset (closed in repair mode, it sends the peer nothing). Return: true
 * if it went back to the loop (where loop_add() may still have reset it)
 */
static bool tcpm_take_back(struct ctx *c, struct tcp_conn *conn)
{
	if (tcpm_in_repair(conn->sock)) {
		conn->flags &= ~(TCP_F_MIGRATED | TCP_F_GUEST_HERE);
		tcp_rst(c, conn);
		return false;
	}
	tcpm_unhold(c, conn);
	return true;
}

/**
 * tcpm_shut_window() - close the send window of each held socket
 *
 * See the top of the file; the peer's value is kept in tcpm_wnds.
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
							    w.snd_wnd, 0, 0,
							    false };
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

/* Connections a listener's queue holds at most, as far as we look */
#define TCPM_DRAIN_MAX	4096

/*
 * Reset what the kernel completed on listener @s and we haven't accepted
 * yet: from the SAVE on we won't, and such a connection, not ours, is
 * neither deaf nor held: it would take (and acknowledge) what its peer
 * sends during the linger, and be reset when the listener closes. Reset
 * now, the peer learns at once, and tries again (its SYNs reach the target
 * once the fabric has switched). Return: how many
 */
static unsigned tcpm_listen_drain(int s)
{
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	unsigned n;

	for (n = 0; n < TCPM_DRAIN_MAX; n++) {
		int a = accept4(s, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (a < 0)
			break;
		setsockopt(a, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
		close(a);
	}
	return n;
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
	unsigned i, n = fwd_tcp_listeners(&fds), drained = 0;

	if (tcp_listen_paused() == !on)
		return;
	tcp_listen_pause(!on);
	for (i = 0; i < n; i++) {
		union sockaddr_inany sa = { .sa.sa_family = AF_UNSPEC };
		socklen_t sl = sizeof(sa);
		uint32_t ref;

		if (getsockname(fds[i], &sa.sa, &sl))
			continue;
		ref = FWD_REF(sockaddr_port(&sa), sa.sa.sa_family);
		if (on) {
			tcpm_filter_detach(fds[i]);
			tcpm_deaf(fds[i], sa.sa.sa_family, false);
		} else {
			tcpm_filter_attach(fds[i]);
			tcpm_deaf(fds[i], sa.sa.sa_family, true);
		}
		loop_mod(c, fds[i], on ? EPOLLIN : 0,
			 loop_ref(REF_TCP_LISTEN, ref, (uint32_t)fds[i]));
		if (!on)
			drained += tcpm_listen_drain(fds[i]);
	}
	if (n)
		debug("Migration: %u forwarded TCP port listener(s) %s", n,
		      on ? "taking connections again" : "dropping SYNs");
	if (drained)
		info("Migration: %u connection(s) waiting in a forwarded port's "
		     "queue reset (the guest never saw them: they can't move)",
		     drained);
}

/**
 * tcp_migrate_listen_paused() - do forwarded ports take no connections now?
 *
 * Return: true between a SAVE and the end of the migration (or its failure)
 */
bool tcp_migrate_listen_paused(void)
{
	return tcp_listen_paused();
}

/**
 * tcp_migrate_source_hold() - stop and silence every connection that can move
 * @c:		execution context
 *
 * Takes each of them (tcpm_conn_movable()) out of the loop, makes its socket
 * deaf (drop-all filter, TTL limit), and turns TCP_REPAIR on for all of
 * them. On failure, those never asked for repair mode are given back as they
 * were; those asked for it (a helper that failed or is late may have set it,
 * or may yet: repair_pending()) stay held, deaf and silent, for
 * tcp_migrate_source_resume() when the guest runs here again: taken back or
 * reset now, a socket in repair mode could only be reset.
 *
 * Return: number of connections held, or -errno
 */
int tcp_migrate_source_hold(struct ctx *c)
{
	unsigned i, span = flow_span(), n, held = 0, unfiltered = 0, nowed = 0;
	unsigned us_prep, us_on, us_flush, asked = 0, j;
	int *fds, *owed, rc, attach_err = 0, one = 1;
	bool helper_filter = false;
	struct repair_pipe rp;
	uint64_t t = now_ns();

	/* Restored here by the last migration, poked still: no more */
	tcpm_poke_end(c);
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);
		int zero = 0;

		if (!tcpm_conn_movable(conn))
			continue;
		/* The queue must start at seq_acked: ACKed bytes go first */
		if (tcp_sock_sync(c, conn))
			continue;
		/* The drop-all filter comes with repair mode (below) */
		tcpm_deaf(conn->sock, AF_UNSPEC, true);
		/* A delayed ACK still owed, sent now, while the socket may
		 * send it (deaf, nothing new arrives after it): the kernel
		 * does that for a socket whose receive queue is empty (the
		 * guest took and ACKed it all), which spares most sockets the
		 * round of tcpm_flush_acks(), two requests to the helper. It
		 * acknowledges nothing the dump won't carry
		 */
		setsockopt(conn->sock, IPPROTO_TCP, TCP_QUICKACK, &one,
			   sizeof(one));
		/* Urgent data stays in the dumped stream: every socket has
		 * SO_OOBINLINE from the start (tcp_sock_tune()), or SIOCINQ
		 * would stop at the mark (tcp_inq())
		 */
		loop_del(c, conn->sock);
		/* The dump peeks the receive queue from its head, on past
		 * the marks of urgent data (migrate_dump.c)
		 */
		if (tcp_peek_offset_ok)
			setsockopt(conn->sock, SOL_SOCKET, SO_PEEK_OFF, &zero,
				   sizeof(zero));
		conn->flags |= TCP_F_MIGRATED;
		conn->flags &= ~TCP_F_GUEST_HERE;	/* it runs elsewhere */
		held++;
	}
	if (!held)
		return 0;

	us_prep = tcpm_lap(&t);
	fds = calloc(held, sizeof(*fds));
	owed = calloc(held, sizeof(*owed));
	if (!fds || !owed) {
		free(fds);
		free(owed);
		rc = -ENOMEM;
		goto rollback;
	}
	n = tcpm_held_fds(fds, held);
	/* Repair on, a chunk at a time: the ACKs owed are looked for in each
	 * chunk while the helper takes the next one (struct repair_pipe)
	 */
	rc = 0;
	repair_pipe_start(c, &rp, fds, n, REPAIR_ON, TCPM_PIPE_CHUNK);
	for (i = 0; i < n; i++) {
		if (!repair_pipe_ready(c, &rp, i)) {
			rc = -EIO;
			break;
		}
		if (tcpm_ack_owed(fds[i]))
			owed[nowed++] = fds[i];
	}
	repair_pipe_ready(c, &rp, n);	/* all answered: nothing in flight */
	asked = rp.started;	/* in flow order, as fds */
	/* Our passt-repair attaches the drop-all filter to each deaf socket
	 * it puts in repair mode, on all or on none (upstream's never does):
	 * the last one tells. Where it didn't, we attach ours, if the kernel
	 * lets us (some want CAP_NET_ADMIN for any socket filter: refused
	 * once, it will be for the others too). Not before: a filter is a
	 * program the kernel compiles for each socket, milliseconds at a
	 * thousand, twice if the helper then replaces it; and nothing is
	 * lost meanwhile: the sockets are deaf by their TTL limit, and
	 * whatever still arrives before the dump goes with the state
	 */
	if (!rc && n) {
		helper_filter = tcpm_filtered(fds[n - 1]);
		for (i = 0; !helper_filter && !attach_err && i < n; i++) {
			if ((rc = tcpm_filter_attach(fds[i])))
				attach_err = -rc;
		}
		rc = 0;
	}
	us_on = tcpm_lap(&t);
	if (!rc && nowed)
		rc = tcpm_flush_acks(c, owed, nowed,
				     !helper_filter && !attach_err);
	us_flush = tcpm_lap(&t);
	if (rc) {
		/* Some may be in repair mode: take them out silently, if the
		 * helper answers in time
		 */
		if (nowed)
			asked = n;	/* the flush asked for any of them */
		repair_set(c, fds, asked, REPAIR_OFF_NO_WP);
		free(fds);
		free(owed);
		goto rollback;
	}
	/* Without the helper's, we attached ours on each, unless refused,
	 * which stopped us at the first one refused (the last has none of
	 * ours then). So the last one tells: not a look at each
	 */
	if (attach_err && n && !tcpm_filtered(fds[n - 1]))
		unfiltered = n;
	free(fds);
	free(owed);
	tcpm_shut_window();
	debug("Migration: held %u connection(s): %u us out of the loop and "
	      "deaf, %u us repair on (%u ACK(s) owed), %u us ACKs owed, %u us "
	      "windows shut", held, us_prep, us_on, nowed, us_flush,
	      tcpm_lap(&t));
	if (unfiltered) {
		info("Migration: holding %u of %u connection(s) without the "
		     "drop-all filter (%s%s), deaf by their TTL limit alone",
		     unfiltered, n,
		     attach_err ? strerror(attach_err) : "not attached",
		     attach_err ? ", and the repair helper didn't attach it"
				: "");
	} else if (helper_filter) {
		info("Migration: the repair helper attached the drop-all "
		     "filter");
	}
	return (int)held;

rollback:
	/* Those asked for repair mode wait, held (see above), unless out of
	 * it and not in a late helper's request: the others come back now
	 */
	for (i = 0, j = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!tcpm_is_held(conn))
			continue;
		if (j++ < asked && (tcpm_in_repair(conn->sock) ||
				    repair_pending(conn->sock)))
			continue;
		tcpm_unhold(c, conn);
	}
	return rc;
}

/**
 * tcp_migrate_source_resume() - the migration failed: take the held
 *				 connections back
 * @c:		execution context
 * @give_up:	reset those that can't leave repair mode now, rather than
 *		leave them held for a helper to come
 * @waiting:	set to how many stay held, waiting for a repair helper
 *
 * Leaving repair mode needs the helper (or CAP_NET_ADMIN). Without one,
 * or with one that is late (repair_busy(): not asked again until it
 * answers), a held connection can't move data: unless @give_up, it stays
 * held, deaf and silent, as it was, and a later call (a helper connected
 * or answered) takes it back; with @give_up it is reset (closed in
 * repair mode, which the peer doesn't hear; the guest gets a RST).
 *
 * Return: number of connections resumed
 */
unsigned tcp_migrate_source_resume(struct ctx *c, bool give_up,
				   unsigned *waiting)
{
	unsigned i, span = flow_span(), n, held = 0, done = 0;
	int *fds;

	*waiting = 0;
	tcp_migrate_listen(c, true);
	for (i = 0; i < span; i++)
		held += tcpm_is_held(tcp_conn_at(i));
	if (!held) {
		tcpm_wnds_free();
		return 0;
	}
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!tcpm_is_held(conn))
			continue;
		tcpm_open_window(conn);
		tcpm_ts_thaw(conn);
	}
	fds = calloc(held, sizeof(*fds));
	if (fds && !repair_busy()) {
		n = tcpm_held_fds(fds, held);
		if (repair_set(c, fds, n, REPAIR_OFF))
			warn("Can't clear TCP_REPAIR on resumed connections "
			     "(no passt-repair helper)");
	}
	free(fds);
	for (i = 0; i < span; i++) {
		struct tcp_conn *conn = tcp_conn_at(i);

		if (!tcpm_is_held(conn))
			continue;
		/* In repair mode, or in the request of a late helper, which
		 * may set it any time: held until a helper answers
		 */
		if (!give_up && (tcpm_in_repair(conn->sock) ||
				 repair_pending(conn->sock))) {
			/* The guest runs here: what it sends meanwhile is
			 * kept and ACKed, and goes to the socket before
			 * anything newer when it comes back (tcp_data_held())
			 */
			conn->flags |= TCP_F_GUEST_HERE;
			(*waiting)++;
			continue;
		}
		if (!tcpm_take_back(c, conn))
			continue;
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
	if (!*waiting)
		tcpm_wnds_free();
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
			conn->flags &= ~(TCP_F_MIGRATED | TCP_F_GUEST_HERE);
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

/**
 * tcp_migrate_movable() - how many connections a SAVE now would hold
 *
 * Return: connections with a socket that can move (established, or with
 * our SYN-ACK sent: tcpm_conn_movable()), not held already
 */
unsigned tcp_migrate_movable(void)
{
	unsigned i, span = flow_span(), n = 0;

	for (i = 0; i < span; i++) {
		const struct tcp_conn *conn = tcp_conn_at(i);

		n += tcpm_conn_movable(conn);
	}
	return n;
}
