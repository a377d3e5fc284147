/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * packet.h - bounds-checked views of untrusted frames, and the one parser
 * that turns an Ethernet frame into layer-3/layer-4 views.
 *
 * Every byte that comes from the guest is read through a struct pview:
 * a (pointer, length) pair whose accessors return NULL rather than reach
 * past the end. No other code does pointer arithmetic on guest input; it
 * asks pv_at() for a header of a given size at a given offset instead.
 */
#ifndef NET_PACKET_H
#define NET_PACKET_H

#include <net/ethernet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct pview - bounds-checked view of untrusted bytes
 * @p:		first byte, NULL for an empty or invalid view
 * @len:	number of bytes
 */
struct pview {
	const uint8_t *p;
	size_t len;
};

static inline struct pview pv_make(const void *p, size_t len)
{
	struct pview v = { p, p ? len : 0 };
	return v;
}

/* pv_at() - @len bytes at @off, or NULL if they are not all inside @v */
static inline const void *pv_at(struct pview v, size_t off, size_t len)
{
	if (!v.p || off > v.len || len > v.len - off)
		return NULL;
	return v.p + off;
}

/* pv_sub() - sub-view of @len bytes at @off; empty view if out of range */
static inline struct pview pv_sub(struct pview v, size_t off, size_t len)
{
	const void *p = pv_at(v, off, len);

	return pv_make(p, p ? len : 0);
}

/* pv_tail() - everything from @off on; empty view if @off is past the end */
static inline struct pview pv_tail(struct pview v, size_t off)
{
	if (!v.p || off > v.len)
		return pv_make(NULL, 0);
	return pv_make(v.p + off, v.len - off);
}

static inline bool pv_u8(struct pview v, size_t off, uint8_t *out)
{
	const uint8_t *b = pv_at(v, off, 1);

	if (!b)
		return false;
	*out = b[0];
	return true;
}

/* Big-endian (network order) reads */
static inline bool pv_be16(struct pview v, size_t off, uint16_t *out)
{
	const uint8_t *b = pv_at(v, off, 2);

	if (!b)
		return false;
	*out = (uint16_t)(b[0] << 8 | b[1]);
	return true;
}

static inline bool pv_be32(struct pview v, size_t off, uint32_t *out)
{
	const uint8_t *b = pv_at(v, off, 4);

	if (!b)
		return false;
	*out = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
	return true;
}

/* Header lengths: Ethernet, and IP without options or extension headers */
#define ETH_ADDR_LEN ETH_ALEN	/* a MAC address: 6, as struct ctx's */
#define ETH_HDR_LEN 14
#define IP4_HDR_LEN 20
#define IP6_HDR_LEN 40
#define ETHTYPE_IP 0x0800
#define ETHTYPE_ARP 0x0806
#define ETHTYPE_IPV6 0x86dd

/**
 * struct pkt - a parsed guest frame
 * @frame:	the whole Ethernet frame
 * @eth_dst:	destination MAC (points into @frame)
 * @eth_src:	source MAC (points into @frame)
 * @ethertype:	EtherType, host order (VLAN tags are not accepted)
 * @l3:		IPv4/IPv6 header and payload, trimmed to the IP length;
 *		for ARP, the ARP packet
 * @family:	AF_INET, AF_INET6, or 0 for non-IP
 * @src4, @dst4, @src6, @dst6: addresses, per @family
 * @ttl:	IPv4 TTL or IPv6 hop limit
 * @proto:	layer-4 protocol (after IPv6 extension headers)
 * @l4:		layer-4 header and payload
 * @frag:	true for IP fragments (not reassembled: dropped by users)
 * @tail_len:	bytes of the IP packet past @frame (pkt_parse_part() only)
 * @tail:	where they are, set by the caller: the pieces after @frame
 * @ntail:	number of pieces at @tail
 */
struct iovec;
struct pkt {
	struct pview frame;
	const uint8_t *eth_dst, *eth_src;
	uint16_t ethertype;
	struct pview l3;
	int family;
	struct in_addr src4, dst4;
	struct in6_addr src6, dst6;
	uint8_t ttl;
	uint8_t proto;
	struct pview l4;
	bool frag;
	size_t tail_len;
	const struct iovec *tail;
	unsigned ntail;
};

int pkt_parse(const void *frame, size_t len, struct pkt *p);
int pkt_parse_part(const void *head, size_t hlen, size_t len,
		   struct pkt *p);

/* Offsets and sizes of the L4 headers we look at */
#define UDP_HDR_LEN 8
#define TCP_HDR_LEN 20		/* without options */
#define ICMP_HDR_LEN 8

void udp_hdr_set(uint8_t *uh, uint16_t sport, uint16_t dport, size_t plen);
int pkt_udp(const struct pkt *p, uint16_t *sport, uint16_t *dport,
	    struct pview *payload);

#endif /* NET_PACKET_H */
