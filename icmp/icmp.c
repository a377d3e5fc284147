// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * icmp.c - ICMP (RFC 792) and ICMPv6 (RFC 4443) echo, guest to host.
 *
 * Theory of operation
 *
 * We hold no raw sockets and no privileges, so the guest's echo requests
 * are sent through "ping sockets" (socket(AF_INET, SOCK_DGRAM,
 * IPPROTO_ICMP), and the ICMPv6 twin), which Linux grants to the groups in
 * net.ipv4.ping_group_range. The kernel owns the echo identifier of such a
 * socket (it is the socket's "port") and computes checksums.
 *
 * Flows: one per (family, guest source address, guest echo identifier,
 * destination address), kept in the shared flow table (flow.c) as a
 * FLOW_ICMP entry that owns one ping socket. The socket is bound to
 * c->ip4.addr_out / c->ip6.addr_out (and c->ifname_out) when configured and
 * otherwise left for the kernel to bind on first send, which picks a free
 * identifier. The epoll reference of the socket carries the flow index
 * and generation.
 *
 * Guest to host: only Echo Request (type 8, or 128 for ICMPv6) with code 0
 * is translated; the whole ICMP message (header and data) is handed to
 * sendto() unchanged, and the kernel replaces the identifier and checksum.
 * Destinations on loopback, unspecified or limited broadcast are refused;
 * the rest are mapped like any of the guest's traffic (fwd_nat_outbound():
 * the gateway address answers from the host's loopback). Any other ICMP
 * message from the guest is dropped (rate-limited debug message).
 *
 * Host to guest: on EPOLLIN we read up to ICMP_RECV_BATCH replies, put the
 * guest's identifier back (icmp_reply_rewrite()), and send each to the
 * guest's source address from the address the guest pinged, with the
 * checksum left for tap_send_ip4()/tap_send_ip6() to fill in. Ping sockets
 * deliver Echo Replies only; anything else read from them is dropped.
 *
 * Lifetime: a flow with neither requests nor replies for ICMP_IDLE_MS is
 * closed by icmp_timer() (epoll deregistration, close, flow_close()). Under
 * pressure the reclaim rule of flow.c applies (UDP and ICMP echo flows
 * share FLOW_DGRAM_MAX entries; a request finding them used up closes
 * the least recently used one if that is idle for FLOW_RECLAIM_IDLE_MS,
 * so that the next request gets in, and is dropped). If a ping socket
 * cannot be made, the request is dropped too; if ping sockets are not permitted at all, we say so once, with
 * the sysctl that fixes it.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "log.h"
#include "icmp/icmp.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "util.h"

#define ICMP_ECHO_REPLY	   0
#define ICMP_ECHO_REQUEST  8
#define ICMP6_ECHO_REQUEST 128
#define ICMP6_ECHO_REPLY   129

/* Replies are read here; sized for the largest IPv4 ICMP message */
static uint8_t icmp_buf[TAP_IP_MAX];

/**
 * icmp_echo_parse() - check that a guest packet is an echo request
 * @p:		parsed packet, IPv4 with ICMP or IPv6 with ICMPv6
 * @id:	echo identifier, host order, set on success
 *
 * Return: 0 for a well-formed Echo Request, -ENOTSUP for any other ICMP
 *	   message, -EINVAL if truncated, fragmented or not ICMP at all
 */
int icmp_echo_parse(const struct pkt *p, uint16_t *id)
{
	uint8_t type, code, want;

	if (p->frag)
		return -EINVAL;
	if (p->family == AF_INET && p->proto == IPPROTO_ICMP)
		want = ICMP_ECHO_REQUEST;
	else if (p->family == AF_INET6 && p->proto == IPPROTO_ICMPV6)
		want = ICMP6_ECHO_REQUEST;
	else
		return -EINVAL;

	if (!pv_u8(p->l4, 0, &type) || !pv_u8(p->l4, 1, &code))
		return -EINVAL;
	if (type != want)
		return -ENOTSUP;
	if (code || p->l4.len < ICMP_HDR_LEN || !pv_be16(p->l4, 4, id))
		return -EINVAL;
	return 0;
}

/**
 * icmp_reply_rewrite() - prepare an echo reply from a ping socket for the
 *			  guest
 * @family:	AF_INET or AF_INET6
 * @msg:	ICMP message as read from the socket, modified in place
 * @len:	length of @msg
 * @id:		guest's echo identifier, host order
 *
 * Puts the guest's identifier in place of the socket's and zeroes the
 * checksum (tap_send_ip4()/tap_send_ip6() compute it).
 *
 * Return: 0, or -EINVAL if @msg is not an Echo Reply of @family
 */
int icmp_reply_rewrite(int family, uint8_t *msg, size_t len, uint16_t id)
{
	uint8_t want = family == AF_INET ? ICMP_ECHO_REPLY : ICMP6_ECHO_REPLY;

	if (len < ICMP_HDR_LEN || msg[0] != want)
		return -EINVAL;

	msg[2] = msg[3] = 0;
	msg[4] = id >> 8;
	msg[5] = id & 0xff;
	return 0;
}

/* Tell the operator, once, why echo does not work */
static void icmp_warn_not_permitted(void)
{
	static bool warned;

	if (warned)
		return;
	warned = true;
	warn("ICMP echo: ping sockets not permitted; set "
	     "net.ipv4.ping_group_range to include our group (GID %u)",
	     (unsigned)getgid());
}

/**
 * icmp_sock_open() - open, and bind as configured, a ping socket
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 *
 * Return: the socket, or -errno
 */
static int icmp_sock_open(const struct ctx *c, int family)
{
	int proto = family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
	int s, rc;

	s = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (s < 0) {
		rc = -errno;
		if (rc == -EACCES || rc == -EPERM)
			icmp_warn_not_permitted();
		else
			debug_rl("ICMP: cannot open ping socket: %s",
				 strerror(-rc));
		return rc;
	}

	if (c->ifname_out[0] &&
	    setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, c->ifname_out,
		       (socklen_t)strlen(c->ifname_out)) < 0) {
		rc = -errno;
		warn_rl("ICMP: cannot bind ping socket to %s: %s",
			c->ifname_out, strerror(-rc));
		goto fail;
	}

	if (family == AF_INET && c->ip4.addr_out.s_addr) {
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_addr = c->ip4.addr_out};

		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			rc = -errno;
			goto fail_bind;
		}
	} else if (family == AF_INET6 &&
		   !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.addr_out)) {
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
					  .sin6_addr = c->ip6.addr_out};

		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			rc = -errno;
			goto fail_bind;
		}
	}
	return s;

fail_bind:
	warn_rl("ICMP: cannot bind ping socket to outbound address: %s",
		strerror(-rc));
fail:
	close(s);
	return rc;
}

static void icmp_flow_close(struct ctx *c, union flow *flow)
{
	if (flow->icmp.sock >= 0) {
		loop_del(c, flow->icmp.sock);
		close(flow->icmp.sock);
		flow->icmp.sock = -1;
	}
	flow_close(flow);
}

/* Mark a flow as used now: idle timeout and reclaim order */
static void icmp_flow_used(union flow *flow)
{
	flow->icmp.last_ms = now_ms();
	flow_lru_touch(flow);
}

/**
 * icmp_flow_new() - new flow for an echo request, with its socket registered
 * @c:		execution context
 * @key:	the flow's key
 *
 * Return: the flow, or NULL
 */
static union flow *icmp_flow_new(struct ctx *c, const struct flow_key *key)
{
	union flow *flow;
	int s;

	/* The reclaim rule of flow.c: UDP and ICMP share FLOW_DGRAM_MAX */
	if (flow_dgram_count() >= FLOW_DGRAM_MAX) {
		/* Room from the next round on, if a flow is idle */
		flow_reclaim_dgram(c, now_ms(), FLOW_RECLAIM_IDLE_MS);
		warn_rl("ICMP: %u UDP and ICMP flows: echo request dropped",
			flow_dgram_count());
		return NULL;
	}
	flow = flow_alloc();
	if (!flow) {
		flow_reclaim_dgram(c, now_ms(), FLOW_RECLAIM_IDLE_MS);
		warn_rl("ICMP: flow table full, echo request dropped");
		return NULL;
	}
	flow->icmp.f.type = FLOW_ICMP;
	flow->icmp.f.key = *key;
	flow->icmp.sock = -1;
	icmp_flow_used(flow);

	s = icmp_sock_open(c, key->family);
	if ((s == -EMFILE || s == -ENFILE) &&
	    !flow_reclaim_dgram(c, now_ms(), FLOW_RECLAIM_IDLE_MS))
		s = icmp_sock_open(c, key->family);
	if (s < 0)
		goto fail;
	flow->icmp.sock = s;

	if (loop_add(c, s, EPOLLIN, flow_ref(flow, REF_ICMP)) < 0) {
		debug_rl("ICMP: cannot add ping socket to epoll");
		goto fail;
	}
	if (flow_hash_insert(flow))
		goto fail; /* cannot happen: looked up before */

	flow_dbg_rl(flow, "opened, identifier %u", key->gport);
	return flow;

fail:
	icmp_flow_close(c, flow);
	return NULL;
}

static bool icmp_dst_refused(const struct pkt *p)
{
	if (p->family == AF_INET) {
		uint32_t a = ntohl(p->dst4.s_addr);

		return !a || a == 0xffffffff || (a >> 24) == 127;
	}
	return IN6_IS_ADDR_UNSPECIFIED(&p->dst6) ||
	       IN6_IS_ADDR_LOOPBACK(&p->dst6) || IN6_IS_ADDR_V4MAPPED(&p->dst6);
}

/**
 * icmp_input() - translate an ICMP/ICMPv6 message from the guest
 * @c:		execution context
 * @p:		parsed packet: IPv4 with ICMP, or IPv6 with ICMPv6 type 128
 */
void icmp_input(struct ctx *c, const struct pkt *p)
{
	union sockaddr_inany sa;
	struct flow_key key;
	union flow *flow;
	const void *msg;
	uint16_t id;
	int rc;

	if (c->no_icmp)
		return;

	rc = icmp_echo_parse(p, &id);
	if (rc == -ENOTSUP) {
		debug_rl("ICMP: only echo requests are forwarded, dropped");
		return;
	}
	if (rc) {
		debug_rl("ICMP: malformed message from guest dropped");
		return;
	}
	if ((p->family == AF_INET && !c->ifi4_ok) ||
	    (p->family == AF_INET6 && !c->ifi6_ok))
		return;
	if (icmp_dst_refused(p)) {
		debug_rl("ICMP: echo request to refused destination dropped");
		return;
	}

	/* The gateway (--map-host-loopback) answers from the host itself */
	if (fwd_nat_outbound(c, p->family, p->family == AF_INET ?
			     (const void *)&p->dst4 : (const void *)&p->dst6,
			     0, &sa)) {
		debug_rl("ICMP: echo request to unmapped destination dropped");
		return;
	}
	if (p->family == AF_INET)
		flow_key_set(&key, FLOW_ICMP, AF_INET, &p->src4, id, &p->dst4,
			     0);
	else
		flow_key_set(&key, FLOW_ICMP, AF_INET6, &p->src6, id, &p->dst6,
			     0);

	flow = flow_hash_lookup(&key);
	if (!flow) {
		flow = icmp_flow_new(c, &key);
		if (!flow)
			return;
	}
	icmp_flow_used(flow);
	flow->f.qpair = tap_queue_in();

	msg = pv_at(p->l4, 0, p->l4.len);
	if (sendto(flow->icmp.sock, msg, p->l4.len, MSG_NOSIGNAL, &sa.sa,
		   sockaddr_len(&sa)) < 0)
		debug_rl("ICMP: echo request not sent: %s", strerror(errno));
}

/**
 * icmp_reply_to_guest() - send one rewritten reply of a flow to the guest
 * @c:		execution context
 * @flow:	the flow
 * @msg:	the reply, its identifier rewritten
 * @len:	length of @msg in bytes
 */
static void icmp_reply_to_guest(struct ctx *c, const union flow *flow,
				const uint8_t *msg, size_t len)
{
	const struct flow_key *k = &flow->f.key;
	int rc;

	tap_queue_out(flow->f.qpair);
	if (k->family == AF_INET) {
		struct in_addr src, dst;

		memcpy(&src, &k->raddr.s6_addr[12], 4);
		memcpy(&dst, &k->gaddr.s6_addr[12], 4);
		rc = tap_send_ip4(c, src, dst, IPPROTO_ICMP, msg, len);
	} else {
		rc = tap_send_ip6(c, &k->raddr, &k->gaddr, IPPROTO_ICMPV6, msg,
				  len);
	}
	if (rc < 0)
		debug_rl("ICMP: failed to queue echo reply: %s", strerror(-rc));
}

/**
 * icmp_sock_handler() - read echo replies from a ping socket
 * @c:		execution context
 * @ref:	epoll reference: REF_ICMP, flow index, socket
 * @events:	epoll events
 */
void icmp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	union flow *flow = flow_from_ref(ref, FLOW_ICMP);
	int i;

	(void)events; /* errors are consumed by recv() below */

	if (!flow || flow->icmp.sock < 0)
		return;

	for (i = 0; i < ICMP_RECV_BATCH; i++) {
		ssize_t n =
			recv(flow->icmp.sock, icmp_buf, sizeof(icmp_buf),
			     MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* A pending ICMP error, e.g. unreachable: go on */
			flow_trace(flow, "%s", strerror(errno));
			continue;
		}
		if (icmp_reply_rewrite(flow->f.key.family, icmp_buf, (size_t)n,
				       flow->f.key.gport))
			continue;

		icmp_flow_used(flow);
		icmp_reply_to_guest(c, flow, icmp_buf, (size_t)n);
	}
}

/**
 * icmp_timer() - close echo flows idle for ICMP_IDLE_MS
 * @c:		execution context
 * @now:	current time, milliseconds (CLOCK_MONOTONIC)
 */
void icmp_timer(struct ctx *c, uint64_t now)
{
	static uint64_t last_scan;
	unsigned i;

	if (last_scan && now - last_scan < 1000)
		return; /* once a second is plenty for 60 s */
	last_scan = now;

	for (i = 0; i < flow_span(); i++) {
		union flow *flow = flow_live(i, FLOW_ICMP);

		if (!flow)
			continue;
		if (now > flow->icmp.last_ms &&
		    now - flow->icmp.last_ms >= ICMP_IDLE_MS) {
			flow_dbg_rl(flow, "closed after idle timeout");
			icmp_flow_close(c, flow);
		}
	}
}
