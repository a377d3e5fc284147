// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conf/resolv.c - DNS defaults for the guest from the host's resolv.conf.
 *
 * Reads "nameserver", "search" and "domain" lines (the last "search" or
 * "domain" line wins, as for the C library) into the context, unless -D
 * or -S already decided. Nameservers on host loopback (127.0.0.0/8, ::1)
 * are useless to the guest as such: if those are all the host has, and
 * there is a gateway, we announce the gateway instead and record the pair
 * in dns_match/dns_host, so that queries the guest sends there can be
 * forwarded to the host's local resolver. Link-local nameservers, whose
 * zone only means something on the host, are skipped.
 *
 * resolv_search_add() is the one validity check for search domains, used
 * for -S too. Nothing here touches the network.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "conf/resolv.h"
#include "ctx.h"
#include "util.h"

/**
 * resolv_name_ok() - is a name a plausible DNS domain?
 * @name:	the name, not terminated
 * @len:	its length in bytes
 *
 * Labels of 1-63 letters, digits, '-' and '_'.
 *
 * Return: true if it is
 */
static bool resolv_name_ok(const char *name, size_t len)
{
	size_t label = 0, i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch == '.') {
			if (!label)
				return false;
			label = 0;
			continue;
		}
		if (!isalnum(ch) && ch != '-' && ch != '_')
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

/**
 * resolv_search_add() - append a domain to the search list
 * @c:		execution context
 * @name:	domain, a trailing dot is dropped
 *
 * Duplicates are silently ignored.
 *
 * Return: 0 on success, -EINVAL if @name is not a valid domain,
 * -ENAMETOOLONG if it is longer than DNS_SEARCH_LEN, -ENOSPC if the list
 * already holds MAXDNS_SEARCH domains
 */
int resolv_search_add(struct ctx *c, const char *name)
{
	size_t len = strlen(name);
	int i;

	if (len > 1 && name[len - 1] == '.')
		len--;
	if (len > DNS_SEARCH_LEN)
		return -ENAMETOOLONG;
	if (!resolv_name_ok(name, len))
		return -EINVAL;

	for (i = 0; i < c->search_count; i++) {
		if (strlen(c->search[i].name) == len &&
		    !strncasecmp(c->search[i].name, name, len))
			return 0;
	}
	if (c->search_count >= MAXDNS_SEARCH)
		return -ENOSPC;

	memcpy(c->search[c->search_count].name, name, len);
	c->search[c->search_count].name[len] = '\0';
	c->search_count++;
	return 0;
}

/* Loopback resolvers seen, in case we have to forward to one */
struct resolv_lo {
	bool v4, v6;
	struct in_addr a4;
};

/**
 * resolv_ns_add() - take a nameserver of resolv.conf for the guest
 * @c:		execution context
 * @tok:	its address
 * @lo:		loopback resolvers seen, updated
 *
 * A loopback one is noted in @lo instead, in case we have to forward to one.
 */
static void resolv_ns_add(struct ctx *c, char *tok, struct resolv_lo *lo)
{
	struct in6_addr a6;
	struct in_addr a4;
	char *pct;
	int i;

	if (inet_pton(AF_INET, tok, &a4) == 1) {
		if ((ntohl(a4.s_addr) >> 24) == 127) {
			if (!lo->v4)
				lo->a4 = a4;
			lo->v4 = true;
			return;
		}
		if (!a4.s_addr || c->ip4.dns_count >= MAXDNS)
			return;
		for (i = 0; i < c->ip4.dns_count; i++) {
			if (c->ip4.dns[i].s_addr == a4.s_addr)
				return;
		}
		c->ip4.dns[c->ip4.dns_count++] = a4;
		return;
	}

	pct = strchr(tok, '%');
	if (pct)
		*pct = '\0';
	if (inet_pton(AF_INET6, tok, &a6) != 1)
		return;
	if (IN6_IS_ADDR_LOOPBACK(&a6)) {
		lo->v6 = true;
		return;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_LINKLOCAL(&a6) ||
	    IN6_IS_ADDR_MULTICAST(&a6) || c->ip6.dns_count >= MAXDNS)
		return;
	for (i = 0; i < c->ip6.dns_count; i++) {
		if (IN6_ARE_ADDR_EQUAL(&c->ip6.dns[i], &a6))
			return;
	}
	c->ip6.dns[c->ip6.dns_count++] = a6;
}

/**
 * resolv_dns_host() - note where --dns-forward is to send queries
 * @c:		execution context
 * @tok:	a nameserver of the host's resolv.conf
 * @host4:	the IPv4 one is still to be found, cleared once it is
 * @host6:	the IPv6 one is still to be found, cleared once it is
 *
 * The host's nameserver @tok is where --dns-forward sends queries of its
 * family, if --dns-host didn't say, and it's the first of that family.
 */
static void resolv_dns_host(struct ctx *c, const char *tok, bool *host4,
			    bool *host6)
{
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2], *pct;
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, tok, &a4) == 1) {
		if (*host4 && a4.s_addr)
			c->ip4.dns_host = a4;
		*host4 = false;
		return;
	}
	snprintf(buf, sizeof(buf), "%s", tok);
	pct = strchr(buf, '%');
	if (pct)
		*pct = '\0';
	if (inet_pton(AF_INET6, buf, &a6) != 1)
		return;
	if (*host6 && !IN6_IS_ADDR_UNSPECIFIED(&a6))
		c->ip6.dns_host = a6;
	*host6 = false;
}

/* Replace the search list with the domains after the keyword */
static void resolv_search_line(struct ctx *c, char *rest, bool one)
{
	char *tok, *save = NULL;

	c->search_count = 0;
	memset(c->search, 0, sizeof(c->search));
	for (tok = strtok_r(rest, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		resolv_search_add(c, tok);	/* skip invalid ones */
		if (one)
			break;
	}
}

/**
 * resolv_parse() - take nameservers and search domains from resolv.conf
 * @c:		execution context; gateways must already be known, for the
 *		loopback nameserver case
 * @path:	file to read, normally RESOLV_CONF_PATH
 *
 * Nameservers are taken only if -D wasn't given, search domains only if
 * -S wasn't. At most MAXDNS nameservers per family are kept.
 *
 * Return: 0 on success, -errno if @path can't be opened
 */
int resolv_parse(struct ctx *c, const char *path)
{
	bool want_ns = !c->dns_given, want_search = !c->search_given;
	bool host4 = c->ip4.dns_match.s_addr && !c->ip4.dns_host.s_addr;
	bool host6 = !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.dns_match) &&
		     IN6_IS_ADDR_UNSPECIFIED(&c->ip6.dns_host);
	struct resolv_lo lo = { 0 };
	char line[1024];
	FILE *f;

	if (!want_ns && !want_search && !host4 && !host6)
		return 0;
	f = fopen(path, "re");
	if (!f)
		return -errno;

	if (want_ns) {
		c->ip4.dns_count = c->ip6.dns_count = 0;
	}

	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *key, *rest;
		size_t len = strlen(line);

		/* Drop the tail of an overlong line */
		if (len && line[len - 1] != '\n' && !feof(f)) {
			int ch;

			do {
				ch = fgetc(f);
			} while (ch != '\n' && ch != EOF);
		}

		key = strtok_r(line, " \t\r\n", &save);
		if (!key || *key == '#' || *key == ';')
			continue;
		rest = strtok_r(NULL, "", &save);
		if (!rest)
			continue;

		if (!strcmp(key, "nameserver")) {
			char *tok = strtok_r(rest, " \t\r\n", &save);

			/* --dns-forward without --dns-host: the first one */
			if (tok && (host4 || host6))
				resolv_dns_host(c, tok, &host4, &host6);
			if (tok && want_ns)
				resolv_ns_add(c, tok, &lo);
		} else if (want_search && !strcmp(key, "search")) {
			resolv_search_line(c, rest, false);
		} else if (want_search && !strcmp(key, "domain")) {
			resolv_search_line(c, rest, true);
		}
	}
	fclose(f);

	if (!want_ns)
		return 0;

	/* Only a local resolver: point the guest at the gateway instead */
	if (!c->ip4.dns_count && lo.v4 && c->ip4.gw.s_addr) {
		c->ip4.dns[c->ip4.dns_count++] = c->ip4.gw;
		if (!c->ip4.dns_match.s_addr)
			c->ip4.dns_match = c->ip4.gw;
		c->ip4.dns_host = lo.a4;
	}
	if (!c->ip6.dns_count && lo.v6 &&
	    !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.gw)) {
		c->ip6.dns[c->ip6.dns_count++] = c->ip6.gw;
		if (IN6_IS_ADDR_UNSPECIFIED(&c->ip6.dns_match))
			c->ip6.dns_match = c->ip6.gw;
		c->ip6.dns_host = in6addr_loopback;
	}
	return 0;
}
