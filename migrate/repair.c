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
 *    (SCM_RIGHTS); the helper applies it to each and echoes the byte. Anything else back (EOF, a different
 *    byte, silence for REPAIR_TIMEOUT_MS) fails the request, and we drop
 *    the helper connection: it can't be trusted to be in step any more.
 *
 * An echo is not proof, so after each round trip we read TCP_REPAIR back
 * from every socket (no privilege needed) and send again those the helper
 * didn't set. Upstream's helper of 2025 (Debian 13, what KubeVirt ships)
 * needs this: it passes its control buffer's length to recvmsg() without
 * resetting it, so after a request with one or two sockets, the kernel
 * truncates every later, larger one to the first two and closes the rest,
 * and the helper echoes all the same. When that happens we send at most
 * as many sockets per request as the helper did set (repair_batch), until
 * the next helper connects.
 *
 * The round trip is synchronous (poll() with a deadline): the helper does
 * nothing but a few setsockopt() calls, and the migration stage that asks
 * for it can't go on without the answer anyway.
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
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "loop.h"
#include "migrate/repair.h"
#include "rmfile.h"
#include "util.h"

#define REPAIR_TIMEOUT_MS 2000

static int repair_listen_fd = -1;
static int repair_conn_fd = -1;
static uint32_t repair_gen;
static bool repair_path_ours;
static repair_peer_fn repair_peer_check;	/* the sandbox's checker */
static bool repair_root_only;	/* started as root without --runas */
static unsigned repair_batch = REPAIR_FDS_MAX;	/* see the top of the file */
static bool repair_seen_once;	/* a helper was connected at some point */

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

/* Take a helper from the listening socket; refuse a second one, and one
 * that runs as neither root nor our own user (it would get our sockets)
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
	if (loop_add(c, fd, EPOLLRDHUP, loop_ref(REF_REPAIR, 0, repair_gen))) {
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
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
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

/* One helper round trip for up to REPAIR_FDS_MAX sockets */
static int repair_helper_send(struct ctx *c, const int *fds, unsigned n,
			      int cmd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * REPAIR_FDS_MAX)];
		struct cmsghdr align;
	} u;
	int8_t b = (int8_t)cmd, echo;
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct pollfd pfd = { .fd = repair_conn_fd, .events = POLLIN };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	ssize_t r;

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);

	if (sendmsg(repair_conn_fd, &mh, MSG_NOSIGNAL) != 1) {
		warn_perror("Repair helper: send");
		goto fail;
	}
	if (poll(&pfd, 1, REPAIR_TIMEOUT_MS) <= 0) {
		warn("Repair helper: no answer in %i ms", REPAIR_TIMEOUT_MS);
		goto fail;
	}
	r = recv(repair_conn_fd, &echo, 1, MSG_DONTWAIT);
	if (r != 1 || echo != b) {
		warn("Repair helper: %s", r == 1 ? "wrong answer" :
		     "closed the connection (it failed: see its output)");
		goto fail;
	}
	return 0;
fail:
	repair_close(c);
	return -EIO;
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
 * Through the helper: @n sockets (at most REPAIR_FDS_MAX) in requests of
 * at most repair_batch, until TCP_REPAIR reads back as asked on each
 */
static int repair_helper_set(struct ctx *c, const int *fds, unsigned n,
			     int cmd)
{
	int todo[REPAIR_FDS_MAX];
	unsigned left = n, i;

	memcpy(todo, fds, sizeof(int) * n);
	while (left) {
		unsigned k = MIN(left, repair_batch), done = 0, kept = 0;
		int rc = repair_helper_send(c, todo, k, cmd);

		if (rc)
			return rc;
		/* Keep those it didn't set at the front, then the rest */
		for (i = 0; i < k; i++) {
			if (repair_is(todo[i], cmd))
				done++;
			else
				todo[kept++] = todo[i];
		}
		if (!done) {
			warn("Repair helper: echoed the request, but set "
			     "TCP_REPAIR on none of %u socket(s)", k);
			repair_close(c);
			return -EIO;
		}
		if (done < k) {
			warn("Repair helper: set TCP_REPAIR on %u of %u "
			     "socket(s) sent at once: sending %u at a time",
			     done, k, done);
			repair_batch = done;
		}
		memmove(todo + kept, todo + k, sizeof(int) * (left - k));
		left -= done;
	}
	return 0;
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
	unsigned i;

	if (!n)
		return 0;
	if (c->repair_mode == REPAIR_MODE_DIRECT) {
		for (i = 0; i < n; i++) {
			if (setsockopt(fds[i], IPPROTO_TCP, TCP_REPAIR, &cmd,
				       sizeof(cmd))) {
				int e = errno;

				warn("TCP_REPAIR %i: %s", cmd, strerror(e));
				return -e;
			}
		}
		return 0;
	}
	if (repair_conn_fd < 0)
		return -ENOTCONN;
	for (i = 0; i < n; i += REPAIR_FDS_MAX) {
		unsigned k = n - i < REPAIR_FDS_MAX ? n - i : REPAIR_FDS_MAX;
		int rc = repair_helper_set(c, fds + i, k, cmd);

		if (rc)
			return rc;
	}
	return 0;
}

/**
 * repair_cleanup() - close the helper socket, remove the file, at exit
 * @c:		execution context
 */
void repair_cleanup(struct ctx *c)
{
	repair_close(c);
	if (repair_listen_fd >= 0)
		close(repair_listen_fd);
	repair_listen_fd = -1;
	if (repair_path_ours)
		rmfile_unlink(c->repair_path);
	repair_path_ours = false;
}
