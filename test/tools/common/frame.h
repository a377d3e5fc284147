/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * frame.h - what the test tools that play the guest need to write and check
 * frames byte by byte: network-order loads and stores, the Internet checksum
 * (RFC 1071) with the IPv4/IPv6 pseudo-header of TCP, UDP and ICMPv6, and
 * Ethernet, IPv4 and IPv6 header writers. Each writer fills the whole header
 * (the IPv4 one with its checksum) and returns its length, so a frame is
 * built by adding offsets. Nothing here allocates or checks: a tool that
 * sends malformed frames on purpose writes over what these wrote.
 */
#ifndef TEST_COMMON_FRAME_H
#define TEST_COMMON_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define ETH_HLEN 14
#define IP4_HLEN 20
#define IP6_HLEN 40
#define UDP_HLEN 8
#define TCP_HLEN 20

#define IP4_DF 0x4000		/* IPv4 flags and fragment offset: DF */

void put_be16(uint8_t *p, uint16_t v);
void put_be32(uint8_t *p, uint32_t v);
uint16_t get_be16(const uint8_t *p);
uint32_t get_be32(const uint8_t *p);

uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len);
uint16_t csum_fold(uint32_t sum);
uint16_t csum_l4(int family, const uint8_t *ip, const uint8_t *l4, size_t len,
		 uint8_t proto);

size_t eth_hdr_put(uint8_t *p, const uint8_t *dst, const uint8_t *src,
		   uint16_t type);
size_t ip4_hdr_put(uint8_t *p, uint8_t proto, const void *src,
		   const void *dst, uint16_t tot_len, uint16_t id,
		   uint16_t frag);
size_t ip6_hdr_put(uint8_t *p, uint8_t next, const void *src,
		   const void *dst, uint16_t plen, uint8_t hops);

#endif /* TEST_COMMON_FRAME_H */
