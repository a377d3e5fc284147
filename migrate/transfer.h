/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate.h - live migration: the device-state transfer and the source's
 * linger (migrate/transfer.c)
 */
#ifndef MIGRATE_TRANSFER_H
#define MIGRATE_TRANSFER_H

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"

struct ctx;

/* vhost-user device-state transfer directions */
#define MIGRATE_SAVE	0
#define MIGRATE_LOAD	1

/* How long SIGTERM may defer exit during the linger (the default length,
 * MIGRATE_LINGER_DEFAULT_S, is configuration: ctx.h)
 */
#define MIGRATE_LINGER_TERM_MS	 2000

/* LOAD: bytes of the stream read per loop round, at most */
#define MIGRATE_LOAD_ROUND	(256 * 1024)

/**
 * typedef migrate_done_fn - the caller of a CHECK_DEVICE_STATE that had to
 *			     wait: the transfer is over
 * @c:		execution context
 * @result:	what migrate_check() returns now: 0 or -errno
 */
typedef void (*migrate_done_fn)(struct ctx *c, int result);

int migrate_state_fd(struct ctx *c, uint32_t direction, int fd);
int migrate_check(struct ctx *c, migrate_done_fn done);
void migrate_device_started(struct ctx *c);
void migrate_front_end_gone(struct ctx *c);
bool migrate_source_done(void);
void migrate_pipe_handler(struct ctx *c, union epoll_ref ref,
			  uint32_t events);
void migrate_timer(struct ctx *c, uint64_t now);
bool migrate_signal(struct ctx *c, int sig);
void migrate_repair_changed(struct ctx *c);

#endif /* MIGRATE_TRANSFER_H */
