// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dhcpv6.c - stateful DHCPv6 server for the guest (RFC 8415).
 *
 * Theory of operation
 *
 * As with DHCPv4, there is one guest and one address to give: the host's
 * own global address (c->ip6.addr), with infinite lifetimes, so there is no
 * binding table and every reply is a pure function of request and
 * configuration. We identify ourselves with a DUID-LL built from our MAC
 * (RFC 8415 section 11.4), stable across restarts and migrations as long
 * as the MAC is.
 *
 *	SOLICIT			-> ADVERTISE (preference 255), or REPLY if
 *				   the client asked for Rapid Commit
 *	REQUEST, RENEW, REBIND	-> REPLY with the address
 *	CONFIRM			-> REPLY: Success if every address the client
 *				   lists is in our /64, NotOnLink otherwise
 *	INFORMATION-REQUEST	-> REPLY with nameservers and search list
 *	RELEASE, DECLINE	-> REPLY with status Success
 *	anything else		-> silence
 *
 * Address assignment: the first IA_NA in the message gets the address; any
 * further IA_NA, IA_TA and IA_PD get an empty IA with status NoAddrsAvail
 * (NoPrefixAvail for IA_PD): there is exactly one address, and we delegate
 * no prefixes. Messages that must name us (REQUEST, RENEW, RELEASE,
 * DECLINE) and name another server, or that must not name a server and do,
 * are ignored, as RFC 8415 section 16 requires.
 *
 * Input is untrusted. The options area is walked by dhcpv6_opt_next(), a
 * bounded (code, length, value) iterator that refuses options running past
 * the end of their enclosing area; dhcpv6_opts_check() runs it over the
 * whole message and, with the same iterator, over the options nested in
 * IA_NA, IA_TA, IA_PD and IA Address, to a fixed depth, before anything
 * else looks at the message. An option that lies about its length makes
 * the whole message malformed: no reply, a rate-limited debug message.
 *
 * dhcpv6_build_reply() does no I/O, for the unit tests; local_dhcpv6_input()
 * (local/local.c) sends its result from our link-local address
 * (c->ip6.our_ll) to the client's source address, port 546, through
 * tap_send_ip6().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "ctx.h"
#include "util.h"
#include "dhcp.h"
#include "dhcpv6.h"

#define DHCPV6_INFINITE 0xffffffffU
/* IAs answered per message; more are ignored */
#define DHCPV6_MAX_IA 8
/* DUID: 2-byte type and at most 128 bytes (RFC 8415 section 11.1) */
#define DHCPV6_DUID_MIN 3
#define DHCPV6_DUID_MAX 130
#define DHCPV6_DUID_LL 3
#define DHCPV6_HWTYPE_ETHER 1
/* Nesting: message -> IA -> IA Address -> Status Code */
#define DHCPV6_MAX_DEPTH 3

#define IA_NA_HDR_LEN 12	/* IAID, T1, T2 */
#define IA_TA_HDR_LEN 4		/* IAID */
#define IA_PD_HDR_LEN 12	/* IAID, T1, T2 */
#define IAADDR_HDR_LEN 24	/* address, preferred and valid lifetimes */

/**
 * struct dhcpv6_req - what we need from a request, validated
 * @type:	message type
 * @client_id:	Client Identifier option value, empty if absent
 * @server_id:	Server Identifier option value, empty if absent
 * @rapid_commit: Rapid Commit option present
 * @fqdn:	Client FQDN option present
 * @ia:		IA_NA, IA_TA and IA_PD option values, in message order
 * @ia_code:	option code of each entry in @ia
 * @ia_count:	entries in @ia
 * @ia_seen:	message carries at least one IA option (even past @ia)
 */
struct dhcpv6_req {
	uint8_t type;
	struct pview client_id;
	struct pview server_id;
	bool rapid_commit;
	bool fqdn;
	struct pview ia[DHCPV6_MAX_IA];
	uint16_t ia_code[DHCPV6_MAX_IA];
	int ia_count;
	bool ia_seen;
};

/**
 * struct dhcpv6_obuf - reply being written
 * @p:		start of the reply
 * @len:	bytes written
 * @cap:	bytes available
 * @full:	a write did not fit: the reply is unusable
 */
struct dhcpv6_obuf {
	uint8_t *p;
	size_t len;
	size_t cap;
	bool full;
};

/*
 * dhcpv6_opt_next() - next option in @area from *@off, bounds-checked
 * Return: 1 and the option in @code, @val; 0 at the end of @area;
 *	   -EINVAL if the option header or value runs past the end
 */
static int dhcpv6_opt_next(struct pview area, size_t *off, uint16_t *code,
			   struct pview *val)
{
	uint16_t len;

	if (*off >= area.len)
		return 0;
	if (!pv_be16(area, *off, code) || !pv_be16(area, *off + 2, &len))
		return -EINVAL;
	*val = pv_sub(area, *off + DHCPV6_OPT_HDR_LEN, len);
	if (!val->p)
		return -EINVAL;
	*off += DHCPV6_OPT_HDR_LEN + (size_t)len;
	return 1;
}

/**
 * dhcpv6_nested_off() - fixed part before an option's nested options
 * @code:	option code
 * @hdr:	length of the fixed part, set if there is one
 *
 * Return: 1 if @code has nested options, 0 if not
 */
static int dhcpv6_nested_off(uint16_t code, size_t *hdr)
{
	switch (code) {
	case DHCPV6_OPT_IA_NA:
		*hdr = IA_NA_HDR_LEN;
		return 1;
	case DHCPV6_OPT_IA_TA:
		*hdr = IA_TA_HDR_LEN;
		return 1;
	case DHCPV6_OPT_IA_PD:
		*hdr = IA_PD_HDR_LEN;
		return 1;
	case DHCPV6_OPT_IAADDR:
		*hdr = IAADDR_HDR_LEN;
		return 1;
	default:
		return 0;
	}
}

/**
 * dhcpv6_opts_check() - check the lengths of options, and of those in IAs
 * @area:	the options
 * @depth:	nesting depth of @area, at most DHCPV6_MAX_DEPTH
 *
 * Return: 0 or -EINVAL
 */
static int dhcpv6_opts_check(struct pview area, int depth)
{
	struct pview v;
	uint16_t code;
	size_t off = 0;
	int rc;

	if (depth > DHCPV6_MAX_DEPTH)
		return -EINVAL;

	while ((rc = dhcpv6_opt_next(area, &off, &code, &v)) > 0) {
		size_t hdr;

		if (!dhcpv6_nested_off(code, &hdr))
			continue;
		if (v.len < hdr)
			return -EINVAL;
		if ((rc = dhcpv6_opts_check(pv_tail(v, hdr), depth + 1)))
			return rc;
	}
	return rc;
}

/**
 * dhcpv6_opts_parse() - collect what we need from a message already checked
 * @opts:	the message's options
 * @r:		the request, filled in
 *
 * Return: 0 or -EINVAL
 */
static int dhcpv6_opts_parse(struct pview opts, struct dhcpv6_req *r)
{
	struct pview v;
	uint16_t code;
	size_t off = 0;
	int rc;

	while ((rc = dhcpv6_opt_next(opts, &off, &code, &v)) > 0) {
		switch (code) {
		case DHCPV6_OPT_CLIENTID:
		case DHCPV6_OPT_SERVERID:
			if (v.len < DHCPV6_DUID_MIN || v.len > DHCPV6_DUID_MAX)
				return -EINVAL;
			if (code == DHCPV6_OPT_CLIENTID && !r->client_id.p)
				r->client_id = v;
			else if (code == DHCPV6_OPT_SERVERID &&
				 !r->server_id.p)
				r->server_id = v;
			break;
		case DHCPV6_OPT_RAPID_COMMIT:
			if (v.len)
				return -EINVAL;
			r->rapid_commit = true;
			break;
		case DHCPV6_OPT_CLIENT_FQDN:
			if (!v.len)
				return -EINVAL;
			r->fqdn = true;
			break;
		case DHCPV6_OPT_IA_NA:
		case DHCPV6_OPT_IA_TA:
		case DHCPV6_OPT_IA_PD:
			r->ia_seen = true;
			if (r->ia_count >= DHCPV6_MAX_IA)
				break;
			r->ia_code[r->ia_count] = code;
			r->ia[r->ia_count++] = v;
			break;
		default:
			break;
		}
	}
	return rc;
}

static void dhcpv6_put(struct dhcpv6_obuf *b, const void *data, size_t len)
{
	if (!len)
		return;
	if (b->full || len > b->cap - b->len) {
		b->full = true;
		return;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void dhcpv6_put_be16(struct dhcpv6_obuf *b, uint16_t v)
{
	uint16_t be = htons(v);

	dhcpv6_put(b, &be, 2);
}

static void dhcpv6_put_be32(struct dhcpv6_obuf *b, uint32_t v)
{
	uint32_t be = htonl(v);

	dhcpv6_put(b, &be, 4);
}

/* Start an option whose length is filled in by dhcpv6_opt_close() */
static size_t dhcpv6_opt_open(struct dhcpv6_obuf *b, uint16_t code)
{
	size_t start = b->len;

	dhcpv6_put_be16(b, code);
	dhcpv6_put_be16(b, 0);
	return start;
}

static void dhcpv6_opt_close(struct dhcpv6_obuf *b, size_t start)
{
	size_t len = b->len - start - DHCPV6_OPT_HDR_LEN;

	if (b->full)
		return;
	b->p[start + 2] = (uint8_t)(len >> 8);
	b->p[start + 3] = (uint8_t)len;
}

static void dhcpv6_opt_put(struct dhcpv6_obuf *b, uint16_t code,
			   const void *data, size_t len)
{
	size_t start = dhcpv6_opt_open(b, code);

	dhcpv6_put(b, data, len);
	dhcpv6_opt_close(b, start);
}

static void dhcpv6_put_status(struct dhcpv6_obuf *b, uint16_t status,
			      const char *msg)
{
	size_t start = dhcpv6_opt_open(b, DHCPV6_OPT_STATUS_CODE);

	dhcpv6_put_be16(b, status);
	dhcpv6_put(b, msg, strlen(msg));
	dhcpv6_opt_close(b, start);
}

static void dhcpv6_put_server_id(const struct ctx *c, struct dhcpv6_obuf *b)
{
	size_t start = dhcpv6_opt_open(b, DHCPV6_OPT_SERVERID);

	dhcpv6_put_be16(b, DHCPV6_DUID_LL);
	dhcpv6_put_be16(b, DHCPV6_HWTYPE_ETHER);
	dhcpv6_put(b, c->our_mac, ETH_ADDR_LEN);
	dhcpv6_opt_close(b, start);
}

static bool dhcpv6_server_id_is_ours(const struct ctx *c, struct pview id)
{
	const uint8_t *d = pv_at(id, 0, id.len);

	return id.len == 4 + ETH_ADDR_LEN && d &&
	       d[0] == 0 && d[1] == DHCPV6_DUID_LL &&
	       d[2] == 0 && d[3] == DHCPV6_HWTYPE_ETHER &&
	       !memcmp(d + 4, c->our_mac, ETH_ADDR_LEN);
}

/**
 * dhcpv6_put_ia() - one IA in the reply: our address for the first IA_NA
 * @c:		execution context
 * @b:		reply being built
 * @code:	the IA's option code
 * @ia:		the IA in the request
 * @give:	this IA gets our address
 */
static void dhcpv6_put_ia(const struct ctx *c, struct dhcpv6_obuf *b,
			  uint16_t code, struct pview ia, bool give)
{
	const uint8_t *iaid = pv_at(ia, 0, 4);	/* checked: IA >= 4 bytes */
	size_t start;

	if (!iaid)
		return;
	start = dhcpv6_opt_open(b, code);
	dhcpv6_put(b, iaid, 4);

	if (code == DHCPV6_OPT_IA_TA) {
		dhcpv6_put_status(b, DHCPV6_STATUS_NO_ADDRS_AVAIL,
				  "no temporary addresses");
	} else if (code == DHCPV6_OPT_IA_PD) {
		dhcpv6_put_be32(b, 0);
		dhcpv6_put_be32(b, 0);
		dhcpv6_put_status(b, DHCPV6_STATUS_NO_PREFIX_AVAIL,
				  "no prefixes");
	} else if (!give) {
		dhcpv6_put_be32(b, 0);
		dhcpv6_put_be32(b, 0);
		dhcpv6_put_status(b, DHCPV6_STATUS_NO_ADDRS_AVAIL,
				  "one address only");
	} else {
		size_t a;

		dhcpv6_put_be32(b, DHCPV6_INFINITE);	/* T1 */
		dhcpv6_put_be32(b, DHCPV6_INFINITE);	/* T2 */
		a = dhcpv6_opt_open(b, DHCPV6_OPT_IAADDR);
		dhcpv6_put(b, &c->ip6.addr, sizeof(c->ip6.addr));
		dhcpv6_put_be32(b, DHCPV6_INFINITE);	/* preferred */
		dhcpv6_put_be32(b, DHCPV6_INFINITE);	/* valid */
		dhcpv6_opt_close(b, a);
	}
	dhcpv6_opt_close(b, start);
}

static void dhcpv6_put_ias(const struct ctx *c, struct dhcpv6_obuf *b,
			   const struct dhcpv6_req *r)
{
	bool avail = !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.addr);
	int i;

	for (i = 0; i < r->ia_count; i++) {
		bool give = avail && r->ia_code[i] == DHCPV6_OPT_IA_NA;

		dhcpv6_put_ia(c, b, r->ia_code[i], r->ia[i], give);
		if (give)
			avail = false;
	}
}

/**
 * dhcpv6_put_config() - nameservers, search list and FQDN of a reply
 * @c:		execution context
 * @b:		reply being built
 * @r:		the request
 */
static void dhcpv6_put_config(const struct ctx *c, struct dhcpv6_obuf *b,
			      const struct dhcpv6_req *r)
{
	uint8_t name[256];
	size_t start;
	int i, n;

	if (!c->no_dhcp_dns && c->ip6.dns_count > 0) {
		start = dhcpv6_opt_open(b, DHCPV6_OPT_DNS_SERVERS);
		for (i = 0; i < c->ip6.dns_count && i < MAXDNS; i++)
			dhcpv6_put(b, &c->ip6.dns[i], sizeof(c->ip6.dns[i]));
		dhcpv6_opt_close(b, start);
	}

	if (!c->no_dhcp_search && c->search_count > 0) {
		size_t before = b->len;

		start = dhcpv6_opt_open(b, DHCPV6_OPT_DOMAIN_LIST);
		for (i = 0; i < c->search_count && i < MAXDNS_SEARCH; i++) {
			n = dhcp_dns_name_encode(c->search[i].name, name,
						 sizeof(name));
			if (n > 1)	/* not the root, not invalid */
				dhcpv6_put(b, name, (size_t)n);
		}
		dhcpv6_opt_close(b, start);
		if (!b->full && b->len == start + DHCPV6_OPT_HDR_LEN)
			b->len = before;	/* nothing valid: drop it */
	}

	/* RFC 4704: flags with N set (we update no DNS), then the name */
	if (r->fqdn && c->fqdn[0]) {
		n = dhcp_dns_name_encode(c->fqdn, name, sizeof(name));
		if (n > 1) {
			uint8_t flags = 0x04;	/* N */

			start = dhcpv6_opt_open(b, DHCPV6_OPT_CLIENT_FQDN);
			dhcpv6_put(b, &flags, 1);
			dhcpv6_put(b, name, (size_t)n);
			dhcpv6_opt_close(b, start);
		}
	}
}

/**
 * dhcpv6_confirm_status() - CONFIRM: Success if every address is in our /64
 * @c:		execution context
 * @r:		the request
 * @status:	the status to reply with, set
 *
 * Return: number of addresses the request lists, or -EINVAL if malformed
 */
static int dhcpv6_confirm_status(const struct ctx *c,
				 const struct dhcpv6_req *r, int *status)
{
	int i, seen = 0;

	*status = DHCPV6_STATUS_SUCCESS;
	for (i = 0; i < r->ia_count; i++) {
		size_t hdr, off;
		struct pview opts, v;
		uint16_t code;

		if (r->ia_code[i] == DHCPV6_OPT_IA_PD ||
		    !dhcpv6_nested_off(r->ia_code[i], &hdr))
			continue;
		opts = pv_tail(r->ia[i], hdr);
		off = 0;
		while (dhcpv6_opt_next(opts, &off, &code, &v) > 0) {
			const uint8_t *a;

			if (code != DHCPV6_OPT_IAADDR)
				continue;
			a = pv_at(v, 0, 16);
			if (!a)
				return -EINVAL;
			seen++;
			if (memcmp(a, &c->ip6.addr, 8))
				*status = DHCPV6_STATUS_NOT_ON_LINK;
		}
	}
	return seen;
}

/**
 * dhcpv6_build_reply() - build the reply to a DHCPv6 message, without I/O
 * @c:		execution context
 * @req:	UDP payload of the client's message (untrusted)
 * @out:	buffer for the reply (DHCPv6 message, no UDP header)
 * @cap:	size of @out
 *
 * Return: length of the reply, 0 if the message deserves no reply,
 *	   -EINVAL if it is malformed, -ENOSPC if the reply does not fit
 */
int dhcpv6_build_reply(const struct ctx *c, struct pview req, uint8_t *out,
		       size_t cap)
{
	const uint8_t *h = pv_at(req, 0, DHCPV6_HDR_LEN);
	struct pview opts = pv_tail(req, DHCPV6_HDR_LEN);
	struct dhcpv6_req r = { 0 };
	struct dhcpv6_obuf b = { out, 0, MIN(cap, (size_t)DHCPV6_MAX_REPLY),
				 false };
	int rc, status = DHCPV6_STATUS_SUCCESS;
	bool ias = false, config = false;
	uint8_t type;

	if (!h)
		return -EINVAL;
	r.type = h[0];
	if ((rc = dhcpv6_opts_check(opts, 1)) ||
	    (rc = dhcpv6_opts_parse(opts, &r)))
		return rc;

	/* Who must, or must not, be named as server (RFC 8415 section 16) */
	switch (r.type) {
	case DHCPV6_SOLICIT:
	case DHCPV6_REBIND:
	case DHCPV6_CONFIRM:
		if (r.server_id.p)
			return 0;
		break;
	case DHCPV6_REQUEST:
	case DHCPV6_RENEW:
	case DHCPV6_RELEASE:
	case DHCPV6_DECLINE:
		if (!r.server_id.p || !dhcpv6_server_id_is_ours(c, r.server_id))
			return 0;
		break;
	case DHCPV6_INFO_REQUEST:
		if (r.server_id.p && !dhcpv6_server_id_is_ours(c, r.server_id))
			return 0;
		if (r.ia_seen)
			return 0;
		break;
	default:	/* server and relay messages: not for us */
		return 0;
	}
	if (r.type != DHCPV6_INFO_REQUEST && !r.client_id.p)
		return -EINVAL;

	type = DHCPV6_REPLY;
	switch (r.type) {
	case DHCPV6_SOLICIT:
		if (!r.rapid_commit)
			type = DHCPV6_ADVERTISE;
		/* fall through */
	case DHCPV6_REQUEST:
	case DHCPV6_RENEW:
	case DHCPV6_REBIND:
		ias = config = true;
		break;
	case DHCPV6_CONFIRM:
		rc = dhcpv6_confirm_status(c, &r, &status);
		if (rc <= 0)	/* no addresses: no reply (section 18.3.3) */
			return rc;
		break;
	case DHCPV6_INFO_REQUEST:
		config = true;
		break;
	default:	/* RELEASE, DECLINE: we hold no binding to change */
		break;
	}

	dhcpv6_put(&b, &type, 1);
	dhcpv6_put(&b, h + 1, 3);	/* transaction ID */
	dhcpv6_put_server_id(c, &b);
	if (r.client_id.p)
		dhcpv6_opt_put(&b, DHCPV6_OPT_CLIENTID, r.client_id.p,
			       r.client_id.len);

	if (type == DHCPV6_ADVERTISE) {
		uint8_t pref = 255;	/* no need to wait for other servers */

		dhcpv6_opt_put(&b, DHCPV6_OPT_PREFERENCE, &pref, 1);
	} else if (r.type == DHCPV6_SOLICIT) {
		dhcpv6_opt_put(&b, DHCPV6_OPT_RAPID_COMMIT, NULL, 0);
	}

	if (ias)
		dhcpv6_put_ias(c, &b, &r);
	if (config)
		dhcpv6_put_config(c, &b, &r);
	if (r.type == DHCPV6_CONFIRM || r.type == DHCPV6_RELEASE ||
	    r.type == DHCPV6_DECLINE)
		dhcpv6_put_status(&b, (uint16_t)status,
				  status == DHCPV6_STATUS_SUCCESS ?
				  "success" : "not on link");

	if (b.full)
		return -ENOSPC;
	return (int)b.len;
}
