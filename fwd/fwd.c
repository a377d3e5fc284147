// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fwd.c - address mapping between the guest's view and the host's, the
 * sockets we open on the guest's behalf, and the listening sockets of
 * forwarded ports.
 *
 * Theory of operation
 *
 * The guest has the host's address, so a few addresses need translating:
 *
 *  guest -> host (fwd_nat_outbound()):
 *	--map-host-loopback ADDR (default: the gateway, unless --no-map-gw)
 *	    -> 127.0.0.1 / ::1: the guest reaches services of the host that
 *	    listen on loopback through its gateway address;
 *	--map-guest-addr ADDR -> the guest's address on the host;
 *	--dns-forward ADDR, port 53 -> the host's first nameserver;
 *	link-local, multicast, broadcast, unspecified: refused.
 *  host peer -> guest (fwd_nat_inbound()):
 *	loopback peers appear as the map-host-loopback address; the host's
 *	own address (the guest's too) as --map-guest-addr if set, else as
 *	the map-host-loopback address; IPv4-mapped IPv6 peers as IPv4.
 *
 * Inbound connections and datagrams go to the guest's address as last
 * seen in its traffic (it may differ from the assigned one, e.g. IPv6
 * SLAAC), or the assigned one until it has sent anything.
 *
 * Listening sockets: one per forwarded port and family (IPv6 sockets are
 * v6-only so each family maps on its own), bound as the -t/-u option said,
 * registered with a reference carrying the port and family.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "fwd_ports.h"
#include "kernel_abi.h"
#include "log.h"
#include "loop.h"
#include "util.h"

/**
 * sockaddr_len() - length to pass with a socket address to bind(),
 *		    connect() or sendto()
 * @sa:		socket address, AF_INET or AF_INET6
 *
 * Return: sizeof(struct sockaddr_in) for AF_INET, else that of struct
 *	   sockaddr_in6
 */
socklen_t sockaddr_len(const union sockaddr_inany *sa)
{
	return sa->sa.sa_family == AF_INET ? sizeof(sa->sa4) : sizeof(sa->sa6);
}

/**
 * sockaddr_port() - port of a socket address
 * @sa:		socket address, AF_INET or AF_INET6
 *
 * Return: the port, host order
 */
uint16_t sockaddr_port(const union sockaddr_inany *sa)
{
	return ntohs(sa->sa.sa_family == AF_INET ? sa->sa4.sin_port
						 : sa->sa6.sin6_port);
}

/**
 * sockaddr_set() - fill a socket address from a family-native address
 * @sa:		socket address to fill
 * @family:	AF_INET or AF_INET6
 * @addr:	struct in_addr or struct in6_addr
 * @port:	port, host order
 */
void sockaddr_set(union sockaddr_inany *sa, int family, const void *addr,
		  uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (family == AF_INET) {
		sa->sa4.sin_family = AF_INET;
		sa->sa4.sin_port = htons(port);
		memcpy(&sa->sa4.sin_addr, addr, 4);
	} else {
		sa->sa6.sin6_family = AF_INET6;
		sa->sa6.sin6_port = htons(port);
		memcpy(&sa->sa6.sin6_addr, addr, 16);
	}
}

/**
 * fwd_socket() - a non-blocking socket for traffic on the guest's behalf,
 *		  bound to the outbound address or interface if configured
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @type:	SOCK_STREAM or SOCK_DGRAM
 *
 * Return: socket, or -errno
 */
int fwd_socket(const struct ctx *c, int family, int type)
{
	int s = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	union sockaddr_inany sa;
	bool bind_addr;

	if (s < 0)
		return -errno;

	if (c->ifname_out[0] &&
	    setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, c->ifname_out,
		       strlen(c->ifname_out))) {
		int e = errno;

		close(s);
		return -e;
	}
	if (family == AF_INET) {
		bind_addr = c->ip4.addr_out.s_addr != INADDR_ANY;
		sockaddr_set(&sa, AF_INET, &c->ip4.addr_out, 0);
	} else {
		bind_addr = !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.addr_out);
		sockaddr_set(&sa, AF_INET6, &c->ip6.addr_out, 0);
	}
	if (bind_addr && bind(s, &sa.sa, sockaddr_len(&sa))) {
		int e = errno;

		close(s);
		return -e;
	}
	return s;
}

static bool ip4_eq(struct in_addr a, struct in_addr b)
{
	return a.s_addr == b.s_addr;
}

/**
 * fwd_nat_outbound() - the host-side destination of a guest's packet
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @dst:	destination as the guest sent it (struct in_addr/in6_addr)
 * @port:	destination port (0 for ICMP)
 * @sa:	filled with the destination to use on the host
 *
 * Return: 0, or -EINVAL for destinations we don't translate
 */
int fwd_nat_outbound(const struct ctx *c, int family, const void *dst,
		     uint16_t port, union sockaddr_inany *sa)
{
	if (family == AF_INET) {
		struct in_addr d, lo = { htonl(INADDR_LOOPBACK) };

		memcpy(&d, dst, 4);
		if (d.s_addr == INADDR_ANY || d.s_addr == INADDR_BROADCAST ||
		    IN_MULTICAST(ntohl(d.s_addr)))
			return -EINVAL;
		if (port == 53 && c->ip4.dns_match.s_addr &&
		    ip4_eq(d, c->ip4.dns_match))
			d = c->ip4.dns_host;
		else if (c->ip4.map_host_loopback.s_addr &&
			 ip4_eq(d, c->ip4.map_host_loopback))
			d = lo;
		else if (c->ip4.map_guest_addr.s_addr &&
			 ip4_eq(d, c->ip4.map_guest_addr))
			d = c->ip4.addr;
		sockaddr_set(sa, AF_INET, &d, port);
		return 0;
	} else {
		struct in6_addr d;

		memcpy(&d, dst, 16);
		if (IN6_IS_ADDR_UNSPECIFIED(&d) || IN6_IS_ADDR_MULTICAST(&d))
			return -EINVAL;
		if (port == 53 && !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.dns_match) &&
		    IN6_ARE_ADDR_EQUAL(&d, &c->ip6.dns_match))
			d = c->ip6.dns_host;
		else if (!IN6_IS_ADDR_UNSPECIFIED(&c->ip6.map_host_loopback) &&
			 (IN6_ARE_ADDR_EQUAL(&d, &c->ip6.map_host_loopback) ||
			  IN6_ARE_ADDR_EQUAL(&d, &c->ip6.our_ll)))
			d = in6addr_loopback;
		else if (!IN6_IS_ADDR_UNSPECIFIED(&c->ip6.map_guest_addr) &&
			 IN6_ARE_ADDR_EQUAL(&d, &c->ip6.map_guest_addr))
			d = c->ip6.addr;
		if (IN6_IS_ADDR_LINKLOCAL(&d))
			return -EINVAL;
		sockaddr_set(sa, AF_INET6, &d, port);
		return 0;
	}
}

/**
 * fwd_nat_inbound() - how a host-side peer appears to the guest
 * @c:		execution context
 * @peer:	peer socket address
 * @gsrc:	filled with the source address the guest sees
 *
 * Return: family of @gsrc, or -EINVAL if the peer can't be represented
 */
int fwd_nat_inbound(const struct ctx *c, const union sockaddr_inany *peer,
		    union inany_addr *gsrc)
{
	if (peer->sa.sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&peer->sa6.sin6_addr)) {
		memcpy(&gsrc->v4, &peer->sa6.sin6_addr.s6_addr[12], 4);
	} else if (peer->sa.sa_family == AF_INET) {
		gsrc->v4 = peer->sa4.sin_addr;
	} else {
		const struct in6_addr *a = &peer->sa6.sin6_addr;

		gsrc->v6 = *a;
		if (IN6_IS_ADDR_LOOPBACK(a) ||
		    IN6_ARE_ADDR_EQUAL(a, &c->ip6.addr)) {
			if (!IN6_IS_ADDR_LOOPBACK(a) &&
			    !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.map_guest_addr))
				gsrc->v6 = c->ip6.map_guest_addr;
			else if (!IN6_IS_ADDR_UNSPECIFIED(
					 &c->ip6.map_host_loopback))
				gsrc->v6 = c->ip6.map_host_loopback;
			else
				return -EINVAL;
		}
		if (IN6_IS_ADDR_LINKLOCAL(&gsrc->v6) &&
		    !IN6_ARE_ADDR_EQUAL(&gsrc->v6, &c->ip6.our_ll))
			return -EINVAL;
		return AF_INET6;
	}

	if ((ntohl(gsrc->v4.s_addr) >> 24) == 127 ||
	    ip4_eq(gsrc->v4, c->ip4.addr)) {
		if ((ntohl(gsrc->v4.s_addr) >> 24) != 127 &&
		    c->ip4.map_guest_addr.s_addr)
			gsrc->v4 = c->ip4.map_guest_addr;
		else if (c->ip4.map_host_loopback.s_addr)
			gsrc->v4 = c->ip4.map_host_loopback;
		else
			return -EINVAL;
	}
	return AF_INET;
}

/**
 * fwd_guest_addr() - the guest's address to send inbound traffic to
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @a:		filled with the address
 *
 * Return: false if @family isn't enabled
 */
bool fwd_guest_addr(const struct ctx *c, int family, union inany_addr *a)
{
	if (family == AF_INET) {
		if (!c->ifi4_ok)
			return false;
		a->v4 = c->ip4.addr_seen.s_addr ? c->ip4.addr_seen : c->ip4.addr;
		return true;
	}
	if (!c->ifi6_ok)
		return false;
	a->v6 = IN6_IS_ADDR_UNSPECIFIED(&c->ip6.addr_seen) ? c->ip6.addr
							    : c->ip6.addr_seen;
	return true;
}

/**
 * fwd_defaults() - fill in mapping defaults that depend on the host
 * @c:		execution context
 */
void fwd_defaults(struct ctx *c)
{
	if (!c->no_map_gw && !c->ip4.map_host_loopback.s_addr)
		c->ip4.map_host_loopback = c->ip4.gw;
	if (!c->no_map_gw &&
	    IN6_IS_ADDR_UNSPECIFIED(&c->ip6.map_host_loopback))
		c->ip6.map_host_loopback = IN6_IS_ADDR_UNSPECIFIED(&c->ip6.gw) ?
					   c->ip6.our_ll : c->ip6.gw;
	if (c->ip4.dns_match.s_addr && !c->ip4.dns_host.s_addr)
		c->ip4.dns_host = c->ip4.dns_count ? c->ip4.dns[0]
						   : c->ip4.map_host_loopback;
}

/* The TCP listening sockets, for fwd_tcp_listeners() (grown at start-up) */
static int *fwd_tcp_fds;
static unsigned fwd_tcp_n, fwd_tcp_cap;

/* Note a TCP listener; 0, or -ENOMEM */
static int fwd_tcp_note(int s)
{
	if (fwd_tcp_n == fwd_tcp_cap) {
		unsigned cap = fwd_tcp_cap ? fwd_tcp_cap * 2 : 64;
		int *p = realloc(fwd_tcp_fds, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		fwd_tcp_fds = p;
		fwd_tcp_cap = cap;
	}
	fwd_tcp_fds[fwd_tcp_n++] = s;
	return 0;
}

/**
 * fwd_tcp_listeners() - the listening sockets of forwarded TCP ports
 * @fds:	set to the array of their descriptors
 *
 * Return: how many there are
 */
unsigned fwd_tcp_listeners(const int **fds)
{
	*fds = fwd_tcp_fds;
	return fwd_tcp_n;
}

/**
 * fwd_listen_one() - one listening socket, as the bind group of the port says
 * @c:		execution context
 * @fwd:	forwarding configuration
 * @type:	SOCK_STREAM or SOCK_DGRAM
 * @port:	port to listen on
 * @family:	AF_INET or AF_INET6
 *
 * Return: 1 if listening, 0 if the bind group excludes @family, -errno on
 *	failure
 */
static int fwd_listen_one(struct ctx *c, const struct fwd_ports *fwd,
			  int type, uint16_t port, int family)
{
	const struct fwd_bind *b = &fwd->bind[fwd->bind_idx[port]];
	enum ref_type ref = type == SOCK_STREAM ? REF_TCP_LISTEN
						: REF_UDP_LISTEN;
	union sockaddr_inany sa;
	int s, one = 1;

	if (b->af != AF_UNSPEC && b->af != family)
		return 0;
	s = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* --freebind: addresses the host doesn't have (yet) */
	if (c->freebind && family == AF_INET)
		setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	else if (c->freebind)
		setsockopt(s, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one));
	if (b->ifname[0] &&
	    setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, b->ifname,
		       strlen(b->ifname)))
		goto fail;

	if (b->af == AF_UNSPEC)
		sockaddr_set(&sa, family, family == AF_INET ?
			     (const void *)&(struct in_addr){ 0 } :
			     (const void *)&in6addr_any, port);
	else
		sockaddr_set(&sa, family, &b->addr, port);
	if (bind(s, &sa.sa, sockaddr_len(&sa)))
		goto fail;
	if (type == SOCK_STREAM && (listen(s, 128) || fwd_tcp_note(s)))
		goto fail;
	/* Listeners live as long as the process: the reference carries
	 * the fd itself (see union epoll_ref)
	 */
	if (loop_add(c, s, EPOLLIN, loop_ref(ref, FWD_REF(port, family),
					     (uint32_t)s)))
		goto fail;
	return 1;
fail:
	{
		int e = errno;

		close(s);
		return -e;
	}
}

/*
 * Listening sockets we may still open: "all" on both protocols and
 * families asks for far more sockets than a usual open-file limit allows,
 * and the flows need descriptors too. fwd_listen_init() sets it from the
 * limit, keeping FWD_FD_RESERVE (or half the limit, if that's less) for
 * flows and everything else.
 */
static unsigned long fwd_listen_budget;
#define FWD_FD_RESERVE (FLOW_MAX + 256UL)

/**
 * fwd_listen_proto() - listening sockets of one protocol's forwarded ports
 * @c:		execution context
 * @fwd:	forwarding configuration
 * @type:	SOCK_STREAM or SOCK_DGRAM
 */
static void fwd_listen_proto(struct ctx *c, const struct fwd_ports *fwd,
			     int type)
{
	const char *name = type == SOCK_STREAM ? "TCP" : "UDP";
	unsigned ok = 0, failed = 0, skipped = 0;
	int port, fam, rc;

	if (fwd->mode == FWD_NONE)
		return;
	for (port = 1; port < NUM_PORTS; port++) {
		if (!fwd_port_isset(fwd, (uint16_t)port))
			continue;
		for (fam = 0; fam < 2; fam++) {
			int family = fam ? AF_INET6 : AF_INET;

			if (family == AF_INET ? !c->ifi4_ok : !c->ifi6_ok)
				continue;
			if (!fwd_listen_budget) {
				skipped++;
				continue;
			}
			rc = fwd_listen_one(c, fwd, type, (uint16_t)port,
					    family);
			if (rc > 0)
				fwd_listen_budget--;
			if (rc > 0) {
				ok++;
			} else if (rc < 0) {
				failed++;
				if (fwd->mode != FWD_ALL)
					warn("%s port %i (%s): %s", name, port,
					     fam ? "IPv6" : "IPv4",
					     strerror(-rc));
			}
		}
	}
	info("%s: %u listening socket(s) for forwarded ports%s", name, ok,
	     failed ? ", some ports could not be bound" : "");
	if (skipped)
		warn("%s: %u forwarded port(s) not bound: the open-file limit "
		     "is too low for them and the connections (raise "
		     "RLIMIT_NOFILE)", name, skipped);
}

/**
 * fwd_listen_init() - open listening sockets for -t and -u ports
 * @c:		execution context
 *
 * Return: 0
 */
int fwd_listen_init(struct ctx *c)
{
	struct rlimit rl;

	/* "all" needs two sockets per port: take what the hard limit gives */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY) {
		fwd_listen_budget = ~0UL;
	} else {
		unsigned long reserve = MIN(FWD_FD_RESERVE,
					    (unsigned long)rl.rlim_cur / 2);

		fwd_listen_budget = rl.rlim_cur > reserve ?
				    rl.rlim_cur - reserve : 0;
	}
	if (!c->no_tcp)
		fwd_listen_proto(c, &c->tcp_fwd, SOCK_STREAM);
	if (!c->no_udp)
		fwd_listen_proto(c, &c->udp_fwd, SOCK_DGRAM);
	return 0;
}
