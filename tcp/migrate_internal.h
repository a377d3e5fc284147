/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate_internal.h - what the TCP migration files share with each other,
 * and nobody else: migrate.c (both sides), migrate_src.c and
 * migrate_dump.c (the source), migrate_dst.c and migrate_poke.c (the
 * target).
 */
#ifndef TCP_MIGRATE_INTERNAL_H
#define TCP_MIGRATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel_abi.h"	/* TCP_REPAIR_WINDOW */

struct tcp_conn;

/* Our own copy of the kernel's repair structure (uapi linux/tcp.h) */
struct tcpm_window {
	uint32_t snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;
};

#define TCPM_QUEUE_NONE	0
#define TCPM_QUEUE_RECV	1
#define TCPM_QUEUE_SEND	2

/* tcpi_options: the timestamp clock counts microseconds (Linux 6.7) */
#define TCPM_TCPI_OPT_USEC_TS	64

/* Linux TCP states we look at beyond the migrated ones (tcpi_state) */
#define TCPM_TCP_CLOSE	7

/* Sockets per helper request where the daemon works on one chunk while
 * the helper takes the next (struct repair_pipe, migrate/repair.h): small
 * enough for the two to overlap, large enough that the round trips, some
 * tens of microseconds each, don't count
 */
#define TCPM_PIPE_CHUNK	128

/* Connections left in repair mode by a helper that went away or is late
 * (a poke, the release) wait that long for one, then are reset
 */
#define TCPM_STUCK_MS	30000

/* Largest piece written into a queue in one call (halved on ENOBUFS) */
#define TCPM_CHUNK	(64 * 1024)
#define TCPM_CHUNK_MIN	1024

/**
 * struct tcpm_progress - what a socket tells of its peer (TCP_INFO)
 * @segs_in:		segments received
 * @unacked:		segments sent and not acknowledged
 * @bytes_acked:	bytes the peer acknowledged since the socket began
 * @bytes_received:	bytes received since the socket began
 */
struct tcpm_progress {
	uint32_t segs_in;
	uint32_t unacked;
	uint64_t bytes_acked;
	uint64_t bytes_received;
};

/* migrate_common.c: both sides */
int tcpm_progress(int s, struct tcpm_progress *pr);
void tcpm_rto_cap(int s, bool on);
int tcpm_filter_attach(int s);
bool tcpm_filtered(int s);
void tcpm_filter_detach(int s);
int tcpm_deaf(int s, int family, bool on);
int tcpm_queue(int s, int q);
int tcpm_get_u32(int s, int opt, uint32_t *v);
int tcpm_get_window(int s, struct tcpm_window *w);
bool tcpm_fin_rcvd(uint8_t st);
bool tcpm_in_repair(int s);
ssize_t tcpm_fill(int s, const uint8_t *p, uint32_t len);
unsigned tcpm_lap(uint64_t *t);

/* migrate_src.c: the source */
bool tcpm_saved_window(const struct tcp_conn *conn, uint32_t *wnd);
bool tcpm_is_held(const struct tcp_conn *conn);
void tcpm_ts_freeze(const struct tcp_conn *conn, uint32_t ts, bool us);

/* migrate_poke.c: poking the peers of restored sockets */
void tcpm_poke_end(struct ctx *c);
void tcpm_poke_start(const int *fds, const unsigned *idx, const bool *cap,
		     unsigned n);

#endif /* TCP_MIGRATE_INTERNAL_H */
