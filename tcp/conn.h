/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conn.h - tcp/'s lowest layer (conn.c): a connection in the flow table,
 * its socket's events, its retransmission timer.
 */
#ifndef TCP_CONN_H
#define TCP_CONN_H

#include <stdint.h>

struct ctx;
struct tcp_conn;

struct tcp_conn *tcp_conn_at(unsigned idx);
unsigned tcp_idx(const struct tcp_conn *conn);
const void *tcp_gaddr(const struct tcp_conn *conn);
const void *tcp_raddr(const struct tcp_conn *conn);
uint32_t tcpm_events(const struct tcp_conn *conn);
void tcp_conn_events(struct ctx *c, struct tcp_conn *conn);
void tcp_out_wait(struct ctx *c, struct tcp_conn *conn);
void tcp_timer_arm(struct tcp_conn *conn, uint64_t now);

#endif /* TCP_CONN_H */
