// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hugefile.c - an unlinked file on huge pages, for a buffer that the
 * kernel reads by reference (the stream front-end's output ring).
 *
 * Theory of operation
 *
 * sendfile() from a shmem file finds the file's pages in the page cache
 * one folio at a time. A memfd lives on the kernel's internal shmem mount,
 * whose huge pages the administrator sets (transparent_hugepage/
 * shmem_enabled, often "never"): then every 4 KiB of a buffer is a folio
 * of its own, looked up, referenced and released for each send. A tmpfs
 * mounted with huge=always takes 2 MiB folios whatever shmem_enabled says
 * (unless it says "deny"), and anybody may mount one in a user namespace
 * of their own.
 *
 * hugefile_open() forks a child that makes itself a user namespace (its
 * own user and group mapped to root there, so it may create files) and a
 * mount namespace, or, where user namespaces are refused, only a mount
 * namespace (root, with CAP_SYS_ADMIN), sets up a tmpfs of the size asked
 * for with huge=always through the new mount API (fsopen(), fsconfig(),
 * fsmount(): a detached mount, attached nowhere, so no path is needed and
 * nothing propagates anywhere), creates an unlinked file in it
 * (O_TMPFILE), sizes it, and passes it back over a socket pair
 * (SCM_RIGHTS). The child then exits, and its namespaces with it; the
 * file keeps its tmpfs alive. Its memory is charged as a memfd's would be.
 *
 * Huge pages come when the pages are first touched, 2 MiB at a time, where
 * the kernel finds them (else smaller ones): the caller maps the file
 * aligned to 2 MiB so that the kernel may map them whole. Punching a hole
 * over whole 2 MiB folios takes them out of the file; the kernel doesn't
 * zero a folio that something else still references, it just lets go of
 * it (the caller punches the whole buffer, see stream/stream_out.c).
 *
 * Anything refused (no user namespaces and no CAP_SYS_ADMIN, a seccomp
 * profile, a kernel before 5.2 without the mount API or before 3.11
 * without O_TMPFILE) gives -1 and a reason: the caller falls back to a
 * memfd. So does PASST_NO_HUGEFILE=1 in the environment.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "env.h"
#include "hugefile.h"

/* Exit codes of the child, the step that failed: see hugefile_why[] */
enum {
	HF_OK, HF_NS, HF_MAP, HF_FSOPEN, HF_HUGE, HF_CREATE, HF_FILE, HF_SEND,
};

static const char *const hugefile_why[] = {
	[HF_NS]		= "no user or mount namespace",
	[HF_MAP]	= "user namespace mapping refused",
	[HF_FSOPEN]	= "no tmpfs (fsopen)",
	[HF_HUGE]	= "tmpfs options refused (huge=always)",
	[HF_CREATE]	= "tmpfs not mounted",
	[HF_FILE]	= "no file on the tmpfs",
	[HF_SEND]	= "file not passed back",
};

/* Write @s to the file at @path, all of it */
static int hugefile_write(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* In a user namespace of our own: map our user and group to root */
static int hugefile_map(uid_t uid, gid_t gid)
{
	char m[64];

	snprintf(m, sizeof(m), "0 %u 1", (unsigned)uid);
	if (hugefile_write("/proc/self/uid_map", m))
		return -1;
	/* Unprivileged, we may only map our group with setgroups() off */
	if (hugefile_write("/proc/self/setgroups", "deny") && errno != ENOENT)
		return -1;
	snprintf(m, sizeof(m), "0 %u 1", (unsigned)gid);
	return hugefile_write("/proc/self/gid_map", m);
}

/**
 * hugefile_child() - the child: pass the parent a file of @size bytes
 * @sock:	socket to the parent, for the descriptor
 * @size:	size of the file in bytes
 *
 * Return: the child's exit code, HF_OK once the file is passed
 */
static int hugefile_child(int sock, size_t size)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char buf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = "f", .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = sizeof(buf),
	};
	struct cmsghdr *cm;
	char sz[32];
	int fs, mnt, fd;

	if (!unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		if (hugefile_map(uid, gid))
			return HF_MAP;
	} else if (unshare(CLONE_NEWNS)) {
		return HF_NS;
	}

	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) < 0)
		return HF_FSOPEN;
	snprintf(sz, sizeof(sz), "%zu", size);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "huge", "always", 0) ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", sz, 0) ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", "4", 0) ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0))
		return HF_HUGE;
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC,
			   MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			   MOUNT_ATTR_NOEXEC)) < 0)
		return HF_CREATE;

	fd = openat(mnt, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		return HF_FILE;

	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &mh, 0) != 1)
		return HF_SEND;
	return HF_OK;
}

/**
 * hugefile_open() - an unlinked file on a private tmpfs with huge pages
 * @size:	its size, and the tmpfs's
 * @why:	set to the reason on failure, NULL on success
 *
 * Before the sandbox (fork(), namespaces). Single-threaded callers only.
 *
 * Return: a descriptor (close-on-exec) of a @size-byte file, or -1
 */
int hugefile_open(size_t size, const char **why)
{
	char buf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = sizeof(buf),
	};
	struct cmsghdr *cm;
	int sv[2], st, fd = -1;
	pid_t pid;

	*why = "PASST_NO_HUGEFILE";
	if (env_get()->no_hugefile)
		return -1;
	*why = "no socket pair";
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return -1;

	*why = "no child";
	pid = fork();
	if (pid < 0)
		goto out;
	if (!pid) {
		close(sv[0]);
		_exit(hugefile_child(sv[1], size));
	}

	close(sv[1]);
	sv[1] = -1;
	/* With SIGCHLD ignored, this waits for the child, then fails */
	st = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;

	/* The child is gone: what it sent is queued, or it never will be */
	if (recvmsg(sv[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) == 1 &&
	    (cm = CMSG_FIRSTHDR(&mh)) && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		*why = NULL;
	} else if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) > HF_OK &&
		   WEXITSTATUS(st) <= HF_SEND) {
		*why = hugefile_why[WEXITSTATUS(st)];
	} else {
		*why = "child failed";
	}
out:
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	return fd;
}
