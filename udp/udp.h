/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * udp.h - UDP translation between the guest and host sockets
 */
#ifndef UDP_UDP_H
#define UDP_UDP_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"

struct ctx;
struct pkt;
struct pview;
struct flow_key;

/* A flow without datagrams for this long is closed (like conntrack) */
#define UDP_IDLE_MS (180 * 1000ULL)
/* Datagrams read from a socket per event */
#define UDP_BATCH 32

int udp_flow_key(const struct pkt *p, struct flow_key *k,
		 struct pview *payload);
void udp_input(struct ctx *c, const struct pkt *p);
void udp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void udp_timer(struct ctx *c, uint64_t now);

#endif /* UDP_UDP_H */
