// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ndp.c - Neighbor Discovery (RFC 4861): neighbour and router for the guest.
 *
 * Theory of operation
 *
 * As with ARP, the guest's only neighbour is us, and we stand in for every
 * other IPv6 address, on-link or not. Two roles:
 *
 * Neighbour: a Neighbor Solicitation for any target gets a Neighbor
 * Advertisement with our MAC in a Target Link-Layer Address option, flags
 * Router, Solicited and Override set, sent from the target address itself
 * to the soliciting address. Not answered:
 * - Duplicate Address Detection (source ::): the guest is probing an
 *   address it wants; an answer would make its DAD fail;
 * - solicitations for the guest's own addresses (c->ip6.addr, the learned
 *   link-local c->ip6.guest_ll, or the solicitation's own source);
 * - multicast or unspecified targets, which are invalid.
 *
 * Router: a Router Solicitation gets a Router Advertisement from our
 * link-local address (c->ip6.our_ll, or one derived from our MAC if that is
 * not link-local), to the soliciting address or, from ::, to all-nodes.
 * The RA carries:
 * - M and O flags unless DHCPv6 is disabled, router lifetime 9000 s (the
 *   maximum of RFC 4861, section 6.2.1), current hop limit 64;
 * - Source Link-Layer Address: our MAC;
 * - MTU, if one is configured (c->mtu >= 1280);
 * - Prefix Information: the /64 of c->ip6.addr, on-link and autonomous
 *   (SLAAC), infinite lifetimes;
 * - RDNSS (RFC 8106) with c->ip6.dns, unless --no-dhcp-dns;
 * - DNSSL (RFC 8106) with the search list, unless --no-dhcp-search; names
 *   that would push the RA beyond NDP_RA_MAX are left out.
 * RDNSS and DNSSL lifetimes are three RA intervals (RFC 8106 recommends at
 * least that), and unsolicited RAs go to all-nodes when a guest attaches and
 * every NDP_RA_INTERVAL_MS (local/local.c), so neither router nor DNS entries
 * ever expire while we run. --no-ra turns all RAs off, --no-ndp all of NDP.
 *
 * Validation (RFC 4861, sections 6.1.1 and 7.1.1): hop limit 255 (so the
 * message cannot have been forwarded), code 0, correct ICMPv6 checksum, the
 * fixed part complete, every option of non-zero length and inside the
 * message; an RS from :: carries no SLLA option. A message failing any check
 * is dropped whole. Other ND messages (RA, NA, Redirect) from the guest are
 * ignored.
 *
 * We learn the guest's link-local address from the source of its RS and NS.
 * Nothing here sends: ndp_reply() checks a message and builds the answer,
 * ndp_ra() an unsolicited RA, with the addresses each goes between, from
 * the pure builders ndp_build_ra() and ndp_build_na(); local/local.c sends
 * them, and the ICMPv6 checksum is left zero for tap_send_ip6() to fill in.
 */
#include <errno.h>
#include <string.h>

#include "ctx.h"
#include "log.h"
#include "net/checksum.h"
#include "net/ndp.h"
#include "net/packet.h"
#include "util.h"

#define ND_RS 133
#define ND_RA 134
#define ND_NS 135
#define ND_NA 136

#define ND_OPT_SLLA  1
#define ND_OPT_TLLA  2
#define ND_OPT_PI    3
#define ND_OPT_MTU   5
#define ND_OPT_RDNSS 25
#define ND_OPT_DNSSL 31

#define ND_RA_M 0x80
#define ND_RA_O 0x40
#define ND_NA_R 0x80
#define ND_NA_S 0x40
#define ND_NA_O 0x20
#define ND_PI_L 0x80
#define ND_PI_A 0x40

#define ND_RS_LEN 8 /* fixed part, options follow */
#define ND_NS_LEN 24

#define NDP_HOP_LIMIT	 64
#define NDP_DNS_LIFETIME (3 * NDP_RA_INTERVAL_MS / 1000)
#define IPV6_MIN_MTU	 1280

static const struct in6_addr ndp_all_nodes = {
	.s6_addr = {0xff, 0x02, [15] = 0x01}};

/* Writer over an output buffer: stops writing, and says so, once full */
struct ndp_buf {
	uint8_t *p;
	size_t cap;
	size_t len;
	bool full;
};

static void nb_put(struct ndp_buf *b, const void *d, size_t n)
{
	if (b->full || n > b->cap - b->len) {
		b->full = true;
		return;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void nb_u8(struct ndp_buf *b, uint8_t v)
{
	nb_put(b, &v, 1);
}

static void nb_be16(struct ndp_buf *b, uint16_t v)
{
	uint8_t d[2] = {v >> 8, v & 0xff};

	nb_put(b, d, 2);
}

static void nb_be32(struct ndp_buf *b, uint32_t v)
{
	uint8_t d[4] = {v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff};

	nb_put(b, d, 4);
}

static void nb_zero(struct ndp_buf *b, size_t n)
{
	static const uint8_t z[8];

	while (n && !b->full) {
		size_t k = MIN(n, sizeof(z));

		nb_put(b, z, k);
		n -= k;
	}
}

/**
 * ndp_router_addr() - the link-local address we advertise as router
 * @c:		execution context
 * @addr:	c->ip6.our_ll if it is link-local, else fe80:: with an
 *		interface identifier derived from our MAC (modified EUI-64)
 */
void ndp_router_addr(const struct ctx *c, struct in6_addr *addr)
{
	const uint8_t *m = c->our_mac;

	if (IN6_IS_ADDR_LINKLOCAL(&c->ip6.our_ll)) {
		*addr = c->ip6.our_ll;
		return;
	}

	memset(addr, 0, sizeof(*addr));
	addr->s6_addr[0] = 0xfe;
	addr->s6_addr[1] = 0x80;
	addr->s6_addr[8] = m[0] ^ 0x02;
	addr->s6_addr[9] = m[1];
	addr->s6_addr[10] = m[2];
	addr->s6_addr[11] = 0xff;
	addr->s6_addr[12] = 0xfe;
	addr->s6_addr[13] = m[3];
	addr->s6_addr[14] = m[4];
	addr->s6_addr[15] = m[5];
}

/**
 * ndp_dns_name() - encode a dotted name in DNS wire format
 * @name:	the name
 * @out:	output buffer
 * @cap:	size of @out
 *
 * Return: length of the encoded name, 0 if invalid or too long
 */
static size_t ndp_dns_name(const char *name, uint8_t *out, size_t cap)
{
	size_t n = 0, i = 0;

	if (!name[0] || cap < 2)
		return 0;

	while (name[i]) {
		const char *dot = strchr(name + i, '.');
		size_t l = dot ? (size_t)(dot - (name + i)) : strlen(name + i);

		if (!l || l > 63 || n + 1 + l + 1 > MIN(cap, 255))
			return 0;
		out[n++] = (uint8_t)l;
		memcpy(out + n, name + i, l);
		n += l;
		i += l;
		if (name[i] == '.')
			i++;
	}
	out[n++] = 0;
	return n;
}

/**
 * ndp_put_dnssl() - DNSSL option with as many search domains as fit
 * @c:		execution context
 * @b:		message being built
 * @limit:	length the message may reach, in bytes
 */
static void ndp_put_dnssl(const struct ctx *c, struct ndp_buf *b, size_t limit)
{
	size_t start = b->len, names, room;
	int i;

	if (limit < start + 8 + 8)
		return;
	nb_u8(b, ND_OPT_DNSSL);
	nb_u8(b, 0); /* length, set below */
	nb_be16(b, 0);
	nb_be32(b, NDP_DNS_LIFETIME);
	if (b->full)
		return;

	names = b->len;
	for (i = 0; i < c->search_count && i < MAXDNS_SEARCH; i++) {
		uint8_t enc[256];
		size_t n;

		n = ndp_dns_name(c->search[i].name, enc, sizeof(enc));
		if (!n) {
			debug("NDP: search domain '%s' not encodable, skipped",
			      c->search[i].name);
			continue;
		}
		/* Room for this name plus padding to the next 8 bytes */
		room = limit - b->len;
		if (ROUND_UP(b->len - start + n, 8) - (b->len - start) > room) {
			debug("NDP: search domain '%s' does not fit the RA",
			      c->search[i].name);
			continue;
		}
		nb_put(b, enc, n);
	}

	if (b->len == names) { /* nothing made it: no option */
		b->len = start;
		return;
	}
	nb_zero(b, ROUND_UP(b->len - start, 8) - (b->len - start));
	b->p[start + 1] = (uint8_t)((b->len - start) / 8);
}

/**
 * ndp_build_ra() - build a Router Advertisement for the guest
 * @c:		execution context
 * @out:	buffer for the ICMPv6 message, from its type byte
 * @cap:	size of @out; at most NDP_RA_MAX bytes are used
 *
 * The checksum field is left zero.
 *
 * Return: length of the message, 0 if @cap cannot hold the mandatory part
 */
size_t ndp_build_ra(const struct ctx *c, uint8_t *out, size_t cap)
{
	struct ndp_buf b = {out, MIN(cap, NDP_RA_MAX), 0, false};
	int i;

	nb_u8(&b, ND_RA);
	nb_u8(&b, 0);	/* code */
	nb_be16(&b, 0); /* checksum, by tap_send_ip6() */
	nb_u8(&b, NDP_HOP_LIMIT);
	nb_u8(&b, c->no_dhcpv6 ? 0 : (ND_RA_M | ND_RA_O));
	nb_be16(&b, NDP_ROUTER_LIFETIME);
	nb_be32(&b, 0); /* reachable time: unspecified */
	nb_be32(&b, 0); /* retransmission timer: same */

	nb_u8(&b, ND_OPT_SLLA);
	nb_u8(&b, 1);
	nb_put(&b, c->our_mac, ETH_ADDR_LEN);

	if (c->mtu >= IPV6_MIN_MTU) {
		nb_u8(&b, ND_OPT_MTU);
		nb_u8(&b, 1);
		nb_be16(&b, 0);
		nb_be32(&b, (uint32_t)c->mtu);
	}

	if (!IN6_IS_ADDR_UNSPECIFIED(&c->ip6.addr)) {
		uint8_t prefix[16] = {0};

		memcpy(prefix, &c->ip6.addr, 8);
		nb_u8(&b, ND_OPT_PI);
		nb_u8(&b, 4);
		nb_u8(&b, 64);
		nb_u8(&b, ND_PI_L | ND_PI_A);
		nb_be32(&b, 0xffffffff); /* valid lifetime */
		nb_be32(&b, 0xffffffff); /* preferred lifetime */
		nb_be32(&b, 0);
		nb_put(&b, prefix, sizeof(prefix));
	}

	if (!c->no_dhcp_dns) {
		size_t start = b.len;
		int n = 0;

		nb_u8(&b, ND_OPT_RDNSS);
		nb_u8(&b, 0); /* length, set below */
		nb_be16(&b, 0);
		nb_be32(&b, NDP_DNS_LIFETIME);
		for (i = 0; i < c->ip6.dns_count && i < MAXDNS; i++) {
			if (IN6_IS_ADDR_UNSPECIFIED(&c->ip6.dns[i]))
				continue;
			nb_put(&b, &c->ip6.dns[i], 16);
			n++;
		}
		if (!n)
			b.len = start;
		else if (!b.full)
			out[start + 1] = (uint8_t)(1 + 2 * n);
	}

	if (b.full)
		return 0;

	if (!c->no_dhcp_search && c->search_count)
		ndp_put_dnssl(c, &b, b.cap);

	return b.full ? 0 : b.len;
}

/**
 * ndp_build_na() - build a solicited Neighbor Advertisement
 * @c:		execution context
 * @target:	address solicited, which we claim with our MAC
 * @out:	buffer for the ICMPv6 message, from its type byte
 * @cap:	size of @out
 *
 * The checksum field is left zero.
 *
 * Return: length of the message, 0 if @cap is too small
 */
size_t ndp_build_na(const struct ctx *c, const struct in6_addr *target,
		    uint8_t *out, size_t cap)
{
	struct ndp_buf b = {out, cap, 0, false};

	nb_u8(&b, ND_NA);
	nb_u8(&b, 0);
	nb_be16(&b, 0);
	nb_u8(&b, ND_NA_R | ND_NA_S | ND_NA_O);
	nb_zero(&b, 3);
	nb_put(&b, target, 16);

	nb_u8(&b, ND_OPT_TLLA);
	nb_u8(&b, 1);
	nb_put(&b, c->our_mac, ETH_ADDR_LEN);

	return b.full ? 0 : b.len;
}

/**
 * ndp_opts_check() - check the options of an ND message
 * @opts:	the options
 * @slla:	set if a Source Link-Layer Address option is present
 *
 * Every option has a non-zero length and lies within the message.
 *
 * Return: 0 or -EINVAL
 */
static int ndp_opts_check(struct pview opts, bool *slla)
{
	size_t off = 0;

	*slla = false;
	while (off < opts.len) {
		uint8_t type, len;

		if (!pv_u8(opts, off, &type) || !pv_u8(opts, off + 1, &len))
			return -EINVAL;
		if (!len || !pv_at(opts, off, (size_t)len * 8))
			return -EINVAL;
		if (type == ND_OPT_SLLA)
			*slla = true;
		off += (size_t)len * 8;
	}
	return 0;
}

static bool ndp_csum_ok(const struct pkt *p)
{
	const uint8_t *m = pv_at(p->l4, 0, p->l4.len);
	uint32_t sum;

	if (!m)
		return false;
	sum = csum_pseudo6(&p->src6, &p->dst6, IPPROTO_ICMPV6,
			   (uint32_t)p->l4.len);
	return csum(m, p->l4.len, sum) == 0;
}

static void ndp_learn_guest_ll(struct ctx *c, const struct in6_addr *src)
{
	if (IN6_IS_ADDR_LINKLOCAL(src) &&
	    !IN6_ARE_ADDR_EQUAL(src, &c->ip6.guest_ll)) {
		c->ip6.guest_ll = *src;
		debug("NDP: guest link-local address learned");
	}
}

/**
 * ndp_ra() - a Router Advertisement, with the addresses it goes between
 * @c:		execution context
 * @to:		destination, NULL for all-nodes
 * @out:	buffer for the ICMPv6 message, checksum left zero
 * @cap:	size of @out; at most NDP_RA_MAX bytes are used
 * @src:	set to our router address (ndp_router_addr())
 * @dst:	set to @to, or all-nodes
 *
 * Return: length of the message, 0 if @cap cannot hold the mandatory part
 */
size_t ndp_ra(const struct ctx *c, const struct in6_addr *to, uint8_t *out,
	      size_t cap, struct in6_addr *src, struct in6_addr *dst)
{
	ndp_router_addr(c, src);
	*dst = to ? *to : ndp_all_nodes;
	return ndp_build_ra(c, out, cap);
}

/**
 * ndp_rs() - answer a Router Solicitation with a Router Advertisement
 * @c:		execution context
 * @p:		parsed frame of the solicitation
 * @out:	output buffer
 * @cap:	size of @out
 * @src:	set to the source address of the answer
 * @dst:	set to its destination address
 *
 * Return: length of the answer, 0 for none
 */
static size_t ndp_rs(struct ctx *c, const struct pkt *p, uint8_t *out,
		     size_t cap, struct in6_addr *src, struct in6_addr *dst)
{
	bool slla;

	if (p->l4.len < ND_RS_LEN ||
	    ndp_opts_check(pv_tail(p->l4, ND_RS_LEN), &slla)) {
		debug_rl("NDP: malformed Router Solicitation dropped");
		return 0;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&p->src6) && slla) {
		debug_rl("NDP: Router Solicitation from :: with SLLA dropped");
		return 0;
	}

	ndp_learn_guest_ll(c, &p->src6);
	if (c->no_ra)
		return 0;

	return ndp_ra(c, IN6_IS_ADDR_UNSPECIFIED(&p->src6) ? NULL : &p->src6,
		      out, cap, src, dst);
}

/**
 * ndp_ns() - answer a Neighbor Solicitation for one of our addresses
 * @c:		execution context
 * @p:		parsed frame of the solicitation
 * @out:	output buffer
 * @cap:	size of @out
 * @src:	set to the source address of the answer
 * @dst:	set to its destination address
 *
 * Return: length of the answer, 0 for none
 */
static size_t ndp_ns(struct ctx *c, const struct pkt *p, uint8_t *out,
		     size_t cap, struct in6_addr *src, struct in6_addr *dst)
{
	const void *t = pv_at(p->l4, 8, 16);
	struct in6_addr target;
	bool slla;

	if (!t || ndp_opts_check(pv_tail(p->l4, ND_NS_LEN), &slla)) {
		debug_rl("NDP: malformed Neighbor Solicitation dropped");
		return 0;
	}
	memcpy(&target, t, sizeof(target));
	if (IN6_IS_ADDR_MULTICAST(&target) ||
	    IN6_IS_ADDR_UNSPECIFIED(&target)) {
		debug_rl("NDP: Neighbor Solicitation for invalid target");
		return 0;
	}

	/* Duplicate Address Detection: silence means "address is free" */
	if (IN6_IS_ADDR_UNSPECIFIED(&p->src6))
		return 0;

	ndp_learn_guest_ll(c, &p->src6);

	if (IN6_ARE_ADDR_EQUAL(&target, &c->ip6.addr) ||
	    IN6_ARE_ADDR_EQUAL(&target, &c->ip6.guest_ll) ||
	    IN6_ARE_ADDR_EQUAL(&target, &p->src6))
		return 0;

	*src = target;
	*dst = p->src6;
	return ndp_build_na(c, &target, out, cap);
}

/**
 * ndp_reply() - check an NDP message from the guest, build our answer
 * @c:		execution context: the guest's link-local address is learned
 *		from the source of its RS and NS
 * @p:		parsed IPv6 packet carrying ICMPv6 (types 133 to 137)
 * @out:	buffer for the answer, an RA or NA, checksum left zero
 * @cap:	size of @out (NDP_RA_MAX holds any answer)
 * @src:	set to the address to send the answer from
 * @dst:	set to the address to send it to
 *
 * Return: length of the answer, 0 if none is due or the message was dropped
 */
size_t ndp_reply(struct ctx *c, const struct pkt *p, uint8_t *out, size_t cap,
		 struct in6_addr *src, struct in6_addr *dst)
{
	uint8_t type, code;

	if (p->family != AF_INET6 || p->proto != IPPROTO_ICMPV6 || p->frag)
		return 0;
	if (!pv_u8(p->l4, 0, &type) || !pv_u8(p->l4, 1, &code))
		return 0;

	if (type != ND_RS && type != ND_NS)
		return 0; /* RA, NA, Redirect from the guest: ignored */

	if (p->ttl != 255 || code || !ndp_csum_ok(p)) {
		debug_rl("NDP: message with bad hop limit, code or checksum");
		return 0;
	}

	if (type == ND_RS)
		return ndp_rs(c, p, out, cap, src, dst);
	return ndp_ns(c, p, out, cap, src, dst);
}
