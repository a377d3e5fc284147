/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * local.h - what the daemon answers the guest itself (local/local.c): ARP,
 * DHCP, DHCPv6, NDP and ICMP destination-unreachable messages.
 */
#ifndef LOCAL_LOCAL_H
#define LOCAL_LOCAL_H

#include <stdint.h>

struct ctx;
struct pkt;

void local_arp_input(struct ctx *c, const struct pkt *p);
void local_dhcp_input(struct ctx *c, const struct pkt *p);
void local_dhcpv6_input(struct ctx *c, const struct pkt *p);
void local_ndp_input(struct ctx *c, const struct pkt *p);
void local_guest_appeared(struct ctx *c);
void local_timer(struct ctx *c, uint64_t now);
void local_unreach(struct ctx *c, int family, uint8_t proto, const void *gaddr,
		   uint16_t gport, const void *raddr, uint16_t rport,
		   uint32_t seq, int err);

#endif /* LOCAL_LOCAL_H */
