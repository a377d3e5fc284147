// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_arp.c - ARP responder: whom we answer, what the reply says, and what
 * malformed requests we refuse.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "arp_check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ctx.h"
#include "net/arp.h"
#include "net/packet.h"
#include "local/local.h"
#include "tap/tap.h"

static const uint8_t our_mac[6] = {0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55};
static const uint8_t guest_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

/* tap_send_frame() stand-in: remembers the last frame */
static uint8_t sent[256];
static size_t sent_len;
static int sent_count;

int tap_send_frame(struct ctx *c, const void *frame, size_t len)
{
	(void)c;
	assert_true(len <= sizeof(sent));
	memcpy(sent, frame, len);
	sent_len = len;
	sent_count++;
	return 0;
}

/* The rest of local/local.c sends IP packets: never for ARP */
int tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		 uint8_t proto, const void *l4, size_t l4len)
{
	(void)c, (void)src, (void)dst, (void)proto, (void)l4, (void)l4len;
	fail_msg("ARP sent an IPv4 packet");
	return -EIO;
}

int tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		 const struct in6_addr *dst, uint8_t proto, const void *l4,
		 size_t l4len)
{
	(void)c, (void)src, (void)dst, (void)proto, (void)l4, (void)l4len;
	fail_msg("ARP sent an IPv6 packet");
	return -EIO;
}

static void ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->our_mac, our_mac, 6);
	inet_pton(AF_INET, "10.0.2.15", &c->ip4.addr);
	inet_pton(AF_INET, "10.0.2.2", &c->ip4.gw);
	c->ip4.prefix_len = 24;
	c->ifi4_ok = true;
}

/* Ethernet frame with an ARP packet: returns total length */
static size_t arp_frame(uint8_t *f, uint16_t hrd, uint16_t pro, uint8_t hln,
			uint8_t pln, uint16_t op, const char *spa,
			const char *tpa)
{
	uint8_t *a = f + ETH_HDR_LEN;

	memset(f, 0xff, 6);
	memcpy(f + 6, guest_mac, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	a[0] = hrd >> 8;
	a[1] = hrd & 0xff;
	a[2] = pro >> 8;
	a[3] = pro & 0xff;
	a[4] = hln;
	a[5] = pln;
	a[6] = op >> 8;
	a[7] = op & 0xff;
	memcpy(a + 8, guest_mac, 6);
	inet_pton(AF_INET, spa, a + 14);
	memset(a + 18, 0, 6);
	inet_pton(AF_INET, tpa, a + 24);
	return ETH_HDR_LEN + 28;
}

static int build(const struct ctx *c, const uint8_t *f, size_t len,
		 uint8_t *out)
{
	return arp_build_reply(c, pv_make(f + ETH_HDR_LEN, len - ETH_HDR_LEN),
			       out, ARP_FRAME_LEN);
}

/* reply_to() - what arp_build_reply() returns for the ARP packet with these
 * fields (as arp_frame() takes them), with ctx_init()'s context
 */
static int reply_to(uint16_t hrd, uint16_t pro, uint8_t hln, uint8_t pln,
		    uint16_t op, const char *spa, const char *tpa)
{
	uint8_t f[64], r[ARP_FRAME_LEN];
	struct ctx c;
	size_t len;

	ctx_init(&c);
	len = arp_frame(f, hrd, pro, hln, pln, op, spa, tpa);
	return build(&c, f, len, r);
}

static void test_request_for_gateway_gets_reply_with_our_mac(void **state)
{
	uint8_t f[64], r[ARP_FRAME_LEN], ip[4];
	struct ctx c;
	size_t len;

	(void)state;
	ctx_init(&c);
	len = arp_frame(f, 1, 0x0800, 6, 4, 1, "10.0.2.15", "10.0.2.2");
	assert_int_equal(build(&c, f, len, r), ARP_FRAME_LEN);

	/* Ethernet: to the requester, from us, ARP */
	assert_memory_equal(r, guest_mac, 6);
	assert_memory_equal(r + 6, our_mac, 6);
	assert_int_equal(r[12], 0x08);
	assert_int_equal(r[13], 0x06);

	/* ARP: Ethernet/IPv4 reply, we hold 10.0.2.2, they hold .15 */
	check_arp_head(r + 14, 2);
	assert_memory_equal(r + 22, our_mac, 6);
	inet_pton(AF_INET, "10.0.2.2", ip);
	assert_memory_equal(r + 28, ip, 4);
	assert_memory_equal(r + 32, guest_mac, 6);
	inet_pton(AF_INET, "10.0.2.15", ip);
	assert_memory_equal(r + 38, ip, 4);
}

static void test_request_for_any_remote_address_gets_reply(void **state)
{
	(void)state;
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 1, "10.0.2.15",
				  "192.0.2.77"), ARP_FRAME_LEN);
}

static void test_request_for_guest_own_address_gets_no_reply(void **state)
{
	(void)state;
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 1, "10.0.2.99",
				  "10.0.2.15"), -ENOENT);
}

static void test_gratuitous_arp_gets_no_reply(void **state)
{
	(void)state;
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 1, "10.0.2.77",
				  "10.0.2.77"), -ENOENT);
}

static void test_probe_from_unspecified_sender_gets_no_reply(void **state)
{
	(void)state;
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 1, "0.0.0.0",
				  "10.0.2.77"), -ENOENT);
}

static void test_broadcast_or_multicast_target_gets_no_reply(void **state)
{
	(void)state;
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 1, "10.0.2.15",
				  "255.255.255.255"), -ENOENT);
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 1, "10.0.2.15",
				  "224.0.0.1"), -ENOENT);
}

static void test_truncated_request_is_rejected(void **state)
{
	uint8_t f[64], r[ARP_FRAME_LEN];
	struct ctx c;
	size_t len, cut;

	(void)state;
	ctx_init(&c);
	len = arp_frame(f, 1, 0x0800, 6, 4, 1, "10.0.2.15", "10.0.2.2");
	for (cut = ETH_HDR_LEN; cut < len; cut++)
		assert_int_equal(build(&c, f, cut, r), -EINVAL);
}

static void test_wrong_hardware_or_protocol_format_is_rejected(void **state)
{
	(void)state;
	assert_int_equal(reply_to(6, 0x0800, 6, 4, 1, "10.0.2.15",
				  "10.0.2.2"), -EINVAL);
	assert_int_equal(reply_to(1, 0x86dd, 6, 4, 1, "10.0.2.15",
				  "10.0.2.2"), -EINVAL);
	assert_int_equal(reply_to(1, 0x0800, 8, 4, 1, "10.0.2.15",
				  "10.0.2.2"), -EINVAL);
	assert_int_equal(reply_to(1, 0x0800, 6, 16, 1, "10.0.2.15",
				  "10.0.2.2"), -EINVAL);
}

static void test_arp_reply_from_guest_is_ignored(void **state)
{
	(void)state;
	assert_int_equal(reply_to(1, 0x0800, 6, 4, 2, "10.0.2.15",
				  "10.0.2.2"), -EINVAL);
}

static void test_small_output_buffer_is_refused(void **state)
{
	uint8_t f[64], r[ARP_FRAME_LEN];
	struct ctx c;
	size_t len;

	(void)state;
	ctx_init(&c);
	len = arp_frame(f, 1, 0x0800, 6, 4, 1, "10.0.2.15", "10.0.2.2");
	assert_int_equal(
		arp_build_reply(&c, pv_make(f + ETH_HDR_LEN, len - ETH_HDR_LEN),
				r, ARP_FRAME_LEN - 1),
		-ENOSPC);
}

static void test_input_sends_reply_frame_to_guest(void **state)
{
	struct ctx c;
	uint8_t f[64];
	struct pkt p;
	size_t len;

	(void)state;
	ctx_init(&c);
	len = arp_frame(f, 1, 0x0800, 6, 4, 1, "10.0.2.15", "10.0.2.2");
	/* Ethernet padding after the ARP packet is harmless */
	memset(f + len, 0, 60 - len);
	assert_int_equal(pkt_parse(f, 60, &p), 0);

	sent_count = 0;
	local_arp_input(&c, &p);
	assert_int_equal(sent_count, 1);
	assert_int_equal(sent_len, ARP_FRAME_LEN);
	assert_memory_equal(sent, guest_mac, 6);
	assert_int_equal(sent[21], 2);
}

static void test_input_stays_silent_without_ipv4(void **state)
{
	struct ctx c;
	uint8_t f[64];
	struct pkt p;
	size_t len;

	(void)state;
	ctx_init(&c);
	c.ifi4_ok = false;
	len = arp_frame(f, 1, 0x0800, 6, 4, 1, "10.0.2.15", "10.0.2.2");
	assert_int_equal(pkt_parse(f, len, &p), 0);

	sent_count = 0;
	local_arp_input(&c, &p);
	assert_int_equal(sent_count, 0);
}

static void test_input_ignores_truncated_packet(void **state)
{
	struct ctx c;
	uint8_t f[64];
	struct pkt p;

	(void)state;
	ctx_init(&c);
	arp_frame(f, 1, 0x0800, 6, 4, 1, "10.0.2.15", "10.0.2.2");
	assert_int_equal(pkt_parse(f, ETH_HDR_LEN + 20, &p), 0);

	sent_count = 0;
	local_arp_input(&c, &p);
	assert_int_equal(sent_count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_request_for_gateway_gets_reply_with_our_mac),
		cmocka_unit_test(
			test_request_for_any_remote_address_gets_reply),
		cmocka_unit_test(
			test_request_for_guest_own_address_gets_no_reply),
		cmocka_unit_test(test_gratuitous_arp_gets_no_reply),
		cmocka_unit_test(
			test_probe_from_unspecified_sender_gets_no_reply),
		cmocka_unit_test(
			test_broadcast_or_multicast_target_gets_no_reply),
		cmocka_unit_test(test_truncated_request_is_rejected),
		cmocka_unit_test(
			test_wrong_hardware_or_protocol_format_is_rejected),
		cmocka_unit_test(test_arp_reply_from_guest_is_ignored),
		cmocka_unit_test(test_small_output_buffer_is_refused),
		cmocka_unit_test(test_input_sends_reply_frame_to_guest),
		cmocka_unit_test(test_input_stays_silent_without_ipv4),
		cmocka_unit_test(test_input_ignores_truncated_packet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
