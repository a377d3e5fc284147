/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tcp.h - TCP translation between the guest and host sockets
 */
#ifndef TCP_TCP_H
#define TCP_TCP_H

#include <stdint.h>

#include "loop.h"

struct ctx;
struct pkt;

void tcp_init(struct ctx *c);
void tcp_input(struct ctx *c, const struct pkt *p);
void tcp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void tcp_listen_handler(struct ctx *c, union epoll_ref ref);
void tcp_timer(struct ctx *c, uint64_t now);
void tcp_log_conns(void);
void tcp_defer_handler(struct ctx *c);
int tcp_flush_pending(struct ctx *c);

#endif /* TCP_TCP_H */
