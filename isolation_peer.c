// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * isolation_peer.c - the peer credential checker: who a repair helper
 * runs as, once our user namespace hides it.
 *
 * Theory of operation
 *
 * A repair helper gets our TCP sockets: we take one only if it runs as
 * root or as our own user (isolation_peer_check()). SO_PEERCRED reports
 * the peer's user as seen from the caller's user namespace, and ours maps
 * nothing but our own user: root and every other user all look like the
 * overflow uid (65534), which is also nobody, the user we become when
 * started as root. So the question goes to a child forked before the new
 * user namespace, which still sees the real users: it gets the helper's
 * socket (SCM_RIGHTS, one per request on a SOCK_SEQPACKET pair), answers
 * getsockopt(SO_PEERCRED) and closes its copy. It keeps nothing else: no
 * other descriptor, no capability, no_new_privs, not dumpable, and a
 * seccomp filter of six calls, none of which touches a path. It dies with
 * us (PR_SET_PDEATHSIG) or on end of file. A call its filter denies ends
 * it with its line sent to us instead of an answer (iso_peer_sigsys()):
 * we log it (iso_peer_ask()) and refuse the helper.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctx.h"
#include "flow_common.h"
#include "isolation.h"
#include "env.h"
#include "log.h"
#include "rmfile.h"
#include "sigsys.h"
#include "util.h"
#include "isolation_internal.h"

/* The peer credential checker's seccomp profile, by name */
#define ISO_PEER_PROFILE	"peer-credential-checker"
/* How long the peer credential checker may take to start or to answer:
 * milliseconds, normally, but the machine may be busy
 */
#define ISO_PEER_TIMEOUT_MS	5000

/**
 * struct iso_peer - the checker, from our side
 * @fd:		its socket, -1 if none (iso_peer_spawn())
 * @userns:	we're in a user namespace of our own: peers' uids need the
 *		checker
 */
static struct iso_peer {
	int fd;
	bool userns;
} iso_peer = { .fd = -1 };

/* One answer of the checker */
struct iso_peer_reply {
	int32_t err;		/* 0, or the errno of getsockopt() */
	uint32_t uid;
	uint32_t gid;
	int32_t pid;
};

/**
 * iso_peer_serve() - the checker's loop, on descriptor 3
 *
 * Answers each query (a socket passed with SCM_RIGHTS) with the credentials of
 * the socket's peer; never returns.
 */
__attribute__((noreturn))
static void iso_peer_serve(void)
{
#ifdef PASST_TEST_HOOKS
	const char *test = env_get()->test_forbidden_syscall;
#endif

	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iso_peer_reply r = { 0 };
		socklen_t sl = sizeof(struct ucred);
		struct ucred uc = { 0 };
		struct iovec iov;
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		struct cmsghdr *cm;
		int fd = -1;
		char b;
		ssize_t n;

		iov.iov_base = &b;
		iov.iov_len = 1;
		n = recvmsg(3, &mh, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			_exit(0);
#ifdef PASST_TEST_HOOKS
		if (test && !strncmp(test, ISO_TEST_CHECKER,
				     strlen(ISO_TEST_CHECKER)))
			iso_test_call(test + strlen(ISO_TEST_CHECKER), false);
#endif
		cm = CMSG_FIRSTHDR(&mh);
		if (cm && cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		if (fd < 0)
			r.err = EBADMSG;
		else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl))
			r.err = errno;
		r.uid = uc.uid;
		r.gid = uc.gid;
		r.pid = uc.pid;
		if (fd >= 0)
			close(fd);

		iov.iov_base = &r;
		iov.iov_len = sizeof(r);
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
		if (sendmsg(3, &mh, MSG_NOSIGNAL) != sizeof(r))
			_exit(0);
	}
}

/* The checker's line about a call its filter denied (sigsys.c): to the
 * daemon, which logs it (the checker keeps no log of its own)
 */
static void iso_peer_sigsys(const char *line, size_t len)
{
	struct iovec iov = { (void *)line, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n = sendmsg(3, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

	(void)n;
}

/**
 * iso_peer_child() - the checker: sheds everything, then serves on descriptor 3
 * @sk:		the checker's end of the socket pair
 * @parent:	process ID of the daemon, whose death ends the checker
 * @keep_stderr:	keep standard error open (debugging, tests)
 */
__attribute__((noreturn))
static void iso_peer_child(int sk, pid_t parent, bool keep_stderr)
{
	static scmp_filter_ctx f;	/* never released: see below */
	char zero = 0;
	struct iovec iov = { &zero, 1 };
	struct msghdr ready = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct rlimit rl = { 8, 8 };
	size_t i;
	int rc;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != parent)
		_exit(0);
	prctl(PR_SET_NAME, "passt-peercred", 0, 0, 0);
	if (sk != 3 && dup2(sk, 3) != 3)
		_exit(1);
	close_range(4, ~0U, 0);
	close_range(0, keep_stderr ? 1 : 2, 0);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(1);

	for (i = 0; CAP_IS_SUPPORTED(i); i++)
		cap_drop_bound((cap_value_t)i);	/* EPERM without CAP_SETPCAP */
	if (iso_caps_set(NULL, 0) || (cap_reset_ambient() && errno != EINVAL))
		_exit(1);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    (!ISO_SAN && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)))
		_exit(1);

	/* Freeing the context after the load could trim the heap, with
	 * calls not on the list: it stays, reachable from @f
	 */
	if (sigsys_arm("Sandbox", ISO_PEER_PROFILE, iso_peer_sigsys, 1))
		_exit(1);
	f = seccomp_init(sigsys_action());
	if (!f || seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH, sigsys_action()))
		_exit(1);
	rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 0) ||
	     seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 0) ||
	     seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(close), 0) ||
	     seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0) ||
	     seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0) ||
	     seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(getsockopt), 2,
			      SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
			      SCMP_A2(SCMP_CMP_EQ, SO_PEERCRED));
	/* NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): ASan only */
	for (i = 0; ISO_SAN && !rc && i < iso_san_extra_n; i++) {
		int nr = seccomp_syscall_resolve_name(iso_san_extra[i]);

		if (nr >= 0 && nr != SCMP_SYS(getsockopt))
			rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0);
	}
	if (rc || seccomp_load(f))
		_exit(1);

	/* Sandboxed: say so, see iso_peer_spawn() */
	if (sendmsg(3, &ready, MSG_NOSIGNAL) != 1)
		_exit(1);
	iso_peer_serve();
}

/**
 * iso_peer_spawn() - fork the checker, before the user namespace hides who
 *		      a helper is
 * @keep_stderr:	leave it our standard error (foreground)
 */
void iso_peer_spawn(bool keep_stderr)
{
	struct pollfd pfd = { .events = POLLIN };
	pid_t parent = getpid(), pid;
	char line[256];
	ssize_t n = -1;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		die_perror("Sandbox: peer credential checker: socketpair");
	pid = fork();
	if (pid < 0)
		die_perror("Sandbox: peer credential checker: fork");
	if (!pid) {
		close(sv[0]);
		iso_peer_child(sv[1], parent, keep_stderr);
	}
	close(sv[1]);
	iso_peer.fd = sv[0];

	/* Its first message says it's sandboxed: end of file says it isn't */
	pfd.fd = iso_peer.fd;
	if (poll(&pfd, 1, ISO_PEER_TIMEOUT_MS) == 1)
		n = recv(iso_peer.fd, line, sizeof(line), 0);
	if (n != 1 || line[0]) {
		/* Its own filter may have stopped it: its line, not a byte */
		if (n > 1 && line[n - 1] == '\n')
			err("%.*s", (int)n - 1, line);
		close(iso_peer.fd);
		iso_peer.fd = -1;
		iso_fail("the peer credential checker couldn't sandbox itself",
			 0);
		return;
	}
	debug("Peer credential checker: pid %i", (int)pid);
}

/**
 * iso_peer_ask() - ask the checker who the peer of @fd is
 * @fd:		connected UNIX domain socket
 * @r:		the checker's answer, filled in
 *
 * Return: 0 once it answered (the answer may carry an error of its own), -errno
 *	if it didn't
 */
static int iso_peer_ask(int fd, struct iso_peer_reply *r)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct pollfd pfd = { .fd = iso_peer.fd, .events = POLLIN };
	char b = 0;
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	union {
		struct iso_peer_reply r;
		char line[256];
	} a;
	ssize_t n;

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));

	if (sendmsg(iso_peer.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		return -errno;
	if (poll(&pfd, 1, ISO_PEER_TIMEOUT_MS) <= 0)
		return -ETIMEDOUT;
	n = recv(iso_peer.fd, &a, sizeof(a), MSG_DONTWAIT);
	if (n > 0 && n != sizeof(*r) && a.line[n - 1] == '\n') {
		/* Its filter denied a call: its last words (sigsys.c) */
		err("%.*s", (int)n - 1, a.line);
		return -EPIPE;
	}
	if (n != sizeof(*r))
		return n < 0 ? -errno : -EPIPE;
	*r = a.r;
	return 0;
}

/**
 * isolation_peer_check() - may the peer of a UNIX socket drive us?
 * @fd:		connected UNIX domain socket (a repair helper's)
 * @uid:	the peer's user, as seen from the user namespace we started
 *		in, set if it could be told
 *
 * Return: 0 if the peer runs as root or as our own user, -EPERM if as
 *	   another user, another -errno if that can't be told (the caller
 *	   refuses the peer then too)
 */
int isolation_peer_check(int fd, uid_t *uid)
{
	struct iso_peer_reply r = { 0 };
	int rc;

	if (iso_peer.userns) {
		if (iso_peer.fd < 0)
			return -ENOTCONN;
		if ((rc = iso_peer_ask(fd, &r))) {
			/* Out of step or gone: it won't be asked again */
			close(iso_peer.fd);
			iso_peer.fd = -1;
			return rc;
		}
		if (r.err)
			return -r.err;
	} else {
		struct ucred uc;
		socklen_t sl = sizeof(uc);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &sl))
			return -errno;
		r.uid = uc.uid;
	}
	*uid = r.uid;
	return r.uid == 0 || r.uid == iso.uid ? 0 : -EPERM;
}

/**
 * iso_peer_userns() - the user namespace is set up, or not: without one,
 *		       SO_PEERCRED tells the truth and the checker goes
 * @userns:	we're in a user namespace of our own
 */
void iso_peer_userns(bool userns)
{
	iso_peer.userns = userns;
	if (!userns && iso_peer.fd >= 0) {
		close(iso_peer.fd);	/* SO_PEERCRED tells the truth here */
		iso_peer.fd = -1;
	}
}
