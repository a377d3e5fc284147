/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ndp.h - NDP responder and router (RFC 4861): NA for NS, RA for RS,
 * unsolicited RAs, with prefix, MTU, RDNSS and DNSSL options.
 */
#ifndef NET_NDP_H
#define NET_NDP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;
struct pkt;

/* Period of unsolicited Router Advertisements (MaxRtrAdvInterval default) */
#define NDP_RA_INTERVAL_MS (600 * 1000)
/* Router Lifetime we announce: the largest RFC 4861 allows */
#define NDP_ROUTER_LIFETIME 9000
/* Largest RA we build: fits the IPv6 minimum MTU with its header */
#define NDP_RA_MAX (1280 - 40)

size_t ndp_build_ra(const struct ctx *c, uint8_t *out, size_t cap);
size_t ndp_build_na(const struct ctx *c, const struct in6_addr *target,
		    uint8_t *out, size_t cap);
void ndp_router_addr(const struct ctx *c, struct in6_addr *addr);
size_t ndp_ra(const struct ctx *c, const struct in6_addr *to, uint8_t *out,
	      size_t cap, struct in6_addr *src, struct in6_addr *dst);
size_t ndp_reply(struct ctx *c, const struct pkt *p, uint8_t *out, size_t cap,
		 struct in6_addr *src, struct in6_addr *dst);

#endif /* NET_NDP_H */
