// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate_poke.c - TCP migration, the target side after the release:
 * poking the peers of restored sockets until the fabric has switched.
 *
 * Theory of operation
 *
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
#include "migrate/repair.h"
#include "tcp/migrate.h"
#include "tcp/migrate_internal.h"
#include "tcp/tcp_internal.h"
#include "tcp/tcp_info.h"
#include "util.h"

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

/* Has anything from the peer reached this socket? (tcpi_segs_in: Linux
 * 4.2, past what a C library's struct tcp_info copies: tcp/tcp_info.h)
 */
static bool tcpm_heard(int s)
{
	struct tcp_info_k ti;
	int n = tcp_info_get(s, &ti);

	if (n < 0)
		return true;	/* nothing to poke any more */
	return TCP_INFO_HAS(n, tcpi_segs_in) && ti.tcpi_segs_in;
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

/**
 * tcpm_poke_start() - after a restore: poke the restored sockets from now
 *		       on
 * @fds:	their sockets
 * @idx:	their flow indices
 * @n:		how many
 */
void tcpm_poke_start(const int *fds, const unsigned *idx, unsigned n)
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
