// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_udp.c - UDP translation: flow keys from guest datagrams, the UDP
 * header we build, what is refused, and real round trips over loopback
 * sockets in the current namespace (guest-initiated through the gateway
 * mapping, inbound through a forwarded port, port unreachable turned into
 * an ICMP error), ending with the idle timeout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "loop.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "udp/udp.h"
#include "util.h"
#include "test/unit/tap_queue_stub.h"

/* Stand-ins for tap.c and loop.c: remember what would reach the guest */
static struct {
	int family;
	uint8_t src[16], dst[16];
	uint8_t proto;
	uint8_t msg[2048];
	size_t len;
	int count;
} sent;

static struct {
	int fd;
	uint32_t idx, gen;
	int type;
	int adds, dels;
} reg;

static void sent_record(int family, const void *src, const void *dst,
			uint8_t proto, const void *l4, size_t l4len)
{
	size_t alen = family == AF_INET ? 4 : 16;

	assert_true(l4len <= sizeof(sent.msg));
	sent.family = family;
	memcpy(sent.src, src, alen);
	memcpy(sent.dst, dst, alen);
	sent.proto = proto;
	memcpy(sent.msg, l4, l4len);
	sent.len = l4len;
	sent.count++;
}

size_t tap_hdr_len(int family)
{
	return ETH_HDR_LEN + (family == AF_INET ? 20 : 40);
}

int tap_send_l4(struct ctx *c, int family, const void *src, const void *dst,
		uint8_t proto, uint8_t *frame, size_t l4len)
{
	(void)c;
	sent_record(family, src, dst, proto, frame + tap_hdr_len(family),
		    l4len);
	return 0;
}

int tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		 uint8_t proto, const void *l4, size_t l4len)
{
	(void)c;
	sent_record(AF_INET, &src, &dst, proto, l4, l4len);
	return 0;
}

int tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		 const struct in6_addr *dst, uint8_t proto, const void *l4,
		 size_t l4len)
{
	(void)c;
	sent_record(AF_INET6, src, dst, proto, l4, l4len);
	return 0;
}

/* local/local.c, which sends the ICMP errors, also answers ARP: never here */
int tap_send_frame(struct ctx *c, const void *frame, size_t len)
{
	(void)c, (void)frame, (void)len;
	fail_msg("UDP sent a raw frame");
	return -EIO;
}

int loop_add(struct ctx *c, int fd, uint32_t events, union epoll_ref ref)
{
	(void)c;
	assert_int_equal(events, EPOLLIN);
	reg.fd = fd;
	reg.type = ref.type;
	reg.idx = ref.idx;
	reg.gen = ref.gen;
	reg.adds++;
	return 0;
}

void loop_del(struct ctx *c, int fd)
{
	(void)c;
	assert_int_equal(fd, reg.fd);
	reg.dels++;
}

#define GUEST4 "10.0.2.15"
#define GW4    "10.0.2.2"
#define GUEST6 "2001:db8::15"
#define GW6    "2001:db8::2"

static struct ctx ctx; /* big (port tables): not on the stack */

static int setup(void **state)
{
	(void)state;
	flow_init();
	memset(&sent, 0, sizeof(sent));
	memset(&reg, 0, sizeof(reg));
	reg.fd = -1;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ifi4_ok = ctx.ifi6_ok = true;
	ctx.epollfd = -1;
	inet_pton(AF_INET, GUEST4, &ctx.ip4.addr);
	ctx.ip4.prefix_len = 24;
	inet_pton(AF_INET, GW4, &ctx.ip4.gw);
	inet_pton(AF_INET, GW4, &ctx.ip4.map_host_loopback);
	inet_pton(AF_INET6, GUEST6, &ctx.ip6.addr);
	ctx.ip6.prefix_len = 64;
	inet_pton(AF_INET6, GW6, &ctx.ip6.gw);
	inet_pton(AF_INET6, GW6, &ctx.ip6.map_host_loopback);
	return 0;
}

/* Close whatever flow sockets a test left, so no test leaks into the next */
static int teardown(void **state)
{
	(void)state;
	udp_timer(&ctx, now_ms() + 100 * UDP_IDLE_MS);
	flow_defer_free();
	return 0;
}

/* Parse an IPv4 frame with a UDP datagram; @frag sets More Fragments;
 * @ulen_fix, if not 0, replaces the UDP length field
 */
static void frame4(struct pkt *p, uint8_t *f, const char *src, uint16_t sport,
		   const char *dst, uint16_t dport, const void *data,
		   size_t len, int frag, uint16_t ulen_fix)
{
	uint8_t *ip = f + ETH_HDR_LEN, *uh = ip + 20;
	size_t tot = 20 + UDP_HDR_LEN + len;
	uint16_t ulen = ulen_fix ? ulen_fix : (uint16_t)(UDP_HDR_LEN + len);

	memset(f, 0, ETH_HDR_LEN + 20 + UDP_HDR_LEN);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[6] = frag ? 0x20 : 0;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	assert_int_equal(inet_pton(AF_INET, src, ip + 12), 1);
	assert_int_equal(inet_pton(AF_INET, dst, ip + 16), 1);
	uh[0] = sport >> 8;
	uh[1] = sport & 0xff;
	uh[2] = dport >> 8;
	uh[3] = dport & 0xff;
	uh[4] = ulen >> 8;
	uh[5] = ulen & 0xff;
	memcpy(uh + UDP_HDR_LEN, data, len);
	assert_int_equal(pkt_parse(f, ETH_HDR_LEN + tot, p), 0);
}

static void frame6(struct pkt *p, uint8_t *f, const char *src, uint16_t sport,
		   const char *dst, uint16_t dport, const void *data,
		   size_t len)
{
	uint8_t *ip = f + ETH_HDR_LEN, *uh = ip + 40;
	size_t plen = UDP_HDR_LEN + len;

	memset(f, 0, ETH_HDR_LEN + 40 + UDP_HDR_LEN);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip[0] = 0x60;
	ip[4] = (uint8_t)(plen >> 8);
	ip[5] = (uint8_t)plen;
	ip[6] = IPPROTO_UDP;
	ip[7] = 64;
	assert_int_equal(inet_pton(AF_INET6, src, ip + 8), 1);
	assert_int_equal(inet_pton(AF_INET6, dst, ip + 24), 1);
	uh[0] = sport >> 8;
	uh[1] = sport & 0xff;
	uh[2] = dport >> 8;
	uh[3] = dport & 0xff;
	uh[4] = (uint8_t)(plen >> 8);
	uh[5] = (uint8_t)plen;
	memcpy(uh + UDP_HDR_LEN, data, len);
	assert_int_equal(pkt_parse(f, ETH_HDR_LEN + 40 + plen, p), 0);
}

/* A bound UDP socket on loopback; its port in @port. Return: fd, or -1 */
static int lo_sock(int family, uint16_t *port)
{
	struct in_addr lo4 = {htonl(INADDR_LOOPBACK)};
	union sockaddr_inany sa;
	socklen_t sl = sizeof(sa);
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	if (family == AF_INET)
		sockaddr_set(&sa, AF_INET, &lo4, 0);
	else
		sockaddr_set(&sa, AF_INET6, &in6addr_loopback, 0);
	if (bind(s, &sa.sa, sockaddr_len(&sa)) || getsockname(s, &sa.sa, &sl)) {
		close(s);
		return -1;
	}
	*port = sockaddr_port(&sa);
	return s;
}

static bool fd_closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static void wait_readable(int fd, short what)
{
	struct pollfd pfd = {.fd = fd, .events = what};

	assert_int_equal(poll(&pfd, 1, 2000), 1);
}

static void handle(int fd, uint32_t idx, int type, uint32_t events)
{
	union epoll_ref ref;

	ref.u64 = 0;
	ref.type = (uint32_t)type;
	ref.idx = idx;
	if (type == REF_UDP_LISTEN)
		ref.fd = fd;	/* listeners: the fd, see union epoll_ref */
	else
		ref.gen = reg.gen;
	udp_sock_handler(&ctx, ref, events);
	flow_defer_free();	/* the end of the loop round */
}

static void test_flow_key_is_guest_source_and_destination(void **state)
{
	struct flow_key k, want;
	struct in_addr g, r;
	struct pview pl;
	uint8_t f[128];
	struct pkt p;

	(void)state;
	frame4(&p, f, GUEST4, 40000, "192.0.2.7", 53, "q", 1, 0, 0);
	assert_int_equal(udp_flow_key(&p, &k, &pl), 0);
	inet_pton(AF_INET, GUEST4, &g);
	inet_pton(AF_INET, "192.0.2.7", &r);
	flow_key_set(&want, FLOW_UDP, AF_INET, &g, 40000, &r, 53);
	assert_memory_equal(&k, &want, sizeof(k));
	assert_int_equal(pl.len, 1);
	assert_int_equal(pl.p[0], 'q');
}

static void test_ipv6_flow_key_is_guest_source_and_destination(void **state)
{
	struct in6_addr g, r;
	struct flow_key k, want;
	struct pview pl;
	uint8_t f[128];
	struct pkt p;

	(void)state;
	frame6(&p, f, GUEST6, 1234, "2001:db8:2::7", 7000, "abc", 3);
	assert_int_equal(udp_flow_key(&p, &k, &pl), 0);
	inet_pton(AF_INET6, GUEST6, &g);
	inet_pton(AF_INET6, "2001:db8:2::7", &r);
	flow_key_set(&want, FLOW_UDP, AF_INET6, &g, 1234, &r, 7000);
	assert_memory_equal(&k, &want, sizeof(k));
	assert_int_equal(pl.len, 3);
}

static void test_zero_length_payload_is_a_valid_datagram(void **state)
{
	struct flow_key k;
	struct pview pl;
	uint8_t f[128];
	struct pkt p;

	(void)state;
	frame4(&p, f, GUEST4, 1, "192.0.2.7", 2, "", 0, 0, 0);
	assert_int_equal(udp_flow_key(&p, &k, &pl), 0);
	assert_int_equal(pl.len, 0);
}

static void test_fragments_and_bad_udp_lengths_are_refused(void **state)
{
	struct flow_key k;
	struct pview pl;
	uint8_t f[128];
	struct pkt p;

	(void)state;
	frame4(&p, f, GUEST4, 1, "192.0.2.7", 2, "data", 4, 1, 0);
	assert_int_equal(udp_flow_key(&p, &k, &pl), -EINVAL);
	frame4(&p, f, GUEST4, 1, "192.0.2.7", 2, "data", 4, 0, 7);
	assert_int_equal(udp_flow_key(&p, &k, &pl), -EINVAL);
	frame4(&p, f, GUEST4, 1, "192.0.2.7", 2, "data", 4, 0, 13);
	assert_int_equal(udp_flow_key(&p, &k, &pl), -EINVAL);
}

static void test_udp_header_is_written_in_network_order(void **state)
{
	uint8_t uh[8];

	(void)state;
	memset(uh, 0xaa, sizeof(uh));
	udp_hdr_set(uh, 0x1234, 53, 300);
	assert_int_equal(uh[0], 0x12);
	assert_int_equal(uh[1], 0x34);
	assert_int_equal(uh[2], 0);
	assert_int_equal(uh[3], 53);
	assert_int_equal(uh[4] << 8 | uh[5], 308);
	assert_int_equal(uh[6], 0);
	assert_int_equal(uh[7], 0);
}

/* Guest datagram that must be dropped without a flow or a socket */
static void expect_dropped(struct pkt *p)
{
	udp_input(&ctx, p);
	flow_defer_free();
	assert_int_equal(flow_count(), 0);
	assert_int_equal(reg.adds, 0);
	assert_int_equal(sent.count, 0);
}

static void test_broadcast_multicast_and_bad_sources_make_no_flow(void **state)
{
	uint8_t f[128];
	struct pkt p;

	(void)state;
	frame4(&p, f, GUEST4, 1, "255.255.255.255", 9, "x", 1, 0, 0);
	expect_dropped(&p);
	frame4(&p, f, GUEST4, 1, "10.0.2.255", 9, "x", 1, 0, 0);
	expect_dropped(&p);
	frame4(&p, f, GUEST4, 1, "224.0.0.251", 5353, "x", 1, 0, 0);
	expect_dropped(&p);
	frame4(&p, f, "127.0.0.1", 1, GW4, 9, "x", 1, 0, 0);
	expect_dropped(&p);
	frame6(&p, f, GUEST6, 1, "ff02::fb", 5353, "x", 1);
	expect_dropped(&p);
	frame6(&p, f, "::1", 1, GW6, 9, "x", 1);
	expect_dropped(&p);
}

static void test_nothing_translated_with_no_udp(void **state)
{
	uint8_t f[128];
	struct pkt p;

	(void)state;
	ctx.no_udp = true;
	frame4(&p, f, GUEST4, 1, GW4, 9, "x", 1, 0, 0);
	expect_dropped(&p);
}

static void test_full_flow_table_drops_new_datagram(void **state)
{
	uint8_t f[128];
	struct pkt p;
	unsigned i;

	(void)state;
	for (i = 0; i < FLOW_MAX; i++)
		assert_non_null(flow_alloc());
	frame4(&p, f, GUEST4, 1, GW4, 9, "x", 1, 0, 0);
	udp_input(&ctx, &p);
	assert_int_equal(reg.adds, 0);
	assert_int_equal(flow_count(), FLOW_MAX);
	flow_init();
}

/* Guest -> gateway -> host loopback server and back, for @family */
static void round_trip(int family)
{
	const char *guest = family == AF_INET ? GUEST4 : GUEST6;
	const char *gw = family == AF_INET ? GW4 : GW6;
	size_t alen = family == AF_INET ? 4 : 16;
	uint8_t f[256], want_src[16], want_dst[16], buf[64];
	union sockaddr_inany from;
	uint16_t port;
	socklen_t sl;
	struct pkt p;
	int srv, i;

	srv = lo_sock(family, &port);
	if (srv < 0) {
		skip();
		return;
	}
	inet_pton(family, gw, want_src);
	inet_pton(family, guest, want_dst);

	for (i = 0; i < 2; i++) {
		const char *msg = i ? "" : "ping";
		size_t mlen = strlen(msg);
		ssize_t n;

		if (family == AF_INET)
			frame4(&p, f, guest, 40000, gw, port, msg, mlen, 0, 0);
		else
			frame6(&p, f, guest, 40000, gw, port, msg, mlen);
		udp_input(&ctx, &p);

		/* One flow, one socket registered, reused */
		assert_int_equal(flow_count(), 1);
		assert_int_equal(reg.adds, 1);
		assert_int_equal(reg.type, REF_UDP);

		/* The server sees the datagram, even an empty one */
		wait_readable(srv, POLLIN);
		sl = sizeof(from);
		n = recvfrom(srv, buf, sizeof(buf), 0, &from.sa, &sl);
		assert_int_equal(n, (ssize_t)mlen);
		assert_memory_equal(buf, msg, mlen);

		assert_int_equal(sendto(srv, "pong!", 5, 0, &from.sa, sl), 5);
		wait_readable(reg.fd, POLLIN);
		sent.count = 0;
		handle(reg.fd, reg.idx, REF_UDP, EPOLLIN);

		/* Reply from the gateway's port, to the guest's port */
		assert_int_equal(sent.count, 1);
		assert_int_equal(sent.family, family);
		assert_int_equal(sent.proto, IPPROTO_UDP);
		assert_memory_equal(sent.src, want_src, alen);
		assert_memory_equal(sent.dst, want_dst, alen);
		assert_int_equal(sent.len, UDP_HDR_LEN + 5);
		assert_int_equal(sent.msg[0] << 8 | sent.msg[1], port);
		assert_int_equal(sent.msg[2] << 8 | sent.msg[3], 40000);
		assert_int_equal(sent.msg[4] << 8 | sent.msg[5],
				 UDP_HDR_LEN + 5);
		assert_memory_equal(sent.msg + UDP_HDR_LEN, "pong!", 5);
	}

	/* Not idle yet: kept; idle: socket out of epoll and closed */
	udp_timer(&ctx, now_ms() + 2000);
	flow_defer_free();
	assert_int_equal(flow_count(), 1);
	udp_timer(&ctx, now_ms() + UDP_IDLE_MS + 5000);
	flow_defer_free();
	assert_int_equal(flow_count(), 0);
	assert_int_equal(reg.dels, 1);
	assert_true(fd_closed(reg.fd));
	close(srv);
}

static void test_ipv4_round_trip_to_host_loopback_via_gateway(void **state)
{
	(void)state;
	round_trip(AF_INET);
}

static void test_ipv6_round_trip_to_host_loopback_via_gateway(void **state)
{
	(void)state;
	round_trip(AF_INET6);
}

static void test_port_unreachable_becomes_icmp_error_to_guest(void **state)
{
	uint8_t f[128], gw[4], guest[4];
	uint16_t port;
	struct pkt p;
	int s;

	(void)state;
	/* A port that was free a moment ago: nobody listens there now */
	s = lo_sock(AF_INET, &port);
	assert_true(s >= 0);
	close(s);

	frame4(&p, f, GUEST4, 40001, GW4, port, "x", 1, 0, 0);
	udp_input(&ctx, &p);
	assert_int_equal(reg.adds, 1);
	wait_readable(reg.fd, POLLERR);
	sent.count = 0;
	handle(reg.fd, reg.idx, REF_UDP, EPOLLERR | EPOLLIN);

	/* Port unreachable, from the address the guest sent to, quoting
	 * the guest's datagram
	 */
	inet_pton(AF_INET, GW4, gw);
	inet_pton(AF_INET, GUEST4, guest);
	assert_int_equal(sent.count, 1);
	assert_int_equal(sent.proto, IPPROTO_ICMP);
	assert_memory_equal(sent.src, gw, 4);
	assert_memory_equal(sent.dst, guest, 4);
	assert_int_equal(sent.msg[0], 3);
	assert_int_equal(sent.msg[1], 3);
	assert_int_equal(sent.msg[8 + 9], IPPROTO_UDP);
	assert_int_equal(sent.msg[28] << 8 | sent.msg[29], 40001);
	assert_int_equal(sent.msg[30] << 8 | sent.msg[31], port);

	/* The error is consumed: no more events, the flow stays usable */
	{
		struct pollfd pfd = {.fd = reg.fd, .events = POLLIN};

		assert_int_equal(poll(&pfd, 1, 0), 0);
	}
	assert_int_equal(flow_count(), 1);
}

static void test_forwarded_port_datagram_reaches_guest_and_reply_leaves_from_it(
	void **state)
{
	uint8_t f[256], gw[4], guest[4], buf[64];
	union sockaddr_inany from;
	uint16_t lport, pport;
	int lsock, peer;
	socklen_t sl;
	struct pkt p;
	ssize_t n;

	(void)state;
	lsock = lo_sock(AF_INET, &lport);
	peer = lo_sock(AF_INET, &pport);
	assert_true(lsock >= 0 && peer >= 0);
	ctx.udp_fwd.delta[lport] = 1000; /* guest port: lport + 1000 */

	sl = sizeof(from);
	assert_int_equal(getsockname(lsock, &from.sa, &sl), 0);
	assert_int_equal(sendto(peer, "hello", 5, 0, &from.sa, sl), 5);
	wait_readable(lsock, POLLIN);
	handle(lsock, FWD_REF(lport, AF_INET), REF_UDP_LISTEN, EPOLLIN);

	/* Loopback peer appears as the gateway; nothing registered */
	inet_pton(AF_INET, GW4, gw);
	inet_pton(AF_INET, GUEST4, guest);
	assert_int_equal(sent.count, 1);
	assert_int_equal(sent.proto, IPPROTO_UDP);
	assert_memory_equal(sent.src, gw, 4);
	assert_memory_equal(sent.dst, guest, 4);
	assert_int_equal(sent.msg[0] << 8 | sent.msg[1], pport);
	assert_int_equal(sent.msg[2] << 8 | sent.msg[3],
			 (uint16_t)(lport + 1000));
	assert_memory_equal(sent.msg + UDP_HDR_LEN, "hello", 5);
	assert_int_equal(flow_count(), 1);
	assert_int_equal(reg.adds, 0);

	/* The guest's reply goes back from the forwarded port */
	frame4(&p, f, GUEST4, (uint16_t)(lport + 1000), GW4, pport, "world", 5,
	       0, 0);
	udp_input(&ctx, &p);
	assert_int_equal(flow_count(), 1);
	wait_readable(peer, POLLIN);
	sl = sizeof(from);
	n = recvfrom(peer, buf, sizeof(buf), 0, &from.sa, &sl);
	assert_int_equal(n, 5);
	assert_memory_equal(buf, "world", 5);
	assert_int_equal(sockaddr_port(&from), lport);

	/* Idle: forgotten, the listening socket is not ours to close */
	udp_timer(&ctx, now_ms() + UDP_IDLE_MS + 5000);
	flow_defer_free();
	assert_int_equal(flow_count(), 0);
	assert_int_equal(reg.dels, 0);
	assert_false(fd_closed(lsock));
	close(lsock);
	close(peer);
}

static void test_handler_ignores_stale_reference(void **state)
{
	(void)state;
	handle(7, 123, REF_UDP, EPOLLIN | EPOLLERR);
	handle(7, FLOW_MAX + 1, REF_UDP, EPOLLIN);
	assert_int_equal(sent.count, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_flow_key_is_guest_source_and_destination),
		T(test_ipv6_flow_key_is_guest_source_and_destination),
		T(test_zero_length_payload_is_a_valid_datagram),
		T(test_fragments_and_bad_udp_lengths_are_refused),
		T(test_udp_header_is_written_in_network_order),
		T(test_broadcast_multicast_and_bad_sources_make_no_flow),
		T(test_nothing_translated_with_no_udp),
		T(test_full_flow_table_drops_new_datagram),
		T(test_ipv4_round_trip_to_host_loopback_via_gateway),
		T(test_ipv6_round_trip_to_host_loopback_via_gateway),
		T(test_port_unreachable_becomes_icmp_error_to_guest),
		T(test_forwarded_port_datagram_reaches_guest_and_reply_leaves_from_it),
		T(test_handler_ignores_stale_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
