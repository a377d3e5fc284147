/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * checksum.h - the Internet checksum (RFC 1071) and the IPv4/IPv6
 * pseudo-header sums that TCP, UDP and ICMPv6 need.
 */
#ifndef NET_CHECKSUM_H
#define NET_CHECKSUM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

uint32_t csum_add(uint32_t sum, const void *buf, size_t len);
uint16_t csum_fold(uint32_t sum);
struct iovec;
uint32_t csum_add_iov(uint32_t sum, const struct iovec *iov, unsigned n,
		      size_t len);
uint16_t csum(const void *buf, size_t len, uint32_t init);
uint32_t csum_pseudo4(struct in_addr src, struct in_addr dst, uint8_t proto,
		      uint16_t len);
uint32_t csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, uint32_t len);

#endif /* NET_CHECKSUM_H */
