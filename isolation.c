// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * isolation.c - giving up what we don't need once set-up is done.
 *
 * Everything that needs privileges (binding the front-end socket, the
 * listening sockets of forwarded ports below 1024, opening the log, pid
 * and capture files) happens before isolation_drop(). Then, with
 * -e/--runas, we switch to that user and group for good: supplementary
 * groups are cleared first, the group before the user, and we check that
 * the switch can't be undone.
 *
 * Not here yet: seccomp and capability bounding.
 */
#include <errno.h>
#include <grp.h>
#include <unistd.h>

#include "ctx.h"
#include "isolation.h"
#include "log.h"

/**
 * isolation_drop() - switch to the -e/--runas user, if one was given
 * @c:		execution context
 *
 * Dies if the switch fails: running with more rights than asked for is
 * not an option.
 */
void isolation_drop(const struct ctx *c)
{
	if (!c->runas)
		return;
	if (geteuid() != 0 && geteuid() == c->runas_uid &&
	    getegid() == c->runas_gid)
		return;

	if (setgroups(0, NULL) && errno != EPERM)
		die_perror("--runas: can't clear supplementary groups");
	if (setgid(c->runas_gid))
		die_perror("--runas: can't change to group %u",
			   (unsigned)c->runas_gid);
	if (setuid(c->runas_uid))
		die_perror("--runas: can't change to user %u",
			   (unsigned)c->runas_uid);
	if (c->runas_uid != 0 && setuid(0) == 0)
		die("--runas: could regain root after dropping it");
	info("Running as user %u, group %u", (unsigned)c->runas_uid,
	     (unsigned)c->runas_gid);
}
