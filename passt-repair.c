// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * passt-repair.c - privileged helper: toggle TCP_REPAIR for the daemon.
 *
 * Usage: passt-repair PATH
 *
 * Turning TCP_REPAIR on or off needs CAP_NET_ADMIN; everything else a live
 * migration does with a TCP socket only needs a socket already in repair
 * mode. The daemon runs without privileges, so this small program, started
 * by the management layer (KubeVirt's virt-handler) with CAP_NET_ADMIN, does
 * the toggle for it, and nothing else. It is the one place where a
 * privileged act happens on the daemon's behalf, so it is kept tiny and
 * locked down before it touches any input:
 *
 *   1. the command line is parsed (--help and --version end here), and
 *      the drop-all filter is loaded, once (below);
 *   2. the process becomes non-dumpable and sets no_new_privs, drops every
 *      capability but CAP_NET_ADMIN and CAP_DAC_OVERRIDE from its
 *      effective, permitted and inheritable sets and from the bounding set
 *      (ambient capabilities go with the inheritable ones). Without
 *      privileges the drops fail and we go on: the setsockopt() below then
 *      fails with EPERM and says so;
 *   3. a seccomp allow-list of the system calls used from here on is
 *      loaded; anything else ends the process, status 1, with one line
 *      on stderr that names the call ("passt-repair: seccomp profile
 *      passt-repair denied system call NAME (NR), exiting": sigsys.c);
 *   4. once connected, before the first request, CAP_DAC_OVERRIDE goes too:
 *      it was only there to connect to a socket of the daemon's user (the
 *      libvirt and KubeVirt daemons don't run as root).
 *
 * Then PATH is either a directory or the daemon's repair socket. For a
 * directory we watch it with inotify (the helper may start before the
 * daemon: KubeVirt does that on the migration target) until an entry whose
 * name ends in ".repair" shows up, or is already there, and connect to it,
 * retrying for a few seconds while the daemon has bound but is not listening
 * yet (ECONNREFUSED) or the entry went away and comes back (ENOENT). In a
 * directory, anybody who may create entries could plant a socket of their
 * own, or a symbolic link to some other daemon's: so an entry counts only
 * if it is a socket (not a symbolic link to one) owned by root or by the
 * directory's owner. We open it with O_PATH | O_NOFOLLOW, check what
 * fstat() says, and connect through /proc/self/fd/N, so that what we
 * checked is what we connect to (and no sun_path limit applies); other
 * entries are skipped, with a message, and the wait goes on. An explicit
 * socket PATH may be a symbolic link (KubeVirt passes a short link when
 * the real path is too long for sun_path), but what it leads to must pass
 * the same test: a socket owned by root or by the owner of the directory
 * it is in (found through /proc/self/fd/N), or else one whose listener is
 * root (SO_PEERCRED: a daemon started as root binds and listens before it
 * becomes nobody or --runas, and hands its socket file to that user), or
 * we refuse it, with status 1: whoever could bind there first would get
 * repair mode on sockets of their own. It is connected to through
 * /proc/self/fd/N too, and nothing is read or sent before that test.
 *
 * Protocol (the daemon is the server, one helper at a time): each request is
 * one message of exactly one data byte, a signed 8-bit command (1: repair
 * on, 0: off, -1: off without window probe), with one SCM_RIGHTS control
 * message carrying 1 to 253 (SCM_MAX_FD) TCP sockets. We set TCP_REPAIR to
 * the command on each of them, close our copies and reply with the same
 * byte, once per request. Before touching any of them, we check that every
 * descriptor is a TCP socket (SO_DOMAIN AF_INET or AF_INET6, SO_TYPE
 * SOCK_STREAM, SO_PROTOCOL IPPROTO_TCP): the filter and the option are for
 * TCP connections only, and a request is applied whole or not at all.
 * Anything unexpected (no or foreign control data, truncated control data,
 * an unknown command, a descriptor that isn't a TCP socket, a failing
 * setsockopt()) is reported on stderr and ends the process with status 1:
 * the daemon sees the connection close instead of the echo, and must not
 * go on. End of file or
 * a reset from the daemon is the normal end: status 0. The checks of a
 * request are repair_msg_check() in repair_msg.h, so that the fuzzing
 * harness test/fuzz/fuzz_repair.c can run them without this program.
 *
 * The drop-all filter: with "on" we first attach a socket filter that
 * drops every incoming segment before TCP sees it ("return 0"), and with
 * "off" we detach it (SO_DETACH_FILTER) before clearing TCP_REPAIR. A
 * socket in repair mode still ACKs what arrives, so a migration source
 * that holds its sockets would acknowledge data its target never gets;
 * the filter makes the hold silent. The daemon attaches the filter itself
 * where it can, but some kernels (and its own seccomp profile, with a
 * helper) refuse it any socket filter. The protocol is unchanged (a
 * failed attach is reported and the toggle goes on; upstream's daemons
 * make no socket deaf, and get no filter), and the daemon reads the
 * filter back
 * (SO_GET_FILTER) to know whether its hold is silent. Only a socket the
 * daemon made deaf gets it (IP_MINTTL, IPV6_MINHOPCOUNT 255: our daemon
 * does that to every socket it holds, before "on"): "on" for any other
 * socket isn't a hold (a poke of a restored connection, "off" following
 * at once, or a migration target's new socket, not even connected yet),
 * and each classic filter costs the kernel a BPF program of its own,
 * compiled, per socket: at a thousand connections, milliseconds the guest
 * stays paused. So, in step 1, before any input, we load that program
 * once, as eBPF (bpf(BPF_PROG_LOAD), a socket filter of two
 * instructions: r0 = 0, exit), and attach that one to each socket
 * (SO_ATTACH_BPF: a reference, nothing compiled). Loading it takes CAP_BPF
 * or CAP_SYS_ADMIN where unprivileged BPF is off (Debian's default): a
 * helper started as root has them (virt-handler runs it so), and they go
 * with the others in step 2. Without them, or with a kernel that refuses
 * it, each socket gets the classic one-instruction filter
 * (SO_ATTACH_FILTER), as before. Either drops the same segments;
 * SO_GET_FILTER can't read an eBPF program back, and fails with EACCES
 * where it would give a classic one's length.
 *
 * Never: keep a received descriptor open after the reply, do anything to a
 * socket but the TCP_REPAIR toggle and its drop filter (and ask what it
 * is), or read data beyond the command byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <seccomp.h>

#include "kernel_abi.h"	/* TCP_REPAIR, SO_ATTACH_BPF where the headers lack them */
#include "repair_msg.h"	/* repair_msg_check(), the command values */
#include "sigsys.h"	/* a denied call says which, then we exit */

#define REPAIR_SUFFIX		".repair"
#define REPAIR_RETRY_MS		50	/* pause between connect() attempts */
#define REPAIR_RETRY_COUNT	100	/* 5 s for the daemon to listen */

/*
 * The sanitizer runtime makes system calls of its own (at start-up of its
 * threads, on a report, for the leak check at exit): a sanitizer build only
 * logs seccomp violations instead of dying on them.
 */
#if defined(__SANITIZE_ADDRESS__)
#define REPAIR_SANITIZER	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPAIR_SANITIZER	1
#endif
#endif

#ifdef REPAIR_SANITIZER
#define REPAIR_SECCOMP_DEFAULT	SCMP_ACT_LOG
#else
#define REPAIR_SECCOMP_DEFAULT	sigsys_action()
#endif

/* What getdents64 returns: glibc has no public type for it */
struct repair_dirent {
	uint64_t	d_ino;
	int64_t		d_off;
	unsigned short	d_reclen;
	unsigned char	d_type;
	char		d_name[];
};

static const char *repair_prog = "passt-repair";

/**
 * repair_die() - print a message to standard error and exit with status 1
 * @fmt:	format string
 * @...:	arguments for @fmt
 */
__attribute__((format(printf, 1, 2), noreturn))
static void repair_die(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "%s: ", repair_prog);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(msg);
	msg[n++] = '\n';
	/* One write(): no stdio buffer, nothing but write and exit_group */
	if (write(STDERR_FILENO, msg, n) < 0)
		_exit(1);
	_exit(1);
}

static void repair_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s PATH\n"
		"\n"
		"Set or clear TCP_REPAIR on TCP sockets passed by the\n"
		"network back-end over its repair socket.\n"
		"\n"
		"  PATH       the back-end's repair socket, or a directory:\n"
		"             wait there for an entry named *" REPAIR_SUFFIX
		" to appear\n"
		"  -h, --help     show this help and exit\n"
		"      --version  show the version and exit\n",
		repair_prog);
}

/**
 * repair_caps_set() - keep those of the given capabilities we have, only
 * @keep:	capabilities to keep in the effective and permitted sets
 * @n:		number of entries in @keep
 */
static void repair_caps_set(const cap_value_t *keep, int n)
{
	cap_t caps = cap_get_proc();
	cap_value_t have[2];
	int i, m = 0;

	if (!caps)
		repair_die("cap_get_proc: %s", strerror(errno));
	for (i = 0; i < n && m < 2; i++) {
		cap_flag_value_t f = CAP_CLEAR;

		cap_get_flag(caps, keep[i], CAP_PERMITTED, &f);
		if (f == CAP_SET)
			have[m++] = keep[i];
	}
	if (cap_clear(caps))
		repair_die("cap_clear: %s", strerror(errno));
	if (m && (cap_set_flag(caps, CAP_PERMITTED, m, have, CAP_SET) ||
		  cap_set_flag(caps, CAP_EFFECTIVE, m, have, CAP_SET)))
		repair_die("cap_set_flag: %s", strerror(errno));
	if (cap_set_proc(caps))
		repair_die("can't drop capabilities: %s", strerror(errno));
	cap_free(caps);
}

/**
 * repair_drop_caps() - keep only CAP_NET_ADMIN, and CAP_DAC_OVERRIDE until
 *			we are connected (repair_drop_dac()), if we have them
 *
 * The daemon runs as another user (libvirt's QEMU user, KubeVirt's 107),
 * and its repair socket is that user's, mode 0755 or so: root can only
 * connect to it with CAP_DAC_OVERRIDE, as upstream's helper does. It
 * goes as soon as the connection is up, before the first request.
 * The bounding set goes first: dropping from it needs CAP_SETPCAP, which
 * leaves with the second step. Without privileges both steps are no-ops
 * (or fail with EPERM, which we ignore).
 */
static void repair_drop_caps(void)
{
	const cap_value_t keep[] = { CAP_NET_ADMIN, CAP_DAC_OVERRIDE };
	int c;

	for (c = 0; c <= 63 && CAP_IS_SUPPORTED(c); c++) {
		if (c == CAP_NET_ADMIN || c == CAP_DAC_OVERRIDE ||
		    cap_get_bound(c) != 1)
			continue;
		if (cap_drop_bound(c)) {
			if (errno == EPERM)
				break;
			repair_die("can't drop capability %d from the bounding set: %s",
				   c, strerror(errno));
		}
	}

	repair_caps_set(keep, 2);
}

/**
 * repair_drop_dac() - connected: CAP_NET_ADMIN is all we keep from now on
 *
 * The bounding set keeps CAP_DAC_OVERRIDE (no CAP_SETPCAP left to drop
 * it), which gives nothing: we never execute anything, with no_new_privs.
 */
static void repair_drop_dac(void)
{
	const cap_value_t keep = CAP_NET_ADMIN;

	repair_caps_set(&keep, 1);
}

/* One allow-list entry: a system call, and what may be passed to it */
struct repair_rule {
	int nr;
	unsigned int argc;
	struct scmp_arg_cmp arg[2];
};

/* A call the filter denied: its line (sigsys.c) on standard error */
static void repair_sigsys(const char *line, size_t len)
{
	ssize_t n = write(STDERR_FILENO, line, len);

	(void)n;
}

/**
 * repair_seccomp() - allow only the system calls used from here on
 *
 * The context is never released: freeing it after the load could make
 * system calls (heap trimming) that are not on the list. It stays
 * reachable from a static pointer, so leak checkers don't count it.
 */
static void repair_seccomp(void)
{
	static scmp_filter_ctx ctx;
	const struct repair_rule rules[] = {
		/* inotify events while waiting in a directory */
		{ SCMP_SYS(read), 0, { } },
		/* error messages on stderr */
		{ SCMP_SYS(write), 0, { } },
		/* is PATH a directory? open it to list it, and its entries
		 * (O_PATH) to check them
		 */
		{ SCMP_SYS(openat), 0, { } },
		/* ...what they are, and who owns them and the directory */
#ifdef __NR_newfstatat
		{ SCMP_SYS(newfstatat), 0, { } },
#endif
		{ SCMP_SYS(fstat), 0, { } },
		/* list the directory: is the repair socket there already? */
		{ SCMP_SYS(getdents64), 0, { } },
		/* where an explicit socket path leads (/proc/self/fd/N):
		 * whose directory it is in
		 */
		{ SCMP_SYS(readlinkat), 0, { } },
		/* watch the directory for the repair socket to appear */
		{ SCMP_SYS(inotify_init1), 0, { } },
		{ SCMP_SYS(inotify_add_watch), 0, { } },
		/* our copies of the sockets, a failed socket, the directory */
		{ SCMP_SYS(close), 0, { } },
		/* the connection to the daemon: UNIX domain only */
		{ SCMP_SYS(socket), 1, { SCMP_A0(SCMP_CMP_EQ, AF_UNIX) } },
		{ SCMP_SYS(connect), 0, { } },
		/* pause between connect() attempts (glibc's poll()) */
#ifdef __NR_poll
		{ SCMP_SYS(poll), 0, { } },
#else
		{ SCMP_SYS(ppoll), 0, { } },
#endif
		/* requests: the command byte and the sockets */
		{ SCMP_SYS(recvmsg), 0, { } },
		/* the echo of the command */
		{ SCMP_SYS(sendmsg), 0, { } },
		/* is each descriptor a TCP socket? */
		{ SCMP_SYS(getsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_DOMAIN) } },
		{ SCMP_SYS(getsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_TYPE) } },
		{ SCMP_SYS(getsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_PROTOCOL) } },
		/* ...and who listens at an explicit socket path */
		{ SCMP_SYS(getsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_PEERCRED) } },
		/* the job itself: TCP_REPAIR, and nothing else */
		{ SCMP_SYS(setsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_TCP),
		    SCMP_A2(SCMP_CMP_EQ, TCP_REPAIR) } },
		/* ...and the drop-all filter around it (top of the file),
		 * for a socket the daemon made deaf
		 */
		{ SCMP_SYS(getsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, IPPROTO_IP),
		    SCMP_A2(SCMP_CMP_EQ, IP_MINTTL) } },
		{ SCMP_SYS(getsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, IPPROTO_IPV6),
		    SCMP_A2(SCMP_CMP_EQ, IPV6_MINHOPCOUNT) } },
		{ SCMP_SYS(setsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_ATTACH_FILTER) } },
		{ SCMP_SYS(setsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_ATTACH_BPF) } },
		{ SCMP_SYS(setsockopt), 2,
		  { SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
		    SCMP_A2(SCMP_CMP_EQ, SO_DETACH_FILTER) } },
		/* repair_drop_dac(), once connected: it can only lower them */
		{ SCMP_SYS(capget), 0, { } },
		{ SCMP_SYS(capset), 0, { } },
		/* exit(), _exit() */
		{ SCMP_SYS(exit_group), 0, { } },
		/* resume poll() after SIGSTOP/SIGCONT or a debugger */
		{ SCMP_SYS(restart_syscall), 0, { } },
	};
	unsigned int i;
	int rc;

	ctx = seccomp_init(REPAIR_SECCOMP_DEFAULT);
	if (!ctx)
		repair_die("seccomp_init failed");
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
			      REPAIR_SECCOMP_DEFAULT);
	if (rc)
		repair_die("seccomp: other architectures: %s", strerror(-rc));
	rc = sigsys_arm(repair_prog, repair_prog, repair_sigsys, 1);
	if (rc)
		repair_die("can't handle SIGSYS: %s", strerror(-rc));

	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, rules[i].nr,
					    rules[i].argc, rules[i].arg);
		if (rc)
			repair_die("seccomp rule for system call %d: %s",
				   rules[i].nr, strerror(-rc));
	}

	rc = seccomp_load(ctx);
	if (rc)
		repair_die("can't load the seccomp filter: %s", strerror(-rc));
}

#ifdef PASST_TEST_HOOKS
/* Test builds only (make's $(BUILD)/test/passt-repair-hooks): right after
 * the filter, make the call PASST_TEST_FORBIDDEN_SYSCALL names, with no
 * arguments, so that a test sees what a denied call does here
 */
static void repair_test_hook(const char *name)
{
	int nr;

	if (!name)
		return;
	nr = seccomp_syscall_resolve_name(name);
	fprintf(stderr, "%s: test hook: calling %s (%d)\n", repair_prog, name,
		nr);
	syscall(nr, 0, 0, 0, 0, 0, 0);
	fprintf(stderr, "%s: test hook: %s returned\n", repair_prog, name);
}
#endif

/**
 * repair_connect() - connect to a UNIX domain socket
 * @path:	socket path, already checked to fit in sun_path
 *
 * Return: connected socket, or -errno
 */
static int repair_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s, rc;

	memcpy(a.sun_path, path, strlen(path) + 1);

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;

	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		rc = -errno;
		close(s);
		return rc;
	}

	return s;
}

static bool repair_name_match(const char *name)
{
	size_t len = strlen(name), slen = strlen(REPAIR_SUFFIX);

	return len > slen && !strcmp(name + len - slen, REPAIR_SUFFIX);
}

/* Directory mode: the directory, held open, and its owner */
static int repair_dirfd = -1;
static uid_t repair_dir_uid;

/**
 * repair_entry_connect() - connect to an entry of the directory, if it may
 *			    be used
 * @dir:	directory path, for messages
 * @name:	entry name, ending in REPAIR_SUFFIX
 *
 * The entry must be a socket, not a symbolic link, owned by root or by the
 * directory's owner: anybody else who may create entries here could plant
 * one. It is opened with O_PATH | O_NOFOLLOW, checked with fstat(), and
 * connected to through /proc/self/fd/N, so that nothing can be swapped in
 * between. While it is bound but not listening yet (ECONNREFUSED), or gone
 * and not back yet (ENOENT), we try again, for a few seconds.
 *
 * Return: connected socket, or -1 if the entry can't be used (said why)
 */
static int repair_entry_connect(const char *dir, const char *name)
{
	char proc[sizeof("/proc/self/fd/") + 12];
	int fd, s, tries;
	struct stat st;

	for (tries = 0; ; tries++) {
		fd = openat(repair_dirfd, name,
			    O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			s = -errno;
		} else {
			if (fstat(fd, &st))
				repair_die("%s/%s: fstat: %s", dir, name,
					   strerror(errno));
			if (!S_ISSOCK(st.st_mode)) {
				fprintf(stderr, "%s: skipping %s/%s: %s\n",
					repair_prog, dir, name,
					S_ISLNK(st.st_mode) ?
					"a symbolic link" : "not a socket");
				close(fd);
				return -1;
			}
			if (st.st_uid && st.st_uid != repair_dir_uid) {
				fprintf(stderr, "%s: skipping %s/%s: owned by "
					"user %u, neither root nor the "
					"directory's owner (%u)\n",
					repair_prog, dir, name,
					(unsigned)st.st_uid,
					(unsigned)repair_dir_uid);
				close(fd);
				return -1;
			}
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			s = repair_connect(proc);
			close(fd);
			if (s >= 0)
				return s;
		}
		if ((s != -ECONNREFUSED && s != -ENOENT) ||
		    tries >= REPAIR_RETRY_COUNT)
			repair_die("can't connect to %s/%s: %s", dir, name,
				   strerror(-s));
		poll(NULL, 0, REPAIR_RETRY_MS);
	}
}

/**
 * repair_path_connect() - connect to an explicit socket path, if it may be
 *			   used
 * @path:	the path, already checked to fit in sun_path: a socket, or a
 *		symbolic link to one
 *
 * What @path leads to must be a socket owned by root or by the owner of
 * the directory it is in, or one whose listener was root (SO_PEERCRED: a
 * daemon started as root listens before it becomes another user, and
 * hands its socket file to that user): see the top of the file. Opened
 * with O_PATH, checked with fstat(), its directory found and connected to
 * through /proc/self/fd/N, so that what we checked is what we connect to;
 * nothing is read or sent before the checks pass.
 *
 * Return: connected socket; dies if it can't be used, or connected to
 */
static int repair_path_connect(const char *path)
{
	char proc[sizeof("/proc/self/fd/") + 12], real[PATH_MAX];
	struct ucred uc = { .uid = (uid_t)-1 };
	socklen_t sl = sizeof(uc);
	struct stat st, dst;
	int fd, dfd, s;
	ssize_t n;
	char *slash;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		repair_die("%s: %s", path, strerror(errno));
	if (fstat(fd, &st))
		repair_die("%s: fstat: %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		repair_die("%s: not a socket", path);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlinkat(AT_FDCWD, proc, real, sizeof(real) - 1);
	if (n <= 0)
		repair_die("%s: where does it lead? %s", path,
			   n ? strerror(errno) : "nowhere");
	if ((size_t)n >= sizeof(real) - 1)
		repair_die("%s: leads to a path too long to check", path);
	real[n] = 0;
	if (!(slash = strrchr(real, '/')))
		repair_die("%s leads to %s: no directory", path, real);
	if (slash == real)
		slash++;	/* in / itself */
	*slash = 0;
	dfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &dst))
		repair_die("%s: its directory %s: %s", path, real,
			   strerror(errno));
	close(dfd);

	s = repair_connect(proc);
	close(fd);
	if (s < 0)
		repair_die("can't connect to %s: %s", path, strerror(-s));
	if (st.st_uid && st.st_uid != dst.st_uid &&
	    (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &sl) || uc.uid))
		repair_die("%s: owned by user %u, neither root nor the owner "
			   "(%u) of its directory %s, and its listener runs "
			   "as user %d, not root: refusing it", path,
			   (unsigned)st.st_uid, (unsigned)dst.st_uid, real,
			   (int)uc.uid);
	return s;
}

/**
 * repair_dir_scan() - connect to a usable *.repair entry already there
 * @dir:	directory path, for messages
 *
 * Return: connected socket, or -1 if there is none
 */
static int repair_dir_scan(const char *dir)
{
	static char buf[8192] __attribute__((aligned(8)));
	long n, off;
	int fd, s = -1;

	fd = openat(repair_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		repair_die("can't open directory %s: %s", dir, strerror(errno));

	while (s < 0 &&
	       (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; s < 0 && off < n; ) {
			struct repair_dirent *d = (void *)(buf + off);

			off += d->d_reclen;
			if (repair_name_match(d->d_name))
				s = repair_entry_connect(dir, d->d_name);
		}
	}
	if (s < 0 && n < 0)
		repair_die("can't list directory %s: %s", dir, strerror(errno));

	close(fd);
	return s;
}

/**
 * repair_dir_wait() - wait for a usable *.repair entry in a directory,
 *		       connect to it
 * @dir:	directory path
 *
 * The watch is set before the directory is listed, so that an entry created
 * in between is not missed.
 *
 * Return: connected socket
 */
static int repair_dir_wait(const char *dir)
{
	static char buf[sizeof(struct inotify_event) + NAME_MAX + 1]
		__attribute__((aligned(__alignof__(struct inotify_event))));
	struct stat st;
	int fd, s;

	/* What we check is what we connect to: through /proc/self/fd */
	fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		repair_die("directory mode needs /proc/self/fd: %s",
			   strerror(errno));
	close(fd);
	if (fstat(repair_dirfd, &st))
		repair_die("%s: fstat: %s", dir, strerror(errno));
	repair_dir_uid = st.st_uid;

	fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0)
		repair_die("inotify_init1: %s", strerror(errno));
	if (inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO) < 0)
		repair_die("can't watch directory %s: %s", dir,
			   strerror(errno));

	if ((s = repair_dir_scan(dir)) >= 0)
		goto out;

	for (;;) {
		const struct inotify_event *ev;
		ssize_t n, off;

		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			repair_die("reading inotify events for %s: %s", dir,
				   n ? strerror(errno) : "end of file");

		for (off = 0; off < n; off += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + off);

			if (ev->mask & IN_IGNORED)
				repair_die("directory %s went away", dir);
			if (ev->mask & IN_Q_OVERFLOW) {
				if ((s = repair_dir_scan(dir)) >= 0)
					goto out;
				continue;
			}
			if (ev->len && repair_name_match(ev->name) &&
			    (s = repair_entry_connect(dir, ev->name)) >= 0)
				goto out;
		}
	}
out:
	close(fd);
	return s;
}

/* The drop-all filter as one eBPF program for every socket, -1: none */
static int repair_bpf_fd = -1;

/**
 * repair_bpf_load() - load the drop-all filter once, as eBPF (see the top)
 *
 * Before the capabilities go: CAP_BPF or CAP_SYS_ADMIN, where unprivileged
 * BPF is off. Without them, or refused, repair_bpf_fd stays -1, and each
 * socket gets a classic filter of its own.
 */
static void repair_bpf_load(void)
{
	static const struct bpf_insn drop[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static const char license[] = "GPL";
	union bpf_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insn_cnt = sizeof(drop) / sizeof(drop[0]);
	a.insns = (uint64_t)(uintptr_t)drop;
	a.license = (uint64_t)(uintptr_t)license;
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (fd >= 0)
		repair_bpf_fd = (int)fd;
}

/**
 * repair_filter() - attach the drop-all filter, or detach it (see the top)
 * @s:		socket
 * @on:		attach, or detach
 *
 * A failure is reported, once, and otherwise ignored: the toggle is the
 * contract, and the daemon checks for the filter itself.
 */
static void repair_filter(int s, bool on)
{
	static struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	static bool warned;
	struct sock_fprog prog = { .len = 1, .filter = &drop };
	int zero = 0, rc;

	/* The shared program (see the top), else a classic one */
	if (on && repair_bpf_fd >= 0 &&
	    !setsockopt(s, SOL_SOCKET, SO_ATTACH_BPF, &repair_bpf_fd,
			sizeof(repair_bpf_fd)))
		return;
	if (on)
		rc = setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
				sizeof(prog));
	else
		rc = setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero,
				sizeof(zero));
	if (rc && !(!on && errno == ENOENT) && !warned) {
		warned = true;
		fprintf(stderr, "passt-repair: %s the drop-all filter: %s\n",
			on ? "can't attach" : "can't detach", strerror(errno));
	}
}

/* Some socket option of @s, or die saying which descriptor isn't a socket */
static int repair_sockopt(int s, int opt, int i, int n)
{
	socklen_t sl = sizeof(int);
	int v;

	if (getsockopt(s, SOL_SOCKET, opt, &v, &sl))
		repair_die("descriptor %d of %d: %s%s", i + 1, n,
			   strerror(errno),
			   errno == ENOTSOCK ? "" : " (not a socket?)");
	return v;
}

/* Did the daemon make @s, of family @domain, deaf? (see the top) */
static bool repair_deaf(int s, int domain)
{
	socklen_t sl = sizeof(int);
	int v = 0;

	if (domain == AF_INET6)
		return !getsockopt(s, IPPROTO_IPV6, IPV6_MINHOPCOUNT, &v,
				   &sl) && v == 255;
	return !getsockopt(s, IPPROTO_IP, IP_MINTTL, &v, &sl) && v == 255;
}

/**
 * repair_tcp_check() - is every descriptor a TCP socket? Die if not
 * @fds:	descriptors of one request
 * @n:		how many
 * @domains:	set to the family of each
 *
 * Before anything is done to any of them: a request is all or nothing.
 */
static void repair_tcp_check(const int *fds, int n, int *domains)
{
	int i;

	for (i = 0; i < n; i++) {
		int domain = repair_sockopt(fds[i], SO_DOMAIN, i, n);
		int type = repair_sockopt(fds[i], SO_TYPE, i, n);
		int proto = repair_sockopt(fds[i], SO_PROTOCOL, i, n);

		if ((domain != AF_INET && domain != AF_INET6) ||
		    type != SOCK_STREAM || proto != IPPROTO_TCP)
			repair_die("descriptor %d of %d is not a TCP socket "
				   "(domain %d, type %d, protocol %d)",
				   i + 1, n, domain, type, proto);
		domains[i] = domain;
	}
}

/**
 * repair_handle() - receive one request, apply it, reply
 * @s:		connected socket
 *
 * Return: true to go on, false on end of file or reset from the daemon.
 * Errors end the process.
 */
static bool repair_handle(int s)
{
	static union {
		char buf[CMSG_SPACE(sizeof(int) * REPAIR_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	int fds[REPAIR_MAX_FDS], domains[REPAIR_MAX_FDS], nfds = 0, i, v;
	char why[128];
	int8_t cmd;
	ssize_t n;

	iov.iov_base = &cmd;
	iov.iov_len = sizeof(cmd);

	do
		n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return false;
	if (n < 0)
		repair_die("recvmsg: %s", strerror(errno));

	if (repair_msg_check(&mh, cmd, fds, &nfds, why, sizeof(why)))
		repair_die("%s", why);
	repair_tcp_check(fds, nfds, domains);

	v = cmd;
	for (i = 0; i < nfds; i++) {
		if (v != 1 || repair_deaf(fds[i], domains[i]))
			repair_filter(fds[i], v == 1);
		if (setsockopt(fds[i], SOL_TCP, TCP_REPAIR, &v, sizeof(v)))
			repair_die("setting TCP_REPAIR to %d on socket %d of %d: %s%s",
				   v, i + 1, nfds, strerror(errno),
				   errno == EPERM ?
				   " (CAP_NET_ADMIN needed)" : "");
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);

	mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
	do
		n = sendmsg(s, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		repair_die("sending the reply to command %d: %s", cmd,
			   strerror(errno));

	return true;
}

/**
 * main() - lock down, connect to the daemon, serve its requests
 * @argc:	argument count: 2, or a usage error
 * @argv:	PATH (the repair socket, or a directory to wait in), or
 *		-h, --help, --version
 *
 * Locks down in the order of the file's head comment, before any input;
 * then connects (repair_dir_wait() or repair_path_connect()) and answers
 * requests (repair_handle()) until the daemon closes the connection.
 * Failures after the command line end in repair_die(): status 1.
 *
 * Return: 0 when the daemon closes the connection, or after --help or
 *	   --version; 1 on a usage error
 */
int main(int argc, char **argv)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *arg;
	int s;

	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		repair_usage(stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("%s " VERSION "\n", repair_prog);
		return 0;
	}
	if (argc != 2 || !argv[1][0] ||
	    (argv[1][0] == '-' && strcmp(argv[1], "-"))) {
		repair_usage(stderr);
		return 1;
	}
	arg = argv[1];

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		repair_die("PR_SET_DUMPABLE: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		repair_die("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	repair_bpf_load();
	repair_drop_caps();
	repair_seccomp();
#ifdef PASST_TEST_HOOKS
	repair_test_hook(getenv("PASST_TEST_FORBIDDEN_SYSCALL"));
#endif

	repair_dirfd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (repair_dirfd >= 0) {
		s = repair_dir_wait(arg);
		close(repair_dirfd);
	} else {
		if (errno != ENOTDIR)
			repair_die("%s: %s", arg, strerror(errno));
		if (strlen(arg) >= sizeof(path))
			repair_die("%s: path too long for a UNIX socket "
				   "(%zu bytes at most): use a shorter path, "
				   "e.g. a symbolic link to its directory",
				   arg, sizeof(path) - 1);
		memcpy(path, arg, strlen(arg) + 1);
		s = repair_path_connect(path);
	}

	repair_drop_dac();
	while (repair_handle(s))
		;

	return 0;
}
