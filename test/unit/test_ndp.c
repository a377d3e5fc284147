// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_ndp.c - NDP: Router Advertisement contents, which solicitations get
 * answered, and which malformed messages are dropped.
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
#include "net/ndp.h"
#include "net/packet.h"
#include "local/local.h"
#include "tap/tap.h"
#include "util.h"

static const uint8_t our_mac[6] = {0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55};
static const uint8_t guest_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

/* tap_send_ip6() stand-in: remembers the last message */
static struct {
	struct in6_addr src, dst;
	uint8_t proto;
	uint8_t msg[2048];
	size_t len;
	int count;
} sent;

int tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		 const struct in6_addr *dst, uint8_t proto, const void *l4,
		 size_t l4len)
{
	(void)c;
	assert_true(l4len <= sizeof(sent.msg));
	sent.src = *src;
	sent.dst = *dst;
	sent.proto = proto;
	memcpy(sent.msg, l4, l4len);
	sent.len = l4len;
	sent.count++;
	return 0;
}

/* The rest of local/local.c sends frames and IPv4: never for NDP */
int tap_send_frame(struct ctx *c, const void *frame, size_t len)
{
	(void)c, (void)frame, (void)len;
	fail_msg("NDP sent a raw frame");
	return -EIO;
}

int tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		 uint8_t proto, const void *l4, size_t l4len)
{
	(void)c, (void)src, (void)dst, (void)proto, (void)l4, (void)l4len;
	fail_msg("NDP sent an IPv4 packet");
	return -EIO;
}

static struct in6_addr a6(const char *s)
{
	struct in6_addr a;

	assert_int_equal(inet_pton(AF_INET6, s, &a), 1);
	return a;
}

static void ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->our_mac, our_mac, 6);
	c->ifi6_ok = true;
	c->ip6.addr = a6("2001:db8:1:2::15");
	c->ip6.prefix_len = 64;
	c->ip6.our_ll = a6("fe80::1");
	c->ip6.dns[0] = a6("2001:db8::53");
	c->ip6.dns[1] = a6("2001:db8::54");
	c->ip6.dns_count = 2;
	strcpy(c->search[0].name, "example.com");
	strcpy(c->search[1].name, "lab.example.org");
	c->search_count = 2;
	c->mtu = 1500;
	memset(&sent, 0, sizeof(sent));
}

/*
 * Ethernet + IPv6 + ICMPv6 frame; the ICMPv6 checksum is filled in unless
 * @bad_csum. Returns the frame length.
 */
static size_t nd_frame(uint8_t *f, const char *src, const char *dst,
		       uint8_t hlim, const uint8_t *icmp, size_t ilen,
		       int bad_csum)
{
	struct in6_addr s = a6(src), d = a6(dst);
	uint8_t *ip = f + ETH_HDR_LEN, *m = ip + 40;
	uint16_t sum;

	memcpy(f, (uint8_t[]){0x33, 0x33, 0, 0, 0, 2}, 6);
	memcpy(f + 6, guest_mac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	memset(ip, 0, 40);
	ip[0] = 0x60;
	ip[4] = (uint8_t)(ilen >> 8);
	ip[5] = (uint8_t)ilen;
	ip[6] = IPPROTO_ICMPV6;
	ip[7] = hlim;
	memcpy(ip + 8, &s, 16);
	memcpy(ip + 24, &d, 16);
	memcpy(m, icmp, ilen);
	m[2] = m[3] = 0;
	sum = csum(m, ilen,
		   csum_pseudo6(&s, &d, IPPROTO_ICMPV6, (uint32_t)ilen));
	memcpy(m + 2, &sum, 2);
	if (bad_csum)
		m[2] ^= 0x40;
	return ETH_HDR_LEN + 40 + ilen;
}

static void input(struct ctx *c, const char *src, const char *dst, uint8_t hlim,
		  const uint8_t *icmp, size_t ilen, int bad)
{
	static uint8_t f[2048];
	struct pkt p;
	size_t len = nd_frame(f, src, dst, hlim, icmp, ilen, bad);

	assert_int_equal(pkt_parse(f, len, &p), 0);
	local_ndp_input(c, &p);
}

/* Router Solicitation, with a Source Link-Layer Address option if @slla */
static size_t rs(uint8_t *m, int slla)
{
	memset(m, 0, 16);
	m[0] = 133;
	if (!slla)
		return 8;
	m[8] = 1;
	m[9] = 1;
	memcpy(m + 10, guest_mac, 6);
	return 16;
}

/* Neighbor Solicitation for @target, with an SLLA option if @slla */
static size_t ns(uint8_t *m, const char *target, int slla)
{
	struct in6_addr t = a6(target);

	memset(m, 0, 32);
	m[0] = 135;
	memcpy(m + 8, &t, 16);
	if (!slla)
		return 24;
	m[24] = 1;
	m[25] = 1;
	memcpy(m + 26, guest_mac, 6);
	return 32;
}

/* Offset of the first option of @type in an RA, 0 if absent */
static size_t ra_opt(const uint8_t *ra, size_t len, uint8_t type)
{
	size_t off = 16;

	while (off + 2 <= len) {
		assert_int_not_equal(ra[off + 1], 0);
		assert_true(off + ra[off + 1] * 8U <= len);
		if (ra[off] == type)
			return off;
		off += ra[off + 1] * 8U;
	}
	assert_int_equal(off, len);
	return 0;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void test_ra_has_header_flags_and_router_lifetime(void **state)
{
	uint8_t ra[NDP_RA_MAX];
	struct ctx c;
	size_t len;

	(void)state;
	ctx_init(&c);
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_true(len >= 16);
	assert_int_equal(len % 8, 0);
	assert_int_equal(ra[0], 134);
	assert_int_equal(ra[1], 0);
	assert_int_equal(ra[2] | ra[3], 0); /* checksum: tap's job */
	assert_int_equal(ra[4], 64);
	assert_int_equal(ra[5], 0xc0); /* M and O: DHCPv6 is on */
	assert_int_equal(ra[6] << 8 | ra[7], 9000);
	assert_int_equal(be32(ra + 8), 0);
	assert_int_equal(be32(ra + 12), 0);

	c.no_dhcpv6 = true;
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_int_equal(ra[5], 0);
}

static void test_ra_announces_slash64_prefix_for_slaac(void **state)
{
	uint8_t ra[NDP_RA_MAX], prefix[16] = {0};
	struct in6_addr want = a6("2001:db8:1:2::");
	struct ctx c;
	size_t len, o;

	(void)state;
	ctx_init(&c);
	len = ndp_build_ra(&c, ra, sizeof(ra));
	o = ra_opt(ra, len, 3);
	assert_int_not_equal(o, 0);
	assert_int_equal(ra[o + 1], 4);
	assert_int_equal(ra[o + 2], 64);
	assert_int_equal(ra[o + 3], 0xc0); /* on-link, autonomous */
	assert_int_equal(be32(ra + o + 4), 0xffffffff);
	assert_int_equal(be32(ra + o + 8), 0xffffffff);
	memcpy(prefix, &want, 16);
	assert_memory_equal(ra + o + 16, prefix, 16);
}

static void test_ra_carries_our_mac_and_mtu(void **state)
{
	uint8_t ra[NDP_RA_MAX];
	struct ctx c;
	size_t len, o;

	(void)state;
	ctx_init(&c);
	len = ndp_build_ra(&c, ra, sizeof(ra));

	o = ra_opt(ra, len, 1);
	assert_int_not_equal(o, 0);
	assert_int_equal(ra[o + 1], 1);
	assert_memory_equal(ra + o + 2, our_mac, 6);

	o = ra_opt(ra, len, 5);
	assert_int_not_equal(o, 0);
	assert_int_equal(ra[o + 1], 1);
	assert_int_equal(be32(ra + o + 4), 1500);
}

static void test_ra_omits_mtu_when_unset_or_below_ipv6_minimum(void **state)
{
	uint8_t ra[NDP_RA_MAX];
	struct ctx c;
	size_t len;

	(void)state;
	ctx_init(&c);
	c.mtu = 0;
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_int_equal(ra_opt(ra, len, 5), 0);
	c.mtu = 1279;
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_int_equal(ra_opt(ra, len, 5), 0);
}

static void test_ra_lists_nameservers_in_rdnss(void **state)
{
	struct in6_addr d0 = a6("2001:db8::53"), d1 = a6("2001:db8::54");
	uint8_t ra[NDP_RA_MAX];
	struct ctx c;
	size_t len, o;

	(void)state;
	ctx_init(&c);
	len = ndp_build_ra(&c, ra, sizeof(ra));
	o = ra_opt(ra, len, 25);
	assert_int_not_equal(o, 0);
	assert_int_equal(ra[o + 1], 5);
	assert_true(be32(ra + o + 4) >= 3 * 600);
	assert_memory_equal(ra + o + 8, &d0, 16);
	assert_memory_equal(ra + o + 24, &d1, 16);

	c.no_dhcp_dns = true;
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_int_equal(ra_opt(ra, len, 25), 0);

	c.no_dhcp_dns = false;
	c.ip6.dns_count = 0;
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_int_equal(ra_opt(ra, len, 25), 0);
}

static void test_ra_encodes_search_list_in_dnssl(void **state)
{
	static const uint8_t names[] = "\x07"
				       "example"
				       "\x03"
				       "com"
				       "\x00"
				       "\x03"
				       "lab"
				       "\x07"
				       "example"
				       "\x03"
				       "org"
				       "\x00";
	uint8_t ra[NDP_RA_MAX];
	struct ctx c;
	size_t len, o, i;

	(void)state;
	ctx_init(&c);
	len = ndp_build_ra(&c, ra, sizeof(ra));
	o = ra_opt(ra, len, 31);
	assert_int_not_equal(o, 0);
	/* 8 + 13 + 17 = 38 bytes, padded to 40 */
	assert_int_equal(ra[o + 1], 5);
	assert_memory_equal(ra + o + 8, names, sizeof(names) - 1);
	for (i = o + 8 + sizeof(names) - 1; i < o + 40; i++)
		assert_int_equal(ra[i], 0);

	c.no_dhcp_search = true;
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_int_equal(ra_opt(ra, len, 31), 0);
}

static void test_ra_skips_unencodable_and_oversized_domains(void **state)
{
	uint8_t ra[NDP_RA_MAX];
	struct ctx c;
	size_t len, o;
	int i;

	(void)state;
	ctx_init(&c);
	/* A label over 63 characters, an empty label, then long names */
	memset(c.search[0].name, 'a', 64);
	c.search[0].name[64] = '\0';
	strcpy(c.search[1].name, "bad..example");
	for (i = 2; i < MAXDNS_SEARCH; i++) {
		size_t j;

		for (j = 0; j + 64 <= 250; j += 64) {
			memset(c.search[i].name + j, 'b' + i, 63);
			c.search[i].name[j + 63] = '.';
		}
		strcpy(c.search[i].name + j, "end");
	}
	c.search_count = MAXDNS_SEARCH;

	/* 104 bytes before DNSSL: two 197-byte names fit in 600, not three */
	len = ndp_build_ra(&c, ra, 600);
	assert_true(len > 0 && len <= 600);
	o = ra_opt(ra, len, 31);
	assert_int_not_equal(o, 0);
	assert_int_equal(ra[o + 1], (8 + 2 * 197 + 7) / 8);
	/* The first encodable name starts the list */
	assert_int_equal(ra[o + 8], 63);
	assert_int_equal(ra[o + 9], 'b' + 2);
	assert_int_equal(ra[o + 8 + 197 + 1], 'b' + 3);

	/* Never more than NDP_RA_MAX, however large the buffer */
	len = ndp_build_ra(&c, ra, sizeof(ra));
	assert_true(len > 0 && len <= NDP_RA_MAX);

	/* A buffer too small for the mandatory part yields nothing */
	assert_int_equal(ndp_build_ra(&c, ra, 40), 0);
}

static void test_router_address_derived_from_mac_if_none_set(void **state)
{
	struct in6_addr want = a6("fe80::9855:9aff:fe55:9a55"), got;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	memset(&c.ip6.our_ll, 0, sizeof(c.ip6.our_ll));
	ndp_router_addr(&c, &got);
	assert_memory_equal(&got, &want, 16);

	c.ip6.our_ll = a6("fe80::1");
	ndp_router_addr(&c, &got);
	assert_memory_equal(&got, &c.ip6.our_ll, 16);
}

static void test_rs_gets_unicast_ra_and_teaches_guest_ll(void **state)
{
	struct in6_addr guest = a6("fe80::5054:ff:fe12:3456");
	uint8_t m[16];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "fe80::5054:ff:fe12:3456", "ff02::2", 255, m, rs(m, 1), 0);
	assert_int_equal(sent.count, 1);
	assert_int_equal(sent.proto, IPPROTO_ICMPV6);
	assert_int_equal(sent.msg[0], 134);
	assert_memory_equal(&sent.src, &c.ip6.our_ll, 16);
	assert_memory_equal(&sent.dst, &guest, 16);
	assert_memory_equal(&c.ip6.guest_ll, &guest, 16);
}

static void test_rs_from_unspecified_gets_ra_to_all_nodes(void **state)
{
	struct in6_addr all = a6("ff02::1");
	uint8_t m[16];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "::", "ff02::2", 255, m, rs(m, 0), 0);
	assert_int_equal(sent.count, 1);
	assert_memory_equal(&sent.dst, &all, 16);
}

static void test_rs_from_unspecified_with_slla_is_dropped(void **state)
{
	uint8_t m[16];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "::", "ff02::2", 255, m, rs(m, 1), 0);
	assert_int_equal(sent.count, 0);
}

static void test_rs_gets_nothing_with_no_ra_or_no_ndp(void **state)
{
	uint8_t m[16];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	c.no_ra = true;
	input(&c, "fe80::2", "ff02::2", 255, m, rs(m, 1), 0);
	assert_int_equal(sent.count, 0);

	ctx_init(&c);
	c.no_ndp = true;
	input(&c, "fe80::2", "ff02::2", 255, m, rs(m, 1), 0);
	assert_int_equal(sent.count, 0);
}

static void test_ns_gets_na_with_our_mac_and_flags(void **state)
{
	struct in6_addr target = a6("fe80::1"), guest = a6("fe80::2");
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, ns(m, "fe80::1", 1), 0);
	assert_int_equal(sent.count, 1);
	assert_int_equal(sent.len, 32);
	assert_int_equal(sent.msg[0], 136);
	assert_int_equal(sent.msg[1], 0);
	assert_int_equal(sent.msg[4], 0xe0); /* R, S, O */
	assert_memory_equal(sent.msg + 8, &target, 16);
	assert_int_equal(sent.msg[24], 2); /* Target Link-Layer Address */
	assert_int_equal(sent.msg[25], 1);
	assert_memory_equal(sent.msg + 26, our_mac, 6);
	assert_memory_equal(&sent.src, &target, 16);
	assert_memory_equal(&sent.dst, &guest, 16);
}

static void test_ns_for_remote_global_address_is_answered(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "2001:db8:1:2::15", "ff02::1:ff00:99", 255, m,
	      ns(m, "2001:db8:1:2::99", 1), 0);
	assert_int_equal(sent.count, 1);
	assert_int_equal(sent.msg[0], 136);
}

static void test_dad_ns_from_unspecified_is_not_answered(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "::", "ff02::1:ff12:3456", 255, m,
	      ns(m, "fe80::5054:ff:fe12:3456", 0), 0);
	input(&c, "::", "ff02::1:ff00:99", 255, m, ns(m, "2001:db8:1:2::99", 0),
	      0);
	assert_int_equal(sent.count, 0);
}

static void test_ns_for_guest_own_addresses_is_not_answered(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	c.ip6.guest_ll = a6("fe80::2");
	input(&c, "fe80::2", "ff02::1:ff00:15", 255, m,
	      ns(m, "2001:db8:1:2::15", 1), 0);
	input(&c, "2001:db8:1:2::15", "ff02::1:ff00:2", 255, m,
	      ns(m, "fe80::2", 1), 0);
	input(&c, "2001:db8:1:2::77", "ff02::1:ff00:77", 255, m,
	      ns(m, "2001:db8:1:2::77", 1), 0);
	assert_int_equal(sent.count, 0);
}

static void test_ns_for_multicast_target_is_dropped(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "fe80::2", "ff02::1", 255, m, ns(m, "ff02::1", 1), 0);
	assert_int_equal(sent.count, 0);
}

static void test_option_with_zero_length_drops_message(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	ns(m, "fe80::1", 1);
	m[25] = 0;
	input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, 32, 0);
	rs(m, 1);
	m[9] = 0;
	input(&c, "fe80::2", "ff02::2", 255, m, 16, 0);
	assert_int_equal(sent.count, 0);
}

static void test_option_running_past_end_drops_message(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	ns(m, "fe80::1", 1);
	m[25] = 2; /* claims 16 bytes, 8 present */
	input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, 32, 0);
	ns(m, "fe80::1", 1);
	input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, 25, 0);
	assert_int_equal(sent.count, 0);
}

static void test_truncated_ns_and_rs_are_dropped(void **state)
{
	uint8_t m[32];
	struct ctx c;
	size_t l;

	(void)state;
	ctx_init(&c);
	for (l = 2; l < 24; l++) {
		ns(m, "fe80::1", 0);
		input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, l, 0);
	}
	for (l = 2; l < 8; l++) {
		rs(m, 0);
		input(&c, "fe80::2", "ff02::2", 255, m, l, 0);
	}
	assert_int_equal(sent.count, 0);
}

static void test_forwarded_bad_code_or_bad_checksum_dropped(void **state)
{
	uint8_t m[32];
	struct ctx c;

	(void)state;
	ctx_init(&c);
	input(&c, "fe80::2", "ff02::1:ff00:1", 64, m, ns(m, "fe80::1", 1), 0);
	ns(m, "fe80::1", 1);
	m[1] = 1;
	input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, 32, 0);
	input(&c, "fe80::2", "ff02::1:ff00:1", 255, m, ns(m, "fe80::1", 1), 1);
	input(&c, "fe80::2", "ff02::2", 254, m, rs(m, 1), 0);
	assert_int_equal(sent.count, 0);
}

static void test_guest_appearance_triggers_ra_and_timer_repeats(void **state)
{
	struct in6_addr all = a6("ff02::1");
	struct ctx c;

	(void)state;
	ctx_init(&c);
	local_guest_appeared(&c);
	assert_int_equal(sent.count, 1);
	assert_int_equal(sent.msg[0], 134);
	assert_memory_equal(&sent.dst, &all, 16);

	local_timer(&c, now_ms() + 1000);
	assert_int_equal(sent.count, 1);
	local_timer(&c, now_ms() + NDP_RA_INTERVAL_MS + 1000);
	assert_int_equal(sent.count, 2);
}

static void test_no_unsolicited_ra_when_disabled(void **state)
{
	struct ctx c;

	(void)state;
	ctx_init(&c);
	c.no_ra = true;
	local_guest_appeared(&c);
	c.no_ra = false;
	c.no_ndp = true;
	local_guest_appeared(&c);
	c.no_ndp = false;
	c.ifi6_ok = false;
	local_guest_appeared(&c);
	assert_int_equal(sent.count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ra_has_header_flags_and_router_lifetime),
		cmocka_unit_test(test_ra_announces_slash64_prefix_for_slaac),
		cmocka_unit_test(test_ra_carries_our_mac_and_mtu),
		cmocka_unit_test(
			test_ra_omits_mtu_when_unset_or_below_ipv6_minimum),
		cmocka_unit_test(test_ra_lists_nameservers_in_rdnss),
		cmocka_unit_test(test_ra_encodes_search_list_in_dnssl),
		cmocka_unit_test(
			test_ra_skips_unencodable_and_oversized_domains),
		cmocka_unit_test(
			test_router_address_derived_from_mac_if_none_set),
		cmocka_unit_test(test_rs_gets_unicast_ra_and_teaches_guest_ll),
		cmocka_unit_test(test_rs_from_unspecified_gets_ra_to_all_nodes),
		cmocka_unit_test(test_rs_from_unspecified_with_slla_is_dropped),
		cmocka_unit_test(test_rs_gets_nothing_with_no_ra_or_no_ndp),
		cmocka_unit_test(test_ns_gets_na_with_our_mac_and_flags),
		cmocka_unit_test(test_ns_for_remote_global_address_is_answered),
		cmocka_unit_test(test_dad_ns_from_unspecified_is_not_answered),
		cmocka_unit_test(
			test_ns_for_guest_own_addresses_is_not_answered),
		cmocka_unit_test(test_ns_for_multicast_target_is_dropped),
		cmocka_unit_test(test_option_with_zero_length_drops_message),
		cmocka_unit_test(test_option_running_past_end_drops_message),
		cmocka_unit_test(test_truncated_ns_and_rs_are_dropped),
		cmocka_unit_test(
			test_forwarded_bad_code_or_bad_checksum_dropped),
		cmocka_unit_test(
			test_guest_appearance_triggers_ra_and_timer_repeats),
		cmocka_unit_test(test_no_unsolicited_ra_when_disabled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
