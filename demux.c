// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * demux.c - the guest's frames to their owners: the one place that calls
 * up from the front-ends into the services and protocols.
 *
 * Theory of operation
 *
 * A front-end (stream/stream.c, vhost/net.c) hands each complete Ethernet
 * frame from the guest to demux_input(). It records the frame in the
 * capture file, learns the guest's MAC address from the source of
 * unicast-sourced frames, parses the frame into bounds-checked views
 * (net/packet.c) and dispatches on (EtherType, protocol, port/type):
 *
 *	RARP (QEMU's announcement)	-> announce_guest_frame()
 *	(ARP and ICMPv6 see it first too: gratuitous ARP, unsolicited NA)
 *	ARP				-> local_arp_input()
 *	IPv4 UDP to the DHCP port	-> local_dhcp_input()
 *	IPv4 ICMP			-> icmp_input()
 *	IPv6 ICMPv6 RS, RA, NS, NA, redirect -> local_ndp_input()
 *	IPv6 ICMPv6 echo request	-> icmp_input()
 *	IPv6 UDP to the DHCPv6 port	-> local_dhcpv6_input()
 *	TCP				-> tcp_input()
 *	other UDP			-> udp_input()
 *	anything else			-> dropped and counted
 *
 * demux_input_part() takes a TCP frame whose payload continues in further
 * pieces (a guest's TSO segment, from the vhost-user TX ring), as long as
 * its headers lie in the first one: TCP writes the pieces to its socket
 * as they are, with no copy of ours. Anything else it declines, and the
 * front-end gathers the frame for demux_input().
 *
 * Protocols may keep pointers into the frames of a batch until the
 * front-end calls demux_input_end(), before the frames go away.
 *
 * The guest's source addresses are remembered (addr_seen): inbound
 * connections go to the address the guest actually uses.
 *
 * Frames to the guest don't pass here: everybody sends through tap/.
 */
#include <arpa/inet.h>
#include <netinet/icmp6.h>
#include <string.h>
#include <sys/uio.h>

#include "ctx.h"
#include "demux.h"
#include "icmp/icmp.h"
#include "local/local.h"
#include "log.h"
#include "migrate/announce.h"
#include "net/announce_frames.h"
#include "net/dhcp.h"
#include "net/dhcpv6.h"
#include "net/packet.h"
#include "tap/pcap.h"
#include "tap/tap.h"
#include "tcp/tcp.h"
#include "udp/udp.h"
#include "util.h"

/**
 * struct demux_stats - frames from the guest, for the log
 * @rx:		frames taken
 * @rx_bad:	...of which malformed
 * @rx_unhandled: ...of which nobody's
 * @rx_part:	...of which taken in pieces (demux_input_part())
 */
static struct demux_stats {
	uint64_t rx, rx_bad, rx_unhandled, rx_part;
} demux_stats;

/**
 * demux_learn_mac() - note the guest's MAC address from a frame's source
 * @c:		execution context
 * @src:	source address of a frame from the guest
 *
 * Multicast and broadcast sources are ignored; changes are logged,
 * rate-limited, as the guest chooses its source addresses.
 */
static void demux_learn_mac(struct ctx *c, const uint8_t *src)
{
	if (src[0] & 1)		/* multicast/broadcast source: bogus */
		return;
	if (c->guest_mac_set && !memcmp(c->guest_mac, src, ETH_ADDR_LEN))
		return;
	/* The guest chooses its source addresses: rate-limit the changes */
	if (!c->guest_mac_set)
		info("Guest MAC address: %02x:%02x:%02x:%02x:%02x:%02x",
		     src[0], src[1], src[2], src[3], src[4], src[5]);
	else
		info_rl("Guest MAC address now %02x:%02x:%02x:%02x:%02x:%02x",
			src[0], src[1], src[2], src[3], src[4], src[5]);
	memcpy(c->guest_mac, src, ETH_ADDR_LEN);
	c->guest_mac_set = true;
}

/**
 * demux_ip4() - hand an IPv4 packet from the guest to its protocol
 * @c:		execution context
 * @p:		parsed frame
 *
 * Loopback sources are dropped, as nothing outside the guest can answer them; a
 * unicast source is remembered as the address the guest uses.
 *
 * Return: true if a handler took the packet
 */
static bool demux_ip4(struct ctx *c, const struct pkt *p)
{
	uint16_t sport, dport;
	struct pview payload;

	if (!c->ifi4_ok)
		return false;
	/* A loopback source can't be answered from outside the guest */
	if ((ntohl(p->src4.s_addr) >> 24) == IN_LOOPBACKNET)
		return false;
	if (p->src4.s_addr && p->src4.s_addr != c->ip4.addr_seen.s_addr &&
	    !IN_MULTICAST(ntohl(p->src4.s_addr)))
		c->ip4.addr_seen = p->src4;
	switch (p->proto) {
	case IPPROTO_TCP:
		tcp_input(c, p);
		return true;
	case IPPROTO_UDP:
		if (pkt_udp(p, &sport, &dport, &payload))
			return false;
		if (dport != DHCP_SERVER_PORT) {
			udp_input(c, p);
			return true;
		}
		if (!c->no_dhcp)
			local_dhcp_input(c, p);
		return true;
	case IPPROTO_ICMP:
		if (c->no_icmp)
			return false;
		icmp_input(c, p);
		return true;
	default:
		return false;
	}
}

/**
 * demux_ip6() - hand an IPv6 packet from the guest to its protocol
 * @c:		execution context
 * @p:		parsed frame
 *
 * Loopback sources are dropped; a global unicast source is remembered as the
 * address the guest uses.
 *
 * Return: true if a handler took the packet
 */
static bool demux_ip6(struct ctx *c, const struct pkt *p)
{
	uint16_t sport, dport;
	struct pview payload;
	uint8_t type;

	if (!c->ifi6_ok || IN6_IS_ADDR_LOOPBACK(&p->src6))
		return false;
	if (!IN6_IS_ADDR_UNSPECIFIED(&p->src6) &&
	    !IN6_IS_ADDR_LINKLOCAL(&p->src6) &&
	    !IN6_IS_ADDR_MULTICAST(&p->src6))
		c->ip6.addr_seen = p->src6;
	switch (p->proto) {
	case IPPROTO_TCP:
		tcp_input(c, p);
		return true;
	case IPPROTO_ICMPV6:
		if (p->frag || !pv_u8(p->l4, 0, &type))
			return false;
		if (type >= ND_ROUTER_SOLICIT && type <= ND_REDIRECT) {
			if (!c->no_ndp)
				local_ndp_input(c, p);
			return true;
		}
		if (type == ICMP6_ECHO_REQUEST && !c->no_icmp) {
			icmp_input(c, p);
			return true;
		}
		return false;
	case IPPROTO_UDP:
		if (pkt_udp(p, &sport, &dport, &payload))
			return false;
		if (dport != DHCPV6_SERVER_PORT) {
			udp_input(c, p);
			return true;
		}
		if (!c->no_dhcpv6)
			local_dhcpv6_input(c, p);
		return true;
	default:
		return false;
	}
}

/**
 * demux_dispatch() - learn from a parsed frame and hand it to its owner
 * @c:		execution context
 * @p:		parsed frame
 */
static void demux_dispatch(struct ctx *c, const struct pkt *p)
{
	bool handled = false;

	demux_learn_mac(c, p->eth_src);
	/* Only ARP, RARP and ICMPv6 can be announcements: the rest, data
	 * above all, needn't ask
	 */
	if ((p->ethertype == ETHTYPE_ARP || p->ethertype == ETHTYPE_RARP ||
	     p->proto == IPPROTO_ICMPV6) && announce_guest_frame(c, p))
		return;		/* a RARP: QEMU announcing the guest */

	switch (p->ethertype) {
	case ETHTYPE_ARP:
		local_arp_input(c, p);
		handled = true;
		break;
	case ETHTYPE_IP:
		handled = demux_ip4(c, p);
		break;
	case ETHTYPE_IPV6:
		handled = demux_ip6(c, p);
		break;
	}
	if (!handled) {
		demux_stats.rx_unhandled++;
		trace("Frame not handled: ethertype 0x%04x proto %u",
		      p->ethertype, p->proto);
	}
}

/**
 * demux_input_end() - a batch of guest frames was handed to demux_input()
 * @c:		execution context
 *
 * Front-ends call this before the frames of the batch go away: protocols
 * may hold pointers into them until here (see tcp_flush_pending()).
 */
void demux_input_end(struct ctx *c)
{
	tcp_flush_pending(c);
}

/**
 * demux_input() - handle one Ethernet frame from the guest
 * @c:		execution context
 * @frame:	frame (untrusted)
 * @len:	its length
 */
void demux_input(struct ctx *c, const uint8_t *frame, size_t len)
{
	struct pkt p;

	demux_stats.rx++;
	if (c->pcap_file[0])
		pcap_frame(frame, len);

	if (pkt_parse(frame, len, &p)) {
		demux_stats.rx_bad++;
		debug_rl("Malformed frame from guest (%zu bytes) dropped", len);
		return;
	}
	demux_dispatch(c, &p);
}

/**
 * demux_input_part() - handle a TCP frame from the guest in pieces, without
 *			gathering it
 * @c:		execution context
 * @head:	start of the frame, with all its headers (untrusted)
 * @hlen:	bytes at @head
 * @tail:	the frame's further pieces, in order (untrusted bytes)
 * @ntail:	number of pieces, at most TAP_TAIL_MAX
 * @len:	frame length: @hlen plus the pieces' total
 *
 * Return: true if handled; false if the frame isn't TCP with its headers
 *	   in @head: then nothing was done, and the caller gathers it for
 *	   demux_input(), which also judges it if malformed
 */
bool demux_input_part(struct ctx *c, const uint8_t *head, size_t hlen,
		      const struct iovec *tail, unsigned ntail, size_t len)
{
	struct pkt p;
	uint8_t doff;

	if (ntail > TAP_TAIL_MAX || pkt_parse_part(head, hlen, len, &p) ||
	    p.proto != IPPROTO_TCP || p.frag || !pv_u8(p.l4, 12, &doff) ||
	    (size_t)(doff >> 4) * 4 > p.l4.len)
		return false;
	p.tail = tail;
	p.ntail = ntail;

	demux_stats.rx++;
	demux_stats.rx_part++;
	if (c->pcap_file[0])
		pcap_frame_iov(head, hlen, tail, ntail, len - hlen);
	demux_dispatch(c, &p);
	return true;
}

/**
 * demux_guest_appeared() - a front-end attached: greet the guest
 * @c:		execution context
 */
void demux_guest_appeared(struct ctx *c)
{
	local_guest_appeared(c);
}

/**
 * demux_log_stats() - report frame counters (SIGUSR1, exit); the frames'
 *		       line comes last, so a reader who waits for it has them
 *		       all
 */
void demux_log_stats(void)
{
	uint64_t tx, tx_fail;

	tap_log_stats(&tx, &tx_fail);
	info("Frames from guest: %llu (%llu malformed, %llu not handled, "
	     "%llu taken in pieces), to guest: %llu (%llu not sent)",
	     (unsigned long long)demux_stats.rx,
	     (unsigned long long)demux_stats.rx_bad,
	     (unsigned long long)demux_stats.rx_unhandled,
	     (unsigned long long)demux_stats.rx_part,
	     (unsigned long long)tx, (unsigned long long)tx_fail);
}
