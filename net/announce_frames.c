// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * announce_frames.c - frames that announce a host's addresses on a link,
 * built into a caller's buffer, for migrate/announce.c to send on the
 * pod's interface once a migrated guest runs here.
 *
 * Theory of operation
 *
 * After a live migration the guest answers at the same addresses from
 * another host. Three frames tell the network, each from @mac (the
 * interface the guest's traffic leaves by), each broadcast or to all
 * nodes:
 *
 *  - RARP (RFC 903), "reverse request" (op 3) for @mac, no protocol
 *    addresses: what QEMU itself sends for a guest after a migration,
 *    and what OVN's activation-strategy=rarp waits for on the target
 *    chassis before it moves the port there;
 *  - gratuitous ARP (RFC 5227, section 3: an ARP request whose sender
 *    and target protocol addresses are both @addr): neighbours that
 *    cache the IPv4 address update its link-layer address;
 *  - unsolicited Neighbour Advertisement (RFC 4861, 7.2.6): to all nodes
 *    (ff02::1), from and for @addr, Override set, Solicited clear, with
 *    @mac as the Target Link-Layer Address: the same for IPv6.
 *
 * RARP and ARP frames are padded to Ethernet's 60-byte minimum, as the
 * kernel doesn't pad what a packet socket sends. Nothing here reads
 * input: these are pure builders, unit-tested in test/unit/.
 */
#include <string.h>

#include "net/announce_frames.h"
#include "net/checksum.h"
#include "net/packet.h"

static const uint8_t announce_bcast[ETH_ADDR_LEN] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff
};

/* Ethernet header: @dst, @src, @type */
static void announce_eth(uint8_t *f, const uint8_t dst[ETH_ADDR_LEN],
			 const uint8_t src[ETH_ADDR_LEN], uint16_t type)
{
	memcpy(f, dst, ETH_ADDR_LEN);
	memcpy(f + ETH_ADDR_LEN, src, ETH_ADDR_LEN);
	f[12] = type >> 8;
	f[13] = type & 0xff;
}

/**
 * announce_arp() - Ethernet/IPv4 (R)ARP body
 * @a:		where the body goes
 * @op:		operation (request, reply, reverse request...)
 * @sha:	sender hardware address
 * @spa:	sender protocol (IPv4) address
 * @tha:	target hardware address
 * @tpa:	target protocol (IPv4) address
 */
static void announce_arp(uint8_t *a, uint16_t op, const uint8_t *sha,
			 const void *spa, const uint8_t *tha, const void *tpa)
{
	a[0] = 0;		/* hardware: Ethernet */
	a[1] = 1;
	a[2] = 0x08;		/* protocol: IPv4 */
	a[3] = 0x00;
	a[4] = ETH_ADDR_LEN;
	a[5] = 4;
	a[6] = op >> 8;
	a[7] = op & 0xff;
	memcpy(a + 8, sha, ETH_ADDR_LEN);
	memcpy(a + 14, spa, 4);
	memcpy(a + 18, tha, ETH_ADDR_LEN);
	memcpy(a + 24, tpa, 4);
}

/**
 * announce_frame_rarp() - RARP reverse request for @mac, from @mac
 * @f:		buffer for the frame
 * @cap:	its size
 * @mac:	the announced (and source) link-layer address
 *
 * Return: frame length (ANNOUNCE_ETH_MIN), 0 if @cap is too small
 */
size_t announce_frame_rarp(uint8_t *f, size_t cap,
			   const uint8_t mac[ETH_ADDR_LEN])
{
	static const uint8_t zero[4];

	if (cap < ANNOUNCE_ETH_MIN)
		return 0;
	memset(f, 0, ANNOUNCE_ETH_MIN);
	announce_eth(f, announce_bcast, mac, ETHTYPE_RARP);
	announce_arp(f + 14, 3, mac, zero, mac, zero);
	return ANNOUNCE_ETH_MIN;
}

/**
 * announce_frame_garp() - gratuitous ARP request for @addr at @mac
 * @f:		buffer for the frame
 * @cap:	its size
 * @mac:	link-layer address of @addr (and source)
 * @addr:	IPv4 address announced
 *
 * Return: frame length (ANNOUNCE_ETH_MIN), 0 if @cap is too small
 */
size_t announce_frame_garp(uint8_t *f, size_t cap,
			   const uint8_t mac[ETH_ADDR_LEN],
			   struct in_addr addr)
{
	static const uint8_t zero[ETH_ADDR_LEN];

	if (cap < ANNOUNCE_ETH_MIN)
		return 0;
	memset(f, 0, ANNOUNCE_ETH_MIN);
	announce_eth(f, announce_bcast, mac, ETHTYPE_ARP);
	announce_arp(f + 14, 1, mac, &addr, zero, &addr);
	return ANNOUNCE_ETH_MIN;
}

/**
 * announce_frame_na() - unsolicited Neighbour Advertisement of @addr at
 *			 @mac, to all nodes
 * @f:		buffer for the frame
 * @cap:	its size
 * @mac:	link-layer address of @addr (and source)
 * @addr:	IPv6 address announced, also the source address
 *
 * Return: frame length (ANNOUNCE_NA_LEN), 0 if @cap is too small
 */
size_t announce_frame_na(uint8_t *f, size_t cap,
			 const uint8_t mac[ETH_ADDR_LEN],
			 const struct in6_addr *addr)
{
	static const uint8_t all_nodes_mac[ETH_ADDR_LEN] = {
		0x33, 0x33, 0x00, 0x00, 0x00, 0x01
	};
	struct in6_addr all_nodes = { .s6_addr = { 0xff, 0x02, [15] = 1 } };
	uint8_t *ip6 = f + ETH_HDR_LEN, *na = ip6 + IP6_HDR_LEN;
	const size_t plen = 24 + 8;
	uint16_t sum;

	if (cap < ANNOUNCE_NA_LEN)
		return 0;
	memset(f, 0, ANNOUNCE_NA_LEN);
	announce_eth(f, all_nodes_mac, mac, ETHTYPE_IPV6);

	ip6[0] = 0x60;
	ip6[4] = plen >> 8;
	ip6[5] = plen & 0xff;
	ip6[6] = IPPROTO_ICMPV6;
	ip6[7] = 255;		/* hop limit: RFC 4861, 7.1.2 */
	memcpy(ip6 + 8, addr, 16);
	memcpy(ip6 + 24, &all_nodes, 16);

	na[0] = 136;		/* Neighbour Advertisement */
	na[4] = 0x20;		/* Override; not Router, not Solicited */
	memcpy(na + 8, addr, 16);
	na[24] = 2;		/* Target Link-Layer Address, 8 bytes */
	na[25] = 1;
	memcpy(na + 26, mac, ETH_ADDR_LEN);

	sum = csum(na, plen, csum_pseudo6(addr, &all_nodes, IPPROTO_ICMPV6,
					  plen));
	memcpy(na + 2, &sum, 2);	/* csum() folds into network order */
	return ANNOUNCE_NA_LEN;
}
