// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * udp.c - UDP translation: the guest's datagrams leave through ordinary
 * UDP sockets of our namespace, and datagrams to forwarded ports (-u)
 * reach the guest.
 *
 * Theory of operation
 *
 * UDP has no connections, so a flow is what conntrack would call one: the
 * datagrams between one guest address and port and one remote address and
 * port, as the guest sees them. Flows live in the shared flow table
 * (flow.c) as FLOW_UDP entries, keyed (family, guest address, guest port,
 * remote address, remote port). There are two kinds:
 *
 *  guest-initiated: the first datagram from a guest port to a remote opens
 *	a socket (fwd_socket(): same family as the guest's, bound as -o and
 *	--outbound-if say) and connect()s it to the host-side destination
 *	that fwd_nat_outbound() gives (gateway -> loopback, --dns-forward ->
 *	the host's resolver, ...). Connecting makes the kernel deliver only
 *	the remote's replies to the socket and report ICMP errors about it.
 *	The socket is owned by the flow and registered as REF_UDP with the
 *	flow index.
 *
 *  inbound: a datagram on the listening socket of a forwarded port
 *	(REF_UDP_LISTEN, set up by fwd_listen_init()) opens a flow keyed by
 *	the guest's address and the target port, and the peer as the guest
 *	sees it (fwd_nat_inbound(): loopback appears as the gateway). The
 *	flow owns no socket: it remembers the listening socket and the
 *	peer's real address, and the guest's replies leave with sendto() from
 *	the forwarded port, as the peer expects.
 *
 * Both kinds are found from the guest side by the same key, so a guest
 * reply to a forwarded datagram and a guest datagram that starts a flow
 * take the same path in udp_input().
 *
 * Guest to host: every guest datagram is one send() (or sendto()); there
 * is no queue of our own: if the socket can't take it now, it's dropped,
 * as a router would. Zero-length datagrams are valid and forwarded.
 * Fragments (we don't reassemble), broadcast and multicast destinations
 * (a guest never hears back about those: no ICMP either), destinations
 * fwd_nat_outbound() refuses, and loopback, multicast or unspecified
 * sources are dropped.
 *
 * Host to guest: on EPOLLIN we read up to UDP_BATCH datagrams with one
 * recvmmsg() straight into frame buffers, after the room that the
 * Ethernet, IP and UDP headers will take; the UDP header is written in
 * place and tap_send_l4() adds the rest (and the checksums), so the
 * payload is copied once, from the socket to the front-end's queue. The
 * source is the remote as the guest knows it (the key's remote address
 * and port: DNS replies come from the address the guest queried, loopback
 * services from the gateway), the destination the guest's address and
 * port. Datagrams larger than a frame can carry are dropped.
 *
 * ICMP errors: a connected UDP socket turns an ICMP error about it into a
 * pending socket error (and EPOLLERR). We collect it with SO_ERROR, or
 * from the failing recv()/send(), and for port, host and network
 * unreachable (ECONNREFUSED, EHOSTUNREACH, ENETUNREACH) and
 * administrative refusals (EACCES, EPERM) send the guest the matching
 * ICMP/ICMPv6 error with local_unreach(). A send() that fails that
 * way reported an earlier datagram's fate, so it is retried once.
 *
 * Lifetime: a flow with no datagram either way for UDP_IDLE_MS is closed
 * by udp_timer() (socket out of epoll and closed, flow freed). Under
 * pressure, the reclaim rule of flow.c applies: UDP and ICMP echo flows
 * share FLOW_DGRAM_MAX entries; a new flow that finds them used up (or
 * the table full) is dropped, rate-limited warning, after closing the
 * least recently used UDP or ICMP flow if that one is idle for
 * FLOW_RECLAIM_IDLE_MS, so that the next one gets in; with no descriptor
 * left, it closes that flow and takes its socket's place at once. Every datagram either way marks its
 * flow as used (flow_lru_touch()). Nothing here allocates memory: the
 * frame buffers are static.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "flow_udp.h"
#include "fwd/fwd.h"
#include "log.h"
#include "loop.h"
#include "net/packet.h"
#include "local/local.h"
#include "tap/tap.h"
#include "udp/udp.h"
#include "util.h"

/* Frames for datagrams read from sockets: payload lands after the headers */
static uint8_t udp_frames[UDP_BATCH][FRAME_MAX_LEN];
static struct mmsghdr udp_mmh[UDP_BATCH];
static struct iovec udp_iov[UDP_BATCH];
static union sockaddr_inany udp_peers[UDP_BATCH];

/* Flow at an index, NULL if it's not an open UDP flow */
static struct udp_flow *udp_flow_at(unsigned idx)
{
	union flow *flow = flow_live(idx, FLOW_UDP);

	return flow ? &flow->udp : NULL;
}

/* Key address in its family's own format (IPv4 is stored IPv4-mapped) */
static const void *udp_key_addr(const struct flow_key *k,
				const struct in6_addr *a)
{
	return k->family == AF_INET ? (const void *)&a->s6_addr[12]
				    : (const void *)a;
}

/**
 * udp_flow_key() - flow key and payload of a UDP datagram from the guest
 * @p:		parsed packet
 * @k:		filled with the key: guest source address and port, remote
 *		(destination) address and port
 * @payload:	set to the UDP payload (may be empty)
 *
 * Return: 0, or -EINVAL for fragments, non-UDP packets and inconsistent
 *	   UDP headers
 */
int udp_flow_key(const struct pkt *p, struct flow_key *k, struct pview *payload)
{
	uint16_t sport, dport;

	if (p->frag || (p->family != AF_INET && p->family != AF_INET6))
		return -EINVAL;
	if (pkt_udp(p, &sport, &dport, payload))
		return -EINVAL;

	if (p->family == AF_INET)
		flow_key_set(k, FLOW_UDP, AF_INET, &p->src4, sport, &p->dst4,
			     dport);
	else
		flow_key_set(k, FLOW_UDP, AF_INET6, &p->src6, sport, &p->dst6,
			     dport);
	return 0;
}

/**
 * udp_addrs_refused() - addresses a datagram from the guest may not carry
 * @c:		execution context
 * @p:		parsed frame of the datagram
 *
 * Sources no guest datagram may carry, and destinations we don't translate even
 * where the host would route them (fwd_nat_outbound() refuses the others:
 * unspecified, multicast, limited broadcast).
 *
 * Return: true if the datagram is to be dropped
 */
static bool udp_addrs_refused(const struct ctx *c, const struct pkt *p)
{
	if (p->family == AF_INET) {
		uint32_t s = ntohl(p->src4.s_addr), d = ntohl(p->dst4.s_addr);
		uint32_t mask;

		if (!s || (s >> 24) == 127 || IN_MULTICAST(s) || s == ~0U)
			return true;
		if (c->ip4.prefix_len <= 0 || c->ip4.prefix_len >= 31)
			return false;
		/* Directed broadcast of the guest's subnet */
		mask = ~0U << (32 - c->ip4.prefix_len);
		return (d & ~mask) == ~mask &&
		       (d & mask) == (ntohl(c->ip4.addr.s_addr) & mask);
	}
	return IN6_IS_ADDR_UNSPECIFIED(&p->src6) ||
	       IN6_IS_ADDR_LOOPBACK(&p->src6) ||
	       IN6_IS_ADDR_MULTICAST(&p->src6);
}

static void udp_flow_close(struct ctx *c, struct udp_flow *uf)
{
	if (uf->sock >= 0) {
		loop_del(c, uf->sock);
		close(uf->sock);
		uf->sock = -1;
	}
	flow_dbg_rl(uf, "closed");
	flow_close((union flow *)uf);
}

/* Errors that mean "unreachable", as ICMP would have told a router */
static bool udp_errno_unreach(int e)
{
	return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH ||
	       e == EACCES || e == EPERM;
}

static void udp_report_unreach(struct ctx *c, const struct udp_flow *uf, int e)
{
	const struct flow_key *k = &uf->f.key;

	flow_dbg_rl(uf, "%s, telling the guest", strerror(e));
	local_unreach(c, k->family, IPPROTO_UDP, udp_key_addr(k, &k->gaddr),
		      k->gport, udp_key_addr(k, &k->raddr), k->rport, 0, e);
}

/* Mark a flow as used now: idle timeout and reclaim order */
static void udp_flow_used(struct udp_flow *uf)
{
	uf->last_ms = now_ms();
	flow_lru_touch((union flow *)uf);
}

/**
 * udp_flow_alloc() - a flow table entry for a key, no sockets yet
 * @c:		execution context
 * @k:		the flow's key
 *
 * Return: the flow, or NULL
 */
static struct udp_flow *udp_flow_alloc(struct ctx *c, const struct flow_key *k)
{
	struct udp_flow *uf;
	union flow *flow;

	if (flow_dgram_count() >= FLOW_DGRAM_MAX) {
		/* Room from the next round on, if a flow is idle */
		flow_reclaim_dgram(c, now_ms(), FLOW_RECLAIM_IDLE_MS);
		warn_rl("UDP: %u UDP and ICMP flows: datagram dropped",
			flow_dgram_count());
		return NULL;
	}
	flow = flow_alloc();
	if (!flow) {
		/* Room for the next one, at the end of this round */
		flow_reclaim_dgram(c, now_ms(), FLOW_RECLAIM_IDLE_MS);
		warn_rl("UDP: flow table full, datagram dropped");
		return NULL;
	}
	uf = &flow->udp;
	uf->f.type = FLOW_UDP;
	uf->f.key = *k;
	uf->sock = uf->lsock = -1;
	udp_flow_used(uf);
	return uf;
}

/**
 * udp_flow_new_outbound() - new guest-initiated flow with a connected socket
 * @c:		execution context
 * @k:		the flow's key
 *
 * Return: the flow, or NULL
 */
static struct udp_flow *udp_flow_new_outbound(struct ctx *c,
					      const struct flow_key *k)
{
	union sockaddr_inany sa;
	struct udp_flow *uf;
	union flow *flow;
	int s, e;

	if (fwd_nat_outbound(c, k->family, udp_key_addr(k, &k->raddr), k->rport,
			     &sa)) {
		debug_rl("UDP: datagram to unsupported destination dropped");
		return NULL;
	}

	uf = udp_flow_alloc(c, k);
	if (!uf)
		return NULL;
	flow = (union flow *)uf;

	s = fwd_socket(c, k->family, SOCK_DGRAM);
	if ((s == -EMFILE || s == -ENFILE) &&
	    !flow_reclaim_dgram(c, now_ms(), FLOW_RECLAIM_IDLE_MS))
		s = fwd_socket(c, k->family, SOCK_DGRAM);
	if (s < 0) {
		warn_rl("UDP: can't create socket: %s", strerror(-s));
		goto fail;
	}
	if (connect(s, &sa.sa, sockaddr_len(&sa))) {
		e = errno;
		/* EACCES: broadcast; a guest never hears back about those */
		if (e != EACCES && udp_errno_unreach(e))
			udp_report_unreach(c, uf, e);
		else
			debug_rl("UDP: connect: %s, datagram dropped",
				 strerror(e));
		goto fail;
	}
	if (flow_hash_insert(flow))
		goto fail; /* cannot happen: we looked it up */
	if (loop_add(c, s, EPOLLIN, flow_ref(flow, REF_UDP))) {
		debug_rl("UDP: can't add socket to epoll");
		goto fail;
	}
	uf->sock = s;
	flow_dbg_rl(flow, "opened, guest port %u to port %u", k->gport,
		    k->rport);
	return uf;

fail:
	if (s >= 0)
		close(s);
	flow_close(flow);
	return NULL;
}

static ssize_t udp_send_once(const struct udp_flow *uf, const void *data,
			     size_t len)
{
	if (uf->sock >= 0)
		return send(uf->sock, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	return sendto(uf->lsock, data, len, MSG_DONTWAIT | MSG_NOSIGNAL,
		      &uf->peer.sa, sockaddr_len(&uf->peer));
}

/**
 * udp_input() - translate a UDP datagram from the guest
 * @c:		execution context
 * @p:		parsed packet, IPv4 or IPv6 carrying UDP
 */
void udp_input(struct ctx *c, const struct pkt *p)
{
	struct pview payload;
	struct udp_flow *uf;
	struct flow_key k;
	union flow *flow;
	const void *data;
	ssize_t n;

	if (c->no_udp)
		return;
	if ((p->family == AF_INET && !c->ifi4_ok) ||
	    (p->family == AF_INET6 && !c->ifi6_ok))
		return;
	if (udp_flow_key(p, &k, &payload)) {
		debug_rl("UDP: fragmented or malformed datagram dropped");
		return;
	}
	if (udp_addrs_refused(c, p)) {
		debug_rl("UDP: datagram from or to a refused address dropped");
		return;
	}

	flow = flow_hash_lookup(&k);
	if (flow && flow->f.type == FLOW_UDP)
		uf = &flow->udp;
	else if (!flow)
		uf = udp_flow_new_outbound(c, &k);
	else
		uf = NULL; /* cannot happen: the type is in the key */
	if (!uf)
		return;
	udp_flow_used(uf);
	uf->f.qpair = tap_queue_in();

	data = pv_at(payload, 0, payload.len);
	n = udp_send_once(uf, data, payload.len);
	if (n < 0 && udp_errno_unreach(errno)) {
		/* Most likely an error about an earlier datagram: report it,
		 * then this one deserves its own try
		 */
		udp_report_unreach(c, uf, errno);
		n = udp_send_once(uf, data, payload.len);
	}
	if (n < 0)
		flow_dbg_rl(uf, "datagram dropped: %s", strerror(errno));
}

/**
 * udp_recv_batch() - read up to UDP_BATCH datagrams into the frames
 * @s:		socket to read from
 * @hdr:	room for the headers before the UDP header in each frame
 * @names:	note their sources into udp_peers
 *
 * The payload goes at @hdr + 8.
 *
 * Return: count, or -errno
 */
static int udp_recv_batch(int s, size_t hdr, bool names)
{
	int i, n;

	for (i = 0; i < UDP_BATCH; i++) {
		struct msghdr *mh = &udp_mmh[i].msg_hdr;

		udp_iov[i].iov_base = udp_frames[i] + hdr + UDP_HDR_LEN;
		udp_iov[i].iov_len = FRAME_MAX_LEN - hdr - UDP_HDR_LEN;
		memset(mh, 0, sizeof(*mh));
		mh->msg_iov = &udp_iov[i];
		mh->msg_iovlen = 1;
		if (names) {
			mh->msg_name = &udp_peers[i];
			mh->msg_namelen = sizeof(udp_peers[i]);
		}
	}
	n = recvmmsg(s, udp_mmh, UDP_BATCH, MSG_DONTWAIT, NULL);
	return n < 0 ? -errno : n;
}

/**
 * udp_frame_to_guest() - send a datagram of the last batch to the guest
 * @c:		execution context
 * @uf:		the flow
 * @i:		index of the datagram in the batch
 */
static void udp_frame_to_guest(struct ctx *c, const struct udp_flow *uf, int i)
{
	const struct flow_key *k = &uf->f.key;
	size_t plen = udp_mmh[i].msg_len;
	uint8_t *frame = udp_frames[i];
	int rc;

	udp_hdr_set(frame + tap_hdr_len(k->family), k->rport, k->gport, plen);
	tap_queue_out(uf->f.qpair);
	rc = tap_send_l4(c, k->family, udp_key_addr(k, &k->raddr),
			 udp_key_addr(k, &k->gaddr), IPPROTO_UDP, frame,
			 UDP_HDR_LEN + plen);
	if (rc)
		flow_dbg_rl(uf, "datagram to guest dropped: %s", strerror(-rc));
}

/**
 * udp_flow_recv() - datagrams on a flow's own socket: replies from its remote
 * @c:		execution context
 * @uf:		the flow
 */
static void udp_flow_recv(struct ctx *c, struct udp_flow *uf)
{
	size_t hdr = tap_hdr_len(uf->f.key.family);
	int round, i;

	for (round = 0; round < 4; round++) {
		int n = udp_recv_batch(uf->sock, hdr, false);

		if (n == -EAGAIN || n == -EWOULDBLOCK)
			return;
		if (n < 0) {
			if (udp_errno_unreach(-n))
				udp_report_unreach(c, uf, -n);
			else
				flow_dbg_rl(uf, "recv: %s", strerror(-n));
			continue;
		}

		udp_flow_used(uf);
		for (i = 0; i < n; i++) {
			if (udp_mmh[i].msg_hdr.msg_flags & MSG_TRUNC) {
				debug_rl("UDP: oversized datagram dropped");
				continue;
			}
			udp_frame_to_guest(c, uf, i);
		}
		if (n < UDP_BATCH)
			return;
	}
}

/**
 * udp_flow_inbound() - flow, new if needed, for a datagram to a forwarded port
 * @c:		execution context
 * @k:		the flow's key
 * @lsock:	the listening socket it arrived at
 * @peer:	its source
 *
 * Return: the flow, NULL if none can be had or the key is another protocol's
 */
static struct udp_flow *udp_flow_inbound(struct ctx *c,
					 const struct flow_key *k, int lsock,
					 const union sockaddr_inany *peer)
{
	union flow *flow = flow_hash_lookup(k);
	struct udp_flow *uf;

	if (flow) {
		if (flow->f.type != FLOW_UDP)
			return NULL;
		uf = &flow->udp;
		if (uf->sock < 0)
			uf->peer = *peer; /* the latest peer mapping here */
		return uf;
	}

	uf = udp_flow_alloc(c, k);
	if (!uf)
		return NULL;
	flow = (union flow *)uf;
	uf->lsock = lsock;
	uf->peer = *peer;
	if (flow_hash_insert(flow)) {
		flow_close(flow);
		return NULL;
	}
	flow_dbg_rl(flow, "opened, inbound to guest port %u", k->gport);
	return uf;
}

/**
 * udp_listen_recv() - datagrams on the listening socket of a forwarded port
 * @c:		execution context
 * @ref:	epoll reference of the listening socket
 */
static void udp_listen_recv(struct ctx *c, union epoll_ref ref)
{
	uint16_t port = FWD_REF_PORT(ref.idx);
	int lfamily = FWD_REF_FAMILY(ref.idx);
	size_t hdr = tap_hdr_len(lfamily);
	int round, i;

	for (round = 0; round < 4; round++) {
		int n = udp_recv_batch(ref.fd, hdr, true);

		if (n < 0)
			return;

		for (i = 0; i < n; i++) {
			const union sockaddr_inany *peer = &udp_peers[i];
			union inany_addr gsrc, gdst;
			struct udp_flow *uf;
			struct flow_key k;
			int family;

			if (udp_mmh[i].msg_hdr.msg_flags & MSG_TRUNC) {
				debug_rl("UDP: oversized datagram dropped");
				continue;
			}
			family = fwd_nat_inbound(c, peer, &gsrc);
			if (family != lfamily || c->no_udp ||
			    !fwd_guest_addr(c, family, &gdst)) {
				debug_rl("UDP: inbound datagram can't be "
					 "mapped, dropped");
				continue;
			}
			flow_key_set(&k, FLOW_UDP, family, &gdst,
				     fwd_port_target(&c->udp_fwd, port), &gsrc,
				     sockaddr_port(peer));
			uf = udp_flow_inbound(c, &k, ref.fd, peer);
			if (!uf)
				continue;
			udp_flow_used(uf);
			udp_frame_to_guest(c, uf, i);
		}
		if (n < UDP_BATCH)
			return;
	}
}

/**
 * udp_sock_handler() - datagrams or errors on a UDP socket
 * @c:		execution context
 * @ref:	REF_UDP (flow index) or REF_UDP_LISTEN (port and family)
 * @events:	epoll events
 */
void udp_sock_handler(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	struct udp_flow *uf;
	union flow *flow;

	if (ref.type == REF_UDP_LISTEN) {
		udp_listen_recv(c, ref);
		return;
	}

	flow = flow_from_ref(ref, FLOW_UDP);
	uf = flow ? &flow->udp : NULL;
	if (!uf || uf->sock < 0)
		return;

	if (events & EPOLLERR) {
		socklen_t sl = sizeof(int);
		int e = 0;

		/* Reading the error clears it, and EPOLLERR with it */
		if (!getsockopt(uf->sock, SOL_SOCKET, SO_ERROR, &e, &sl) && e) {
			if (udp_errno_unreach(e))
				udp_report_unreach(c, uf, e);
			else
				flow_dbg_rl(uf, "%s", strerror(e));
		}
	}
	if (events & EPOLLIN)
		udp_flow_recv(c, uf);
}

/**
 * udp_timer() - close flows idle for UDP_IDLE_MS
 * @c:		execution context
 * @now:	current time, milliseconds (CLOCK_MONOTONIC)
 */
void udp_timer(struct ctx *c, uint64_t now)
{
	static uint64_t last_scan;
	unsigned i;

	if (last_scan && now >= last_scan && now - last_scan < 1000)
		return; /* once a second is plenty for minutes */
	last_scan = now;

	for (i = 0; i < flow_span(); i++) {
		struct udp_flow *uf = udp_flow_at(i);

		if (uf && now > uf->last_ms && now - uf->last_ms >= UDP_IDLE_MS)
			udp_flow_close(c, uf);
	}
}
