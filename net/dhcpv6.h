/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dhcpv6.h - stateful DHCPv6 server for the guest (RFC 8415)
 */
#ifndef NET_DHCPV6_H
#define NET_DHCPV6_H

#include <stddef.h>
#include <stdint.h>

#include "packet.h"

struct ctx;

#define DHCPV6_CLIENT_PORT 546
#define DHCPV6_SERVER_PORT 547

/* msg-type (1) + transaction-id (3) */
#define DHCPV6_HDR_LEN 4
#define DHCPV6_OPT_HDR_LEN 4
/* Largest reply we build: comfortably below the IPv6 minimum MTU */
#define DHCPV6_MAX_REPLY 1232

/* Message types (RFC 8415 section 7.3) */
enum dhcpv6_msg_type {
	DHCPV6_SOLICIT = 1,
	DHCPV6_ADVERTISE = 2,
	DHCPV6_REQUEST = 3,
	DHCPV6_CONFIRM = 4,
	DHCPV6_RENEW = 5,
	DHCPV6_REBIND = 6,
	DHCPV6_REPLY = 7,
	DHCPV6_RELEASE = 8,
	DHCPV6_DECLINE = 9,
	DHCPV6_RECONFIGURE = 10,
	DHCPV6_INFO_REQUEST = 11,
	DHCPV6_RELAY_FORW = 12,
	DHCPV6_RELAY_REPL = 13,
};

/* Option codes (RFC 8415 section 21, RFC 3646, RFC 4704) */
enum dhcpv6_opt {
	DHCPV6_OPT_CLIENTID = 1,
	DHCPV6_OPT_SERVERID = 2,
	DHCPV6_OPT_IA_NA = 3,
	DHCPV6_OPT_IA_TA = 4,
	DHCPV6_OPT_IAADDR = 5,
	DHCPV6_OPT_ORO = 6,
	DHCPV6_OPT_PREFERENCE = 7,
	DHCPV6_OPT_ELAPSED_TIME = 8,
	DHCPV6_OPT_STATUS_CODE = 13,
	DHCPV6_OPT_RAPID_COMMIT = 14,
	DHCPV6_OPT_DNS_SERVERS = 23,
	DHCPV6_OPT_DOMAIN_LIST = 24,
	DHCPV6_OPT_IA_PD = 25,
	DHCPV6_OPT_CLIENT_FQDN = 39,
};

/* Status codes (RFC 8415 section 21.13) */
enum dhcpv6_status {
	DHCPV6_STATUS_SUCCESS = 0,
	DHCPV6_STATUS_UNSPEC_FAIL = 1,
	DHCPV6_STATUS_NO_ADDRS_AVAIL = 2,
	DHCPV6_STATUS_NO_BINDING = 3,
	DHCPV6_STATUS_NOT_ON_LINK = 4,
	DHCPV6_STATUS_USE_MULTICAST = 5,
	DHCPV6_STATUS_NO_PREFIX_AVAIL = 6,
};

int dhcpv6_build_reply(const struct ctx *c, struct pview req, uint8_t *out,
		       size_t cap);

#endif /* NET_DHCPV6_H */
