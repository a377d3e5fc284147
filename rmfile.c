// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * rmfile.c - removing the files we created (pid file, front-end socket,
 * repair helper socket) at exit, also from inside the sandbox.
 *
 * Theory of operation
 *
 * Once the sandbox (isolation.c) has pivoted into an empty root, no path
 * we were given at start-up leads anywhere. So, before the pivot, the
 * sandbox keeps each such file (rmfile_keep()): its directory is opened
 * (O_PATH, one descriptor per directory, shared by the files in it) and
 * the file's identity (device and inode) noted. rmfile_unlink() then
 * removes the file with unlinkat() on that descriptor, and only if the
 * entry is still the file we noted: another instance may have created a
 * file at the same path since, and that one isn't ours to remove.
 *
 * Before rmfile_seal() (the sandbox is done), a path that wasn't kept is
 * unlinked as given, as the file system is still ours; after it, such a
 * path is refused: the seccomp filter allows unlinkat() on the kept
 * directories only (rmfile_dirfd() lists them for it).
 *
 * Unlinking needs write and search permission on the directory for the
 * user we become: started as root, the sandbox hands each kept file to
 * that user (rmfile_keep()'s @chown_it), so that a sticky directory
 * (/tmp) or one owned by that user (libvirt's) lets us remove it.
 *
 * This module knows nothing of who created the files: the sandbox keeps
 * them, their owners (passt.c, tap/listen.c, repair/repair.c) remove
 * them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "rmfile.h"

/* Directories of the files we remove at exit, kept open across the pivot */
#define RMFILE_DIRS_MAX		4
static struct {
	char dir[PATH_MAX];
	int fd;
} rmfile_dirs[RMFILE_DIRS_MAX];
static int rmfile_dirs_n;

/* The files themselves: path as given, directory, identity when kept */
#define RMFILE_FILES_MAX	4
static struct {
	char path[PATH_MAX];
	int dirfd;
	bool known;
	dev_t dev;
	ino_t ino;
} rmfile_files[RMFILE_FILES_MAX];
static int rmfile_files_n;

/* rmfile_seal() was called: no more paths, only the kept directories */
static bool rmfile_sealed;

/**
 * rmfile_split() - split a path into directory and last component
 * @path:	the path
 * @dir:	the directory, filled in ("." if @path has none)
 * @size:	size of @dir
 *
 * Return: the last component in @path, NULL if there is none or @dir is too
 *	short
 */
static const char *rmfile_split(const char *path, char *dir, size_t size)
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

/**
 * rmfile_keep() - keep a file's directory open to remove the file later
 * @path:	path as given at start-up
 * @chown_it:	hand the file to @uid and @gid (started as root)
 * @uid:	user we'll become
 * @gid:	group the file gets
 * @mode:	mode the file gets with @chown_it, if not 0
 *
 * Failures to open the directory, set the mode or hand the file over are
 * logged: the daemon goes on, it only may not remove the file at exit.
 *
 * Return: 0, -EINVAL if @path has no last component, -ENOSPC if the
 *	   tables are full, -errno if the directory can't be opened
 */
int rmfile_keep(const char *path, bool chown_it, uid_t uid, gid_t gid,
		mode_t mode)
{
	char dir[PATH_MAX];
	const char *base = rmfile_split(path, dir, sizeof(dir));
	struct stat st;
	int i, fd = -1;

	if (!base)
		return -EINVAL;
	if (rmfile_files_n >= RMFILE_FILES_MAX)
		return -ENOSPC;
	for (i = 0; i < rmfile_dirs_n; i++) {
		if (!strcmp(rmfile_dirs[i].dir, dir)) {
			fd = rmfile_dirs[i].fd;
			break;
		}
	}
	if (fd < 0 && rmfile_dirs_n < RMFILE_DIRS_MAX) {
		fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			int rc = -errno;

			warn_perror("can't keep directory %s for clean-up", dir);
			return rc;
		}
		snprintf(rmfile_dirs[rmfile_dirs_n].dir, PATH_MAX, "%s", dir);
		rmfile_dirs[rmfile_dirs_n++].fd = fd;
	}
	if (fd < 0)
		return -ENOSPC;

	snprintf(rmfile_files[rmfile_files_n].path, PATH_MAX, "%s", path);
	rmfile_files[rmfile_files_n].dirfd = fd;
	if (!fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		rmfile_files[rmfile_files_n].known = true;
		rmfile_files[rmfile_files_n].dev = st.st_dev;
		rmfile_files[rmfile_files_n].ino = st.st_ino;
	}
	rmfile_files_n++;

	if (!chown_it)
		return 0;
	/* The mode first: a helper may connect at any moment, and between
	 * the two calls the file must stay writable for it (root's group)
	 */
	if (mode && fchmodat(fd, base, mode, 0) && errno != ENOENT)
		warn_perror("can't set the mode of %s", path);
	if (fchownat(fd, base, uid, gid, AT_SYMLINK_NOFOLLOW) && errno != ENOENT)
		warn_perror("can't hand %s to user %u", path, (unsigned)uid);
	return 0;
}

/**
 * rmfile_seal() - from now on, remove kept files only (the sandbox is done)
 */
void rmfile_seal(void)
{
	rmfile_sealed = true;
}

/**
 * rmfile_dirfd() - a directory kept by rmfile_keep(), for the seccomp filter
 * @i:		index, from 0
 *
 * Return: the @i-th kept directory's descriptor, -1 past the last one
 */
int rmfile_dirfd(int i)
{
	return i >= 0 && i < rmfile_dirs_n ? rmfile_dirs[i].fd : -1;
}

/**
 * rmfile_unlink() - remove a file we created, also from inside the sandbox
 * @path:	path as given at start-up
 *
 * A kept file through its directory's descriptor, and only if the entry
 * is still the file we noted (same device and inode). Any other path as
 * given, before rmfile_seal() only.
 *
 * Return: 0 or -errno (-ESTALE: the entry is another file now, -EPERM:
 *	   not kept, and sealed)
 */
int rmfile_unlink(const char *path)
{
	char dir[PATH_MAX];
	const char *base = rmfile_split(path, dir, sizeof(dir));
	struct stat st;
	int i;

	if (!base)
		return -EINVAL;
	for (i = 0; i < rmfile_files_n; i++) {
		if (strcmp(rmfile_files[i].path, path))
			continue;
		if (fstatat(rmfile_files[i].dirfd, base, &st,
			    AT_SYMLINK_NOFOLLOW))
			return -errno;
		if (rmfile_files[i].known &&
		    (st.st_dev != rmfile_files[i].dev ||
		     st.st_ino != rmfile_files[i].ino)) {
			warn("Not removing %s: another file took its place",
			     path);
			return -ESTALE;
		}
		return unlinkat(rmfile_files[i].dirfd, base, 0) ? -errno : 0;
	}
	if (rmfile_sealed)
		return -EPERM;
	return unlink(path) ? -errno : 0;
}
