/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate.h - TCP connections across a live migration (tcp/migrate*.c)
 */
#ifndef TCP_MIGRATE_H
#define TCP_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;
struct mig_buf;
struct mig_stream_in;

/* Source */
void tcp_migrate_listen(struct ctx *c, bool on);
bool tcp_migrate_listen_paused(void);
int tcp_migrate_source_hold(struct ctx *c);
void tcp_migrate_source_write(struct ctx *c, struct mig_buf *b);
unsigned tcp_migrate_source_resume(struct ctx *c, bool give_up,
				   unsigned *waiting);
unsigned tcp_migrate_movable(void);
unsigned tcp_migrate_source_release(struct ctx *c);
unsigned tcp_migrate_source_unborn(struct ctx *c);
unsigned tcp_migrate_held(void);

/* Target */
int tcp_migrate_target_check(const struct mig_stream_in *s, char *why,
			     size_t whylen);
int tcp_migrate_target(struct ctx *c, struct mig_stream_in *s, uint8_t **buf);
unsigned tcp_migrate_parked(void);
unsigned tcp_migrate_target_release(struct ctx *c, unsigned *reset,
				    void (*before_off)(struct ctx *c),
				    bool give_up);
unsigned tcp_migrate_target_waiting(void);
void tcp_migrate_target_retry(struct ctx *c);
void tcp_migrate_target_timer(struct ctx *c, uint64_t now);
unsigned tcp_migrate_target_drop(struct ctx *c);
void tcp_migrate_poke_timer(struct ctx *c, uint64_t now);
unsigned tcp_migrate_poke(struct ctx *c);
void tcp_migrate_repair_retry(struct ctx *c);

#endif /* TCP_MIGRATE_H */
