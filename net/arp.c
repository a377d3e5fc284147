// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * arp.c - ARP responder (RFC 826).
 *
 * Theory of operation
 *
 * The guest sits alone on a virtual link whose only other member is us. Every
 * IPv4 address the guest wants to reach, on-link or via its gateway, is
 * really reached through us, so we answer an ARP request for any address
 * with our own MAC address (c->our_mac), except:
 *
 * - the guest's own address (c->ip4.addr): the guest asks for it only to
 *   detect a duplicate (RFC 5227), and an answer would make it give up the
 *   address;
 * - ARP probes (sender address 0.0.0.0, RFC 5227) and announcements or
 *   gratuitous ARP (sender address == target address): nobody waits for an
 *   answer, and answering a probe would look like an address conflict;
 * - targets that no host can own: 0.0.0.0, multicast, limited broadcast.
 *
 * Only Ethernet (hardware type 1, length 6) / IPv4 (0x0800, length 4)
 * requests are considered; replies and anything else are ignored. We keep
 * no ARP cache: tap.c learns the guest's MAC from every frame it sends.
 *
 * The request is read through a bounds-checked view only; the reply is built
 * by arp_build_reply(), a pure function, so unit tests see exactly what would
 * go on the wire. local/local.c hands it the request and sends the reply.
 */
#include <errno.h>
#include <string.h>

#include "ctx.h"
#include "net/arp.h"

#define ARP_HRD_ETHER  1
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY   2

/* Offsets in an Ethernet/IPv4 ARP packet */
#define ARP_OFF_HRD 0
#define ARP_OFF_PRO 2
#define ARP_OFF_HLN 4
#define ARP_OFF_PLN 5
#define ARP_OFF_OP  6
#define ARP_OFF_SHA 8
#define ARP_OFF_SPA 14
#define ARP_OFF_THA 18
#define ARP_OFF_TPA 24

/* Addresses that no neighbour can hold, so we never claim them */
static bool arp_addr_unclaimable(const uint8_t *a)
{
	static const uint8_t zero[4], bcast[4] = {255, 255, 255, 255};

	return !memcmp(a, zero, 4) || !memcmp(a, bcast, 4) ||
	       (a[0] & 0xf0) == 224;
}

/**
 * arp_build_reply() - build the reply to an ARP request, if one is due
 * @c:		execution context (our MAC, the guest's address)
 * @req:	ARP packet from the guest (untrusted)
 * @frame:	buffer for the reply, Ethernet header included
 * @cap:	size of @frame
 *
 * Return: length of the reply frame, -EINVAL if @req is malformed or not an
 *	   Ethernet/IPv4 request, -ENOENT if no reply is due, -ENOSPC if
 *	   @cap is too small
 */
int arp_build_reply(const struct ctx *c, struct pview req, uint8_t *frame,
		    size_t cap)
{
	const uint8_t *sha, *spa, *tpa;
	uint16_t hrd, pro, op;
	uint8_t hln, pln;
	uint8_t *arp;

	if (!pv_be16(req, ARP_OFF_HRD, &hrd) ||
	    !pv_be16(req, ARP_OFF_PRO, &pro) ||
	    !pv_u8(req, ARP_OFF_HLN, &hln) || !pv_u8(req, ARP_OFF_PLN, &pln) ||
	    !pv_be16(req, ARP_OFF_OP, &op))
		return -EINVAL;
	if (hrd != ARP_HRD_ETHER || pro != ETHTYPE_IP || hln != 6 || pln != 4)
		return -EINVAL;
	if (op != ARP_OP_REQUEST)
		return -EINVAL;

	sha = pv_at(req, ARP_OFF_SHA, ETH_ADDR_LEN);
	spa = pv_at(req, ARP_OFF_SPA, 4);
	tpa = pv_at(req, ARP_OFF_TPA, 4);
	if (!sha || !spa || !tpa)
		return -EINVAL;

	if (!memcmp(tpa, &c->ip4.addr, 4) || !memcmp(spa, tpa, 4))
		return -ENOENT;
	if (!memcmp(spa, "\0\0\0\0", 4) || arp_addr_unclaimable(tpa))
		return -ENOENT;

	if (cap < ARP_FRAME_LEN)
		return -ENOSPC;

	/* Ethernet: to whoever asked, from us */
	memcpy(frame, sha, ETH_ADDR_LEN);
	memcpy(frame + ETH_ADDR_LEN, c->our_mac, ETH_ADDR_LEN);
	frame[12] = ETHTYPE_ARP >> 8;
	frame[13] = ETHTYPE_ARP & 0xff;

	arp = frame + ETH_HDR_LEN;
	arp[ARP_OFF_HRD] = 0;
	arp[ARP_OFF_HRD + 1] = ARP_HRD_ETHER;
	arp[ARP_OFF_PRO] = ETHTYPE_IP >> 8;
	arp[ARP_OFF_PRO + 1] = ETHTYPE_IP & 0xff;
	arp[ARP_OFF_HLN] = 6;
	arp[ARP_OFF_PLN] = 4;
	arp[ARP_OFF_OP] = 0;
	arp[ARP_OFF_OP + 1] = ARP_OP_REPLY;
	memcpy(arp + ARP_OFF_SHA, c->our_mac, ETH_ADDR_LEN);
	memcpy(arp + ARP_OFF_SPA, tpa, 4);
	memcpy(arp + ARP_OFF_THA, sha, ETH_ADDR_LEN);
	memcpy(arp + ARP_OFF_TPA, spa, 4);

	return ARP_FRAME_LEN;
}
