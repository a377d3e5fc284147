// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_announce_frames.c - the frames a migration target sends on the
 * host's interface (net/announce_frames.c): what each one says, the
 * padding, the NA's checksum, and short buffers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "arp_check.h"

#include <arpa/inet.h>
#include <string.h>

#include "net/announce_frames.h"
#include "net/checksum.h"

static const uint8_t mac[6] = {0x0a, 0x58, 0xc0, 0x00, 0x02, 0x02};
static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void test_rarp_is_a_padded_reverse_request_for_the_mac(void **state)
{
	static const uint8_t zero[ANNOUNCE_ETH_MIN];
	uint8_t f[ANNOUNCE_ETH_MIN + 8];

	(void)state;
	memset(f, 0xaa, sizeof(f));
	assert_int_equal(announce_frame_rarp(f, sizeof(f), mac),
			 ANNOUNCE_ETH_MIN);
	assert_memory_equal(f, bcast, 6);
	assert_memory_equal(f + 6, mac, 6);
	assert_int_equal(f[12] << 8 | f[13], ETHTYPE_RARP);
	check_arp_head(f + 14, 3);
	assert_memory_equal(f + 22, mac, 6);		/* sender MAC */
	assert_memory_equal(f + 28, zero, 4);		/* sender IP */
	assert_memory_equal(f + 32, mac, 6);		/* target MAC */
	assert_memory_equal(f + 38, zero, 4);		/* target IP */
	assert_memory_equal(f + 42, zero, ANNOUNCE_ETH_MIN - 42);
	assert_int_equal(f[ANNOUNCE_ETH_MIN], 0xaa);	/* nothing past it */
}

static void test_garp_is_a_request_from_and_for_the_address(void **state)
{
	static const uint8_t zero[ANNOUNCE_ETH_MIN];
	uint8_t f[ANNOUNCE_ETH_MIN];
	struct in_addr a;

	(void)state;
	inet_pton(AF_INET, "192.0.2.2", &a);
	assert_int_equal(announce_frame_garp(f, sizeof(f), mac, a),
			 ANNOUNCE_ETH_MIN);
	assert_memory_equal(f, bcast, 6);
	assert_memory_equal(f + 6, mac, 6);
	assert_int_equal(f[12] << 8 | f[13], 0x0806);
	check_arp_head(f + 14, 1);
	assert_memory_equal(f + 22, mac, 6);
	assert_memory_equal(f + 28, &a, 4);
	assert_memory_equal(f + 32, zero, 6);
	assert_memory_equal(f + 38, &a, 4);
	assert_memory_equal(f + 42, zero, ANNOUNCE_ETH_MIN - 42);
}

static void test_na_is_unsolicited_override_to_all_nodes(void **state)
{
	uint8_t f[ANNOUNCE_NA_LEN], all[16] = {0xff, 0x02, [15] = 1};
	const uint8_t *ip6 = f + 14, *na = f + 54;
	struct in6_addr a;

	(void)state;
	inet_pton(AF_INET6, "2001:db8:1::2", &a);
	assert_int_equal(announce_frame_na(f, sizeof(f), mac, &a),
			 ANNOUNCE_NA_LEN);
	assert_memory_equal(f, "\x33\x33\x00\x00\x00\x01", 6);
	assert_memory_equal(f + 6, mac, 6);
	assert_int_equal(f[12] << 8 | f[13], 0x86dd);
	assert_int_equal(ip6[0] >> 4, 6);
	assert_int_equal(ip6[4] << 8 | ip6[5], 32);	/* payload length */
	assert_int_equal(ip6[6], IPPROTO_ICMPV6);
	assert_int_equal(ip6[7], 255);			/* hop limit */
	assert_memory_equal(ip6 + 8, &a, 16);
	assert_memory_equal(ip6 + 24, all, 16);
	assert_int_equal(na[0], 136);
	assert_int_equal(na[1], 0);
	assert_int_equal(na[4], 0x20);			/* O, not R nor S */
	assert_memory_equal(na + 8, &a, 16);
	assert_int_equal(na[24], 2);			/* target LLA */
	assert_int_equal(na[25], 1);
	assert_memory_equal(na + 26, mac, 6);
	/* The checksum, with the pseudo-header, adds up */
	assert_int_equal(csum(na, 32, csum_pseudo6(&a, (struct in6_addr *)all,
						   IPPROTO_ICMPV6, 32)), 0);
}

static void test_short_buffers_get_nothing(void **state)
{
	uint8_t f[ANNOUNCE_FRAME_MAX];
	struct in6_addr a6 = IN6ADDR_LOOPBACK_INIT;
	struct in_addr a4 = { 0 };

	(void)state;
	memset(f, 0x55, sizeof(f));
	assert_int_equal(announce_frame_rarp(f, ANNOUNCE_ETH_MIN - 1, mac), 0);
	assert_int_equal(announce_frame_garp(f, ANNOUNCE_ETH_MIN - 1, mac,
					     a4), 0);
	assert_int_equal(announce_frame_na(f, ANNOUNCE_NA_LEN - 1, mac, &a6),
			 0);
	assert_int_equal(f[0], 0x55);			/* untouched */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rarp_is_a_padded_reverse_request_for_the_mac),
		cmocka_unit_test(test_garp_is_a_request_from_and_for_the_address),
		cmocka_unit_test(test_na_is_unsolicited_override_to_all_nodes),
		cmocka_unit_test(test_short_buffers_get_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
