/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * to_guest.h - socket data to the guest (to_guest.c): peek, rewind,
 * discard, sync, and the guest's ACK of it; beside from_guest.c and
 * connect.c, above close.h.
 */
#ifndef TCP_TO_GUEST_H
#define TCP_TO_GUEST_H

#include <stdbool.h>
#include <stdint.h>

struct ctx;
struct tcp_conn;

extern bool tcp_peek_offset_ok;	/* kernel supports SO_PEEK_OFF */

void tcp_quiet(struct ctx *c, struct tcp_conn *conn);
int tcp_data_later(struct ctx *c, struct tcp_conn *conn);
int tcp_sock_sync(struct ctx *c, struct tcp_conn *conn);
int tcp_data_to_guest(struct ctx *c, struct tcp_conn *conn);
int tcp_rewind(struct ctx *c, struct tcp_conn *conn);
int tcp_ack_from_guest(struct ctx *c, struct tcp_conn *conn, uint32_t ack,
		       uint32_t wnd, bool bare);

#endif /* TCP_TO_GUEST_H */
