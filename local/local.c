// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * local.c - what the daemon answers the guest itself, rather than relaying
 * it to a socket: ARP, DHCP, DHCPv6, NDP, and ICMP destination-unreachable
 * messages for what the host's kernel couldn't reach.
 *
 * Theory of operation
 *
 * The protocols live in net/, socket-free and tap-free: each takes the
 * guest's request through bounds-checked views and writes its answer into
 * a buffer of ours, saying how long it is and, where it matters, which
 * addresses it goes between. This file is the glue between them and the
 * guest, beside the frame dispatch that calls it (demux.c):
 *
 *	ARP			-> arp_build_reply()	-> tap_send_frame()
 *	IPv4 UDP to port 67	-> dhcp_build_reply()	-> tap_send_ip4()
 *	IPv6 UDP to port 547	-> dhcpv6_build_reply()	-> tap_send_ip6()
 *	ICMPv6 RS or NS		-> ndp_reply()		-> tap_send_ip6()
 *	guest attached, timer	-> ndp_ra()		-> tap_send_ip6()
 *	socket error (tcp/, udp/) -> icmp_err_build()	-> tap_send_ip4/6()
 *
 * It decides whether a service runs at all (--no-dhcp, --no-dhcpv6,
 * --no-ndp, --no-ra, an address family the guest doesn't have), takes the
 * UDP header off the DHCP requests and puts one on the replies, and keeps
 * the one piece of timing: the unsolicited Router Advertisements, sent
 * when a guest attaches and every NDP_RA_INTERVAL_MS after. tap_send_*()
 * add the Ethernet and IP headers and the checksums; a reply that can't be
 * queued is dropped with a rate-limited debug message, as the guest will
 * ask again.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "ctx.h"
#include "log.h"
#include "net/arp.h"
#include "net/dhcp.h"
#include "net/dhcpv6.h"
#include "net/icmp_err.h"
#include "net/ndp.h"
#include "net/packet.h"
#include "local/local.h"
#include "tap/tap.h"
#include "util.h"

static uint64_t local_next_ra_ms; /* next unsolicited RA, 0: not armed */

/**
 * local_arp_input() - answer an ARP request from the guest
 * @c:		execution context
 * @p:		parsed frame, ethertype ETHTYPE_ARP, @p->l3 the ARP packet
 */
void local_arp_input(struct ctx *c, const struct pkt *p)
{
	uint8_t frame[ARP_FRAME_LEN];
	int len;

	if (!c->ifi4_ok)
		return;

	len = arp_build_reply(c, p->l3, frame, sizeof(frame));
	if (len == -EINVAL) {
		debug_rl("ARP: ignoring malformed or non-request packet");
		return;
	}
	if (len < 0)
		return;

	if (tap_send_frame(c, frame, (size_t)len) < 0)
		debug_rl("ARP: failed to queue reply");
}

/**
 * local_dhcp_input() - answer a DHCP request from the guest
 * @c:		execution context
 * @p:		parsed frame: IPv4, UDP, destination port 67
 */
void local_dhcp_input(struct ctx *c, const struct pkt *p)
{
	uint8_t buf[UDP_HDR_LEN + DHCP_MAX_REPLY];
	uint16_t sport, dport, ulen;
	struct in_addr dst = {0};
	struct pview payload;
	int n;

	if (c->no_dhcp || !c->ifi4_ok)
		return;
	if (pkt_udp(p, &sport, &dport, &payload) || dport != DHCP_SERVER_PORT) {
		debug_rl("DHCP: bad UDP header, dropped");
		return;
	}

	n = dhcp_build_reply(c, payload, buf + UDP_HDR_LEN,
			     sizeof(buf) - UDP_HDR_LEN, &dst);
	if (n < 0) {
		debug_rl("DHCP: malformed request (%s), dropped", strerror(-n));
		return;
	}
	if (!n)
		return;

	ulen = (uint16_t)(UDP_HDR_LEN + n);
	udp_hdr_set(buf, DHCP_SERVER_PORT, DHCP_CLIENT_PORT, (size_t)n);

	if (tap_send_ip4(c, dhcp_server_id(c), dst, IPPROTO_UDP, buf, ulen))
		debug_rl("DHCP: failed to send reply");
}

/**
 * local_dhcpv6_input() - answer a DHCPv6 message from the guest
 * @c:		execution context
 * @p:		parsed frame: IPv6, UDP, destination port 547
 */
void local_dhcpv6_input(struct ctx *c, const struct pkt *p)
{
	uint8_t buf[UDP_HDR_LEN + DHCPV6_MAX_REPLY];
	uint16_t sport, dport, ulen;
	struct pview payload;
	int n;

	if (c->no_dhcpv6 || !c->ifi6_ok)
		return;
	if (pkt_udp(p, &sport, &dport, &payload) ||
	    dport != DHCPV6_SERVER_PORT) {
		debug_rl("DHCPv6: bad UDP header, dropped");
		return;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&p->src6) ||
	    IN6_IS_ADDR_MULTICAST(&p->src6)) {
		debug_rl("DHCPv6: bad source address, dropped");
		return;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&c->ip6.our_ll)) {
		debug_rl("DHCPv6: no link-local address to reply from");
		return;
	}

	n = dhcpv6_build_reply(c, payload, buf + UDP_HDR_LEN,
			       sizeof(buf) - UDP_HDR_LEN);
	if (n < 0) {
		debug_rl("DHCPv6: malformed message (%s), dropped",
			 strerror(-n));
		return;
	}
	if (!n)
		return;

	ulen = (uint16_t)(UDP_HDR_LEN + n);
	udp_hdr_set(buf, DHCPV6_SERVER_PORT, DHCPV6_CLIENT_PORT, (size_t)n);

	if (tap_send_ip6(c, &c->ip6.our_ll, &p->src6, IPPROTO_UDP, buf, ulen))
		debug_rl("DHCPv6: failed to send reply");
}

/**
 * local_ndp_input() - answer an NDP message from the guest
 * @c:		execution context
 * @p:		parsed IPv6 packet carrying ICMPv6 (types 133 to 137)
 */
void local_ndp_input(struct ctx *c, const struct pkt *p)
{
	uint8_t msg[NDP_RA_MAX];
	struct in6_addr src, dst;
	size_t len;

	if (c->no_ndp || !c->ifi6_ok)
		return;

	len = ndp_reply(c, p, msg, sizeof(msg), &src, &dst);
	if (len && tap_send_ip6(c, &src, &dst, IPPROTO_ICMPV6, msg, len) < 0)
		debug_rl("NDP: failed to queue advertisement");
}

/* Unsolicited Router Advertisement to all-nodes */
static void local_ra(struct ctx *c)
{
	uint8_t ra[NDP_RA_MAX];
	struct in6_addr src, dst;
	size_t len;

	len = ndp_ra(c, NULL, ra, sizeof(ra), &src, &dst);
	if (len && tap_send_ip6(c, &src, &dst, IPPROTO_ICMPV6, ra, len) < 0)
		debug_rl("NDP: failed to queue Router Advertisement");
}

/**
 * local_guest_appeared() - a guest attached: advertise ourselves as router
 * @c:		execution context
 *
 * Sends an unsolicited Router Advertisement to all-nodes and arms the
 * periodic ones, unless RAs are disabled or IPv6 is off.
 */
void local_guest_appeared(struct ctx *c)
{
	if (c->no_ndp || c->no_ra || !c->ifi6_ok)
		return;

	local_ra(c);
	local_next_ra_ms = now_ms() + NDP_RA_INTERVAL_MS;
}

/**
 * local_timer() - periodic work: unsolicited Router Advertisements
 * @c:		execution context
 * @now:	current time, milliseconds (CLOCK_MONOTONIC)
 *
 * Armed by local_guest_appeared(); sends one RA every NDP_RA_INTERVAL_MS.
 */
void local_timer(struct ctx *c, uint64_t now)
{
	if (!local_next_ra_ms || now < local_next_ra_ms)
		return;
	if (c->no_ndp || c->no_ra || !c->ifi6_ok)
		return;

	local_ra(c);
	local_next_ra_ms = now + NDP_RA_INTERVAL_MS;
}

/**
 * local_unreach() - send a destination-unreachable message to the guest
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @proto:	protocol of the failed packet (TCP or UDP)
 * @gaddr:	guest address (source of the failed packet)
 * @gport:	guest port
 * @raddr:	destination the guest tried
 * @rport:	its port
 * @seq:	TCP sequence number of the failed segment (0 for UDP)
 * @err:	errno the kernel gave us: selects the ICMP code
 */
void local_unreach(struct ctx *c, int family, uint8_t proto, const void *gaddr,
		   uint16_t gport, const void *raddr, uint16_t rport,
		   uint32_t seq, int err)
{
	uint8_t msg[ICMP_ERR_MAX];
	union {
		struct in_addr a4;
		struct in6_addr a6;
	} src, dst;
	size_t len;

	len = icmp_err_build(c, family, proto, gaddr, gport, raddr, rport, seq,
			     err, msg, &src);
	if (family == AF_INET) {
		memcpy(&dst.a4, gaddr, sizeof(dst.a4));
		tap_send_ip4(c, src.a4, dst.a4, IPPROTO_ICMP, msg, len);
	} else {
		memcpy(&dst.a6, gaddr, sizeof(dst.a6));
		tap_send_ip6(c, &src.a6, &dst.a6, IPPROTO_ICMPV6, msg, len);
	}
}
