// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_ports.c - -t/-u port specification parsing (conf/ports.c): the
 * accepted grammar, the resulting table, and every kind of bad input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/ports.h"

static struct fwd_ports fwd;
static char err[256];

static int setup(void **state)
{
	(void)state;
	memset(&fwd, 0, sizeof(fwd));
	err[0] = '\0';
	return 0;
}

static int parse(const char *spec)
{
	return ports_parse(&fwd, spec, err, sizeof(err));
}

/* A bad spec fails with a message, and leaves the table untouched */
static void assert_bad(const char *spec)
{
	static struct fwd_ports before;

	memcpy(&before, &fwd, sizeof(fwd));
	err[0] = '\0';
	assert_int_equal(parse(spec), -EINVAL);
	assert_true(strlen(err) > 0);
	assert_null(strchr(err, '\n'));
	assert_memory_equal(&before, &fwd, sizeof(fwd));
}

static const struct fwd_bind *bind_of(uint16_t port)
{
	return &fwd.bind[fwd.bind_idx[port]];
}

static void test_none_forwards_nothing(void **state)
{
	(void)state;
	assert_int_equal(parse("none"), 0);
	assert_int_equal(fwd.mode, FWD_NONE);
	assert_int_equal(fwd.count, 0);
	assert_true(fwd.none_given);
}

static void test_single_port_forwards_to_same_port(void **state)
{
	(void)state;
	assert_int_equal(parse("22"), 0);
	assert_int_equal(fwd.mode, FWD_SPEC);
	assert_int_equal(fwd.count, 1);
	assert_true(fwd_port_isset(&fwd, 22));
	assert_false(fwd_port_isset(&fwd, 21));
	assert_false(fwd_port_isset(&fwd, 23));
	assert_int_equal(fwd_port_target(&fwd, 22), 22);
	assert_int_equal(bind_of(22)->af, AF_UNSPEC);
	assert_string_equal(bind_of(22)->ifname, "");
}

static void test_range_forwards_every_port_inclusive(void **state)
{
	(void)state;
	assert_int_equal(parse("8000-8010"), 0);
	assert_int_equal(fwd.count, 11);
	assert_true(fwd_port_isset(&fwd, 8000));
	assert_true(fwd_port_isset(&fwd, 8010));
	assert_false(fwd_port_isset(&fwd, 8011));
}

static void test_extreme_ports_1_and_65535_are_valid(void **state)
{
	(void)state;
	assert_int_equal(parse("1,65535"), 0);
	assert_true(fwd_port_isset(&fwd, 1));
	assert_true(fwd_port_isset(&fwd, 65535));
	assert_int_equal(fwd_port_target(&fwd, 65535), 65535);
}

static void test_translation_maps_host_port_to_guest_port(void **state)
{
	(void)state;
	assert_int_equal(parse("80:8080"), 0);
	assert_true(fwd_port_isset(&fwd, 80));
	assert_false(fwd_port_isset(&fwd, 8080));
	assert_int_equal(fwd_port_target(&fwd, 80), 8080);
}

static void test_translation_to_lower_port_wraps_correctly(void **state)
{
	(void)state;
	assert_int_equal(parse("60000-60002:22-24"), 0);
	assert_int_equal(fwd_port_target(&fwd, 60000), 22);
	assert_int_equal(fwd_port_target(&fwd, 60002), 24);
}

static void test_range_translation_keeps_offsets(void **state)
{
	(void)state;
	assert_int_equal(parse("1000-1002:2000-2002"), 0);
	assert_int_equal(fwd.count, 3);
	assert_int_equal(fwd_port_target(&fwd, 1000), 2000);
	assert_int_equal(fwd_port_target(&fwd, 1001), 2001);
	assert_int_equal(fwd_port_target(&fwd, 1002), 2002);
}

static void test_list_mixes_ports_ranges_translations(void **state)
{
	(void)state;
	assert_int_equal(parse("22,80:8080,5000-5001"), 0);
	assert_int_equal(fwd.count, 4);
	assert_int_equal(fwd_port_target(&fwd, 22), 22);
	assert_int_equal(fwd_port_target(&fwd, 80), 8080);
	assert_true(fwd_port_isset(&fwd, 5001));
}

static void test_ipv4_address_prefix_sets_bind_address(void **state)
{
	struct in_addr a;

	(void)state;
	assert_int_equal(parse("127.0.0.1/22"), 0);
	inet_pton(AF_INET, "127.0.0.1", &a);
	assert_int_equal(bind_of(22)->af, AF_INET);
	assert_int_equal(bind_of(22)->addr.v4.s_addr, a.s_addr);
}

static void test_ipv6_address_prefix_sets_bind_address(void **state)
{
	struct in6_addr a;

	(void)state;
	assert_int_equal(parse("2001:db8::1/443"), 0);
	inet_pton(AF_INET6, "2001:db8::1", &a);
	assert_int_equal(bind_of(443)->af, AF_INET6);
	assert_memory_equal(&bind_of(443)->addr.v6, &a, sizeof(a));
}

static void test_interface_prefix_sets_bind_interface(void **state)
{
	(void)state;
	assert_int_equal(parse("%lo/22"), 0);
	assert_int_equal(bind_of(22)->af, AF_UNSPEC);
	assert_string_equal(bind_of(22)->ifname, "lo");
}

static void test_address_and_interface_prefix_sets_both(void **state)
{
	(void)state;
	assert_int_equal(parse("192.0.2.1%eth0/80"), 0);
	assert_int_equal(bind_of(80)->af, AF_INET);
	assert_string_equal(bind_of(80)->ifname, "eth0");
}

static void test_exclusion_removes_ports_from_range(void **state)
{
	(void)state;
	assert_int_equal(parse("1000-1010,~1005,~1008-1009"), 0);
	assert_int_equal(fwd.count, 8);
	assert_false(fwd_port_isset(&fwd, 1005));
	assert_false(fwd_port_isset(&fwd, 1008));
	assert_false(fwd_port_isset(&fwd, 1009));
	assert_true(fwd_port_isset(&fwd, 1010));
}

static void test_exclusion_before_range_also_applies(void **state)
{
	(void)state;
	assert_int_equal(parse("~1005,1000-1010"), 0);
	assert_false(fwd_port_isset(&fwd, 1005));
	assert_int_equal(fwd.count, 10);
}

static void test_all_forwards_every_non_ephemeral_port(void **state)
{
	uint16_t lo, hi;

	(void)state;
	ports_ephemeral_range(&lo, &hi);
	assert_int_equal(parse("all"), 0);
	assert_int_equal(fwd.mode, FWD_ALL);
	assert_int_equal(fwd.count, 65535 - (hi - lo + 1));
	assert_true(fwd_port_isset(&fwd, 1));
	assert_true(fwd_port_isset(&fwd, 22));
	assert_false(fwd_port_isset(&fwd, 0));
	assert_false(fwd_port_isset(&fwd, lo));
	assert_false(fwd_port_isset(&fwd, hi));
	assert_int_equal(fwd_port_target(&fwd, 22), 22);
}

static void test_all_with_address_prefix_binds_there(void **state)
{
	(void)state;
	assert_int_equal(parse("::1%lo/all"), 0);
	assert_int_equal(fwd.mode, FWD_ALL);
	assert_int_equal(bind_of(80)->af, AF_INET6);
	assert_string_equal(bind_of(80)->ifname, "lo");
}

static void test_exclusions_only_mean_all_but_those(void **state)
{
	uint16_t lo, hi;

	(void)state;
	ports_ephemeral_range(&lo, &hi);
	assert_int_equal(parse("~22,~15000-15021"), 0);
	assert_int_equal(fwd.mode, FWD_ALL);
	assert_false(fwd_port_isset(&fwd, 22));
	assert_false(fwd_port_isset(&fwd, 15010));
	assert_true(fwd_port_isset(&fwd, 21));
	assert_true(fwd_port_isset(&fwd, 15022));
	assert_false(fwd_port_isset(&fwd, lo));
	assert_int_equal(fwd.count, 65535 - (hi - lo + 1) - 1 - 22);
}

static void test_repeated_specs_accumulate_with_own_bind(void **state)
{
	(void)state;
	assert_int_equal(parse("127.0.0.1/22"), 0);
	assert_int_equal(parse("%lo/80-81"), 0);
	assert_int_equal(fwd.count, 3);
	assert_int_equal(fwd.bind_count, 2);
	assert_int_equal(bind_of(22)->af, AF_INET);
	assert_int_equal(bind_of(80)->af, AF_UNSPEC);
	assert_string_equal(bind_of(81)->ifname, "lo");
}

static void test_none_twice_is_accepted(void **state)
{
	(void)state;
	assert_int_equal(parse("none"), 0);
	assert_int_equal(parse("none"), 0);
}

static void test_bad_syntax_is_rejected(void **state)
{
	(void)state;
	assert_bad("");
	assert_bad("abc");
	assert_bad("22x");
	assert_bad("22-");
	assert_bad("-22");
	assert_bad("22,,23");
	assert_bad("22,");
	assert_bad(",22");
	assert_bad("22:");
	assert_bad("22:23:24");
	assert_bad("~");
	assert_bad(" 22");
	assert_bad("all,22");
}

static void test_out_of_range_ports_are_rejected(void **state)
{
	(void)state;
	assert_bad("0");
	assert_bad("65536");
	assert_bad("1-65536");
	assert_bad("99999999999999999999");
	assert_bad("22:0");
	assert_non_null(strstr(err, "1-65535"));
}

static void test_reversed_range_is_rejected(void **state)
{
	(void)state;
	assert_bad("22-21");
	assert_non_null(strstr(err, "reversed"));
}

static void test_translation_length_mismatch_is_rejected(void **state)
{
	(void)state;
	assert_bad("1-3:10-11");
	assert_bad("80-90:8080");
	assert_bad("80:8080-8081");
}

static void test_translated_exclusion_is_rejected(void **state)
{
	(void)state;
	assert_bad("1-100,~22:23");
}

static void test_bad_address_or_interface_is_rejected(void **state)
{
	(void)state;
	assert_bad("foo/22");
	assert_non_null(strstr(err, "'foo'"));
	assert_bad("/22");
	assert_bad("%/22");
	assert_bad("1.2.3.4/");
	assert_bad("%averyveryverylongname/22");
	assert_bad("1.2.3.4.5/22");
}

static void test_auto_is_rejected_as_pasta_only(void **state)
{
	(void)state;
	assert_bad("auto");
	assert_non_null(strstr(err, "pasta"));
}

static void test_overlapping_ports_are_rejected(void **state)
{
	(void)state;
	assert_bad("22,22");
	assert_bad("20-30,25");
	assert_bad("80:8080,80:9090");
	assert_int_equal(parse("22"), 0);
	assert_bad("20-30");
	assert_int_equal(parse("23"), 0);
}

static void test_none_conflicts_with_other_specs(void **state)
{
	(void)state;
	assert_int_equal(parse("22"), 0);
	assert_bad("none");
	memset(&fwd, 0, sizeof(fwd));
	assert_int_equal(parse("none"), 0);
	assert_bad("22");
	assert_bad("all");
}

static void test_all_conflicts_with_other_specs(void **state)
{
	(void)state;
	assert_int_equal(parse("22"), 0);
	assert_bad("all");
	assert_bad("~80");
	memset(&fwd, 0, sizeof(fwd));
	assert_int_equal(parse("all"), 0);
	assert_bad("22");
	assert_bad("all");
	assert_bad("none");
}

static void test_too_many_options_fail_with_enospc(void **state)
{
	char spec[16];
	int i;

	(void)state;
	for (i = 0; i < FWD_BIND_MAX; i++) {
		snprintf(spec, sizeof(spec), "%d", 100 + i);
		assert_int_equal(parse(spec), 0);
	}
	assert_int_equal(parse("99"), -ENOSPC);
	assert_false(fwd_port_isset(&fwd, 99));
}

static void test_overlong_spec_is_rejected(void **state)
{
	static char spec[5000];

	(void)state;
	memset(spec, '1', sizeof(spec) - 1);
	assert_bad(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_none_forwards_nothing, setup),
		cmocka_unit_test_setup(test_single_port_forwards_to_same_port,
				       setup),
		cmocka_unit_test_setup(test_range_forwards_every_port_inclusive,
				       setup),
		cmocka_unit_test_setup(test_extreme_ports_1_and_65535_are_valid,
				       setup),
		cmocka_unit_test_setup(
			test_translation_maps_host_port_to_guest_port, setup),
		cmocka_unit_test_setup(
			test_translation_to_lower_port_wraps_correctly, setup),
		cmocka_unit_test_setup(test_range_translation_keeps_offsets,
				       setup),
		cmocka_unit_test_setup(
			test_list_mixes_ports_ranges_translations, setup),
		cmocka_unit_test_setup(
			test_ipv4_address_prefix_sets_bind_address, setup),
		cmocka_unit_test_setup(
			test_ipv6_address_prefix_sets_bind_address, setup),
		cmocka_unit_test_setup(
			test_interface_prefix_sets_bind_interface, setup),
		cmocka_unit_test_setup(
			test_address_and_interface_prefix_sets_both, setup),
		cmocka_unit_test_setup(test_exclusion_removes_ports_from_range,
				       setup),
		cmocka_unit_test_setup(
			test_exclusion_before_range_also_applies, setup),
		cmocka_unit_test_setup(
			test_all_forwards_every_non_ephemeral_port, setup),
		cmocka_unit_test_setup(
			test_all_with_address_prefix_binds_there, setup),
		cmocka_unit_test_setup(test_exclusions_only_mean_all_but_those,
				       setup),
		cmocka_unit_test_setup(
			test_repeated_specs_accumulate_with_own_bind, setup),
		cmocka_unit_test_setup(test_none_twice_is_accepted, setup),
		cmocka_unit_test_setup(test_bad_syntax_is_rejected, setup),
		cmocka_unit_test_setup(test_out_of_range_ports_are_rejected,
				       setup),
		cmocka_unit_test_setup(test_reversed_range_is_rejected, setup),
		cmocka_unit_test_setup(
			test_translation_length_mismatch_is_rejected, setup),
		cmocka_unit_test_setup(test_translated_exclusion_is_rejected,
				       setup),
		cmocka_unit_test_setup(
			test_bad_address_or_interface_is_rejected, setup),
		cmocka_unit_test_setup(test_auto_is_rejected_as_pasta_only,
				       setup),
		cmocka_unit_test_setup(test_overlapping_ports_are_rejected,
				       setup),
		cmocka_unit_test_setup(test_none_conflicts_with_other_specs,
				       setup),
		cmocka_unit_test_setup(test_all_conflicts_with_other_specs,
				       setup),
		cmocka_unit_test_setup(test_too_many_options_fail_with_enospc,
				       setup),
		cmocka_unit_test_setup(test_overlong_spec_is_rejected, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
