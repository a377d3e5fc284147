// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * transfer.c - live migration in vhost-user mode: the device-state
 * transfer, and the source's linger after it.
 *
 * Theory of operation
 *
 * QEMU drives a migration (doc/migration.md has the details): the source
 * gets SET_DEVICE_STATE_FD(SAVE) with the write end of a pipe once the
 * guest is paused and our rings are stopped; the target gets
 * SET_DEVICE_STATE_FD(LOAD) with the read end; each is then asked
 * CHECK_DEVICE_STATE. The front-end replies to SET_DEVICE_STATE_FD first
 * and hands us the fd (migrate_state_fd()); the bytes then move from our
 * event loop, never blocking it, and nothing waits for another message.
 *
 *  SAVE: the state is built at once: the stream header, the addresses we
 *	learned about the guest, and the TCP connections, which are held
 *	silently (tcp/migrate_src.c: out of the loop, deaf, repair mode) and
 *	dumped; the listening sockets of forwarded ports take no new
 *	connection from then on. The bytes go out as the pipe takes them
 *	(EPOLLOUT); at the end we close our end, which is QEMU's EOF.
 *  LOAD: bytes are collected (EPOLLIN) until EOF, no further than the
 *	stream announces for the flows it carries (mig_stream_need(): the
 *	buffer is as large as the stream, never larger; bytes past its end,
 *	or past a beginning no stream we take could have, are dropped).
 *	Then the whole stream is parsed and validated (repair/format.c)
 *	and checked against our own flows; a stream that fails any check
 *	is refused as a whole, nothing of it applied. A good one is
 *	applied: addresses adopted, connections recreated, but kept in
 *	repair mode and silent ("parked") until the guest runs here (the
 *	first ring start after the LOAD: migrate_device_started()): the
 *	migration may still fail, and the source resume the guest. If the
 *	front-end goes away first, they are closed silently. Restoring
 *	needs TCP_REPAIR: if no helper is connected yet, we wait for one, up
 *	to MIGRATE_HELPER_WAIT_MS; the helper stays connected until the
 *	release.
 *  CHECK_DEVICE_STATE: 0 if our side went through. If it hasn't finished
 *	yet, migrate_check() keeps the caller's completion callback and
 *	calls it once it has, unless the front-end went away meanwhile.
 *
 * After a successful SAVE, the source is done ("migrated"). By default it
 * lingers: it keeps running, holding the migrated sockets silent, so that
 * the peer's segments still routed here find a socket that neither ACKs
 * nor resets, and the peer retransmits until the fabric delivers to the
 * target. The linger ends with SIGUSR2 (the launcher says the fabric has
 * switched), after --migrate-linger-timeout seconds, or
 * MIGRATE_LINGER_TERM_MS after SIGTERM, whichever comes first: the held
 * sockets are closed in repair mode (no FIN, no RST), any other connection
 * is reset (it can't go on anywhere), one line is logged, and the process
 * exits 0. --one-off has no effect once migrated.
 * --migrate-no-linger (deprecated) closes the held sockets at once and
 * --migrate-exit (deprecated) exits at once.
 *
 * A migration that fails or is cancelled after SAVE makes QEMU start our
 * rings again (migrate_device_started()): the held connections are taken
 * back, the listeners take connections again, and traffic flows again, as
 * if nothing happened.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "loop.h"
#include "migrate/announce.h"
#include "migrate/transfer.h"
#include "repair/format.h"
#include "repair/repair.h"
#include "tap/tap.h"
#include "tcp/migrate.h"
#include "util.h"

/* How long a target waits for its repair helper to connect */
#define MIGRATE_HELPER_WAIT_MS	10000

/* How long connections held by a failed migration wait for a repair helper
 * to take them out of repair mode, before they are reset
 */
#define MIGRATE_RESUME_WAIT_MS	30000

enum migrate_phase {
	MIG_IDLE = 0,
	MIG_SAVING,		/* writing the state into the pipe */
	MIG_LOADING,		/* reading it */
	MIG_WAIT_HELPER,	/* read, valid, waiting for passt-repair */
	MIG_DONE,		/* transfer over: @result holds the outcome */
};

static struct {
	enum migrate_phase phase;
	int fd;
	uint32_t gen;
	int result;			/* 0 ok, -errno failed, 1: none yet */
	migrate_done_fn check_done;	/* CHECK_DEVICE_STATE waits for us */
	struct mig_buf out;		/* SAVE: the stream */
	size_t out_off;
	uint8_t *in;			/* LOAD: the stream */
	size_t in_len, in_cap;
	bool in_over;			/* LOAD: it announces too much */
	struct mig_stream_in parsed;
	uint64_t helper_deadline;
	uint64_t started_ms;
	uint64_t started_cpu_us;	/* the process's CPU time then */
	bool save;			/* the last transfer was a SAVE */
	unsigned held;			/* SAVE: connections held */
} mig = { .fd = -1, .result = 1 };

/* After a completed SAVE: the linger */
static struct {
	bool migrated;			/* completed as source */
	bool active;			/* holding sockets */
	int term;			/* SIGTERM/SIGINT shortened it */
	uint64_t start_ms, end_ms;	/* started, latest end */
	bool one_off_off;		/* we turned --one-off off for it */
	bool usr2;			/* SIGUSR2 came before it started */
	uint64_t resume_deadline;	/* held connections wait for a helper */
} linger;

/* The process's CPU time, µs: what a transfer costs, whatever the load */
static uint64_t migrate_cpu_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* CPU time since the transfer started, ms, for the log */
static double migrate_cpu_ms(void)
{
	return (double)(migrate_cpu_us() - mig.started_cpu_us) / 1000.0;
}

static void migrate_pipe_close(struct ctx *c)
{
	if (mig.fd < 0)
		return;
	loop_del(c, mig.fd);
	close(mig.fd);
	mig.fd = -1;
}

static void migrate_reset_buffers(void)
{
	mig_buf_free(&mig.out);
	memset(&mig.out, 0, sizeof(mig.out));
	mig.out_off = 0;
	free(mig.in);
	mig.in = NULL;
	mig.in_len = mig.in_cap = 0;
	mig.in_over = false;
	mig_stream_in_free(&mig.parsed);
	memset(&mig.parsed, 0, sizeof(mig.parsed));
}

/* The transfer is over, one way or the other: answer a waiting CHECK */
static void migrate_finish(struct ctx *c, int result)
{
	migrate_pipe_close(c);
	migrate_reset_buffers();
	mig.phase = MIG_DONE;
	mig.result = result;
	if (mig.check_done) {
		migrate_done_fn done = mig.check_done;

		mig.check_done = NULL;
		done(c, migrate_check(c, NULL));
	}
}

/* The observed addresses: what we learned of the guest, both ways */
static void migrate_addrs_get(const struct ctx *c, struct mig_addrs *a)
{
	memset(a, 0, sizeof(*a));
	a->addr6 = c->ip6.addr_seen;
	a->addr6_ll = c->ip6.guest_ll;
	a->addr4 = c->ip4.addr_seen;
	if (c->guest_mac_set)
		memcpy(a->mac, c->guest_mac, ETH_ADDR_LEN);
	else
		memset(a->mac, 0xff, ETH_ADDR_LEN);
}

/**
 * migrate_addrs_set() - take the guest's addresses from a migration stream
 * @c:		execution context
 * @a:		the addresses the source saw
 */
static void migrate_addrs_set(struct ctx *c, const struct mig_addrs *a)
{
	static const uint8_t none[ETH_ADDR_LEN], bcast[ETH_ADDR_LEN] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff
	};

	if (!IN6_IS_ADDR_UNSPECIFIED(&a->addr6))
		c->ip6.addr_seen = a->addr6;
	if (!IN6_IS_ADDR_UNSPECIFIED(&a->addr6_ll))
		c->ip6.guest_ll = a->addr6_ll;
	if (a->addr4.s_addr)
		c->ip4.addr_seen = a->addr4;
	if (memcmp(a->mac, none, ETH_ADDR_LEN) &&
	    memcmp(a->mac, bcast, ETH_ADDR_LEN)) {
		memcpy(c->guest_mac, a->mac, ETH_ADDR_LEN);
		c->guest_mac_set = true;
	}
}

/**
 * migrate_save_start() - SAVE: hold and dump everything now, then stream it out
 * @c:		execution context
 *
 * Return: 0 or -errno
 */
static int migrate_save_start(struct ctx *c)
{
	struct mig_addrs a;
	int n;

	mig_put_header(&mig.out);
	migrate_addrs_get(c, &a);
	mig_put_addrs(&mig.out, &a);

	if (linger.resume_deadline) {
		/* Dumped now, they would move still held, and the deadline
		 * would reset them during the linger
		 */
		err("Migration: refusing to save the state: %u connection(s) "
		    "of the last failed migration still wait for a "
		    "passt-repair helper on %s", tcp_migrate_held(),
		    c->repair_path);
		return -EBUSY;
	}
	if ((n = (int)tcp_migrate_target_waiting())) {
		err("Migration: refusing to save the state: %i connection(s) "
		    "restored here still wait for the passt-repair helper on "
		    "%s to take them out of repair mode", n, c->repair_path);
		return -EBUSY;
	}
	if (!repair_available(c, 10) && repair_seen() &&
	    (n = (int)tcp_migrate_movable())) {
		/* A helper was here (this deployment runs one) and left: the
		 * connections would all be lost. The migration fails, the
		 * guest goes on here with them, and whoever drives it may
		 * try again with a helper (doc/migration.md, section 8).
		 * Checked before the listeners' queues are drained: a
		 * refused SAVE resets nothing
		 */
		err("Migration: refusing to save the state: the passt-repair "
		    "helper that was connected is gone, and the %i "
		    "connection(s) it would move would be lost. Keep "
		    "passt-repair running on %s until the migration completes",
		    n, c->repair_path);
		return -ENOTCONN;
	}
	/* Nothing accepted from now on could move: see tcp/migrate_src.c */
	tcp_migrate_listen(c, false);
	n = 0;
	if (repair_available(c, 0)) {
		repair_phase_begin();
		n = tcp_migrate_source_hold(c);
		repair_phase_end();
		if (n < 0) {
			/* Rather than move some and reset the others: the
			 * guest goes on here with all of them
			 * (doc/migration.md, section 8)
			 */
			err("Migration: can't put the connections in repair "
			    "mode (%s): refusing to save the state; %u "
			    "connection(s) the helper may have put in repair "
			    "mode stay held until it answers", strerror(-n),
			    tcp_migrate_held());
			tcp_migrate_listen(c, true);
			return n;
		}
	} else {
		warn("Migration: no passt-repair helper connected and no "
		     "CAP_NET_ADMIN: TCP connections are not migrated");
	}
	mig.held = (unsigned)n;
	tcp_migrate_source_write(c, &mig.out);
	if (mig.out.err) {
		unsigned waiting;

		tcp_migrate_source_resume(c, true, &waiting);
		return mig.out.err;
	}
	info("Migration: source, %u connection(s), %zu bytes of state",
	     mig.held, mig.out.len);
	return 0;
}

/**
 * migrate_save_write() - write what the pipe takes of the state stream
 * @c:		execution context
 */
static void migrate_save_write(struct ctx *c)
{
	while (mig.out_off < mig.out.len) {
		ssize_t n = write(mig.fd, mig.out.p + mig.out_off,
				  mig.out.len - mig.out_off);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			err_perror("Migration: writing the state");
			migrate_finish(c, -EIO);
			return;
		}
		mig.out_off += (size_t)n;
	}
	info("Migration: state sent in %llu ms (%.1f ms of CPU)",
	     (unsigned long long)(now_ms() - mig.started_ms),
	     migrate_cpu_ms());
	migrate_finish(c, 0);
}

/**
 * migrate_load_apply() - LOAD, all read and validated: apply it
 * @c:		execution context
 *
 * Fails the LOAD if the connections can't be restored (no repair mode: the
 * source keeps them).
 */
static void migrate_load_apply(struct ctx *c)
{
	unsigned count;
	int n;

	migrate_addrs_set(c, &mig.parsed.addrs);
	count = mig.parsed.count;
	/* tcp/migrate_dst.c keeps the stream until the guest runs here */
	repair_phase_begin();
	n = tcp_migrate_target(c, &mig.parsed, &mig.in);
	repair_phase_end();
	if (n < 0) {
		migrate_finish(c, n);
		return;
	}
	info("Migration: target, %i of %u connection(s) restored in %llu ms "
	     "(%.1f ms of CPU)", n, count,
	     (unsigned long long)(now_ms() - mig.started_ms), migrate_cpu_ms());
	announce_target_loaded();
	migrate_finish(c, 0);
}

/* A helper is connected (or not needed), and not late with a request */
static bool migrate_helper_ready(struct ctx *c)
{
	return repair_available(c, 0) && !repair_busy();
}

/**
 * migrate_load_eof() - LOAD: end of the stream: check it, then apply it or wait
 * @c:		execution context
 */
static void migrate_load_eof(struct ctx *c)
{
	char why[256] = "";
	int rc;

	migrate_pipe_close(c);
	if (mig.in_over) {
		err("Migration: refusing the state stream: it announces more "
		    "than %llu bytes", (unsigned long long)MIG_STREAM_MAX);
		migrate_finish(c, -E2BIG);
		return;
	}
	rc = mig_parse(mig.in, mig.in_len, &mig.parsed, why, sizeof(why));
	if (!rc)
		rc = tcp_migrate_target_check(&mig.parsed, why, sizeof(why));
	if (rc) {
		err("Migration: refusing the state stream (%zu bytes): %s",
		    mig.in_len, why[0] ? why : strerror(-rc));
		migrate_finish(c, rc);
		return;
	}
	if (mig.parsed.count && !migrate_helper_ready(c)) {
		info("Migration: waiting for the passt-repair helper");
		mig.phase = MIG_WAIT_HELPER;
		mig.helper_deadline = now_ms() + MIGRATE_HELPER_WAIT_MS;
		return;
	}
	migrate_load_apply(c);
}

/**
 * migrate_load_read() - LOAD: read what the pipe has of the state stream
 * @c:		execution context
 *
 * LOAD: read no further than the stream announces (mig_stream_need()), so that
 * the buffer never holds more than the flows it carries can, nor reserves more
 * than MIG_STREAM_MAX. Bytes after the end of the stream are read and dropped,
 * as upstream ignores them; so is everything after a beginning that no stream
 * we take could have (mig_parse() says what is wrong with it, at end of file).
 * At most MIGRATE_LOAD_ROUND bytes per loop round: a front-end that keeps the
 * pipe full gets its turn again (EPOLLIN) after everybody else had theirs
 */
static void migrate_load_read(struct ctx *c)
{
	static uint8_t drop[1 << 14];
	size_t round = 0;

	for (;;) {
		uint64_t need = 0;
		size_t room;
		ssize_t n;
		int rc;

		if (round >= MIGRATE_LOAD_ROUND)
			return;

		rc = mig_stream_need(mig.in, mig.in_len, &need);
		if (rc >= 0 && need > MIG_STREAM_MAX)
			mig.in_over = true;

		if (rc < 0 || mig.in_over || (rc == 1 && mig.in_len >= need)) {
			n = read(mig.fd, drop,
				 MIN(sizeof(drop), MIGRATE_LOAD_ROUND - round));
		} else {
			if (mig.in_cap < need) {
				/* The whole stream's length known: that; else
				 * twice the capacity, at most twice what is
				 * announced so far, and never more than a
				 * stream may be
				 */
				uint64_t cap = rc ? need :
					MIN(MIN(MAX((uint64_t)mig.in_cap * 2,
						    need), 2 * need),
					    MIG_STREAM_MAX);
				uint8_t *p = realloc(mig.in, (size_t)cap);

				if (!p) {
					err("Migration: out of memory for the "
					    "state");
					migrate_finish(c, -ENOMEM);
					return;
				}
				mig.in = p;
				mig.in_cap = (size_t)cap;
			}
			room = mig.in_cap - mig.in_len;
			if (rc)
				room = (size_t)(need - mig.in_len);
			n = read(mig.fd, mig.in + mig.in_len,
				 MIN(room, MIGRATE_LOAD_ROUND - round));
			if (n > 0)
				mig.in_len += (size_t)n;
		}
		if (n > 0)
			round += (size_t)n;
		if (n == 0) {
			migrate_load_eof(c);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			err_perror("Migration: reading the state");
			migrate_finish(c, -EIO);
			return;
		}
	}
}

/**
 * migrate_state_fd() - SET_DEVICE_STATE_FD: start a transfer
 * @c:		execution context
 * @direction:	MIGRATE_SAVE or MIGRATE_LOAD
 * @fd:		pipe end; ours from now on, whatever we return
 *
 * Return: 0 if the transfer started, -errno if refused (the front-end
 *	   reports failure to QEMU)
 */
int migrate_state_fd(struct ctx *c, uint32_t direction, int fd)
{
	uint32_t ev = direction == MIGRATE_SAVE ? EPOLLOUT : EPOLLIN;
	int fl, rc;

	if (mig.phase == MIG_SAVING || mig.phase == MIG_LOADING ||
	    mig.phase == MIG_WAIT_HELPER) {
		warn("Migration: a transfer is already in progress, "
		     "refusing another");
		close(fd);
		return -EBUSY;
	}
	if (direction != MIGRATE_SAVE && direction != MIGRATE_LOAD) {
		close(fd);
		return -EINVAL;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK)) {
		close(fd);
		return -EBADF;
	}
	migrate_reset_buffers();
	/* Connections restored by an earlier LOAD whose guest never ran
	 * (not those released that wait for a helper: the SAVE refuses)
	 */
	if (!(direction == MIGRATE_SAVE && tcp_migrate_target_waiting()) &&
	    tcp_migrate_target_drop(c))
		info("Migration: connections restored for a guest that never "
		     "ran here closed silently");
	mig.fd = fd;
	mig.gen = loop_gen_next();
	mig.result = 1;
	mig.check_done = NULL;
	mig.started_ms = now_ms();
	mig.started_cpu_us = migrate_cpu_us();
	mig.held = 0;
	mig.save = direction == MIGRATE_SAVE;

	if (direction == MIGRATE_SAVE) {
		mig.phase = MIG_SAVING;
		info("Migration: starting as source");
		if ((rc = migrate_save_start(c))) {
			migrate_finish(c, rc);
			return 0;	/* reported at CHECK_DEVICE_STATE */
		}
	} else {
		mig.phase = MIG_LOADING;
		info("Migration: starting as target");
	}
	if (loop_add(c, fd, ev, loop_ref(REF_MIGRATE, 0, mig.gen))) {
		migrate_finish(c, -EIO);
		return 0;
	}
	if (direction == MIGRATE_SAVE)
		migrate_save_write(c);
	return 0;
}

/**
 * migrate_pipe_handler() - the pipe can take or give more bytes
 * @c:		execution context
 * @ref:	epoll reference, generation of the transfer
 * @events:	epoll events
 */
void migrate_pipe_handler(struct ctx *c, union epoll_ref ref,
			  uint32_t events)
{
	if (mig.fd < 0 || ref.gen != mig.gen)
		return;
	if (mig.phase == MIG_SAVING) {
		if (events & (EPOLLERR | EPOLLHUP)) {
			err("Migration: the front-end closed the state pipe");
			migrate_finish(c, -EPIPE);
			return;
		}
		migrate_save_write(c);
	} else if (mig.phase == MIG_LOADING) {
		migrate_load_read(c);
	}
}

/* The end of the linger: close held sockets silently, and exit */
static void migrate_linger_end(struct ctx *c, const char *why)
{
	unsigned n;

	if (!linger.active)
		return;
	n = tcp_migrate_source_release(c);
	info("Linger: ended (%s): %u connection(s) held for %.1f s, closed "
	     "silently", why, n,
	     (double)(now_ms() - linger.start_ms) / 1000.0);
	linger.active = false;
	c->quit = true;
}

/*
 * Hold what the SAVE took silently, as the linger does, up to the linger
 * timeout (or the end a signal set already): --one-off has no effect (a
 * front-end going away doesn't end the process) until the guest runs
 * here again, which gives it back (migrate_device_started())
 */
static void migrate_linger_start(struct ctx *c)
{
	if (c->one_off) {
		c->one_off = false;
		linger.one_off_off = true;
	}
	if (linger.active)
		return;		/* a signal started it: its end stands */
	linger.active = true;
	linger.start_ms = now_ms();
	linger.end_ms = linger.start_ms +
			(uint64_t)c->migrate_linger_timeout * 1000;
}

/* Held for a SAVE not confirmed yet (no CHECK_DEVICE_STATE = 0 yet)? */
static bool migrate_holding_unconfirmed(void)
{
	return mig.save && !linger.migrated && tcp_migrate_held();
}

/**
 * migrate_source_completed() - linger, or what the deprecated options ask
 * @c:		execution context
 *
 * Once a migration completed with us as its source.
 */
static void migrate_source_completed(struct ctx *c)
{
	unsigned n;

	linger.migrated = true;
	if (c->one_off) {	/* no effect after a completed migration */
		c->one_off = false;
		linger.one_off_off = true;
	}
	info("Migration: completed as source, %u connection(s) moved",
	     mig.held);
	n = tcp_migrate_source_unborn(c);
	if (n)
		info("Migration: %u connection(s) still in their handshake "
		     "reset", n);
	if (c->migrate_exit) {
		info("Migration: exiting (--migrate-exit)");
		tcp_migrate_source_release(c);
		c->quit = true;
		return;
	}
	if (c->migrate_no_linger) {
		n = tcp_migrate_source_release(c);

		info("Migration: %u migrated socket(s) closed "
		     "(--migrate-no-linger)", n);
		return;
	}
	migrate_linger_start(c);
	info("Linger: holding %u migrated connection(s) silently for up to "
	     "%llu s, until SIGUSR2", tcp_migrate_held(),
	     (unsigned long long)(linger.end_ms - now_ms() + 999) / 1000);
	if (linger.usr2)
		migrate_linger_end(c, "SIGUSR2, before the migration "
				   "completed: the fabric switched");
}

/**
 * migrate_check() - CHECK_DEVICE_STATE
 * @c:		execution context
 * @done:	if the transfer is still going on, called with the result
 *		once it is over (not if the front-end goes away first)
 *
 * Return: 0 if the last transfer went through, -EINPROGRESS if it is still
 *	   going on (the caller defers its reply until @done), another
 *	   -errno if it failed or never ran
 */
int migrate_check(struct ctx *c, migrate_done_fn done)
{
	switch (mig.phase) {
	case MIG_IDLE:
		return -ENOENT;
	case MIG_SAVING:
	case MIG_LOADING:
	case MIG_WAIT_HELPER:
		mig.check_done = done;
		return -EINPROGRESS;
	case MIG_DONE:
		break;
	}
	if (mig.result)
		return mig.result > 0 ? -ENOENT : mig.result;
	if (mig.save && !linger.migrated)
		migrate_source_completed(c);
	return 0;
}

/**
 * migrate_front_end_gone() - the vhost-user front-end disconnected: a
 *			      transfer in progress can't be confirmed any more
 * @c:		execution context
 *
 * The state pipe belongs to the connection that opened it, and only that
 * connection could ask CHECK_DEVICE_STATE: abandon the transfer (as a
 * source, connections taken away come back when rings start again, see
 * migrate_device_started(); as a target, the partial state is dropped).
 * A target whose LOAD went through but whose guest never ran here (its
 * QEMU refused the device after the state, or was killed) closes what it
 * restored silently: those connections are the source's again.
 */
void migrate_front_end_gone(struct ctx *c)
{
	unsigned n;

	/* The guest will never run here: nothing may reach the peers */
	if ((n = tcp_migrate_target_drop(c)))
		info("Migration: the front-end went away before the guest ran "
		     "here: %u restored connection(s) closed silently", n);
	if (mig.phase == MIG_SAVING || mig.phase == MIG_LOADING ||
	    mig.phase == MIG_WAIT_HELPER) {
		warn("Migration: the front-end went away during the state "
		     "transfer, abandoning it");
		mig.check_done = NULL;
		migrate_finish(c, -ECONNRESET);
	}
	/* Connections held for a SAVE whose outcome we'll never hear (the
	 * front-end asks CHECK_DEVICE_STATE, or starts the rings again):
	 * --one-off would end the process now, and the peers' next segments
	 * would meet no socket and draw RSTs, while the guest may run on the
	 * target. Hold them as the linger does instead; a front-end that
	 * comes back and starts the rings takes them back
	 */
	if (c->one_off && migrate_holding_unconfirmed()) {
		migrate_linger_start(c);
		linger.migrated = true;
		info("Migration: the front-end went away before confirming the "
		     "state: holding %u connection(s) silently for up to %llu "
		     "s, until SIGUSR2", tcp_migrate_held(),
		     (unsigned long long)(linger.end_ms - now_ms() + 999) /
		     1000);
	}
}

/**
 * migrate_source_done() - did we complete a migration as source?
 *
 * Return: true once a SAVE was confirmed by CHECK_DEVICE_STATE
 */
bool migrate_source_done(void)
{
	return linger.migrated;
}

/**
 * migrate_device_started() - the front-end started our rings: as a target,
 *			      the guest runs here now; as a source, the
 *			      migration failed: take our connections back
 * @c:		execution context
 */
void migrate_device_started(struct ctx *c)
{
	unsigned n, reset, waiting;

	/* Once frames can go to the guest (the RX ring started and
	 * enabled): what we tell it before would be lost
	 */
	if (!tap_connected(c))
		return;
	if (tcp_migrate_parked()) {
		/* The announcement first, then the window probes */
		repair_phase_begin();
		n = tcp_migrate_target_release(c, &reset,
					       announce_device_started, false);
		repair_phase_end();
		info("Migration: the guest runs here: %u connection(s) "
		     "resumed, %u reset", n, reset);
		return;
	}
	if (!tcp_migrate_held() && !tcp_migrate_listen_paused())
		return;
	repair_phase_begin();
	n = tcp_migrate_source_resume(c, false, &waiting);
	repair_phase_end();
	info("Migration: failed or cancelled, the guest runs here again: "
	     "%u connection(s) resumed", n);
	if (waiting && !linger.resume_deadline) {
		/* Once: ring starts again don't put it off */
		linger.resume_deadline = now_ms() + MIGRATE_RESUME_WAIT_MS;
		warn("Migration: %u connection(s) can't leave repair mode "
		     "without the passt-repair helper: they wait for one to "
		     "connect to %s for up to %u s, then are reset", waiting,
		     c->repair_path, MIGRATE_RESUME_WAIT_MS / 1000);
	}
	if (linger.one_off_off)
		c->one_off = true;
	if (linger.term) {
		info("Migration: signal %i came before it failed: exiting",
		     linger.term);
		c->quit = true;
	}
	linger.active = false;
	linger.migrated = false;
	linger.one_off_off = false;
	linger.usr2 = false;
	linger.term = 0;
	mig.held = 0;
	mig.save = false;
}

/**
 * migrate_repair_changed() - a repair helper connected, or answered: go on
 *			     with what waits for one
 * @c:		execution context
 */
void migrate_repair_changed(struct ctx *c)
{
	if (mig.phase == MIG_WAIT_HELPER && migrate_helper_ready(c))
		migrate_load_apply(c);
	/* None, or a late one: nothing to ask it until it answers */
	if (!migrate_helper_ready(c))
		return;
	repair_phase_begin();
	tcp_migrate_repair_retry(c);
	tcp_migrate_target_retry(c);
	if (linger.resume_deadline) {
		unsigned n, waiting;

		n = tcp_migrate_source_resume(c, false, &waiting);
		info("Migration: a repair helper connected or answered: %u "
		     "connection(s) held by the failed migration resumed", n);
		if (!waiting)
			linger.resume_deadline = 0;
	}
	repair_phase_end();
}

/**
 * migrate_timer() - deadlines: the helper wait, the linger
 * @c:		execution context
 * @now:	current time, ms
 */
void migrate_timer(struct ctx *c, uint64_t now)
{
	if (mig.phase == MIG_WAIT_HELPER) {
		if (migrate_helper_ready(c)) {
			migrate_load_apply(c);
		} else if (now >= mig.helper_deadline) {
			err("Migration: no passt-repair helper connected in "
			    "%u s: refusing the state", MIGRATE_HELPER_WAIT_MS /
			    1000);
			migrate_finish(c, -ENOTCONN);
		}
	}
	repair_timer(c, now);
	tcp_migrate_poke_timer(c, now);
	tcp_migrate_target_timer(c, now);
	if (linger.resume_deadline && now >= linger.resume_deadline) {
		unsigned held = tcp_migrate_held(), waiting, n;

		repair_phase_begin();
		n = tcp_migrate_source_resume(c, true, &waiting);
		repair_phase_end();
		warn("Migration: no passt-repair helper in %u s: %u "
		     "connection(s) held by the failed migration reset",
		     MIGRATE_RESUME_WAIT_MS / 1000, held - n);
		linger.resume_deadline = 0;
	}
	if (linger.active && now >= linger.end_ms)
		migrate_linger_end(c, linger.term == SIGINT ? "SIGINT" :
				      linger.term ? "SIGTERM" : "timeout");
}

/**
 * migrate_signal() - signals that mean something while we linger
 * @c:		execution context
 * @sig:	signal number
 *
 * Return: true if the signal was taken care of here
 */
bool migrate_signal(struct ctx *c, int sig)
{
	if (sig == SIGUSR2) {
		if (linger.active && linger.migrated) {
			migrate_linger_end(c, "SIGUSR2: the fabric switched");
		} else if (migrate_holding_unconfirmed()) {
			/* Early: the linger ends as soon as it starts */
			linger.usr2 = true;
			info("SIGUSR2: the fabric switched, before the migration "
			     "completed: the linger will end at once");
		} else {
			info("SIGUSR2: the fabric switched, poking %u restored "
			     "connection(s)", tcp_migrate_poke(c));
		}
		return true;
	}
	if ((sig == SIGTERM || sig == SIGINT) && !linger.active &&
	    migrate_holding_unconfirmed()) {
		/* Connections held for a SAVE not confirmed yet: as in a
		 * linger, not at once (their peers would get RSTs)
		 */
		linger.active = true;
		linger.start_ms = now_ms();
		linger.end_ms = linger.start_ms + MIGRATE_LINGER_TERM_MS;
		linger.term = sig;
		info("Migration: signal %i with %u connection(s) held for a "
		     "migration in progress: ending within %u ms", sig,
		     tcp_migrate_held(), MIGRATE_LINGER_TERM_MS);
		return true;
	}
	if ((sig == SIGTERM || sig == SIGINT) && linger.active) {
		uint64_t end = now_ms() + MIGRATE_LINGER_TERM_MS;

		if (end < linger.end_ms) {
			linger.end_ms = end;
			linger.term = sig;
		}
		info("Linger: signal %i, ending within %u ms", sig,
		     (unsigned)(linger.end_ms - now_ms()));
		return true;
	}
	return false;
}
