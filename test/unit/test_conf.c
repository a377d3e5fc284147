// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_conf.c - command line parsing (conf/conf.c) and resolv.conf
 * parsing (conf/resolv.c). Host lookups over netlink are not exercised.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"
#include "conf/resolv.h"
#include "ctx.h"
#include "log.h"

static struct ctx c;
static char err[256];

/* Run conf_parse() on "passt" followed by the NULL-terminated arguments */
static int parse(const char *arg, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = "passt";
	va_start(ap, arg);
	for (; arg && argc < 63; arg = va_arg(ap, const char *))
		argv[argc++] = (char *)arg;
	va_end(ap);
	argv[argc] = NULL;

	memset(err, 0, sizeof(err));
	return conf_parse(&c, argc, argv, err, sizeof(err));
}

/* The last parse failed, with one line that mentions @what */
static void assert_fails_naming(const char *what)
{
	assert_true(strlen(err) > 0);
	assert_null(strchr(err, '\n'));
	if (!strstr(err, what))
		fail_msg("error \"%s\" doesn't mention \"%s\"", err, what);
}

#define assert_bad(what, ...)                                          \
	do {                                                           \
		assert_int_equal(parse(__VA_ARGS__, NULL), -1);        \
		assert_fails_naming(what);                             \
	} while (0)

#define assert_ok(...) assert_int_equal(parse(__VA_ARGS__, NULL), 0)

static void test_no_options_give_defaults(void **state)
{
	static const uint8_t mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	(void)state;
	assert_int_equal(parse(NULL), 0);
	assert_string_equal(err, "");
	assert_memory_equal(c.our_mac, mac, 6);
	assert_memory_equal(c.guest_mac, bcast, 6);
	assert_false(c.guest_mac_set);
	assert_int_equal(c.mtu, 65520);
	assert_int_equal(c.fd_listen, -1);
	assert_int_equal(c.fd_inherited, -1);
	assert_false(c.foreground);
	assert_false(c.one_off);
	assert_int_equal(c.log_lvl, LOG_LVL_INFO);
	assert_int_equal(c.mode, MODE_STREAM);
	assert_false(c.no_v4);
	assert_false(c.no_v6);
	assert_int_equal(c.tcp_fwd.mode, FWD_NONE);
	assert_int_equal(c.udp_fwd.mode, FWD_NONE);
	assert_string_equal(c.sock_path, "");
}

static void test_parse_again_resets_previous_options(void **state)
{
	(void)state;
	assert_ok("-4", "-f", "-m", "1500");
	assert_true(c.no_v6);
	assert_ok("-1");
	assert_false(c.no_v6);
	assert_false(c.foreground);
	assert_int_equal(c.mtu, 65520);
}

static void test_socket_path_long_short_and_alias(void **state)
{
	(void)state;
	assert_ok("-s", "/tmp/a.socket");
	assert_string_equal(c.sock_path, "/tmp/a.socket");
	assert_ok("--socket", "/tmp/b.socket");
	assert_string_equal(c.sock_path, "/tmp/b.socket");
	assert_ok("--socket-path", "/tmp/c.socket");
	assert_string_equal(c.sock_path, "/tmp/c.socket");
	assert_ok("--socket=/tmp/d.socket");
	assert_string_equal(c.sock_path, "/tmp/d.socket");
}

static void test_socket_path_too_long_fails(void **state)
{
	char path[200];

	(void)state;
	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_bad("--socket", "--socket", path);
	assert_bad("-s", "-s", path);
	assert_bad("-s", "-s", "");
}

static void test_fd_accepts_open_fd_and_implies_one_off(void **state)
{
	char num[16];
	int fd = open("/dev/null", O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	snprintf(num, sizeof(num), "%d", fd);
	assert_ok("--fd", num);
	assert_int_equal(c.fd_inherited, fd);
	assert_true(c.one_off);
	assert_ok("-F", num);
	assert_int_equal(c.fd_inherited, fd);
	close(fd);
}

static void test_fd_rejects_closed_or_malformed(void **state)
{
	(void)state;
	assert_bad("--fd", "--fd", "999");
	assert_bad("-F", "-F", "abc");
	assert_bad("-F", "-F", "-1");
	assert_bad("-F", "-F", "99999999999");
}

static void test_fd_and_socket_are_mutually_exclusive(void **state)
{
	char num[16];
	int fd = open("/dev/null", O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	snprintf(num, sizeof(num), "%d", fd);
	assert_bad("-F", "-F", num, "-s", "/tmp/x");
	close(fd);
}

static void test_process_flags_are_set(void **state)
{
	(void)state;
	assert_ok("-1", "-f", "-P", "/run/p.pid", "-l", "/tmp/log",
		  "-p", "/tmp/cap.pcap", "--log-size", "1048576", "--stderr");
	assert_true(c.one_off);
	assert_true(c.foreground);
	assert_string_equal(c.pid_file, "/run/p.pid");
	assert_string_equal(c.log_file, "/tmp/log");
	assert_string_equal(c.pcap_file, "/tmp/cap.pcap");
	assert_ok("--one-off", "--foreground", "--pid", "x", "--log-file",
		  "y", "--pcap", "z");
	assert_true(c.one_off);
	assert_true(c.foreground);
}

static void test_log_size_must_be_a_number(void **state)
{
	(void)state;
	assert_bad("--log-size", "--log-size", "big");
}

static void test_debug_trace_quiet_set_log_level(void **state)
{
	(void)state;
	assert_ok("-d");
	assert_int_equal(c.log_lvl, LOG_LVL_DEBUG);
	assert_false(c.foreground);
	assert_ok("--trace");
	assert_int_equal(c.log_lvl, LOG_LVL_TRACE);
	assert_ok("--trace", "-d");
	assert_int_equal(c.log_lvl, LOG_LVL_TRACE);
	assert_ok("-q");
	assert_int_equal(c.log_lvl, LOG_LVL_WARN);
	assert_ok("--quiet");
	assert_int_equal(c.log_lvl, LOG_LVL_WARN);
}

static void test_ipv4_only_and_ipv6_only(void **state)
{
	(void)state;
	assert_ok("-4");
	assert_true(c.no_v6);
	assert_false(c.no_v4);
	assert_ok("--ipv6-only");
	assert_true(c.no_v4);
	assert_false(c.no_v6);
}

static void test_ipv4_only_with_ipv6_only_fails(void **state)
{
	(void)state;
	assert_bad("-4", "-4", "-6");
	assert_bad("-6", "--ipv4-only", "--ipv6-only");
}

static void test_family_only_conflicts_with_other_family_address(void **state)
{
	(void)state;
	assert_bad("-4", "-4", "-a", "2001:db8::2");
	assert_bad("-6", "-6", "-a", "192.0.2.2");
	assert_bad("-6", "-6", "-n", "24");
}

static void test_address_sets_one_per_family(void **state)
{
	struct in6_addr a6;
	struct in_addr a4;

	(void)state;
	assert_ok("-a", "192.0.2.2", "--address", "2001:db8::2");
	inet_pton(AF_INET, "192.0.2.2", &a4);
	inet_pton(AF_INET6, "2001:db8::2", &a6);
	assert_true(c.ip4.addr_given);
	assert_true(c.ip6.addr_given);
	assert_int_equal(c.ip4.addr.s_addr, a4.s_addr);
	assert_memory_equal(&c.ip6.addr, &a6, sizeof(a6));
}

static void test_address_rejects_garbage_twice_and_special(void **state)
{
	(void)state;
	assert_bad("-a", "-a", "foo");
	assert_non_null(strstr(err, "'foo' is not an IPv4 or IPv6 address"));
	assert_bad("--address", "--address", "1.2.3.4.5");
	assert_bad("-a", "-a", "192.0.2.2", "-a", "192.0.2.3");
	assert_bad("-a", "-a", "2001:db8::1", "-a", "2001:db8::2");
	assert_bad("-a", "-a", "127.0.0.1");
	assert_bad("-a", "-a", "0.0.0.0");
	assert_bad("-a", "-a", "224.0.0.1");
	assert_bad("-a", "-a", "255.255.255.255");
	assert_bad("-a", "-a", "::");
	assert_bad("-a", "-a", "::1");
	assert_bad("-a", "-a", "fe80::1");
	assert_bad("-a", "-a", "ff02::1");
}

static void test_netmask_accepts_prefix_or_dotted(void **state)
{
	(void)state;
	assert_ok("-n", "24");
	assert_int_equal(c.ip4.prefix_len, 24);
	assert_true(c.ip4.prefix_given);
	assert_ok("--netmask", "255.255.240.0");
	assert_int_equal(c.ip4.prefix_len, 20);
	assert_ok("-n", "0");
	assert_int_equal(c.ip4.prefix_len, 0);
	assert_ok("-n", "255.255.255.255");
	assert_int_equal(c.ip4.prefix_len, 32);
}

static void test_netmask_rejects_bad_values(void **state)
{
	(void)state;
	assert_bad("-n", "-n", "33");
	assert_bad("-n", "-n", "255.0.255.0");
	assert_bad("--netmask", "--netmask", "abc");
	assert_bad("-n", "-n", "-1");
	assert_bad("-n", "-n", "1.2.3");
}

static void test_mac_addr_sets_our_source_mac(void **state)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0xab };

	(void)state;
	assert_ok("-M", "52:54:00:12:34:AB");
	assert_memory_equal(c.our_mac, mac, 6);
	assert_false(c.guest_mac_set);
	assert_ok("--mac-addr", "52:54:0:12:34:ab");
	assert_memory_equal(c.our_mac, mac, 6);
}

static void test_mac_addr_rejects_bad_values(void **state)
{
	(void)state;
	assert_bad("-M", "-M", "52:54:00:12:34");
	assert_bad("-M", "-M", "52:54:00:12:34:56:78");
	assert_bad("-M", "-M", "52-54-00-12-34-56");
	assert_bad("-M", "-M", "52:54:00:12:34:5g");
	assert_bad("-M", "-M", "523:54:00:12:34:56");
	assert_bad("--mac-addr", "--mac-addr", "01:00:5e:00:00:01");
	assert_bad("-M", "-M", "ff:ff:ff:ff:ff:ff");
	assert_bad("-M", "-M", "00:00:00:00:00:00");
}

static void test_gateway_per_family_allows_link_local(void **state)
{
	struct in6_addr a6;

	(void)state;
	assert_ok("-g", "192.0.2.1", "--gateway", "fe80::1");
	inet_pton(AF_INET6, "fe80::1", &a6);
	assert_true(c.ip4.gw_given);
	assert_true(c.ip6.gw_given);
	assert_memory_equal(&c.ip6.gw, &a6, sizeof(a6));
}

static void test_gateway_rejects_bad_values(void **state)
{
	(void)state;
	assert_bad("-g", "-g", "gw");
	assert_bad("-g", "-g", "0.0.0.0");
	assert_bad("--gateway", "--gateway", "ff02::2");
	assert_bad("-g", "-g", "192.0.2.1", "-g", "192.0.2.254");
}

static void test_interface_must_exist(void **state)
{
	(void)state;
	assert_ok("-i", "lo");
	assert_string_equal(c.ifname, "lo");
	assert_true(c.ifi4 > 0);
	assert_int_equal(c.ifi4, c.ifi6);
	assert_bad("-i", "-i", "nosuchif0");
	assert_bad("--interface", "--interface", "averyveryverylongname");
}

static void test_outbound_address_and_interfaces(void **state)
{
	(void)state;
	assert_ok("-o", "192.0.2.9", "--outbound", "2001:db8::9",
		  "--outbound-if4", "lo", "--outbound-if6", "lo");
	assert_true(c.ip4.addr_out.s_addr != 0);
	assert_string_equal(c.ifname_out, "lo");
	assert_string_equal(c.ifname_out6, "lo");
	assert_bad("-o", "-o", "nowhere");
	assert_bad("--outbound-if4", "--outbound-if4", "nosuchif0");
}

static void test_mtu_accepts_range_and_zero(void **state)
{
	(void)state;
	assert_ok("-m", "1500");
	assert_int_equal(c.mtu, 1500);
	assert_ok("--mtu", "65520");
	assert_int_equal(c.mtu, 65520);
	assert_ok("--mtu", "0");
	assert_int_equal(c.mtu, 0);
	assert_false(c.no_v6);
}

static void test_mtu_out_of_range_fails(void **state)
{
	(void)state;
	assert_bad("--mtu", "--mtu", "70000");
	assert_string_equal(err,
			    "--mtu: 70000 is out of range (68-65520, or 0)");
	assert_bad("-m", "-m", "67");
	assert_bad("-m", "-m", "65521");
	assert_bad("-m", "-m", "abc");
	assert_bad("-m", "-m", "-5");
	assert_bad("-m", "-m", "1500x");
}

static void test_mtu_below_1280_disables_ipv6(void **state)
{
	(void)state;
	assert_ok("-m", "1000");
	assert_true(c.no_v6);
	assert_false(c.no_v4);
}

static void test_mtu_below_1280_fails_when_ipv6_required(void **state)
{
	(void)state;
	assert_bad("--mtu", "-6", "-m", "1000");
	assert_bad("--mtu", "-a", "2001:db8::2", "-m", "1000");
}

static void test_dns_repeated_fills_both_families(void **state)
{
	(void)state;
	assert_ok("-D", "192.0.2.53", "--dns", "198.51.100.53", "-D",
		  "2001:db8::53");
	assert_true(c.dns_given);
	assert_int_equal(c.ip4.dns_count, 2);
	assert_int_equal(c.ip6.dns_count, 1);
}

static void test_dns_more_than_maxdns_fails(void **state)
{
	(void)state;
	assert_bad("-D", "-D", "192.0.2.1", "-D", "192.0.2.2", "-D",
		   "192.0.2.3", "-D", "192.0.2.4", "-D", "192.0.2.5");
}

static void test_dns_none_clears_and_excludes_addresses(void **state)
{
	(void)state;
	assert_ok("-D", "none");
	assert_true(c.no_dns);
	assert_true(c.dns_given);
	assert_int_equal(c.ip4.dns_count, 0);
	assert_bad("-D", "-D", "none", "-D", "192.0.2.1");
	assert_bad("-D", "-D", "192.0.2.1", "-D", "none");
}

static void test_dns_rejects_non_addresses(void **state)
{
	(void)state;
	assert_bad("-D", "-D", "dns.example");
	assert_bad("--dns", "--dns", "0.0.0.0");
	assert_bad("-D", "-D", "ff02::1");
}

static void test_search_splits_list_and_repeats(void **state)
{
	(void)state;
	assert_ok("-S", "example.com lab.example.org.", "--search",
		  "third.example");
	assert_true(c.search_given);
	assert_int_equal(c.search_count, 3);
	assert_string_equal(c.search[0].name, "example.com");
	assert_string_equal(c.search[1].name, "lab.example.org");
	assert_string_equal(c.search[2].name, "third.example");
}

static void test_search_none_clears(void **state)
{
	(void)state;
	assert_ok("-S", "none");
	assert_true(c.no_search);
	assert_int_equal(c.search_count, 0);
	assert_bad("-S", "-S", "none", "-S", "example.com");
}

static void test_search_rejects_bad_domains(void **state)
{
	char longname[300];

	(void)state;
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_bad("-S", "-S", "bad..example");
	assert_bad("-S", "-S", "bad/example");
	assert_bad("-S", "-S", "");
	assert_bad("--search", "--search", longname);
	assert_bad("-S", "-S", "a.x b.x c.x d.x e.x f.x g.x");
}

static void test_hostname_and_fqdn(void **state)
{
	char longname[300];

	(void)state;
	assert_ok("-H", "vm1", "--fqdn", "vm1.example.com");
	assert_string_equal(c.hostname, "vm1");
	assert_string_equal(c.fqdn, "vm1.example.com");
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_bad("-H", "-H", longname);
	assert_bad("--hostname", "--hostname", "");
	assert_bad("--fqdn", "--fqdn", longname);
}

static void test_no_service_switches_are_accepted(void **state)
{
	(void)state;
	assert_ok("--no-dhcp", "--no-ndp", "--no-dhcpv6", "--no-ra",
		  "--no-icmp", "--no-tcp", "--no-udp", "--no-dhcp-dns",
		  "--no-dhcp-search", "--no-map-gw");
	assert_true(c.no_dhcp && c.no_ndp && c.no_dhcpv6 && c.no_ra);
	assert_true(c.no_icmp && c.no_tcp && c.no_udp);
	assert_true(c.no_dhcp_dns && c.no_dhcp_search && c.no_map_gw);
}

static void test_ports_none_is_accepted(void **state)
{
	(void)state;
	assert_ok("-t", "none", "--udp-ports", "none");
	assert_int_equal(c.tcp_fwd.mode, FWD_NONE);
}

static void test_ports_bad_spec_fails_naming_option(void **state)
{
	(void)state;
	assert_bad("-t", "-t", "0");
	assert_bad("--tcp-ports", "--tcp-ports", "22-21");
	assert_bad("-u", "-u", "foo/53");
	assert_bad("-t", "-t", "auto");
	assert_bad("-t", "-t", "22", "-t", "22");
}

static void test_ports_forwarding_is_accepted(void **state)
{
	(void)state;
	assert_ok("-t", "22");
	assert_int_equal(c.tcp_fwd.mode, FWD_SPEC);
	assert_ok("-t", "all");
	assert_int_equal(c.tcp_fwd.mode, FWD_ALL);
	assert_ok("-u", "53:5353");
	assert_int_equal(fwd_port_target(&c.udp_fwd, 53), 5353);
}

static void test_pasta_only_options_fail(void **state)
{
	(void)state;
	assert_bad("-T", "-T", "none");
	assert_non_null(strstr(err, "pasta"));
	assert_bad("--udp-ns", "--udp-ns", "auto");
	assert_bad("--no-copy-routes", "--no-copy-routes");
	assert_bad("--no-copy-addrs", "--no-copy-addrs");
}

static void test_migration_options_are_accepted(void **state)
{
	(void)state;
	assert_ok("--vhost-user");
	assert_ok("--vhost-user", "--print-capabilities");
	assert_int_equal(c.repair_mode, REPAIR_MODE_HELPER);
	assert_string_equal(c.repair_path, "");
	assert_ok("--vhost-user", "--repair-path", "/tmp/s.repair");
	assert_int_equal(c.repair_mode, REPAIR_MODE_HELPER);
	assert_string_equal(c.repair_path, "/tmp/s.repair");
	assert_ok("--vhost-user", "--repair-path", "none");
	assert_int_equal(c.repair_mode, REPAIR_MODE_NONE);
	assert_string_equal(c.repair_path, "");
	assert_ok("--vhost-user", "--repair-path", "/tmp/s.repair",
		  "--repair-path", "none");
	assert_int_equal(c.repair_mode, REPAIR_MODE_NONE);
	assert_string_equal(c.repair_path, "");
	assert_ok("--vhost-user", "--repair-path", "none",
		  "--repair-path", "/tmp/s.repair");
	assert_int_equal(c.repair_mode, REPAIR_MODE_HELPER);
	assert_ok(NULL);
	assert_int_equal(c.repair_mode, REPAIR_MODE_NONE);
	assert_ok("--vhost-user", "--migrate-exit");
	assert_true(c.migrate_exit);
	assert_ok("--vhost-user", "--migrate-no-linger");
	assert_true(c.migrate_no_linger);
	assert_ok("--vhost-user");
	assert_int_equal(c.migrate_linger_timeout, 30);
	assert_ok("--vhost-user", "--migrate-linger-timeout", "5");
	assert_int_equal(c.migrate_linger_timeout, 5);
	assert_bad("--migrate-linger-timeout: '0'", "--vhost-user",
		   "--migrate-linger-timeout", "0");
	assert_bad("--migrate-linger-timeout: '3601'", "--vhost-user",
		   "--migrate-linger-timeout", "3601");
	assert_bad("--migrate-linger-timeout: 'x'", "--vhost-user",
		   "--migrate-linger-timeout", "x");
	assert_ok("--map-host-loopback", "192.0.2.9");
	assert_ok("--map-guest-addr", "2001:db8::9");
	assert_ok("--dns-forward", "192.0.2.53");
}

static void test_unimplemented_options_validate_values_first(void **state)
{
	char path[200];

	(void)state;
	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_bad("--repair-path: path is too long", "--vhost-user",
		   "--repair-path", path);
	assert_bad("--map-host-loopback: 'x'", "--map-host-loopback", "x");
	assert_bad("--dns-forward: 'x'", "--dns-forward", "x");
	assert_bad("--map-guest-addr", "--map-guest-addr", "127.0.0.1");
}

static void test_map_none_values_are_accepted(void **state)
{
	(void)state;
	assert_ok("--map-host-loopback", "none");
	assert_true(c.no_map_gw);
	assert_ok("--map-guest-addr", "none");
}

static void test_migration_options_require_vhost_user(void **state)
{
	(void)state;
	assert_bad("--migrate-exit requires --vhost-user", "--migrate-exit");
	assert_bad("--migrate-no-linger requires --vhost-user",
		   "--migrate-no-linger");
	assert_bad("--repair-path requires --vhost-user", "--repair-path",
		   "/tmp/r");
	assert_bad("--repair-path requires --vhost-user", "--repair-path",
		   "none");
	assert_bad("--migrate-linger-timeout requires --vhost-user",
		   "--migrate-linger-timeout", "5");
	assert_bad("--virtio-compat requires --vhost-user", "--virtio-compat");
}

static void test_virtio_compat_and_no_announce_are_set(void **state)
{
	(void)state;
	assert_ok("--vhost-user");
	assert_false(c.virtio_compat);
	assert_false(c.no_announce);
	assert_ok("--vhost-user", "--virtio-compat", "--no-announce");
	assert_true(c.virtio_compat);
	assert_true(c.no_announce);
	/* Stream mode announces too: QEMU writes its RARP into the socket */
	assert_ok("--no-announce");
	assert_true(c.no_announce);
}

static void test_runas_accepts_numeric_ids(void **state)
{
	(void)state;
	assert_ok("-e", "1234:5678");
	assert_true(c.runas);
	assert_int_equal(c.runas_uid, 1234);
	assert_int_equal(c.runas_gid, 5678);
	assert_ok("--runas", "0");
	assert_int_equal(c.runas_uid, 0);
	assert_int_equal(c.runas_gid, 0);
	assert_ok("--runas", "root:0");
	assert_int_equal(c.runas_uid, 0);
}

static void test_runas_rejects_unknown_names(void **state)
{
	(void)state;
	assert_bad("-e", "-e", "no-such-user-here");
	assert_bad("--runas", "--runas", "0:no-such-group-here");
	assert_bad("-e", "-e", "");
}

static void test_help_and_version_ask_to_exit(void **state)
{
	(void)state;
	fflush(stdout);
	assert_int_equal(parse("--help", NULL), 1);
	assert_int_equal(parse("-h", NULL), 1);
	assert_int_equal(parse("--version", NULL), 1);
	fflush(stdout);
}

static void test_unknown_option_fails_with_its_name(void **state)
{
	(void)state;
	assert_bad("unrecognized option '--bogus'", "--bogus");
	assert_bad("'--bogus'", "--bogus=1");
	assert_bad("invalid option '-x'", "-x");
	assert_bad("invalid option '-x'", "--foreground", "-fx");
}

static void test_missing_argument_fails_with_option_name(void **state)
{
	(void)state;
	assert_bad("'--mtu' requires an argument", "--mtu");
	assert_bad("'-s' requires an argument", "-s");
	assert_bad("'-m' requires an argument", "-fm");
}

static void test_unexpected_argument_to_flag_fails(void **state)
{
	(void)state;
	assert_bad("'--foreground' doesn't allow an argument",
		   "--foreground=yes");
}

static void test_positional_argument_fails(void **state)
{
	(void)state;
	assert_bad("unexpected argument 'extra'", "-f", "extra");
}

static void test_libvirt_command_line_parses(void **state)
{
	(void)state;
	assert_ok("--one-off",
		  "--socket", "/run/libvirt/qemu/passt/1-vm-net0.socket",
		  "--pid", "/run/libvirt/qemu/passt/1-vm-net0-passt.pid",
		  "--mtu", "1400", "--interface", "lo", "--log-file",
		  "/tmp/passt.log", "--hostname", "vm", "--fqdn",
		  "vm.example.com", "--address", "192.0.2.2", "--netmask",
		  "24", "--address", "2001:db8::2", "--tcp-ports", "none");
	assert_true(c.one_off);
	assert_int_equal(c.mtu, 1400);
	assert_int_equal(c.ip4.prefix_len, 24);
}

/* resolv.conf parsing */

static char resolv_path[64];

static void write_resolv(const char *text)
{
	FILE *f;
	int fd;

	strcpy(resolv_path, "/tmp/test_conf_resolv.XXXXXX");
	fd = mkstemp(resolv_path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int resolv_teardown(void **state)
{
	(void)state;
	if (resolv_path[0])
		unlink(resolv_path);
	resolv_path[0] = '\0';
	return 0;
}

static void test_resolv_reads_nameservers_and_search(void **state)
{
	struct in_addr a4;

	(void)state;
	assert_ok("-f");
	write_resolv("# comment\n"
		     "; another\n"
		     "nameserver 192.0.2.53\n"
		     "nameserver 2001:db8::53\n"
		     "nameserver fe80::1%eth0\n"
		     "nameserver 192.0.2.53\n"
		     "options ndots:2\n"
		     "search a.example b.example.\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	inet_pton(AF_INET, "192.0.2.53", &a4);
	assert_int_equal(c.ip4.dns_count, 1);
	assert_int_equal(c.ip4.dns[0].s_addr, a4.s_addr);
	assert_int_equal(c.ip6.dns_count, 1);
	assert_int_equal(c.search_count, 2);
	assert_string_equal(c.search[1].name, "b.example");
}

/* QEMU's -netdev passt maps dns-forward and dns-host to these: queries to
 * the --dns-forward address go to --dns-host, or to the host's first
 * nameserver of that family, loopback ones too, even with -D
 */
static void test_dns_forward_goes_to_dns_host_or_first_nameserver(void **state)
{
	struct in6_addr a6;
	struct in_addr a4;

	(void)state;
	write_resolv("nameserver 2001:db8::53\nnameserver 127.0.0.53\n"
		     "nameserver 192.0.2.53\n");
	assert_ok("--dns-forward", "192.0.2.10", "--dns-forward", "2001:db8::10",
		  "-D", "192.0.2.54");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	inet_pton(AF_INET, "127.0.0.53", &a4);
	assert_int_equal(c.ip4.dns_host.s_addr, a4.s_addr);
	inet_pton(AF_INET6, "2001:db8::53", &a6);
	assert_memory_equal(&c.ip6.dns_host, &a6, sizeof(a6));

	assert_ok("--dns-forward", "192.0.2.10", "--dns-host", "192.0.2.9");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	inet_pton(AF_INET, "192.0.2.9", &a4);
	assert_int_equal(c.ip4.dns_host.s_addr, a4.s_addr);
	assert_bad("--dns-host: 'x'", "--dns-host", "x");
}

/* --freebind, and --fd without a socket path: no repair helper socket
 * unless --repair-path names one (QEMU's -netdev passt,vhost-user=on)
 */
static void test_freebind_and_fd_without_repair_socket(void **state)
{
	char num[16];
	int fd = open("/dev/null", O_RDONLY);

	(void)state;
	assert_ok("--freebind");
	assert_true(c.freebind);
	assert_true(fd >= 0);
	snprintf(num, sizeof(num), "%d", fd);
	assert_ok("--vhost-user", "--fd", num);
	assert_int_equal(c.repair_mode, REPAIR_MODE_NONE);
	assert_ok("--vhost-user", "--fd", num, "--repair-path", "/tmp/x.repair");
	assert_int_equal(c.repair_mode, REPAIR_MODE_HELPER);
	assert_ok("--vhost-user", "-s", "/tmp/x.sock");
	assert_int_equal(c.repair_mode, REPAIR_MODE_HELPER);
	close(fd);
}

static void test_resolv_last_search_or_domain_wins(void **state)
{
	(void)state;
	assert_ok("-f");
	write_resolv("search a.example b.example\ndomain c.example\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.search_count, 1);
	assert_string_equal(c.search[0].name, "c.example");
}

static void test_resolv_keeps_at_most_maxdns(void **state)
{
	(void)state;
	assert_ok("-f");
	write_resolv("nameserver 192.0.2.1\nnameserver 192.0.2.2\n"
		     "nameserver 192.0.2.3\nnameserver 192.0.2.4\n"
		     "nameserver 192.0.2.5\nnameserver bogus\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, MAXDNS);
}

static void test_resolv_loopback_only_announces_gateway(void **state)
{
	struct in_addr gw, lo;

	(void)state;
	assert_ok("-f");
	inet_pton(AF_INET, "192.0.2.1", &gw);
	inet_pton(AF_INET, "127.0.0.53", &lo);
	c.ip4.gw = gw;
	write_resolv("nameserver 127.0.0.53\nnameserver ::1\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, 1);
	assert_int_equal(c.ip4.dns[0].s_addr, gw.s_addr);
	assert_int_equal(c.ip4.dns_match.s_addr, gw.s_addr);
	assert_int_equal(c.ip4.dns_host.s_addr, lo.s_addr);
	/* no IPv6 gateway: nothing to announce */
	assert_int_equal(c.ip6.dns_count, 0);
}

static void test_resolv_loopback_ignored_when_others_exist(void **state)
{
	(void)state;
	assert_ok("-f");
	inet_pton(AF_INET, "192.0.2.1", &c.ip4.gw);
	write_resolv("nameserver 127.0.0.53\nnameserver 192.0.2.53\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, 1);
	assert_int_equal(c.ip4.dns_match.s_addr, 0);
}

static void test_resolv_loopback_without_gateway_gives_none(void **state)
{
	(void)state;
	assert_ok("-f");
	write_resolv("nameserver 127.0.0.1\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, 0);
}

static void test_resolv_leaves_command_line_choices_alone(void **state)
{
	(void)state;
	assert_ok("-D", "198.51.100.1", "-S", "cli.example");
	write_resolv("nameserver 192.0.2.53\nsearch file.example\n");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, 1);
	assert_int_equal(ntohl(c.ip4.dns[0].s_addr), 0xc6336401);
	assert_string_equal(c.search[0].name, "cli.example");
	assert_ok("-D", "none", "-S", "none");
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, 0);
	assert_int_equal(c.search_count, 0);
}

static void test_resolv_survives_long_lines(void **state)
{
	static char text[4096];

	(void)state;
	assert_ok("-f");
	memset(text, 'x', 3000);
	strcpy(text + 3000, "\nnameserver 192.0.2.53\n");
	memcpy(text, "search ", 7);
	write_resolv(text);
	assert_int_equal(resolv_parse(&c, resolv_path), 0);
	assert_int_equal(c.ip4.dns_count, 1);
}

static void test_resolv_missing_file_returns_enoent(void **state)
{
	(void)state;
	assert_ok("-f");
	assert_int_equal(resolv_parse(&c, "/nonexistent/resolv.conf"),
			 -ENOENT);
}

#define T(f) cmocka_unit_test(f)
#define TR(f) cmocka_unit_test_teardown(f, resolv_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_no_options_give_defaults),
		T(test_parse_again_resets_previous_options),
		T(test_socket_path_long_short_and_alias),
		T(test_socket_path_too_long_fails),
		T(test_fd_accepts_open_fd_and_implies_one_off),
		T(test_fd_rejects_closed_or_malformed),
		T(test_fd_and_socket_are_mutually_exclusive),
		T(test_process_flags_are_set),
		T(test_log_size_must_be_a_number),
		T(test_debug_trace_quiet_set_log_level),
		T(test_ipv4_only_and_ipv6_only),
		T(test_ipv4_only_with_ipv6_only_fails),
		T(test_family_only_conflicts_with_other_family_address),
		T(test_address_sets_one_per_family),
		T(test_address_rejects_garbage_twice_and_special),
		T(test_netmask_accepts_prefix_or_dotted),
		T(test_netmask_rejects_bad_values),
		T(test_mac_addr_sets_our_source_mac),
		T(test_mac_addr_rejects_bad_values),
		T(test_gateway_per_family_allows_link_local),
		T(test_gateway_rejects_bad_values),
		T(test_interface_must_exist),
		T(test_outbound_address_and_interfaces),
		T(test_mtu_accepts_range_and_zero),
		T(test_mtu_out_of_range_fails),
		T(test_mtu_below_1280_disables_ipv6),
		T(test_mtu_below_1280_fails_when_ipv6_required),
		T(test_dns_repeated_fills_both_families),
		T(test_dns_more_than_maxdns_fails),
		T(test_dns_none_clears_and_excludes_addresses),
		T(test_dns_rejects_non_addresses),
		T(test_search_splits_list_and_repeats),
		T(test_search_none_clears),
		T(test_search_rejects_bad_domains),
		T(test_hostname_and_fqdn),
		T(test_no_service_switches_are_accepted),
		T(test_ports_none_is_accepted),
		T(test_ports_bad_spec_fails_naming_option),
		T(test_ports_forwarding_is_accepted),
		T(test_pasta_only_options_fail),
		T(test_migration_options_are_accepted),
		T(test_unimplemented_options_validate_values_first),
		T(test_map_none_values_are_accepted),
		T(test_migration_options_require_vhost_user),
		T(test_virtio_compat_and_no_announce_are_set),
		T(test_runas_accepts_numeric_ids),
		T(test_runas_rejects_unknown_names),
		T(test_help_and_version_ask_to_exit),
		T(test_unknown_option_fails_with_its_name),
		T(test_missing_argument_fails_with_option_name),
		T(test_unexpected_argument_to_flag_fails),
		T(test_positional_argument_fails),
		T(test_libvirt_command_line_parses),
		TR(test_resolv_reads_nameservers_and_search),
		TR(test_dns_forward_goes_to_dns_host_or_first_nameserver),
		T(test_freebind_and_fd_without_repair_socket),
		TR(test_resolv_last_search_or_domain_wins),
		TR(test_resolv_keeps_at_most_maxdns),
		TR(test_resolv_loopback_only_announces_gateway),
		TR(test_resolv_loopback_ignored_when_others_exist),
		TR(test_resolv_loopback_without_gateway_gives_none),
		TR(test_resolv_leaves_command_line_choices_alone),
		TR(test_resolv_survives_long_lines),
		TR(test_resolv_missing_file_returns_enoent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
