/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate_internal.h - what the TCP migration files share with each other,
 * and nobody else: migrate_src.c and migrate_dump.c (the source),
 * migrate_dst.c and migrate_poke.c (the target); what they do to one
 * socket is repair/sock.h's, which this includes.
 */
#ifndef TCP_MIGRATE_INTERNAL_H
#define TCP_MIGRATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "repair/sock.h"

struct tcp_conn;

/* tcpi_options: the timestamp clock counts microseconds (Linux 6.7) */
#define TCPM_TCPI_OPT_USEC_TS	64

/* Linux TCP states we look at beyond the migrated ones (tcpi_state) */
#define TCPM_TCP_CLOSE	7

/* Sockets per helper request where the daemon works on one chunk while
 * the helper takes the next (struct repair_pipe, repair/repair.h): small
 * enough for the two to overlap, large enough that the round trips, some
 * tens of microseconds each, don't count
 */
#define TCPM_PIPE_CHUNK	128

/* Connections left in repair mode by a helper that went away or is late
 * (a poke, the release) wait that long for one, then are reset
 */
#define TCPM_STUCK_MS	30000

/* migrate_src.c: the source */
bool tcpm_saved_window(const struct tcp_conn *conn, uint32_t *wnd);
bool tcpm_is_held(const struct tcp_conn *conn);
void tcpm_ts_freeze(const struct tcp_conn *conn, uint32_t ts, bool us);

/* migrate_poke.c: poking the peers of restored sockets */
void tcpm_poke_end(struct ctx *c);
void tcpm_poke_start(const int *fds, const unsigned *idx, const bool *cap,
		     unsigned n);

#endif /* TCP_MIGRATE_INTERNAL_H */
