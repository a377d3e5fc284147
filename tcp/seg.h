/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * seg.h - the control-segment toolbox (seg.c): headers and segments
 * without payload to the guest, the end-of-round marks, and the RSTs the
 * guest is still owed for connections that are gone; above conn.h and
 * window.h, below everything else of tcp/.
 */
#ifndef TCP_SEG_H
#define TCP_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow_common.h"

struct ctx;
struct pkt;
struct tcp_conn;

void tcp_fill_hdr(uint8_t *th, struct tcp_conn *conn, uint32_t seq,
		  uint8_t flags, uint16_t wnd, size_t hlen);
int tcp_send_ctl(struct ctx *c, struct tcp_conn *conn, uint8_t flags,
		 uint32_t seq);
void tcp_ack_now(struct ctx *c, struct tcp_conn *conn);
void tcp_rst_unknown(struct ctx *c, const struct pkt *p, uint16_t sport,
		     uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags,
		     size_t plen);
void tcp_window_update(struct ctx *c, struct tcp_conn *conn);
bool tcp_defer(struct tcp_conn *conn);
void tcp_block(struct tcp_conn *conn);
void tcp_block_back(const struct tcp_conn *conn);
bool tcp_deferred(unsigned i, struct tcp_conn **conn);
void tcp_deferred_clear(void);
bool tcp_blocked(bool clear);

/**
 * struct tcp_rst_owed - a RST the guest should have had for a connection
 *			 that is gone (tcp_rst_owe())
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

#endif /* TCP_SEG_H */
