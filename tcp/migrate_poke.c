// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * migrate_poke.c - TCP migration, the target side after the release:
 * poking the peers of restored sockets until every sender is moving.
 *
 * Theory of operation
 *
 * A restored socket knows nothing of its path: it has no RTT sample
 * (tcp_init_metrics() gives it the 3 s TCP_TIMEOUT_FALLBACK), the data it
 * took over in flight is tagged TCPCB_REPAIRED, which counts as
 * retransmitted (no RTT sample from its ACKs, and RACK ignores SACKs of
 * it until a sample exists), and while the fabric still delivers to the
 * source, the peer's ACKs don't reach it. Left alone, it prompts the
 * peer with a tail loss probe after 1 s and its timeouts after that.
 *
 * So each restored socket is "poked": TCP_REPAIR on and off again makes
 * the kernel send a window probe (an ACK with an old sequence number).
 * The peer must answer it with an ACK of what it has: once the fabric has
 * switched, that ACK reaches us, acknowledges what the source's last
 * flight delivered, and our sender goes on at once. But the peer answers
 * such a segment at most once per 500 ms per connection
 * (tcp_invalid_ratelimit, tcp_oow_rate_limited()), answers to pokes made
 * before the switch go to the source, and a poke answered there makes the
 * next one unanswered for 500 ms. Hence:
 *
 *  - before the switch shows, only one socket, the "sentinel", is poked,
 *    every TCPM_POKE_MS, and another one takes over after
 *    TCPM_SENTINEL_POKES (its peer may be the one that's gone): the
 *    others then have no probe of ours answered to the source in the last
 *    500 ms when the switch comes, and theirs is answered at once;
 *  - the first sign of the switch (anything from any peer: tcpi_segs_in,
 *    read for a bounded number of sockets per tick, sentinels first; or
 *    SIGUSR2 from the launcher) pokes every socket still waiting at once,
 *    those poked in the last TCPM_POKE_LIMIT_MS as soon as they may be;
 *  - a socket stays on the list until its sender is unblocked, not merely
 *    heard from: until the peer has acknowledged something new
 *    (tcpi_bytes_acked) or nothing of ours is in flight any more; a
 *    download's socket, with nothing in flight, leaves once heard from
 *    (nothing a TCP socket sends makes its peer retransmit sooner:
 *    doc/migration.md, section 10).
 *
 * At the first sign of the switch, the sockets still on the list also get
 * TCP_RTO_MAX_MS (Linux 6.15) at its least, 1 s, for TCPM_CAP_MS or
 * until they leave the list: the next timeout, armed again by the first
 * ACK that comes (a hole in what the source had in flight: the peer
 * acknowledges up to it at once), comes within a second. The kernel can't
 * tell that hole lost (RACK ignores the TCPCB_REPAIRED data), and only a
 * timeout sends it again: without the cap, 3 s and more. Not before the
 * switch: timeouts every second into the cut-over would each shrink the
 * congestion window to one segment again for nothing. The default (120 s)
 * comes back in time: a cap left on would cut the connection's patience
 * short (tcp_retries2 is modelled with it: about 14 s with 1 s, against 15
 * minutes). Not for a socket whose peer has its window closed, which a
 * cap would give up on after 2 s without an ACK
 * (tcp_rtx_probe0_timed_out()): those aren't blocked on a timeout anyway.
 *
 * A poke asks the repair helper twice, "on" then "off", while the guest
 * runs: the loop waits for the helper a little only (repair_run()). If it
 * takes longer, the sockets of the poke are taken out of the loop ("in a
 * poke", as a parked connection: the loop never writes to a socket the
 * helper may have in repair mode; the guest's data for them is kept and
 * ACKed meanwhile, tcp/kept.c) and everything else goes on; they come
 * back when the helper has answered (tcpm_poke_done()), and no other
 * poke is made meanwhile.
 *
 * Everything stops TCPM_POKE_FOR_MS after the release. If a poke can't be
 * made (no helper any more), pokes stop; a socket a helper left in repair
 * mode between the two halves of a poke is taken out of the loop and waits
 * for a helper to connect (tcp_migrate_repair_retry()), then goes on; if
 * none comes in TCPM_STUCK_MS, it is reset (it can't move data).
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
#include "loop.h"
#include "repair/repair.h"
#include "tcp/close.h"
#include "tcp/conn.h"
#include "tcp/migrate.h"
#include "tcp/migrate_internal.h"
#include "tcp/seg.h"
#include "tcp/to_guest.h"
#include "util.h"

#define TCPM_POKE_MS		600	/* a socket's pokes, at least apart */
#define TCPM_POKE_LIMIT_MS	520	/* the peer's limit, and a margin */
#define TCPM_POKE_FAST_MS	5000	/* a sentinel every tick until then */
#define TCPM_POKE_SLOW_MS	4000	/* the longest interval after that */
#define TCPM_POKE_FOR_MS	30000	/* no poke after this */
#define TCPM_POKE_CHECK		256	/* sockets read per tick, at most */
#define TCPM_CAP_MS		5000	/* RTO capped that long after a sign */
#define TCPM_SENTINEL_POKES	4	/* then the next socket is the sentinel */

/**
 * struct tcpm_poked - a restored socket we poke
 * @idx:	flow index
 * @sock:	its socket when restored
 * @last:	last poke, ms (0: never)
 * @cap:	its timeouts may be capped (the peer's window wasn't closed)
 */
struct tcpm_poked {
	unsigned idx;
	int sock;
	uint64_t last;
	bool cap;
};

static struct {
	struct tcpm_poked *p;
	unsigned n;
	uint64_t start;		/* the release */
	uint64_t next;		/* next sentinel, ms */
	uint64_t cap_end;	/* TCP_RTO_MAX_MS capped until then, 0: not */
	bool capped;		/* the cap came (once per release) */
	uint64_t interval;	/* between sentinels */
	unsigned turn;		/* the sentinel's position */
	unsigned sentinel_pokes;	/* pokes of the current sentinel */
	unsigned check;		/* next position to read */
	bool switched;		/* a sign of the switch seen */
} tcpm_poke;

/* A poke the helper hasn't answered yet: its connections, out of the loop */
static struct {
	struct tcpm_poked *p;
	unsigned n;
} tcpm_pend;

/* Connections a helper left in repair mode (see the top of the file) */
static struct {
	struct tcpm_poked *p;
	unsigned n;
	uint64_t deadline;
} tcpm_stuck;

/* The connection of @p, NULL if it's gone, its socket changed, or a new
 * migration holds it (never poked out of repair mode then)
 */
static struct tcp_conn *tcpm_poked_conn(const struct tcpm_poked *p)
{
	struct tcp_conn *conn = tcp_conn_at(p->idx);

	if (!conn || conn->sock != p->sock || tcpm_is_held(conn))
		return NULL;
	return conn;
}

/* Drop entry @i of the list (order doesn't matter), its RTO cap off */
static void tcpm_poke_drop(unsigned i, bool uncap)
{
	if (uncap && tcpm_poke.cap_end && tcpm_poke.p[i].cap &&
	    tcpm_poked_conn(&tcpm_poke.p[i]))
		tcpm_rto_cap(tcpm_poke.p[i].sock, false);
	tcpm_poke.p[i] = tcpm_poke.p[--tcpm_poke.n];
	if (tcpm_poke.turn >= tcpm_poke.n)
		tcpm_poke.turn = 0;
	if (tcpm_poke.check >= tcpm_poke.n)
		tcpm_poke.check = 0;
}

static void tcpm_poke_stop(void)
{
	while (tcpm_poke.n)
		tcpm_poke_drop(tcpm_poke.n - 1, true);
	free(tcpm_poke.p);
	memset(&tcpm_poke, 0, sizeof(tcpm_poke));
}

/*
 * Read entry @i: true if it stays on the list (its sender may still be
 * blocked). Notes a sign of the switch
 */
static bool tcpm_poke_read(unsigned i)
{
	struct tcp_conn *conn = tcpm_poked_conn(&tcpm_poke.p[i]);
	struct tcpm_progress pr;

	if (!conn || conn->f.state != TCP_ST_ESTABLISHED ||
	    (conn->flags & TCP_F_MIGRATED) || tcpm_progress(conn->sock, &pr))
		return false;
	if (!pr.segs_in)
		return true;
	tcpm_poke.switched = true;
	return pr.unacked && !pr.bytes_acked;
}

/* The first sign of the switch: cap the timeouts (see the top) */
static void tcpm_poke_cap(uint64_t now)
{
	unsigned i;

	if (tcpm_poke.capped)
		return;
	tcpm_poke.capped = true;
	tcpm_poke.cap_end = now + TCPM_CAP_MS;
	for (i = 0; i < tcpm_poke.n; i++) {
		if (tcpm_poke.p[i].cap && tcpm_poked_conn(&tcpm_poke.p[i]))
			tcpm_rto_cap(tcpm_poke.p[i].sock, true);
	}
}

/* Cap off again for those still on the list */
static void tcpm_poke_uncap(void)
{
	unsigned i;

	if (!tcpm_poke.cap_end)
		return;
	for (i = 0; i < tcpm_poke.n; i++) {
		if (tcpm_poke.p[i].cap && tcpm_poked_conn(&tcpm_poke.p[i]))
			tcpm_rto_cap(tcpm_poke.p[i].sock, false);
	}
	tcpm_poke.cap_end = 0;
}

/* Read up to TCPM_POKE_CHECK entries, in turn; drop the unblocked ones */
static void tcpm_poke_check(void)
{
	unsigned k;

	for (k = 0; k < TCPM_POKE_CHECK && tcpm_poke.n; k++) {
		unsigned i = tcpm_poke.check;

		if (k >= tcpm_poke.n)
			break;
		if (tcpm_poke_read(i))
			tcpm_poke.check = (i + 1) % tcpm_poke.n;
		else
			tcpm_poke_drop(i, true);
	}
}

/* Take @conn out of the loop, as a parked connection: nothing touches it */
static void tcpm_freeze(struct ctx *c, struct tcp_conn *conn)
{
	loop_del(c, conn->sock);
	/* The guest runs here: what it sends meanwhile is kept and ACKed
	 * (tcp_data_held()), and goes to the socket first when it's thawed
	 */
	conn->flags |= TCP_F_MIGRATED | TCP_F_PARKED | TCP_F_GUEST_HERE;
}

/*
 * Back in the loop (its socket out of repair mode), from the first byte the
 * guest hasn't ACKed. Return: false if it was reset instead
 */
static bool tcpm_thaw(struct ctx *c, struct tcp_conn *conn)
{
	conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED | TCP_F_GUEST_HERE |
			 TCP_F_QUIET);
	tcp_block_back(conn);
	if (loop_add(c, conn->sock, tcpm_events(conn),
		     flow_ref((union flow *)conn, REF_TCP))) {
		tcp_rst(c, conn);
		return false;
	}
	tcp_ack_now(c, conn);
	tcp_data_to_guest(c, conn);
	return true;
}

/**
 * tcpm_stuck_add() - hold a connection out of the loop for a helper
 * @c:		execution context
 * @conn:	connection, in repair mode
 *
 * Until a helper takes it out of repair mode (tcp_migrate_repair_retry()), or
 * TCPM_STUCK_MS pass.
 */
static void tcpm_stuck_add(struct ctx *c, struct tcp_conn *conn)
{
	struct tcpm_poked *p;

	p = realloc(tcpm_stuck.p, (tcpm_stuck.n + 1) * sizeof(*p));
	if (!p) {
		conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED |
				 TCP_F_GUEST_HERE);
		tcp_rst(c, conn);
		return;
	}
	tcpm_stuck.p = p;
	p[tcpm_stuck.n++] = (struct tcpm_poked){ flow_idx((union flow *)conn),
						 conn->sock, 0, false };
	tcpm_freeze(c, conn);
	if (!tcpm_stuck.deadline)
		tcpm_stuck.deadline = now_ms() + TCPM_STUCK_MS;
}

/**
 * tcpm_poke_failed() - the pokes failed: hold those left in repair mode
 * @c:		execution context
 * @fds:	the sockets poked
 * @n:		number of entries in @fds
 *
 * Those left in repair mode stay out of the loop until a helper comes back;
 * no more pokes.
 */
static void tcpm_poke_failed(struct ctx *c, const int *fds, unsigned n)
{
	unsigned i, stuck = 0;

	repair_set(c, fds, n, REPAIR_OFF_NO_WP);
	for (i = 0; i < tcpm_poke.n; i++) {
		struct tcp_conn *conn = tcpm_poked_conn(&tcpm_poke.p[i]);

		if (!conn || !tcpm_in_repair(conn->sock))
			continue;
		tcpm_stuck_add(c, conn);
		stuck++;
	}
	if (stuck)
		warn("Migration: a poke left %u connection(s) in repair mode "
		     "(the passt-repair helper is gone): they wait up to %u s "
		     "for a helper, then are reset", stuck,
		     TCPM_STUCK_MS / 1000);
	else
		debug("Migration: can't poke (no TCP_REPAIR), stopping");
	tcpm_poke_stop();
}

/**
 * tcpm_poke_hold() - hold the connections of a poke not answered in time
 * @c:		execution context
 * @which:	the entries of the poke list poked
 * @n:		number of entries in @which
 *
 * Their connections wait out of the loop until it has (tcpm_poke_done()).
 */
static void tcpm_poke_hold(struct ctx *c, const unsigned *which, unsigned n)
{
	unsigned i;

	if (!(tcpm_pend.p = calloc(n, sizeof(*tcpm_pend.p)))) {
		repair_settle(c);	/* nothing to keep them out with */
		return;
	}
	for (i = 0; i < n; i++) {
		const struct tcpm_poked *p = &tcpm_poke.p[which[i]];
		struct tcp_conn *conn = tcpm_poked_conn(p);

		if (!conn)
			continue;
		tcpm_freeze(c, conn);
		tcpm_pend.p[tcpm_pend.n++] = *p;
	}
	debug("Migration: the repair helper is slow to answer a poke: %u "
	      "connection(s) wait for it out of the loop", tcpm_pend.n);
}

/**
 * tcpm_poke_done() - the poke the helper was slow to answer is over
 * @c:		execution context
 * @rc:		0, or -errno: the helper was dropped
 *
 * Its connections go back to the loop, but those it left in repair mode, which
 * wait for a helper (as tcpm_poke_failed()).
 */
static void tcpm_poke_done(struct ctx *c, int rc)
{
	unsigned i, stuck = 0;

	for (i = 0; i < tcpm_pend.n; i++) {
		const struct tcpm_poked *p = &tcpm_pend.p[i];
		struct tcp_conn *conn = tcp_conn_at(p->idx);

		if (!conn || conn->sock != p->sock ||
		    (conn->flags & (TCP_F_MIGRATED | TCP_F_PARKED)) !=
		    (TCP_F_MIGRATED | TCP_F_PARKED))
			continue;
		if (tcpm_in_repair(conn->sock)) {
			tcpm_stuck_add(c, conn);
			stuck++;
			continue;
		}
		tcpm_thaw(c, conn);
	}
	debug("Migration: the repair helper answered the poke (%s): %u "
	      "connection(s) back in the loop", rc ? strerror(-rc) : "done",
	      tcpm_pend.n - stuck);
	free(tcpm_pend.p);
	memset(&tcpm_pend, 0, sizeof(tcpm_pend));
	if (!rc)
		return;
	if (stuck)
		warn("Migration: a poke left %u connection(s) in repair mode "
		     "(the passt-repair helper is gone): they wait up to %u s "
		     "for a helper, then are reset", stuck,
		     TCPM_STUCK_MS / 1000);
	tcpm_poke_stop();
}

/**
 * tcpm_poke_now() - poke the entries of the list that may be poked now
 * @c:		execution context
 * @now:	current time, ms
 * @all:	all of those not poked in the last TCPM_POKE_LIMIT_MS, not only
 *		the next sentinel
 *
 * Poke the entries of the list that may be poked at @now: all of those not
 * poked in the last TCPM_POKE_LIMIT_MS if @all, else the next sentinel.
 *
 * Return: how many were poked
 */
static unsigned tcpm_poke_now(struct ctx *c, uint64_t now, bool all)
{
	unsigned i, n = 0, *which;
	int *fds, rc;

	if (!tcpm_poke.n)
		return 0;
	fds = calloc(tcpm_poke.n, sizeof(*fds));
	which = calloc(tcpm_poke.n, sizeof(*which));
	if (!fds || !which)
		goto out;
	for (i = 0; i < tcpm_poke.n; i++) {
		unsigned j = (tcpm_poke.turn + i) % tcpm_poke.n;
		struct tcpm_poked *p = &tcpm_poke.p[j];
		uint64_t gap = all ? TCPM_POKE_LIMIT_MS : TCPM_POKE_MS;

		if (p->last && now < p->last + gap) {
			if (!all)
				break;	/* the sentinel's turn isn't due */
			continue;
		}
		if (!tcpm_poked_conn(p))
			continue;
		which[n] = j;
		fds[n++] = p->sock;
		if (!all) {
			if (++tcpm_poke.sentinel_pokes >= TCPM_SENTINEL_POKES) {
				tcpm_poke.turn = (j + 1) % tcpm_poke.n;
				tcpm_poke.sentinel_pokes = 0;
			}
			break;
		}
	}
	if (!n)
		goto out;
	rc = repair_run(c, fds, n, (const int []){ REPAIR_ON, REPAIR_OFF }, 2,
			tcpm_poke_done);
	if (rc == -EBUSY) {
		n = 0;
		goto out;
	}
	if (rc == -EINPROGRESS) {
		tcpm_poke_hold(c, which, n);
	} else if (rc) {
		tcpm_poke_failed(c, fds, n);
		n = 0;
		goto out;
	}
	for (i = 0; i < n; i++)
		tcpm_poke.p[which[i]].last = now;
	debug("Migration: poked %u restored connection(s)%s, %llu ms after "
	      "the restore", n, all ? " (the fabric switched)" : "",
	      (unsigned long long)(now - tcpm_poke.start));
out:
	free(fds);
	free(which);
	return n;
}

/**
 * tcpm_poke_end() - no more pokes, timeouts uncapped: a new migration
 *		     holds the connections
 * @c:		execution context
 *
 * A poke the helper hasn't answered yet ends first (repair_settle()): its
 * connections go back to the loop, to be held with the others.
 */
void tcpm_poke_end(struct ctx *c)
{
	repair_settle(c);
	tcpm_poke_stop();
}

/**
 * tcpm_poke_start() - after a restore: poke the restored sockets from now
 *		       on
 * @fds:	their sockets
 * @idx:	their flow indices
 * @cap:	whether each may have its timeouts capped (see the top)
 * @n:		how many
 */
void tcpm_poke_start(const int *fds, const unsigned *idx, const bool *cap,
		     unsigned n)
{
	unsigned i;

	tcpm_poke_stop();
#ifdef TCP_MIGRATE_NO_POKE
	(void)fds;
	(void)idx;
	(void)cap;
	(void)n;
	(void)i;
	return;
#else
	if (!n || !(tcpm_poke.p = calloc(n, sizeof(*tcpm_poke.p))))
		return;
	/* TCP_REPAIR_OFF sent each a window probe just now */
	tcpm_poke.start = now_ms();
	for (i = 0; i < n; i++)
		tcpm_poke.p[i] = (struct tcpm_poked){ idx[i], fds[i],
						      tcpm_poke.start,
						      cap[i] };
	tcpm_poke.n = n;
	tcpm_poke.interval = TCPM_POKE_MS;
	tcpm_poke.next = tcpm_poke.start + TCPM_POKE_MS;
#endif
}

/**
 * tcpm_stuck_reset() - reset the stuck connections: no helper came in time
 * @c:		execution context
 */
static void tcpm_stuck_reset(struct ctx *c)
{
	unsigned i, n = 0;

	for (i = 0; i < tcpm_stuck.n; i++) {
		struct tcp_conn *conn = tcpm_poked_conn(&tcpm_stuck.p[i]);

		if (!conn || !(conn->flags & TCP_F_PARKED))
			continue;
		conn->flags &= ~(TCP_F_MIGRATED | TCP_F_PARKED |
				 TCP_F_GUEST_HERE);
		tcp_rst(c, conn);	/* in repair mode: silent to the peer */
		n++;
	}
	if (n)
		warn("Migration: no passt-repair helper in %u s: %u "
		     "connection(s) left in repair mode reset",
		     TCPM_STUCK_MS / 1000, n);
	free(tcpm_stuck.p);
	memset(&tcpm_stuck, 0, sizeof(tcpm_stuck));
}

/**
 * tcp_migrate_repair_retry() - a repair helper connected: take the
 *				connections a gone one left in repair mode
 *				back into the loop
 * @c:		execution context
 */
void tcp_migrate_repair_retry(struct ctx *c)
{
	unsigned i, k = 0, n = 0;
	int *fds;

	if (!tcpm_stuck.n)
		return;
	if (!(fds = calloc(tcpm_stuck.n, sizeof(*fds))))
		return;
	for (i = 0; i < tcpm_stuck.n; i++) {
		struct tcp_conn *conn = tcpm_poked_conn(&tcpm_stuck.p[i]);

		if (conn && (conn->flags & TCP_F_PARKED))
			fds[k++] = conn->sock;
	}
	if (k && repair_set(c, fds, k, REPAIR_OFF)) {
		free(fds);
		return;		/* this one failed too: wait for the next */
	}
	free(fds);
	for (i = 0; i < tcpm_stuck.n; i++) {
		struct tcp_conn *conn = tcpm_poked_conn(&tcpm_stuck.p[i]);

		if (!conn || !(conn->flags & TCP_F_PARKED))
			continue;
		n += tcpm_thaw(c, conn);
	}
	info("Migration: %u connection(s) left in repair mode by a gone "
	     "helper taken back", n);
	free(tcpm_stuck.p);
	memset(&tcpm_stuck, 0, sizeof(tcpm_stuck));
}

/**
 * tcp_migrate_poke_timer() - target: poke the peers of restored sockets,
 *			      for a while after the restore (see the top)
 * @c:		execution context
 * @now:	current time, ms
 */
void tcp_migrate_poke_timer(struct ctx *c, uint64_t now)
{
	if (tcpm_stuck.n && now >= tcpm_stuck.deadline)
		tcpm_stuck_reset(c);
	if (!tcpm_poke.n || tcpm_pend.n)
		return;		/* none, or one the helper hasn't answered */
	if (now >= tcpm_poke.start + TCPM_POKE_FOR_MS) {
		tcpm_poke_stop();
		return;
	}
	if (tcpm_poke.cap_end && now >= tcpm_poke.cap_end)
		tcpm_poke_uncap();
	tcpm_poke_check();
	if (!tcpm_poke.n) {
		tcpm_poke_stop();
		return;
	}
	if (tcpm_poke.switched) {
		tcpm_poke_cap(now);
		tcpm_poke_now(c, now, true);
		return;
	}
	if (now < tcpm_poke.next)
		return;
	if (now >= tcpm_poke.start + TCPM_POKE_FAST_MS)
		tcpm_poke.interval = MIN(tcpm_poke.interval * 2,
					 (uint64_t)TCPM_POKE_SLOW_MS);
	tcpm_poke.next = now + tcpm_poke.interval;
	tcpm_poke_now(c, now, false);
}

/**
 * tcp_migrate_poke() - target: the fabric has switched (SIGUSR2), poke
 *			the peers of restored sockets still waiting
 * @c:		execution context
 *
 * Every socket not poked in the peer's rate limit goes at once, the
 * others as soon as they may (the timer goes on).
 *
 * Return: how many sockets are waiting for their senders to move
 */
unsigned tcp_migrate_poke(struct ctx *c)
{
	if (!tcpm_poke.n)
		return 0;
	tcpm_poke.switched = true;
	tcpm_poke_cap(now_ms());
	if (!tcpm_pend.n)	/* else the timer pokes once it's answered */
		tcpm_poke_now(c, now_ms(), true);
	return tcpm_poke.n;
}
