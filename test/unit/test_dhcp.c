// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_dhcp.c - DHCPv4 server: replies built by dhcp_build_reply() for
 * hand-made requests, checked option by option; malformed requests get
 * no reply and do not crash.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "net/dhcp.h"

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t cookie[4] = { 99, 130, 83, 99 };

/* A request under construction */
struct req {
	uint8_t b[1024];
	size_t len;
};

static struct in_addr a4(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a;
}

static void ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->ifi4_ok = true;
	c->ip4.addr = a4("192.0.2.10");
	c->ip4.prefix_len = 24;
	c->ip4.gw = a4("192.0.2.1");
	c->ip4.dns[0] = a4("192.0.2.53");
	c->ip4.dns[1] = a4("198.51.100.53");
	c->ip4.dns_count = 2;
	c->mtu = 1500;
	strcpy(c->search[0].name, "example.com");
	strcpy(c->search[1].name, "corp.example.org");
	c->search_count = 2;
	strcpy(c->hostname, "guest");
	memcpy(c->our_mac, "\x9a\x55\x9a\x55\x9a\x55", 6);
}

static void req_init(struct req *r, uint8_t type)
{
	memset(r, 0, sizeof(*r));
	r->b[0] = 1;			/* BOOTREQUEST */
	r->b[1] = 1;			/* Ethernet */
	r->b[2] = 6;
	memcpy(r->b + 4, "\xde\xad\xbe\xef", 4);	/* xid */
	memcpy(r->b + 28, guest_mac, 6);
	memcpy(r->b + 236, cookie, 4);
	r->len = 240;
	r->b[r->len++] = 53;
	r->b[r->len++] = 1;
	r->b[r->len++] = type;
}

static void req_opt(struct req *r, uint8_t code, const void *v, uint8_t len)
{
	r->b[r->len++] = code;
	r->b[r->len++] = len;
	memcpy(r->b + r->len, v, len);
	r->len += len;
}

static void req_end(struct req *r)
{
	r->b[r->len++] = 255;
}

static int build(const struct ctx *c, const struct req *r, uint8_t *out,
		 struct in_addr *dst)
{
	return dhcp_build_reply(c, pv_make(r->b, r->len), out, 1500, dst);
}

/* Find the first instance of option @code in a reply; its length or -1 */
static int reply_opt(const uint8_t *rep, int len, uint8_t code,
		     const uint8_t **val)
{
	int off = 240;

	while (off < len) {
		if (rep[off] == 0) {
			off++;
			continue;
		}
		if (rep[off] == 255)
			return -1;
		assert_true(off + 2 <= len);
		assert_true(off + 2 + rep[off + 1] <= len);
		if (rep[off] == code) {
			*val = rep + off + 2;
			return rep[off + 1];
		}
		off += 2 + rep[off + 1];
	}
	fail_msg("no end option");
	return -1;
}

static uint8_t reply_type(const uint8_t *rep, int len)
{
	const uint8_t *v = NULL;

	assert_int_equal(reply_opt(rep, len, 53, &v), 1);
	return v[0];
}

static void assert_opt(const uint8_t *rep, int len, uint8_t code,
		       const void *exp, int explen)
{
	const uint8_t *v = NULL;

	assert_int_equal(reply_opt(rep, len, code, &v), explen);
	assert_memory_equal(v, exp, explen);
}

static void assert_no_opt(const uint8_t *rep, int len, uint8_t code)
{
	const uint8_t *v = NULL;

	assert_int_equal(reply_opt(rep, len, code, &v), -1);
}

static void discover_gets_offer_with_host_address_and_config(void **state)
{
	static const uint8_t search[] =
		"\x07" "example" "\x03" "com" "\x00"
		"\x04" "corp" "\x07" "example" "\x03" "org" "\x00";
	uint8_t rep[1500], dns[8];
	struct in_addr dst, gw, ip;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 1);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n >= 300);
	assert_int_equal(rep[0], 2);
	assert_memory_equal(rep + 4, "\xde\xad\xbe\xef", 4);
	assert_memory_equal(rep + 28, guest_mac, 6);
	assert_memory_equal(rep + 236, cookie, 4);
	memcpy(&ip, rep + 16, 4);
	assert_int_equal(ip.s_addr, c.ip4.addr.s_addr);
	assert_int_equal(dst.s_addr, htonl(INADDR_BROADCAST));

	gw = c.ip4.gw;
	assert_int_equal(reply_type(rep, n), 2);
	assert_opt(rep, n, 54, &gw, 4);
	assert_opt(rep, n, 51, "\xff\xff\xff\xff", 4);
	assert_opt(rep, n, 1, "\xff\xff\xff\x00", 4);
	assert_opt(rep, n, 3, &gw, 4);
	memcpy(dns, &c.ip4.dns[0], 4);
	memcpy(dns + 4, &c.ip4.dns[1], 4);
	assert_opt(rep, n, 6, dns, 8);
	assert_opt(rep, n, 26, "\x05\xdc", 2);
	assert_opt(rep, n, 119, search, sizeof(search) - 1);
	assert_opt(rep, n, 15, "example.com", 11);
	assert_opt(rep, n, 12, "guest", 5);
	assert_no_opt(rep, n, 121);
	assert_no_opt(rep, n, 81);
}

static void request_for_our_address_gets_ack(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst, ip;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	req_opt(&r, 50, &c.ip4.addr, 4);
	req_opt(&r, 54, &c.ip4.gw, 4);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n >= 300);
	assert_int_equal(reply_type(rep, n), 5);
	memcpy(&ip, rep + 16, 4);
	assert_int_equal(ip.s_addr, c.ip4.addr.s_addr);
	assert_opt(rep, n, 51, "\xff\xff\xff\xff", 4);
	assert_int_equal(dst.s_addr, htonl(INADDR_BROADCAST));
}

static void request_without_address_gets_ack(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	assert_int_equal(reply_type(rep, n), 5);
}

static void request_for_other_address_gets_broadcast_nak(void **state)
{
	static const uint8_t zero[4];
	struct in_addr dst, other = a4("10.0.0.7");
	uint8_t rep[1500];
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	req_opt(&r, 50, &other, 4);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n >= 300);
	assert_int_equal(reply_type(rep, n), 6);
	assert_memory_equal(rep + 16, zero, 4);
	assert_opt(rep, n, 54, &c.ip4.gw, 4);
	assert_no_opt(rep, n, 51);
	assert_no_opt(rep, n, 1);
	assert_int_equal(dst.s_addr, htonl(INADDR_BROADCAST));
}

static void renewing_request_with_other_ciaddr_gets_nak(void **state)
{
	struct in_addr dst, other = a4("192.0.2.99");
	uint8_t rep[1500];
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	memcpy(r.b + 12, &other, 4);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	assert_int_equal(reply_type(rep, n), 6);
}

static void renewing_request_gets_unicast_ack_to_ciaddr(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	memcpy(r.b + 12, &c.ip4.addr, 4);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	assert_int_equal(reply_type(rep, n), 5);
	assert_int_equal(dst.s_addr, c.ip4.addr.s_addr);
	assert_memory_equal(rep + 12, &c.ip4.addr, 4);

	/* Broadcast flag set: broadcast anyway */
	r.b[10] = 0x80;
	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	assert_int_equal(dst.s_addr, htonl(INADDR_BROADCAST));
}

static void request_naming_other_server_gets_no_reply(void **state)
{
	struct in_addr dst, other = a4("192.0.2.2");
	uint8_t rep[1500];
	struct req r;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	req_opt(&r, 50, &c.ip4.addr, 4);
	req_opt(&r, 54, &other, 4);
	req_end(&r);

	assert_int_equal(build(&c, &r, rep, &dst), 0);
}

static void inform_gets_ack_without_yiaddr_or_lease(void **state)
{
	static const uint8_t zero[4];
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 8);
	memcpy(r.b + 12, &c.ip4.addr, 4);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n >= 300);
	assert_int_equal(reply_type(rep, n), 5);
	assert_memory_equal(rep + 16, zero, 4);
	assert_memory_equal(rep + 12, &c.ip4.addr, 4);
	assert_no_opt(rep, n, 51);
	assert_opt(rep, n, 3, &c.ip4.gw, 4);
	assert_int_equal(dst.s_addr, c.ip4.addr.s_addr);
}

static void release_and_decline_get_no_reply(void **state)
{
	uint8_t rep[1500], types[] = { 4, 7, 2, 5, 6, 9, 200 };
	struct in_addr dst;
	struct req r;
	struct ctx c;
	size_t i;

	(void)state;
	ctx_init(&c);
	for (i = 0; i < sizeof(types); i++) {
		req_init(&r, types[i]);
		req_end(&r);
		assert_int_equal(build(&c, &r, rep, &dst), 0);
	}
}

static void no_dhcp_dns_and_no_dhcp_search_omit_options(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	c.no_dhcp_dns = true;
	c.no_dhcp_search = true;
	c.mtu = 0;
	c.hostname[0] = '\0';
	req_init(&r, 1);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	assert_no_opt(rep, n, 6);
	assert_no_opt(rep, n, 119);
	assert_no_opt(rep, n, 15);
	assert_no_opt(rep, n, 26);
	assert_no_opt(rep, n, 12);
	assert_opt(rep, n, 3, &c.ip4.gw, 4);
}

static void mtu_is_clamped_to_option_range(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	req_init(&r, 1);
	req_end(&r);

	c.mtu = 100000;
	n = build(&c, &r, rep, &dst);
	assert_opt(rep, n, 26, "\xff\xff", 2);
	c.mtu = 20;
	n = build(&c, &r, rep, &dst);
	assert_opt(rep, n, 26, "\x00\x44", 2);
}

static void gateway_outside_subnet_is_given_as_classless_routes(void **state)
{
	uint8_t rep[1500], exp[14];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	c.ip4.prefix_len = 32;
	c.ip4.gw = a4("169.254.1.1");
	req_init(&r, 1);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	exp[0] = 32;
	memcpy(exp + 1, &c.ip4.gw, 4);
	memset(exp + 5, 0, 4);
	exp[9] = 0;
	memcpy(exp + 10, &c.ip4.gw, 4);
	assert_opt(rep, n, 121, exp, sizeof(exp));
	assert_opt(rep, n, 1, "\xff\xff\xff\xff", 4);
	assert_no_opt(rep, n, 3);
}

static void server_id_without_gateway_is_not_guest_address(void **state)
{
	struct in_addr sid;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	c.ip4.gw.s_addr = 0;
	sid = dhcp_server_id(&c);
	assert_int_not_equal(sid.s_addr, c.ip4.addr.s_addr);
	assert_int_equal(sid.s_addr, a4("192.0.2.11").s_addr);

	c.ip4.addr = a4("192.0.2.254");
	sid = dhcp_server_id(&c);
	assert_int_equal(sid.s_addr, a4("192.0.2.1").s_addr);
}

static void client_id_is_echoed_and_fqdn_sent_on_request(void **state)
{
	static const uint8_t cid[] = { 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56 };
	static const uint8_t fqdn_exp[] =
		"\x0c\xff\xff\x05guest\x07" "example\x03" "com\x00";
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	strcpy(c.fqdn, "guest.example.com");
	req_init(&r, 1);
	req_opt(&r, 61, cid, sizeof(cid));
	req_opt(&r, 81, "\x00\x00\x00", 3);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n > 0);
	assert_opt(rep, n, 61, cid, sizeof(cid));
	assert_opt(rep, n, 81, fqdn_exp, sizeof(fqdn_exp) - 1);
}

static void reply_fits_default_576_byte_limit(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	int i, n;

	(void)state;
	ctx_init(&c);
	for (i = 0; i < MAXDNS_SEARCH; i++) {
		memset(c.search[i].name, 'a' + i, 60);
		strcpy(c.search[i].name + 60, ".example.com");
	}
	c.search_count = MAXDNS_SEARCH;
	req_init(&r, 1);
	req_end(&r);

	n = build(&c, &r, rep, &dst);
	assert_true(n >= 300 && n <= 576 - 28);
	assert_no_opt(rep, n, 119);
	assert_opt(rep, n, 6, c.ip4.dns, 8);

	/* With a larger client limit, the list is split over instances */
	req_init(&r, 1);
	req_opt(&r, 57, "\x05\xdc", 2);
	req_end(&r);
	n = build(&c, &r, rep, &dst);
	assert_true(n > 576 - 28 && n <= 1500 - 28);
	assert_int_equal(reply_opt(rep, n, 119, &(const uint8_t *){ 0 }), 255);
}

static void dns_name_encode_checks_labels(void **state)
{
	uint8_t out[300];
	char longl[80];

	(void)state;
	assert_int_equal(dhcp_dns_name_encode("a.bc", out, sizeof(out)), 6);
	assert_memory_equal(out, "\x01" "a\x02" "bc\x00", 6);
	assert_int_equal(dhcp_dns_name_encode("a.bc.", out, sizeof(out)), 6);
	assert_int_equal(dhcp_dns_name_encode("", out, sizeof(out)), 1);
	assert_int_equal(dhcp_dns_name_encode("a..b", out, sizeof(out)),
			 -EINVAL);
	memset(longl, 'x', 64);
	longl[64] = '\0';
	assert_int_equal(dhcp_dns_name_encode(longl, out, sizeof(out)),
			 -EINVAL);
	assert_int_equal(dhcp_dns_name_encode("a.bc", out, 3), -ENOSPC);
}

static void malformed_requests_get_no_reply(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;

	(void)state;
	ctx_init(&c);

	/* Truncated header, before the cookie */
	req_init(&r, 1);
	r.len = 200;
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Wrong cookie */
	req_init(&r, 1);
	req_end(&r);
	r.b[236] = 0;
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* BOOTREPLY op, non-Ethernet htype, wrong hlen */
	req_init(&r, 1);
	req_end(&r);
	r.b[0] = 2;
	assert_true(build(&c, &r, rep, &dst) < 0);
	r.b[0] = 1;
	r.b[1] = 6;
	assert_true(build(&c, &r, rep, &dst) < 0);
	r.b[1] = 1;
	r.b[2] = 16;
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Missing message type */
	req_init(&r, 1);
	r.len = 240;
	req_end(&r);
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* No options at all */
	r.len = 240;
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Message type with zero length, and with two bytes */
	req_init(&r, 1);
	r.b[241] = 0;
	r.len = 242;
	req_end(&r);
	assert_true(build(&c, &r, rep, &dst) < 0);
	req_init(&r, 1);
	r.b[241] = 2;
	req_end(&r);
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Option length past the end of the message */
	req_init(&r, 1);
	r.b[r.len++] = 12;
	r.b[r.len++] = 200;
	r.b[r.len++] = 'x';
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Option code as the very last byte, without a length */
	req_init(&r, 1);
	r.b[r.len++] = 12;
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Requested address and server identifier of the wrong size */
	req_init(&r, 3);
	req_opt(&r, 50, "\x01\x02\x03", 3);
	req_end(&r);
	assert_true(build(&c, &r, rep, &dst) < 0);
	req_init(&r, 3);
	req_opt(&r, 54, "\x01\x02\x03\x04\x05", 5);
	req_end(&r);
	assert_true(build(&c, &r, rep, &dst) < 0);

	/* Output buffer too small for the 300-byte minimum */
	req_init(&r, 1);
	req_end(&r);
	assert_true(dhcp_build_reply(&c, pv_make(r.b, r.len), rep, 200,
				     &dst) < 0);
}

static void options_without_end_and_padding_are_accepted(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	req_init(&r, 1);
	r.b[r.len++] = 0;
	r.b[r.len++] = 0;
	assert_true(build(&c, &r, rep, &dst) > 0);

	/* Garbage after the end option is not looked at */
	req_end(&r);
	r.b[r.len++] = 12;
	r.b[r.len++] = 250;
	assert_true(build(&c, &r, rep, &dst) > 0);
}

static void every_truncation_of_a_request_is_handled(void **state)
{
	uint8_t rep[1500];
	struct in_addr dst;
	struct req r;
	struct ctx c;
	size_t full, l;

	(void)state;
	ctx_init(&c);
	req_init(&r, 3);
	req_opt(&r, 50, &c.ip4.addr, 4);
	req_opt(&r, 61, "\x01\x02\x03\x04\x05\x06\x07", 7);
	req_opt(&r, 57, "\x02\x40", 2);
	req_end(&r);
	full = r.len;

	for (l = 0; l <= full; l++) {
		uint8_t *copy = malloc(l ? l : 1); /* exact size for ASan */
		int n;

		assert_non_null(copy);
		memcpy(copy, r.b, l);
		n = dhcp_build_reply(&c, pv_make(copy, l), rep, sizeof(rep),
				     &dst);
		assert_true(n <= 1500);
		assert_true(l == full ? n > 0 : n <= 0 || l >= 240 + 3);
		free(copy);
	}
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(discover_gets_offer_with_host_address_and_config),
	cmocka_unit_test(request_for_our_address_gets_ack),
	cmocka_unit_test(request_without_address_gets_ack),
	cmocka_unit_test(request_for_other_address_gets_broadcast_nak),
	cmocka_unit_test(renewing_request_with_other_ciaddr_gets_nak),
	cmocka_unit_test(renewing_request_gets_unicast_ack_to_ciaddr),
	cmocka_unit_test(request_naming_other_server_gets_no_reply),
	cmocka_unit_test(inform_gets_ack_without_yiaddr_or_lease),
	cmocka_unit_test(release_and_decline_get_no_reply),
	cmocka_unit_test(no_dhcp_dns_and_no_dhcp_search_omit_options),
	cmocka_unit_test(mtu_is_clamped_to_option_range),
	cmocka_unit_test(gateway_outside_subnet_is_given_as_classless_routes),
	cmocka_unit_test(server_id_without_gateway_is_not_guest_address),
	cmocka_unit_test(client_id_is_echoed_and_fqdn_sent_on_request),
	cmocka_unit_test(reply_fits_default_576_byte_limit),
	cmocka_unit_test(dns_name_encode_checks_labels),
	cmocka_unit_test(malformed_requests_get_no_reply),
	cmocka_unit_test(options_without_end_and_padding_are_accepted),
	cmocka_unit_test(every_truncation_of_a_request_is_handled),
};

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
