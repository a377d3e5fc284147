// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_icmp.c - ICMP echo translation: what the guest may send, how replies
 * get the guest's identifier back, and (where ping sockets are permitted)
 * a round trip through a real ping socket to one of the host's addresses,
 * ending with the idle timeout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "flow.h"
#include "loop.h"
#include "icmp/icmp.h"
#include "net/packet.h"
#include "tap/tap.h"
#include "util.h"
#include "test/unit/tap_queue_stub.h"

/* Stand-ins for tap.c and loop.c */
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

int tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		 uint8_t proto, const void *l4, size_t l4len)
{
	(void)c;
	assert_true(l4len <= sizeof(sent.msg));
	sent.family = AF_INET;
	memcpy(sent.src, &src, 4);
	memcpy(sent.dst, &dst, 4);
	sent.proto = proto;
	memcpy(sent.msg, l4, l4len);
	sent.len = l4len;
	sent.count++;
	return 0;
}

int tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		 const struct in6_addr *dst, uint8_t proto, const void *l4,
		 size_t l4len)
{
	(void)c;
	assert_true(l4len <= sizeof(sent.msg));
	sent.family = AF_INET6;
	memcpy(sent.src, src, 16);
	memcpy(sent.dst, dst, 16);
	sent.proto = proto;
	memcpy(sent.msg, l4, l4len);
	sent.len = l4len;
	sent.count++;
	return 0;
}

int loop_add(struct ctx *c, int fd, uint32_t events, union epoll_ref ref)
{
	(void)c;
	(void)events;
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

static const char payload[] = "0123456789abcdef";

static int setup(void **state)
{
	(void)state;
	flow_init();
	memset(&sent, 0, sizeof(sent));
	memset(&reg, 0, sizeof(reg));
	reg.fd = -1;
	return 0;
}

static void ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->ifi4_ok = c->ifi6_ok = true;
	c->epollfd = -1;
	inet_pton(AF_INET, "10.0.2.15", &c->ip4.addr);
	inet_pton(AF_INET6, "2001:db8::15", &c->ip6.addr);
}

/* ICMP message: type, code, identifier, sequence, payload */
static size_t icmp_msg(uint8_t *m, uint8_t type, uint8_t code, uint16_t id,
		       uint16_t seq)
{
	m[0] = type;
	m[1] = code;
	m[2] = m[3] = 0x5a; /* whatever: the kernel recomputes */
	m[4] = id >> 8;
	m[5] = id & 0xff;
	m[6] = seq >> 8;
	m[7] = seq & 0xff;
	memcpy(m + 8, payload, sizeof(payload));
	return 8 + sizeof(payload);
}

/* Parse an IPv4 frame carrying @m; @frag sets the More Fragments bit */
static void frame4(struct pkt *p, uint8_t *f, const char *src, const char *dst,
		   const uint8_t *m, size_t mlen, int frag)
{
	uint8_t *ip = f + ETH_HDR_LEN;
	size_t tot = 20 + mlen;

	memset(f, 0, ETH_HDR_LEN + 20);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[6] = frag ? 0x20 : 0;
	ip[8] = 64;
	ip[9] = IPPROTO_ICMP;
	inet_pton(AF_INET, src, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	memcpy(ip + 20, m, mlen);
	assert_int_equal(pkt_parse(f, ETH_HDR_LEN + tot, p), 0);
}

static void frame6(struct pkt *p, uint8_t *f, const char *src, const char *dst,
		   const uint8_t *m, size_t mlen)
{
	uint8_t *ip = f + ETH_HDR_LEN;

	memset(f, 0, ETH_HDR_LEN + 40);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip[0] = 0x60;
	ip[4] = (uint8_t)(mlen >> 8);
	ip[5] = (uint8_t)mlen;
	ip[6] = IPPROTO_ICMPV6;
	ip[7] = 64;
	inet_pton(AF_INET6, src, ip + 8);
	inet_pton(AF_INET6, dst, ip + 24);
	memcpy(ip + 40, m, mlen);
	assert_int_equal(pkt_parse(f, ETH_HDR_LEN + 40 + mlen, p), 0);
}

static void test_ipv4_echo_request_parsed_with_identifier(void **state)
{
	uint8_t m[64], f[128];
	uint16_t id = 0;
	struct pkt p;

	(void)state;
	frame4(&p, f, "10.0.2.15", "192.0.2.1", m, icmp_msg(m, 8, 0, 0xbeef, 1),
	       0);
	assert_int_equal(icmp_echo_parse(&p, &id), 0);
	assert_int_equal(id, 0xbeef);
}

static void test_icmpv6_echo_request_parsed_with_identifier(void **state)
{
	uint8_t m[64], f[128];
	uint16_t id = 0;
	struct pkt p;

	(void)state;
	frame6(&p, f, "2001:db8::15", "2001:db8::1", m,
	       icmp_msg(m, 128, 0, 0x0102, 1));
	assert_int_equal(icmp_echo_parse(&p, &id), 0);
	assert_int_equal(id, 0x0102);
}

static void test_messages_other_than_echo_request_refused(void **state)
{
	static const uint8_t v4[] = {0, 3, 5, 11, 13, 128};
	static const uint8_t v6[] = {1, 8, 129, 133, 135};
	uint8_t m[64], f[128];
	struct pkt p;
	uint16_t id;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(v4); i++) {
		frame4(&p, f, "10.0.2.15", "192.0.2.1", m,
		       icmp_msg(m, v4[i], 0, 1, 1), 0);
		assert_int_equal(icmp_echo_parse(&p, &id), -ENOTSUP);
	}
	for (i = 0; i < ARRAY_SIZE(v6); i++) {
		frame6(&p, f, "2001:db8::15", "2001:db8::1", m,
		       icmp_msg(m, v6[i], 0, 1, 1));
		assert_int_equal(icmp_echo_parse(&p, &id), -ENOTSUP);
	}
}

static void test_truncated_coded_or_fragmented_request_invalid(void **state)
{
	uint8_t m[64], f[128];
	struct pkt p;
	uint16_t id;
	size_t l;

	(void)state;
	for (l = 0; l < 8; l++) {
		icmp_msg(m, 8, 0, 1, 1);
		frame4(&p, f, "10.0.2.15", "192.0.2.1", m, l, 0);
		assert_int_equal(icmp_echo_parse(&p, &id), -EINVAL);
	}
	frame4(&p, f, "10.0.2.15", "192.0.2.1", m, icmp_msg(m, 8, 1, 1, 1), 0);
	assert_int_equal(icmp_echo_parse(&p, &id), -EINVAL);
	frame4(&p, f, "10.0.2.15", "192.0.2.1", m, icmp_msg(m, 8, 0, 1, 1), 1);
	assert_int_equal(icmp_echo_parse(&p, &id), -EINVAL);
}

static void test_reply_gets_guest_identifier_and_zero_checksum(void **state)
{
	uint8_t m[64];
	size_t len;

	(void)state;
	len = icmp_msg(m, 0, 0, 0x4711, 7);
	assert_int_equal(icmp_reply_rewrite(AF_INET, m, len, 0xbeef), 0);
	assert_int_equal(m[4] << 8 | m[5], 0xbeef);
	assert_int_equal(m[2] | m[3], 0);
	assert_int_equal(m[6] << 8 | m[7], 7);
	assert_memory_equal(m + 8, payload, sizeof(payload));

	len = icmp_msg(m, 129, 0, 0x4711, 7);
	assert_int_equal(icmp_reply_rewrite(AF_INET6, m, len, 0x0102), 0);
	assert_int_equal(m[4] << 8 | m[5], 0x0102);
	assert_int_equal(m[2] | m[3], 0);
}

static void test_non_reply_or_short_socket_data_refused(void **state)
{
	uint8_t m[64];

	(void)state;
	assert_int_equal(
		icmp_reply_rewrite(AF_INET, m, icmp_msg(m, 8, 0, 1, 1), 2),
		-EINVAL);
	assert_int_equal(
		icmp_reply_rewrite(AF_INET6, m, icmp_msg(m, 0, 0, 1, 1), 2),
		-EINVAL);
	icmp_msg(m, 0, 0, 1, 1);
	assert_int_equal(icmp_reply_rewrite(AF_INET, m, 7, 2), -EINVAL);
}

static void test_no_flow_for_loopback_broadcast_or_non_echo(void **state)
{
	uint8_t m[64], f[128];
	struct ctx c;
	struct pkt p;

	(void)state;
	ctx_init(&c);
	frame4(&p, f, "10.0.2.15", "127.0.0.1", m, icmp_msg(m, 8, 0, 1, 1), 0);
	icmp_input(&c, &p);
	frame4(&p, f, "10.0.2.15", "0.0.0.0", m, icmp_msg(m, 8, 0, 1, 1), 0);
	icmp_input(&c, &p);
	frame4(&p, f, "10.0.2.15", "255.255.255.255", m,
	       icmp_msg(m, 8, 0, 1, 1), 0);
	icmp_input(&c, &p);
	frame6(&p, f, "2001:db8::15", "::1", m, icmp_msg(m, 128, 0, 1, 1));
	icmp_input(&c, &p);
	frame4(&p, f, "10.0.2.15", "192.0.2.1", m, icmp_msg(m, 13, 0, 1, 1), 0);
	icmp_input(&c, &p);
	assert_int_equal(flow_count(), 0);
	assert_int_equal(reg.adds, 0);
}

static void test_no_flow_when_icmp_disabled(void **state)
{
	uint8_t m[64], f[128];
	struct ctx c;
	struct pkt p;

	(void)state;
	ctx_init(&c);
	c.no_icmp = true;
	frame4(&p, f, "10.0.2.15", "192.0.2.1", m, icmp_msg(m, 8, 0, 1, 1), 0);
	icmp_input(&c, &p);
	assert_int_equal(flow_count(), 0);
}

static void test_handler_ignores_stale_reference(void **state)
{
	union epoll_ref ref = {.type = REF_ICMP, .idx = 5, .fd = 1234};
	struct ctx c;

	(void)state;
	ctx_init(&c);
	icmp_sock_handler(&c, ref, 1);
	ref.idx = FLOW_MAX + 1;
	icmp_sock_handler(&c, ref, 1);
	assert_int_equal(sent.count, 0);
}

/* A local, non-loopback address of @family to ping, as text */
static int local_addr(int family, char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
		    !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (family == AF_INET) {
			struct sockaddr_in *s = (void *)i->ifa_addr;

			inet_ntop(AF_INET, &s->sin_addr, buf, len);
			found = 1;
		} else {
			struct sockaddr_in6 *s = (void *)i->ifa_addr;

			if (IN6_IS_ADDR_LINKLOCAL(&s->sin6_addr))
				continue;
			inet_ntop(AF_INET6, &s->sin6_addr, buf, len);
			found = 1;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* Ping sockets permitted for @family? */
static int ping_permitted(int family)
{
	int s = socket(family, SOCK_DGRAM,
		       family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);

	if (s < 0)
		return 0;
	close(s);
	return 1;
}

static void round_trip(int family)
{
	static uint64_t timer_base;
	const char *guest = family == AF_INET ? "10.0.2.15" : "2001:db8::15";
	uint8_t m[64], f[128], want_src[16], want_dst[16];
	union epoll_ref ref;
	char dst[INET6_ADDRSTRLEN];
	struct pollfd pfd;
	struct ctx c;
	struct pkt p;
	int seq;

	ctx_init(&c);
	if (!local_addr(family, dst, sizeof(dst))) {
		skip();
		return;
	}
	if (!ping_permitted(family)) {
		/* Then a request must leave nothing behind */
		if (family == AF_INET)
			frame4(&p, f, guest, dst, m, icmp_msg(m, 8, 0, 1, 1),
			       0);
		else
			frame6(&p, f, guest, dst, m, icmp_msg(m, 128, 0, 1, 1));
		icmp_input(&c, &p);
		flow_defer_free();	/* the end of the loop round */
		assert_int_equal(flow_count(), 0);
		assert_int_equal(reg.adds, 0);
		skip();
		return;
	}
	inet_pton(family, dst, want_src);
	inet_pton(family, guest, want_dst);

	for (seq = 1; seq <= 2; seq++) {
		if (family == AF_INET)
			frame4(&p, f, guest, dst, m,
			       icmp_msg(m, 8, 0, 0xbeef, seq), 0);
		else
			frame6(&p, f, guest, dst, m,
			       icmp_msg(m, 128, 0, 0xbeef, seq));
		icmp_input(&c, &p);

		/* One flow, registered once, reused for the second request */
		assert_int_equal(flow_count(), 1);
		assert_int_equal(reg.adds, 1);
		assert_int_equal(reg.type, REF_ICMP);

		pfd.fd = reg.fd;
		pfd.events = POLLIN;
		assert_int_equal(poll(&pfd, 1, 2000), 1);
		ref.type = REF_ICMP;
		ref.idx = reg.idx;
		ref.gen = reg.gen;
		sent.count = 0;
		icmp_sock_handler(&c, ref, POLLIN);

		assert_int_equal(sent.count, 1);
		assert_int_equal(sent.family, family);
		assert_memory_equal(sent.src, want_src,
				    family == AF_INET ? 4 : 16);
		assert_memory_equal(sent.dst, want_dst,
				    family == AF_INET ? 4 : 16);
		assert_int_equal(sent.msg[0], family == AF_INET ? 0 : 129);
		assert_int_equal(sent.msg[4] << 8 | sent.msg[5], 0xbeef);
		assert_int_equal(sent.msg[6] << 8 | sent.msg[7], seq);
		assert_int_equal(sent.len, 8 + sizeof(payload));
		assert_memory_equal(sent.msg + 8, payload, sizeof(payload));
	}

	/* Not idle yet: kept; idle past the timeout: closed */
	if (!timer_base)
		timer_base = now_ms();
	timer_base += 2 * ICMP_IDLE_MS;
	icmp_timer(&c, now_ms() + 2000);
	assert_int_equal(flow_count(), 1);
	icmp_timer(&c, timer_base + ICMP_IDLE_MS);
	/* Closed now, freed at the end of the loop round */
	assert_int_equal(flow_count(), 1);
	assert_null(flow_live(reg.idx, FLOW_ICMP));
	flow_defer_free();
	assert_int_equal(flow_count(), 0);
	assert_int_equal(reg.dels, 1);
}

static void test_ipv4_echo_round_trip_through_ping_socket(void **state)
{
	(void)state;
	round_trip(AF_INET);
}

static void test_icmpv6_echo_round_trip_through_ping_socket(void **state)
{
	(void)state;
	round_trip(AF_INET6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(
			test_ipv4_echo_request_parsed_with_identifier, setup),
		cmocka_unit_test_setup(
			test_icmpv6_echo_request_parsed_with_identifier, setup),
		cmocka_unit_test_setup(
			test_messages_other_than_echo_request_refused, setup),
		cmocka_unit_test_setup(
			test_truncated_coded_or_fragmented_request_invalid,
			setup),
		cmocka_unit_test_setup(
			test_reply_gets_guest_identifier_and_zero_checksum,
			setup),
		cmocka_unit_test_setup(
			test_non_reply_or_short_socket_data_refused, setup),
		cmocka_unit_test_setup(
			test_no_flow_for_loopback_broadcast_or_non_echo, setup),
		cmocka_unit_test_setup(test_no_flow_when_icmp_disabled, setup),
		cmocka_unit_test_setup(test_handler_ignores_stale_reference,
				       setup),
		cmocka_unit_test_setup(
			test_ipv4_echo_round_trip_through_ping_socket, setup),
		cmocka_unit_test_setup(
			test_icmpv6_echo_round_trip_through_ping_socket, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
