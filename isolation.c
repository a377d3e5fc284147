// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * isolation.c - giving up what we don't need once set-up is done.
 *
 * Theory of operation
 *
 * Everything that needs privileges or the file system happens first:
 * binding the front-end socket and the repair helper socket, the
 * listening sockets of forwarded ports, opening the log and capture
 * files, writing the pid file, connecting to syslog. Then, in this order:
 *
 *  isolation_drop(), once, right after daemonizing:
 *   1. Kept directories. The files we remove at exit (pid file, front-end
 *      socket, repair helper socket) won't be reachable by path once we
 *      sit in an empty root, so rmfile_keep() opens each one's directory
 *      now and notes the file's identity: their owners remove them later
 *      with rmfile_unlink() (rmfile.c says how). The seccomp filter
 *      allows unlinkat() on these directories only. When we start as
 *      root, the files themselves are handed to the user we become (the
 *      pid file with isolation_chown_fd()), so that we may remove them.
 *      The repair helper socket keeps root's group with mode 0660:
 *      passt-repair connects as root but without CAP_DAC_OVERRIDE.
 *   2. Limits: no core dumps; open files bounded by what is open now
 *      (forwarded listeners included, see fwd_listen_init()) plus one
 *      per flow (FLOW_MAX) plus a small spare for the front-end's own.
 *   3. Identity: started as root, we become -e/--runas, or nobody
 *      (65534) without it; root as the target is refused, and so is a
 *      switch that could be undone. PR_SET_KEEPCAPS carries the few
 *      capabilities the next steps need across setuid().
 *   4. The peer credential checker, with a repair helper socket only
 *      (iso_peer_spawn()): a child that stays in the user namespace we
 *      started in, so that isolation_peer_check() can tell root from
 *      other users when a helper connects (step 5 hides them all behind
 *      one overflow uid).
 *   5. Namespaces: a new user namespace (unprivileged, where the kernel
 *      allows it), then new mount, IPC and UTS namespaces. The user
 *      namespace is skipped when we keep CAP_NET_ADMIN for direct
 *      TCP_REPAIR: it would take that capability away from our network
 *      namespace. Without a user namespace, the kept CAP_SYS_ADMIN
 *      (root only) creates the others.
 *   6. Root: an empty, read-only tmpfs (4 KiB, mode 0555) becomes /
 *      with pivot_root(), the old root is detached.
 *   7. Capabilities (libcap): the bounding set is emptied and every set
 *      (effective, permitted, inheritable, ambient) is cleared. The one
 *      exception is CAP_NET_ADMIN with --repair-path none while we hold
 *      it at start (direct TCP_REPAIR): then it stays in the effective,
 *      permitted and bounding sets, and the log says so. With a helper
 *      socket, we clear it and use the helper. conf() and repair_init()
 *      decided which, before we start (c->repair_mode).
 *   8. no_new_privs, not dumpable.
 *
 *  isolation_seccomp(), once the signal and timer descriptors exist: a
 *  libseccomp allow-list, one profile per mode (stream, vhost-user,
 *  vhost-user with migration through a repair helper socket, vhost-user
 *  with direct TCP_REPAIR), built from the calls the code makes after
 *  this point, as each C library makes them: found by building with
 *  -DISOLATION_SECCOMP_LOG, which turns the default action into
 *  SCMP_ACT_LOG, running the test suites with the daemon built and run
 *  in Debian 12, 13 and sid (glibc 2.36, 2.41, 2.43: make roots) and
 *  reading the kernel's audit lines ("type=1326 ... syscall=N"). Where
 *  libcs differ (fstat() as newfstatat or fstat), each one's call has its
 *  row. Anything else is not made: the process writes one line naming
 *  the call and the profile, and exits (sigsys.c: SECCOMP_RET_TRAP, a
 *  SIGSYS handler that logs and _exit()s; fail-closed as the kill it
 *  replaces). The table below says why each entry is there. The direct
 *  TCP_REPAIR profile keeps CAP_NET_ADMIN, which makes many socket
 *  options privileged: there, setsockopt() is allowed only for the
 *  levels and options the daemon sets, one row each.
 *
 * Fail closed: if any of steps 5 to 8 or the seccomp filter can't be set
 * up, the daemon exits with one line naming what failed ("Sandbox: ..."),
 * as upstream passt does. Where that can't work (no user namespaces for
 * unprivileged users, a container that refuses seccomp() or mount()),
 * --sandbox-best-effort makes each failure a warning instead: the daemon
 * says so at start, names each part it goes without, and lists them once
 * the filter is in place ("Sandbox incomplete"). Never: run as root.
 *
 * Builds with -DPASST_TEST_HOOKS (make's test flavour, never the plain
 * build) honour PASST_TEST_FORBIDDEN_SYSCALL=NAME[:ARG...]: right after
 * the filter is loaded, that call is made, with the numeric arguments
 * given (0 for the others), so a test can watch the filter end us, or
 * not, for a call or for some of its arguments; "checker/NAME" makes
 * the peer credential checker make it, at its first request.
 *
 * Sanitizer builds (ASan's leak checker stops the process with ptrace()
 * and reads /proc at exit) stay dumpable, see /proc through a bind mount
 * in the empty root, and allow what the sanitizer runtime needs: test
 * builds only, never a release.
 *
 * Note: some kernels refuse SO_ATTACH_FILTER (the drop filter that holds
 * connections during a migration, tcp/migrate.c) without CAP_NET_ADMIN.
 * There, a daemon with a repair helper can't hold TCP connections; direct
 * TCP_REPAIR (--repair-path none, CAP_NET_ADMIN kept) can.
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

#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND	78
#endif
#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT 73
#endif

#if defined(__SANITIZE_ADDRESS__)
#define ISO_SAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ISO_SAN 1
#endif
#endif
#ifndef ISO_SAN
#define ISO_SAN 0
#endif

#ifndef TCP_REPAIR_WINDOW
#define TCP_REPAIR_WINDOW	29
#endif
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS		44	/* Linux 6.15 */
#endif
#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK		72	/* Linux 5.14 */
#endif
#ifndef SO_PEEK_OFF
#define SO_PEEK_OFF		42
#endif

/* Exit status after a denied system call (sigsys.c): what a shell shows
 * for a process that SIGSYS killed, as SCMP_ACT_KILL_PROCESS did
 */
#define ISO_SIGSYS_STATUS	(128 + SIGSYS)
/* The user we become when started as root without --runas */
#define ISO_NOBODY	65534
/* Descriptors beyond the ones open now and one per flow */
#define ISO_FD_SPARE	128
/* PASST_TEST_FORBIDDEN_SYSCALL for the peer credential checker */
#define ISO_TEST_CHECKER	"checker/"
/* The peer credential checker's seccomp profile, by name */
#define ISO_PEER_PROFILE	"peer-credential-checker"
/* How long the peer credential checker may take to start or to answer:
 * milliseconds, normally, but the machine may be busy
 */
#define ISO_PEER_TIMEOUT_MS	5000

/* Set by isolation_check(): started as root, who we'll become */
static bool iso_root;
static uid_t iso_uid;
static gid_t iso_gid;

static enum iso_profile iso_profile_sel = ISO_PROFILE_STREAM;
static bool iso_keep_net_admin;

/* --sandbox-best-effort, and what the sandbox went without because of it */
static bool iso_best_effort;
static char iso_missing[256];

/* The peer credential checker (iso_peer_spawn()), its socket, if any */
static int iso_peer_fd = -1;
/* We're in a user namespace of our own: peers' uids need the checker */
static bool iso_peer_userns;

/*
 * A part of the sandbox can't be set up (@what, a phrase, and the error if
 * not 0): exit, naming it, or with --sandbox-best-effort say so and go on
 */
static void iso_fail(const char *what, int err)
{
	size_t n = strlen(iso_missing);

	if (!iso_best_effort)
		die("Sandbox: %s%s%s", what, err ? ": " : "",
		    err ? strerror(err) : "");
	warn("Sandbox: %s%s%s; going on without it (--sandbox-best-effort)",
	     what, err ? ": " : "", err ? strerror(err) : "");
	snprintf(iso_missing + n, sizeof(iso_missing) - n, "%s%s",
		 n ? "; " : "", what);
}

/* Highest open descriptor, from /proc/self/fd; -1 if it can't be read */
static int iso_max_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int max = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (fd > max)
			max = fd;
	}
	closedir(d);
	return max;
}

/* No core dumps; open files matched to what we have plus the flow table */
static void iso_rlimits(void)
{
	struct rlimit rl = { 0, 0 };
	rlim_t want;
	int max;

	if (setrlimit(RLIMIT_CORE, &rl))
		iso_fail("can't disable core dumps", errno);

	max = iso_max_fd();
	if (max < 0 || getrlimit(RLIMIT_NOFILE, &rl))
		return;
	want = (rlim_t)max + 1 + FLOW_MAX + ISO_FD_SPARE;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
		want = rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		warn_perror("RLIMIT_NOFILE");
	else
		debug("Open files limited to %llu", (unsigned long long)want);
}

/* Make the capabilities in @caps (n of them) effective and permitted, only */
static int iso_caps_set(const cap_value_t *caps, int n)
{
	cap_t cap = cap_init();
	int rc = 0;

	if (!cap)
		return -errno;
	if (n && (cap_set_flag(cap, CAP_EFFECTIVE, n, caps, CAP_SET) ||
		  cap_set_flag(cap, CAP_PERMITTED, n, caps, CAP_SET)))
		rc = -errno;
	if (!rc && cap_set_proc(cap))
		rc = -errno;
	cap_free(cap);
	return rc;
}

/* Write @s to /proc/self/@file; 0 or -errno */
static int iso_proc_write(const char *file, const char *s)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* New user namespace, our own uid and gid mapped to themselves; false if
 * we go on without it (--sandbox-best-effort)
 */
static bool iso_userns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int rc;

	if (unshare(CLONE_NEWUSER)) {
		iso_fail("can't create a user namespace", errno);
		return false;
	}
	/* /proc/self is root's while we aren't dumpable: briefly we are */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if ((rc = iso_proc_write("uid_map", map)))
		iso_fail("user namespace: can't write uid_map", -rc);
	if ((rc = iso_proc_write("setgroups", "deny")))
		iso_fail("user namespace: can't write setgroups", -rc);
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	if ((rc = iso_proc_write("gid_map", map)))
		iso_fail("user namespace: can't write gid_map", -rc);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return true;
}

/* Mount, IPC, UTS namespaces (each alone if together fails); mount ns ok? */
static bool iso_other_ns(void)
{
	static const struct {
		int flag;
		const char *what;
	} ns[] = {
		{ CLONE_NEWNS, "can't create a mount namespace" },
		{ CLONE_NEWIPC, "can't create an IPC namespace" },
		{ CLONE_NEWUTS, "can't create a UTS namespace" },
	};
	bool mnt = true;
	unsigned i;

	if (!unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS))
		return true;
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		if (unshare(ns[i].flag)) {
			iso_fail(ns[i].what, errno);
			if (ns[i].flag == CLONE_NEWNS)
				mnt = false;
		}
	}
	return mnt;
}

/* Empty read-only tmpfs as /, old root detached; 0 or -errno */
static int iso_pivot(void)
{
	unsigned long fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;

	if (mount("", "/", "", MS_PRIVATE | MS_REC, NULL))
		return -errno;
	if (mount("tmpfs", "/tmp", "tmpfs", fl,
		  ISO_SAN ? "size=4k,mode=0755" : "size=4k,mode=0555"))
		return -errno;
	if (ISO_SAN) {
		/* The leak checker reads /proc/self at exit: test builds */
		if (mkdir("/tmp/proc", 0555) ||
		    mount("/proc", "/tmp/proc", NULL, MS_BIND | MS_REC, NULL))
			warn_perror("sanitizer build: no /proc in the sandbox");
	}
	if (chdir("/tmp"))
		return -errno;
	if (syscall(SYS_pivot_root, ".", "."))
		return -errno;
	if (umount2(".", MNT_DETACH))
		return -errno;
	if (chdir("/"))
		return -errno;
	if (mount("", "/", "", MS_REMOUNT | MS_RDONLY | fl, NULL))
		return -errno;
	return 0;
}

/* Empty the bounding set, but for CAP_NET_ADMIN if we keep it */
static int iso_bounding(void)
{
	cap_value_t v;
	int rc = 0;

	for (v = 0; CAP_IS_SUPPORTED(v); v++) {
		if (v == CAP_NET_ADMIN && iso_keep_net_admin)
			continue;
		if (cap_drop_bound(v) && !rc)
			rc = -errno;
	}
	return rc;
}

/* Test builds' sanitizer runtime, on top of any profile */
static const char *const iso_san_extra[] = {
	"mmap", "munmap", "madvise", "mprotect", "brk", "mremap",
	"sigaltstack", "rt_sigaction", "rt_sigprocmask", "getpid", "gettid",
	"clone", "clone3", "ptrace", "wait4", "prctl", "openat", "open",
	"readlink", "getdents64", "fstat", "newfstatat", "sched_yield",
	"futex", "lseek", "pread64", "exit", "tgkill", "kill", "sched_getaffinity",
	"getrlimit", "prlimit64", "uname", "statfs", "fcntl", "ioctl",
	"rt_sigreturn", "pipe2", "process_vm_readv", "dup", "waitid",
	"getppid", "getdents", "readlinkat", "faccessat", "access", "stat",
	"lstat", "newfstatat", "nanosleep", "clock_nanosleep", "write",
};

/* Is @name on the sanitizer's own list? (its rows lose their arguments) */
static bool iso_san_has(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(iso_san_extra); i++) {
		if (!strcmp(iso_san_extra[i], name))
			return true;
	}
	return false;
}

#ifdef PASST_TEST_HOOKS
/* Make the call PASST_TEST_FORBIDDEN_SYSCALL names (NAME[:ARG...]), now;
 * @say: log before and after (not in the checker: it has no log)
 */
static void iso_test_call(const char *spec, bool say)
{
	long long a[6] = { 0 };
	char name[64], *p;
	int nr, n = 0;

	snprintf(name, sizeof(name), "%s", spec);
	p = strchr(name, ':');
	if (p)
		*p++ = '\0';
	while (p && n < 6) {
		a[n++] = strtoll(p, &p, 0);
		p = *p == ':' ? p + 1 : NULL;
	}
	nr = seccomp_syscall_resolve_name(name);
	if (say)
		info("Test hook: calling %s (%i)", spec, nr);
	errno = 0;
	syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (say)
		err("Test hook: %s returned (%s)", spec, strerror(errno));
}

/* The daemon's hook, right after its filter: the value, unless it starts
 * with "checker/" (then the peer credential checker makes the call, at
 * its first request: iso_peer_serve())
 */
static void iso_test_hook(void)
{
	const char *s = env_get()->test_forbidden_syscall;

	if (s && strncmp(s, ISO_TEST_CHECKER, strlen(ISO_TEST_CHECKER)))
		iso_test_call(s, true);
}
#endif

/*
 * The peer credential checker
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

/* One answer of the checker */
struct iso_peer_reply {
	int32_t err;		/* 0, or the errno of getsockopt() */
	uint32_t uid;
	uint32_t gid;
	int32_t pid;
};

/* The checker's loop, on descriptor 3 */
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

/* The checker: sheds everything, then serves on descriptor 3 */
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
	for (i = 0; ISO_SAN && !rc && i < ARRAY_SIZE(iso_san_extra); i++) {
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

/* Fork the checker; @keep_stderr: leave it our standard error (foreground) */
static void iso_peer_spawn(bool keep_stderr)
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
	iso_peer_fd = sv[0];

	/* Its first message says it's sandboxed: end of file says it isn't */
	pfd.fd = iso_peer_fd;
	if (poll(&pfd, 1, ISO_PEER_TIMEOUT_MS) == 1)
		n = recv(iso_peer_fd, line, sizeof(line), 0);
	if (n != 1 || line[0]) {
		/* Its own filter may have stopped it: its line, not a byte */
		if (n > 1 && line[n - 1] == '\n')
			err("%.*s", (int)n - 1, line);
		close(iso_peer_fd);
		iso_peer_fd = -1;
		iso_fail("the peer credential checker couldn't sandbox itself",
			 0);
		return;
	}
	debug("Peer credential checker: pid %i", (int)pid);
}

/* Ask the checker who the peer of @fd is: 0 once it answered (the answer
 * may carry an error of its own), -errno if it didn't
 */
static int iso_peer_ask(int fd, struct iso_peer_reply *r)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct pollfd pfd = { .fd = iso_peer_fd, .events = POLLIN };
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

	if (sendmsg(iso_peer_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
		return -errno;
	if (poll(&pfd, 1, ISO_PEER_TIMEOUT_MS) <= 0)
		return -ETIMEDOUT;
	n = recv(iso_peer_fd, &a, sizeof(a), MSG_DONTWAIT);
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

	if (iso_peer_userns) {
		if (iso_peer_fd < 0)
			return -ENOTCONN;
		if ((rc = iso_peer_ask(fd, &r))) {
			/* Out of step or gone: it won't be asked again */
			close(iso_peer_fd);
			iso_peer_fd = -1;
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
	return r.uid == 0 || r.uid == iso_uid ? 0 : -EPERM;
}

/**
 * isolation_check() - refuse, before anything is created, to stay root
 * @c:		execution context
 *
 * With --sandbox-best-effort, also says (a warning) that the sandbox may
 * end up incomplete.
 */
void isolation_check(const struct ctx *c)
{
	if (c->runas && c->runas_uid == 0)
		die("--runas: refusing to run as root");
	iso_root = geteuid() == 0;
	iso_uid = c->runas ? c->runas_uid : iso_root ? ISO_NOBODY : geteuid();
	iso_gid = c->runas ? c->runas_gid : iso_root ? ISO_NOBODY : getegid();
	iso_best_effort = c->sandbox_best_effort;
	if (iso_best_effort)
		warn("--sandbox-best-effort: parts of the sandbox that can't "
		     "be set up are skipped, not fatal: this process may run "
		     "with more access than it needs");
}

/**
 * isolation_chown_fd() - hand a file we create to the user we'll become
 * @fd:		open file (the pid file, written before the sandbox)
 *
 * Only when started as root: so that the daemon can remove it at exit
 * from a sticky directory.
 */
void isolation_chown_fd(int fd)
{
	if (iso_root && fchown(fd, iso_uid, iso_gid))
		warn_perror("can't hand the pid file to user %u",
			    (unsigned)iso_uid);
}

/**
 * isolation_drop() - identity, limits, namespaces, empty root, capabilities
 * @c:		execution context; c->repair_mode, as repair_init() left it,
 *		says whether CAP_NET_ADMIN stays (direct TCP_REPAIR) and
 *		whether a repair helper socket needs the peer checker
 *
 * Dies if we would go on as root, and if a part of the sandbox can't be
 * set up, unless --sandbox-best-effort (then it says so and goes on).
 */
void isolation_drop(struct ctx *c)
{
	const cap_value_t need[] = { CAP_SYS_ADMIN, CAP_SETPCAP,
				     CAP_NET_ADMIN };
	bool root = geteuid() == 0, userns = false, helper, mnt;
	uid_t uid = root ? ISO_NOBODY : geteuid();
	gid_t gid = root ? ISO_NOBODY : getegid();
	const cap_value_t *keep = NULL;
	int rc, nkeep = 0;

	if (c->runas) {
		uid = c->runas_uid;
		gid = c->runas_gid;
	}

	/* Direct TCP_REPAIR only without a helper socket, as decided */
	iso_keep_net_admin = c->repair_mode == REPAIR_MODE_DIRECT;
	helper = c->repair_mode == REPAIR_MODE_HELPER;
	if (c->mode == MODE_STREAM)
		iso_profile_sel = ISO_PROFILE_STREAM;
	else if (iso_keep_net_admin)
		iso_profile_sel = ISO_PROFILE_VU_DIRECT;
	else if (helper)
		iso_profile_sel = ISO_PROFILE_VU_MIGRATE;
	else
		iso_profile_sel = ISO_PROFILE_VU;

	/* 1. what we remove at exit */
	if (c->pid_file[0])
		rmfile_keep(c->pid_file, root, uid, gid, 0);
	if (c->sock_path[0] && c->fd_listen >= 0)
		rmfile_keep(c->sock_path, root, uid, gid, 0);
	/* The helper connects as root, without CAP_DAC_OVERRIDE: root's
	 * group may write to it, nobody else
	 */
	if (helper)
		rmfile_keep(c->repair_path, root, uid, getegid(), 0660);
	/* Time zone data and syslog: nothing to open later */
	tzset();

	/* 2. */
	iso_rlimits();

	/* 3. */
	if (root || geteuid() != uid || getegid() != gid) {
		if (root && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
			die_perror("PR_SET_KEEPCAPS");
		if (setgroups(0, NULL) && errno != EPERM)
			die_perror("can't clear supplementary groups");
		if (setgid(gid))
			die_perror("can't change to group %u", (unsigned)gid);
		if (setuid(uid))
			die_perror("can't change to user %u", (unsigned)uid);
		if (setuid(0) == 0 || geteuid() == 0)
			die("could regain root after dropping it");
		prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
		/* What the next steps need, from the permitted set kept */
		if (root && (rc = iso_caps_set(need, iso_keep_net_admin ? 3 : 2)))
			iso_fail("can't keep the capabilities the set-up needs",
				 -rc);
		info("Running as user %u, group %u", (unsigned)uid,
		     (unsigned)gid);
	}
	if (geteuid() == 0)
		die("refusing to run as root");

	/* 4. before the user namespace hides who a helper is */
	if (helper)
		iso_peer_spawn(c->foreground);

	/* 5. */
	if (iso_keep_net_admin)
		info("No user namespace: it would take CAP_NET_ADMIN away");
	else
		userns = iso_userns();
	iso_peer_userns = userns;
	if (!userns && iso_peer_fd >= 0) {
		close(iso_peer_fd);	/* SO_PEERCRED tells the truth here */
		iso_peer_fd = -1;
	}
	mnt = iso_other_ns();

	/* 6. */
	if (mnt && (rc = iso_pivot()))
		iso_fail("can't pivot into an empty root", -rc);
	else if (!mnt)
		iso_fail("no empty root without a mount namespace", 0);

	/* 7. */
	if ((rc = iso_bounding()))
		iso_fail("can't empty the capability bounding set", -rc);
	if (iso_keep_net_admin) {
		keep = &need[2];
		nkeep = 1;
	}
	if ((rc = iso_caps_set(keep, nkeep)))
		iso_fail("can't drop capabilities", -rc);
	if (cap_reset_ambient() && errno != EINVAL)
		iso_fail("can't clear ambient capabilities", errno);
	if (iso_keep_net_admin)
		info("Keeping CAP_NET_ADMIN: direct TCP_REPAIR (--repair-path "
		     "none)");

	/* 8. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		iso_fail("can't set no_new_privs", errno);
	if (!ISO_SAN && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		iso_fail("can't make the process not dumpable", errno);
	rmfile_seal();
}

/*
 * The allow-lists. One row per syscall (or per allowed argument values of
 * one); @prof is the set of profiles that allow it; @cmp[] restrict up to
 * two arguments: for argument number @arg, (value & @mask) == @val, or,
 * with ISO_DIRFD, argument 0 is one of the directories isolation_drop()
 * kept (one rule per directory).
 */
#define P_ST	(1U << ISO_PROFILE_STREAM)
#define P_VU	(1U << ISO_PROFILE_VU)
#define P_MIG	(1U << ISO_PROFILE_VU_MIGRATE)
#define P_DIR	(1U << ISO_PROFILE_VU_DIRECT)
#define P_ALL	(P_ST | P_VU | P_MIG | P_DIR)
#define P_VUS	(P_VU | P_MIG | P_DIR)
#define P_MIGS	(P_MIG | P_DIR)

#define ISO_NOARG	-1
#define ISO_DIRFD	-2

struct iso_rule {
	const char *name;
	unsigned prof;
	struct {
		int arg;
		uint64_t mask, val;
	} cmp[2];
	const char *why;
	bool alt;	/* another C library's call for what a row above
			 * allows: not counted again (isolation_profile_count())
			 */
};

#define NOARG_	{ ISO_NOARG, 0, 0 }
#define NOARG	{ NOARG_, NOARG_ }
#define ARG(n, v)	{ { (n), ~0ULL, (v) }, NOARG_ }
#define ARGM(n, m, v)	{ { (n), (m), (v) }, NOARG_ }
#define DIRFD(n, v)	{ { ISO_DIRFD, 0, 0 }, { (n), ~0ULL, (v) } }
#define SOCKOPT(l, o)	{ { 1, ~0ULL, (l) }, { 2, ~0ULL, (o) } }

static const struct iso_rule iso_rules[] = {
	/* The event loop */
#ifdef __NR_epoll_wait
	{ "epoll_wait", P_ALL, NOARG, "loop_wait()" },
#else
	{ "epoll_pwait", P_ALL, NOARG, "loop_wait(), as libc makes it here" },
#endif
	{ "epoll_pwait2", P_ALL, NOARG,
	  "loop_wait() with a deadline: input coalescing's polls" },
	{ "epoll_ctl", P_ALL, NOARG, "loop_add/mod/del() for every socket" },
	{ "read", P_ALL, NOARG,
	  "signalfd, timerfd, migration pipe, the front-end's socket" },
	{ "write", P_ALL, NOARG,
	  "log lines, vhost-user call eventfds, migration pipe" },
	{ "writev", P_ALL, NOARG, "pcap records, one writev() each" },
	{ "close", P_ALL, NOARG, "flows, front-end connections, eventfds" },
	{ "exit_group", P_ALL, NOARG, "exit()" },
	{ "io_uring_enter", P_ALL, NOARG,
	  "uring_flush(): the round's socket discards and call eventfd "
	  "writes; the ring itself only takes recv and write, and send and "
	  "epoll_wait where the loop waits in it (uring.c)" },
	{ "clock_gettime", P_ALL, NOARG,
	  "now_ms(), log and pcap time stamps, where the vDSO can't" },

	/* rmfile_unlink(): in the kept directories only, files only */
	{ "unlinkat", P_ALL, DIRFD(2, 0),
	  "pid, socket files at exit, in the kept directories" },
#ifdef __NR_newfstatat
	{ "newfstatat", P_ST, DIRFD(3, AT_SYMLINK_NOFOLLOW),
	  "rmfile_unlink(): is it still our file? (vhost-user: below)" },
#else
	{ "fstatat64", P_ST, DIRFD(3, AT_SYMLINK_NOFOLLOW),
	  "rmfile_unlink(): is it still our file? (vhost-user: below)" },
#endif

	/* Sockets for flows: TCP, UDP, ICMP echo; the front-end socket */
	{ "socket", P_ALL, ARG(0, AF_INET), "flow sockets, IPv4" },
	{ "socket", P_ALL, ARG(0, AF_INET6), "flow sockets, IPv6" },
	{ "bind", P_ALL, NOARG, "-o/--outbound source, UDP and ICMP flows" },
	{ "connect", P_ALL, NOARG, "TCP and UDP flows to the host side" },
	{ "accept4", P_ALL, NOARG,
	  "forwarded TCP ports, front-end socket, repair helper socket" },
	{ "setsockopt", P_ST | P_VU | P_MIG, NOARG,
	  "SO_BINDTODEVICE, IPV6_V6ONLY, buffer sizes, TCP options: without "
	  "capabilities, none of them is privileged" },
	{ "getsockopt", P_ALL, NOARG,
	  "SO_ERROR, TCP_INFO; after the helper: TCP_REPAIR, SO_GET_FILTER" },
	{ "shutdown", P_ALL, NOARG, "half-closing TCP (guest FIN)" },
	{ "recvmsg", P_ALL, NOARG,
	  "TCP data (peek), front-end frames, vhost-user messages + fds" },
	{ "sendmsg", P_ALL, NOARG,
	  "TCP data, stream frames, vhost-user replies, repair requests" },
	{ "recvfrom", P_ALL, NOARG, "recv(): ICMP replies, front-end, helper" },
	{ "sendto", P_ALL, NOARG,
	  "UDP and ICMP to the host, syslog (log.c), send() of the announcement "
	  "after a migration (migrate/announce.c: a packet socket opened "
	  "before the sandbox, nothing else is needed for it)" },
	{ "recvmmsg", P_ALL, NOARG, "UDP datagrams in batches" },
	{ "ioctl", P_ALL, ARG(1, SIOCINQ),
	  "SIOCINQ: TCP bytes not read yet; migration's receive queue" },

	/* With CAP_NET_ADMIN kept (direct TCP_REPAIR), socket options are
	 * privileged (SO_MARK, IP_TRANSPARENT, SO_RCVBUFFORCE...): only
	 * those the daemon sets, by level and name
	 */
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_REUSEADDR),
	  "fwd/fwd.c: listening sockets reopened after a migration" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_BINDTODEVICE),
	  "fwd/fwd.c, icmp/icmp.c: -i/--outbound-if*" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_SNDBUF),
	  "tcp/migrate_dst.c: the restored socket's send buffer" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_BUF_LOCK),
	  "tcp/migrate_dst.c: ...unlocked again for autotuning" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_RCVBUF),
	  "receive buffers (stream/stream.c: not in this mode)" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_LINGER),
	  "tcp/tcp.c: reset instead of FIN" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_OOBINLINE),
	  "tcp/conn.c, tcp/migrate_src.c: urgent data kept in the stream" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_PEEK_OFF),
	  "tcp/conn.c, tcp/to_guest.c, tcp/migrate_src.c: peeking at "
	  "unacknowledged data" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_ATTACH_FILTER),
	  "tcp/migrate.c: the drop-all filter of a held connection" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_DETACH_FILTER),
	  "tcp/migrate.c: ...taken off when it resumes" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IPV6, IPV6_V6ONLY),
	  "fwd/fwd.c: IPv6 listening sockets" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IP, IP_FREEBIND),
	  "fwd/fwd.c: --freebind, listening sockets" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IPV6, IPV6_FREEBIND),
	  "fwd/fwd.c: --freebind, IPv6 listening sockets" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_NODELAY),
	  "tcp/conn.c: every connection" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_REPAIR),
	  "migrate/repair.c: direct TCP_REPAIR, what CAP_NET_ADMIN is for" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_REPAIR_QUEUE),
	  "tcp/migrate.c: dump and restore of the queues" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_QUEUE_SEQ),
	  "tcp/migrate_dst.c: restored sequence numbers" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_REPAIR_OPTIONS),
	  "tcp/migrate_dst.c: restored MSS, window scale, SACK, timestamps" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_TIMESTAMP),
	  "tcp/migrate_dst.c: restored timestamp clock" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_REPAIR_WINDOW),
	  "tcp/migrate_src.c, tcp/migrate_dst.c: restored windows" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_MAXSEG),
	  "tcp/migrate_dst.c: a restored socket's MSS before connect()" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_RTO_MAX_MS),
	  "tcp/migrate.c: a restored socket's timeouts while it is poked" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IP, IP_MINTTL),
	  "tcp/migrate.c: a held or parked socket deaf to the peer" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IPV6, IPV6_MINHOPCOUNT),
	  "tcp/migrate.c: ...the same for IPv6" },

	/* The stream front-end's output, by reference (stream/stream_out.c) */
	{ "sendfile", P_ST, NOARG,
	  "frames from the output buffer's memfd into the socket" },
	{ "ioctl", P_ST, ARG(1, SIOCOUTQ),
	  "SIOCOUTQ: what the front-end hasn't read of the output buffer" },
	{ "fallocate", P_ST, NOARG,
	  "new pages for the output buffer when a front-end leaves" },

	/* vhost-user: guest memory and the migration state pipe */
	{ "mmap", P_VUS, ARGM(2, PROT_EXEC, 0),
	  "guest memory regions; malloc() for migration (never PROT_EXEC)" },
	{ "munmap", P_VUS, NOARG, "guest memory regions, free()" },
	{ "rt_sigreturn", P_VUS, NOARG,
	  "the return from vhost/mem.c's SIGBUS handler: guest memory the "
	  "front-end shrank under us" },
	/* fstat() is one of these, by the C library's choice: glibc up to
	 * 2.38 makes newfstatat (fstatat64 on 32-bit architectures), 2.39
	 * and later fstat itself (seen: Debian 13's 2.41, sid's 2.43, where
	 * vhost-user died of it at the first SET_VRING_CALL); 32-bit glibc
	 * with 64-bit time makes statx
	 */
#ifdef __NR_newfstatat
	{ "newfstatat", P_VUS, NOARG,
	  "vu_fd_check(): fstat() of a memory region's fd, glibc < 2.39; "
	  "rmfile_unlink()" },
#else
	{ "fstatat64", P_VUS, NOARG,
	  "vu_fd_check(): fstat() of a memory region's fd, glibc < 2.39; "
	  "rmfile_unlink()" },
#endif
	{ "fstat", P_VUS, NOARG,
	  "vu_fd_check(): fstat() of a memory region's fd, glibc >= 2.39",
	  true },
#if __SIZEOF_LONG__ == 4
	{ "statx", P_VUS, NOARG,
	  "vu_fd_check(): fstat(), 32-bit glibc with 64-bit time_t", true },
#endif
	{ "brk", P_VUS, NOARG, "malloc(): migration stream buffers" },
	{ "mremap", P_VUS, NOARG, "realloc(): migration stream buffers" },
	{ "fcntl", P_VUS, ARG(1, F_GETFL), "migration pipe flags" },
	{ "fcntl", P_VUS, ARG(1, F_SETFL), "migration pipe non-blocking" },

	/* Migration with TCP_REPAIR: the helper round trip, the sockets */
	{ "poll", P_MIGS, NOARG,
	  "waiting for the repair helper's answer, and the peer credential "
	  "checker's (isolation_peer_check())" },
	{ "getsockname", P_MIGS, NOARG, "migrated connection: local address" },
	{ "getpeername", P_MIGS, NOARG, "migrated connection: peer address" },
	{ "ioctl", P_MIGS, ARG(1, SIOCOUTQ),
	  "migration: bytes in the send queue" },
	{ "ioctl", P_MIGS, ARG(1, SIOCOUTQNSD),
	  "migration: bytes in the send queue not sent yet" },
};

/**
 * isolation_profile_name() - name of a seccomp profile, for logs and tests
 * @p:		profile
 *
 * Return: static string
 */
const char *isolation_profile_name(enum iso_profile p)
{
	static const char *const names[] = { "stream", "vhost-user",
					     "vhost-user-migrate",
					     "vhost-user-direct" };

	return p < ISO_PROFILES ? names[p] : "?";
}

/**
 * isolation_profile_allows() - is a syscall in a profile's allow-list?
 * @p:		profile
 * @name:	syscall name
 *
 * Return: true if some row allows it (with or without argument checks)
 */
bool isolation_profile_allows(enum iso_profile p, const char *name)
{
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(iso_rules); i++) {
		if ((iso_rules[i].prof & (1U << p)) &&
		    !strcmp(iso_rules[i].name, name))
			return true;
	}
	return false;
}

/* Does comparison @k of @r let argument value @v (argument @n) through? */
static bool iso_cmp_ok(const struct iso_rule *r, int k, int n, uint64_t v)
{
	return r->cmp[k].arg != n || (v & r->cmp[k].mask) == r->cmp[k].val;
}

/**
 * isolation_sockopt_allowed() - may a profile set a socket option?
 * @p:		profile
 * @level:	setsockopt() level
 * @opt:	option name
 *
 * Return: true if a setsockopt() row of @p lets (@level, @opt) through
 */
bool isolation_sockopt_allowed(enum iso_profile p, int level, int opt)
{
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(iso_rules); i++) {
		const struct iso_rule *r = &iso_rules[i];

		if (!(r->prof & (1U << p)) || strcmp(r->name, "setsockopt"))
			continue;
		if (iso_cmp_ok(r, 0, 1, (uint64_t)level) &&
		    iso_cmp_ok(r, 0, 2, (uint64_t)opt) &&
		    iso_cmp_ok(r, 1, 1, (uint64_t)level) &&
		    iso_cmp_ok(r, 1, 2, (uint64_t)opt))
			return true;
	}
	return false;
}

/**
 * isolation_profile_count() - distinct syscalls a profile allows here
 * @p:		profile
 *
 * Only calls that exist on this architecture count, and each call the
 * daemon makes once: the rows that allow another C library's system call
 * for it (fstat() as fstat or newfstatat) count as one.
 *
 * Return: count
 */
int isolation_profile_count(enum iso_profile p)
{
	int nrs[ARRAY_SIZE(iso_rules)], n = 0, i, j;

	for (i = 0; i < (int)ARRAY_SIZE(iso_rules); i++) {
		int nr = seccomp_syscall_resolve_name(iso_rules[i].name);

		if (!(iso_rules[i].prof & (1U << p)) || nr < 0 ||
		    iso_rules[i].alt)
			continue;
		for (j = 0; j < n && nrs[j] != nr; j++)
			;
		if (j == n)
			nrs[n++] = nr;
	}
	return n;
}

/* Add @r to @f, syscall @nr, with its comparisons; @dirfd for ISO_DIRFD */
static int iso_rule_add(scmp_filter_ctx f, const struct iso_rule *r, int nr,
			int dirfd)
{
	struct scmp_arg_cmp a[2];
	unsigned n = 0, k;

	for (k = 0; k < 2; k++) {
		if (r->cmp[k].arg == ISO_DIRFD)
			a[n++] = SCMP_CMP(0, SCMP_CMP_EQ, (uint64_t)dirfd);
		else if (r->cmp[k].arg >= 0 && r->cmp[k].mask == ~0ULL)
			a[n++] = SCMP_CMP((unsigned)r->cmp[k].arg, SCMP_CMP_EQ,
					  r->cmp[k].val);
		else if (r->cmp[k].arg >= 0)
			a[n++] = SCMP_CMP((unsigned)r->cmp[k].arg,
					  SCMP_CMP_MASKED_EQ, r->cmp[k].mask,
					  r->cmp[k].val);
	}
	return seccomp_rule_add_array(f, SCMP_ACT_ALLOW, nr, n, a);
}

/* Build the filter for @p; NULL on failure */
static scmp_filter_ctx iso_filter(enum iso_profile p)
{
	scmp_filter_ctx f = seccomp_init(sigsys_action());
	unsigned i;
	int rc, d;

	if (!f)
		return NULL;
	/* Calls through another architecture's entry point: the same */
	rc = seccomp_attr_set(f, SCMP_FLTATR_ACT_BADARCH, sigsys_action());
	for (i = 0; !rc && i < ARRAY_SIZE(iso_rules); i++) {
		const struct iso_rule *r = &iso_rules[i];
		int nr = seccomp_syscall_resolve_name(r->name);

		if (!(r->prof & (1U << p)) || nr < 0)
			continue;
		/* The sanitizer's own calls, whatever their arguments */
		if (ISO_SAN && iso_san_has(r->name))
			rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0);
		else if (r->cmp[0].arg != ISO_DIRFD)
			rc = iso_rule_add(f, r, nr, -1);
		for (d = 0; !rc && r->cmp[0].arg == ISO_DIRFD &&
			    !(ISO_SAN && iso_san_has(r->name)) &&
			    rmfile_dirfd(d) >= 0; d++)
			rc = iso_rule_add(f, r, nr, rmfile_dirfd(d));
	}
	for (i = 0; ISO_SAN && !rc && i < ARRAY_SIZE(iso_san_extra); i++) {
		int nr = seccomp_syscall_resolve_name(iso_san_extra[i]);

		if (nr >= 0)
			rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0);
	}
	if (rc) {
		seccomp_release(f);
		errno = -rc;
		return NULL;
	}
	return f;
}

/**
 * isolation_seccomp() - load the allow-list of our mode, which
 *			 isolation_drop() chose
 *
 * Dies if it can't, unless --sandbox-best-effort. Logs one line saying
 * which profile is in place, and, with --sandbox-best-effort, what the
 * sandbox goes without.
 */
void isolation_seccomp(void)
{
	scmp_filter_ctx f;
	int rc;

	f = iso_filter(iso_profile_sel);
	if (!f) {
		iso_fail("seccomp: can't build the filter", errno);
	} else if ((rc = sigsys_arm("Sandbox",
				    isolation_profile_name(iso_profile_sel),
				    log_sigsafe, ISO_SIGSYS_STATUS))) {
		seccomp_release(f);
		iso_fail("seccomp: can't handle SIGSYS", -rc);
	} else if ((rc = seccomp_load(f))) {
		seccomp_release(f);
		iso_fail("seccomp: can't load the filter", -rc);
	} else {
		seccomp_release(f);
		info("Sandboxed: seccomp profile %s, %i system calls allowed",
		     isolation_profile_name(iso_profile_sel),
		     isolation_profile_count(iso_profile_sel));
	}
	if (iso_missing[0])
		warn("Sandbox incomplete (--sandbox-best-effort), without: %s",
		     iso_missing);

#ifdef PASST_TEST_HOOKS
	iso_test_hook();
#endif
}
