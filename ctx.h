/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctx.h - the one execution context: configuration (filled by conf/ from
 * the command line and the host), plus the little runtime state every
 * module shares (epoll fd, guest MAC as learned, front-end state).
 *
 * There is exactly one struct ctx per process; it is passed explicitly so
 * that unit tests can build their own.
 */
#ifndef CTX_H
#define CTX_H

#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "conf/ports.h"
#include "net/packet.h"

#define MAXDNS 4
#define MAXDNS_SEARCH 6
#define DNS_SEARCH_LEN 254

/* --migrate-linger-timeout, when not given: seconds (migrate/migrate.c) */
#define MIGRATE_LINGER_DEFAULT_S 30

enum tap_mode {
	MODE_STREAM = 0, /* qemu -netdev stream / socket: length-prefixed */
	MODE_VU,         /* vhost-user */
};

/*
 * How TCP_REPAIR is set for a migration: conf() parses --repair-path into
 * this (the one place that reads "none"), repair_init() may turn
 * REPAIR_MODE_NONE into REPAIR_MODE_DIRECT, or REPAIR_MODE_HELPER into
 * REPAIR_MODE_NONE, before the sandbox, which follows it (isolation_drop())
 */
enum repair_mode {
	REPAIR_MODE_HELPER = 0,	/* passt-repair on @repair_path (default) */
	REPAIR_MODE_NONE,	/* --repair-path none, or no vhost-user: none */
	REPAIR_MODE_DIRECT,	/* --repair-path none, CAP_NET_ADMIN held: we
				 * set it ourselves, the sandbox keeps it
				 */
};

struct dns_search {
	char name[DNS_SEARCH_LEN + 1]; /* dotted, no trailing dot */
};

/**
 * struct ip4_ctx - IPv4 configuration
 * @addr:	address assigned to the guest (default: host's, -a)
 * @prefix_len:	prefix length for @addr (-n)
 * @gw:		default gateway for the guest (-g), 0.0.0.0 if none
 * @dns:	nameservers announced via DHCP (-D, or resolv.conf)
 * @dns_count:	entries in @dns
 * @addr_out:	source address for outbound sockets (-o), 0 if unset
 * @map_host_loopback: guest-visible address that maps to host loopback
 * @map_guest_addr: address that maps to the host's own address
 * @dns_match:	address the guest sends DNS to that we redirect
 * @dns_host:	where redirected DNS queries go (--dns-host, or the host's
 *		first nameserver)
 * @addr_given:	-a gave @addr (don't take it from the host)
 * @prefix_given: -n gave @prefix_len
 * @gw_given:	-g gave @gw
 */
struct ip4_ctx {
	struct in_addr addr;
	struct in_addr addr_seen;	/* guest's source address as last seen */
	int prefix_len;
	struct in_addr gw;
	struct in_addr dns[MAXDNS];
	int dns_count;
	struct in_addr addr_out;
	struct in_addr map_host_loopback;
	struct in_addr map_guest_addr;
	struct in_addr dns_match;
	struct in_addr dns_host;
	bool addr_given, prefix_given, gw_given;
};

/**
 * struct ip6_ctx - IPv6 configuration
 * @addr:	address assigned to the guest (default: host's global one)
 * @prefix_len:	prefix length of @addr on the host (RA uses /64)
 * @gw:		host's default gateway
 * @our_ll:	link-local address we use towards the guest (router address
 *		in RAs, source of NAs); the host gateway if it is link-local
 * @guest_ll:	guest's link-local address as seen, :: until seen
 * @dns:	nameservers (RDNSS, DHCPv6)
 * @dns_count:	entries in @dns
 * @addr_out:	source address for outbound sockets (-o), :: if unset
 * @map_host_loopback: guest-visible address that maps to host loopback
 * @map_guest_addr: address that maps to the host's own address
 * @dns_match:	address the guest sends DNS to that we redirect
 * @dns_host:	where redirected DNS queries go (--dns-host, or the host's
 *		first nameserver)
 * @addr_given:	-a gave @addr (don't take it from the host)
 * @gw_given:	-g gave @gw
 */
struct ip6_ctx {
	struct in6_addr addr;
	struct in6_addr addr_seen;	/* guest's global source address seen */
	int prefix_len;
	struct in6_addr gw;
	struct in6_addr our_ll;
	struct in6_addr guest_ll;
	struct in6_addr dns[MAXDNS];
	int dns_count;
	struct in6_addr addr_out;
	struct in6_addr map_host_loopback;
	struct in6_addr map_guest_addr;
	struct in6_addr dns_match;
	struct in6_addr dns_host;
	bool addr_given, gw_given;
};

/**
 * struct ctx - execution context
 */
struct ctx {
	/* Front-end */
	enum tap_mode mode;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd_listen;		/* listening UNIX socket, -1 if none */
	int fd_inherited;	/* --fd N, -1 if not given */
	bool one_off;		/* -1: exit when the first client goes */
	enum repair_mode repair_mode;
	char repair_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool migrate_exit, migrate_no_linger;
	unsigned migrate_linger_timeout; /* seconds, --migrate-linger-timeout */
	bool virtio_compat;	/* --virtio-compat: upstream's virtio features */
	bool no_announce;	/* --no-announce: no RARP etc. after migration */

	/* Process */
	bool foreground;
	char pid_file[PATH_MAX];
	char log_file[PATH_MAX];
	char pcap_file[PATH_MAX];
	char hostname[HOST_NAME_MAX + 1];
	char fqdn[256];

	/* Addressing */
	bool ifi4_ok, ifi6_ok;	/* IPv4 / IPv6 enabled and configured */
	bool no_v4, no_v6;	/* -6 / -4 given */
	char ifname[IFNAMSIZ];	/* -i: template interface */
	unsigned ifi4, ifi6;	/* ifindex of template interfaces, 0 if none */
	char ifname_out[IFNAMSIZ]; /* --outbound-if: bind outbound sockets */
	struct ip4_ctx ip4;
	struct ip6_ctx ip6;
	uint8_t our_mac[ETH_ADDR_LEN];	/* source MAC of everything we send */
	uint8_t guest_mac[ETH_ADDR_LEN]; /* learned from guest frames, or -M */
	bool guest_mac_set;	/* guest_mac learned or configured */
	int mtu;		/* MTU announced to the guest, 0: don't announce */
	struct dns_search search[MAXDNS_SEARCH];
	int search_count;

	/* Services */
	bool no_dhcp, no_ndp, no_dhcpv6, no_ra, no_icmp, no_tcp, no_udp;
	bool no_dhcp_dns, no_dhcp_search; /* --no-dhcp-dns, --no-dhcp-search */
	bool no_map_gw;
	bool freebind;		/* --freebind: forwarded ports on any address */

	/* Added by conf/ */
	int log_lvl;		/* enum log_level from -d, --trace, -q */
	char ifname_out6[IFNAMSIZ]; /* --outbound-if6 (ifname_out: -if4) */
	bool dns_given;		/* -D given: don't read resolv.conf */
	bool no_dns;		/* -D none */
	bool search_given;	/* -S given: don't read resolv.conf */
	bool no_search;		/* -S none */
	bool print_capabilities; /* --print-capabilities */
	bool runas;		/* -e given: drop to @runas_uid/@runas_gid */
	uid_t runas_uid;
	gid_t runas_gid;
	bool sandbox_best_effort; /* --sandbox-best-effort (isolation.c) */
	struct fwd_ports tcp_fwd; /* -t: inbound TCP port forwarding */
	struct fwd_ports udp_fwd; /* -u: inbound UDP port forwarding */

	/* Runtime */
	int epollfd;
	bool quit;		/* leave the event loop */
};

#endif /* CTX_H */
