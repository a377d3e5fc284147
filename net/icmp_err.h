/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icmp_err.h - ICMP/ICMPv6 destination-unreachable messages to the guest
 */
#ifndef NET_ICMP_ERR_H
#define NET_ICMP_ERR_H

#include <stdint.h>

struct ctx;

void icmp_err_unreach(struct ctx *c, int family, uint8_t proto,
		      const void *gaddr, uint16_t gport, const void *raddr,
		      uint16_t rport, uint32_t seq, int err);

#endif /* NET_ICMP_ERR_H */
