// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * frame.c - frame and checksum helpers shared by the test tools (frame.h):
 * one copy of what framesend, tcpguest and vu-front each kept their own of.
 */
#include <sys/socket.h>
#include <string.h>

#include "frame.h"

/**
 * put_be16() - store @v at @p in network order
 * @p:	where to write two bytes
 * @v:	value
 */
void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/**
 * put_be32() - store @v at @p in network order
 * @p:	where to write four bytes
 * @v:	value
 */
void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/**
 * get_be16() - load a network-order 16-bit value
 * @p:	two bytes
 *
 * Return: the value
 */
uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/**
 * get_be32() - load a network-order 32-bit value
 * @p:	four bytes
 *
 * Return: the value
 */
uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/**
 * csum_add() - add @len bytes at @p to a ones'-complement running sum
 * @sum:	sum so far (0 to start)
 * @p:		data, as 16-bit network-order words (an odd last byte
 *		padded with zero)
 * @len:	length of @p in bytes
 *
 * Return: the new sum, not folded
 */
uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get_be16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

/**
 * csum_fold() - fold a running sum into the 16-bit checksum
 * @sum:	from csum_add()
 *
 * Return: the ones' complement of the folded sum, to store in a header (or
 * 0 if the data summed included a correct checksum)
 */
uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)(~sum & 0xffff);
}

/**
 * csum_l4() - checksum of a transport segment with its IP pseudo-header
 * @family:	AF_INET or AF_INET6: what @ip is
 * @ip:		IPv4 or IPv6 header, addresses filled in
 * @l4:		segment (its checksum field zero when computing one)
 * @len:	length of the segment in bytes
 * @proto:	protocol number for the pseudo-header (6, 17, 58)
 *
 * Return: the checksum to store, or 0 over a segment whose checksum is right
 */
uint16_t csum_l4(int family, const uint8_t *ip, const uint8_t *l4, size_t len,
		 uint8_t proto)
{
	uint32_t sum;

	if (family == AF_INET)
		sum = csum_add(0, ip + 12, 8);
	else
		sum = csum_add(0, ip + 8, 32);
	sum += (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff) + proto;
	return csum_fold(csum_add(sum, l4, len));
}

/**
 * eth_hdr_put() - write an Ethernet header
 * @p:		where to write ETH_HLEN bytes
 * @dst:	destination MAC address
 * @src:	source MAC address
 * @type:	ethertype
 *
 * Return: ETH_HLEN
 */
size_t eth_hdr_put(uint8_t *p, const uint8_t *dst, const uint8_t *src,
		   uint16_t type)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	put_be16(p + 12, type);
	return ETH_HLEN;
}

/**
 * ip4_hdr_put() - write an IPv4 header without options, TTL 64, checksum set
 * @p:		where to write IP4_HLEN bytes
 * @proto:	protocol
 * @src:	source address, 4 bytes in network order
 * @dst:	destination address, likewise
 * @tot_len:	total length the header claims
 * @id:		identification
 * @frag:	flags and fragment offset (IP4_DF, or 0)
 *
 * Return: IP4_HLEN
 */
size_t ip4_hdr_put(uint8_t *p, uint8_t proto, const void *src,
		   const void *dst, uint16_t tot_len, uint16_t id,
		   uint16_t frag)
{
	memset(p, 0, IP4_HLEN);
	p[0] = 0x45;
	put_be16(p + 2, tot_len);
	put_be16(p + 4, id);
	put_be16(p + 6, frag);
	p[8] = 64;
	p[9] = proto;
	memcpy(p + 12, src, 4);
	memcpy(p + 16, dst, 4);
	put_be16(p + 10, csum_fold(csum_add(0, p, IP4_HLEN)));
	return IP4_HLEN;
}

/**
 * ip6_hdr_put() - write an IPv6 header, traffic class and flow label zero
 * @p:		where to write IP6_HLEN bytes
 * @next:	next header
 * @src:	source address, 16 bytes
 * @dst:	destination address, 16 bytes
 * @plen:	payload length the header claims
 * @hops:	hop limit
 *
 * Return: IP6_HLEN
 */
size_t ip6_hdr_put(uint8_t *p, uint8_t next, const void *src,
		   const void *dst, uint16_t plen, uint8_t hops)
{
	memset(p, 0, IP6_HLEN);
	p[0] = 0x60;
	put_be16(p + 4, plen);
	p[6] = next;
	p[7] = hops;
	memcpy(p + 8, src, 16);
	memcpy(p + 24, dst, 16);
	return IP6_HLEN;
}
