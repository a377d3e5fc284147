/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isolation_internal.h - what the sandbox's three parts share: dropping
 * privileges (isolation.c), the peer credential checker
 * (isolation_peer.c), the seccomp allow-lists (isolation_seccomp.c).
 * Nothing else includes it.
 */
#ifndef ISOLATION_INTERNAL_H
#define ISOLATION_INTERNAL_H

#include <stdbool.h>
#include <sys/capability.h>
#include <sys/types.h>

#include "isolation.h"

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

/* PASST_TEST_FORBIDDEN_SYSCALL for the peer credential checker */
#define ISO_TEST_CHECKER	"checker/"

/**
 * struct iso_state - what isolation_check() and isolation_drop() decided
 * @root:	started as root (isolation_check())
 * @uid:	the user we become
 * @gid:	the group we become
 * @profile:	the seccomp profile of our mode (isolation_drop())
 * @keep_net_admin: CAP_NET_ADMIN stays: direct TCP_REPAIR
 * @best_effort: --sandbox-best-effort...
 * @missing:	...and what the sandbox went without because of it
 */
struct iso_state {
	bool root;
	uid_t uid;
	gid_t gid;
	enum iso_profile profile;
	bool keep_net_admin;
	bool best_effort;
	char missing[256];
};

extern struct iso_state iso;

/* isolation.c */
void iso_fail(const char *what, int err);
int iso_caps_set(const cap_value_t *caps, int n);

/* isolation_peer.c */
void iso_peer_spawn(bool keep_stderr);
void iso_peer_userns(bool userns);

/* isolation_seccomp.c */
extern const char *const iso_san_extra[];
extern const size_t iso_san_extra_n;
#ifdef PASST_TEST_HOOKS
void iso_test_call(const char *spec, bool say);
#endif

#endif /* ISOLATION_INTERNAL_H */
