/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ctx.h - the one execution context: configuration (filled by conf/ from
 * the command line and the host), plus the little runtime state every
 * module shares (epoll fd, guest MAC and addresses as learned). Each
 * module's own state is in a struct of its own, in its own file.
 *
 * There is exactly one struct ctx per process; it is passed explicitly so
 * that unit tests can build their own.
 */
#ifndef CTX_H
#define CTX_H

#include <limits.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "fwd_ports.h"

#define MAXDNS 4
#define MAXDNS_SEARCH 6
#define DNS_SEARCH_LEN 254

/* --migrate-linger-timeout, when not given: seconds (migrate/transfer.c) */
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
 * @addr_seen:	the guest's source address as last seen (demux.c)
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
	struct in_addr addr_seen;
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
 * @addr_seen:	the guest's global source address as last seen (demux.c)
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
	struct in6_addr addr_seen;
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
 * struct ctx - execution context: the configuration, and the little
 *		runtime state every module shares
 *
 * Front-end (passt.c, tap/, stream/, vhost/):
 * @mode:	stream (-s, --fd) or vhost-user (--vhost-user)
 * @sock_path:	the front-end's UNIX socket (-s), or the one we chose
 * @fd_listen:	its listening socket, -1 if none
 * @fd_inherited: --fd N, -1 if not given
 * @one_off:	-1: exit when the first client goes
 * @virtio_compat: --virtio-compat: upstream's virtio features
 *
 * Migration (migrate/):
 * @repair_mode: how TCP_REPAIR is set (--repair-path), see enum repair_mode
 * @repair_path: the passt-repair helper's socket (--repair-path)
 * @migrate_exit: --migrate-exit: exit after migration as source
 * @migrate_no_linger: --migrate-no-linger: close migrated sockets at once
 * @migrate_linger_timeout: --migrate-linger-timeout, seconds
 * @no_announce: --no-announce: no RARP etc. after migration
 *
 * Process (passt.c, log.c, isolation.c):
 * @foreground:	-f: don't daemonize
 * @pid_file:	-P: where our pid goes, "" if not given
 * @log_file:	-l: where the log goes, "" for stderr or syslog
 * @log_lvl:	enum log_level from -d, --trace, -q
 * @pcap_file:	-p: the capture file, "" if none
 * @print_capabilities: --print-capabilities: print them and exit
 * @runas:	-e given: drop to @runas_uid/@runas_gid
 * @runas_uid:	user to run as
 * @runas_gid:	group to run as
 * @sandbox_best_effort: --sandbox-best-effort (isolation.c)
 *
 * Addressing (conf/; the guest's addresses as seen: demux.c):
 * @hostname:	host name given to the guest (DHCP, DHCPv6)
 * @fqdn:	fully qualified domain name, likewise (--fqdn)
 * @ifi4_ok:	IPv4 enabled and configured
 * @ifi6_ok:	IPv6 enabled and configured
 * @no_v4:	-6 given: no IPv4
 * @no_v6:	-4 given: no IPv6
 * @ifname:	-i: template interface
 * @ifi4:	ifindex of the IPv4 template interface, 0 if none
 * @ifi6:	ifindex of the IPv6 template interface, 0 if none
 * @ifname_out:	--outbound-if4: bind outbound IPv4 sockets to it
 * @ifname_out6: --outbound-if6: bind outbound IPv6 sockets to it
 * @ip4:	IPv4 configuration, and the guest's address as last seen
 * @ip6:	IPv6 configuration, and the guest's addresses as last seen
 * @our_mac:	source MAC of everything we send (-M)
 * @guest_mac:	learned from the guest's frames (demux.c) or the migrated
 *		state, broadcast until then
 * @guest_mac_set: @guest_mac learned
 * @mtu:	MTU announced to the guest, 0: don't announce
 *
 * DNS (conf/resolv.c; announced by local/):
 * @dns_given:	-D given: don't read resolv.conf
 * @no_dns:	-D none
 * @search:	search domains (-S, or resolv.conf)
 * @search_count: entries in @search
 * @search_given: -S given: don't read resolv.conf
 * @no_search:	-S none
 * @no_dhcp_dns: --no-dhcp-dns: no nameservers in DHCP
 * @no_dhcp_search: --no-dhcp-search: no search domains in DHCP
 *
 * Services (local/, tcp/, udp/, icmp/, fwd/):
 * @no_dhcp:	--no-dhcp
 * @no_ndp:	--no-ndp
 * @no_dhcpv6:	--no-dhcpv6
 * @no_ra:	--no-ra
 * @no_icmp:	--no-icmp
 * @no_tcp:	--no-tcp
 * @no_udp:	--no-udp
 * @no_map_gw:	--no-map-gw: don't map the gateway to host loopback
 * @freebind:	--freebind: forwarded ports on any address
 * @tcp_fwd:	-t: inbound TCP port forwarding
 * @udp_fwd:	-u: inbound UDP port forwarding
 *
 * Runtime (loop.c, passt.c):
 * @epollfd:	the event loop's epoll descriptor
 * @quit:	leave the event loop
 *
 * Fields before @tcp_fwd are plain values; the fuzzers reset just those
 * (test/fuzz/fuzz_common.h).
 */
struct ctx {
	/* Front-end */
	enum tap_mode mode;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd_listen;
	int fd_inherited;
	bool one_off;
	bool virtio_compat;

	/* Migration */
	enum repair_mode repair_mode;
	char repair_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool migrate_exit, migrate_no_linger;
	unsigned migrate_linger_timeout;
	bool no_announce;

	/* Process */
	bool foreground;
	char pid_file[PATH_MAX];
	char log_file[PATH_MAX];
	int log_lvl;
	char pcap_file[PATH_MAX];
	bool print_capabilities;
	bool runas;
	uid_t runas_uid;
	gid_t runas_gid;
	bool sandbox_best_effort;

	/* Addressing */
	char hostname[HOST_NAME_MAX + 1];
	char fqdn[256];
	bool ifi4_ok, ifi6_ok;
	bool no_v4, no_v6;
	char ifname[IFNAMSIZ];
	unsigned ifi4, ifi6;
	char ifname_out[IFNAMSIZ];
	char ifname_out6[IFNAMSIZ];
	struct ip4_ctx ip4;
	struct ip6_ctx ip6;
	uint8_t our_mac[ETH_ALEN];
	uint8_t guest_mac[ETH_ALEN];
	bool guest_mac_set;
	int mtu;

	/* DNS */
	bool dns_given;
	bool no_dns;
	struct dns_search search[MAXDNS_SEARCH];
	int search_count;
	bool search_given;
	bool no_search;
	bool no_dhcp_dns, no_dhcp_search;

	/* Services */
	bool no_dhcp, no_ndp, no_dhcpv6, no_ra, no_icmp, no_tcp, no_udp;
	bool no_map_gw;
	bool freebind;
	struct fwd_ports tcp_fwd;
	struct fwd_ports udp_fwd;

	/* Runtime */
	int epollfd;
	bool quit;
};

#endif /* CTX_H */
