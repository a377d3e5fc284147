/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * connect.h - connection set-up (connect.c): the guest's SYN and its
 * options, connect() and its outcome, half-open reclaim, the listeners
 * and their pause during a migration; beside to_guest.c and
 * from_guest.c, above close.h.
 */
#ifndef TCP_CONNECT_H
#define TCP_CONNECT_H

#include <stdbool.h>
#include <stdint.h>

#include "net/packet.h"

struct ctx;
struct flow_key;
struct pkt;
struct tcp_conn;

void tcp_parse_syn_opts(struct pview opts, uint16_t *mss, int *ws);
uint16_t tcp_mss_link(const struct ctx *c, int family);
void tcp_sock_tune(int s);
void tcp_listen_pause(bool paused);
bool tcp_listen_paused(void);
void tcp_conn_from_guest(struct ctx *c, const struct pkt *p,
			 const struct flow_key *k, uint32_t seq,
			 struct pview opts);
void tcp_connect_failed(struct ctx *c, struct tcp_conn *conn, int e);
void tcp_connect_done(struct ctx *c, struct tcp_conn *conn);

#endif /* TCP_CONNECT_H */
