/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * udp.h - UDP translation between the guest and host sockets
 */
#ifndef UDP_UDP_H
#define UDP_UDP_H

#include <stdint.h>

#include "loop.h"

struct ctx;
struct pkt;

void udp_input(struct ctx *c, const struct pkt *p);
void udp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void udp_timer(struct ctx *c, uint64_t now);

#endif /* UDP_UDP_H */
