// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * icmp_err.c - tell the guest a destination is unreachable, as a real
 * network would: ICMP type 3 / ICMPv6 type 1.
 *
 * The kernel reports unreachable destinations to us as socket errors
 * (EHOSTUNREACH, ENETUNREACH, ECONNREFUSED on a UDP socket...); the guest
 * only learns about them if we send the ICMP message its stack expects.
 * The message quotes the offending packet: we don't keep the guest's
 * packet, so we rebuild its IP header and the first eight bytes of its
 * layer-4 header (ports, and the sequence number for TCP), which is all
 * RFC 792 asks for and all a stack uses to find the socket.
 *
 * Port unreachable comes from the destination itself; host and network
 * unreachable from the gateway, as a router would send them.
 *
 * icmp_err_build() only builds the message and says where it comes from;
 * local/local.c (local_unreach()) sends it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "ctx.h"
#include "net/checksum.h"
#include "net/icmp_err.h"

#define ICMP4_UNREACH 3
#define ICMP4_NET 0
#define ICMP4_HOST 1
#define ICMP4_PORT 3
#define ICMP4_PROHIBITED 13
#define ICMP6_UNREACH 1
#define ICMP6_NOROUTE 0
#define ICMP6_PROHIBITED 1
#define ICMP6_ADDR 3
#define ICMP6_PORT 4

/**
 * icmp_err_l4() - the failed packet's first 8 bytes, quoted in the error
 * @l4:		where they go
 * @proto:	IPPROTO_TCP or IPPROTO_UDP
 * @gport:	guest port (source of the failed packet)
 * @rport:	remote port (its destination)
 * @seq:	TCP sequence number of the failed packet
 */
static void icmp_err_l4(uint8_t *l4, uint8_t proto, uint16_t gport,
			uint16_t rport, uint32_t seq)
{
	memset(l4, 0, 8);
	l4[0] = gport >> 8;
	l4[1] = gport & 0xff;
	l4[2] = rport >> 8;
	l4[3] = rport & 0xff;
	if (proto == IPPROTO_TCP) {
		l4[4] = seq >> 24;
		l4[5] = (seq >> 16) & 0xff;
		l4[6] = (seq >> 8) & 0xff;
		l4[7] = seq & 0xff;
	} else {
		l4[5] = 8;	/* UDP length: header only, as far as we know */
	}
}

/**
 * icmp_err_build() - build a destination-unreachable message for the guest
 * @c:		execution context (our gateway and link-local addresses)
 * @family:	AF_INET or AF_INET6
 * @proto:	protocol of the failed packet (TCP or UDP)
 * @gaddr:	guest address (source of the failed packet)
 * @gport:	guest port
 * @raddr:	destination the guest tried
 * @rport:	its port
 * @seq:	TCP sequence number of the failed segment (0 for UDP)
 * @err:	errno the kernel gave us: selects the ICMP code
 * @msg:	buffer for the ICMP or ICMPv6 message, checksum left zero
 * @src:	set to the address to send it from: a struct in_addr for
 *		AF_INET, a struct in6_addr for AF_INET6 (it goes to @gaddr)
 *
 * Return: length of the message
 */
size_t icmp_err_build(const struct ctx *c, int family, uint8_t proto,
		      const void *gaddr, uint16_t gport, const void *raddr,
		      uint16_t rport, uint32_t seq, int err,
		      uint8_t msg[ICMP_ERR_MAX], void *src)
{
	bool port = err == ECONNREFUSED;

	memset(msg, 0, ICMP_ERR_MAX);
	if (family == AF_INET) {
		uint8_t *ip = msg + ICMP_HDR_LEN;
		uint16_t sum;

		msg[0] = ICMP4_UNREACH;
		msg[1] = port ? ICMP4_PORT : err == ENETUNREACH ? ICMP4_NET :
			 (err == EACCES || err == EPERM) ? ICMP4_PROHIBITED :
			 ICMP4_HOST;
		ip[0] = 0x45;
		ip[3] = IP4_HDR_LEN + 8;
		ip[8] = 64;
		ip[9] = proto;
		memcpy(ip + 12, gaddr, 4);
		memcpy(ip + 16, raddr, 4);
		sum = csum(ip, IP4_HDR_LEN, 0);
		memcpy(ip + 10, &sum, 2);
		icmp_err_l4(ip + IP4_HDR_LEN, proto, gport, rport, seq);
		if (port || !c->ip4.gw.s_addr)
			memcpy(src, raddr, 4);
		else
			memcpy(src, &c->ip4.gw, 4);
		return ICMP_HDR_LEN + IP4_HDR_LEN + 8;
	} else {
		uint8_t *ip = msg + ICMP_HDR_LEN;

		msg[0] = ICMP6_UNREACH;
		msg[1] = port ? ICMP6_PORT : err == ENETUNREACH ? ICMP6_NOROUTE :
			 (err == EACCES || err == EPERM) ? ICMP6_PROHIBITED :
			 ICMP6_ADDR;
		ip[0] = 0x60;
		ip[5] = 8;
		ip[6] = proto;
		ip[7] = 64;
		memcpy(ip + 8, gaddr, 16);
		memcpy(ip + 24, raddr, 16);
		icmp_err_l4(ip + IP6_HDR_LEN, proto, gport, rport, seq);
		if (port)
			memcpy(src, raddr, 16);
		else
			memcpy(src, &c->ip6.our_ll, 16);
		return ICMP_ERR_MAX;
	}
}
