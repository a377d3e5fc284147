// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_icmp_err.c - destination-unreachable messages (net/icmp_err.c):
 * the code each errno selects, the address each comes from, and the
 * quoted header of the guest's packet, IPv4 and IPv6.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ctx.h"
#include "net/checksum.h"
#include "net/icmp_err.h"

static struct ctx c;
static uint8_t guest4[4], remote4[4], guest6[16], remote6[16];

static int setup(void **state)
{
	(void)state;
	memset(&c, 0, sizeof(c));
	inet_pton(AF_INET, "10.0.2.2", &c.ip4.gw);
	inet_pton(AF_INET6, "fe80::1", &c.ip6.our_ll);
	inet_pton(AF_INET, "10.0.2.15", guest4);
	inet_pton(AF_INET, "192.0.2.7", remote4);
	inet_pton(AF_INET6, "2001:db8::15", guest6);
	inet_pton(AF_INET6, "2001:db8:9::7", remote6);
	return 0;
}

static void test_ipv4_host_unreachable_comes_from_the_gateway(void **state)
{
	uint8_t msg[ICMP_ERR_MAX], src[4], gw[4];
	size_t len;

	(void)state;
	len = icmp_err_build(&c, AF_INET, IPPROTO_TCP, guest4, 40001, remote4,
			     80, 0x11223344, EHOSTUNREACH, msg, src);
	assert_int_equal(len, 8 + 20 + 8);
	assert_int_equal(msg[0], 3); /* destination unreachable */
	assert_int_equal(msg[1], 1); /* host */
	memcpy(gw, &c.ip4.gw, 4);
	assert_memory_equal(src, gw, 4);

	/* The guest's segment, as far as a stack needs it to find it */
	assert_int_equal(msg[8], 0x45);
	assert_int_equal(msg[8 + 9], IPPROTO_TCP);
	assert_memory_equal(msg + 8 + 12, guest4, 4);
	assert_memory_equal(msg + 8 + 16, remote4, 4);
	assert_int_equal(csum(msg + 8, 20, 0), 0);
	assert_int_equal(msg[28] << 8 | msg[29], 40001);
	assert_int_equal(msg[30] << 8 | msg[31], 80);
	assert_int_equal(msg[32], 0x11);
	assert_int_equal(msg[35], 0x44);
}

static void test_ipv4_codes_follow_the_errno(void **state)
{
	uint8_t msg[ICMP_ERR_MAX], src[4];

	(void)state;
	icmp_err_build(&c, AF_INET, IPPROTO_UDP, guest4, 1, remote4, 2, 0,
		       ENETUNREACH, msg, src);
	assert_int_equal(msg[1], 0); /* network */
	icmp_err_build(&c, AF_INET, IPPROTO_UDP, guest4, 1, remote4, 2, 0,
		       EACCES, msg, src);
	assert_int_equal(msg[1], 13); /* administratively prohibited */
	icmp_err_build(&c, AF_INET, IPPROTO_UDP, guest4, 1, remote4, 2, 0,
		       EPERM, msg, src);
	assert_int_equal(msg[1], 13);
}

static void test_ipv4_port_unreachable_comes_from_the_destination(void **state)
{
	uint8_t msg[ICMP_ERR_MAX], src[4];

	(void)state;
	icmp_err_build(&c, AF_INET, IPPROTO_UDP, guest4, 40001, remote4, 53, 0,
		       ECONNREFUSED, msg, src);
	assert_int_equal(msg[1], 3); /* port */
	assert_memory_equal(src, remote4, 4);
	assert_int_equal(msg[32] << 8 | msg[33], 8); /* UDP length */
	assert_int_equal(msg[34] << 8 | msg[35], 0);

	/* Without a gateway, every error comes from the destination */
	c.ip4.gw.s_addr = 0;
	icmp_err_build(&c, AF_INET, IPPROTO_UDP, guest4, 40001, remote4, 53, 0,
		       EHOSTUNREACH, msg, src);
	assert_int_equal(msg[1], 1);
	assert_memory_equal(src, remote4, 4);
}

static void test_ipv6_errors_come_from_our_link_local_address(void **state)
{
	uint8_t msg[ICMP_ERR_MAX], src[16];
	size_t len;

	(void)state;
	len = icmp_err_build(&c, AF_INET6, IPPROTO_TCP, guest6, 40001, remote6,
			     443, 7, ENETUNREACH, msg, src);
	assert_int_equal(len, ICMP_ERR_MAX);
	assert_int_equal(msg[0], 1); /* destination unreachable */
	assert_int_equal(msg[1], 0); /* no route */
	assert_memory_equal(src, &c.ip6.our_ll, 16);
	assert_int_equal(msg[8] >> 4, 6);
	assert_int_equal(msg[8 + 6], IPPROTO_TCP);
	assert_memory_equal(msg + 8 + 8, guest6, 16);
	assert_memory_equal(msg + 8 + 24, remote6, 16);
	assert_int_equal(msg[48] << 8 | msg[49], 40001);
	assert_int_equal(msg[50] << 8 | msg[51], 443);

	icmp_err_build(&c, AF_INET6, IPPROTO_TCP, guest6, 1, remote6, 2, 0,
		       EHOSTUNREACH, msg, src);
	assert_int_equal(msg[1], 3); /* address */
	icmp_err_build(&c, AF_INET6, IPPROTO_TCP, guest6, 1, remote6, 2, 0,
		       EPERM, msg, src);
	assert_int_equal(msg[1], 1); /* administratively prohibited */
}

static void test_ipv6_port_unreachable_comes_from_the_destination(void **state)
{
	uint8_t msg[ICMP_ERR_MAX], src[16];

	(void)state;
	icmp_err_build(&c, AF_INET6, IPPROTO_UDP, guest6, 40001, remote6, 53, 0,
		       ECONNREFUSED, msg, src);
	assert_int_equal(msg[1], 4); /* port */
	assert_memory_equal(src, remote6, 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(
			test_ipv4_host_unreachable_comes_from_the_gateway,
			setup),
		cmocka_unit_test_setup(test_ipv4_codes_follow_the_errno, setup),
		cmocka_unit_test_setup(
			test_ipv4_port_unreachable_comes_from_the_destination,
			setup),
		cmocka_unit_test_setup(
			test_ipv6_errors_come_from_our_link_local_address,
			setup),
		cmocka_unit_test_setup(
			test_ipv6_port_unreachable_comes_from_the_destination,
			setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
