// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conf/netlink.c - host defaults from rtnetlink: default route and
 * address.
 *
 * Each query opens a NETLINK_ROUTE socket, sends one dump request
 * (RTM_GETROUTE or RTM_GETADDR), walks every reply message
 * through a callback that keeps the best match, and closes the socket.
 * This runs once at start-up, before any guest traffic, so simplicity wins
 * over reusing a socket.
 *
 * Replies come from the kernel but are still parsed defensively: every
 * message and attribute length is checked against what was received
 * before anything is read, messages with another sequence number or from
 * a non-kernel sender are ignored, and a receive timeout bounds the wait.
 * Nothing here ever changes host state: only GET requests are sent.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "conf/netlink.h"
#include "net/packet.h"
#include "util.h"

#define NL_BUF_LEN 65536	/* more than any dump chunk from the kernel */
#define NL_TIMEOUT_S 2

typedef void (*nl_cb_t)(const struct nlmsghdr *nh, void *arg);

/* Does a whole message start at @nh, with @left bytes received from it? */
static bool nl_msg_ok(const struct nlmsghdr *nh, size_t left)
{
	return left >= sizeof(*nh) && nh->nlmsg_len >= sizeof(*nh) &&
	       nh->nlmsg_len <= left;
}

/* Attribute table for one message: tb[type], NULL if absent */
#define NL_ATTR_MAX 64

/**
 * nl_attrs() - attribute table of one message: tb[type], NULL if absent
 * @nh:		the message
 * @hdrlen:	length of its fixed header, before the attributes
 * @tb:		the table, max + 1 entries, filled in
 * @max:	highest attribute type to note
 */
static void nl_attrs(const struct nlmsghdr *nh, size_t hdrlen,
		     const struct rtattr **tb, int max)
{
	const struct rtattr *rta;
	int len;

	memset(tb, 0, sizeof(*tb) * (size_t)(max + 1));
	len = (int)nh->nlmsg_len - (int)NLMSG_SPACE(hdrlen);
	if (len <= 0)
		return;
	rta = (const struct rtattr *)((const char *)NLMSG_DATA(nh) +
				      NLMSG_ALIGN(hdrlen));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type <= max)
			tb[rta->rta_type] = rta;
	}
}

/* Copy an attribute's payload if it is exactly @len bytes */
static bool nl_attr_get(const struct rtattr *rta, void *dst, size_t len)
{
	if (!rta || RTA_PAYLOAD(rta) != len)
		return false;
	memcpy(dst, RTA_DATA(rta), len);
	return true;
}

/**
 * nl_dump() - send a dump request and feed each reply message to @cb
 * @type:	RTM_GETROUTE, RTM_GETADDR or RTM_GETLINK
 * @family:	address family to ask for (AF_UNSPEC for links)
 * @cb:		called for each message of the dump
 * @arg:	passed to @cb
 *
 * Return: 0 once the dump is complete, -errno on failure
 */
static int nl_dump(uint16_t type, int family, nl_cb_t cb, void *arg)
{
	static uint32_t seq;
	struct {
		struct nlmsghdr nh;
		union {
			struct rtmsg rtm;
			struct ifaddrmsg ifa;
			struct ifinfomsg ifi;
		};
	} req;
	struct timeval tv = { .tv_sec = NL_TIMEOUT_S };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	static char buf[NL_BUF_LEN] __attribute__((aligned(NLMSG_ALIGNTO)));
	size_t hdrlen;
	int s, rc = 0;

	switch (type) {
	case RTM_GETROUTE:
		hdrlen = sizeof(struct rtmsg);
		break;
	case RTM_GETADDR:
		hdrlen = sizeof(struct ifaddrmsg);
		break;
	default:
		hdrlen = sizeof(struct ifinfomsg);
		break;
	}
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = (uint32_t)NLMSG_LENGTH(hdrlen);
	req.nh.nlmsg_type = type;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nh.nlmsg_seq = ++seq;
	/* The family is the first byte of all three headers */
	req.rtm.rtm_family = (unsigned char)family;

	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0)
		return -errno;
	if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    sendto(s, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0) {
		rc = -errno;
		goto out;
	}

	for (;;) {
		struct sockaddr_nl from = { 0 };
		socklen_t fromlen = sizeof(from);
		const struct nlmsghdr *nh;
		size_t left, step;
		ssize_t n;

		n = recvfrom(s, buf, sizeof(buf), MSG_TRUNC,
			     (struct sockaddr *)&from, &fromlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = errno == EAGAIN ? -ETIMEDOUT : -errno;
			goto out;
		}
		if (n > (ssize_t)sizeof(buf)) {
			rc = -EMSGSIZE;
			goto out;
		}
		if (fromlen != sizeof(from) || from.nl_pid != 0)
			continue;	/* not from the kernel */

		left = (size_t)n;
		for (nh = (const struct nlmsghdr *)buf; nl_msg_ok(nh, left);
		     nh = (const struct nlmsghdr *)((const char *)nh + step)) {
			step = MIN(NLMSG_ALIGN(nh->nlmsg_len), left);
			left -= step;
			if (nh->nlmsg_seq != req.nh.nlmsg_seq)
				continue;
			if (nh->nlmsg_type == NLMSG_DONE)
				goto out;
			if (nh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nh);

				if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					rc = -EPROTO;
				else
					rc = e->error > 0 ? -EPROTO : e->error;
				goto out;
			}
			cb(nh, arg);
		}
	}
out:
	close(s);
	return rc;
}

/**
 * struct route_req - state of a default route search
 * @family:	AF_INET or AF_INET6
 * @want_oif:	only consider routes through this interface, 0 for any
 * @oif:	best route's output interface
 * @gw:		best route's gateway, zero if it has none (on-link)
 * @metric:	best route's priority
 * @found:	a route was found
 */
struct route_req {
	int family;
	unsigned want_oif;
	unsigned oif;
	uint8_t gw[16];
	uint32_t metric;
	bool found;
};

/**
 * route_multipath() - interface and gateway of a multipath route's first hop
 * @mp:		the RTA_MULTIPATH attribute
 * @r:		the search, for the interface it wants
 * @oif:	set to the hop's interface
 * @gw:		set to its gateway, if it has one
 * @alen:	length of an address of the family, 4 or 16
 *
 * The first usable hop: through the interface @r wants, if it wants one.
 *
 * Return: true if a usable hop was found
 */
static bool route_multipath(const struct rtattr *mp, struct route_req *r,
			    unsigned *oif, uint8_t *gw, size_t alen)
{
	const struct rtnexthop *nhp = RTA_DATA(mp);
	int len = (int)RTA_PAYLOAD(mp);

	while (len >= (int)sizeof(*nhp) && nhp->rtnh_len >= sizeof(*nhp) &&
	       nhp->rtnh_len <= len) {
		const struct rtattr *rta = RTNH_DATA(nhp);
		int alen_left = nhp->rtnh_len - (int)RTNH_LENGTH(0);
		unsigned idx = (unsigned)nhp->rtnh_ifindex;

		if (!r->want_oif || idx == r->want_oif) {
			*oif = idx;
			memset(gw, 0, alen);
			for (; RTA_OK(rta, alen_left);
			     rta = RTA_NEXT(rta, alen_left)) {
				if (rta->rta_type == RTA_GATEWAY)
					nl_attr_get(rta, gw, alen);
			}
			return true;
		}
		len -= RTNH_ALIGN(nhp->rtnh_len);
		nhp = RTNH_NEXT(nhp);
	}
	return false;
}

/**
 * route_cb() - note a route, if it's a better default route than the one found
 * @nh:		netlink message header, RTM_NEWROUTE
 * @arg:	the search, struct route_req
 */
static void route_cb(const struct nlmsghdr *nh, void *arg)
{
	const struct rtattr *tb[NL_ATTR_MAX + 1];
	struct route_req *r = arg;
	const struct rtmsg *rtm = NLMSG_DATA(nh);
	size_t alen = r->family == AF_INET ? 4 : 16;
	uint32_t table, metric = 0, oif32 = 0;
	uint8_t gw[16] = { 0 };
	unsigned oif;

	if (nh->nlmsg_type != RTM_NEWROUTE ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
		return;
	if (rtm->rtm_family != r->family || rtm->rtm_dst_len ||
	    rtm->rtm_type != RTN_UNICAST)
		return;

	nl_attrs(nh, sizeof(*rtm), tb, NL_ATTR_MAX);
	if (!nl_attr_get(tb[RTA_TABLE], &table, sizeof(table)))
		table = rtm->rtm_table;
	if (table != RT_TABLE_MAIN)
		return;
	nl_attr_get(tb[RTA_PRIORITY], &metric, sizeof(metric));

	if (tb[RTA_MULTIPATH]) {
		if (!route_multipath(tb[RTA_MULTIPATH], r, &oif, gw, alen))
			return;
	} else {
		if (!nl_attr_get(tb[RTA_OIF], &oif32, sizeof(oif32)))
			return;
		oif = oif32;
		nl_attr_get(tb[RTA_GATEWAY], gw, alen);
	}
	if (!oif || (r->want_oif && oif != r->want_oif))
		return;
	if (r->found && metric >= r->metric)
		return;

	r->found = true;
	r->oif = oif;
	r->metric = metric;
	memcpy(r->gw, gw, sizeof(gw));
}

/**
 * nl_default_route() - find the host's default route in the main table
 * @family:	AF_INET or AF_INET6
 * @ifindex:	if non-zero on entry, only routes through this interface;
 *		on success, set to the route's output interface
 * @gw:		set to the gateway (struct in_addr or struct in6_addr), all
 *		zeroes if the route has none
 *
 * With several default routes, the one with the lowest metric wins.
 *
 * Return: 0 on success, -ENOENT if there is no default route, -errno on
 * netlink failure
 */
int nl_default_route(int family, unsigned *ifindex, void *gw)
{
	struct route_req r = { .family = family, .want_oif = *ifindex };
	int rc;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	rc = nl_dump(RTM_GETROUTE, family, route_cb, &r);
	if (rc)
		return rc;
	if (!r.found)
		return -ENOENT;
	*ifindex = r.oif;
	memcpy(gw, r.gw, family == AF_INET ? 4 : 16);
	return 0;
}

/**
 * struct addr_req - state of an address search
 * @family:	AF_INET or AF_INET6
 * @ifindex:	interface to look at
 * @addr:	best address so far
 * @prefix_len:	its prefix length
 * @quality:	0: none yet, 1: temporary or deprecated, 2: preferred
 */
struct addr_req {
	int family;
	unsigned ifindex;
	uint8_t addr[16];
	int prefix_len;
	int quality;
};

/**
 * addr_cb() - note an address, if it's better than the one found
 * @nh:		netlink message header, RTM_NEWADDR
 * @arg:	the search, struct addr_req
 *
 * Preferred addresses win over temporary and deprecated ones.
 */
static void addr_cb(const struct nlmsghdr *nh, void *arg)
{
	const struct rtattr *tb[NL_ATTR_MAX + 1];
	const struct ifaddrmsg *ifa = NLMSG_DATA(nh);
	struct addr_req *r = arg;
	size_t alen = r->family == AF_INET ? 4 : 16;
	uint8_t addr[16];
	uint32_t flags;
	int quality = 2;

	if (nh->nlmsg_type != RTM_NEWADDR ||
	    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)))
		return;
	if (ifa->ifa_family != r->family || ifa->ifa_index != r->ifindex ||
	    ifa->ifa_scope != RT_SCOPE_UNIVERSE)
		return;

	nl_attrs(nh, sizeof(*ifa), tb, NL_ATTR_MAX);
	if (!nl_attr_get(tb[IFA_FLAGS], &flags, sizeof(flags)))
		flags = ifa->ifa_flags;
	if (flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED))
		return;
	if (flags & (IFA_F_TEMPORARY | IFA_F_DEPRECATED))
		quality = 1;
	if (quality <= r->quality)
		return;

	/* IFA_LOCAL is our end of a point-to-point link, else IFA_ADDRESS */
	if (!nl_attr_get(tb[IFA_LOCAL], addr, alen) &&
	    !nl_attr_get(tb[IFA_ADDRESS], addr, alen))
		return;

	memcpy(r->addr, addr, alen);
	r->prefix_len = ifa->ifa_prefixlen;
	r->quality = quality;
}

/**
 * nl_addr_get() - first global address of an interface
 * @family:	AF_INET or AF_INET6
 * @ifindex:	interface index
 * @addr:	set to the address (struct in_addr or struct in6_addr)
 * @prefix_len:	set to its prefix length, may be NULL
 *
 * Link-local and host-scope addresses never qualify; for IPv6, tentative
 * and DAD-failed addresses are skipped, and temporary (privacy) or
 * deprecated ones are only used if there is nothing else.
 *
 * Return: 0 on success, -ENOENT if the interface has no such address,
 * -errno on netlink failure
 */
int nl_addr_get(int family, unsigned ifindex, void *addr, int *prefix_len)
{
	struct addr_req r = { .family = family, .ifindex = ifindex };
	int rc;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	if (!ifindex)
		return -ENODEV;
	rc = nl_dump(RTM_GETADDR, family, addr_cb, &r);
	if (rc)
		return rc;
	if (!r.quality)
		return -ENOENT;
	memcpy(addr, r.addr, family == AF_INET ? 4 : 16);
	if (prefix_len)
		*prefix_len = r.prefix_len;
	return 0;
}
