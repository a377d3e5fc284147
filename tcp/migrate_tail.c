// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate_tail.c - TCP migration, the target side: the never-sent data of
 * a restored connection that its socket couldn't take yet (TCP_F_TAIL).
 *
 * Theory of operation
 *
 * The part of a restored send queue never sent goes in after repair mode
 * is off (migrate_dst.c), as ordinary data: as much as the socket takes.
 * A socket's send buffer grows by autotuning (tcp_wmem) over the
 * connection's life, and the source's may hold far more than a new
 * socket, or SO_SNDBUF, can (twice net.core.wmem_max: 416 KiB with
 * Debian's default): what doesn't fit is kept (TCP_F_TAIL) and written
 * as the socket drains (EPOLLOUT), before anything new from
 * the guest, whose window stays closed until then, and its FIN waits
 * too. The bytes came in the migration's stream, the guest has let go of
 * them (the source ACKed them), and the only other place they could wait
 * is a send buffer that the kernel won't make that large. The other
 * payload we keep is guest data a socket refused, or sent inside the
 * source's windows while this waits (tcp/kept.c), which uses the same
 * tail, appended to.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ctx.h"
#include "flow.h"
#include "log.h"
#include "tcp/migrate.h"
#include "tcp/migrate_internal.h"
#include "tcp/tcp_internal.h"
#include "util.h"

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
 * tcpm_tail_add() - keep @len bytes at @p for @conn, to write as its
 *		     socket drains
 * @conn:	connection
 * @p:		bytes
 * @len:	how many
 * @fin:	shutdown(SHUT_WR) once they are all written
 *
 * Return: 0 or -errno
 */
int tcpm_tail_add(struct tcp_conn *conn, const uint8_t *p,
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
	flow_dbg(conn, "the migrated data is all in the socket");
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
