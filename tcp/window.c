// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * window.c - TCP, the window we offer the guest: how much the socket's
 * send buffer is sure to take, measured, and what goes into the window
 * field of every segment to the guest. Below both directions: a segment
 * with data (to_guest.c) and one without (tcp.c) carry it alike.
 *
 * Theory of operation
 *
 * The window we advertise is the room the kernel is sure to have
 * (SO_MEMINFO: buffer size minus queued memory, scaled by the queue's
 * ratio of payload to memory, less a margin), so the guest practically
 * never sends what can't be taken (tcp_sock_room()). What the kernel
 * refuses all the same is from_guest.c's and kept.c's to handle.
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
 * The kernel grows a send buffer (autotuning) only after a write found it
 * full, and a window that is the buffer's free room never fills it. A
 * socket whose peer drains at once (a pod on the same node) is empty at
 * nearly every measurement: the guest, not the peer, is what it waits
 * for, so its buffer is doubled here (tcp_sock_grow()) whenever the guest
 * used up the window and the kernel still finds room. Behind a slower
 * peer the queue is what the guest sent, the socket runs low, and the
 * kernel's own autotuning grows it (EPOLLOUT below).
 *
 * One measurement serves many segments (tcp_wnd_to_guest()). A window
 * update asks for the same window on its duplicate ACKs
 * (tcp_wnd_repeat()).
 */
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "flow_tcp.h"
#include "tap/coalesce.h"
#include "tcp/conn.h"
#include "tcp/kept.h"
#include "tcp/proto.h"
#include "tcp/window.h"
#include "util.h"

#define TCP_WND_KEEP (256 * 1024)	/* measure the room below this left */
#define TCP_LIMITED_ROOM (64 * 1024)	/* less window left: the guest waits */
#define TCP_RATIO_BYTES (16 * 1024)	/* queued payload that tells its ratio */
#define TCP_RATIO_PRIOR (1U << 15)	/* ratio until one is measured: half */
#define TCP_GROW_MAX (4 * 1024 * 1024) /* tcp_sock_grow() stops there */

/* Send the window of the last segment again: duplicate ACKs */
static bool tcp_wnd_same;

/**
 * tcp_wnd_repeat() - the windows of the next segments are the last one's,
 *		      unmeasured (duplicate ACKs must carry the same window,
 *		      or the guest doesn't count them), or measured again
 * @on:		repeat from now on, or stop
 */
void tcp_wnd_repeat(bool on)
{
	tcp_wnd_same = on;
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
 * tcp_buf_unlock() - let autotuning size a socket's buffers again
 * @s:		socket
 *
 * SO_SNDBUF and SO_RCVBUF lock the size they set for the socket's life;
 * SO_BUF_LOCK 0 (Linux 5.14) lifts that and keeps the size.
 *
 * Return: 0, or -1 with errno set (older kernels: ENOPROTOOPT)
 */
int tcp_buf_unlock(int s)
{
	int unlock = 0;

	return setsockopt(s, SOL_SOCKET, SO_BUF_LOCK, &unlock, sizeof(unlock));
}

/**
 * tcp_sock_grow() - double the send buffer of a socket that the guest, not
 *		     the peer, keeps short of data
 * @conn:	connection: the guest used up the window, and the socket
 *		isn't short of room
 *
 * The kernel grows a send buffer (autotuning) only after a write found it
 * full. A socket whose peer takes everything at once (a pod on the same
 * node) never is: its queue is empty whenever we measure it, the window
 * stays a fraction of the first, small buffer (about 69 kB), and a Linux
 * guest sends segments of half the largest window it saw: 25 kB where it
 * could send 64 kB, more frames and more, smaller writes for the same
 * data. So the buffer is doubled here (SO_SNDBUF sets twice the value
 * given, at most twice net.core.wmem_max) and unlocked for autotuning
 * again, up to TCP_GROW_MAX. A kernel without SO_BUF_LOCK keeps the size
 * set, and the connection isn't grown again.
 */
static void tcp_sock_grow(struct tcp_conn *conn)
{
	int cur = 0, got = 0;
	socklen_t sl = sizeof(cur);

	if (getsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &cur, &sl) ||
	    cur <= 0 || cur >= TCP_GROW_MAX / 2 ||
	    setsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &cur, sizeof(cur))) {
		conn->flags |= TCP_F_BUF_GROWN;
		return;
	}
	sl = sizeof(got);
	if (tcp_buf_unlock(conn->sock) ||
	    getsockopt(conn->sock, SOL_SOCKET, SO_SNDBUF, &got, &sl) ||
	    got <= cur)
		conn->flags |= TCP_F_BUF_GROWN;
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
	/* The guest used half the window of the last measurement or more:
	 * one of its segments, at least, was as large as the window let it
	 */
	bool used = conn->wnd_span &&
		    (SEQ_GT(conn->seq_from_guest, conn->wnd_edge) ||
		     room <= conn->wnd_span / 2);
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
	/* Held by a migration (tcp_data_held()): the socket, maybe in repair
	 * mode, isn't ours to measure, and the window doesn't grow: what is
	 * left of the ones advertised
	 */
	if (conn->flags & TCP_F_MIGRATED)
		return SEQ_GT(conn->wnd_adv, conn->seq_from_guest) ?
		       (uint16_t)MIN((conn->wnd_adv - conn->seq_from_guest) >>
				     conn->ws_ours, 65535U) : 0;

	if (!tcp_wnd_same &&
	    (!conn->wnd_span || SEQ_GT(conn->seq_from_guest, conn->wnd_edge) ||
	     (!keep && room < MAX(conn->wnd_span / 2, TCP_WND_KEEP)))) {
		room = tcp_sock_room(conn, &low, &idle, &conn->wnd_ratio);
		if (low && conn->f.state == TCP_ST_ESTABLISHED)
			tcp_out_wait(c, conn);
		if (!low && used && conn->f.state == TCP_ST_ESTABLISHED &&
		    !(conn->flags & TCP_F_BUF_GROWN)) {
			tcp_sock_grow(conn);
			room = tcp_sock_room(conn, NULL, NULL, NULL);
		}
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
 * tcp_window_check() - after a write of the guest's data: does the guest
 *			now wait for our window?
 * @conn:	connection
 *
 * It does if what is left of the window we offered is less than
 * TCP_LIMITED_ROOM (a large frame) or a quarter of the room measured, or
 * if the room is to be measured again (the socket refused some, or
 * signalled room after running low). Then input coalescing mustn't poll
 * (tap/coalesce.c): the guest's pace is our ACKs'.
 */
void tcp_window_check(const struct tcp_conn *conn)
{
	uint32_t left = conn->wnd_edge - conn->seq_from_guest;

	if (!conn->wnd_span ||
	    SEQ_GT(conn->seq_from_guest, conn->wnd_edge) ||
	    left < MAX(TCP_LIMITED_ROOM, conn->wnd_span / 4))
		coalesce_window_limited();
}
