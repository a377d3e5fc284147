/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tcp_internal.h - what tcp.c shares with tcp/migrate.c, and nobody else.
 */
#ifndef TCP_TCP_INTERNAL_H
#define TCP_TCP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp/tcp_conn.h"

struct ctx;

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

extern bool tcp_peek_offset_ok;

/**
 * struct tcp_rst_owed - a RST the guest should have had for a connection
 *			 that is gone (tcp.c, tcp_rst_owe())
 * @key:	the connection's flow key
 * @seq:	our sequence number towards the guest (the RST's)
 * @ack:	the next sequence number from the guest (the RST's ACK)
 * @inbound:	the connection came from a peer
 * @at:		when it was owed, ms
 */
struct tcp_rst_owed {
	struct flow_key key;
	uint32_t seq, ack;
	bool inbound;
	uint64_t at;
};

struct tcp_conn *tcp_conn_at(unsigned idx);
uint16_t tcp_wnd_offered(const struct tcp_conn *conn);
int tcp_send_ctl(struct ctx *c, struct tcp_conn *conn, uint8_t flags,
		 uint32_t seq);
void tcp_ack_now(struct ctx *c, struct tcp_conn *conn);
void tcp_close(struct ctx *c, struct tcp_conn *conn, bool rst);
void tcp_rst(struct ctx *c, struct tcp_conn *conn);
int tcp_data_to_guest(struct ctx *c, struct tcp_conn *conn);
int tcp_sock_sync(struct ctx *c, struct tcp_conn *conn);
void tcp_sock_tune(int s);
unsigned tcp_rst_owed_get(const struct tcp_rst_owed **list);
void tcp_rst_owed_clear(void);

#endif /* TCP_TCP_INTERNAL_H */
