/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dhcp.h - DHCPv4 server for the guest (RFC 2131, RFC 2132), and the DNS
 * name encoder that DHCPv4 (option 119) and DHCPv6 (options 24, 39) share.
 */
#ifndef NET_DHCP_H
#define NET_DHCP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "packet.h"

struct ctx;

#define DHCP_SERVER_PORT 67
#define DHCP_CLIENT_PORT 68

/* Fixed BOOTP header (RFC 951, RFC 2131 section 2) and magic cookie */
#define DHCP_HDR_LEN 236
#define DHCP_COOKIE_LEN 4
#define DHCP_OPTS_OFF (DHCP_HDR_LEN + DHCP_COOKIE_LEN)
/* Shortest BOOTP message we send: some clients drop anything shorter */
#define DHCP_MIN_REPLY 300
/* Our replies never get larger than this (and usually fit in 576) */
#define DHCP_MAX_REPLY 1472

/* Message types, option 53 (RFC 2132 section 9.6) */
enum dhcp_msg_type {
	DHCPDISCOVER = 1,
	DHCPOFFER = 2,
	DHCPREQUEST = 3,
	DHCPDECLINE = 4,
	DHCPACK = 5,
	DHCPNAK = 6,
	DHCPRELEASE = 7,
	DHCPINFORM = 8,
};

/* Options we read or write (RFC 2132, RFC 3397, RFC 3442, RFC 4702) */
enum dhcp_opt {
	DHCP_OPT_PAD = 0,
	DHCP_OPT_MASK = 1,
	DHCP_OPT_ROUTER = 3,
	DHCP_OPT_DNS = 6,
	DHCP_OPT_HOSTNAME = 12,
	DHCP_OPT_DOMAIN = 15,
	DHCP_OPT_MTU = 26,
	DHCP_OPT_REQ_ADDR = 50,
	DHCP_OPT_LEASE = 51,
	DHCP_OPT_OVERLOAD = 52,
	DHCP_OPT_MSG_TYPE = 53,
	DHCP_OPT_SERVER_ID = 54,
	DHCP_OPT_MAX_SIZE = 57,
	DHCP_OPT_CLIENT_ID = 61,
	DHCP_OPT_FQDN = 81,
	DHCP_OPT_SEARCH = 119,
	DHCP_OPT_ROUTES = 121,
	DHCP_OPT_END = 255,
};

int dhcp_dns_name_encode(const char *name, uint8_t *out, size_t cap);
struct in_addr dhcp_server_id(const struct ctx *c);
int dhcp_build_reply(const struct ctx *c, struct pview req, uint8_t *out,
		     size_t cap, struct in_addr *dst);

#endif /* NET_DHCP_H */
