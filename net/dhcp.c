// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dhcp.c - DHCPv4 server for the guest (RFC 2131, RFC 2132).
 *
 * Theory of operation
 *
 * There is one guest and one address to give: the host's own (c->ip4.addr),
 * so the guest looks, to the rest of the world, exactly like the host. No
 * lease table exists; every reply is a pure function of the request and the
 * configuration, which also makes the server trivially migratable.
 *
 *	DISCOVER		-> OFFER  yiaddr = c->ip4.addr
 *	REQUEST (ours or none)	-> ACK    yiaddr = c->ip4.addr
 *	REQUEST (other address)	-> NAK
 *	REQUEST (other server)	-> silence: the client picked someone else
 *	INFORM			-> ACK    no yiaddr, no lease time
 *	RELEASE, DECLINE, other	-> silence
 *
 * The lease is infinite (0xffffffff): the address cannot change under the
 * guest's feet while we run, so there is nothing to renew. Replies carry the
 * netmask, the router (or, if the gateway is outside the guest's subnet,
 * classless static routes that make it reachable, RFC 3442), nameservers,
 * domain and search list (RFC 3397), MTU, host name, and the FQDN option
 * (RFC 4702) when the client asked for it. The client identifier is echoed
 * (RFC 6842). Replies go to the IP broadcast address, except an ACK to a
 * client that already has an address (ciaddr) and did not ask for
 * broadcast; the frame itself is always addressed to the guest's MAC by
 * tap.c.
 *
 * Input is untrusted. The BOOTP header is read through a struct pview; the
 * option area is walked once by dhcp_opts_parse(), a bounded TLV loop that
 * refuses options running past the end of the message and options we use
 * with a length that does not match their definition. Options in the sname
 * and file fields (overload, option 52) are not looked at: nothing we need
 * is ever worth that. Malformed requests get no reply and a rate-limited
 * debug message; they never reach an assertion.
 *
 * Replies are built by dhcp_build_reply(), which does no I/O so that unit
 * tests can call it; local_dhcp_input() (local/local.c) adds the UDP header
 * and hands the datagram to tap_send_ip4(). Replies respect the client's
 * maximum message size (option 57, at least 576 bytes per RFC 2131) by
 * dropping optional options that do not fit, and are padded to the
 * 300-byte BOOTP minimum.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "ctx.h"
#include "log.h"
#include "util.h"
#include "dhcp.h"

#define BOOTREQUEST 1
#define BOOTREPLY 2
#define HTYPE_ETHER 1
#define DHCP_FLAG_BROADCAST 0x8000

/* Offsets in the BOOTP header */
#define OFF_OP 0
#define OFF_HTYPE 1
#define OFF_HLEN 2
#define OFF_XID 4
#define OFF_FLAGS 10
#define OFF_CIADDR 12
#define OFF_YIADDR 16
#define OFF_GIADDR 24
#define OFF_CHADDR 28
#define CHADDR_LEN 16

static const uint8_t dhcp_cookie[DHCP_COOKIE_LEN] = { 99, 130, 83, 99 };

#define DHCP_LEASE_INFINITE 0xffffffffU
/* IP + UDP headers, subtracted from the client's maximum message size */
#define DHCP_IP_UDP_LEN 28
#define DHCP_MIN_MAX_SIZE 576

/**
 * struct dhcp_req - what we need from a request, validated
 * @type:	message type (option 53)
 * @ciaddr:	client's address from the header
 * @req_addr:	requested address (option 50), 0.0.0.0 if absent
 * @server_id:	server identifier (option 54), 0.0.0.0 if absent
 * @has_server_id: option 54 was present
 * @client_id:	client identifier (option 61), empty if absent
 * @max_size:	maximum DHCP message size (option 57), 0 if absent
 * @fqdn:	client sent the FQDN option (option 81)
 */
struct dhcp_req {
	uint8_t type;
	struct in_addr ciaddr;
	struct in_addr req_addr;
	struct in_addr server_id;
	bool has_server_id;
	struct pview client_id;
	uint16_t max_size;
	bool fqdn;
};

/**
 * struct dhcp_obuf - option area being written
 * @p:		start of the option area
 * @len:	bytes written
 * @cap:	bytes available, one of which is kept for the end option
 */
struct dhcp_obuf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

/**
 * dhcp_dns_name_encode() - encode a dotted domain name in DNS wire format
 * @name:	dotted name, a trailing dot is accepted ("" is the root)
 * @out:	output buffer
 * @cap:	size of @out
 *
 * Labels are written as length-prefixed strings ending with the root label
 * (RFC 1035 section 3.1), without compression: DHCPv6 forbids it (RFC 8415
 * section 10) and DHCPv4 does not need it.
 *
 * Return: encoded length, -EINVAL for an empty label, a label longer than
 *	   63 bytes or a name longer than 255 bytes, -ENOSPC if @cap is short
 */
int dhcp_dns_name_encode(const char *name, uint8_t *out, size_t cap)
{
	size_t len = 0;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		if (!l || l > 63)
			return -EINVAL;
		if (len + 1 + l + 1 > 255)
			return -EINVAL;
		if (len + 1 + l > cap)
			return -ENOSPC;
		out[len++] = (uint8_t)l;
		memcpy(out + len, name, l);
		len += l;
		name += l;
		if (*name == '.')
			name++;
	}
	if (len + 1 > cap)
		return -ENOSPC;
	out[len++] = 0;
	return (int)len;
}

/**
 * dhcp_server_id() - address we identify ourselves with (option 54)
 * @c:		execution context
 *
 * The gateway if there is one, as the guest sends everything there anyway.
 * Otherwise the address that maps to the host, and failing that a neighbour
 * of the guest's address in its subnet, so that the identifier is never the
 * guest's own address unless the subnet leaves no other choice.
 *
 * Return: server identifier, network order
 */
struct in_addr dhcp_server_id(const struct ctx *c)
{
	struct in_addr a;
	uint32_t addr, mask, n;

	if (c->ip4.gw.s_addr != INADDR_ANY)
		return c->ip4.gw;
	if (c->ip4.map_host_loopback.s_addr != INADDR_ANY)
		return c->ip4.map_host_loopback;

	addr = ntohl(c->ip4.addr.s_addr);
	if (c->ip4.prefix_len <= 0 || c->ip4.prefix_len > 30)
		return c->ip4.addr;
	mask = ~0U << (32 - c->ip4.prefix_len);

	/* Next host address in the subnet, wrapping, skipping network and
	 * broadcast addresses: the subnet holds at least two hosts.
	 */
	n = addr + 1;
	if ((n & ~mask) == ~mask)
		n = (addr & mask) + 1;
	if (n == addr)
		n++;
	a.s_addr = htonl(n);
	return a;
}

/**
 * dhcp_opts_parse() - walk the options of a request: a bounded TLV loop
 * @opts:	the options
 * @r:		the request, what we need of it filled in
 *
 * Return: 0 or -EINVAL
 */
static int dhcp_opts_parse(struct pview opts, struct dhcp_req *r)
{
	bool seen_type = false;
	size_t off = 0;

	while (off < opts.len) {
		uint8_t code, len;
		struct pview v;

		if (!pv_u8(opts, off, &code))
			return -EINVAL;
		if (code == DHCP_OPT_PAD) {
			off++;
			continue;
		}
		if (code == DHCP_OPT_END)
			break;
		if (!pv_u8(opts, off + 1, &len))
			return -EINVAL;
		v = pv_sub(opts, off + 2, len);
		if (!v.p)	/* runs past the end of the message */
			return -EINVAL;
		off += 2 + (size_t)len;

		switch (code) {
		case DHCP_OPT_MSG_TYPE:
			if (len != 1)
				return -EINVAL;
			if (!seen_type)
				pv_u8(v, 0, &r->type);
			seen_type = true;
			break;
		case DHCP_OPT_REQ_ADDR:
			if (len != 4)
				return -EINVAL;
			memcpy(&r->req_addr, pv_at(v, 0, 4), 4);
			break;
		case DHCP_OPT_SERVER_ID:
			if (len != 4)
				return -EINVAL;
			memcpy(&r->server_id, pv_at(v, 0, 4), 4);
			r->has_server_id = true;
			break;
		case DHCP_OPT_MAX_SIZE:
			if (len != 2)
				return -EINVAL;
			pv_be16(v, 0, &r->max_size);
			break;
		case DHCP_OPT_CLIENT_ID:
			if (!len)
				return -EINVAL;
			if (!r->client_id.p)
				r->client_id = v;
			break;
		case DHCP_OPT_FQDN:
			if (len < 3)
				return -EINVAL;
			r->fqdn = true;
			break;
		default:
			break;
		}
	}

	return seen_type ? 0 : -EINVAL;
}

/* Append one option; -ENOSPC if it (plus the end option) does not fit */
static int dhcp_opt_put(struct dhcp_obuf *b, uint8_t code, const void *data,
			size_t len)
{
	if (len > 255 || b->len + 2 + len + 1 > b->cap)
		return -ENOSPC;
	b->p[b->len++] = code;
	b->p[b->len++] = (uint8_t)len;
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

static int dhcp_opt_put_u32(struct dhcp_obuf *b, uint8_t code, uint32_t v)
{
	uint32_t be = htonl(v);

	return dhcp_opt_put(b, code, &be, sizeof(be));
}

/**
 * dhcp_opt_put_search() - option 119 (RFC 3397), the search list
 * @c:		execution context
 * @b:		reply being built
 *
 * All names or none; split per RFC 3396 if long.
 */
static void dhcp_opt_put_search(const struct ctx *c, struct dhcp_obuf *b)
{
	uint8_t list[MAXDNS_SEARCH * 256];
	size_t len = 0, off, need;
	int i, n;

	for (i = 0; i < c->search_count && i < MAXDNS_SEARCH; i++) {
		if (!c->search[i].name[0])
			continue;
		n = dhcp_dns_name_encode(c->search[i].name, list + len,
					 sizeof(list) - len);
		if (n < 0)
			continue;
		len += (size_t)n;
	}
	if (!len)
		return;

	need = len + 2 * ((len + 254) / 255);
	if (b->len + need + 1 > b->cap) {
		debug_rl("DHCP: search list does not fit, omitted");
		return;
	}
	for (off = 0; off < len; off += 255)
		dhcp_opt_put(b, DHCP_OPT_SEARCH, list + off,
			     MIN(len - off, (size_t)255));
}

/* Option 81 (RFC 4702): N bit (we update no DNS), E bit (wire format) */
static void dhcp_opt_put_fqdn(const struct ctx *c, struct dhcp_obuf *b)
{
	uint8_t v[3 + 256];
	int n;

	n = dhcp_dns_name_encode(c->fqdn, v + 3, sizeof(v) - 3);
	if (n < 0)
		return;
	v[0] = 0x08 | 0x04;	/* N, E */
	v[1] = v[2] = 255;	/* RCODE1, RCODE2: deprecated, RFC 4702 2.2 */
	if (dhcp_opt_put(b, DHCP_OPT_FQDN, v, 3 + (size_t)n))
		debug_rl("DHCP: FQDN option does not fit, omitted");
}

/* Option 121 (RFC 3442): gateway outside the subnet, reach it on-link */
static int dhcp_opt_put_routes(const struct ctx *c, struct dhcp_obuf *b)
{
	uint8_t v[1 + 4 + 4 + 1 + 4];

	v[0] = 32;				/* gw/32 ... */
	memcpy(v + 1, &c->ip4.gw, 4);
	memset(v + 5, 0, 4);			/* ... via 0.0.0.0: on-link */
	v[9] = 0;				/* 0/0 ... */
	memcpy(v + 10, &c->ip4.gw, 4);		/* ... via the gateway */
	return dhcp_opt_put(b, DHCP_OPT_ROUTES, v, sizeof(v));
}

static bool dhcp_gw_on_link(const struct ctx *c, uint32_t mask)
{
	return !((c->ip4.gw.s_addr ^ c->ip4.addr.s_addr) & htonl(mask));
}

/**
 * dhcp_opts_config() - everything but message type and server identifier
 * @c:		execution context
 * @r:		the request
 * @b:		reply being built
 *
 * Return: 0, or an error if @b is full
 */
static int dhcp_opts_config(const struct ctx *c, const struct dhcp_req *r,
			    struct dhcp_obuf *b)
{
	uint32_t mask = 0;
	int i, rc;

	if (c->ip4.prefix_len > 0 && c->ip4.prefix_len <= 32)
		mask = ~0U << (32 - c->ip4.prefix_len);

	if (r->type != DHCPINFORM &&
	    (rc = dhcp_opt_put_u32(b, DHCP_OPT_LEASE, DHCP_LEASE_INFINITE)))
		return rc;
	if ((rc = dhcp_opt_put_u32(b, DHCP_OPT_MASK, mask)))
		return rc;

	if (c->ip4.gw.s_addr != INADDR_ANY) {
		if (dhcp_gw_on_link(c, mask))
			rc = dhcp_opt_put(b, DHCP_OPT_ROUTER, &c->ip4.gw, 4);
		else
			rc = dhcp_opt_put_routes(c, b);
		if (rc)
			return rc;
	}

	if (!c->no_dhcp_dns && c->ip4.dns_count > 0) {
		uint8_t v[MAXDNS * 4];
		size_t n = 0;

		for (i = 0; i < c->ip4.dns_count && i < MAXDNS; i++) {
			memcpy(v + n, &c->ip4.dns[i], 4);
			n += 4;
		}
		if ((rc = dhcp_opt_put(b, DHCP_OPT_DNS, v, n)))
			return rc;
	}

	if (c->mtu > 0) {
		uint16_t mtu = htons((uint16_t)MAX(68, MIN(c->mtu, 65535)));

		if ((rc = dhcp_opt_put(b, DHCP_OPT_MTU, &mtu, 2)))
			return rc;
	}

	/* Optional from here on: omitted if the client's size limit bites */
	if (r->client_id.len &&
	    dhcp_opt_put(b, DHCP_OPT_CLIENT_ID, r->client_id.p,
			 r->client_id.len))
		debug_rl("DHCP: client identifier does not fit, omitted");

	if (c->hostname[0] &&
	    dhcp_opt_put(b, DHCP_OPT_HOSTNAME, c->hostname,
			 strnlen(c->hostname, sizeof(c->hostname))))
		debug_rl("DHCP: host name does not fit, omitted");

	if (!c->no_dhcp_search && c->search_count > 0) {
		const char *d = c->search[0].name;
		size_t l = strnlen(d, DNS_SEARCH_LEN);

		if (l && dhcp_opt_put(b, DHCP_OPT_DOMAIN, d, l))
			debug_rl("DHCP: domain name does not fit, omitted");
		dhcp_opt_put_search(c, b);
	}

	if (r->fqdn && c->fqdn[0])
		dhcp_opt_put_fqdn(c, b);

	return 0;
}

/**
 * dhcp_build_reply() - build the reply to a DHCP request, without I/O
 * @c:		execution context
 * @req:	UDP payload of the request (untrusted)
 * @out:	buffer for the reply (BOOTP message, no UDP header)
 * @cap:	size of @out, at least DHCP_MIN_REPLY
 * @dst:	set to the address the reply should go to
 *
 * Return: length of the reply, 0 if the request deserves no reply,
 *	   -EINVAL if it is malformed, -ENOSPC if @cap is too small
 */
int dhcp_build_reply(const struct ctx *c, struct pview req, uint8_t *out,
		     size_t cap, struct in_addr *dst)
{
	const uint8_t *h = pv_at(req, 0, DHCP_OPTS_OFF);
	struct in_addr sid = dhcp_server_id(c);
	struct dhcp_req r = { 0 };
	struct dhcp_obuf b;
	uint16_t flags;
	size_t limit;
	uint8_t type;
	int rc;

	dst->s_addr = htonl(INADDR_BROADCAST);

	/* From here on, @h is the checked fixed header and cookie */
	if (!h || h[OFF_OP] != BOOTREQUEST || h[OFF_HTYPE] != HTYPE_ETHER ||
	    h[OFF_HLEN] != ETH_ADDR_LEN ||
	    memcmp(h + DHCP_HDR_LEN, dhcp_cookie, DHCP_COOKIE_LEN))
		return -EINVAL;
	flags = (uint16_t)(h[OFF_FLAGS] << 8 | h[OFF_FLAGS + 1]);
	memcpy(&r.ciaddr, h + OFF_CIADDR, 4);

	if ((rc = dhcp_opts_parse(pv_tail(req, DHCP_OPTS_OFF), &r)))
		return rc;

	switch (r.type) {
	case DHCPDISCOVER:
		type = DHCPOFFER;
		break;
	case DHCPREQUEST:
		/* SELECTING state, and the client chose another server */
		if (r.has_server_id && r.server_id.s_addr != sid.s_addr)
			return 0;
		if (r.req_addr.s_addr != INADDR_ANY)
			type = r.req_addr.s_addr == c->ip4.addr.s_addr ?
			       DHCPACK : DHCPNAK;
		else if (r.ciaddr.s_addr != INADDR_ANY)
			type = r.ciaddr.s_addr == c->ip4.addr.s_addr ?
			       DHCPACK : DHCPNAK;
		else
			type = DHCPACK;
		break;
	case DHCPINFORM:
		type = DHCPACK;
		break;
	default:	/* RELEASE, DECLINE: nothing to free; server messages */
		return 0;
	}

	limit = r.max_size > DHCP_MIN_MAX_SIZE ? r.max_size : DHCP_MIN_MAX_SIZE;
	limit = MIN(limit - DHCP_IP_UDP_LEN, (size_t)DHCP_MAX_REPLY);
	limit = MIN(limit, cap);
	if (limit < DHCP_MIN_REPLY)
		return -ENOSPC;

	memset(out, 0, limit);
	out[OFF_OP] = BOOTREPLY;
	out[OFF_HTYPE] = HTYPE_ETHER;
	out[OFF_HLEN] = ETH_ADDR_LEN;
	memcpy(out + OFF_XID, h + OFF_XID, 4);
	memcpy(out + OFF_FLAGS, h + OFF_FLAGS, 2);
	if (type == DHCPACK)	/* RFC 2131, table 3: OFFER and NAK carry 0 */
		memcpy(out + OFF_CIADDR, &r.ciaddr, 4);
	if (type != DHCPNAK && r.type != DHCPINFORM)
		memcpy(out + OFF_YIADDR, &c->ip4.addr, 4);
	memcpy(out + OFF_GIADDR, h + OFF_GIADDR, 4);
	memcpy(out + OFF_CHADDR, h + OFF_CHADDR, CHADDR_LEN);
	memcpy(out + DHCP_HDR_LEN, dhcp_cookie, DHCP_COOKIE_LEN);

	b.p = out + DHCP_OPTS_OFF;
	b.len = 0;
	b.cap = limit - DHCP_OPTS_OFF;
	if ((rc = dhcp_opt_put(&b, DHCP_OPT_MSG_TYPE, &type, 1)) ||
	    (rc = dhcp_opt_put(&b, DHCP_OPT_SERVER_ID, &sid, 4)))
		return rc;
	if (type != DHCPNAK && (rc = dhcp_opts_config(c, &r, &b)))
		return rc;
	b.p[b.len++] = DHCP_OPT_END;

	/* Only an ACK to a client that has an address (RENEWING, INFORM) and
	 * did not ask for broadcast is unicast; OFFER and NAK are broadcast
	 * (RFC 2131 section 4.1 and 4.3.2).
	 */
	if (type == DHCPACK && r.ciaddr.s_addr != INADDR_ANY &&
	    !(flags & DHCP_FLAG_BROADCAST))
		*dst = r.ciaddr;
	else
		dst->s_addr = htonl(INADDR_BROADCAST);

	return (int)MAX((size_t)DHCP_MIN_REPLY, DHCP_OPTS_OFF + b.len);
}
