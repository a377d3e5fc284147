/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rmfile.h - removing the files we created at exit, also from inside the
 * sandbox's empty root (see rmfile.c)
 */
#ifndef RMFILE_H
#define RMFILE_H

#include <stdbool.h>
#include <sys/types.h>

int rmfile_keep(const char *path, bool chown_it, uid_t uid, gid_t gid,
		mode_t mode);
void rmfile_seal(void);
int rmfile_dirfd(int i);
int rmfile_unlink(const char *path);

#endif /* RMFILE_H */
