// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * kept.c - guest data that a connection's socket refused, or that came
 * while a migration held the connection, kept and ACKed, and written
 * before anything newer as the socket drains; and a restored connection's
 * never-sent data, which waits so too (TCP_F_TAIL).
 *
 * Theory of operation
 *
 * The window we offer the guest is the room we expect in the socket's
 * send buffer (from_guest.c), but the kernel may refuse part of what it
 * let the guest send: its accounting differs from our estimate, or under
 * memory pressure (tcp_mem, or a memory cgroup's limit on socket memory,
 * as in a pod) it shrinks the send buffer to half of what is queued.
 * Refused data left to the guest is recovered by its retransmission
 * timer: without SACK a Linux guest retransmits on duplicate ACKs only
 * with four segments or more outstanding, and without timestamps its RTO,
 * doubled at each timeout, stays doubled until new data is ACKed (Karn).
 * Refused again on the way, an upload stalled for a minute. So what the
 * socket refuses inside the windows we advertised is kept here: ACKed to
 * the guest, it is the connection's tail (TCP_F_TAIL | TCP_F_KEPT), which,
 * like a migration's never-sent data, goes to the socket on EPOLLOUT
 * before anything newer, with the guest's window closed and its FIN
 * waiting until then (tcp.c, from_guest.c). Data that arrives meanwhile
 * inside those windows (the guest sent it before it saw the window close)
 * goes after it. So does data that comes, inside the windows the source
 * advertised, while a migration's never-sent data waits (vhost-user): the
 * guest sent it before it saw the target's window closed, and the target
 * keeps that window closed for as long as the tail takes to drain, while
 * a refused segment's retransmissions double the guest's RTO (seen: a lone
 * segment refused through two migrations' tails, then 7 s of its RTO).
 *
 * A migration's never-sent data: the part of a restored send queue never
 * sent goes in after repair mode is off (migrate_dst.c), as ordinary
 * data, as much as the socket takes. A socket's send buffer grows by
 * autotuning (tcp_wmem) over the connection's life, and the source's may
 * hold far more than a new socket, or SO_SNDBUF, can (twice
 * net.core.wmem_max: 416 KiB with Debian's default): what doesn't fit is
 * the connection's tail (TCP_F_TAIL, tcpm_tail_add()), written the same
 * way. The bytes came in the migration's stream, the guest has let go of
 * them (the source ACKed them), and the only other place they could wait
 * is a send buffer that the kernel won't make that large.
 *
 * A connection a migration holds (TCP_F_MIGRATED: its socket deaf, out of
 * the loop, maybe in repair mode) while the guest runs here
 * (TCP_F_GUEST_HERE: the migration failed and the source resumed, or the
 * target released it, and the repair helper that would take the socket
 * out of repair mode is late) can't write to its socket, nor read from it.
 * Dropped, the guest's data would be recovered by its retransmission
 * timer, backed off for as long as the hold lasted (up to the 30 s a late
 * helper may take), and a sender in loss recovery isn't hurried by the
 * ACK we send when the connection comes back: the upload stopped for as
 * long again. So the guest's in-order data is kept here too, inside the
 * windows we advertised (never more: a held connection's window doesn't
 * grow, and closes once it keeps some) and the bounds below, and ACKed
 * (from_guest.c, tcp_data_held()); its FIN after it, or alone
 * (tcp_kept_add_fin()). When the connection comes back (the source's
 * tcpm_unhold(), the target's release, a poke's thaw), it goes into the
 * loop with EPOLLOUT, as any connection with a tail: the bytes go to the
 * socket before anything newer, and the window opens once they are all
 * in. A target's parked connection writes the migration's never-sent
 * data first (tcpm_tail_add() puts it before what was kept). Reset or
 * closed instead (no helper came), it frees what it kept, as any
 * connection does.
 *
 * Where the bytes live depends on the front-end. With vhost-user a
 * migration may carry the connection, and the dump includes a migration
 * tail (tcp/migrate_dump.c): so the bytes are one (tcpm_tail_add(),
 * malloc(), which that sandbox allows for migrations). The stream
 * front-end has no migration, and its sandbox no malloc(): a slot of a
 * static pool.
 *
 * Bounds: at most TCP_KEPT_MAX bytes a connection, more than the windows
 * we offer with Linux's default tcp_wmem (a 4 MiB buffer at most, of which
 * we offer three quarters at most), and TCP_KEPT_CONNS connections keeping
 * some at once. Beyond that, refused data isn't ACKed and the guest
 * retransmits it: with that much outstanding, duplicate ACKs work (a held
 * connection over the bounds drops it, as before). The guest can't make
 * us keep more than the windows we advertised it. The
 * static pool is address space until a slot is used: its pages are
 * touched, and kept, only as far as data was kept there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ctx.h"
#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "repair/sock.h"
#include "tcp/conn.h"
#include "tcp/kept.h"
#include "util.h"

#define TCP_KEPT_MAX	(4 * 1024 * 1024) /* bytes a connection keeps */
#define TCP_KEPT_CONNS	16		/* connections keeping some */

/**
 * struct tcp_kept - a slot of the static pool (stream front-end)
 * @idx:	flow index, with @gen the connection; @len 0: free
 * @gen:	flow generation
 * @len:	bytes kept
 * @off:	how many of them are written
 * @fin:	shutdown(SHUT_WR) once they all are
 * @buf:	the bytes
 */
struct tcp_kept {
	unsigned idx;
	uint32_t gen;
	uint32_t len, off;
	bool fin;
	uint8_t buf[TCP_KEPT_MAX];
};

static struct tcp_kept tcp_kept[TCP_KEPT_CONNS];
static unsigned tcp_kept_conns;		/* connections with TCP_F_KEPT */

/* The migration tails (vhost-user): see the top */
static struct tcpm_tail *tcpm_tails;
static unsigned tcpm_ntails, tcpm_tails_cap;

/**
 * tcpm_tail_of() - the tail of never-sent data waiting for @conn's socket
 * @conn:	connection
 *
 * Return: the tail, NULL if none
 */
struct tcpm_tail *tcpm_tail_of(const struct tcp_conn *conn)
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

/**
 * tcpm_tail_new() - a new tail for @conn, holding @p
 * @conn:	connection, without a tail
 * @p:		the bytes, malloc()'d: the tail's from now on, the caller's
 *		still on failure
 * @len:	how many
 * @fin:	shutdown(SHUT_WR) once they are all written
 *
 * Return: 0 or -ENOMEM
 */
static int tcpm_tail_new(struct tcp_conn *conn, uint8_t *p, uint32_t len,
			 bool fin)
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
	t = &tcpm_tails[tcpm_ntails++];
	t->p = p;
	t->idx = flow_idx((union flow *)conn);
	t->gen = conn->f.gen;
	t->len = len;
	t->off = 0;
	t->fin = fin;
	conn->flags |= TCP_F_TAIL;
	return 0;
}

/**
 * tcpm_tail_add() - keep @len bytes at @p for @conn, to write as its
 *		     socket drains
 * @conn:	connection
 * @p:		bytes
 * @len:	how many
 * @fin:	shutdown(SHUT_WR) once they are all written
 *
 * A migration's never-sent data: if @conn keeps data already (what the
 * guest sent while the connection was parked, tcp_data_held()), that came
 * later, and goes after these bytes.
 *
 * Return: 0 or -errno
 */
int tcpm_tail_add(struct tcp_conn *conn, const uint8_t *p,
		  uint32_t len, bool fin)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);
	uint32_t old = t ? t->len - t->off : 0;
	size_t size = (size_t)len + old;
	uint8_t *b;

	if (!(b = malloc(size ? size : 1)))	/* a FIN alone has a tail */
		return -ENOMEM;
	if (len)
		memcpy(b, p, len);
	if (t) {
		memcpy(b + len, t->p + t->off, old);
		free(t->p);
		t->p = b;
		t->len = len + old;
		t->off = 0;
		t->fin = t->fin || fin;
		return 0;
	}
	if (tcpm_tail_new(conn, b, len, fin)) {
		free(b);
		return -ENOMEM;
	}
	return 0;
}

/* Forget @t (its connection's flag is the caller's) */
static void tcpm_tail_free(struct tcpm_tail *t)
{
	free(t->p);
	*t = tcpm_tails[--tcpm_ntails];
}

/**
 * tcp_tail_fill() - write more of what waits for a socket
 * @s:		socket
 * @p:		the bytes
 * @off:	how many of them are written, updated
 * @len:	how many there are
 *
 * Return: 1 if all of them are written, 0 if some wait for more room,
 *	   -errno if the socket refused them for good
 */
static int tcp_tail_fill(int s, const uint8_t *p, uint32_t *off,
			 uint32_t len)
{
	ssize_t n = tcpm_fill(s, p + *off, len - *off);

	if (n < 0)
		return (int)n;
	*off += (uint32_t)n;
	return *off < len ? 0 : 1;
}

/**
 * tcp_tail_write() - the socket has room: write more of the migration's
 *		      never-sent data (TCP_F_TAIL), then its FIN if due
 * @conn:	connection
 *
 * Return: 1 if all of it is written (TCP_F_TAIL cleared), 0 if some waits
 *	   for more room, -errno if the socket refused it for good
 */
static int tcp_tail_write(struct tcp_conn *conn)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);
	bool fin;
	int rc;

	if (!t) {
		conn->flags &= ~TCP_F_TAIL;
		return 1;
	}
	if ((rc = tcp_tail_fill(conn->sock, t->p, &t->off, t->len)) <= 0)
		return rc;
	fin = t->fin;
	tcpm_tail_free(t);
	conn->flags &= ~TCP_F_TAIL;
	flow_dbg(conn, "the migrated data is all in the socket");
	if (fin && shutdown(conn->sock, SHUT_WR))
		return -errno;
	return 1;
}

/**
 * tcp_tail_fin() - the guest's FIN for a connection whose socket still
 *		    waits for migrated data: send it after that
 * @conn:	connection with TCP_F_TAIL
 *
 * Return: true if the FIN will follow the data, false if there's no data
 *	   waiting (shut the socket down now)
 */
static bool tcp_tail_fin(struct tcp_conn *conn)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);

	if (!t)
		return false;
	t->fin = true;
	return true;
}

/**
 * tcp_tail_drop() - the connection is closed: forget its data
 * @conn:	connection with TCP_F_TAIL
 */
static void tcp_tail_drop(struct tcp_conn *conn)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);

	if (t)
		tcpm_tail_free(t);
	conn->flags &= ~TCP_F_TAIL;
}

/* The slot of @conn's kept data, NULL if it has none in the pool */
static struct tcp_kept *tcp_kept_slot(const struct tcp_conn *conn)
{
	unsigned i, idx = tcp_idx(conn);

	if (!(conn->flags & TCP_F_KEPT))
		return NULL;
	for (i = 0; i < TCP_KEPT_CONNS; i++) {
		if (tcp_kept[i].len && tcp_kept[i].idx == idx &&
		    tcp_kept[i].gen == conn->f.gen)
			return &tcp_kept[i];
	}
	return NULL;
}

/**
 * tcp_kept_gather() - gather bytes of an iovec array into a buffer
 * @dst:	the buffer
 * @iov:	the iovec array
 * @niov:	number of entries in @iov
 * @skip:	bytes of @iov to leave out at its start
 * @len:	bytes to gather
 */
static void tcp_kept_gather(uint8_t *dst, const struct iovec *iov,
			    unsigned niov, size_t skip, size_t len)
{
	unsigned i;

	for (i = 0; i < niov && len; i++) {
		size_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		l = MIN(l - skip, len);
		memcpy(dst, (uint8_t *)iov[i].iov_base + skip, l);
		dst += l;
		len -= l;
		skip = 0;
	}
}

/**
 * tcp_kept_add_tail() - kept data as a migration tail (vhost-user)
 * @conn:	connection
 * @iov:	the data to keep
 * @niov:	number of entries in @iov
 * @skip:	bytes of @iov to leave out at its start
 * @len:	bytes to keep
 *
 * The tail grows in place, what it has written dropped first: a held
 * connection (tcp_data_held()) keeps a segment at a time.
 *
 * Return: bytes kept, 0 if none (over the bounds, or no memory: what the
 *	   tail had stays)
 */
static ssize_t tcp_kept_add_tail(struct tcp_conn *conn,
				 const struct iovec *iov, unsigned niov,
				 size_t skip, size_t len)
{
	struct tcpm_tail *t = tcpm_tail_of(conn);
	uint8_t *b;

	if (!t) {
		if (len > TCP_KEPT_MAX || !(b = malloc(len)))
			return 0;
		tcp_kept_gather(b, iov, niov, skip, len);
		if (tcpm_tail_new(conn, b, (uint32_t)len, false)) {
			free(b);
			return 0;
		}
		return (ssize_t)len;
	}
	if (t->len - t->off + len > TCP_KEPT_MAX)
		return 0;
	if (t->off) {
		memmove(t->p, t->p + t->off, t->len - t->off);
		t->len -= t->off;
		t->off = 0;
	}
	if (!(b = realloc(t->p, t->len + len)))
		return 0;
	t->p = b;
	tcp_kept_gather(b + t->len, iov, niov, skip, len);
	t->len += (uint32_t)len;
	return (ssize_t)len;
}

/**
 * tcp_kept_add() - keep guest data the socket refused, after what the
 *		    connection keeps already; the caller ACKs it
 * @c:		execution context
 * @conn:	connection
 * @iov:	the data
 * @niov:	number of entries of @iov
 * @skip:	bytes of @iov the socket took (or another call kept)
 * @len:	bytes to keep after those
 *
 * After a migration's never-sent data, too (vhost-user: the tail is
 * one): the caller keeps to the windows advertised, the source's included.
 *
 * Return: bytes kept, 0 if none (over the bounds, or no memory: what
 *	   was kept before stays)
 */
ssize_t tcp_kept_add(const struct ctx *c, struct tcp_conn *conn,
		     const struct iovec *iov, unsigned niov, size_t skip,
		     size_t len)
{
	bool kept = conn->flags & TCP_F_KEPT;
	struct tcp_kept *k;
	unsigned i;

	if (!len || ((conn->flags & TCP_F_TAIL) && !kept &&
		     c->mode != MODE_VU) ||
	    (!kept && tcp_kept_conns >= TCP_KEPT_CONNS))
		return 0;

	if (c->mode == MODE_VU) {
		if (tcp_kept_add_tail(conn, iov, niov, skip, len) <= 0)
			return 0;
	} else {
		if (!(k = tcp_kept_slot(conn))) {
			for (i = 0, k = NULL; i < TCP_KEPT_CONNS && !k; i++) {
				if (!tcp_kept[i].len)
					k = &tcp_kept[i];
			}
			if (!k)
				return 0;
			k->idx = tcp_idx(conn);
			k->gen = conn->f.gen;
			k->off = 0;
			k->fin = false;
		}
		if (k->off && k->len + len > TCP_KEPT_MAX) {
			memmove(k->buf, k->buf + k->off, k->len - k->off);
			k->len -= k->off;
			k->off = 0;
		}
		if (k->len + len > TCP_KEPT_MAX)
			return 0;
		tcp_kept_gather(k->buf + k->len, iov, niov, skip, len);
		k->len += (uint32_t)len;
		conn->flags |= TCP_F_TAIL;
	}
	if (!kept) {
		conn->flags |= TCP_F_KEPT;
		tcp_kept_conns++;
	}
	return (ssize_t)len;
}

/**
 * tcp_kept_can() - could @conn keep @len more bytes, if its socket refused
 *		    them? (a window the socket may not take all of)
 * @c:		execution context
 * @conn:	connection
 * @len:	bytes
 *
 * Return: true if so, within the bounds
 */
bool tcp_kept_can(const struct ctx *c, const struct tcp_conn *conn,
		  size_t len)
{
	const struct tcp_kept *k;
	const struct tcpm_tail *t;

	if (!(conn->flags & TCP_F_KEPT))
		return !(conn->flags & TCP_F_TAIL) &&
		       tcp_kept_conns < TCP_KEPT_CONNS && len <= TCP_KEPT_MAX;
	if (c->mode == MODE_VU)
		return (t = tcpm_tail_of(conn)) &&
		       t->len - t->off + len <= TCP_KEPT_MAX;
	return (k = tcp_kept_slot(conn)) &&
	       k->len - k->off + len <= TCP_KEPT_MAX;
}

/**
 * tcp_kept_write() - the socket has room: write what waits for it (data
 *		      kept, or a migration's never-sent data), then the FIN
 *		      if due
 * @conn:	connection with TCP_F_TAIL
 *
 * Return: 1 if all of it is written (TCP_F_TAIL cleared), 0 if some waits
 *	   for more room, -errno if the socket refused it for good
 */
int tcp_kept_write(struct tcp_conn *conn)
{
	struct tcp_kept *k = tcp_kept_slot(conn);
	int rc;

	if (!k) {
		rc = tcp_tail_write(conn);
		if (rc > 0)
			tcp_kept_forget(conn);
		return rc;
	}
	if ((rc = tcp_tail_fill(conn->sock, k->buf, &k->off, k->len)) <= 0)
		return rc;
	if (k->fin && shutdown(conn->sock, SHUT_WR))
		rc = -errno;
	k->len = 0;
	conn->flags &= ~TCP_F_TAIL;
	tcp_kept_forget(conn);
	return rc;
}

/**
 * tcp_kept_fin() - the guest's FIN, while data waits for the socket: send
 *		    it after that
 * @conn:	connection with TCP_F_TAIL
 *
 * Return: true if the FIN will follow the data, false if there's no data
 *	   waiting (shut the socket down now)
 */
bool tcp_kept_fin(struct tcp_conn *conn)
{
	struct tcp_kept *k = tcp_kept_slot(conn);

	if (!k)
		return tcp_tail_fin(conn);
	k->fin = true;
	return true;
}

/**
 * tcp_kept_add_fin() - the guest's FIN, for a socket that can't take it
 *			now (held by a migration: tcp_data_held()): after
 *			what the connection keeps, or kept alone
 * @c:		execution context
 * @conn:	connection
 *
 * Alone, it is a tail without data (vhost-user only: a slot of the static
 * pool with no bytes is a free one, and the stream front-end holds no
 * connection for a migration), counted as kept data is.
 *
 * Return: true if the FIN will follow, false if it can't be kept
 */
bool tcp_kept_add_fin(const struct ctx *c, struct tcp_conn *conn)
{
	uint8_t *b;

	if (conn->flags & TCP_F_TAIL)
		return tcp_kept_fin(conn);
	if (c->mode != MODE_VU || tcp_kept_conns >= TCP_KEPT_CONNS ||
	    !(b = malloc(1)))
		return false;
	if (tcpm_tail_new(conn, b, 0, true)) {
		free(b);
		return false;
	}
	conn->flags |= TCP_F_KEPT;
	tcp_kept_conns++;
	return true;
}

/**
 * tcp_kept_drop() - the connection is going: forget what waits for its
 *		     socket
 * @conn:	connection
 */
void tcp_kept_drop(struct tcp_conn *conn)
{
	struct tcp_kept *k = tcp_kept_slot(conn);

	if (k)
		k->len = 0;
	else if (conn->flags & TCP_F_TAIL)
		tcp_tail_drop(conn);
	conn->flags &= ~TCP_F_TAIL;
	tcp_kept_forget(conn);
}

/**
 * tcp_kept_forget() - a connection no longer keeps data: it doesn't count
 * @conn:	connection
 */
void tcp_kept_forget(struct tcp_conn *conn)
{
	if (!(conn->flags & TCP_F_KEPT))
		return;
	conn->flags &= ~TCP_F_KEPT;
	tcp_kept_conns--;
}
