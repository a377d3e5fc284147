/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * seg.h - the control-segment toolbox (seg.c): headers and segments
 * without payload to the guest, and the end-of-round marks; above conn.h
 * and window.h, below everything else of tcp/.
 */
#ifndef TCP_SEG_H
#define TCP_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif /* TCP_SEG_H */
