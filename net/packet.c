// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * packet.c - parse a guest frame into bounds-checked views.
 *
 * Theory of operation: pkt_parse() walks Ethernet -> IPv4|IPv6|ARP ->
 * (IPv6 extension headers) -> layer 4, checking every length against what
 * is actually in the buffer. The IP payload is trimmed to the length the IP
 * header claims (Ethernet padding is discarded); an IP header that claims
 * more than the frame holds makes the frame invalid. IPv6 extension
 * headers (hop-by-hop, routing, destination options, fragment, AH) are
 * skipped with a bounded loop; a fragment header marks the packet as a
 * fragment, which no consumer accepts. IPv4 options are skipped via IHL.
 *
 * pkt_parse_part() parses a frame of which only a head is readable here,
 * the rest lying in other pieces (a guest's TSO segment: headers in one
 * buffer, payload in page fragments): the same checks, against the
 * frame's whole length, and every view stays inside the head. What the
 * IP packet has beyond the head is counted in tail_len, for the one
 * consumer that takes it (TCP data, written to its socket as it lies).
 *
 * The parser never writes to the frame and never follows a length it has
 * not checked. It does not verify checksums: the consumers that care
 * (nobody, for guest frames; the kernel re-checks what it receives) decide.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "packet.h"

#define IP6_MAX_EXT 8	/* more extension headers than this: drop */

/* Set p->l3 to the IP packet of @tot bytes: in @l3, or (past its end, up
 * to @extra bytes) partly in the frame's tail
 */
static int pkt_l3_set(struct pkt *p, struct pview l3, size_t tot,
		      size_t extra)
{
	if (tot > l3.len + extra)
		return -EINVAL;
	if (tot > l3.len) {
		p->l3 = l3;
		p->tail_len = tot - l3.len;
	} else {
		p->l3 = pv_sub(l3, 0, tot);
	}
	return 0;
}

/**
 * pkt_parse_ip4() - parse an IPv4 header and set the layer-4 view
 * @p:		packet being parsed
 * @l3:		the IP packet in the frame's head
 * @extra:	bytes of the packet that may lie in the frame's tail
 *
 * Return: 0 or -EINVAL
 */
static int pkt_parse_ip4(struct pkt *p, struct pview l3, size_t extra)
{
	const uint8_t *h = pv_at(l3, 0, IP4_HDR_LEN);
	uint16_t tot, frag;
	size_t ihl;

	if (!h || (h[0] >> 4) != 4)
		return -EINVAL;
	ihl = (size_t)(h[0] & 0x0f) * 4;
	tot = (uint16_t)(h[2] << 8 | h[3]);
	if (ihl < 20 || tot < ihl || pkt_l3_set(p, l3, tot, extra))
		return -EINVAL;

	p->family = AF_INET;
	memcpy(&p->src4, h + 12, 4);
	memcpy(&p->dst4, h + 16, 4);
	p->ttl = h[8];
	p->proto = h[9];
	frag = (uint16_t)(h[6] << 8 | h[7]);
	p->frag = (frag & 0x2000) || (frag & 0x1fff); /* MF or offset */
	p->l4 = pv_tail(p->l3, ihl);
	return 0;
}

/**
 * pkt_parse_ip6() - parse IPv6 and extension headers, set the layer-4 view
 * @p:		packet being parsed
 * @l3:		the IP packet in the frame's head
 * @extra:	bytes of the packet that may lie in the frame's tail
 *
 * Return: 0 or -EINVAL
 */
static int pkt_parse_ip6(struct pkt *p, struct pview l3, size_t extra)
{
	const uint8_t *h = pv_at(l3, 0, IP6_HDR_LEN);
	uint16_t plen;
	size_t off = IP6_HDR_LEN;
	uint8_t nh;
	int i;

	if (!h || (h[0] >> 4) != 6)
		return -EINVAL;
	plen = (uint16_t)(h[4] << 8 | h[5]);
	if (pkt_l3_set(p, l3, (size_t)plen + IP6_HDR_LEN, extra))
		return -EINVAL;

	p->family = AF_INET6;
	memcpy(&p->src6, h + 8, 16);
	memcpy(&p->dst6, h + 24, 16);
	p->ttl = h[7];
	nh = h[6];

	for (i = 0; i < IP6_MAX_EXT; i++) {
		const uint8_t *e;
		size_t elen;

		switch (nh) {
		case 0:   /* hop-by-hop options */
		case 43:  /* routing */
		case 60:  /* destination options */
			e = pv_at(p->l3, off, 8);
			if (!e)
				return -EINVAL;
			elen = ((size_t)e[1] + 1) * 8;
			break;
		case 51:  /* authentication header: length in 4-octet units */
			e = pv_at(p->l3, off, 8);
			if (!e)
				return -EINVAL;
			elen = ((size_t)e[1] + 2) * 4;
			break;
		case 44:  /* fragment */
			e = pv_at(p->l3, off, 8);
			if (!e)
				return -EINVAL;
			elen = 8;
			p->frag = true;
			break;
		default:
			p->proto = nh;
			p->l4 = pv_tail(p->l3, off);
			return 0;
		}
		if (!pv_at(p->l3, off, elen))
			return -EINVAL;
		nh = e[0];
		off += elen;
	}
	return -EINVAL;
}

/**
 * pkt_parse_frame() - parse a frame whose start is contiguous
 * @frame:	first bytes of the frame
 * @head:	number of bytes at @frame
 * @len:	length of the whole frame in bytes
 * @p:		parsed packet, filled in
 *
 * Return: 0 or -EINVAL
 */
static int pkt_parse_frame(const void *frame, size_t head, size_t len,
			   struct pkt *p)
{
	struct pview f = pv_make(frame, head);
	const uint8_t *eth = pv_at(f, 0, ETH_HDR_LEN);

	memset(p, 0, sizeof(*p));
	if (!eth)
		return -EINVAL;

	p->frame = f;
	p->eth_dst = eth;
	p->eth_src = eth + 6;
	p->ethertype = (uint16_t)(eth[12] << 8 | eth[13]);

	switch (p->ethertype) {
	case ETHTYPE_IP:
		return pkt_parse_ip4(p, pv_tail(f, ETH_HDR_LEN), len - head);
	case ETHTYPE_IPV6:
		return pkt_parse_ip6(p, pv_tail(f, ETH_HDR_LEN), len - head);
	default:
		if (head < len)
			return -EINVAL;
		p->l3 = pv_tail(f, ETH_HDR_LEN);
		return 0;
	}
}

/**
 * pkt_parse() - parse an Ethernet frame from the guest
 * @frame:	frame start (untrusted)
 * @len:	frame length
 * @p:		filled with views into @frame
 *
 * Return: 0 if the frame is well-formed as far as we look,
 *	   -EINVAL if it is truncated or inconsistent
 */
int pkt_parse(const void *frame, size_t len, struct pkt *p)
{
	return pkt_parse_frame(frame, len, len, p);
}

/**
 * pkt_parse_part() - parse an IP frame from the guest of which only the
 *		      start is at hand, its headers included
 * @head:	frame start (untrusted)
 * @hlen:	bytes at @head
 * @len:	frame length, at least @hlen
 * @p:		filled with views into @head; tail_len: bytes of the IP
 *		packet past @head
 *
 * Return: 0 if the frame parses as IPv4 or IPv6 with its layer-4 start in
 *	   @head, -EINVAL otherwise (not necessarily malformed: parse the
 *	   whole frame to tell)
 */
int pkt_parse_part(const void *head, size_t hlen, size_t len,
		   struct pkt *p)
{
	if (hlen > len || pkt_parse_frame(head, hlen, len, p) || !p->family ||
	    !p->l4.len)
		return -EINVAL;
	return 0;
}

/**
 * pkt_udp() - UDP ports and payload of a parsed packet
 * @p:		parsed packet
 * @sport:	set to the source port, host order
 * @dport:	set to the destination port, host order
 * @payload:	set to the payload, as the UDP length gives it (trailing
 *		bytes after it, Ethernet padding, are left out)
 *
 * Return: 0, or -EINVAL if @p isn't an unfragmented UDP packet, or its UDP
 *	   header or length is inconsistent
 */
int pkt_udp(const struct pkt *p, uint16_t *sport, uint16_t *dport,
	    struct pview *payload)
{
	uint16_t ulen;

	if (p->proto != IPPROTO_UDP || p->frag ||
	    !pv_be16(p->l4, 0, sport) || !pv_be16(p->l4, 2, dport) ||
	    !pv_be16(p->l4, 4, &ulen))
		return -EINVAL;
	if (ulen < UDP_HDR_LEN || ulen > p->l4.len)
		return -EINVAL;
	*payload = pv_sub(p->l4, UDP_HDR_LEN, ulen - UDP_HDR_LEN);
	return 0;
}

/**
 * udp_hdr_set() - write a UDP header, checksum left zero (tap fills it)
 * @uh:		room for UDP_HDR_LEN bytes
 * @sport:	source port, host order
 * @dport:	destination port, host order
 * @plen:	payload length, at most 65527
 */
void udp_hdr_set(uint8_t *uh, uint16_t sport, uint16_t dport, size_t plen)
{
	size_t len = UDP_HDR_LEN + plen;

	uh[0] = sport >> 8;
	uh[1] = sport & 0xff;
	uh[2] = dport >> 8;
	uh[3] = dport & 0xff;
	uh[4] = (len >> 8) & 0xff;
	uh[5] = len & 0xff;
	uh[6] = uh[7] = 0;
}
