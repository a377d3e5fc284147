// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_checksum.c - the Internet checksum: known values, odd lengths,
 * sums across pieces split anywhere, and pseudo-header sums that verify.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>
#include <sys/uio.h>

#include "net/checksum.h"

static void test_rfc1071_example_sum(void **state)
{
	/* RFC 1071, 3: the words sum to ddf2, the checksum is its complement */
	const uint8_t b[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	(void)state;
	assert_int_equal(csum_add(0, b, sizeof(b)), 0x2ddf0);
	assert_int_equal(ntohs(csum(b, sizeof(b), 0)), 0x220d);
}

static void test_ipv4_header_checksum_known_value(void **state)
{
	uint8_t h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00,
			  0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01,
			  0xc0, 0xa8, 0x00, 0xc7 };
	uint16_t s;

	(void)state;
	s = csum(h, sizeof(h), 0);
	assert_int_equal(ntohs(s), 0xb861);
	memcpy(h + 10, &s, 2);
	assert_int_equal(csum(h, sizeof(h), 0), 0);	/* verifies */
}

static void test_odd_length_pads_with_zero(void **state)
{
	const uint8_t odd[] = { 0x12, 0x34, 0x56 };
	const uint8_t even[] = { 0x12, 0x34, 0x56, 0x00 };

	(void)state;
	assert_int_equal(csum(odd, 3, 0), csum(even, 4, 0));
}

static void test_iov_sum_equals_contiguous_sum_for_any_split(void **state)
{
	uint8_t b[301];
	unsigned i, a, z;

	(void)state;
	for (i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 37 + 11);

	for (a = 0; a < 20; a++) {
		for (z = a; z < 40; z += 3) {
			struct iovec v[3] = {
				{ b, a },
				{ b + a, z - a },
				{ b + z, sizeof(b) - z },
			};
			uint32_t s = csum_add_iov(0, v, 3, sizeof(b));

			assert_int_equal(csum_fold(s),
					 csum(b, sizeof(b), 0));
		}
	}
}

static void test_iov_sum_stops_at_len(void **state)
{
	uint8_t b[64];
	struct iovec v[2] = { { b, 32 }, { b + 32, 32 } };

	(void)state;
	memset(b, 0xa5, sizeof(b));
	assert_int_equal(csum_fold(csum_add_iov(0, v, 2, 41)),
			 csum(b, 41, 0));
}

static void test_udp4_checksum_with_pseudo_header_verifies(void **state)
{
	struct in_addr src = { htonl(0xc0000202) }, dst = { htonl(0xcb007107) };
	uint8_t udp[13] = { 0x04, 0xd2, 0x00, 0x35, 0x00, 13, 0, 0,
			    'h', 'e', 'l', 'l', 'o' };
	uint32_t ph = csum_pseudo4(src, dst, 17, sizeof(udp));
	uint16_t s = csum(udp, sizeof(udp), ph);

	(void)state;
	memcpy(udp + 6, &s, 2);
	assert_int_equal(csum(udp, sizeof(udp), ph), 0);
	udp[9] ^= 1;					/* any change shows */
	assert_int_not_equal(csum(udp, sizeof(udp), ph), 0);
}

static void test_icmpv6_checksum_with_pseudo_header_verifies(void **state)
{
	struct in6_addr src, dst;
	uint8_t msg[8] = { 128, 0, 0, 0, 0x12, 0x34, 0x00, 0x01 };
	uint32_t ph;
	uint16_t s;

	(void)state;
	inet_pton(AF_INET6, "2001:db8:1::2", &src);
	inet_pton(AF_INET6, "2001:db8:2::7", &dst);
	ph = csum_pseudo6(&src, &dst, 58, sizeof(msg));
	s = csum(msg, sizeof(msg), ph);
	memcpy(msg + 2, &s, 2);
	assert_int_equal(csum(msg, sizeof(msg), ph), 0);
	/* The pseudo-header matters: another source doesn't verify */
	src.s6_addr[15] = 3;
	assert_int_not_equal(csum(msg, sizeof(msg),
				  csum_pseudo6(&src, &dst, 58, sizeof(msg))), 0);
}

/* The word-by-word definition, to check the vectorised bulk against */
static uint32_t ref_sum(uint32_t sum, const uint8_t *b, size_t len)
{
	uint64_t s = sum;

	for (; len >= 2; b += 2, len -= 2)
		s += (uint32_t)b[0] << 8 | b[1];
	if (len)
		s += (uint32_t)b[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

static void test_bulk_sum_matches_definition(void **state)
{
	static uint8_t b[(1 << 20) + 4096];	/* past one lane block */
	uint32_t x = 12345;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(b); i++) {
		x = x * 1103515245 + 12345;
		b[i] = (uint8_t)(x >> 16);
	}
	/* Carries in every lane, over more than CSUM_BLOCKS blocks */
	memset(b + 4096, 0xff, 600000);

	for (i = 0; i < 3000; i++) {
		size_t off, len;

		x = x * 1103515245 + 12345;
		off = (x >> 8) % 64;
		x = x * 1103515245 + 12345;
		len = i < 20 ? sizeof(b) - 64 - i : (x >> 4) % 70000;
		assert_int_equal(csum_fold(csum_add(i, b + off, len)),
				 csum_fold(ref_sum(i, b + off, len)));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc1071_example_sum),
		cmocka_unit_test(test_ipv4_header_checksum_known_value),
		cmocka_unit_test(test_odd_length_pads_with_zero),
		cmocka_unit_test(test_iov_sum_equals_contiguous_sum_for_any_split),
		cmocka_unit_test(test_iov_sum_stops_at_len),
		cmocka_unit_test(test_udp4_checksum_with_pseudo_header_verifies),
		cmocka_unit_test(test_icmpv6_checksum_with_pseudo_header_verifies),
		cmocka_unit_test(test_bulk_sum_matches_definition),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
