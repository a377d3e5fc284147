/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * from_guest.h - guest data to the socket (from_guest.c): the pending
 * batch and the write, and what a held connection keeps; beside
 * to_guest.c and connect.c, above close.h.
 */
#ifndef TCP_FROM_GUEST_H
#define TCP_FROM_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "net/packet.h"

struct ctx;
struct pkt;
struct tcp_conn;

bool tcp_data_from_guest(struct ctx *c, struct tcp_conn *conn,
			 uint32_t seq, uint8_t flags, struct pview payload,
			 const struct pkt *p);
void tcp_data_held(struct ctx *c, struct tcp_conn *conn, uint32_t seq,
		   uint32_t ack, uint8_t flags, uint32_t wnd,
		   struct pview payload, const struct pkt *p);

#endif /* TCP_FROM_GUEST_H */
