/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rst_owed.h - RSTs the guest is still owed for connections that are
 * gone (rst_owed.c); above seg.h, below close.h.
 */
#ifndef TCP_RST_OWED_H
#define TCP_RST_OWED_H

#include <stdbool.h>
#include <stdint.h>

#include "flow_common.h"

struct ctx;
struct tcp_conn;

/**
 * struct tcp_rst_owed - a RST the guest should have had for a connection
 *			 that is gone (rst_owed.c, tcp_rst_owe())
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

void tcp_rst_owe(const struct tcp_conn *conn);
void tcp_rst_owed_flush(struct ctx *c);
unsigned tcp_rst_owed_get(const struct tcp_rst_owed **list);
void tcp_rst_owed_clear(void);

#endif /* TCP_RST_OWED_H */
