// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_isolation_seccomp.c - the seccomp allow-lists of isolation_seccomp.c,
 * as tables:
 * how many system calls each profile allows (printed, and kept at or
 * below upstream passt's 34: the vhost-user profile with migration is at
 * 34 since rt_sigreturn, the return from the handler that survives guest
 * memory shrinking under us), that the profiles grow (stream, then vhost-user,
 * then vhost-user with migration; vhost-user takes everything stream does
 * but the stream front-end's splicing), that what a sandboxed daemon must
 * never do (run programs, open files, create processes or namespaces,
 * change identity, trace) is in none of them, and that the migration
 * profile has what TCP_REPAIR migration calls; that the direct
 * TCP_REPAIR profile (CAP_NET_ADMIN kept) has the same calls, but lets
 * setsockopt() set only the options the daemon uses, none of those that
 * CAP_NET_ADMIN makes privileged. The filters themselves are exercised by
 * the integration tests (sandbox_*.sh), on the running daemon.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <seccomp.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "isolation.h"
#include "kernel_abi.h"

/* Upstream passt's main filter, x86_64: ours can't be larger */
#define UPSTREAM_COUNT 34

static const char *const forbidden[] = {
	"execve", "execveat", "fork", "vfork", "clone", "clone3", "ptrace",
	"open", "openat", "openat2", "creat", "unlink", "rename", "mkdir",
	"chmod", "fchmod", "chown", "fchown", "mount", "umount2",
	"pivot_root", "unshare", "setns", "setuid", "setgid", "setresuid",
	"setgroups", "capset", "prctl", "seccomp", "bpf", "kill", "tgkill",
	"process_vm_readv", "process_vm_writev", "init_module", "reboot",
	"getuid", "getpid", "socketpair", "listen", "memfd_create",
	"mprotect", "personality", "keyctl", "io_uring_setup",
};

static void test_counts_below_upstream(void **state)
{
	enum iso_profile p;

	(void)state;
	for (p = 0; p < ISO_PROFILES; p++) {
		int n = isolation_profile_count(p);

		printf("seccomp profile %-20s %2i system calls allowed "
		       "(upstream passt: %i)\n", isolation_profile_name(p), n,
		       UPSTREAM_COUNT);
		assert_true(n > 10);
		assert_true(n <= UPSTREAM_COUNT);
	}
}

static void test_profiles_nest(void **state)
{
	assert_true(isolation_profile_count(ISO_PROFILE_STREAM) <
		    isolation_profile_count(ISO_PROFILE_VU));
	assert_true(isolation_profile_count(ISO_PROFILE_VU) <
		    isolation_profile_count(ISO_PROFILE_VU_MIGRATE));
	(void)state;
}

static void test_nothing_forbidden_is_allowed(void **state)
{
	enum iso_profile p;
	unsigned i;

	(void)state;
	for (p = 0; p < ISO_PROFILES; p++) {
		for (i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++) {
			if (isolation_profile_allows(p, forbidden[i]))
				fail_msg("profile %s allows %s",
					 isolation_profile_name(p),
					 forbidden[i]);
		}
	}
}

static void test_modes_have_what_they_call(void **state)
{
	static const char *const common[] = {
		"epoll_wait", "epoll_ctl", "read", "write", "recvmsg",
		"sendmsg", "recvmmsg", "sendto", "socket", "connect",
		"setsockopt", "close", "accept4", "unlinkat", "exit_group",
		
	};
	static const char *const vu[] = { "mmap", "munmap", "fcntl", "brk",
					  "rt_sigreturn" };
	static const char *const mig[] = { "poll", "getsockname",
					   "getpeername", "ioctl" };
	static const char *const st[] = { "sendfile", "fallocate" };
	enum iso_profile p;
	unsigned i;

	(void)state;
	for (p = 0; p < ISO_PROFILES; p++)
		for (i = 0; i < sizeof(common) / sizeof(common[0]); i++)
			assert_true(isolation_profile_allows(p, common[i]));
	for (i = 0; i < sizeof(vu) / sizeof(vu[0]); i++) {
		assert_false(isolation_profile_allows(ISO_PROFILE_STREAM,
						      vu[i]));
		assert_true(isolation_profile_allows(ISO_PROFILE_VU, vu[i]));
	}
	for (i = 0; i < sizeof(mig) / sizeof(mig[0]); i++)
		assert_true(isolation_profile_allows(ISO_PROFILE_VU_MIGRATE,
						     mig[i]));
	assert_false(isolation_profile_allows(ISO_PROFILE_VU, "poll"));
	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		assert_true(isolation_profile_allows(ISO_PROFILE_STREAM, st[i]));
		assert_false(isolation_profile_allows(ISO_PROFILE_VU, st[i]));
	}
}

/* Direct TCP_REPAIR: every call of the helper profile, no more */
static void test_direct_is_migrate(void **state)
{
	static const char *const names[] = {
		"setsockopt", "getsockopt", "poll", "ioctl", "unlinkat",
		"mmap", "socket", "accept4", "newfstatat",
	};
	unsigned i;

	(void)state;
	assert_int_equal(isolation_profile_count(ISO_PROFILE_VU_DIRECT),
			 isolation_profile_count(ISO_PROFILE_VU_MIGRATE));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		enum iso_profile d = ISO_PROFILE_VU_DIRECT;
		enum iso_profile m = ISO_PROFILE_VU_MIGRATE;

		assert_int_equal(isolation_profile_allows(d, names[i]),
				 isolation_profile_allows(m, names[i]));
	}
}

/* ...but setsockopt() only for what the daemon sets */
static void test_direct_sockopts(void **state)
{
	static const int used[][2] = {
		{ SOL_SOCKET, SO_REUSEADDR }, { SOL_SOCKET, SO_BINDTODEVICE },
		{ SOL_SOCKET, SO_SNDBUF }, { SOL_SOCKET, SO_RCVBUF },
		{ SOL_SOCKET, SO_LINGER }, { SOL_SOCKET, SO_PEEK_OFF },
		{ SOL_SOCKET, SO_ATTACH_FILTER },
		{ SOL_SOCKET, SO_DETACH_FILTER },
		{ IPPROTO_IPV6, IPV6_V6ONLY }, { IPPROTO_TCP, TCP_NODELAY },
		{ IPPROTO_TCP, TCP_REPAIR }, { IPPROTO_TCP, TCP_REPAIR_QUEUE },
		{ IPPROTO_TCP, TCP_QUEUE_SEQ },
		{ IPPROTO_TCP, TCP_REPAIR_OPTIONS },
		{ IPPROTO_TCP, TCP_TIMESTAMP },
		{ IPPROTO_TCP, TCP_REPAIR_WINDOW },
		{ IPPROTO_TCP, TCP_MAXSEG }, { IPPROTO_IP, IP_MINTTL },
		{ IPPROTO_IPV6, IPV6_MINHOPCOUNT },
		{ IPPROTO_IP, IP_FREEBIND }, { IPPROTO_IPV6, IPV6_FREEBIND },
	};
	/* What CAP_NET_ADMIN (or nothing) would allow, and we never set */
	static const int never[][2] = {
		{ SOL_SOCKET, SO_MARK }, { SOL_SOCKET, SO_RCVBUFFORCE },
		{ SOL_SOCKET, SO_SNDBUFFORCE }, { SOL_SOCKET, SO_DEBUG },
		{ SOL_SOCKET, SO_PRIORITY }, { IPPROTO_IP, IP_TRANSPARENT },
		{ IPPROTO_IPV6, IPV6_TRANSPARENT },
		{ IPPROTO_TCP, TCP_MD5SIG }, { IPPROTO_TCP, TCP_ULP },
		{ IPPROTO_TCP, TCP_CONGESTION }, { SOL_SOCKET, SO_REUSEPORT },
		{ IPPROTO_IP, IP_TOS }, { IPPROTO_TCP + 1, TCP_REPAIR },
	};
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(used) / sizeof(used[0]); i++) {
		assert_true(isolation_sockopt_allowed(ISO_PROFILE_VU_DIRECT,
						      used[i][0], used[i][1]));
		assert_true(isolation_sockopt_allowed(ISO_PROFILE_VU_MIGRATE,
						      used[i][0], used[i][1]));
	}
	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		if (isolation_sockopt_allowed(ISO_PROFILE_VU_DIRECT,
					      never[i][0], never[i][1]))
			fail_msg("direct profile allows level %d option %d",
				 never[i][0], never[i][1]);
		/* Without capabilities, the kernel itself says no */
		assert_true(isolation_sockopt_allowed(ISO_PROFILE_VU_MIGRATE,
						      never[i][0],
						      never[i][1]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_below_upstream),
		cmocka_unit_test(test_profiles_nest),
		cmocka_unit_test(test_nothing_forbidden_is_allowed),
		cmocka_unit_test(test_modes_have_what_they_call),
		cmocka_unit_test(test_direct_is_migrate),
		cmocka_unit_test(test_direct_sockopts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
