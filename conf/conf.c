// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conf/conf.c - turn the command line and the host's network setup into
 * the configuration part of struct ctx.
 *
 * Three stages, each callable on its own so that tests can drive them:
 *
 *   conf_parse()		defaults, then every option parsed and its
 *				value checked; combinations checked; options
 *				we accept but can't act on yet refused
 *   conf_host_defaults()	whatever the command line left open, from the
 *				host: addresses, gateways (rtnetlink), DNS
 *				(resolv.conf); families without a route are
 *				disabled
 *   conf()			both, for main(): prints the error and exits
 *
 * Option names and meanings follow upstream passt, so libvirt, KubeVirt
 * and test harnesses can run us unchanged. Every error is one line naming
 * the option and what is wrong with its value. Nothing here opens sockets
 * towards the guest or changes host state.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/netlink.h"
#include "conf/ports.h"
#include "conf/resolv.h"
#include "ctx.h"
#include "log.h"
#include "net/packet.h"
#include "util.h"

#ifndef VERSION
#define VERSION "unknown"
#endif

#define MTU_DEFAULT 65520
#define MTU_MIN 68
#define MTU_MAX 65520
#define MTU_MIN_IPV6 1280

/* Long-only options */
enum {
	OPT_TRACE = 256,
	OPT_LOG_SIZE,
	OPT_STDERR,
	OPT_OUTBOUND_IF4,
	OPT_OUTBOUND_IF6,
	OPT_FQDN,
	OPT_NO_DHCP,
	OPT_NO_NDP,
	OPT_NO_DHCPV6,
	OPT_NO_RA,
	OPT_NO_ICMP,
	OPT_NO_TCP,
	OPT_NO_UDP,
	OPT_NO_DHCP_DNS,
	OPT_NO_DHCP_SEARCH,
	OPT_NO_MAP_GW,
	OPT_MAP_HOST_LOOP,
	OPT_MAP_GUEST_ADDR,
	OPT_DNS_FORWARD,
	OPT_DNS_HOST,
	OPT_FREEBIND,
	OPT_VHOST_USER,
	OPT_PRINT_CAPS,
	OPT_REPAIR_PATH,
	OPT_MIGRATE_EXIT,
	OPT_MIGRATE_NOLINGER,
	OPT_MIGRATE_LINGER_TIMEOUT,
	OPT_VERSION,
	OPT_NO_COPY_ROUTES,
	OPT_NO_COPY_ADDRS,
	OPT_VIRTIO_COMPAT,
	OPT_NO_ANNOUNCE,
	OPT_SANDBOX_BEST_EFFORT,
};

/* '+': stop at the first non-option; ':': report missing arguments */
static const char optstring[] =
	"+:s:F:1fP:dql:p:46a:n:M:g:i:o:m:D:S:H:t:u:T:U:he:";

static const struct option options[] = {
	{ "socket",		required_argument, NULL, 's' },
	{ "socket-path",	required_argument, NULL, 's' },
	{ "fd",			required_argument, NULL, 'F' },
	{ "one-off",		no_argument,	   NULL, '1' },
	{ "foreground",		no_argument,	   NULL, 'f' },
	{ "pid",		required_argument, NULL, 'P' },
	{ "debug",		no_argument,	   NULL, 'd' },
	{ "trace",		no_argument,	   NULL, OPT_TRACE },
	{ "quiet",		no_argument,	   NULL, 'q' },
	{ "log-file",		required_argument, NULL, 'l' },
	{ "log-size",		required_argument, NULL, OPT_LOG_SIZE },
	{ "stderr",		no_argument,	   NULL, OPT_STDERR },
	{ "pcap",		required_argument, NULL, 'p' },
	{ "ipv4-only",		no_argument,	   NULL, '4' },
	{ "ipv6-only",		no_argument,	   NULL, '6' },
	{ "address",		required_argument, NULL, 'a' },
	{ "netmask",		required_argument, NULL, 'n' },
	{ "mac-addr",		required_argument, NULL, 'M' },
	{ "gateway",		required_argument, NULL, 'g' },
	{ "interface",		required_argument, NULL, 'i' },
	{ "outbound",		required_argument, NULL, 'o' },
	{ "outbound-if4",	required_argument, NULL, OPT_OUTBOUND_IF4 },
	{ "outbound-if6",	required_argument, NULL, OPT_OUTBOUND_IF6 },
	{ "mtu",		required_argument, NULL, 'm' },
	{ "dns",		required_argument, NULL, 'D' },
	{ "search",		required_argument, NULL, 'S' },
	{ "hostname",		required_argument, NULL, 'H' },
	{ "fqdn",		required_argument, NULL, OPT_FQDN },
	{ "no-dhcp",		no_argument,	   NULL, OPT_NO_DHCP },
	{ "no-ndp",		no_argument,	   NULL, OPT_NO_NDP },
	{ "no-dhcpv6",		no_argument,	   NULL, OPT_NO_DHCPV6 },
	{ "no-ra",		no_argument,	   NULL, OPT_NO_RA },
	{ "no-icmp",		no_argument,	   NULL, OPT_NO_ICMP },
	{ "no-tcp",		no_argument,	   NULL, OPT_NO_TCP },
	{ "no-udp",		no_argument,	   NULL, OPT_NO_UDP },
	{ "no-dhcp-dns",	no_argument,	   NULL, OPT_NO_DHCP_DNS },
	{ "no-dhcp-search",	no_argument,	   NULL, OPT_NO_DHCP_SEARCH },
	{ "no-map-gw",		no_argument,	   NULL, OPT_NO_MAP_GW },
	{ "map-host-loopback",	required_argument, NULL, OPT_MAP_HOST_LOOP },
	{ "map-guest-addr",	required_argument, NULL, OPT_MAP_GUEST_ADDR },
	{ "dns-forward",	required_argument, NULL, OPT_DNS_FORWARD },
	{ "dns-host",		required_argument, NULL, OPT_DNS_HOST },
	{ "freebind",		no_argument,	   NULL, OPT_FREEBIND },
	{ "tcp-ports",		required_argument, NULL, 't' },
	{ "udp-ports",		required_argument, NULL, 'u' },
	{ "tcp-ns",		required_argument, NULL, 'T' },
	{ "udp-ns",		required_argument, NULL, 'U' },
	{ "vhost-user",		no_argument,	   NULL, OPT_VHOST_USER },
	{ "print-capabilities",	no_argument,	   NULL, OPT_PRINT_CAPS },
	{ "repair-path",	required_argument, NULL, OPT_REPAIR_PATH },
	{ "migrate-exit",	no_argument,	   NULL, OPT_MIGRATE_EXIT },
	{ "migrate-no-linger",	no_argument,	   NULL, OPT_MIGRATE_NOLINGER },
	{ "migrate-linger-timeout", required_argument, NULL,
	  OPT_MIGRATE_LINGER_TIMEOUT },
	{ "virtio-compat",	no_argument,	   NULL, OPT_VIRTIO_COMPAT },
	{ "no-announce",	no_argument,	   NULL, OPT_NO_ANNOUNCE },
	{ "runas",		required_argument, NULL, 'e' },
	{ "sandbox-best-effort", no_argument,	   NULL,
	  OPT_SANDBOX_BEST_EFFORT },
	{ "no-copy-routes",	no_argument,	   NULL, OPT_NO_COPY_ROUTES },
	{ "no-copy-addrs",	no_argument,	   NULL, OPT_NO_COPY_ADDRS },
	{ "help",		no_argument,	   NULL, 'h' },
	{ "version",		no_argument,	   NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static const char usage_text[] =
"Usage: passt [OPTION]...\n"
"User-mode networking back-end for QEMU and libvirt guests.\n"
"\n"
"Front-end:\n"
"  -s, --socket, --socket-path PATH  UNIX socket to listen on\n"
"  -F, --fd FD                 use connected socket FD (implies -1)\n"
"  -1, --one-off               exit when the front-end disconnects\n"
"      --vhost-user            speak vhost-user instead of a stream\n"
"      --print-capabilities    print vhost-user capabilities and exit\n"
"      --repair-path PATH      passt-repair socket (vhost-user)\n"
"      --migrate-exit          exit after migration as source (deprecated)\n"
"      --migrate-no-linger     close migrated sockets at once (deprecated)\n"
"      --migrate-linger-timeout SECONDS\n"
"                              longest linger after migration as source\n"
"      --virtio-compat         offer only upstream passt's virtio features\n"
"      --no-announce           don't announce a migrated guest on the host\n"
"                              interface (RARP, gratuitous ARP, NA)\n"
"\n"
"Process and logging:\n"
"  -f, --foreground            don't daemonize\n"
"  -P, --pid FILE              write our PID to FILE\n"
"  -e, --runas UID[:GID]       run as this user and group\n"
"      --sandbox-best-effort   go on without what of the sandbox fails\n"
"                              (unsafe; default: exit)\n"
"  -d, --debug                 debug messages\n"
"      --trace                 debug and per-packet messages\n"
"  -q, --quiet                 only warnings and errors\n"
"  -l, --log-file FILE         log to FILE\n"
"      --log-size SIZE         accepted, ignored\n"
"  -p, --pcap FILE             capture guest traffic to FILE\n"
"\n"
"Addresses:\n"
"  -4, --ipv4-only             IPv4 only\n"
"  -6, --ipv6-only             IPv6 only\n"
"  -a, --address ADDR          guest address (IPv4 and/or IPv6)\n"
"  -n, --netmask MASK          IPv4 netmask or prefix length\n"
"  -M, --mac-addr MAC          our MAC address towards the guest\n"
"  -g, --gateway ADDR          guest default gateway\n"
"  -i, --interface NAME        host interface for addresses and routes\n"
"  -o, --outbound ADDR         source address for outbound sockets\n"
"      --outbound-if4 NAME     bind outbound IPv4 sockets to NAME\n"
"      --outbound-if6 NAME     bind outbound IPv6 sockets to NAME\n"
"  -m, --mtu MTU               MTU for the guest, 0: don't announce\n"
"\n"
"DNS and names:\n"
"  -D, --dns ADDR|none         nameserver for the guest (repeatable)\n"
"  -S, --search LIST|none      search domains for the guest\n"
"  -H, --hostname NAME         hostname for the guest (DHCP)\n"
"      --fqdn NAME             FQDN for the guest (DHCP, DHCPv6)\n"
"      --dns-forward ADDR      forward DNS sent to ADDR to the host's\n"
"                              first nameserver, or to --dns-host\n"
"      --dns-host ADDR         where --dns-forward sends DNS queries\n"
"\n"
"Services:\n"
"      --no-dhcp, --no-ndp, --no-dhcpv6, --no-ra, --no-icmp,\n"
"      --no-tcp, --no-udp      disable that service or protocol\n"
"      --no-dhcp-dns           no nameservers in DHCP\n"
"      --no-dhcp-search        no search domains in DHCP\n"
"      --no-map-gw             don't map the gateway to host loopback\n"
"      --map-host-loopback ADDR|none  address mapping to host loopback\n"
"      --map-guest-addr ADDR|none     address mapping to host's address\n"
"\n"
"Port forwarding:\n"
"  -t, --tcp-ports SPEC        forward host TCP ports to the guest\n"
"  -u, --udp-ports SPEC        forward host UDP ports to the guest\n"
"      SPEC: none | all | [ADDR][%IF]/all | [ADDR][%IF/]LIST\n"
"      LIST: comma-separated [~]PORT[-PORT][:PORT[-PORT]]\n"
"\n"
"  -h, --help                  this help\n"
"      --version               print the version\n";

/**
 * struct conf_opt - the option being parsed, for error messages
 * @name:	"--long" or "-s", as the user wrote it
 * @errbuf:	caller's error buffer
 * @errlen:	its size
 */
struct conf_opt {
	char name[32];
	char *errbuf;
	size_t errlen;
};

static int conf_err(struct conf_opt *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * conf_err() - write "NAME: message" to the error buffer of an option
 * @o:		the option being handled
 * @fmt:	format string
 * @...:	arguments for @fmt
 *
 * Return: -1
 */
static int conf_err(struct conf_opt *o, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (!o->errbuf || !o->errlen)
		return -1;
	if (o->name[0])
		n = snprintf(o->errbuf, o->errlen, "%s: ", o->name);
	if (n < 0 || (size_t)n >= o->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(o->errbuf + n, o->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	/* One line, whatever the arguments we quote hold */
	for (; o->errbuf[n]; n++)
		if ((unsigned char)o->errbuf[n] < 0x20)
			o->errbuf[n] = '?';
	return -1;
}

/* Parse an unsigned decimal number, the whole string, at most @max */
static int conf_ulong(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || *v > max)
		return -ERANGE;
	return 0;
}

/* Parse an IPv4 or IPv6 address: AF_INET, AF_INET6, or -1 */
static int conf_inany(const char *s, struct in_addr *a4, struct in6_addr *a6)
{
	if (inet_pton(AF_INET, s, a4) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, a6) == 1)
		return AF_INET6;
	return -1;
}

static bool ip4_is_special(struct in_addr a)
{
	uint32_t h = ntohl(a.s_addr);

	return !h || h == 0xffffffff || (h >> 24) == 127 ||
	       (h >> 28) == 0xe;
}

static bool ip6_is_special(const struct in6_addr *a)
{
	return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) ||
	       IN6_IS_ADDR_MULTICAST(a) || IN6_IS_ADDR_V4MAPPED(a);
}

/* Parse ADDR of either family, refusing unspecified, loopback, multicast */
static int conf_addr(struct conf_opt *o, const char *s, struct in_addr *a4,
		     struct in6_addr *a6)
{
	int af = conf_inany(s, a4, a6);

	if (af < 0)
		return conf_err(o, "'%s' is not an IPv4 or IPv6 address", s);
	if ((af == AF_INET && ip4_is_special(*a4)) ||
	    (af == AF_INET6 && ip6_is_special(a6)))
		return conf_err(o, "%s is not a usable unicast address", s);
	return af;
}

/**
 * conf_mac() - parse a MAC address, xx:xx:xx:xx:xx:xx, unicast and not zero
 * @o:		the option being handled
 * @s:		the argument
 * @mac:	the address, filled in
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_mac(struct conf_opt *o, const char *s, uint8_t *mac)
{
	const char *p = s;
	int i, d;

	for (i = 0; i < 6; i++) {
		unsigned v = 0;

		for (d = 0; d < 2; d++, p++) {
			unsigned char ch = (unsigned char)*p;

			if (ch >= '0' && ch <= '9')
				v = v * 16 + (ch - '0');
			else if (ch >= 'a' && ch <= 'f')
				v = v * 16 + (ch - 'a' + 10);
			else if (ch >= 'A' && ch <= 'F')
				v = v * 16 + (ch - 'A' + 10);
			else
				break;
		}
		if (!d || (i < 5 && *p++ != ':'))
			goto bad;
		mac[i] = (uint8_t)v;
	}
	if (*p)
		goto bad;
	if (mac[0] & 1)
		return conf_err(o, "%s is a multicast address", s);
	if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		return conf_err(o, "%s is not a usable MAC address", s);
	return 0;
bad:
	return conf_err(o, "'%s' is not a MAC address (xx:xx:xx:xx:xx:xx)",
			s);
}

/**
 * conf_netmask() - netmask: contiguous dotted quad, or prefix length 0-32
 * @o:		the option being handled
 * @s:		the argument
 * @prefix_len:	the prefix length, set
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_netmask(struct conf_opt *o, const char *s, int *prefix_len)
{
	struct in_addr m;
	unsigned long v;
	uint32_t h;

	if (strchr(s, '.')) {
		if (inet_pton(AF_INET, s, &m) != 1)
			return conf_err(o, "'%s' is not a netmask", s);
		h = ntohl(m.s_addr);
		if ((~h & (~h + 1)) != 0)
			return conf_err(o, "%s is not a contiguous netmask", s);
		*prefix_len = __builtin_popcount(h);
		return 0;
	}
	if (conf_ulong(s, 32, &v))
		return conf_err(o, "'%s' is not a netmask or prefix length "
				"(0-32)", s);
	*prefix_len = (int)v;
	return 0;
}

static int conf_path(struct conf_opt *o, const char *s, char *dst,
		     size_t size)
{
	size_t len = strlen(s);

	if (!len)
		return conf_err(o, "empty path");
	if (len >= size)
		return conf_err(o, "path is too long (max %zu characters)",
				size - 1);
	memcpy(dst, s, len + 1);
	return 0;
}

/**
 * conf_ifname() - an interface name that exists on the host
 * @o:		the option being handled
 * @s:		the argument
 * @dst:	the name, copied, IFNAMSIZ bytes
 * @ifindex:	set to the interface's index
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_ifname(struct conf_opt *o, const char *s, char *dst,
		       unsigned *ifindex)
{
	unsigned idx;

	if (!*s)
		return conf_err(o, "empty interface name");
	if (strlen(s) >= IFNAMSIZ)
		return conf_err(o, "interface name '%s' is too long (max %d)",
				s, IFNAMSIZ - 1);
	idx = if_nametoindex(s);
	if (!idx)
		return conf_err(o, "no interface named '%s'", s);
	strcpy(dst, s);
	if (ifindex)
		*ifindex = idx;
	return 0;
}

/**
 * conf_runas() - --runas: UID[:GID], as numbers or names
 * @o:		the option being handled
 * @c:		execution context
 * @s:		the argument
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_runas(struct conf_opt *o, struct ctx *c, const char *s)
{
	char user[64], *group;
	unsigned long v;
	struct passwd *pw;
	struct group *gr;

	if (!*s || strlen(s) >= sizeof(user))
		return conf_err(o, "'%s' is not a valid UID[:GID]", s);
	strcpy(user, s);
	group = strchr(user, ':');
	if (group)
		*group++ = '\0';

	if (!conf_ulong(user, UINT_MAX - 1, &v)) {
		c->runas_uid = (uid_t)v;
		pw = getpwuid(c->runas_uid);
		c->runas_gid = pw ? pw->pw_gid : (gid_t)v;
	} else {
		pw = getpwnam(user);
		if (!pw)
			return conf_err(o, "no user named '%s'", user);
		c->runas_uid = pw->pw_uid;
		c->runas_gid = pw->pw_gid;
	}

	if (group) {
		if (!conf_ulong(group, UINT_MAX - 1, &v)) {
			c->runas_gid = (gid_t)v;
		} else {
			gr = getgrnam(group);
			if (!gr)
				return conf_err(o, "no group named '%s'",
						group);
			c->runas_gid = gr->gr_gid;
		}
	}
	c->runas = true;
	return 0;
}

/**
 * conf_dns() - --dns: a nameserver address for the guest, or "none"
 * @o:		the option being handled
 * @c:		execution context
 * @s:		the argument
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_dns(struct conf_opt *o, struct ctx *c, const char *s)
{
	struct in6_addr a6;
	struct in_addr a4;
	int af;

	if (!strcmp(s, "none")) {
		if (c->ip4.dns_count || c->ip6.dns_count)
			return conf_err(o, "'none' can't be combined with "
					"addresses");
		c->dns_given = c->no_dns = true;
		return 0;
	}
	if (c->no_dns)
		return conf_err(o, "'%s' can't be combined with 'none'", s);

	af = conf_inany(s, &a4, &a6);
	if (af < 0)
		return conf_err(o, "'%s' is not an IPv4 or IPv6 address", s);
	if (af == AF_INET) {
		if (!a4.s_addr || (ntohl(a4.s_addr) >> 28) == 0xe ||
		    a4.s_addr == INADDR_BROADCAST)
			return conf_err(o, "%s is not a unicast address", s);
		if (c->ip4.dns_count >= MAXDNS)
			return conf_err(o, "more than %d IPv4 nameservers",
					MAXDNS);
		c->ip4.dns[c->ip4.dns_count++] = a4;
	} else {
		if (IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_MULTICAST(&a6))
			return conf_err(o, "%s is not a unicast address", s);
		if (c->ip6.dns_count >= MAXDNS)
			return conf_err(o, "more than %d IPv6 nameservers",
					MAXDNS);
		c->ip6.dns[c->ip6.dns_count++] = a6;
	}
	c->dns_given = true;
	return 0;
}

/**
 * conf_search() - --search: domains for the guest's search list, or "none"
 * @o:		the option being handled
 * @c:		execution context
 * @s:		the argument
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_search(struct conf_opt *o, struct ctx *c, const char *s)
{
	char buf[(DNS_SEARCH_LEN + 2) * MAXDNS_SEARCH], *tok, *save = NULL;
	int rc;

	if (!strcmp(s, "none")) {
		if (c->search_count)
			return conf_err(o, "'none' can't be combined with "
					"domains");
		c->search_given = c->no_search = true;
		return 0;
	}
	if (c->no_search)
		return conf_err(o, "'%s' can't be combined with 'none'", s);
	if (strlen(s) >= sizeof(buf))
		return conf_err(o, "list is too long");
	strcpy(buf, s);

	for (tok = strtok_r(buf, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		rc = resolv_search_add(c, tok);
		if (rc == -ENAMETOOLONG)
			return conf_err(o, "domain '%.64s...' is too long "
					"(max %d)", tok, DNS_SEARCH_LEN);
		if (rc == -ENOSPC)
			return conf_err(o, "more than %d search domains",
					MAXDNS_SEARCH);
		if (rc)
			return conf_err(o, "'%s' is not a valid domain", tok);
	}
	if (!c->search_count)
		return conf_err(o, "empty search list");
	c->search_given = true;
	return 0;
}

/**
 * conf_map() - --map-host-loopback, --map-guest-addr: ADDR or "none"
 * @o:		the option being handled
 * @s:		the argument
 * @a4:		set to an IPv4 address
 * @a6:		set to an IPv6 address
 * @none:	set for "none"
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_map(struct conf_opt *o, const char *s, struct in_addr *a4,
		    struct in6_addr *a6, bool *none)
{
	struct in6_addr t6;
	struct in_addr t4;
	int af;

	if (!strcmp(s, "none")) {
		*none = true;
		return 0;
	}
	af = conf_addr(o, s, &t4, &t6);
	if (af < 0)
		return af;
	if (af == AF_INET)
		*a4 = t4;
	else
		*a6 = t6;
	return 0;
}

static int conf_ports(struct conf_opt *o, struct fwd_ports *fwd,
		      const char *s)
{
	char msg[160];

	if (ports_parse(fwd, s, msg, sizeof(msg)))
		return conf_err(o, "%s", msg);
	return 0;
}

/**
 * conf_defaults() - the configuration before any option
 * @c:		execution context, cleared and set to the defaults
 */
static void conf_defaults(struct ctx *c)
{
	static const uint8_t our_mac[ETH_ADDR_LEN] = {
		0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55
	};

	memset(c, 0, sizeof(*c));
	c->mode = MODE_STREAM;
	c->fd_listen = c->fd_inherited = -1;
	c->epollfd = -1;
	c->log_lvl = LOG_LVL_INFO;
	c->mtu = MTU_DEFAULT;
	c->migrate_linger_timeout = MIGRATE_LINGER_DEFAULT_S;
	memcpy(c->our_mac, our_mac, sizeof(our_mac));
	memset(c->guest_mac, 0xff, sizeof(c->guest_mac));
}

/**
 * conf_check() - refuse option combinations that can't work on any host
 * @o:		error buffer for the reason
 * @c:		execution context
 *
 * Return: 0, or -1 with the reason in @o's error buffer
 */
static int conf_check(struct conf_opt *o, struct ctx *c)
{
	if (c->no_v4 && c->no_v6)
		return conf_err(o, "-4 and -6 are mutually exclusive");
	if (c->no_v6 && (c->ip6.addr_given || c->ip6.gw_given))
		return conf_err(o, "-4: IPv6 address or gateway given with "
				"-a or -g");
	if (c->no_v4 && (c->ip4.addr_given || c->ip4.gw_given ||
			 c->ip4.prefix_given))
		return conf_err(o, "-6: IPv4 address, netmask or gateway "
				"given with -a, -n or -g");
	if (c->fd_inherited >= 0 && c->sock_path[0])
		return conf_err(o, "-F and -s are mutually exclusive");
	if (c->mode != MODE_VU) {
		if (c->migrate_exit)
			return conf_err(o, "--migrate-exit requires "
					"--vhost-user");
		if (c->migrate_no_linger)
			return conf_err(o, "--migrate-no-linger requires "
					"--vhost-user");
		/* Given, as a path or as "none" */
		if (c->repair_path[0] || c->repair_mode != REPAIR_MODE_HELPER)
			return conf_err(o, "--repair-path requires "
					"--vhost-user");
		if (c->migrate_linger_timeout != MIGRATE_LINGER_DEFAULT_S)
			return conf_err(o, "--migrate-linger-timeout requires "
					"--vhost-user");
		if (c->virtio_compat)
			return conf_err(o, "--virtio-compat requires "
					"--vhost-user");
	}
	if (c->mtu && c->mtu < MTU_MIN_IPV6 && !c->no_v6) {
		if (c->no_v4 || c->ip6.addr_given || c->ip6.gw_given)
			return conf_err(o, "--mtu: %d is below %d, the "
					"minimum for IPv6", c->mtu,
					MTU_MIN_IPV6);
		info("MTU %d is below %d: disabling IPv6", c->mtu,
		     MTU_MIN_IPV6);
		c->no_v6 = true;
	}
	return 0;
}

/* Set o->name to the option as the user spelt it */
static void conf_opt_name(struct conf_opt *o, int ch, int longidx)
{
	if (longidx >= 0)
		snprintf(o->name, sizeof(o->name), "--%s",
			 options[longidx].name);
	else
		snprintf(o->name, sizeof(o->name), "-%c", ch);
}

/**
 * conf_getopt_err() - say what getopt_long() found wrong, and where
 * @o:		error buffer for the reason
 * @ch:		what getopt_long() returned, ':' or '?'
 * @arg:	the element it was working on
 *
 * getopt_long() found an unknown option or a missing argument in @arg (optind
 * only moves past a cluster of short options at its end, so it can't tell which
 * element that was).
 *
 * Return: -1, with the reason in @o's error buffer
 */
static int conf_getopt_err(struct conf_opt *o, int ch, const char *arg)
{
	size_t len = strcspn(arg, "=");
	bool is_long = !strncmp(arg, "--", 2);

	o->name[0] = '\0';
	if (ch == ':') {
		if (is_long)
			return conf_err(o, "option '%.*s' requires an argument",
					(int)MIN(len, 64), arg);
		return conf_err(o, "option '-%c' requires an argument", optopt);
	}
	if (is_long && optopt)
		return conf_err(o, "option '%.*s' doesn't allow an argument",
				(int)MIN(len, 64), arg);
	if (is_long)
		return conf_err(o, "unrecognized option '%.*s'",
				(int)MIN(len, 64), arg);
	return conf_err(o, "invalid option '-%c'", optopt);
}

/**
 * conf_one() - handle one option
 * @o:		the option, its name set, and the error buffer
 * @c:		execution context
 * @ch:		the option, as getopt_long() returned it
 * @arg:	its argument, NULL if none
 *
 * Return: 0, 1 to exit successfully, -1 on error (the reason in @o's error
 *	buffer)
 */
static int conf_one(struct conf_opt *o, struct ctx *c, int ch,
		    const char *arg)
{
	unsigned long v;
	struct in6_addr a6;
	struct in_addr a4;
	bool none = false;
	int af;

	switch (ch) {
	case 's':
		return conf_path(o, arg, c->sock_path, sizeof(c->sock_path));
	case 'F':
		if (conf_ulong(arg, INT_MAX, &v))
			return conf_err(o, "'%s' is not a file descriptor",
					arg);
		if (fcntl((int)v, F_GETFD) < 0)
			return conf_err(o, "%lu is not an open file descriptor",
					v);
		c->fd_inherited = (int)v;
		c->one_off = true;
		return 0;
	case '1':
		c->one_off = true;
		return 0;
	case 'f':
		c->foreground = true;
		return 0;
	case 'P':
		return conf_path(o, arg, c->pid_file, sizeof(c->pid_file));
	case 'd':
		c->log_lvl = MAX(c->log_lvl, LOG_LVL_DEBUG);
		return 0;
	case OPT_TRACE:
		c->log_lvl = LOG_LVL_TRACE;
		return 0;
	case 'q':
		c->log_lvl = LOG_LVL_WARN;
		return 0;
	case 'l':
		return conf_path(o, arg, c->log_file, sizeof(c->log_file));
	case OPT_LOG_SIZE:
		if (conf_ulong(arg, ULONG_MAX, &v))
			return conf_err(o, "'%s' is not a size in bytes", arg);
		return 0;
	case OPT_STDERR:
		return 0;	/* obsolete upstream switch, a no-op */
	case 'p':
		return conf_path(o, arg, c->pcap_file, sizeof(c->pcap_file));
	case '4':
		c->no_v6 = true;
		return 0;
	case '6':
		c->no_v4 = true;
		return 0;
	case 'a':
		af = conf_inany(arg, &a4, &a6);
		if (af < 0)
			return conf_err(o, "'%s' is not an IPv4 or IPv6 "
					"address", arg);
		if ((af == AF_INET && ip4_is_special(a4)) ||
		    (af == AF_INET6 && (ip6_is_special(&a6) ||
					IN6_IS_ADDR_LINKLOCAL(&a6))))
			return conf_err(o, "%s can't be the guest's address",
					arg);
		if (af == AF_INET) {
			if (c->ip4.addr_given)
				return conf_err(o, "IPv4 address given twice");
			c->ip4.addr = a4;
			c->ip4.addr_given = true;
		} else {
			if (c->ip6.addr_given)
				return conf_err(o, "IPv6 address given twice");
			c->ip6.addr = a6;
			c->ip6.addr_given = true;
		}
		return 0;
	case 'n':
		if (conf_netmask(o, arg, &c->ip4.prefix_len))
			return -1;
		c->ip4.prefix_given = true;
		return 0;
	case 'M':
		/* As upstream: the source MAC we use towards the guest */
		if (conf_mac(o, arg, c->our_mac))
			return -1;
		return 0;
	case 'g':
		af = conf_inany(arg, &a4, &a6);
		if (af < 0)
			return conf_err(o, "'%s' is not an IPv4 or IPv6 "
					"address", arg);
		if ((af == AF_INET && ip4_is_special(a4)) ||
		    (af == AF_INET6 && ip6_is_special(&a6)))
			return conf_err(o, "%s can't be a gateway", arg);
		if (af == AF_INET) {
			if (c->ip4.gw_given)
				return conf_err(o, "IPv4 gateway given twice");
			c->ip4.gw = a4;
			c->ip4.gw_given = true;
		} else {
			if (c->ip6.gw_given)
				return conf_err(o, "IPv6 gateway given twice");
			c->ip6.gw = a6;
			c->ip6.gw_given = true;
		}
		return 0;
	case 'i':
		if (conf_ifname(o, arg, c->ifname, &c->ifi4))
			return -1;
		c->ifi6 = c->ifi4;
		return 0;
	case 'o':
		af = conf_inany(arg, &a4, &a6);
		if (af < 0)
			return conf_err(o, "'%s' is not an IPv4 or IPv6 "
					"address", arg);
		if (af == AF_INET)
			c->ip4.addr_out = a4;
		else
			c->ip6.addr_out = a6;
		return 0;
	case OPT_OUTBOUND_IF4:
		return conf_ifname(o, arg, c->ifname_out, NULL);
	case OPT_OUTBOUND_IF6:
		return conf_ifname(o, arg, c->ifname_out6, NULL);
	case 'm':
		if (conf_ulong(arg, ULONG_MAX, &v))
			return conf_err(o, "'%s' is not a number", arg);
		if (v && (v < MTU_MIN || v > MTU_MAX))
			return conf_err(o, "%lu is out of range (%d-%d, or 0)",
					v, MTU_MIN, MTU_MAX);
		c->mtu = (int)v;
		return 0;
	case 'D':
		return conf_dns(o, c, arg);
	case 'S':
		return conf_search(o, c, arg);
	case 'H':
		if (!*arg || strlen(arg) > HOST_NAME_MAX)
			return conf_err(o, "hostname must be 1 to %d "
					"characters", HOST_NAME_MAX);
		strcpy(c->hostname, arg);
		return 0;
	case OPT_FQDN:
		if (!*arg || strlen(arg) >= sizeof(c->fqdn))
			return conf_err(o, "FQDN must be 1 to %zu characters",
					sizeof(c->fqdn) - 1);
		strcpy(c->fqdn, arg);
		return 0;
	case OPT_NO_DHCP:
		c->no_dhcp = true;
		return 0;
	case OPT_NO_NDP:
		c->no_ndp = true;
		return 0;
	case OPT_NO_DHCPV6:
		c->no_dhcpv6 = true;
		return 0;
	case OPT_NO_RA:
		c->no_ra = true;
		return 0;
	case OPT_NO_ICMP:
		c->no_icmp = true;
		return 0;
	case OPT_NO_TCP:
		c->no_tcp = true;
		return 0;
	case OPT_NO_UDP:
		c->no_udp = true;
		return 0;
	case OPT_NO_DHCP_DNS:
		c->no_dhcp_dns = true;
		return 0;
	case OPT_NO_DHCP_SEARCH:
		c->no_dhcp_search = true;
		return 0;
	case OPT_NO_MAP_GW:
		c->no_map_gw = true;
		return 0;
	case OPT_MAP_HOST_LOOP:
		if (conf_map(o, arg, &c->ip4.map_host_loopback,
			     &c->ip6.map_host_loopback, &none))
			return -1;
		if (none)
			c->no_map_gw = true;
		return 0;
	case OPT_MAP_GUEST_ADDR:
		return conf_map(o, arg, &c->ip4.map_guest_addr,
				&c->ip6.map_guest_addr, &none);
	case OPT_DNS_FORWARD:
		af = conf_addr(o, arg, &a4, &a6);
		if (af < 0)
			return -1;
		if (af == AF_INET)
			c->ip4.dns_match = a4;
		else
			c->ip6.dns_match = a6;
		return 0;
	case OPT_DNS_HOST:
		af = conf_addr(o, arg, &a4, &a6);
		if (af < 0)
			return -1;
		if (af == AF_INET)
			c->ip4.dns_host = a4;
		else
			c->ip6.dns_host = a6;
		return 0;
	case OPT_FREEBIND:
		c->freebind = true;
		return 0;
	case 't':
		return conf_ports(o, &c->tcp_fwd, arg);
	case 'u':
		return conf_ports(o, &c->udp_fwd, arg);
	case 'T':
	case 'U':
	case OPT_NO_COPY_ROUTES:
	case OPT_NO_COPY_ADDRS:
		return conf_err(o, "only valid in pasta mode");
	case OPT_VHOST_USER:
		c->mode = MODE_VU;
		return 0;
	case OPT_PRINT_CAPS:
		c->print_capabilities = true;
		return 0;
	case OPT_REPAIR_PATH:
		if (!strcmp(arg, "none")) {
			c->repair_mode = REPAIR_MODE_NONE;
			c->repair_path[0] = '\0';
			return 0;
		}
		c->repair_mode = REPAIR_MODE_HELPER;
		return conf_path(o, arg, c->repair_path,
				 sizeof(c->repair_path));
	case OPT_MIGRATE_EXIT:
		c->migrate_exit = true;
		return 0;
	case OPT_MIGRATE_NOLINGER:
		c->migrate_no_linger = true;
		return 0;
	case OPT_MIGRATE_LINGER_TIMEOUT:
		if (conf_ulong(arg, 3600, &v) || !v)
			return conf_err(o, "'%s': expected seconds, 1 to 3600",
					arg);
		c->migrate_linger_timeout = (unsigned)v;
		return 0;
	case OPT_VIRTIO_COMPAT:
		c->virtio_compat = true;
		return 0;
	case OPT_NO_ANNOUNCE:
		c->no_announce = true;
		return 0;
	case 'e':
		return conf_runas(o, c, arg);
	case OPT_SANDBOX_BEST_EFFORT:
		c->sandbox_best_effort = true;
		return 0;
	case 'h':
		fputs(usage_text, stdout);
		return 1;
	case OPT_VERSION:
		printf("passt %s\n", VERSION);
		return 1;
	}
	return conf_err(o, "unhandled option");
}

/**
 * conf_parse() - set defaults, then parse and check the command line
 * @c:		execution context, overwritten
 * @argc:	argument count
 * @argv:	arguments, argv[0] being the program name
 * @errbuf:	on error, one line naming the option and the problem
 * @errlen:	size of @errbuf
 *
 * Can be called repeatedly (getopt state is reset). -h and --version
 * print to stdout.
 *
 * Return: 0 on success, 1 if the program should now exit successfully
 * (-h, --version), -1 on error
 */
int conf_parse(struct ctx *c, int argc, char **argv, char *errbuf,
	       size_t errlen)
{
	struct conf_opt o = { .errbuf = errbuf, .errlen = errlen };
	int ch, longidx, elem, rc;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	conf_defaults(c);

	optind = 0;
	opterr = 0;
	for (;;) {
		longidx = -1;
		elem = MAX(optind, 1);
		ch = getopt_long(argc, argv, optstring, options, &longidx);
		if (ch == -1)
			break;
		if (ch == '?' || ch == ':')
			return conf_getopt_err(&o, ch, elem < argc ?
					       argv[elem] : "");

		conf_opt_name(&o, ch, longidx);
		rc = conf_one(&o, c, ch, optarg);
		if (rc)
			return rc;
	}
	o.name[0] = '\0';
	if (optind < argc)
		return conf_err(&o, "unexpected argument '%s'", argv[optind]);

	if (conf_check(&o, c))
		return -1;
	/* Only vhost-user migrates: nothing sets TCP_REPAIR otherwise */
	if (c->mode != MODE_VU)
		c->repair_mode = REPAIR_MODE_NONE;
	/* --fd without a socket path (QEMU's -netdev passt): no repair
	 * helper socket unless --repair-path names one. There's no socket
	 * path to name it after, and none goes into the working directory
	 */
	if (c->fd_inherited >= 0 && !c->sock_path[0] &&
	    c->repair_mode == REPAIR_MODE_HELPER && !c->repair_path[0])
		c->repair_mode = REPAIR_MODE_NONE;
	if (c->migrate_exit)
		warn("--migrate-exit is deprecated: the source exits after "
		     "migration and peers may see resets");
	if (c->migrate_no_linger)
		warn("--migrate-no-linger is deprecated: migrated sockets "
		     "are closed at once and peers may see resets");
	return 0;
}

/* Classful default prefix, for an -a address the host doesn't have */
static int ip4_prefix_default(struct in_addr a)
{
	uint32_t h = ntohl(a.s_addr);

	if (!(h >> 31))
		return 8;
	if ((h >> 30) == 2)
		return 16;
	if ((h >> 29) == 6)
		return 24;
	return 32;
}

/**
 * conf_ip4() - IPv4 from the host: default route, gateway, address and prefix
 * @c:		execution context
 *
 * What the options didn't give comes from the host's default route and the
 * addresses of its interface; without either, IPv4 is disabled.
 */
static void conf_ip4(struct ctx *c)
{
	unsigned oif = c->ifi4;
	struct in_addr gw, host;
	int plen;
	bool route;

	route = !nl_default_route(AF_INET, &oif, &gw);
	if (!route)
		oif = c->ifi4;
	if (!route && !c->ip4.addr_given) {
		info("IPv4: no default route%s%s, disabling IPv4",
		     c->ifname[0] ? " on " : "", c->ifname);
		return;
	}
	if (route && !c->ip4.gw_given)
		c->ip4.gw = gw;

	if (!c->ip4.addr_given) {
		if (nl_addr_get(AF_INET, oif, &c->ip4.addr, &plen)) {
			info("IPv4: no address on the default route's "
			     "interface, disabling IPv4");
			return;
		}
		if (!c->ip4.prefix_given)
			c->ip4.prefix_len = plen;
	} else if (!c->ip4.prefix_given) {
		if (oif && !nl_addr_get(AF_INET, oif, &host, &plen))
			c->ip4.prefix_len = plen;
		else
			c->ip4.prefix_len = ip4_prefix_default(c->ip4.addr);
	}
	c->ifi4 = oif;
	c->ifi4_ok = true;
}

/**
 * conf_ip6() - IPv6 from the host: default route, gateway, address and prefix
 * @c:		execution context
 *
 * What the options didn't give comes from the host's default route and the
 * addresses of its interface; without either, IPv6 is disabled.
 */
static void conf_ip6(struct ctx *c)
{
	unsigned oif = c->ifi6;
	struct in6_addr gw, host;
	int plen;
	bool route;

	route = !nl_default_route(AF_INET6, &oif, &gw);
	if (!route)
		oif = c->ifi6;
	if (!route && !c->ip6.addr_given) {
		info("IPv6: no default route%s%s, disabling IPv6",
		     c->ifname[0] ? " on " : "", c->ifname);
		return;
	}
	if (route && !c->ip6.gw_given)
		c->ip6.gw = gw;

	if (!c->ip6.addr_given) {
		if (nl_addr_get(AF_INET6, oif, &c->ip6.addr, &plen)) {
			info("IPv6: no global address on the default route's "
			     "interface, disabling IPv6");
			return;
		}
		c->ip6.prefix_len = plen;
	} else {
		if (oif && !nl_addr_get(AF_INET6, oif, &host, &plen))
			c->ip6.prefix_len = plen;
		else
			c->ip6.prefix_len = 64;
	}
	c->ifi6 = oif;
	c->ifi6_ok = true;
}

/* Modified EUI-64 link-local address from a MAC: fe80::xxxx:xxff:fexx:xxxx */
static void ip6_ll_from_mac(struct in6_addr *a, const uint8_t *mac)
{
	memset(a, 0, sizeof(*a));
	a->s6_addr[0] = 0xfe;
	a->s6_addr[1] = 0x80;
	a->s6_addr[8] = mac[0] ^ 0x02;
	a->s6_addr[9] = mac[1];
	a->s6_addr[10] = mac[2];
	a->s6_addr[11] = 0xff;
	a->s6_addr[12] = 0xfe;
	a->s6_addr[13] = mac[3];
	a->s6_addr[14] = mac[4];
	a->s6_addr[15] = mac[5];
}

/**
 * conf_host_defaults() - fill in what the command line left open
 * @c:		execution context, after conf_parse()
 * @errbuf:	on error, one line saying what is wrong
 * @errlen:	size of @errbuf
 *
 * For each enabled family: the default route (through -i if given)
 * gives the interface and, unless -g, the gateway; that interface gives
 * the address and prefix unless -a. A family with neither a default
 * route nor -a is disabled. Then nameservers and search domains come from
 * resolv.conf unless -D/-S, and our IPv6 link-local address is the
 * gateway's if that is link-local, else derived from our MAC.
 *
 * Return: 0 on success, -ENETUNREACH if no family is usable
 */
static int conf_host_defaults(struct ctx *c, char *errbuf, size_t errlen)
{
	char name[IF_NAMESIZE];
	unsigned idx;
	int rc;

	if (!c->no_v4)
		conf_ip4(c);
	if (!c->no_v6)
		conf_ip6(c);
	if (!c->ifi4_ok && !c->ifi6_ok) {
		snprintf(errbuf, errlen, "no usable interface or address, "
			 "use -a and -g");
		return -ENETUNREACH;
	}

	idx = c->ifi4_ok && c->ifi4 ? c->ifi4 : c->ifi6;
	if (!c->ifname[0] && idx && if_indextoname(idx, name))
		snprintf(c->ifname, sizeof(c->ifname), "%s", name);

	if (IN6_IS_ADDR_LINKLOCAL(&c->ip6.gw))
		c->ip6.our_ll = c->ip6.gw;
	else
		ip6_ll_from_mac(&c->ip6.our_ll, c->our_mac);

	rc = resolv_parse(c, RESOLV_CONF_PATH);
	if (rc)
		info("Can't read %s: %s", RESOLV_CONF_PATH, strerror(-rc));
	if (!c->ifi4_ok)
		c->ip4.dns_count = 0;
	if (!c->ifi6_ok)
		c->ip6.dns_count = 0;
	return 0;
}

/**
 * conf_print() - the addresses and nameservers the guest will get, at info
 * @c:		execution context, configured
 *
 * Called once the log file is open (passt.c), so that it is there too.
 */
void conf_print(const struct ctx *c)
{
	char a[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];
	int i;

	if (c->ifi4_ok) {
		info("IPv4: address %s/%d, gateway %s, interface %s",
		     inet_ntop(AF_INET, &c->ip4.addr, a, sizeof(a)),
		     c->ip4.prefix_len,
		     inet_ntop(AF_INET, &c->ip4.gw, g, sizeof(g)), c->ifname);
		for (i = 0; i < c->ip4.dns_count; i++)
			info("    DNS: %s", inet_ntop(AF_INET, &c->ip4.dns[i],
						    a, sizeof(a)));
	}
	if (c->ifi6_ok) {
		info("IPv6: address %s/%d, gateway %s",
		     inet_ntop(AF_INET6, &c->ip6.addr, a, sizeof(a)),
		     c->ip6.prefix_len,
		     inet_ntop(AF_INET6, &c->ip6.gw, g, sizeof(g)));
		for (i = 0; i < c->ip6.dns_count; i++)
			info("    DNS: %s", inet_ntop(AF_INET6, &c->ip6.dns[i],
						    a, sizeof(a)));
	}
	for (i = 0; i < c->search_count; i++)
		info("    search: %s", c->search[i].name);
}

/**
 * conf() - configure from the command line and the host, or exit
 * @c:		execution context, overwritten
 * @argc:	argument count
 * @argv:	arguments
 *
 * Exits with status 0 after -h or --version, and with status 1, after
 * printing "passt: <problem>" to stderr, on any configuration error.
 * Sets the global log level from -d, --trace or -q.
 */
void conf(struct ctx *c, int argc, char **argv)
{
	char err[256];
	int rc;

	rc = conf_parse(c, argc, argv, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "passt: %s\n", err);
		exit(EXIT_FAILURE);
	}
	if (rc > 0)
		exit(EXIT_SUCCESS);
	/* Back-end discovery wants the JSON alone, whatever the host has */
	if (c->print_capabilities)
		return;
	log_level = (enum log_level)c->log_lvl;

	if (conf_host_defaults(c, err, sizeof(err))) {
		fprintf(stderr, "passt: %s\n", err);
		exit(EXIT_FAILURE);
	}
}
