// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate_dst.c - TCP migration, the target side: restoring the
 * connections of a stream at the LOAD, parked, and letting them go when
 * the guest runs here.
 *
 * Theory of operation
 *
 * Target, at the LOAD (tcp_migrate_target()): for each flow of a stream
 * that parsed and validated as a whole, a socket is made, put in repair
 * mode and made deaf, given the MSS as TCP_MAXSEG (the kernel sizes its
 * segments at connect() from the MSS clamp, and TCP_REPAIR_OPTIONS sets
 * the clamp but never sizes them again: without it, a restored socket
 * keeps the default 536 bytes less options for good), bound to the original
 * local address and port, given the timestamp and the sequence numbers,
 * and connected (no SYN in repair mode); repair mode goes on a chunk of
 * sockets at a time (TCPM_PIPE_CHUNK), each chunk restored while the
 * helper takes the next one. Nothing more yet: the connection
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
 * the receive queue, in a buffer set large enough for it and for the
 * window the source advertised beyond it (tcpm_rcvbuf()), and the part
 * of the send queue that was sent and not acknowledged, which in repair
 * mode counts as sent already. That
 * part must all go in now: the peer's acknowledgements would cover it,
 * and an acknowledgement beyond what a socket has sent is dropped. It
 * fits in the send buffer a new socket gets from autotuning unless the
 * source had more in flight than that (a long fat path): then, and only
 * then, the buffer is set with SO_SNDBUF, which caps it at twice
 * net.core.wmem_max, and unlocked again (SO_BUF_LOCK 0): autotuning grows
 * it from there as it grew the source's. Then FIN_WAIT2's FIN (shutdown()
 * in repair mode), the window, and its growth (tcpm_rcv_ssthresh()).
 * Then, for all of them, in this order:
 * the sockets hear their peers again (TTL limit and filter off), the
 * guest is announced on the pod's link (the caller's; a fabric like OVN
 * switches on it), and repair mode goes off (the kernel sends a window
 * probe: the peer's answer gets both ends in step, and must find the
 * socket listening: with a fabric that switches at once, it is the first
 * segment to come), a chunk of sockets at a time (TCPM_PIPE_CHUNK): each
 * chunk goes live here (below) while the helper takes the next one and
 * the kernel sends its probes, so that the downtime has the longer of
 * the two, not both. A connection that closed cleanly at the source
 * (tcpm_closed()) leaves repair mode without a probe, and is left silent
 * (tcpm_closed_go()). The part of the send queue never sent goes in after
 * that, as ordinary data: as much as the socket takes, and what doesn't
 * fit is written as the socket drains (TCP_F_TAIL, kept.c).
 * Then FIN_WAIT1, CLOSING and LAST_ACK get their FIN again (after the
 * window probe, which the kernel sends in ESTABLISHED only), the flow goes
 * in the loop and resumes from the first byte the guest hasn't ACKed. One
 * the source moved in its handshake, our SYN-ACK not acknowledged
 * (tcpm_handshake()), goes on as one: the guest gets the SYN-ACK again at
 * once (it may never have had it, and a guest in SYN-SENT drops anything
 * else), and whatever the peer sent waits in the socket for its ACK.
 * The kernel can't be given a FIN the peer had sent (a repair-mode write
 * to the receive queue carries data only): that one stays in the flow
 * (TCP_F_SOCK_EOF), and the socket is ESTABLISHED, or FIN_WAIT1 then
 * FIN_WAIT2 once ours is sent, where the source's was CLOSE_WAIT,
 * LAST_ACK or CLOSING (doc/migration.md, section 2.6). A flow that fails
 * before
 * its socket leaves repair mode is closed in repair mode (nothing to the
 * peer) and reset towards the guest; the others go on. After the
 * release, the peers are poked for a while (migrate_poke.c).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "log.h"
#include "loop.h"
#include "repair/format.h"
#include "repair/repair.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/connect.h"
#include "tcp/kept.h"
#include "tcp/migrate.h"
#include "tcp/migrate_internal.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "tcp/to_guest.h"
#include "tcp/window.h"
#include "util.h"

/* Our own copy of the kernel's repair structure (uapi linux/tcp.h) */
struct tcpm_opt {
	uint32_t code, val;
};

#define TCPM_OPT_MSS		2
#define TCPM_OPT_WINDOW		3
#define TCPM_OPT_SACK_PERM	4
#define TCPM_OPT_TIMESTAMP	8

/* Largest MSS TCP_MAXSEG takes (the kernel's MAX_TCP_WINDOW) */
#define TCPM_MAXSEG_MAX	32767

/**
 * struct tcpm_parked - target: a connection restored at the LOAD, waiting
 *			for the guest to run here (see
 *			tcp_migrate_target_release())
 * @idx:	flow index; TCPM_NO_FLOW if it failed at the LOAD (then only
 *		the guest is told, with a RST, at the release)
 * @gen:	flow generation, against reuse
 * @f:		its records and queues, in the stream we keep meanwhile
 * @queued:	its options, queues and window are restored (the release)
 * @done:	the release is over for it: live, or reset
 */
struct tcpm_parked {
	unsigned idx;
	uint32_t gen;
	const struct mig_flow_in *f;
	bool queued;
	bool done;
};
#define TCPM_NO_FLOW	(~0U)

/* Target: the stream and what it restored, until the release */
static struct {
	uint8_t *buf;			/* the stream: queues point in it */
	struct mig_flow_in *flows;	/* parsed records */
	struct tcpm_parked *p;
	unsigned n;
	bool released;			/* the guest ran here */
	uint64_t deadline;		/* some wait for a helper until then */
} tcpm_park;

static void tcpm_sockaddr(union sockaddr_inany *sa, const struct in6_addr *a,
			  uint16_t port)
{
	if (mig_addr_is_v4(a))
		sockaddr_set(sa, AF_INET, &a->s6_addr[12], port);
	else
		sockaddr_set(sa, AF_INET6, a, port);
}

/*
 * Did the source's socket end cleanly, both FINs exchanged and ours
 * acknowledged? FIN_WAIT2 with the peer's FIN is how it's written (a
 * socket can't be both: it goes to TIME_WAIT, then CLOSE): its peer may
 * have no socket any more, and anything sent to it draws a RST
 */
static bool tcpm_closed(const struct mig_flow_in *f)
{
	return f->e.tcpi_state == MIG_TCP_FIN_WAIT2 &&
	       (f->b.events & MIG_EV_SOCK_FIN_RCVD);
}

/*
 * Was the connection in its handshake, our SYN-ACK not acknowledged by the
 * guest? Our source says so (MIG_F_ACK_FROM_TAP_DUE, migrate_dump.c), and the
 * rest of the record must agree: the guest opened it, nothing was sent to it
 * after the SYN-ACK, and nothing came from it after its SYN
 */
static bool tcpm_handshake(const struct mig_flow_in *f)
{
	const struct mig_tcp_basic *b = &f->b;

	return (b->flags & MIG_F_ACK_FROM_TAP_DUE) &&
	       b->pif[0] == MIG_PIF_TAP && b->seq_to_tap == b->seq_ack_from_tap &&
	       b->seq_from_tap == b->seq_init_from_tap + 1 &&
	       !(b->events & (MIG_EV_TAP_FIN_RCVD | MIG_EV_TAP_FIN_SENT)) &&
	       !tcpm_closed(f);
}

/* Index of the HOST side of a record (the other is the TAP side) */
static int tcpm_host(const struct mig_flow_in *f)
{
	return f->b.pif[0] == MIG_PIF_HOST ? 0 : 1;
}

/* The family of a record's socket: its HOST side's */
static int tcpm_family_of(const struct mig_flow_in *f)
{
	return mig_addr_is_v4(&f->b.side[tcpm_host(f)].oaddr) ? AF_INET
							      : AF_INET6;
}

/**
 * tcpm_restore_conn() - restore, at the LOAD, what doesn't make a socket speak
 * @s:		the new socket, in repair mode
 * @f:		the flow's records
 *
 * MSS, address, timestamp, sequence numbers, connect().
 *
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
	tcpm_deaf(s, tcpm_family_of(f), true);
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
	/* FIN_WAIT2: seq_snd is one past our FIN, queued again later; not
	 * for one that closed cleanly (see tcpm_closed_go())
	 */
	seq_snd = e->seq_snd - (e->tcpi_state == MIG_TCP_FIN_WAIT2 &&
				!tcpm_closed(f) ? 1 : 0);
	if ((rc = tcpm_queue(s, TCPM_QUEUE_SEND)) ||
	    setsockopt(s, IPPROTO_TCP, TCP_QUEUE_SEQ, &seq_snd,
		       sizeof(seq_snd)))
		return rc ? rc : -errno;
	if ((rc = tcpm_queue(s, TCPM_QUEUE_RECV)) ||
	    setsockopt(s, IPPROTO_TCP, TCP_QUEUE_SEQ, &e->seq_rcv,
		       sizeof(e->seq_rcv)))
		return rc ? rc : -errno;
	/* The receive queue stays selected: nothing reads or writes it
	 * until the release selects its own
	 */
	if (connect(s, &peer.sa, sockaddr_len(&peer)) && errno != EINPROGRESS)
		return -errno;
	return 0;
}

/**
 * tcpm_fill_sent() - write the part of the send queue that was sent, all of it
 * @s:		the socket, in repair mode
 * @p:		the sent part of the queue
 * @len:	its length in bytes
 *
 * If the buffer a new socket has can't take it (see the top of the file), the
 * socket gets the buffer it needs (SO_SNDBUF).
 *
 * Return: 0 or -errno
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
	     "socket's buffer: its send buffer is now %i bytes", len, got);
	p += n;
	len -= (uint32_t)n;
	n = tcpm_fill(s, p, len);
	if (n < 0)
		return (int)n;
	if ((uint32_t)n != len)
		return -ENOBUFS;
	/* SO_SNDBUF locks the size for the socket's life: autotuning, which
	 * grew the source's buffer, may go on from there (Linux 5.14). Only
	 * now: unlocked, memory pressure could shrink it under the fill
	 */
	tcp_buf_unlock(s);
	return 0;
}

/**
 * tcpm_rcvbuf() - size the receive buffer for a queue and window to be restored
 * @s:		the socket, in repair mode
 * @len:	length of the receive queue in bytes
 * @wnd:	the window the source advertised beyond it
 *
 * Give @s, in repair mode, the receive buffer its queue of @len bytes and the
 * window @wnd the source advertised beyond it need, before the queue is
 * written. A new socket's buffer is tcp_rmem's default (128 KiB), and a write
 * into the receive queue goes through the checks data from the network goes
 * through (tcp_try_rmem_schedule()): tcp_clamp_window() raises an unlocked
 * buffer to what is queued, up to tcp_rmem[2] (not under socket memory
 * pressure: then what doesn't fit fails, ENOBUFS), so the queue goes in, but
 * leaves no room: the window the source advertised would have to come back
 * from nothing as the guest reads. SO_RCVBUF gives at most twice net.core.rmem_max,
 * and locks the size; locked, the fill can't change it (unlocked, a write that
 * doesn't fit clamps it down to what is queued), so it stays locked for the
 * fill if it holds the queue, and is unlocked after it (tcp_buf_unlock();
 * SO_BUF_LOCK 0, Linux 5.14: autotuning goes on from there as it did on the
 * source); if it can't hold the queue, it is unlocked at once, and the kernel
 * raises it as the queue is written. A window takes twice its size in buffer at
 * first (tcp_win_from_space(), before any segment has come).
 *
 * Return: true if the buffer is locked, for tcp_buf_unlock()
 */
static bool tcpm_rcvbuf(int s, uint32_t len, uint32_t wnd)
{
	uint64_t queue = (uint64_t)len + len / 16 + 2 * TCPM_CHUNK;
	uint64_t need = queue + 2 * (uint64_t)wnd;
	int have = 0, want;
	socklen_t sl = sizeof(have);

	if (getsockopt(s, SOL_SOCKET, SO_RCVBUF, &have, &sl) ||
	    (uint64_t)have >= need)
		return false;
	/* The kernel doubles the value (and caps it first) */
	want = (int)MIN((need + 1) / 2, (uint64_t)INT32_MAX / 2);
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	sl = sizeof(have);
	getsockopt(s, SOL_SOCKET, SO_RCVBUF, &have, &sl);
	if ((uint64_t)have >= queue)
		return true;
	tcp_buf_unlock(s);
	return false;
}

/*
 * The window's growth, after TCP_REPAIR_WINDOW: every window a socket
 * advertises is capped by its rcv_ssthresh, which grows only as data
 * arrives (tcp_grow_window()); a new socket's is its initial window (64
 * KiB, tcp_select_initial_window() at connect()), where the source's had
 * grown with the connection (800 KiB seen). Raising the window clamp
 * sets it to the restored rcv_wnd, the window the source advertised
 * (tcp_set_window_clamp(); Linux 6.18 does, older kernels may only raise
 * the clamp, which autotuning moves anyway: tcp_rcv_space_adjust())
 */
static void tcpm_rcv_ssthresh(int s, uint32_t rcv_wnd)
{
	int clamp = 0;
	socklen_t sl = sizeof(clamp);

	if (getsockopt(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, &sl) ||
	    clamp < 0 || clamp == INT32_MAX)
		return;
	clamp = (int)MAX((uint32_t)clamp + 1,
			 MIN(rcv_wnd, (uint32_t)INT32_MAX));
	setsockopt(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp));
}

/**
 * tcpm_restore_queues() - restore what makes the socket a connection again
 * @s:		the socket, connected in repair mode
 * @f:		the flow's records
 *
 * When the guest runs: options, queues (the sent part of the send queue
 * only), FIN_WAIT2's FIN, window.
 *
 * Return: 0 or -errno
 */
static int tcpm_restore_queues(int s, const struct mig_flow_in *f)
{
	const struct mig_tcp_ext *e = &f->e;
	struct tcpm_window w = { e->snd_wl1, e->snd_wnd, e->max_window,
				 e->rcv_wnd, e->rcv_wup };
	uint32_t sent = e->sndq - e->notsent;
	struct tcpm_opt opts[4];
	unsigned nopt = 0;
	bool locked;
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

	/* The receive queue, all of it, in a buffer that takes it */
	if ((rc = tcpm_queue(s, TCPM_QUEUE_RECV)))
		return rc;
	locked = tcpm_rcvbuf(s, e->rcvq, e->rcv_wnd);
	n = tcpm_fill(s, f->rcvq, e->rcvq);
	if (locked)
		tcp_buf_unlock(s);
	if (n < 0 || (uint32_t)n < e->rcvq)
		return n < 0 ? (int)n : -ENOBUFS;
	/* The timer the in-flight data arms as it goes in, within a second:
	 * a hole in it (the source's last flight lost in the cut-over) is
	 * sent again then, not after 3 s (no RTT sample yet). Only that
	 * one: the cap comes off again before the socket leaves repair mode
	 * (see migrate_poke.c for why, and for when it comes back). Not with
	 * the peer's window closed (tcp_rtx_probe0_timed_out()), and not
	 * without data in flight, which arms no timer
	 */
	if (e->snd_wnd && sent)
		tcpm_rto_cap(s, true);
	if ((rc = tcpm_queue(s, TCPM_QUEUE_SEND)) ||
	    (rc = tcpm_fill_sent(s, f->sndq, sent)))
		return rc;
	if (e->snd_wnd && sent)
		tcpm_rto_cap(s, false);
	if (e->tcpi_state == MIG_TCP_FIN_WAIT2 && !tcpm_closed(f) &&
	    shutdown(s, SHUT_WR))
		return -errno;
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)))
		return -errno;
	tcpm_rcv_ssthresh(s, e->rcv_wnd);
	/* The send queue stays selected: repair mode off next, and on again
	 * (a poke) selects none
	 */
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

/**
 * tcpm_flow_new() - the flow entry for a restored connection, parked
 * @s:		its socket, in repair mode
 * @f:		the flow's records
 * @idx:	set to the flow's index
 * @gen:	set to the flow's generation
 *
 * Out of the loop, its socket in repair mode. The peer's FIN is in the FIN flag
 * of the record or in its state (a source may have missed it in its flags: we
 * did).
 *
 * Return: 0, -ENOSPC if the table is full, -EEXIST if the flow is there already
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
	/* In its handshake: the SYN-ACK again at the release (and on the
	 * timer), the guest's ACK awaited as for any connection
	 */
	conn->f.state = tcpm_handshake(f) ? TCP_ST_SYNACK_TO_GUEST
					  : TCP_ST_ESTABLISHED;
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
	/* The source's last window: the guest may send up to its edge */
	conn->wnd_adv = conn->seq_from_guest +
			((uint32_t)b->wnd_to_tap << b->ws_to_tap);
	/* The guest's segments are half the largest window it saw at most,
	 * and the source's windows may have been as large as any (the record
	 * has only its last one): take the largest, so that a writable
	 * socket offers the guest one whole segment (from_guest.c). A new
	 * socket's small buffer gives windows below that, and a Linux guest
	 * with nothing in flight then sends only on its persist timer, backed
	 * off by the zero windows of a migration's tail to many seconds
	 */
	conn->wnd_max = UINT16_MAX;
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
	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED | TCP_F_GUEST_HERE);
	tcp_kept_drop(conn);	/* what the guest sent while it waited */
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
 * reset towards the guest when it runs here. But if repair mode can't be
 * had for some (the helper failed, went away, or is late: see
 * repair/repair.c), the LOAD fails as a whole, and every socket made here
 * is closed, silently: the migration fails, and the source, which still
 * holds every connection, takes them all back, where going on would reset
 * those.
 *
 * Return: number of connections restored, -EIO if repair mode failed
 */
int tcp_migrate_target(struct ctx *c, struct mig_stream_in *s, uint8_t **buf)
{
	unsigned done = 0, k = 0, pos, failed = 0, us_sock, us_on, us_wait = 0;
	struct repair_pipe rp;
	uint64_t t = now_ns();
	int *fds, *on;
	uint32_t i;

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

		tcpm_park.p[i] = (struct tcpm_parked){ TCPM_NO_FLOW, 0, f,
							false, false };
		fds[i] = -1;
		if (f->skip)
			continue;
		fds[i] = socket(tcpm_family_of(f), SOCK_STREAM | SOCK_NONBLOCK |
				SOCK_CLOEXEC, IPPROTO_TCP);
	}

	us_sock = tcpm_lap(&t);
	/* Repair on, a chunk at a time: each chunk is restored while the
	 * helper takes the next one (struct repair_pipe)
	 */
	on = calloc(tcpm_park.n, sizeof(*on));
	for (i = 0; on && i < tcpm_park.n; i++)
		if (fds[i] >= 0)
			on[k++] = fds[i];
	repair_pipe_start(c, &rp, on, on ? k : 0, REPAIR_ON, TCPM_PIPE_CHUNK);
	us_on = tcpm_lap(&t);

	for (i = 0, pos = 0; i < tcpm_park.n; i++) {
		struct tcpm_parked *p = &tcpm_park.p[i];
		uint64_t w = now_ns();
		bool ok;
		int rc;

		if (fds[i] < 0)
			continue;
		ok = on && !failed && repair_pipe_ready(c, &rp, pos++);
		us_wait += tcpm_lap(&w);
		if (!ok) {
			close(fds[i]);	/* not connected: silent */
			failed++;
			continue;
		}
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
	repair_pipe_ready(c, &rp, k);	/* all answered: nothing in flight */
	free(on);
	free(fds);
	if (failed) {
		/* In repair mode, or never connected: closed silently */
		tcp_migrate_target_drop(c);
		err("Migration: can't turn TCP_REPAIR on for %u of the %u new "
		    "sockets: refusing the state (the source keeps the "
		    "connections)", failed, k);
		return -EIO;
	}
	debug("Migration: %u connection(s) parked: %u us sockets, %u us "
	      "repair on and restored (%u us of it waiting for repair on)",
	      done, us_sock, us_on + tcpm_lap(&t), us_wait);
	return (int)done;
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

/*
 * A connection that closed cleanly at the source, out of repair mode: its
 * peer is done with it and may have no socket left, so nothing may reach
 * it, or its RST would take what the guest hasn't read yet. The socket was
 * restored without our FIN (queued again, it would be retransmitted) and
 * left repair mode without a window probe; shut down for reading, it sends
 * no window update either as the guest drains it. Its FINs are the flow's
 * already. Return: 0 or -errno
 */
static int tcpm_closed_go(struct ctx *c, struct tcp_conn *conn)
{
	if (shutdown(conn->sock, SHUT_RD))
		return -errno;
	if (loop_add(c, conn->sock, tcpm_events(conn),
		     flow_ref((union flow *)conn, REF_TCP)))
		return -EIO;
	if ((conn->flags & TCP_F_GUEST_FIN) && (conn->flags & TCP_F_FIN_ACKED)) {
		conn->flags |= TCP_F_DRAINING;
		conn->timer = now_ms();
	}
	return 0;
}

/**
 * tcpm_go() - a parked connection out of repair mode, into the loop
 * @c:		execution context
 * @conn:	the connection, parked
 * @f:		its records
 *
 * The never-sent part of the send queue, a FIN, the loop.
 *
 * Return: 0 or -errno
 */
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

	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED | TCP_F_GUEST_HERE);
	tcp_sock_tune(conn->sock);
	if (tcpm_closed(f))
		return tcpm_closed_go(c, conn);
	/* Never sent: ordinary data now, what the socket takes; the rest as
	 * it drains, then the FIN; and then what the guest sent while the
	 * connection waited here, parked (kept: tcp_data_held())
	 */
	n = tcpm_fill(conn->sock, f->sndq + sent, e->notsent);
	if (n < 0)
		return (int)n;
	if ((uint32_t)n < e->notsent || (fin && (conn->flags & TCP_F_TAIL))) {
		if ((rc = tcpm_tail_add(conn, f->sndq + sent + n,
					e->notsent - (uint32_t)n, fin)))
			return rc;
		flow_dbg(conn, "%zi of %u never-sent bytes in the socket, the "
			 "rest as it drains", n, e->notsent);
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
 * @before_off:	called once the sockets hear their peers again, just
 *		before they leave repair mode (the announcement: the
 *		fabric may switch on it, and the answers to the window
 *		probes must find the sockets listening), or NULL
 * @give_up:	reset those that can't leave repair mode now, rather than
 *		keep them parked for a helper to answer
 *
 * Connections whose sockets can't leave repair mode now (the helper is
 * gone, or late: see repair/repair.c) stay parked, restored, out of the
 * loop, hearing their peers, unless @give_up: a later call, when a helper
 * connects or answers (tcp_migrate_target_retry()), lets them go live, and
 * after TCPM_STUCK_MS (tcp_migrate_target_timer()) those still in repair
 * mode are reset (silently for the peer, closed in repair mode). Only the
 * first call pokes the peers (migrate_poke.c).
 *
 * Return: number of connections that went live
 */
unsigned tcp_migrate_target_release(struct ctx *c, unsigned *reset,
				    void (*before_off)(struct ctx *c),
				    bool give_up)
{
	unsigned i, k = 0, q = 0, done = 0, poked = 0, waiting = 0, *idx, *at;
	unsigned us_queues, us_hear, us_off, us_wait = 0;
	bool *cap, off_failed = false, warned = false;
	bool first = !tcpm_park.released;
	int *fds, *quiet, *live;
	struct repair_pipe rp;
	uint64_t t = now_ns();

	*reset = 0;
	if (!tcpm_park.n)
		return 0;
	tcpm_park.released = true;
	fds = calloc(tcpm_park.n, sizeof(*fds));
	live = calloc(tcpm_park.n, sizeof(*live));
	quiet = calloc(tcpm_park.n, sizeof(*quiet));
	idx = calloc(tcpm_park.n, sizeof(*idx));
	cap = calloc(tcpm_park.n, sizeof(*cap));
	at = calloc(tcpm_park.n, sizeof(*at));
	if (!fds || !live || !quiet || !idx || !cap || !at) {
		free(fds);
		free(at);
		free(live);
		free(quiet);
		free(idx);
		free(cap);
		for (i = 0; i < tcpm_park.n; i++) {
			if (tcpm_park.p[i].done)
				continue;
			tcpm_reset_guest(c, tcpm_park.p[i].f);
			(*reset)++;
		}
		tcp_migrate_target_drop(c);
		if (before_off)
			before_off(c);
		return 0;
	}

	/* Options, queues and window, still in repair mode */
	for (i = 0; i < tcpm_park.n; i++) {
		struct tcpm_parked *p = &tcpm_park.p[i];
		struct tcp_conn *conn = tcpm_parked_conn(p);
		int rc;

		if (!conn || p->done)
			continue;
		if (!p->queued &&
		    (rc = tcpm_restore_queues(conn->sock, p->f))) {
			warn("Migration: flow %u can't be restored (%s), "
			     "resetting it", i, strerror(-rc));
			tcpm_park_close(conn);
			continue;
		}
		p->queued = true;
		if (tcpm_closed(p->f)) {
			quiet[q++] = conn->sock;
		} else {
			at[i] = k;	/* its place in the pipe, below */
			fds[k++] = conn->sock;
		}
	}

	/* Ready to hear the peers before any probe goes out: with a fabric
	 * that switches at once (on the announcement), the answer to the
	 * window probe of TCP_REPAIR_OFF is the first segment to arrive,
	 * and a deaf socket would drop it (TCPMinTTLDrop), leaving the
	 * sender to wait for the next poke. In repair mode meanwhile, the
	 * socket takes what arrives as any socket does: its queues are
	 * all there
	 */
	us_queues = tcpm_lap(&t);
	for (i = 0; i < tcpm_park.n; i++) {
		const struct tcpm_parked *p = &tcpm_park.p[i];
		struct tcp_conn *conn = tcpm_parked_conn(p);

		/* No filter here: the helper attaches none to a new socket */
		if (conn && !p->done && !tcpm_closed(p->f))
			tcpm_deaf(conn->sock, tcpm_family_of(p->f), false);
	}
	if (before_off)
		before_off(c);
	us_hear = tcpm_lap(&t);

	/* Repair off, without the window probe for those that closed
	 * cleanly (their peers may have no socket left), then for the others,
	 * whose probes go out: a chunk at a time, each chunk going live here
	 * while the helper takes the next one
	 */
	if (q && repair_set(c, quiet, q, REPAIR_OFF_NO_WP))
		off_failed = true;
	repair_pipe_start(c, &rp, fds, k, REPAIR_OFF, TCPM_PIPE_CHUNK);
	us_off = tcpm_lap(&t);

	for (i = 0; i < tcpm_park.n; i++) {
		struct tcpm_parked *p = &tcpm_park.p[i];
		struct tcp_conn *conn = tcpm_parked_conn(p);
		bool failed = off_failed;
		int rc;

		if (p->done)
			continue;
		if (!conn) {
			p->done = true;
			tcpm_reset_guest(c, p->f);
			(*reset)++;
			continue;
		}
		if (!tcpm_closed(p->f)) {
			uint64_t w = now_ns();

			failed = !repair_pipe_ready(c, &rp, at[i]);
			us_wait += tcpm_lap(&w);
		}
		/* The helper's answer checked them all, unless it failed; a
		 * late one may still clear repair mode on those it has
		 */
		if (failed && (tcpm_in_repair(conn->sock) ||
			       repair_pending(conn->sock))) {
			if (!give_up) {
				/* The guest runs here: what it sends
				 * meanwhile is kept and ACKed (tcp_data_held())
				 */
				conn->flags |= TCP_F_GUEST_HERE;
				waiting++;
				continue;
			}
			if (!warned) {
				warn("Migration: can't clear TCP_REPAIR on "
				     "restored connections: those left in "
				     "repair mode are reset");
				warned = true;
			}
			p->done = true;
			tcpm_park_close(conn);
			tcpm_reset_guest(c, p->f);
			(*reset)++;
			continue;
		}
		p->done = true;
		if ((rc = tcpm_go(c, conn, p->f))) {
			warn("Migration: flow %u: %s after the restore, "
			     "resetting it", i, strerror(-rc));
			conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED |
					 TCP_F_GUEST_HERE);
			tcp_rst(c, conn);
			(*reset)++;
			continue;
		}
		done++;
		if (!tcpm_closed(p->f)) {
			live[poked] = conn->sock;
			cap[poked] = p->f->e.snd_wnd;
			idx[poked++] = p->idx;
		}
		if (conn->f.state == TCP_ST_SYNACK_TO_GUEST) {
			/* The guest may be in SYN-SENT still, its SYN-ACK lost
			 * at the source: it drops anything but a SYN-ACK, and a
			 * RST from the peer meanwhile would refuse its connect().
			 * Already established, it answers with an ACK
			 */
			flow_dbg(conn, "restored in its handshake, SYN-ACK "
				 "again");
			tcp_connect_done(c, conn);
			continue;
		}
		tcp_ack_now(c, conn);
		tcp_data_to_guest(c, conn);
	}
	repair_pipe_ready(c, &rp, k);	/* all answered: nothing in flight */
	if (first)
		tcpm_poke_start(live, idx, cap, poked);
	debug("Migration: %u connection(s) released: %u us queues, %u us "
	      "hearing and announced, %u us repair off and live (%u us of "
	      "it waiting for repair off)", done, us_queues, us_hear,
	      us_off + tcpm_lap(&t), us_wait);
	free(fds);
	free(at);
	free(live);
	free(quiet);
	free(idx);
	free(cap);
	if (!waiting) {
		tcpm_park_free();
		return done;
	}
	if (!tcpm_park.deadline) {
		tcpm_park.deadline = now_ms() + TCPM_STUCK_MS;
		warn("Migration: %u restored connection(s) can't leave repair "
		     "mode without passt-repair on %s: they wait for it to "
		     "answer (or another one to connect) for up to %u s, then "
		     "are reset", waiting, c->repair_path,
		     TCPM_STUCK_MS / 1000);
	}
	return done;
}

/**
 * tcp_migrate_target_waiting() - how many released connections wait for a
 *				  helper to take them out of repair mode
 *
 * Return: that many (0 also before the release)
 */
unsigned tcp_migrate_target_waiting(void)
{
	unsigned i, n = 0;

	for (i = 0; tcpm_park.released && i < tcpm_park.n; i++)
		n += !tcpm_park.p[i].done && tcpm_parked_conn(&tcpm_park.p[i]);
	return n;
}

/**
 * tcp_migrate_target_retry() - a helper connected or answered: let the
 *				released connections that wait for one go
 *				live
 * @c:		execution context
 */
void tcp_migrate_target_retry(struct ctx *c)
{
	unsigned n, reset, left = tcp_migrate_target_waiting();

	if (!left || repair_busy())
		return;
	n = tcp_migrate_target_release(c, &reset, NULL, false);
	info("Migration: passt-repair on %s answers again: %u of %u "
	     "restored connection(s) that waited for it resumed, %u reset",
	     c->repair_path, n, left, reset);
}

/**
 * tcp_migrate_target_timer() - released connections that waited too long
 *				for a helper are reset
 * @c:		execution context
 * @now:	current time, ms
 */
void tcp_migrate_target_timer(struct ctx *c, uint64_t now)
{
	unsigned n, reset, left;

	if (!tcpm_park.deadline || now < tcpm_park.deadline)
		return;
	left = tcp_migrate_target_waiting();
	n = tcp_migrate_target_release(c, &reset, NULL, true);
	warn("Migration: no answer from passt-repair on %s in %u s: of %u "
	     "restored connection(s) that waited for it, %u resumed, %u "
	     "reset", c->repair_path, TCPM_STUCK_MS / 1000, left, n, reset);
}
