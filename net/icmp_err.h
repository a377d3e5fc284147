/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icmp_err.h - ICMP/ICMPv6 destination-unreachable messages to the guest
 */
#ifndef NET_ICMP_ERR_H
#define NET_ICMP_ERR_H

#include <stddef.h>
#include <stdint.h>

#include "net/packet.h"

struct ctx;

/* ICMP header, the quoted IP header (IPv6's, the longer) and 8 bytes of
 * layer 4
 */
#define ICMP_ERR_MAX (ICMP_HDR_LEN + IP6_HDR_LEN + 8)

size_t icmp_err_build(const struct ctx *c, int family, uint8_t proto,
		      const void *gaddr, uint16_t gport, const void *raddr,
		      uint16_t rport, uint32_t seq, int err,
		      uint8_t msg[ICMP_ERR_MAX], void *src);

#endif /* NET_ICMP_ERR_H */
