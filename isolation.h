/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isolation.h - dropping privileges after set-up: identity, limits,
 * namespaces, an empty root, capabilities, seccomp (see isolation.c)
 */
#ifndef ISOLATION_H
#define ISOLATION_H

#include <stdbool.h>
#include <sys/types.h>

struct ctx;

/* seccomp profiles, one per mode */
enum iso_profile {
	ISO_PROFILE_STREAM = 0,
	ISO_PROFILE_VU,
	ISO_PROFILE_VU_MIGRATE,	/* repair helper socket */
	ISO_PROFILE_VU_DIRECT,	/* direct TCP_REPAIR: CAP_NET_ADMIN kept */
	ISO_PROFILES
};

void isolation_check(const struct ctx *c);
void isolation_chown_fd(int fd);
void isolation_drop(struct ctx *c);
void isolation_seccomp(void);
int isolation_peer_check(int fd, uid_t *uid);
const char *isolation_profile_name(enum iso_profile p);
bool isolation_profile_allows(enum iso_profile p, const char *name);
int isolation_profile_count(enum iso_profile p);
bool isolation_sockopt_allowed(enum iso_profile p, int level, int opt);

#endif /* ISOLATION_H */
