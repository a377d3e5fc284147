// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * framesend.c - feed the daemon malformed frames, then check it still serves.
 *
 * Usage: framesend [OPTIONS] SOCKPATH CASE...
 *
 * Connects to the daemon's UNIX stream socket (qemu stream framing: 4-byte
 * big-endian length, then the Ethernet frame) and runs the named cases in
 * order, on one connection. Three kinds of case:
 *
 * - frame cases build one crafted frame each (a truncated header, a length
 *   field that lies, an option running past the end...) and send it with a
 *   correct length prefix. A robust daemon drops such a frame and goes on:
 *   the connection must stay up, and a probe after them must get an answer.
 *
 * - prefix cases break the framing itself (length 5, 0, 1 MiB, 4 GiB). The
 *   qemu-stream contract (QEMU's stream framing, as upstream passt does it)
 *   is that the back-end resets the connection on a frame shorter than 14 or
 *   longer than 65535 bytes: once the framing is lost there is no frame
 *   boundary to resynchronise on. Follow them with "expect-close", then
 *   "reconnect" and a probe.
 *
 * - control cases: arp-probe (ARP request for the gateway, wait for the
 *   reply), rarp (the RARP QEMU writes after a migration, to announce
 *   the guest), arp-burst (N ARP requests in one send(), wait for N replies:
 *   with -S, the daemon is stopped meanwhile, so that it finds them all
 *   in the socket at once, more frames than it takes in one loop round,
 *   and must come back for the rest by itself), dhcp-probe (DHCPDISCOVER,
 *   wait for the OFFER), expect-close (wait for the daemon to close the
 *   connection), reconnect, hold-unread (COUNT ARP requests, replies
 *   left unread; a broken prefix makes the daemon drop the connection,
 *   which we keep open; then a new connection with another MAC address),
 *   check-held (the held connection's queue: the COUNT replies, as they
 *   were, nothing meant for the new connection), garbage
 *   (N seeded pseudo-random frames: valid templates with random mutations
 *   and truncations, plus pure noise).
 *
 * Every wait has a deadline (-t). Frames the daemon sends meanwhile are read
 * and discarded, so that it never blocks on us.
 *
 * Exit status: 0 if every case went as expected, 1 if a probe got no answer,
 * the connection closed when it shouldn't (or didn't when it should), 2 on
 * usage or setup errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/conn.h"
#include "common/frame.h"

#define FRAME_MAX 65535
#define FRAME_MAX_ARP (14 + 28)	/* arp_build(f, 6, 4) */
#define BOOTP_LEN 236
#define DHCP_MAGIC 0x63825363

#define ETH_P_IP_ 0x0800
#define ETH_P_ARP_ 0x0806
#define ETH_P_IPV6_ 0x86dd

static const uint8_t mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
/* hold-unread changes it, for the next connection */
static uint8_t mac_guest[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t mac_daemon[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };

/* Addresses: guest and gateway (-a, -g), a remote peer for echo and TCP */
static struct in_addr ip4_guest, ip4_gw, ip4_peer;
static struct in6_addr ip6_ll, ip6_peer, ip6_allrouters, ip6_dhcp, ip6_snm;

static int timeout_ms = 5000;
static unsigned garbage_count = 1000;
static uint64_t rng_state;
static bool verbose;
static pid_t stop_pid;		/* -S: stopped during arp-burst's send() */

typedef size_t (*build_fn)(uint8_t *f);

static const char *sock_path;
static int sock = -1;
static int held = -1;		/* hold-unread's connection, not read */
static uint8_t mac_held[6];	/* the guest MAC address it used */

/* Frame being built, and the receive reassembly buffer */
static uint8_t frame[FRAME_MAX];
static uint8_t rx_buf[1 << 20];
static size_t rx_len;
static size_t rx_consumed;	/* frame handed out by frame_recv() */
static unsigned rx_arp_skipped;	/* ARP replies rx_compact() let go */

/* ---- small helpers ---------------------------------------------------- */

/* rng() - xorshift64*: reproducible for a given -s seed */
static uint32_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (rng_state * 0x2545f4914f6cdd1dULL) >> 32;
}

/* ---- frame builders: each returns the offset after what it wrote ------ */

static size_t eth_build(uint8_t *p, const uint8_t *dst, uint16_t type)
{
	return eth_hdr_put(p, dst, mac_guest, type);
}

/* ip4_build() - IPv4 header; @tot_len is what the header claims */
static size_t ip4_build(uint8_t *p, uint8_t proto, struct in_addr src,
			struct in_addr dst, uint16_t tot_len)
{
	return ip4_hdr_put(p, proto, &src, &dst, tot_len, rng() & 0xffff, 0);
}

/* icmp6_fix() - set the ICMPv6 checksum over the bytes actually present */
static void icmp6_fix(uint8_t *ip6, size_t l4_len)
{
	uint8_t *l4 = ip6 + IP6_HLEN;

	put_be16(l4 + 2, 0);
	put_be16(l4 + 2, csum_l4(AF_INET6, ip6, l4, l4_len, 58));
}

static size_t udp_build(uint8_t *p, uint16_t sport, uint16_t dport,
			uint16_t len)
{
	put_be16(p, sport);
	put_be16(p + 2, dport);
	put_be16(p + 4, len);
	put_be16(p + 6, 0);
	return UDP_HLEN;
}

static size_t arp_build(uint8_t *f, uint8_t hlen, uint8_t plen)
{
	size_t o = eth_build(f, mac_bcast, ETH_P_ARP_);
	uint8_t *p = f + o;

	put_be16(p, 1);
	put_be16(p + 2, ETH_P_IP_);
	p[4] = hlen;
	p[5] = plen;
	put_be16(p + 6, 1);
	memcpy(p + 8, mac_guest, 6);
	memcpy(p + 14, &ip4_guest, 4);
	memset(p + 18, 0, 6);
	memcpy(p + 24, &ip4_gw, 4);
	return o + 28;
}

/* dhcp_build() - BOOTREQUEST header and magic cookie; returns option offset
 * @xid:	transaction ID
 *
 * The caller appends options, then calls dhcp_finish().
 */
static size_t dhcp_build(uint8_t *f, uint32_t xid)
{
	size_t o = ETH_HLEN + IP4_HLEN + UDP_HLEN;
	uint8_t *b = f + o;

	memset(b, 0, BOOTP_LEN + 4);
	b[0] = 1;		/* BOOTREQUEST */
	b[1] = 1;		/* Ethernet */
	b[2] = 6;
	put_be32(b + 4, xid);
	put_be16(b + 10, 0x8000);	/* broadcast */
	memcpy(b + 28, mac_guest, 6);
	put_be32(b + BOOTP_LEN, DHCP_MAGIC);
	return o + BOOTP_LEN + 4;
}

/* dhcp_finish() - Ethernet, IPv4 and UDP headers for a DHCP frame of @len */
static size_t dhcp_finish(uint8_t *f, size_t len)
{
	struct in_addr any = { 0 }, bcast = { htonl(0xffffffff) };
	size_t l3 = len - ETH_HLEN;

	eth_build(f, mac_bcast, ETH_P_IP_);
	ip4_build(f + ETH_HLEN, 17, any, bcast, l3);
	udp_build(f + ETH_HLEN + IP4_HLEN, 68, 67, l3 - IP4_HLEN);
	return len;
}

static size_t dhcp_discover(uint8_t *f, uint32_t xid)
{
	size_t o = dhcp_build(f, xid);

	f[o++] = 53;
	f[o++] = 1;
	f[o++] = 1;		/* DHCPDISCOVER */
	f[o++] = 55;
	f[o++] = 4;
	f[o++] = 1;
	f[o++] = 3;
	f[o++] = 6;
	f[o++] = 26;
	f[o++] = 255;
	return dhcp_finish(f, o);
}

/* icmp6_build() - Ethernet + IPv6 + ICMPv6 header of @type, @body_len bytes
 * after the 4-byte ICMPv6 header, all zero. Returns the ICMPv6 offset.
 */
static size_t icmp6_build(uint8_t *f, const uint8_t *dmac,
			  const struct in6_addr *dst, uint8_t type,
			  size_t body_len, uint8_t hops)
{
	size_t o = eth_build(f, dmac, ETH_P_IPV6_);

	o += ip6_hdr_put(f + o, 58, &ip6_ll, dst, 4 + body_len, hops);
	memset(f + o, 0, 4 + body_len);
	f[o] = type;
	return o;
}

static size_t ndp_ns(uint8_t *f, uint8_t opt_len_units, size_t opt_bytes)
{
	static const uint8_t snm_mac[6] = { 0x33, 0x33, 0xff, 0, 0, 1 };
	size_t o = icmp6_build(f, snm_mac, &ip6_snm, 135, 20 + opt_bytes, 255);
	struct in6_addr target;

	inet_pton(AF_INET6, "fe80::1", &target);
	memcpy(f + o + 8, &target, 16);
	if (opt_bytes >= 2) {
		f[o + 24] = 1;		/* source link-layer address */
		f[o + 25] = opt_len_units;
		if (opt_bytes >= 8)
			memcpy(f + o + 26, mac_guest, 6);
	}
	icmp6_fix(f + ETH_HLEN, 24 + opt_bytes);
	return o + 24 + opt_bytes;
}

static size_t ndp_rs(uint8_t *f, size_t body, uint8_t opt_len_units)
{
	static const uint8_t rtr_mac[6] = { 0x33, 0x33, 0, 0, 0, 2 };
	size_t o = icmp6_build(f, rtr_mac, &ip6_allrouters, 133, body, 255);

	if (body >= 6) {
		f[o + 8] = 1;
		f[o + 9] = opt_len_units;
	}
	icmp6_fix(f + ETH_HLEN, 4 + body);
	return o + 4 + body;
}

/* dhcp6_build() - UDP to ff02::1:2 port 547 carrying @len bytes at @msg */
static size_t dhcp6_build(uint8_t *f, const uint8_t *msg, size_t len)
{
	static const uint8_t mac[6] = { 0x33, 0x33, 0, 1, 0, 2 };
	size_t o = eth_build(f, mac, ETH_P_IPV6_);
	uint8_t *ip = f + o, *udp;

	o += ip6_hdr_put(ip, 17, &ip6_ll, &ip6_dhcp, UDP_HLEN + len, 1);
	udp = f + o;
	o += udp_build(udp, 546, 547, UDP_HLEN + len);
	memcpy(f + o, msg, len);
	put_be16(udp + 6, csum_l4(AF_INET6, ip, udp, UDP_HLEN + len, 17));
	return o + len;
}

static size_t icmp4_echo(uint8_t *f, size_t icmp_len, uint16_t tot_len)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IP_);
	uint8_t *ip = f + o, *icmp;

	o += ip4_build(ip, 1, ip4_guest, ip4_peer,
		       tot_len ? tot_len : IP4_HLEN + icmp_len);
	icmp = f + o;
	memset(icmp, 0, icmp_len);
	icmp[0] = 8;
	if (icmp_len >= 8) {
		put_be16(icmp + 4, 0x1234);
		put_be16(icmp + 6, 1);
	}
	if (icmp_len >= 4)
		put_be16(icmp + 2, csum_fold(csum_add(0, icmp, icmp_len)));
	return o + icmp_len;
}

static size_t icmp6_echo(uint8_t *f, size_t icmp_len, uint16_t plen)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IPV6_);
	uint8_t *ip = f + o;

	o += ip6_hdr_put(ip, 58, &ip6_ll, &ip6_peer,
		       plen ? plen : icmp_len, 64);
	memset(f + o, 0, icmp_len);
	f[o] = 128;
	if (icmp_len >= 8) {
		put_be16(f + o + 4, 0x1234);
		put_be16(f + o + 6, 1);
	}
	if (icmp_len >= 4) {
		put_be16(f + o + 2, 0);
		put_be16(f + o + 2, csum_l4(AF_INET6, ip, f + o, icmp_len, 58));
	}
	return o + icmp_len;
}

static size_t tcp4_syn(uint8_t *f, uint8_t doff, size_t tcp_len)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IP_);
	uint8_t *ip = f + o, *tcp;

	o += ip4_build(ip, 6, ip4_guest, ip4_peer, IP4_HLEN + tcp_len);
	tcp = f + o;
	memset(tcp, 0, tcp_len);
	if (tcp_len >= 4) {
		put_be16(tcp, 40000 + (rng() & 0x3ff));
		put_be16(tcp + 2, 9);
	}
	if (tcp_len >= 14) {
		put_be32(tcp + 4, rng());
		tcp[12] = doff << 4;
		tcp[13] = 0x02;		/* SYN */
	}
	if (tcp_len >= 16)
		put_be16(tcp + 14, 65535);
	if (tcp_len >= 18)
		put_be16(tcp + 16, csum_l4(AF_INET, ip, tcp, tcp_len, 6));
	return o + tcp_len;
}

/* ---- the frame cases -------------------------------------------------- */

static size_t case_truncated_ipv4(uint8_t *f)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IP_);

	f[o] = 0x45;
	memset(f + o + 1, 0, 9);
	return o + 10;
}

static size_t case_ipv4_ihl_long(uint8_t *f)
{
	size_t len = icmp4_echo(f, 8, 0);

	f[ETH_HLEN] = 0x4f;		/* 60-byte header in a 28-byte packet */
	return len;
}

static size_t case_ipv4_ihl_short(uint8_t *f)
{
	size_t len = icmp4_echo(f, 8, 0);

	f[ETH_HLEN] = 0x42;		/* 8-byte header: below the minimum */
	return len;
}

static size_t case_ipv4_totlen_long(uint8_t *f)
{
	return icmp4_echo(f, 8, 1500);
}

static size_t case_ipv4_totlen_short(uint8_t *f)
{
	return icmp4_echo(f, 8, 10);
}

static size_t case_ipv4_bad_version(uint8_t *f)
{
	size_t len = icmp4_echo(f, 8, 0);

	f[ETH_HLEN] = 0x65;
	return len;
}

static size_t case_udp_len_long(uint8_t *f)
{
	size_t len = dhcp_discover(f, rng());

	put_be16(f + ETH_HLEN + IP4_HLEN + 4, 2000);
	return len;
}

static size_t case_udp_len_short(uint8_t *f)
{
	size_t len = dhcp_discover(f, rng());

	put_be16(f + ETH_HLEN + IP4_HLEN + 4, 3);
	return len;
}

static size_t case_udp_truncated(uint8_t *f)
{
	size_t o = eth_build(f, mac_bcast, ETH_P_IP_);
	struct in_addr any = { 0 }, bcast = { htonl(0xffffffff) };

	o += ip4_build(f + o, 17, any, bcast, IP4_HLEN + 4);
	put_be16(f + o, 68);
	put_be16(f + o + 2, 67);
	return o + 4;
}

static size_t case_tcp_truncated(uint8_t *f)
{
	return tcp4_syn(f, 5, 10);
}

static size_t case_tcp_bad_doff(uint8_t *f)
{
	return tcp4_syn(f, 15, 20);
}

static size_t case_tcp_doff_short(uint8_t *f)
{
	return tcp4_syn(f, 2, 20);
}

static size_t case_truncated_ipv6(uint8_t *f)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IPV6_);

	f[o] = 0x60;
	memset(f + o + 1, 0, 19);
	return o + 20;
}

static size_t case_ipv6_plen_long(uint8_t *f)
{
	return icmp6_echo(f, 8, 1000);
}

static size_t case_ipv6_plen_short(uint8_t *f)
{
	return icmp6_echo(f, 8, 2);
}

/* An extension header claiming 2048 bytes, in an 8-byte packet */
static size_t case_ipv6_ext_oversize(uint8_t *f)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IPV6_);

	o += ip6_hdr_put(f + o, 0, &ip6_ll, &ip6_peer, 8, 64);
	memset(f + o, 0, 8);
	f[o] = 58;
	f[o + 1] = 255;
	return o + 8;
}

/* Thousands of destination options headers, the last one pointing to yet
 * another, past the end of the packet: a parser must stop at the end
 */
static size_t case_ipv6_ext_chain(uint8_t *f)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IPV6_), i, n = 4000;

	o += ip6_hdr_put(f + o, 60, &ip6_ll, &ip6_peer, n * 8, 64);
	for (i = 0; i < n; i++, o += 8) {
		memset(f + o, 0, 8);
		f[o] = i % 3 ? 60 : 43;	/* dest opts, routing, ... */
		f[o + 2] = 1;		/* PadN */
		f[o + 3] = 4;
	}
	return o;
}

/* Extension headers with a zero-length "next header" loop: hop-by-hop
 * pointing to hop-by-hop (only valid first), fragment headers chained
 */
static size_t case_ipv6_ext_loop(uint8_t *f)
{
	size_t o = eth_build(f, mac_daemon, ETH_P_IPV6_), i, n = 64;

	o += ip6_hdr_put(f + o, 0, &ip6_ll, &ip6_peer, n * 8, 64);
	for (i = 0; i < n; i++, o += 8) {
		memset(f + o, 0, 8);
		f[o] = i & 1 ? 0 : 44;
	}
	return o;
}

static size_t case_arp_bad_hlen(uint8_t *f)
{
	return arp_build(f, 200, 4);
}

static size_t case_arp_bad_plen(uint8_t *f)
{
	return arp_build(f, 6, 16);
}

static size_t case_arp_truncated(uint8_t *f)
{
	arp_build(f, 6, 4);
	return ETH_HLEN + 8;
}

static size_t case_dhcp_optlen(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());

	f[o++] = 53;
	f[o++] = 1;
	f[o++] = 1;
	f[o++] = 12;		/* host name: 200 bytes claimed, 5 present */
	f[o++] = 200;
	memcpy(f + o, "guest", 5);
	return dhcp_finish(f, o + 5);
}

static size_t case_dhcp_msgtype_cut(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());

	f[o++] = 53;		/* message type with its length and no value */
	f[o++] = 1;
	return dhcp_finish(f, o);
}

static size_t case_dhcp_no_msgtype(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());

	f[o++] = 61;
	f[o++] = 7;
	f[o++] = 1;
	memcpy(f + o, mac_guest, 6);
	o += 6;
	f[o++] = 255;
	return dhcp_finish(f, o);
}

static size_t case_dhcp_bad_msgtype(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());

	f[o++] = 53;
	f[o++] = 4;		/* wrong length for message type */
	put_be32(f + o, 0x01ffffff);
	o += 4;
	f[o++] = 255;
	return dhcp_finish(f, o);
}

/* Near-64 KiB of options: message type, then parameter request lists and
 * client identifiers of 255 bytes each, no end option; option overload (52)
 * says sname and file carry options too, and they are filled with noise
 */
static size_t case_dhcp_overflow(uint8_t *f)
{
	size_t o = dhcp_build(f, rng()), i;
	uint8_t *b = f + ETH_HLEN + IP4_HLEN + UDP_HLEN;

	for (i = 44; i < 236; i++)	/* sname, file */
		b[i] = rng();
	f[o++] = 53;
	f[o++] = 1;
	f[o++] = 1;
	f[o++] = 52;
	f[o++] = 1;
	f[o++] = 3;
	while (o + 257 <= FRAME_MAX - 1) {
		f[o] = (o & 1) ? 55 : 61;
		f[o + 1] = 255;
		for (i = 0; i < 255; i++)
			f[o + 2 + i] = i;
		o += 257;
	}
	return dhcp_finish(f, o);
}

/* Option overload with sname/file holding one option that runs across the
 * boundary between them and another that never ends
 */
static size_t case_dhcp_overload(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());
	uint8_t *b = f + ETH_HLEN + IP4_HLEN + UDP_HLEN;

	f[o++] = 53;
	f[o++] = 1;
	f[o++] = 3;		/* DHCPREQUEST */
	f[o++] = 52;
	f[o++] = 1;
	f[o++] = 3;
	f[o++] = 255;
	b[44 + 60] = 12;	/* host name across sname's end into file */
	b[44 + 61] = 100;
	b[108 + 126] = 50;	/* requested address: length past file */
	b[108 + 127] = 200;
	return dhcp_finish(f, o);
}

static size_t case_dhcp_short(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());

	(void)o;
	return dhcp_finish(f, ETH_HLEN + IP4_HLEN + UDP_HLEN + 100);
}

static size_t case_dhcp_bad_magic(uint8_t *f)
{
	size_t len = dhcp_discover(f, rng());

	put_be32(f + ETH_HLEN + IP4_HLEN + UDP_HLEN + BOOTP_LEN, 0xdeadbeef);
	return len;
}

static size_t case_dhcp_no_end(uint8_t *f)
{
	size_t o = dhcp_build(f, rng());

	f[o++] = 53;
	f[o++] = 1;
	f[o++] = 1;
	f[o++] = 0;		/* pad, pad, and then nothing */
	f[o++] = 0;
	f[o++] = 55;
	return dhcp_finish(f, o);
}

/* DHCPv6 SOLICIT: client ID, then an IA_NA whose nested IAADDR claims 500
 * bytes, inside an IA_NA that itself fits the packet
 */
static size_t case_dhcpv6_ia_lie(uint8_t *f)
{
	uint8_t m[128] = { 1, 0x12, 0x34, 0x56 };
	size_t o = 4;

	put_be16(m + o, 1);		/* client ID: DUID-LL */
	put_be16(m + o + 2, 10);
	put_be16(m + o + 4, 3);
	put_be16(m + o + 6, 1);
	memcpy(m + o + 8, mac_guest, 6);
	o += 14;
	put_be16(m + o, 3);		/* IA_NA */
	put_be16(m + o + 2, 12 + 4 + 24);
	put_be32(m + o + 4, 1);
	o += 16;
	put_be16(m + o, 5);		/* IAADDR, length lies */
	put_be16(m + o + 2, 500);
	o += 4 + 24;
	return dhcp6_build(f, m, o);
}

/* IA_NA claiming more than the message holds */
static size_t case_dhcpv6_ia_long(uint8_t *f)
{
	uint8_t m[64] = { 1, 0x12, 0x34, 0x57 };
	size_t o = 4;

	put_be16(m + o, 3);
	put_be16(m + o + 2, 0xfff0);
	put_be32(m + o + 4, 1);
	o += 16;
	return dhcp6_build(f, m, o);
}

static size_t case_dhcpv6_opt_lie(uint8_t *f)
{
	uint8_t m[16] = { 1, 0x12, 0x34, 0x58 };

	put_be16(m + 4, 1);
	put_be16(m + 6, 0xffff);
	return dhcp6_build(f, m, 10);
}

static size_t case_dhcpv6_short(uint8_t *f)
{
	uint8_t m[2] = { 1, 0x12 };

	return dhcp6_build(f, m, sizeof(m));
}

/* IA_NA of length 0 (shorter than its fixed part) and a request with
 * no client ID
 */
static size_t case_dhcpv6_ia_short(uint8_t *f)
{
	uint8_t m[16] = { 3, 0x12, 0x34, 0x59 };

	put_be16(m + 4, 3);
	put_be16(m + 6, 0);
	return dhcp6_build(f, m, 8);
}

static size_t case_ndp_ns_zero_opt(uint8_t *f)
{
	return ndp_ns(f, 0, 8);
}

static size_t case_ndp_ns_opt_long(uint8_t *f)
{
	return ndp_ns(f, 255, 8);
}

static size_t case_ndp_ns_truncated(uint8_t *f)
{
	size_t len = ndp_ns(f, 1, 0);

	return len - 12;	/* target address cut in half */
}

static size_t case_rs_truncated(uint8_t *f)
{
	return ndp_rs(f, 0, 0);
}

static size_t case_rs_zero_opt(uint8_t *f)
{
	return ndp_rs(f, 12, 0);
}

static size_t case_icmp_echo_truncated(uint8_t *f)
{
	return icmp4_echo(f, 4, 0);
}

static size_t case_icmp_echo_tiny(uint8_t *f)
{
	return icmp4_echo(f, 1, 0);
}

static size_t case_icmpv6_echo_truncated(uint8_t *f)
{
	return icmp6_echo(f, 4, 0);
}

static size_t case_runt(uint8_t *f)
{
	return eth_build(f, mac_daemon, ETH_P_IP_);
}

static size_t case_vlan(uint8_t *f)
{
	size_t o = eth_build(f, mac_daemon, 0x8100);

	put_be16(f + o, 1);
	put_be16(f + o + 2, ETH_P_IP_);
	return o + 4;
}

static const build_fn templates[] = {
	case_dhcp_optlen, case_dhcp_no_msgtype, case_dhcpv6_ia_lie,
	case_ndp_ns_zero_opt, case_rs_zero_opt, case_tcp_bad_doff,
	case_ipv6_ext_loop, case_arp_bad_hlen,
};

/* garbage_build() - one pseudo-random frame: a valid or broken template
 * with random bytes flipped and a random length, or plain noise
 */
static size_t garbage_build(uint8_t *f)
{
	size_t len, i, n;

	switch (rng() % 8) {
	case 0:
		len = rng() % 1600;
		for (i = 0; i < len; i++)
			f[i] = rng();
		return len < ETH_HLEN ? ETH_HLEN : len;
	case 1:
		len = dhcp_discover(f, rng());
		break;
	case 2:
		len = ndp_rs(f, 8, 1);
		memcpy(f + len - 8 + 2, mac_guest, 6);
		break;
	case 3:
		len = arp_build(f, 6, 4);
		break;
	case 4:
		len = icmp6_echo(f, 8 + rng() % 64, 0);
		break;
	case 5:
		len = icmp4_echo(f, 8 + rng() % 64, 0);
		break;
	default:
		len = templates[rng() % (sizeof(templates) /
					 sizeof(templates[0]))](f);
	}

	/* Mutate a few bytes past the Ethernet header, maybe truncate */
	n = 1 + rng() % 8;
	for (i = 0; i < n && len > ETH_HLEN; i++)
		f[ETH_HLEN + rng() % (len - ETH_HLEN)] = rng();
	if (!(rng() % 4) && len > ETH_HLEN)
		len = ETH_HLEN + rng() % (len - ETH_HLEN);
	return len;
}

struct frame_case {
	const char *name;
	build_fn build;
	const char *what;
};

static const struct frame_case frame_cases[] = {
	{ "runt", case_runt, "14-byte frame: Ethernet header only" },
	{ "vlan", case_vlan, "802.1Q tag, nothing behind it" },
	{ "truncated-ipv4", case_truncated_ipv4, "10 bytes of IPv4 header" },
	{ "ipv4-ihl-long", case_ipv4_ihl_long, "IHL 15 in a 28-byte packet" },
	{ "ipv4-ihl-short", case_ipv4_ihl_short, "IHL 2" },
	{ "ipv4-totlen-long", case_ipv4_totlen_long, "tot_len > frame" },
	{ "ipv4-totlen-short", case_ipv4_totlen_short, "tot_len < header" },
	{ "ipv4-bad-version", case_ipv4_bad_version, "version 6 in IPv4" },
	{ "udp-len-long", case_udp_len_long, "UDP length > packet" },
	{ "udp-len-short", case_udp_len_short, "UDP length < header" },
	{ "udp-truncated", case_udp_truncated, "4-byte UDP header" },
	{ "tcp-truncated", case_tcp_truncated, "10-byte TCP header" },
	{ "tcp-bad-doff", case_tcp_bad_doff, "TCP data offset 60, 20 bytes" },
	{ "tcp-doff-short", case_tcp_doff_short, "TCP data offset 8" },
	{ "truncated-ipv6", case_truncated_ipv6, "20 bytes of IPv6 header" },
	{ "ipv6-plen-long", case_ipv6_plen_long, "payload length > frame" },
	{ "ipv6-plen-short", case_ipv6_plen_short, "payload length 2" },
	{ "ipv6-ext-oversize", case_ipv6_ext_oversize,
	  "extension header of 2048 bytes in 8" },
	{ "ipv6-ext-chain", case_ipv6_ext_chain,
	  "4000 extension headers, chain runs past the end" },
	{ "ipv6-ext-loop", case_ipv6_ext_loop,
	  "hop-by-hop and fragment headers pointing at each other" },
	{ "arp-bad-hlen", case_arp_bad_hlen, "ARP hardware length 200" },
	{ "arp-bad-plen", case_arp_bad_plen, "ARP protocol length 16" },
	{ "arp-truncated", case_arp_truncated, "8 bytes of ARP" },
	{ "dhcp-optlen", case_dhcp_optlen, "option runs past the packet" },
	{ "dhcp-msgtype-cut", case_dhcp_msgtype_cut,
	  "message type option without its value" },
	{ "dhcp-no-msgtype", case_dhcp_no_msgtype, "no message type option" },
	{ "dhcp-bad-msgtype", case_dhcp_bad_msgtype,
	  "message type option of length 4" },
	{ "dhcp-overflow", case_dhcp_overflow,
	  "64 KiB of options, overload into sname/file" },
	{ "dhcp-overload", case_dhcp_overload,
	  "overloaded sname/file with options crossing their ends" },
	{ "dhcp-short", case_dhcp_short, "BOOTP header cut at 100 bytes" },
	{ "dhcp-bad-magic", case_dhcp_bad_magic, "wrong magic cookie" },
	{ "dhcp-no-end", case_dhcp_no_end, "options without end option" },
	{ "dhcpv6-ia-lie", case_dhcpv6_ia_lie,
	  "IAADDR inside IA_NA claims 500 bytes" },
	{ "dhcpv6-ia-long", case_dhcpv6_ia_long, "IA_NA claims 65520 bytes" },
	{ "dhcpv6-ia-short", case_dhcpv6_ia_short, "IA_NA of length 0" },
	{ "dhcpv6-opt-lie", case_dhcpv6_opt_lie, "option length 65535" },
	{ "dhcpv6-short", case_dhcpv6_short, "2-byte DHCPv6 message" },
	{ "ndp-ns-zero-opt", case_ndp_ns_zero_opt,
	  "neighbour solicitation, option length 0" },
	{ "ndp-ns-opt-long", case_ndp_ns_opt_long,
	  "neighbour solicitation, option length 2040 in 8" },
	{ "ndp-ns-truncated", case_ndp_ns_truncated,
	  "neighbour solicitation, target cut" },
	{ "rs-truncated", case_rs_truncated, "4-byte router solicitation" },
	{ "rs-zero-opt", case_rs_zero_opt,
	  "router solicitation, option length 0" },
	{ "icmp-echo-truncated", case_icmp_echo_truncated,
	  "4-byte ICMP echo request" },
	{ "icmp-echo-tiny", case_icmp_echo_tiny, "1-byte ICMP message" },
	{ "icmpv6-echo-truncated", case_icmpv6_echo_truncated,
	  "4-byte ICMPv6 echo request" },
	{ NULL, NULL, NULL },
};

/* Cases breaking the framing: raw bytes sent as they are */
struct prefix_case {
	const char *name;
	uint32_t len;		/* length prefix */
	size_t body;		/* bytes following it */
	const char *what;
};

static const struct prefix_case prefix_cases[] = {
	{ "truncated-eth", 5, 5, "5-byte frame" },
	{ "zero-length", 0, 0, "length prefix 0" },
	{ "oversized-length", 0x00100000, 4096, "length prefix 1 MiB" },
	{ "huge-length", 0xffffffff, 64, "length prefix 4 GiB - 1" },
	{ "just-over", 65536, 65536, "length prefix 65536" },
	{ NULL, 0, 0, NULL },
};

/* ---- connection ------------------------------------------------------- */

static int sock_open(void)
{
	sock = unix_connect_retry("framesend", sock_path, (uint64_t)timeout_ms,
				  1 << 20);
	if (sock < 0)
		return -1;
	rx_len = rx_consumed = 0;
	return 0;
}

static bool is_arp_reply(const uint8_t *f, size_t len);

/* rx_compact() - forget the frame frame_recv() handed out last, and if the
 * buffer is getting full, frames nobody waited for (counting ARP replies):
 * keep any partial frame
 */
static void rx_compact(void)
{
	size_t off = rx_consumed;

	if (rx_len > sizeof(rx_buf) / 2) {
		while (rx_len - off >= 4) {
			uint32_t len = (uint32_t)get_be16(rx_buf + off) << 16 |
				       get_be16(rx_buf + off + 2);

			if (rx_len - off < 4 + (size_t)len)
				break;
			rx_arp_skipped += is_arp_reply(rx_buf + off + 4, len);
			off += 4 + len;
		}
	}
	memmove(rx_buf, rx_buf + off, rx_len - off);
	rx_len -= off;
	rx_consumed = 0;
}

/* sock_drain() - read what the daemon sent, keep it in rx_buf
 *
 * Return: 0 if the connection is alive, -1 if it was closed or reset
 */
static int sock_drain(void)
{
	rx_compact();
	for (;;) {
		ssize_t n;

		if (rx_len == sizeof(rx_buf))	/* a frame > 64 KiB: bogus */
			return -1;
		n = recv(sock, rx_buf + rx_len, sizeof(rx_buf) - rx_len, 0);
		if (n > 0) {
			rx_len += n;
			if (rx_len > sizeof(rx_buf) / 2)
				rx_compact();
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return -1;
	}
}

/* sock_send() - send @len bytes, draining input while the socket is full
 *
 * Return: 0 on success, -1 if the connection went away meanwhile
 */
static int sock_send(const uint8_t *p, size_t len)
{
	uint64_t deadline = now_ms() + timeout_ms;

	while (len) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN | POLLOUT };
		ssize_t n = send(sock, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (now_ms() > deadline) {
			fprintf(stderr, "framesend: daemon stopped reading\n");
			return -1;
		}
		poll(&pfd, 1, 100);
		if (pfd.revents & POLLIN && sock_drain())
			return -1;
	}
	return sock_drain();
}

static int frame_send(const uint8_t *f, size_t len)
{
	uint8_t prefix[4];

	put_be32(prefix, len);
	if (sock_send(prefix, 4))
		return -1;
	return sock_send(f, len);
}

/* frame_recv() - next complete frame from the daemon, waiting until @deadline
 * @f:		set to the frame, valid until the next call
 *
 * Return: frame length, 0 on timeout, -1 if the connection is gone
 */
static ssize_t frame_recv(const uint8_t **f, uint64_t deadline)
{
	rx_compact();
	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		uint64_t now = now_ms();
		int gone;

		if (rx_len >= 4) {
			uint32_t len = (uint32_t)get_be16(rx_buf) << 16 |
				       get_be16(rx_buf + 2);

			if (len > FRAME_MAX) {
				fprintf(stderr, "framesend: daemon sent a "
					"frame of %u bytes\n", len);
				return -1;
			}
			if (rx_len >= 4 + len) {
				*f = rx_buf + 4;
				rx_consumed = 4 + len;
				return len;
			}
		}
		if (now >= deadline)
			return 0;
		poll(&pfd, 1, deadline - now);
		gone = sock_drain();
		if (gone && rx_len < 4)
			return -1;
		if (gone) {
			uint32_t len = (uint32_t)get_be16(rx_buf) << 16 |
				       get_be16(rx_buf + 2);

			if (rx_len < 4 + len)
				return -1;
		}
	}
}

/* ---- control cases ---------------------------------------------------- */

static bool is_arp_reply(const uint8_t *f, size_t len)
{
	return len >= ETH_HLEN + 28 && get_be16(f + 12) == ETH_P_ARP_ &&
	       get_be16(f + ETH_HLEN + 6) == 2 &&
	       !memcmp(f + ETH_HLEN + 14, &ip4_gw, 4);
}

static bool is_dhcp_offer(const uint8_t *f, size_t len, uint32_t xid)
{
	const uint8_t *ip = f + ETH_HLEN, *udp, *b;
	size_t ihl;

	if (len < ETH_HLEN + IP4_HLEN || get_be16(f + 12) != ETH_P_IP_ ||
	    ip[9] != 17)
		return false;
	ihl = (ip[0] & 0xf) * 4;
	if (len < ETH_HLEN + ihl + UDP_HLEN + BOOTP_LEN)
		return false;
	udp = ip + ihl;
	b = udp + UDP_HLEN;
	return get_be16(udp) == 67 && get_be16(udp + 2) == 68 && b[0] == 2 &&
	       ((uint32_t)get_be16(b + 4) << 16 | get_be16(b + 6)) == xid;
}

/* probe() - send a request every 500 ms until an answer arrives
 * @arp:	ARP request for the gateway if true, DHCPDISCOVER otherwise
 *
 * Return: 0 if answered, 1 if not
 */
static int probe(bool arp)
{
	uint64_t deadline = now_ms() + timeout_ms, next = 0;
	uint32_t xid = rng();
	unsigned other = 0;

	for (;;) {
		uint64_t now = now_ms(), until;
		const uint8_t *f;
		ssize_t len;

		if (now >= deadline) {
			fprintf(stderr, "framesend: no %s within %d ms "
				"(%u other frames seen)\n",
				arp ? "ARP reply" : "DHCPOFFER", timeout_ms,
				other);
			return 1;
		}
		if (now >= next) {
			size_t n = arp ? arp_build(frame, 6, 4) :
					 dhcp_discover(frame, xid);

			if (frame_send(frame, n)) {
				fprintf(stderr, "framesend: connection closed "
					"by the daemon during the probe\n");
				return 1;
			}
			next = now + 500;
		}

		until = next < deadline ? next : deadline;
		len = frame_recv(&f, until);
		if (len < 0) {
			fprintf(stderr, "framesend: connection closed "
				"by the daemon during the probe\n");
			return 1;
		}
		if (!len)
			continue;
		if (arp ? is_arp_reply(f, len) : is_dhcp_offer(f, len, xid))
			return 0;
		other++;
	}
}

/* arp_batch() - garbage_count ARP requests, each with its length prefix,
 * in one malloc()ed buffer whose length goes to *@len; NULL if out of memory
 */
static uint8_t *arp_batch(size_t *len)
{
	uint8_t *buf = malloc((size_t)garbage_count * (4 + FRAME_MAX_ARP));
	size_t off = 0;
	unsigned i;

	if (!buf) {
		perror("framesend: malloc");
		return NULL;
	}
	for (i = 0; i < garbage_count; i++) {
		size_t n = arp_build(buf + off + 4, 6, 4);

		put_be32(buf + off, n);
		off += 4 + n;
	}
	*len = off;
	return buf;
}

/* arp_burst() - garbage_count ARP requests for the gateway in one send(),
 * then wait for as many replies
 *
 * Return: 0 if all came, 1 if not
 */
static int arp_burst(void)
{
	uint64_t deadline;
	unsigned got = 0;
	size_t off;
	uint8_t *buf;
	int rc = 1, sent;

	if (!(buf = arp_batch(&off)))
		return 1;

	/* Replies to earlier cases don't count */
	if (sock_drain())
		goto closed;
	rx_len = rx_consumed = 0;
	rx_arp_skipped = 0;

	if (stop_pid && kill(stop_pid, SIGSTOP)) {
		perror("framesend: -S: SIGSTOP");
		goto out;
	}
	sent = sock_send(buf, off);
	if (stop_pid && kill(stop_pid, SIGCONT)) {
		perror("framesend: -S: SIGCONT");
		goto out;
	}
	if (sent)
		goto closed;
	deadline = now_ms() + timeout_ms;
	while (got + rx_arp_skipped < garbage_count) {
		const uint8_t *f;
		ssize_t len = frame_recv(&f, deadline);

		if (len < 0)
			goto closed;
		if (!len) {
			fprintf(stderr, "framesend: %u of %u ARP replies "
				"within %d ms\n", got + rx_arp_skipped,
				garbage_count, timeout_ms);
			goto out;
		}
		got += is_arp_reply(f, len);
	}
	rc = 0;
	goto out;
closed:
	fprintf(stderr, "framesend: connection closed by the daemon during "
		"the ARP burst\n");
out:
	free(buf);
	return rc;
}

/* hold_unread() - garbage_count ARP requests; once all the replies wait
 * unread in our socket, a length prefix of 5 bytes: the daemon drops the
 * connection, which we keep as it is, and go on on a new one with another
 * MAC address. The daemon's output buffer then has frames for the new
 * connection where the held one's replies were.
 *
 * Return: 0 if the replies came and the daemon closed, 1 if not
 */
static int hold_unread(void)
{
	uint64_t deadline = now_ms() + timeout_ms;
	size_t want = (size_t)garbage_count * (4 + 60), off, i;
	uint8_t *buf, bad[4];
	int queued = 0;

	if (held >= 0 || sock_drain() || !(buf = arp_batch(&off)))
		return 1;
	for (i = 0; i < off; ) {
		ssize_t n = send(sock, buf + i, off - i, MSG_NOSIGNAL);

		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		if (n > 0)
			i += n;
		else if (now_ms() > deadline)
			break;
	}
	free(buf);
	/* Replies are padded to 60 bytes: wait for all of them, unread */
	while (i == off && !ioctl(sock, FIONREAD, &queued) &&
	       (size_t)queued < want && now_ms() < deadline) {
		struct timespec t = { 0, 10 * 1000 * 1000 };

		nanosleep(&t, NULL);
	}
	if ((size_t)queued < want) {
		fprintf(stderr, "framesend: hold-unread: %d of %zu bytes of "
			"replies\n", queued, want);
		return 1;
	}
	put_be32(bad, 5);
	if (send(sock, bad, sizeof(bad), MSG_NOSIGNAL) != sizeof(bad)) {
		perror("framesend: hold-unread: send");
		return 1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLRDHUP };
		uint64_t now = now_ms();

		if (now >= deadline) {
			fprintf(stderr, "framesend: hold-unread: the daemon "
				"kept the connection\n");
			return 1;
		}
		if (poll(&pfd, 1, deadline - now) > 0 &&
		    pfd.revents & (POLLRDHUP | POLLHUP))
			break;
	}
	held = sock;
	memcpy(mac_held, mac_guest, 6);
	mac_guest[5] ^= 0xff;
	return sock_open() ? 1 : 0;
}

/* check_held() - read the held connection to its end: the daemon's
 * garbage_count ARP replies to the held MAC address, and nothing sent to
 * the other one (its frames, in place of the held ones, would be a leak
 * from one front-end to the one before)
 *
 * Return: 0 if so, 1 if not
 */
static int check_held(void)
{
	static uint8_t q[1 << 20];
	unsigned replies = 0, other = 0, leaked = 0;
	size_t len = 0, off = 0;
	ssize_t n;

	if (held < 0)
		return 1;
	while (len < sizeof(q) &&
	       (n = recv(held, q + len, sizeof(q) - len, MSG_DONTWAIT)) > 0)
		len += n;
	close(held);
	held = -1;
	while (len - off >= 4) {
		uint32_t flen = (uint32_t)get_be16(q + off) << 16 |
				get_be16(q + off + 2);
		const uint8_t *f = q + off + 4;

		if (flen < ETH_HLEN || len - off - 4 < flen)
			break;
		if (!memcmp(f, mac_guest, 6))
			leaked++;
		else if (is_arp_reply(f, flen) && !memcmp(f, mac_held, 6) &&
			 !memcmp(f + ETH_HLEN + 18, mac_held, 6))
			replies++;
		else
			other++;
		off += 4 + flen;
	}
	if (leaked || replies != garbage_count || off != len) {
		fprintf(stderr, "framesend: check-held: %u replies of %u, %u "
			"frames for the next connection, %u others, %zu of "
			"%zu bytes in whole frames\n", replies, garbage_count,
			leaked, other, off, len);
		return 1;
	}
	return 0;
}

/* expect_close() - wait for the daemon to close or reset the connection
 *
 * Return: 0 if it did before the deadline, 1 if not
 */
static int expect_close(void)
{
	uint64_t deadline = now_ms() + timeout_ms;
	const uint8_t *f;
	ssize_t len;

	while ((len = frame_recv(&f, deadline)) > 0)
		;
	if (len < 0)
		return 0;
	fprintf(stderr, "framesend: connection still open after %d ms\n",
		timeout_ms);
	return 1;
}

/* ---- main ------------------------------------------------------------- */

static void usage(const char *name)
{
	const struct frame_case *fc;
	const struct prefix_case *pc;

	fprintf(stderr,
		"Usage: %s [OPTIONS] SOCKPATH CASE...\n"
		"  -t SECONDS  deadline for each wait (default 5)\n"
		"  -s SEED     seed for garbage (default 1)\n"
		"  -n COUNT    frames sent by garbage, arp-burst (default 1000)\n"
		"  -a ADDR     guest IPv4 address (default 192.0.2.2)\n"
		"  -g ADDR     gateway IPv4 address (default 192.0.2.1)\n"
		"  -p ADDR     remote IPv4 peer (default 203.0.113.7)\n"
		"  -P ADDR     remote IPv6 peer (default 2001:db8:2::7)\n"
		"  -S PID      arp-burst: stop PID (the daemon) while sending\n"
		"  -v          name each case as it is sent\n"
		"\nControl cases:\n"
		"  arp-probe     ARP request for the gateway; fail if no reply\n"
		"  arp-burst     COUNT ARP requests in one send(); fail unless\n"
		"                COUNT replies\n"
		"  dhcp-probe    DHCPDISCOVER; fail if no DHCPOFFER\n"
		"  rarp          the RARP QEMU writes to announce the guest\n"
		"  expect-close  fail unless the daemon closes the connection\n"
		"  reconnect     close and connect again\n"
		"  hold-unread   COUNT ARP requests, the replies left unread;\n"
		"                a bad prefix, the daemon must close; keep\n"
		"                that connection, open a new one (another MAC)\n"
		"  check-held    the held connection holds the COUNT replies,\n"
		"                nothing for the new one\n"
		"  garbage       COUNT seeded pseudo-random frames\n"
		"  all-frames    every frame case below, in order\n"
		"\nFrame cases (connection must survive):\n", name);
	for (fc = frame_cases; fc->name; fc++)
		fprintf(stderr, "  %-22s %s\n", fc->name, fc->what);
	fprintf(stderr, "\nFraming cases (daemon must reset the "
		"connection):\n");
	for (pc = prefix_cases; pc->name; pc++)
		fprintf(stderr, "  %-22s %s\n", pc->name, pc->what);
	exit(2);
}

static int send_built(const char *name, size_t len)
{
	if (verbose)
		fprintf(stderr, "framesend: %s (%zu bytes)\n", name, len);
	if (frame_send(frame, len)) {
		fprintf(stderr, "framesend: connection closed by the daemon "
			"after %s\n", name);
		return 1;
	}
	return 0;
}

/* rarp_build() - QEMU's announcement of the guest after a migration, as
 * it writes it into a stream back-end's socket: a RARP reverse request for
 * the guest's MAC, padded to 60 bytes
 */
static size_t rarp_build(uint8_t *f)
{
	size_t o = eth_build(f, mac_bcast, 0x8035);

	memset(f + o, 0, 60 - o);
	put_be16(f + o, 1);		/* Ethernet */
	put_be16(f + o + 2, 0x0800);	/* IPv4 */
	f[o + 4] = 6;
	f[o + 5] = 4;
	put_be16(f + o + 6, 3);		/* reverse request */
	memcpy(f + o + 8, mac_guest, 6);
	memcpy(f + o + 18, mac_guest, 6);
	return 60;
}

/* run_case() - Return: 0 on success, 1 on failure, 2 on unknown case */
static int run_case(const char *name)
{
	const struct frame_case *fc;
	const struct prefix_case *pc;
	unsigned i;

	if (!strcmp(name, "arp-probe"))
		return probe(true);
	if (!strcmp(name, "rarp"))
		return send_built(name, rarp_build(frame));
	if (!strcmp(name, "arp-burst"))
		return arp_burst();
	if (!strcmp(name, "dhcp-probe"))
		return probe(false);
	if (!strcmp(name, "expect-close"))
		return expect_close();
	if (!strcmp(name, "hold-unread"))
		return hold_unread();
	if (!strcmp(name, "check-held"))
		return check_held();
	if (!strcmp(name, "reconnect")) {
		close(sock);
		return sock_open() ? 1 : 0;
	}
	if (!strcmp(name, "garbage")) {
		for (i = 0; i < garbage_count; i++) {
			if (send_built("garbage", garbage_build(frame)))
				return 1;
		}
		return 0;
	}
	if (!strcmp(name, "all-frames")) {
		for (fc = frame_cases; fc->name; fc++) {
			if (send_built(fc->name, fc->build(frame)))
				return 1;
		}
		return 0;
	}

	for (fc = frame_cases; fc->name; fc++) {
		if (!strcmp(name, fc->name))
			return send_built(name, fc->build(frame));
	}

	for (pc = prefix_cases; pc->name; pc++) {
		uint8_t hdr[4];
		size_t sent;

		if (strcmp(name, pc->name))
			continue;
		if (verbose)
			fprintf(stderr, "framesend: %s\n", name);

		/* The daemon may reset while we send: that's expected */
		put_be32(hdr, pc->len);
		if (sock_send(hdr, 4))
			return 0;
		memset(frame, 0xa5, sizeof(frame));
		for (sent = 0; sent < pc->body; sent += sizeof(frame)) {
			size_t n = pc->body - sent;

			if (sock_send(frame, n < sizeof(frame) ? n :
					     sizeof(frame)))
				return 0;
		}
		return 0;
	}

	return 2;
}

int main(int argc, char **argv)
{
	int opt, i, rc;

	inet_pton(AF_INET, "192.0.2.2", &ip4_guest);
	inet_pton(AF_INET, "192.0.2.1", &ip4_gw);
	inet_pton(AF_INET, "203.0.113.7", &ip4_peer);
	inet_pton(AF_INET6, "2001:db8:2::7", &ip6_peer);
	inet_pton(AF_INET6, "fe80::5054:ff:fe12:3456", &ip6_ll);
	inet_pton(AF_INET6, "ff02::2", &ip6_allrouters);
	inet_pton(AF_INET6, "ff02::1:2", &ip6_dhcp);
	inet_pton(AF_INET6, "ff02::1:ff00:1", &ip6_snm);
	rng_state = 1;

	while ((opt = getopt(argc, argv, "t:s:n:a:g:p:P:S:vh")) != -1) {
		switch (opt) {
		case 't':
			timeout_ms = atoi(optarg) * 1000;
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0) ?: 1;
			break;
		case 'n':
			garbage_count = strtoul(optarg, NULL, 0);
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &ip4_guest) != 1)
				usage(argv[0]);
			break;
		case 'g':
			if (inet_pton(AF_INET, optarg, &ip4_gw) != 1)
				usage(argv[0]);
			break;
		case 'p':
			if (inet_pton(AF_INET, optarg, &ip4_peer) != 1)
				usage(argv[0]);
			break;
		case 'P':
			if (inet_pton(AF_INET6, optarg, &ip6_peer) != 1)
				usage(argv[0]);
			break;
		case 'S':
			stop_pid = (pid_t)strtol(optarg, NULL, 0);
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind > argc - 2)
		usage(argv[0]);
	sock_path = argv[optind++];

	/* Check the case names before sending anything */
	for (i = optind; i < argc; i++) {
		const struct frame_case *fc;
		const struct prefix_case *pc;
		bool known = false;
		static const char *const ctl[] = {
			"arp-probe", "arp-burst", "dhcp-probe", "expect-close",
			"reconnect", "garbage", "all-frames", "hold-unread",
			"check-held", "rarp",
		};
		unsigned j;

		for (fc = frame_cases; fc->name; fc++)
			known |= !strcmp(argv[i], fc->name);
		for (pc = prefix_cases; pc->name; pc++)
			known |= !strcmp(argv[i], pc->name);
		for (j = 0; j < sizeof(ctl) / sizeof(ctl[0]); j++)
			known |= !strcmp(argv[i], ctl[j]);
		if (!known) {
			fprintf(stderr, "framesend: unknown case %s\n",
				argv[i]);
			usage(argv[0]);
		}
	}

	if (sock_open())
		return 2;

	for (i = optind; i < argc; i++) {
		rc = run_case(argv[i]);
		if (rc) {
			fprintf(stderr, "framesend: %s: FAILED\n", argv[i]);
			return 1;
		}
		if (verbose)
			fprintf(stderr, "framesend: %s: ok\n", argv[i]);
	}

	close(sock);
	return 0;
}
