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
 *      sit in an empty root, so we open each one's directory now
 *      (O_PATH) and isolation_unlink() later removes the file with
 *      unlinkat() on that descriptor. Unlinking still needs write and
 *      search permission on the directory for the user we become: when
 *      we start as root, the files themselves are handed to that user
 *      (fchownat(); the pid file, written by the parent as we fork, with
 *      isolation_chown_fd()), so that a sticky directory (/tmp) or one
 *      owned by that user (libvirt's) lets us remove them. The repair
 *      helper socket keeps root's group with mode 0660: passt-repair
 *      connects as root but without CAP_DAC_OVERRIDE.
 *   2. Limits: no core dumps; open files bounded by what is open now
 *      (forwarded listeners included, see fwd_listen_init()) plus one
 *      per flow (FLOW_MAX) plus a small spare for the front-end's own.
 *   3. Identity: started as root, we become -e/--runas, or nobody
 *      (65534) without it; root as the target is refused, and so is a
 *      switch that could be undone. PR_SET_KEEPCAPS carries the few
 *      capabilities the next steps need across setuid().
 *   4. Namespaces: a new user namespace (unprivileged, where the kernel
 *      allows it), then new mount, IPC and UTS namespaces. The user
 *      namespace is skipped when we keep CAP_NET_ADMIN for direct
 *      TCP_REPAIR: it would take that capability away from our network
 *      namespace. Without a user namespace, the kept CAP_SYS_ADMIN
 *      (root only) creates the others.
 *   5. Root: an empty, read-only tmpfs (4 KiB, mode 0555) becomes /
 *      with pivot_root(), the old root is detached.
 *   6. Capabilities (libcap): the bounding set is emptied and every set
 *      (effective, permitted, inheritable, ambient) is cleared. The one
 *      exception is CAP_NET_ADMIN with --repair-path none while we hold
 *      it at start (direct TCP_REPAIR): then it stays in the effective,
 *      permitted and bounding sets, and the log says so. With a helper
 *      socket, we clear it and use the helper (repair_direct_off()).
 *   7. no_new_privs, not dumpable.
 *
 *  isolation_seccomp(), once the signal and timer descriptors exist: a
 *  libseccomp allow-list, one profile per mode (stream, vhost-user,
 *  vhost-user with migration: a repair helper socket or direct
 *  TCP_REPAIR), built from the calls the code makes after this point
 *  (found by building with -DISOLATION_SECCOMP_LOG, which turns the
 *  default action into SCMP_ACT_LOG, running the test suites and reading
 *  the kernel's audit lines).
 *  Anything else kills the process (SCMP_ACT_KILL_PROCESS). The table
 *  below says why each entry is there.
 *
 * Builds with -DPASST_TEST_HOOKS (make's test flavour, never the plain
 * build) honour PASST_TEST_FORBIDDEN_SYSCALL=NAME: right after the filter
 * is loaded, that call is made, so a test can watch the kernel kill us.
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
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/sockios.h>
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
#include "log.h"
#include "migrate/repair.h"

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

/* The user we become when started as root without --runas */
#define ISO_NOBODY	65534
/* Descriptors beyond the ones open now and one per flow */
#define ISO_FD_SPARE	128

/* Directories of the files we remove at exit, kept open across the pivot */
#define ISO_DIRS_MAX	4
static struct {
	char dir[PATH_MAX];
	int fd;
} iso_dirs[ISO_DIRS_MAX];
static int iso_dirs_n;

/* Set by isolation_check(): started as root, who we'll become */
static bool iso_root;
static uid_t iso_uid;
static gid_t iso_gid;

static enum iso_profile iso_profile_sel = ISO_PROFILE_STREAM;
static bool iso_keep_net_admin;

/* Split @path into directory (@dir) and last component; NULL if none */
static const char *iso_split(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!path[0])
		return NULL;
	if (!slash) {
		snprintf(dir, size, ".");
		return path;
	}
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= size || !slash[1])
		return NULL;
	memcpy(dir, path, len);
	dir[len] = 0;
	return slash + 1;
}

/* Keep @path's directory open; hand the file to @uid/@gid if we are root,
 * with mode @mode if not 0
 */
static void iso_keep(const char *path, bool chown_it, uid_t uid, gid_t gid,
		     mode_t mode)
{
	char dir[PATH_MAX];
	const char *base = iso_split(path, dir, sizeof(dir));
	int i, fd = -1;

	if (!base)
		return;
	for (i = 0; i < iso_dirs_n; i++) {
		if (!strcmp(iso_dirs[i].dir, dir)) {
			fd = iso_dirs[i].fd;
			break;
		}
	}
	if (fd < 0 && iso_dirs_n < ISO_DIRS_MAX) {
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			warn_perror("can't keep directory %s for clean-up", dir);
			return;
		}
		snprintf(iso_dirs[iso_dirs_n].dir, PATH_MAX, "%s", dir);
		iso_dirs[iso_dirs_n++].fd = fd;
	}
	if (fd < 0 || !chown_it)
		return;
	/* The mode first: a helper may connect at any moment, and between
	 * the two calls the file must stay writable for it (root's group)
	 */
	if (mode && fchmodat(fd, base, mode, 0) && errno != ENOENT)
		warn_perror("can't set the mode of %s", path);
	if (fchownat(fd, base, uid, gid, AT_SYMLINK_NOFOLLOW) && errno != ENOENT)
		warn_perror("can't hand %s to user %u", path, (unsigned)uid);
}

/**
 * isolation_unlink() - remove a file we created, also from inside the sandbox
 * @path:	path as given at start-up
 *
 * Uses the directory descriptor kept by isolation_drop() if there is one,
 * the path itself otherwise (before the drop, or a directory not kept).
 *
 * Return: 0 or -errno
 */
int isolation_unlink(const char *path)
{
	char dir[PATH_MAX];
	const char *base = iso_split(path, dir, sizeof(dir));
	int i;

	if (!base)
		return -EINVAL;
	for (i = 0; i < iso_dirs_n; i++) {
		if (!strcmp(iso_dirs[i].dir, dir))
			return unlinkat(iso_dirs[i].fd, base, 0) ? -errno : 0;
	}
	return unlink(path) ? -errno : 0;
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
		warn_perror("RLIMIT_CORE");

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
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* New user namespace, our own uid and gid mapped to themselves */
static bool iso_userns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];

	if (unshare(CLONE_NEWUSER)) {
		warn_perror("no new user namespace");
		return false;
	}
	/* /proc/self is root's while we aren't dumpable: briefly we are */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (iso_proc_write("uid_map", map))
		warn("user namespace: can't write uid_map");
	if (iso_proc_write("setgroups", "deny"))
		warn("user namespace: can't write setgroups");
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	if (iso_proc_write("gid_map", map))
		warn("user namespace: can't write gid_map");
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return true;
}

/* Mount, IPC, UTS namespaces (each alone if together fails); mount ns ok? */
static bool iso_other_ns(void)
{
	static const struct {
		int flag;
		const char *name;
	} ns[] = {
		{ CLONE_NEWNS, "mount" },
		{ CLONE_NEWIPC, "IPC" },
		{ CLONE_NEWUTS, "UTS" },
	};
	bool mnt = true;
	unsigned i;

	if (!unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS))
		return true;
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		if (unshare(ns[i].flag)) {
			warn_perror("no new %s namespace", ns[i].name);
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

/**
 * isolation_check() - refuse, before anything is created, to stay root
 * @c:		execution context
 */
void isolation_check(const struct ctx *c)
{
	if (c->runas && c->runas_uid == 0)
		die("--runas: refusing to run as root");
	iso_root = geteuid() == 0;
	iso_uid = c->runas ? c->runas_uid : iso_root ? ISO_NOBODY : geteuid();
	iso_gid = c->runas ? c->runas_gid : iso_root ? ISO_NOBODY : getegid();
}

/**
 * isolation_chown_fd() - hand a file we create to the user we'll become
 * @fd:		open file (the pid file, written by the parent as we fork)
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
 * @c:		execution context
 *
 * Dies if we would go on as root, or with more than we asked to keep.
 */
void isolation_drop(struct ctx *c)
{
	const cap_value_t need[] = { CAP_SYS_ADMIN, CAP_SETPCAP,
				     CAP_NET_ADMIN };
	bool root = geteuid() == 0, userns = false, mnt;
	uid_t uid = root ? ISO_NOBODY : geteuid();
	gid_t gid = root ? ISO_NOBODY : getegid();
	const cap_value_t *keep = NULL;
	int rc, nkeep = 0;

	if (c->runas) {
		uid = c->runas_uid;
		gid = c->runas_gid;
	}

	/* Direct TCP_REPAIR only without a helper socket, as configured */
	if (c->mode == MODE_VU && repair_is_direct()) {
		if (!strcmp(c->repair_path, "none"))
			iso_keep_net_admin = true;
		else
			repair_direct_off();
	}
	if (c->mode == MODE_STREAM)
		iso_profile_sel = ISO_PROFILE_STREAM;
	else if (iso_keep_net_admin ||
		 (c->repair_path[0] && strcmp(c->repair_path, "none")))
		iso_profile_sel = ISO_PROFILE_VU_MIGRATE;
	else
		iso_profile_sel = ISO_PROFILE_VU;

	/* 1. what we remove at exit */
	if (c->pid_file[0])
		iso_keep(c->pid_file, root, uid, gid, 0);
	if (c->sock_path[0] && c->fd_listen >= 0)
		iso_keep(c->sock_path, root, uid, gid, 0);
	/* The helper connects as root, without CAP_DAC_OVERRIDE: root's
	 * group may write to it, nobody else
	 */
	if (c->mode == MODE_VU && c->repair_path[0] &&
	    strcmp(c->repair_path, "none"))
		iso_keep(c->repair_path, root, uid, getegid(), 0660);
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
			warn("can't keep capabilities for set-up: %s",
			     strerror(-rc));
		info("Running as user %u, group %u", (unsigned)uid,
		     (unsigned)gid);
	}
	if (geteuid() == 0)
		die("refusing to run as root");

	/* 4. */
	if (iso_keep_net_admin)
		info("No user namespace: it would take CAP_NET_ADMIN away");
	else
		userns = iso_userns();
	mnt = iso_other_ns();

	/* 5. */
	if (mnt && (rc = iso_pivot())) {
		errno = -rc;
		warn_perror("can't pivot into an empty root");
	}

	/* 6. */
	if ((rc = iso_bounding()) && (root || userns))
		warn("can't empty the bounding set: %s", strerror(-rc));
	if (iso_keep_net_admin) {
		keep = &need[2];
		nkeep = 1;
	}
	if ((rc = iso_caps_set(keep, nkeep)))
		die("can't drop capabilities: %s", strerror(-rc));
	if (cap_reset_ambient() && errno != EINVAL)
		warn_perror("can't clear ambient capabilities");
	if (iso_keep_net_admin)
		info("Keeping CAP_NET_ADMIN: direct TCP_REPAIR (--repair-path "
		     "none)");

	/* 7. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		die_perror("PR_SET_NO_NEW_PRIVS");
	if (!ISO_SAN && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		die_perror("PR_SET_DUMPABLE");
}

/*
 * The allow-lists. One row per syscall (or per allowed argument value of
 * one); @prof is the set of profiles that allow it; @arg >= 0 restricts
 * argument number @arg: (value & @mask) == @val.
 */
#define P_ST	(1U << ISO_PROFILE_STREAM)
#define P_VU	(1U << ISO_PROFILE_VU)
#define P_MIG	(1U << ISO_PROFILE_VU_MIGRATE)
#define P_ALL	(P_ST | P_VU | P_MIG)
#define P_VUS	(P_VU | P_MIG)

struct iso_rule {
	const char *name;
	unsigned prof;
	int arg;
	uint64_t mask, val;
	const char *why;
};

#define NOARG	-1, 0, 0

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
	{ "unlinkat", P_ALL, NOARG,
	  "isolation_unlink(): pid, socket files at exit, kept directories" },

	/* Sockets for flows: TCP, UDP, ICMP echo; the front-end socket */
	{ "socket", P_ALL, 0, ~0ULL, AF_INET, "flow sockets, IPv4" },
	{ "socket", P_ALL, 0, ~0ULL, AF_INET6, "flow sockets, IPv6" },
	{ "socket", P_ALL, 0, ~0ULL, AF_UNIX, "syslog(3) reconnecting" },
	{ "bind", P_ALL, NOARG, "-o/--outbound source, UDP and ICMP flows" },
	{ "connect", P_ALL, NOARG, "TCP and UDP flows to the host side" },
	{ "accept4", P_ALL, NOARG,
	  "forwarded TCP ports, front-end socket, repair helper socket" },
	{ "setsockopt", P_ALL, NOARG,
	  "SO_BINDTODEVICE, IPV6_V6ONLY, buffer sizes, TCP options" },
	{ "getsockopt", P_ALL, NOARG,
	  "SO_ERROR, TCP_INFO; after the helper: TCP_REPAIR, SO_GET_FILTER" },
	{ "shutdown", P_ALL, NOARG, "half-closing TCP (guest FIN)" },
	{ "recvmsg", P_ALL, NOARG,
	  "TCP data (peek), front-end frames, vhost-user messages + fds" },
	{ "sendmsg", P_ALL, NOARG,
	  "TCP data, stream frames, vhost-user replies, repair requests" },
	{ "recvfrom", P_ALL, NOARG, "recv(): ICMP replies, front-end, helper" },
	{ "sendto", P_ALL, NOARG,
	  "UDP and ICMP to the host, syslog(3), send() of the announcement "
	  "after a migration (migrate/announce.c: a packet socket opened "
	  "before the sandbox, nothing else is needed for it)" },
	{ "recvmmsg", P_ALL, NOARG, "UDP datagrams in batches" },
	{ "ioctl", P_ALL, 1, ~0ULL, SIOCINQ,
	  "SIOCINQ: TCP bytes not read yet; migration's receive queue" },

	/* The stream front-end's output, by reference (tap/stream.c) */
	{ "sendfile", P_ST, NOARG,
	  "frames from the output buffer's memfd into the socket" },
	{ "ioctl", P_ST, 1, ~0ULL, SIOCOUTQ,
	  "SIOCOUTQ: what the front-end hasn't read of the output buffer" },
	{ "fallocate", P_ST, NOARG,
	  "new pages for the output buffer when a front-end leaves" },

	/* vhost-user: guest memory and the migration state pipe */
	{ "mmap", P_VUS, 2, PROT_EXEC, 0,
	  "guest memory regions; malloc() for migration (never PROT_EXEC)" },
	{ "munmap", P_VUS, NOARG, "guest memory regions, free()" },
#ifdef __NR_newfstatat
	{ "newfstatat", P_VUS, NOARG,
	  "vu_fd_check(): fstat() of a memory region's fd, as glibc makes it" },
#else
	{ "fstatat64", P_VUS, NOARG,
	  "vu_fd_check(): fstat() of a memory region's fd, as glibc makes it" },
#endif
	{ "brk", P_VUS, NOARG, "malloc(): migration stream buffers" },
	{ "mremap", P_VUS, NOARG, "realloc(): migration stream buffers" },
	{ "fcntl", P_VUS, 1, ~0ULL, F_GETFL, "migration pipe flags" },
	{ "fcntl", P_VUS, 1, ~0ULL, F_SETFL, "migration pipe non-blocking" },

	/* Migration with TCP_REPAIR: the helper round trip, the sockets */
	{ "poll", P_MIG, NOARG, "waiting for the repair helper's answer" },
	{ "getsockname", P_MIG, NOARG, "migrated connection: local address" },
	{ "getpeername", P_MIG, NOARG, "migrated connection: peer address" },
	{ "ioctl", P_MIG, 1, ~0ULL, SIOCOUTQ,
	  "migration: bytes in the send queue" },
	{ "ioctl", P_MIG, 1, ~0ULL, SIOCOUTQNSD,
	  "migration: bytes in the send queue not sent yet" },
};

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

/**
 * isolation_profile_name() - name of a seccomp profile, for logs and tests
 * @p:		profile
 *
 * Return: static string
 */
const char *isolation_profile_name(enum iso_profile p)
{
	static const char *const names[] = { "stream", "vhost-user",
					     "vhost-user-migrate" };

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

	for (i = 0; i < sizeof(iso_rules) / sizeof(iso_rules[0]); i++) {
		if ((iso_rules[i].prof & (1U << p)) &&
		    !strcmp(iso_rules[i].name, name))
			return true;
	}
	return false;
}

/**
 * isolation_profile_count() - distinct syscalls a profile allows here
 * @p:		profile
 *
 * Only calls that exist on this architecture count (epoll_pwait and
 * epoll_wait, fstat and newfstatat are alternatives of each other).
 *
 * Return: count
 */
int isolation_profile_count(enum iso_profile p)
{
	int nrs[sizeof(iso_rules) / sizeof(iso_rules[0])], n = 0, i, j;

	for (i = 0; i < (int)(sizeof(iso_rules) / sizeof(iso_rules[0])); i++) {
		int nr = seccomp_syscall_resolve_name(iso_rules[i].name);

		if (!(iso_rules[i].prof & (1U << p)) || nr < 0)
			continue;
		for (j = 0; j < n && nrs[j] != nr; j++)
			;
		if (j == n)
			nrs[n++] = nr;
	}
	return n;
}

/* Build the filter for @p; NULL on failure */
static scmp_filter_ctx iso_filter(enum iso_profile p, uint32_t def)
{
	scmp_filter_ctx f = seccomp_init(def);
	unsigned i;
	int rc = 0;

	if (!f)
		return NULL;
	for (i = 0; !rc && i < sizeof(iso_rules) / sizeof(iso_rules[0]); i++) {
		const struct iso_rule *r = &iso_rules[i];
		int nr = seccomp_syscall_resolve_name(r->name);

		if (!(r->prof & (1U << p)) || nr < 0)
			continue;
		if (r->arg < 0 || ISO_SAN)
			rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0);
		else if (r->mask == ~0ULL)
			rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 1,
					      SCMP_CMP((unsigned)r->arg,
						       SCMP_CMP_EQ, r->val));
		else
			rc = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 1,
					      SCMP_CMP((unsigned)r->arg,
						       SCMP_CMP_MASKED_EQ,
						       r->mask, r->val));
	}
	for (i = 0; ISO_SAN && !rc &&
		    i < sizeof(iso_san_extra) / sizeof(iso_san_extra[0]); i++) {
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
 * isolation_seccomp() - load the allow-list of our mode; dies on failure
 * @c:		execution context (unused: isolation_drop() chose the profile)
 */
void isolation_seccomp(const struct ctx *c)
{
	uint32_t def = SCMP_ACT_KILL_PROCESS;
	scmp_filter_ctx f;
	int rc;

	(void)c;
#ifdef ISOLATION_SECCOMP_LOG
	def = SCMP_ACT_LOG;	/* development: find missing entries */
#endif
	f = iso_filter(iso_profile_sel, def);
	if (!f)
		die_perror("seccomp: can't build the %s profile",
			   isolation_profile_name(iso_profile_sel));
	if ((rc = seccomp_load(f))) {
		errno = -rc;
		die_perror("seccomp: can't load the filter");
	}
	seccomp_release(f);
	info("Sandboxed: seccomp profile %s, %i system calls allowed",
	     isolation_profile_name(iso_profile_sel),
	     isolation_profile_count(iso_profile_sel));

#ifdef PASST_TEST_HOOKS
	{
		const char *s = getenv("PASST_TEST_FORBIDDEN_SYSCALL");

		if (s && *s) {
			int nr = seccomp_syscall_resolve_name(s);

			info("Test hook: calling %s (%i)", s, nr);
			syscall(nr, 0, 0, 0, 0, 0, 0);
			err("Test hook: %s returned", s);
		}
	}
#endif
}
