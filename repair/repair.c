// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * repair.c - TCP_REPAIR on and off, for the sockets a migration moves.
 *
 * Theory of operation
 *
 * Setting or clearing TCP_REPAIR needs CAP_NET_ADMIN; everything else a
 * migration does with a socket in repair mode needs no privilege. So:
 *
 *  - direct: with --repair-path none, at start-up we try TCP_REPAIR on a
 *    scratch socket. If the kernel lets us, we set the option ourselves
 *    from then on, and the sandbox keeps CAP_NET_ADMIN for it.
 *  - helper: otherwise (the normal case: libvirt starts us without
 *    capabilities) we listen, in vhost-user mode, on --repair-path, by
 *    default the front-end socket path plus ".repair", and the privileged
 *    helper passt-repair(1) connects to it. One helper at a time: another
 *    client is accepted and closed at once, and so is one that runs as
 *    neither root nor our own user (SO_PEERCRED, through the sandbox's
 *    checker, given to repair_init()), as it would get our sockets; and
 *    started as root without --runas, one that isn't root: our own user
 *    is nobody then, whom any process may run as. A
 *    request is one sendmsg() of one byte (the command: 1 on, 0 off, -1
 *    off without window probe) with 1 to REPAIR_FDS_MAX sockets attached
 *    (SCM_RIGHTS); the helper applies it to each and echoes the byte.
 *    Anything else back (EOF, a different byte, silence for
 *    REPAIR_ASYNC_TIMEOUT_MS) fails the request, and we drop the helper
 *    connection: it can't be trusted to be in step any more.
 *
 * An echo is not proof, so after each round trip we read TCP_REPAIR back
 * (no privilege needed) and send again those the helper didn't set.
 * Upstream's helper of 2025 (Debian 13, what KubeVirt ships) needs this:
 * it passes its control buffer's length to recvmsg() without resetting
 * it, so after a request with one or two sockets, the kernel truncates
 * every later, larger one to the first two and closes the rest, and the
 * helper echoes all the same. A truncated request loses its tail, and a
 * helper sets the sockets in the order they came (or fails, and closes
 * the connection): so the last socket of a request is read first, and
 * if it has the option, so have the others (one read per request in the
 * downtime, not one per socket); only if it hasn't is each one read. When that happens we send at most
 * as many sockets per request as the helper did set (repair_batch), until
 * the next helper connects.
 *
 * A request runs as a job: its commands (one, or "on" then "off" for a
 * poke) for each socket in turn, one message at a time, each answer
 * checked as above before the next message goes. repair_set() and
 * repair_wait() wait for the whole job (poll()): the migration stage that
 * asks for it can't go on without the answer, and the guest doesn't run
 * here meanwhile (SAVE, LOAD) or its connections are still being handed
 * over. The loop waits, the guest's data path with it, so the wait has a
 * budget: REPAIR_BUDGET_MS for all the requests of one migration phase
 * together (repair_phase_begin(), _end(): SAVE, LOAD, the release, a
 * resume), or for one request outside a phase. A helper that hasn't
 * answered when the budget is spent (stopped, starved, or gone without
 * closing its socket) is "late": we stop waiting, the request fails for
 * its caller, which keeps the sockets it asked for as they are (they may
 * get the command whenever the helper takes the request), and one line
 * says so, naming passt-repair and its socket. The job goes on from the
 * loop: its answer, if it comes, only ends it (nothing is read back, or
 * sent again: the caller may have closed those sockets since), and the
 * loop then tells the migration code (migrate_repair_changed()), which
 * tries again what waits for a helper. Meanwhile any other request fails
 * at once, without waiting; a late helper silent for
 * REPAIR_ASYNC_TIMEOUT_MS is dropped, so that another one may connect.
 * repair_run(), for what is
 * asked while the guest runs (the pokes, migrate_poke.c), waits at most
 * REPAIR_SYNC_MS: a helper that takes longer, or stalls, doesn't freeze
 * the loop, and with it the guest's data path. The job then goes on from
 * the loop (the helper's socket is in it, EPOLLIN), with a deadline of
 * REPAIR_ASYNC_TIMEOUT_MS per answer (repair_timer()), and its caller
 * hears the outcome from a callback. One job at a time: repair_set()
 * first lets one still running end (repair_settle()), from the budget.
 *
 * --repair-path none disables the listener. The listener is only there in
 * vhost-user mode, the only mode that migrates. conf() parses the option
 * into c->repair_mode, repair_init() settles it (enum repair_mode, ctx.h)
 * before the sandbox, which follows it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "loop.h"
#include "repair/repair.h"
#include "rmfile.h"
#include "util.h"

#define REPAIR_BUDGET_MS	1000	/* the loop waits, a phase in all */
#define REPAIR_SYNC_MS		50	/* repair_run() waits that long */
#define REPAIR_ASYNC_TIMEOUT_MS	10000	/* an answer, the loop going on */

static int repair_listen_fd = -1;
static int repair_conn_fd = -1;
static uint32_t repair_gen;
static bool repair_path_ours;
static repair_peer_fn repair_peer_check;	/* the sandbox's checker */
static bool repair_root_only;	/* started as root without --runas */
static unsigned repair_batch = REPAIR_FDS_MAX;	/* see the top of the file */
static bool repair_seen_once;	/* a helper was connected at some point */
/* What repair_wait() returns: the outcome repair_start() knew, or 1 if a
 * job is to be waited for
 */
static int repair_started_rc;

/* The waiting budget of the current phase (see the top of the file) */
static struct {
	bool on;		/* in a phase */
	unsigned left;		/* ms the loop may still wait in it */
	bool warned;		/* the helper was late in it, and we said so */
} repair_phase;

/**
 * struct repair_job - a request being served by the helper
 * @fds:	its sockets (a copy): those of the current command that
 *		have it first, in @done, the rest after
 * @n:		how many
 * @cmds:	commands, applied in turn to every socket
 * @ncmd:	how many (1 or 2)
 * @step:	current command
 * @done:	sockets that have the current command
 * @sent:	sockets in the message whose answer we wait for, 0: none
 * @deadline:	for that answer, ms
 * @timeout:	the time an answer may take, ms
 * @cb:		called with the outcome if the job ends from the loop
 * @active:	a job is running
 * @late:	its caller stopped waiting for it (see the top of the file):
 *		an answer ends it, nothing is read back or sent again
 */
static struct repair_job {
	int *fds;
	unsigned n;
	int cmds[2];
	unsigned ncmd;
	unsigned step;
	unsigned done;
	unsigned sent;
	uint64_t deadline;
	unsigned timeout;
	repair_done_fn cb;
	bool active;
	bool late;
} repair_job;

static void repair_job_end(struct ctx *c, int rc);
static void repair_job_read(struct ctx *c);

/* Can we set TCP_REPAIR ourselves? Try it on a scratch socket */
static bool repair_probe_direct(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	bool ok;

	if (s < 0)
		return false;
	ok = !setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one));
	close(s);
	return ok;
}

/**
 * repair_init() - decide how TCP_REPAIR is set, listen for the helper
 * @c:		execution context; c->repair_mode as conf() parsed it,
 *		c->repair_path defaults to the socket path plus ".repair"
 * @peer_check:	who may connect as a helper: the sandbox's peer
 *		credential checker, isolation_peer_check() (passt.c
 *		passes it, so that repair needs nothing from isolation.c)
 *
 * Before the sandbox, which follows c->repair_mode as this leaves it:
 * REPAIR_MODE_NONE becomes REPAIR_MODE_DIRECT if we hold CAP_NET_ADMIN,
 * and REPAIR_MODE_HELPER becomes REPAIR_MODE_NONE if the default path is
 * too long. A helper socket means no direct TCP_REPAIR: the sandbox drops
 * the capability then.
 *
 * Dies if the helper socket can't be bound: a configuration error.
 */
void repair_init(struct ctx *c, repair_peer_fn peer_check)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	bool direct;
	int fd;

	repair_peer_check = peer_check;
	if (c->mode != MODE_VU)
		return;
	/* Started as root without --runas we become nobody, whom other
	 * processes may be too: only root may be our helper then
	 */
	repair_root_only = !geteuid() && !c->runas;
	direct = repair_probe_direct();
	if (c->repair_mode == REPAIR_MODE_NONE) {
		if (direct) {
			c->repair_mode = REPAIR_MODE_DIRECT;
			info("TCP_REPAIR: set directly (CAP_NET_ADMIN held)");
		}
		return;
	}
	if (c->repair_mode != REPAIR_MODE_HELPER)
		return;
	if (direct)
		info("TCP_REPAIR: through the helper socket, not directly");
	if (!c->repair_path[0]) {
		if (snprintf(c->repair_path, sizeof(c->repair_path),
			     "%s.repair", c->sock_path) >=
		    (int)sizeof(c->repair_path)) {
			warn("%s.repair: path too long, no repair helper "
			     "socket (use --repair-path)", c->sock_path);
			c->repair_path[0] = 0;
			c->repair_mode = REPAIR_MODE_NONE;
			return;
		}
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die_perror("--repair-path: UNIX socket");
	memcpy(a.sun_path, c->repair_path, strlen(c->repair_path) + 1);
	unlink(c->repair_path);	/* a stale one from an earlier instance */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		die_perror("--repair-path: can't bind %s", c->repair_path);
	repair_path_ours = true;
	if (listen(fd, 1))
		die_perror("--repair-path: listen on %s", c->repair_path);
	if (loop_add(c, fd, EPOLLIN, loop_ref(REF_REPAIR_LISTEN, 0, 0)))
		die_perror("--repair-path: epoll_ctl");
	repair_listen_fd = fd;
	info("Repair helper socket at %s", c->repair_path);
}

/**
 * repair_accept() - take a helper from the listening socket
 * @c:		execution context
 *
 * Refuses a second one, and one that runs as neither root nor our own user (it
 * would get our sockets).
 */
static void repair_accept(struct ctx *c)
{
	int fd = accept4(repair_listen_fd, NULL, NULL,
			 SOCK_NONBLOCK | SOCK_CLOEXEC), rc;
	uid_t uid = 0;

	if (fd < 0)
		return;
	if (repair_conn_fd >= 0) {
		info_rl("Another repair helper connected, refusing it");
		close(fd);
		return;
	}
	if ((rc = repair_peer_check(fd, &uid))) {
		if (rc == -EPERM)
			warn_rl("Repair helper refused: it runs as user %u, "
				"neither root nor ours", (unsigned)uid);
		else
			warn_rl("Repair helper refused: can't tell its user: "
				"%s", strerror(-rc));
		close(fd);
		return;
	}
	if (repair_root_only && uid) {
		warn_rl("Repair helper refused: it runs as user %u, not root: "
			"started as root without --runas, we run as nobody, "
			"and so may other processes", (unsigned)uid);
		close(fd);
		return;
	}
	repair_gen = loop_gen_next();
	if (loop_add(c, fd, EPOLLIN | EPOLLRDHUP,
		     loop_ref(REF_REPAIR, 0, repair_gen))) {
		close(fd);
		return;
	}
	repair_conn_fd = fd;
	repair_batch = REPAIR_FDS_MAX;
	info("Repair helper connected");
}

/**
 * repair_close() - let go of the helper (migration over, or it misbehaved)
 * @c:		execution context
 */
void repair_close(struct ctx *c)
{
	if (repair_conn_fd < 0)
		return;
	loop_del(c, repair_conn_fd);
	close(repair_conn_fd);
	repair_conn_fd = -1;
	info("Repair helper disconnected");
	repair_job_end(c, -EIO);
}

/**
 * repair_handler() - events on the listening socket or the helper's
 * @c:		execution context
 * @ref:	REF_REPAIR_LISTEN, or REF_REPAIR with the helper's generation
 * @events:	epoll events
 */
void repair_handler(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	if (ref.type == REF_REPAIR_LISTEN) {
		if (repair_listen_fd >= 0)
			repair_accept(c);
		repair_seen_once |= repair_conn_fd >= 0;
		return;
	}
	if (repair_conn_fd < 0 || ref.gen != repair_gen)
		return;
	/* Answers first: the helper may have sent one, then closed */
	if (events & EPOLLIN)
		repair_job_read(c);
	if (repair_conn_fd >= 0 && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		repair_close(c);
}

/**
 * repair_available() - can repair_set() work now?
 * @c:		execution context
 * @wait_ms:	how long to wait for a helper to connect, if none is
 *
 * Return: true if we set TCP_REPAIR directly or a helper is connected
 */
bool repair_available(struct ctx *c, int wait_ms)
{
	struct pollfd pfd = { .fd = repair_listen_fd, .events = POLLIN };

	if (c->repair_mode == REPAIR_MODE_DIRECT || repair_conn_fd >= 0)
		return true;
	if (repair_listen_fd < 0)
		return false;
	if (wait_ms && poll(&pfd, 1, wait_ms) <= 0)
		return false;
	repair_accept(c);
	repair_seen_once |= repair_conn_fd >= 0;
	return repair_conn_fd >= 0;
}

/**
 * repair_seen() - was a repair helper connected at some point?
 *
 * Return: true if one was (this deployment runs one, as KubeVirt does)
 */
bool repair_seen(void)
{
	return repair_seen_once;
}

/* Does @s have TCP_REPAIR as @cmd left it? (on: 1, off either way: 0) */
static bool repair_is(int s, int cmd)
{
	socklen_t sl = sizeof(int);
	int v;

	if (getsockopt(s, IPPROTO_TCP, TCP_REPAIR, &v, &sl))
		return false;
	return v == (cmd == REPAIR_ON);
}

/*
 * The job is over (@rc: 0, or -errno), or there is none: let go of it, and
 * tell its caller if it was waiting from the loop
 */
static void repair_job_end(struct ctx *c, int rc)
{
	repair_done_fn cb = repair_job.cb;
	bool active = repair_job.active;

	free(repair_job.fds);
	memset(&repair_job, 0, sizeof(repair_job));
	if (active && cb)
		cb(c, rc);
}

/* The job failed: drop the helper, which can't be in step any more */
static void repair_job_fail(struct ctx *c)
{
	if (repair_conn_fd >= 0)
		repair_close(c);	/* ends the job, with -EIO */
	else
		repair_job_end(c, -EIO);
}

/**
 * repair_job_send() - send the job's next message
 * @c:		execution context
 *
 * The current command, for up to repair_batch of the sockets that don't have it
 * yet.
 *
 * Return: 0 or -EIO
 */
static int repair_job_send(struct ctx *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * REPAIR_FDS_MAX)];
		struct cmsghdr align;
	} u;
	unsigned k = MIN(MIN(repair_job.n - repair_job.done, repair_batch),
			 REPAIR_FDS_MAX);
	int8_t b = (int8_t)repair_job.cmds[repair_job.step];
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * k) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * k);
	memcpy(CMSG_DATA(cm), repair_job.fds + repair_job.done,
	       sizeof(int) * k);

	if (sendmsg(repair_conn_fd, &mh, MSG_NOSIGNAL) != 1) {
		warn_perror("Repair helper: send");
		repair_job_fail(c);
		return -EIO;
	}
	repair_job.sent = k;
	repair_job.deadline = now_ms() + repair_job.timeout;
	return 0;
}

/**
 * repair_job_answer() - take the helper's answer to the message in flight
 * @c:		execution context
 * @echo:	the answer
 *
 * Checks what the helper did (see the top of the file), then sends the next
 * message, or ends the job.
 */
static void repair_job_answer(struct ctx *c, int8_t echo)
{
	int cmd = repair_job.cmds[repair_job.step];
	unsigned k = repair_job.sent, i, set = 0;
	int *todo = repair_job.fds + repair_job.done;

	repair_job.sent = 0;
	if (echo != (int8_t)cmd) {
		warn("Repair helper: wrong answer");
		repair_job_fail(c);
		return;
	}
	if (repair_job.late && !repair_job.cb) {
		info("passt-repair on %s answered, late", c->repair_path);
		repair_job_end(c, 0);
		return;
	}
	/* Those it set to the front: all, if the last (see the top) */
	if (repair_is(todo[k - 1], cmd))
		set = k;
	for (i = 0; set < k && i < k; i++) {
		if (repair_is(todo[i], cmd)) {
			int t = todo[set];

			todo[set++] = todo[i];
			todo[i] = t;
		}
	}
	if (!set) {
		warn("Repair helper: echoed the request, but set "
		     "TCP_REPAIR on none of %u socket(s)", k);
		repair_job_fail(c);
		return;
	}
	if (set < k) {
		warn("Repair helper: set TCP_REPAIR on %u of %u "
		     "socket(s) sent at once: sending %u at a time",
		     set, k, set);
		repair_batch = set;
	}
	repair_job.done += set;
	if (repair_job.done == repair_job.n) {
		repair_job.done = 0;
		if (++repair_job.step == repair_job.ncmd) {
			repair_job_end(c, 0);
			return;
		}
	}
	repair_job_send(c);
}

/**
 * repair_job_read() - take what the helper answered so far, not blocking
 * @c:		execution context
 */
static void repair_job_read(struct ctx *c)
{
	while (repair_conn_fd >= 0) {
		int8_t echo;
		ssize_t r = recv(repair_conn_fd, &echo, 1, MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (!r && !repair_job.active) {
			repair_close(c);	/* it went away between jobs */
			return;
		}
		if (r != 1) {
			warn("Repair helper: closed the connection (it "
			     "failed: see its output)");
			repair_job_fail(c);
			return;
		}
		if (!repair_job.active || !repair_job.sent) {
			warn("Repair helper: an answer to no request");
			repair_close(c);
			return;
		}
		repair_job_answer(c, echo);
	}
}

/**
 * repair_job_wait() - wait, the loop too, until the job ends or a deadline
 * @c:		execution context
 * @until:	the deadline, ms
 *
 * Past an answer's deadline, the job fails.
 *
 * Return: true if it ended
 */
static bool repair_job_wait(struct ctx *c, uint64_t until)
{
	while (repair_job.active) {
		struct pollfd pfd = { .fd = repair_conn_fd, .events = POLLIN };
		uint64_t now = now_ms(), end = MIN(until, repair_job.deadline);

		if (now >= repair_job.deadline) {
			warn("Repair helper: no answer in %u ms",
			     repair_job.timeout);
			repair_job_fail(c);
			break;
		}
		if (now >= until)
			return false;
		if (poll(&pfd, 1, (int)(end - now)) < 0 && errno != EINTR) {
			repair_job_fail(c);
			break;
		}
		repair_job_read(c);
	}
	return true;
}

/* Start a job: @ncmd commands for each of @n sockets (helper connected) */
static int repair_job_start(struct ctx *c, const int *fds, unsigned n,
			    const int *cmds, unsigned ncmd, unsigned timeout)
{
	if (!(repair_job.fds = malloc(sizeof(int) * n)))
		return -ENOMEM;
	memcpy(repair_job.fds, fds, sizeof(int) * n);
	repair_job.n = n;
	memcpy(repair_job.cmds, cmds, sizeof(int) * ncmd);
	repair_job.ncmd = ncmd;
	repair_job.timeout = timeout;
	repair_job.active = true;
	return repair_job_send(c);
}

/**
 * repair_phase_begin() - a migration phase starts: the loop may wait for
 *			  the helper REPAIR_BUDGET_MS in all until
 *			  repair_phase_end() (see the top of the file)
 */
void repair_phase_begin(void)
{
	repair_phase.on = true;
	repair_phase.left = REPAIR_BUDGET_MS;
	repair_phase.warned = false;
}

/**
 * repair_phase_end() - the phase is over: each request outside one has its
 *			own budget
 */
void repair_phase_end(void)
{
	repair_phase.on = false;
}

/**
 * repair_job_wait_budget() - wait for the job, from the budget of the
 *			      phase (a budget of its own outside one)
 * @c:		execution context
 *
 * Past the budget, the job is late (see the top of the file) and we say so,
 * once a phase; a late one isn't waited for at all.
 *
 * Return: true if it ended (or there was none)
 */
static bool repair_job_wait_budget(struct ctx *c)
{
	unsigned left = repair_phase.on ? repair_phase.left : REPAIR_BUDGET_MS;
	uint64_t t0 = now_ms(), spent;
	bool ended;

	if (!repair_job.active)
		return true;
	if (repair_job.late)
		return false;
	ended = repair_job_wait(c, t0 + left);
	spent = now_ms() - t0;
	if (repair_phase.on)
		repair_phase.left = spent >= left ? 0 : left - (unsigned)spent;
	if (ended || !repair_job.active)
		return true;
	repair_job.late = true;
	if (!repair_phase.on || !repair_phase.warned) {
		warn("Migration: passt-repair on %s hasn't answered in %u ms "
		     "(stopped, starved, or hung?): not waiting for it any "
		     "more; the connections it has are held until it answers "
		     "(or another one connects)", c->repair_path,
		     REPAIR_BUDGET_MS);
	}
	repair_phase.warned = true;
	return false;
}

/**
 * repair_settle() - let a job running from the loop end now: wait for it,
 *		     from the phase's budget (see the top of the file)
 * @c:		execution context
 *
 * Return: true if no job runs now, false if the helper is late (the job
 *	   goes on from the loop)
 */
bool repair_settle(struct ctx *c)
{
	return repair_job_wait_budget(c);
}

/**
 * repair_pending() - is a socket in the request of a late helper?
 * @fd:		the socket
 *
 * Return: true if so: it may get the command whenever the helper takes it
 */
bool repair_pending(int fd)
{
	unsigned i;

	for (i = 0; repair_job.active && i < repair_job.n; i++) {
		if (repair_job.fds[i] == fd)
			return true;
	}
	return false;
}

/**
 * repair_busy() - is a job running from the loop (repair_run())?
 *
 * Return: true if one is
 */
bool repair_busy(void)
{
	return repair_job.active;
}

/**
 * repair_timer() - a job running from the loop whose answer is late fails
 * @c:		execution context
 * @now:	current time, ms
 */
void repair_timer(struct ctx *c, uint64_t now)
{
	if (!repair_job.active || now < repair_job.deadline)
		return;
	warn("Repair helper: no answer in %u ms", repair_job.timeout);
	repair_job_fail(c);
}

/**
 * repair_direct() - without a helper: each command in turn on every socket
 * @fds:	the sockets
 * @n:		number of entries in @fds
 * @cmds:	TCP_REPAIR values to set
 * @ncmd:	number of entries in @cmds
 *
 * Return: 0 or -errno
 */
static int repair_direct(const int *fds, unsigned n, const int *cmds,
			 unsigned ncmd)
{
	unsigned i, j;

	for (j = 0; j < ncmd; j++) {
		for (i = 0; i < n; i++) {
			if (setsockopt(fds[i], IPPROTO_TCP, TCP_REPAIR,
				       &cmds[j], sizeof(cmds[j]))) {
				int e = errno;

				warn("TCP_REPAIR %i: %s", cmds[j],
				     strerror(e));
				return -e;
			}
		}
	}
	return 0;
}

/**
 * repair_run() - set TCP_REPAIR on sockets to each of one or two commands
 *		  in turn (on, then off: a poke), without holding up the loop
 *		  for long
 * @c:		execution context
 * @fds:	sockets
 * @n:		how many
 * @cmds:	REPAIR_ON, REPAIR_OFF or REPAIR_OFF_NO_WP, each
 * @ncmd:	how many (1 or 2)
 * @cb:		called with the outcome (0 or -errno) if the job goes on from
 *		the loop, never if this returns anything else
 *
 * Waits REPAIR_SYNC_MS at most (see the top of the file).
 *
 * Return: 0 if every socket got every command, -EINPROGRESS if the job goes
 *	   on from the loop (don't touch the sockets until @cb), -EBUSY if
 *	   another one does, another -errno on failure (some sockets may
 *	   have some of the commands)
 */
int repair_run(struct ctx *c, const int *fds, unsigned n, const int *cmds,
	       unsigned ncmd, repair_done_fn cb)
{
	int rc;

	if (!n)
		return 0;
	if (ncmd < 1 || ncmd > 2)
		return -EINVAL;
	if (c->repair_mode == REPAIR_MODE_DIRECT)
		return repair_direct(fds, n, cmds, ncmd);
	if (repair_job.active)
		return -EBUSY;
	if (repair_conn_fd < 0)
		return -ENOTCONN;
	if ((rc = repair_job_start(c, fds, n, cmds, ncmd,
				   REPAIR_ASYNC_TIMEOUT_MS)))
		return rc;
	if (repair_job_wait(c, now_ms() + REPAIR_SYNC_MS))
		return repair_conn_fd >= 0 ? 0 : -EIO;
	repair_job.cb = cb;
	debug("Repair helper: no answer in %i ms, going on meanwhile",
	      REPAIR_SYNC_MS);
	return -EINPROGRESS;
}

/**
 * repair_start() - start setting or clearing TCP_REPAIR on sockets: the
 *		    caller may do other work (not with these sockets) until
 *		    repair_wait(), which it must call before anything else
 *		    asks for TCP_REPAIR
 * @c:		execution context
 * @fds:	sockets
 * @n:		how many
 * @cmd:	REPAIR_ON, REPAIR_OFF or REPAIR_OFF_NO_WP
 *
 * The helper works on the request meanwhile (its first message is sent);
 * with direct TCP_REPAIR, the work is done here.
 *
 * Return: 0, or -errno if it can't start (repair_wait() says it again)
 */
int repair_start(struct ctx *c, const int *fds, unsigned n, int cmd)
{
	int rc;

	if (!n) {
		rc = 0;
	} else if (c->repair_mode == REPAIR_MODE_DIRECT) {
		rc = repair_direct(fds, n, &cmd, 1);
	} else {
		if (!repair_settle(c))
			rc = -EBUSY;	/* the helper is late */
		else if (repair_conn_fd < 0)
			rc = -ENOTCONN;
		else if (!(rc = repair_job_start(c, fds, n, &cmd, 1,
						 REPAIR_ASYNC_TIMEOUT_MS)))
			rc = 1;
	}
	repair_started_rc = rc;
	return rc < 0 ? rc : 0;
}

/**
 * repair_wait() - wait for what repair_start() started, the loop waiting
 *		   too, from the phase's budget (see the top of the file)
 * @c:		execution context
 *
 * Return: 0 if every socket got it, -ETIMEDOUT if the helper is late (any
 *	   socket of the request may get it later: repair_pending()),
 *	   another -errno otherwise (some may have it)
 */
int repair_wait(struct ctx *c)
{
	int rc = repair_started_rc;

	repair_started_rc = 0;
	if (rc != 1)
		return rc;
	if (!repair_job_wait_budget(c))
		return -ETIMEDOUT;
	return repair_conn_fd >= 0 ? 0 : -EIO;
}

/**
 * repair_set() - set or clear TCP_REPAIR on sockets
 * @c:		execution context
 * @fds:	sockets
 * @n:		how many
 * @cmd:	REPAIR_ON, REPAIR_OFF or REPAIR_OFF_NO_WP
 *
 * Return: 0 if every socket got it, -errno otherwise (some may have)
 */
int repair_set(struct ctx *c, const int *fds, unsigned n, int cmd)
{
	int rc = repair_start(c, fds, n, cmd);

	return rc ? rc : repair_wait(c);
}

/* Ask for the next chunk of @rp, if any is left */
static void repair_pipe_next(struct ctx *c, struct repair_pipe *rp)
{
	unsigned k = MIN(rp->chunk, rp->n - rp->started);

	rp->start_rc = 0;
	if (!k)
		return;
	rp->start_rc = repair_start(c, rp->fds + rp->started, k, rp->cmd);
	rp->started += k;
}

/**
 * repair_pipe_start() - set or clear TCP_REPAIR on sockets a chunk at a
 *			 time, each chunk asked for before the caller
 *			 works on the one before (see struct repair_pipe)
 * @c:		execution context
 * @rp:		the pipe, set up here
 * @fds:	the sockets, kept as they are until the last
 *		repair_pipe_ready()
 * @n:		how many
 * @cmd:	REPAIR_ON, REPAIR_OFF or REPAIR_OFF_NO_WP
 * @chunk:	sockets per chunk (at least one)
 */
void repair_pipe_start(struct ctx *c, struct repair_pipe *rp, const int *fds,
		       unsigned n, int cmd, unsigned chunk)
{
	*rp = (struct repair_pipe){ .fds = fds, .n = n, .cmd = cmd,
				    .chunk = MAX(chunk, 1U) };
	repair_pipe_next(c, rp);
}

/**
 * repair_pipe_ready() - wait until the socket at @pos of the pipe has its
 *			 command, asking for the next chunk as its own is
 *			 answered; with @pos at or past the end, wait for all
 * @c:		execution context
 * @rp:		the pipe
 * @pos:	position of the socket in the pipe's list, in order: a
 *		caller goes through the list once, from the start
 *
 * Return: true if the chunk of @pos got the command, false if it failed
 *	   (then some of its sockets may have it, and those of the chunks
 *	   after it won't: there is no helper any more)
 */
bool repair_pipe_ready(struct ctx *c, struct repair_pipe *rp, unsigned pos)
{
	pos = MIN(pos, rp->n ? rp->n - 1 : 0);
	while (rp->done < rp->started && pos >= rp->done) {
		int rc = rp->start_rc ? rp->start_rc : repair_wait(c);

		rp->failed = rc != 0;
		rp->done = rp->started;
		repair_pipe_next(c, rp);
	}
	return !rp->failed;
}

/**
 * repair_cleanup() - close the helper socket, remove the file, at exit
 * @c:		execution context
 */
void repair_cleanup(struct ctx *c)
{
	repair_job.cb = NULL;
	repair_close(c);
	repair_job_end(c, -EIO);
	if (repair_listen_fd >= 0)
		close(repair_listen_fd);
	repair_listen_fd = -1;
	if (repair_path_ours)
		rmfile_unlink(c->repair_path);
	repair_path_ours = false;
}
