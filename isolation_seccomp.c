// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * isolation_seccomp.c - the seccomp allow-lists, one profile per mode,
 * and the filter built from them.
 *
 * Theory of operation
 *
 * isolation_seccomp(), once the signal and timer descriptors exist: a
 * libseccomp allow-list, one profile per mode (stream, vhost-user,
 * vhost-user with migration through a repair helper socket, vhost-user
 * with direct TCP_REPAIR), built from the calls the code makes after
 * this point, as each C library makes them: found by building with
 * -DISOLATION_SECCOMP_LOG, which turns the default action into
 * SCMP_ACT_LOG, running the test suites with the daemon built and run
 * in Debian 12, 13 and sid (glibc 2.36, 2.41, 2.43: make roots) and
 * reading the kernel's audit lines ("type=1326 ... syscall=N"). Where
 * libcs differ (fstat() as newfstatat or fstat), each one's call has its
 * row. Anything else is not made: the process writes one line naming
 * the call and the profile, and exits (sigsys.c: SECCOMP_RET_TRAP, a
 * SIGSYS handler that logs and _exit()s; fail-closed as the kill it
 * replaces). The table below says why each entry is there. The direct
 * TCP_REPAIR profile keeps CAP_NET_ADMIN, which makes many socket
 * options privileged: there, setsockopt() is allowed only for the
 * levels and options the daemon sets, one row each.
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
#include "kernel_abi.h"
#include "log.h"
#include "rmfile.h"
#include "sigsys.h"
#include "util.h"
#include "isolation_internal.h"

/* Exit status after a denied system call (sigsys.c): what a shell shows
 * for a process that SIGSYS killed, as SCMP_ACT_KILL_PROCESS did
 */
#define ISO_SIGSYS_STATUS	(128 + SIGSYS)

/* Test builds' sanitizer runtime, on top of any profile */
const char *const iso_san_extra[] = {
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

const size_t iso_san_extra_n = ARRAY_SIZE(iso_san_extra);

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
/**
 * iso_test_call() - make the call PASST_TEST_FORBIDDEN_SYSCALL names, now
 * @spec:	NAME[:ARG...]
 * @say:	log before and after (not in the checker: it has no log)
 */
void iso_test_call(const char *spec, bool say)
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
	  "tcp/migrate_dst.c: the restored socket's send buffer; "
	  "tcp/window.c: a buffer the guest keeps short of data, doubled" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_BUF_LOCK),
	  "tcp/migrate_dst.c, tcp/window.c: ...unlocked again for "
	  "autotuning" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_RCVBUF),
	  "tcp/migrate_dst.c: the restored socket's receive buffer" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_LINGER),
	  "tcp/close.c: reset instead of FIN" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_OOBINLINE),
	  "tcp/connect.c, tcp/migrate_src.c: urgent data kept in the stream" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_PEEK_OFF),
	  "tcp/connect.c, tcp/to_guest.c, tcp/migrate_src.c: peeking at "
	  "unacknowledged data" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_ATTACH_FILTER),
	  "repair/sock.c: the drop-all filter of a held connection" },
	{ "setsockopt", P_DIR, SOCKOPT(SOL_SOCKET, SO_DETACH_FILTER),
	  "repair/sock.c: ...taken off when it resumes" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IPV6, IPV6_V6ONLY),
	  "fwd/fwd.c: IPv6 listening sockets" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IP, IP_FREEBIND),
	  "fwd/fwd.c: --freebind, listening sockets" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IPV6, IPV6_FREEBIND),
	  "fwd/fwd.c: --freebind, IPv6 listening sockets" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_NODELAY),
	  "tcp/connect.c: every connection" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_QUICKACK),
	  "tcp/migrate_src.c: a held socket's delayed ACK sent at once" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_WINDOW_CLAMP),
	  "tcp/migrate_dst.c: a restored socket's window growth "
	  "(rcv_ssthresh)" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_REPAIR),
	  "repair/repair.c: direct TCP_REPAIR, what CAP_NET_ADMIN is for" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_TCP, TCP_REPAIR_QUEUE),
	  "repair/sock.c: dump and restore of the queues" },
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
	  "repair/sock.c: a restored socket's timeouts while it is "
	  "poked" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IP, IP_MINTTL),
	  "repair/sock.c: a held or parked socket deaf to the peer" },
	{ "setsockopt", P_DIR, SOCKOPT(IPPROTO_IPV6, IPV6_MINHOPCOUNT),
	  "repair/sock.c: ...the same for IPv6" },

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

/**
 * iso_rule_add() - add one rule to a filter, with its comparisons
 * @f:		the filter
 * @r:		the rule
 * @nr:		the syscall's number on this architecture
 * @dirfd:	descriptor compared for ISO_DIRFD arguments
 *
 * Return: 0 or a negative error code from libseccomp
 */
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

/**
 * iso_filter() - build the seccomp filter for a profile
 * @p:		the profile
 *
 * Return: the filter, NULL on failure
 */
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
	/* NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores): ASan only */
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

	f = iso_filter(iso.profile);
	if (!f) {
		iso_fail("seccomp: can't build the filter", errno);
	} else if ((rc = sigsys_arm("Sandbox",
				    isolation_profile_name(iso.profile),
				    log_sigsafe, ISO_SIGSYS_STATUS))) {
		seccomp_release(f);
		iso_fail("seccomp: can't handle SIGSYS", -rc);
	} else if ((rc = seccomp_load(f))) {
		seccomp_release(f);
		iso_fail("seccomp: can't load the filter", -rc);
	} else {
		seccomp_release(f);
		info("Sandboxed: seccomp profile %s, %i system calls allowed",
		     isolation_profile_name(iso.profile),
		     isolation_profile_count(iso.profile));
	}
	if (iso.missing[0])
		warn("Sandbox incomplete (--sandbox-best-effort), without: %s",
		     iso.missing);

#ifdef PASST_TEST_HOOKS
	iso_test_hook();
#endif
}
