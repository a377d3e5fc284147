/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icmp.h - ICMP and ICMPv6 echo, translated to unprivileged ping sockets.
 */
#ifndef ICMP_ICMP_H
#define ICMP_ICMP_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"

struct ctx;
struct pkt;

/* An echo flow with no request or reply for this long is closed */
#define ICMP_IDLE_MS (60 * 1000)
/* Replies read from one ping socket per event, at most */
#define ICMP_RECV_BATCH 32

int icmp_echo_parse(const struct pkt *p, uint16_t *id);
int icmp_reply_rewrite(int family, uint8_t *msg, size_t len, uint16_t id);
void icmp_input(struct ctx *c, const struct pkt *p);
void icmp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void icmp_timer(struct ctx *c, uint64_t now);

#endif /* ICMP_ICMP_H */
