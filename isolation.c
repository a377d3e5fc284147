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
 *      per flow (FLOW_MAX) plus a small spare for the front-end's own;
 *      a lower inherited hard limit stays, with a warning.
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
 * Fail closed: if any of steps 5 to 8 or the seccomp filter can't be set
 * up, the daemon exits with one line naming what failed ("Sandbox: ..."),
 * as upstream passt does. Where that can't work (no user namespaces for
 * unprivileged users, a container that refuses seccomp() or mount()),
 * --sandbox-best-effort makes each failure a warning instead: the daemon
 * says so at start, names each part it goes without, and lists them once
 * the filter is in place ("Sandbox incomplete"). Never: run as root.
 *
 * Then, once the signal and timer descriptors exist, isolation_seccomp()
 * loads the allow-list of our mode (isolation_seccomp.c). The peer
 * credential checker of step 4 is isolation_peer.c.
 *
 * Note: some kernels refuse SO_ATTACH_FILTER (the drop filter that holds
 * connections during a migration, repair/sock.c) without CAP_NET_ADMIN.
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
#include "isolation_internal.h"

/* The user we become when started as root without --runas */
#define ISO_NOBODY	65534
/* Descriptors beyond the ones open now and one per flow */
#define ISO_FD_SPARE	128

struct iso_state iso = { .profile = ISO_PROFILE_STREAM };

/**
 * iso_fail() - a part of the sandbox can't be set up: exit, naming it, or
 *		with --sandbox-best-effort say so and go on
 * @what:	what, a phrase
 * @err:	the error, if not 0
 */
void iso_fail(const char *what, int err)
{
	size_t n = strlen(iso.missing);

	if (!iso.best_effort)
		die("Sandbox: %s%s%s", what, err ? ": " : "",
		    err ? strerror(err) : "");
	warn("Sandbox: %s%s%s; going on without it (--sandbox-best-effort)",
	     what, err ? ": " : "", err ? strerror(err) : "");
	snprintf(iso.missing + n, sizeof(iso.missing) - n, "%s%s",
		 n ? "; " : "", what);
}

/**
 * iso_max_fd() - highest open descriptor, from /proc/self/fd
 *
 * Return: the descriptor, -1 if /proc/self/fd can't be read
 */
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

/**
 * iso_rlimits() - no core dumps, open files matched to the flow table
 *
 * The limit of open files is raised to what we have plus the flow table's
 * worth, where the hard limit allows; below it, a warning says how many
 * connections are left room for.
 */
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
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
		/* Raising a hard limit takes CAP_SYS_RESOURCE in the initial
		 * user namespace, which pods don't give: say what it costs
		 */
		info("Open files: the inherited hard limit of %llu leaves "
		     "room for about %llu connections, not %u",
		     (unsigned long long)rl.rlim_max,
		     (unsigned long long)(rl.rlim_max > (rlim_t)max +
					  1 + ISO_FD_SPARE ?
					  rl.rlim_max - max - 1 - ISO_FD_SPARE :
					  0), FLOW_MAX);
		want = rl.rlim_max;
	}
	rl.rlim_cur = rl.rlim_max = want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		warn_perror("RLIMIT_NOFILE");
	else
		debug("Open files limited to %llu", (unsigned long long)want);
}

/**
 * iso_caps_set() - make some capabilities effective and permitted, only
 * @caps:	the capabilities
 * @n:		how many
 *
 * Return: 0 or -errno
 */
int iso_caps_set(const cap_value_t *caps, int n)
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

/**
 * iso_proc_write() - write @s to /proc/self/@file
 * @file:	name of the file under /proc/self
 * @s:		string to write
 *
 * Return: 0 or -errno
 */
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

/**
 * iso_userns() - new user namespace, our own uid and gid mapped to themselves
 *
 * Return: true if we are in it, false if we go on without it
 *	(--sandbox-best-effort)
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

/**
 * iso_other_ns() - mount, IPC and UTS namespaces, each alone if together fails
 *
 * Return: true if the mount namespace was created
 */
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

/**
 * iso_pivot() - empty read-only tmpfs as /, old root detached
 *
 * Return: 0 or -errno
 */
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
		if (v == CAP_NET_ADMIN && iso.keep_net_admin)
			continue;
		if (cap_drop_bound(v) && !rc)
			rc = -errno;
	}
	return rc;
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
	iso.root = geteuid() == 0;
	iso.uid = c->runas ? c->runas_uid : iso.root ? ISO_NOBODY : geteuid();
	iso.gid = c->runas ? c->runas_gid : iso.root ? ISO_NOBODY : getegid();
	iso.best_effort = c->sandbox_best_effort;
	if (iso.best_effort)
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
	if (iso.root && fchown(fd, iso.uid, iso.gid))
		warn_perror("can't hand the pid file to user %u",
			    (unsigned)iso.uid);
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
	iso.keep_net_admin = c->repair_mode == REPAIR_MODE_DIRECT;
	helper = c->repair_mode == REPAIR_MODE_HELPER;
	if (c->mode == MODE_STREAM)
		iso.profile = ISO_PROFILE_STREAM;
	else if (iso.keep_net_admin)
		iso.profile = ISO_PROFILE_VU_DIRECT;
	else if (helper)
		iso.profile = ISO_PROFILE_VU_MIGRATE;
	else
		iso.profile = ISO_PROFILE_VU;

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
		if (root &&
		    (rc = iso_caps_set(need, iso.keep_net_admin ? 3 : 2)))
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
	if (iso.keep_net_admin)
		info("No user namespace: it would take CAP_NET_ADMIN away");
	else
		userns = iso_userns();
	iso_peer_userns(userns);
	mnt = iso_other_ns();

	/* 6. */
	if (mnt && (rc = iso_pivot()))
		iso_fail("can't pivot into an empty root", -rc);
	else if (!mnt)
		iso_fail("no empty root without a mount namespace", 0);

	/* 7. */
	if ((rc = iso_bounding()))
		iso_fail("can't empty the capability bounding set", -rc);
	if (iso.keep_net_admin) {
		keep = &need[2];
		nkeep = 1;
	}
	if ((rc = iso_caps_set(keep, nkeep)))
		iso_fail("can't drop capabilities", -rc);
	if (cap_reset_ambient() && errno != EINVAL)
		iso_fail("can't clear ambient capabilities", errno);
	if (iso.keep_net_admin)
		info("Keeping CAP_NET_ADMIN: direct TCP_REPAIR (--repair-path "
		     "none)");

	/* 8. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		iso_fail("can't set no_new_privs", errno);
	if (!ISO_SAN && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		iso_fail("can't make the process not dumpable", errno);
	rmfile_seal();
}
