/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate.h - TCP connections across a live migration (tcp/migrate.c)
 */
#ifndef TCP_MIGRATE_H
#define TCP_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

struct ctx;
struct mig_buf;
struct mig_stream_in;

int tcp_migrate_source_hold(struct ctx *c);
void tcp_migrate_source_write(struct mig_buf *b);
unsigned tcp_migrate_source_resume(struct ctx *c);
unsigned tcp_migrate_source_release(struct ctx *c);
unsigned tcp_migrate_held(void);
int tcp_migrate_target_check(const struct mig_stream_in *s, char *why,
			     size_t whylen);
unsigned tcp_migrate_target(struct ctx *c, const struct mig_stream_in *s);
void tcp_migrate_poke_timer(struct ctx *c, uint64_t now);
unsigned tcp_migrate_poke(struct ctx *c);
void tcp_migrate_target_started(void);
unsigned tcp_migrate_target_abandon(struct ctx *c);

#endif /* TCP_MIGRATE_H */
