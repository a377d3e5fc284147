// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conf/ports.c - parse -t/-u port forwarding specifications.
 *
 * Grammar of one option argument (several -t options accumulate):
 *
 *	spec	:= "none" | "auto" | [bind "/"] list
 *	bind	:= ADDR | ADDR "%" IFNAME | "%" IFNAME
 *	list	:= "all" | item ("," item)*
 *	item	:= ["~"] range [":" range]
 *	range	:= PORT ["-" PORT]
 *
 * "PORT:TO" forwards host port PORT to guest port TO; translated ranges
 * must have the same length. "~" excludes ports from the ranges of the
 * same option. A list made only of exclusions, like "all", means every
 * port outside the ephemeral range except the excluded ones. "auto" is
 * pasta's and refused. Ports are 1 to 65535.
 *
 * An option is parsed and checked completely before the table changes, so
 * a failed call leaves @fwd as it was. Nothing here opens sockets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/ports.h"
#include "util.h"

#define SPEC_LEN_MAX 4096	/* longest option argument accepted */
#define SPEC_ITEMS_MAX 1024	/* items in one option argument */
#define EPHEMERAL_PATH "/proc/sys/net/ipv4/ip_local_port_range"

/**
 * struct port_item - one parsed list item
 * @first:	first host port of the range
 * @last:	last host port of the range, inclusive
 * @to:		guest port for @first
 * @excl:	item is an exclusion ("~")
 */
struct port_item {
	uint16_t first, last, to;
	bool excl;
};

static int ports_err(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ports_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void bit_set(uint8_t *map, unsigned n)
{
	map[n / 8] |= (uint8_t)(1U << (n % 8));
}

static bool bit_isset(const uint8_t *map, unsigned n)
{
	return map[n / 8] & (1U << (n % 8));
}

/**
 * ports_ephemeral_range() - the host's ephemeral (local) port range
 * @first:	set to the first ephemeral port
 * @last:	set to the last ephemeral port
 *
 * Falls back to the kernel default, 32768-60999, if the sysctl can't be
 * read. "all" never forwards these: the host needs them for its own
 * outbound connections, ours included.
 */
void ports_ephemeral_range(uint16_t *first, uint16_t *last)
{
	unsigned lo = 32768, hi = 60999, a, b;
	FILE *f = fopen(EPHEMERAL_PATH, "re");

	if (f) {
		if (fscanf(f, "%u %u", &a, &b) == 2 && a && a <= b &&
		    b < NUM_PORTS) {
			lo = a;
			hi = b;
		}
		fclose(f);
	}
	*first = (uint16_t)lo;
	*last = (uint16_t)hi;
}

/**
 * port_num() - parse a decimal port number, 1-65535
 * @p:		the string, advanced past the number
 * @port:	the port, set
 * @errbuf:	buffer for an error message
 * @errlen:	size of @errbuf
 *
 * Return: 0, or -EINVAL with the reason in @errbuf
 */
static int port_num(const char **p, uint16_t *port, char *errbuf,
		    size_t errlen)
{
	const char *s = *p;
	unsigned long v = 0;

	if (*s < '0' || *s > '9')
		return ports_err(errbuf, errlen, "'%.32s' is not a port number",
				 s);
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (unsigned long)(*s - '0');
		if (v >= NUM_PORTS)
			break;
	}
	if (v == 0 || v >= NUM_PORTS) {
		while (*s >= '0' && *s <= '9')
			s++;
		return ports_err(errbuf, errlen,
				 "port %.*s is out of range (1-65535)",
				 (int)MIN(s - *p, 32), *p);
	}
	*port = (uint16_t)v;
	*p = s;
	return 0;
}

/**
 * port_range() - parse PORT[-PORT]
 * @p:		the string, advanced past the range
 * @first:	first port, set
 * @last:	last port, set
 * @errbuf:	buffer for an error message
 * @errlen:	size of @errbuf
 *
 * Return: 0, or -EINVAL with the reason in @errbuf
 */
static int port_range(const char **p, uint16_t *first, uint16_t *last,
		      char *errbuf, size_t errlen)
{
	int rc;

	rc = port_num(p, first, errbuf, errlen);
	if (rc)
		return rc;
	*last = *first;
	if (**p != '-')
		return 0;
	(*p)++;
	rc = port_num(p, last, errbuf, errlen);
	if (rc)
		return rc;
	if (*last < *first)
		return ports_err(errbuf, errlen, "range %u-%u is reversed",
				 (unsigned)*first, (unsigned)*last);
	return 0;
}

/**
 * port_item_parse() - parse one item of a port list, up to ',' or the end
 * @p:		the string, advanced past the item
 * @it:		the item, filled in
 * @errbuf:	buffer for an error message
 * @errlen:	size of @errbuf
 *
 * Return: 0, or -EINVAL with the reason in @errbuf
 */
static int port_item_parse(const char **p, struct port_item *it,
			   char *errbuf, size_t errlen)
{
	const char *start = *p;
	size_t len = strcspn(start, ",");
	uint16_t to_last;
	int rc;

	memset(it, 0, sizeof(*it));
	if (!len)
		return ports_err(errbuf, errlen, "empty item in port list");

	if (**p == '~') {
		it->excl = true;
		(*p)++;
	}
	rc = port_range(p, &it->first, &it->last, errbuf, errlen);
	if (rc)
		return rc;
	it->to = it->first;

	if (**p == ':') {
		if (it->excl)
			return ports_err(errbuf, errlen,
					 "'%.*s': an exclusion can't be "
					 "translated", (int)MIN(len, 64),
					 start);
		(*p)++;
		rc = port_range(p, &it->to, &to_last, errbuf, errlen);
		if (rc)
			return rc;
		if (to_last - it->to != it->last - it->first)
			return ports_err(errbuf, errlen,
					 "'%.*s': ranges differ in length",
					 (int)MIN(len, 64), start);
	}

	if (**p && **p != ',')
		return ports_err(errbuf, errlen, "'%.*s' is not a valid port "
				 "item", (int)MIN(len, 64), start);
	return 0;
}

/**
 * ports_bind_parse() - parse "ADDR", "ADDR%IFNAME" or "%IFNAME"
 * @s:		the text, not terminated
 * @len:	its length in bytes
 * @b:		the bind group, filled in
 * @errbuf:	buffer for an error message
 * @errlen:	size of @errbuf
 *
 * Return: 0, or -EINVAL with the reason in @errbuf
 */
static int ports_bind_parse(const char *s, size_t len, struct fwd_bind *b,
			    char *errbuf, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + IFNAMSIZ + 1];
	char *pct;

	memset(b, 0, sizeof(*b));
	b->af = AF_UNSPEC;
	if (!len)
		return ports_err(errbuf, errlen,
				 "missing address or interface before '/'");
	if (len >= sizeof(buf))
		return ports_err(errbuf, errlen, "'%.*s' is too long for an "
				 "address and interface", (int)MIN(len, 64), s);
	memcpy(buf, s, len);
	buf[len] = '\0';

	pct = strchr(buf, '%');
	if (pct) {
		*pct++ = '\0';
		if (!*pct)
			return ports_err(errbuf, errlen,
					 "missing interface name after '%%'");
		if (strlen(pct) >= IFNAMSIZ)
			return ports_err(errbuf, errlen, "interface name "
					 "'%s' is too long", pct);
		strcpy(b->ifname, pct);
	}
	if (!*buf)
		return 0;

	if (inet_pton(AF_INET, buf, &b->addr.v4) == 1)
		b->af = AF_INET;
	else if (inet_pton(AF_INET6, buf, &b->addr.v6) == 1)
		b->af = AF_INET6;
	else
		return ports_err(errbuf, errlen,
				 "'%s' is not an IPv4 or IPv6 address", buf);
	return 0;
}

/* Add ports [first, last] -> [to, ...] to the table, minus @excl */
static void ports_apply(struct fwd_ports *fwd, const struct port_item *it,
			const uint8_t *excl, uint8_t idx)
{
	unsigned p;

	for (p = it->first; p <= it->last; p++) {
		if (bit_isset(excl, p))
			continue;
		bit_set(fwd->map, p);
		fwd->delta[p] = (uint16_t)(it->to + (p - it->first) - p);
		fwd->bind_idx[p] = idx;
		fwd->count++;
	}
}

/**
 * ports_parse() - parse one -t/-u argument into a forwarding table
 * @fwd:	table to add to; zero it before the first call
 * @spec:	option argument, see the grammar at the top of this file
 * @errbuf:	on failure, one line saying what is wrong (without option)
 * @errlen:	size of @errbuf
 *
 * Return: 0 on success, -EINVAL on a malformed or conflicting spec (and
 * @fwd unchanged), -ENOSPC if there are too many -t/-u options
 */
int ports_parse(struct fwd_ports *fwd, const char *spec, char *errbuf,
		size_t errlen)
{
	struct port_item items[SPEC_ITEMS_MAX];
	uint8_t excl[NUM_PORTS / 8] = { 0 }, seen[NUM_PORTS / 8] = { 0 };
	uint16_t eph_first, eph_last;
	struct port_item all_item;
	unsigned n = 0, i, p;
	struct fwd_bind b;
	const char *list, *slash;
	bool all, any_incl = false;
	int rc;

	if (!*spec)
		return ports_err(errbuf, errlen, "empty port specification");
	if (strlen(spec) > SPEC_LEN_MAX)
		return ports_err(errbuf, errlen, "specification is too long "
				 "(more than %d characters)", SPEC_LEN_MAX);

	if (!strcmp(spec, "none")) {
		if (fwd->mode != FWD_NONE)
			return ports_err(errbuf, errlen, "'none' can't be "
					 "combined with other port "
					 "specifications");
		fwd->none_given = true;
		return 0;
	}
	if (!strcmp(spec, "auto"))
		return ports_err(errbuf, errlen,
				 "'auto' is only valid in pasta mode");

	memset(&b, 0, sizeof(b));
	b.af = AF_UNSPEC;
	list = spec;
	slash = strchr(spec, '/');
	if (slash) {
		rc = ports_bind_parse(spec, (size_t)(slash - spec), &b, errbuf,
				      errlen);
		if (rc)
			return rc;
		list = slash + 1;
	}

	all = !strcmp(list, "all");
	if (!all) {
		const char *q = list;

		if (!*q)
			return ports_err(errbuf, errlen, "no ports after '/'");
		for (;;) {
			if (n == SPEC_ITEMS_MAX)
				return ports_err(errbuf, errlen, "more than %d "
						 "items", SPEC_ITEMS_MAX);
			rc = port_item_parse(&q, &items[n], errbuf, errlen);
			if (rc)
				return rc;
			any_incl |= !items[n].excl;
			n++;
			if (!*q)
				break;
			q++;	/* ',' */
			if (!*q)
				return ports_err(errbuf, errlen,
						 "empty item in port list");
		}
	}

	/* Everything but the ephemeral ports, for "all" and exclusions */
	if (all || !any_incl) {
		if (fwd->mode != FWD_NONE || fwd->none_given)
			return ports_err(errbuf, errlen, "'%s' can't be "
					 "combined with other port "
					 "specifications", all ? "all" :
					 "exclusion-only list");
	} else if (fwd->mode == FWD_ALL || fwd->none_given) {
		return ports_err(errbuf, errlen, "can't add ports to '%s'",
				 fwd->none_given ? "none" : "all");
	}
	if (fwd->bind_count >= FWD_BIND_MAX) {
		ports_err(errbuf, errlen, "more than %d port options",
			  FWD_BIND_MAX);
		return -ENOSPC;
	}

	for (i = 0; i < n; i++) {
		if (!items[i].excl)
			continue;
		for (p = items[i].first; p <= items[i].last; p++)
			bit_set(excl, p);
	}

	if (all || !any_incl) {
		ports_ephemeral_range(&eph_first, &eph_last);
		for (p = eph_first; p <= eph_last; p++)
			bit_set(excl, p);
		all_item = (struct port_item){ .first = 1, .last = 65535,
					       .to = 1 };
		ports_apply(fwd, &all_item, excl, (uint8_t)fwd->bind_count);
		fwd->mode = FWD_ALL;
		goto done;
	}

	/* Check for overlaps first, so that a failure changes nothing */
	for (i = 0; i < n; i++) {
		if (items[i].excl)
			continue;
		for (p = items[i].first; p <= items[i].last; p++) {
			if (bit_isset(excl, p))
				continue;
			if (bit_isset(seen, p) || fwd_port_isset(fwd, p))
				return ports_err(errbuf, errlen,
						 "port %u is given twice", p);
			bit_set(seen, p);
		}
	}
	for (i = 0; i < n; i++) {
		if (!items[i].excl)
			ports_apply(fwd, &items[i], excl,
				    (uint8_t)fwd->bind_count);
	}
	fwd->mode = FWD_SPEC;
done:
	fwd->bind[fwd->bind_count++] = b;
	return 0;
}
