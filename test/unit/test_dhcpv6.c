// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_dhcpv6.c - DHCPv6 server: replies built by dhcpv6_build_reply() for
 * hand-made client messages, checked option by option; messages for other
 * servers and malformed messages get no reply and do not crash.
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
#include "net/dhcpv6.h"

static const uint8_t our_mac[6] = { 0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
static const uint8_t our_duid[10] = { 0, 3, 0, 1,
				      0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55 };
static const uint8_t client_duid[10] = { 0, 3, 0, 1,
					 0x52, 0x54, 0, 0x12, 0x34, 0x56 };
static const uint8_t iaid[4] = { 0xca, 0xfe, 0xba, 0xbe };

/* A message under construction; @open: start of an unclosed option */
struct msg {
	uint8_t b[1024];
	size_t len;
	size_t open[4];
	int depth;
};

static struct in6_addr a6(const char *s)
{
	struct in6_addr a;

	assert_int_equal(inet_pton(AF_INET6, s, &a), 1);
	return a;
}

static void ctx_init(struct ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->ifi6_ok = true;
	c->ip6.addr = a6("2001:db8:1:2::10");
	c->ip6.prefix_len = 64;
	c->ip6.our_ll = a6("fe80::1");
	c->ip6.dns[0] = a6("2001:db8::53");
	c->ip6.dns[1] = a6("2001:db8::5353");
	c->ip6.dns_count = 2;
	strcpy(c->search[0].name, "example.com");
	strcpy(c->search[1].name, "corp.example.org");
	c->search_count = 2;
	memcpy(c->our_mac, our_mac, 6);
}

static void put(struct msg *m, const void *v, size_t len)
{
	if (!len)
		return;
	memcpy(m->b + m->len, v, len);
	m->len += len;
}

static void put16(struct msg *m, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	put(m, b, 2);
}

static void put32(struct msg *m, uint32_t v)
{
	put16(m, (uint16_t)(v >> 16));
	put16(m, (uint16_t)v);
}

static void opt(struct msg *m, uint16_t code, const void *v, uint16_t len)
{
	put16(m, code);
	put16(m, len);
	put(m, v, len);
}

static void opt_open(struct msg *m, uint16_t code)
{
	m->open[m->depth++] = m->len;
	put16(m, code);
	put16(m, 0);
}

static void opt_close(struct msg *m)
{
	size_t s = m->open[--m->depth];
	size_t len = m->len - s - 4;

	m->b[s + 2] = (uint8_t)(len >> 8);
	m->b[s + 3] = (uint8_t)len;
}

static void msg_init(struct msg *m, uint8_t type)
{
	memset(m, 0, sizeof(*m));
	m->b[0] = type;
	memcpy(m->b + 1, "\x12\x34\x56", 3);
	m->len = 4;
}

static void add_client_id(struct msg *m)
{
	opt(m, 1, client_duid, sizeof(client_duid));
}

static void add_ia_na(struct msg *m, const struct in6_addr *addr)
{
	opt_open(m, 3);
	put(m, iaid, 4);
	put32(m, 0);
	put32(m, 0);
	if (addr) {
		opt_open(m, 5);
		put(m, addr, 16);
		put32(m, 0);
		put32(m, 0);
		opt_close(m);
	}
	opt_close(m);
}

static int build(const struct ctx *c, const struct msg *m, uint8_t *out)
{
	return dhcpv6_build_reply(c, pv_make(m->b, m->len), out, 1500);
}

/* First option @code in [@start, @end) of @b; its length or -1 */
static int find_opt(const uint8_t *b, size_t start, size_t end,
		    uint16_t code, const uint8_t **val)
{
	size_t off = start;

	while (off < end) {
		uint16_t c, l;

		assert_true(off + 4 <= end);
		c = (uint16_t)(b[off] << 8 | b[off + 1]);
		l = (uint16_t)(b[off + 2] << 8 | b[off + 3]);
		assert_true(off + 4 + l <= end);
		if (c == code) {
			*val = b + off + 4;
			return l;
		}
		off += 4 + (size_t)l;
	}
	return -1;
}

static int reply_opt(const uint8_t *rep, int n, uint16_t code,
		     const uint8_t **val)
{
	return find_opt(rep, 4, (size_t)n, code, val);
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void assert_no_opt(const uint8_t *rep, int n, uint16_t code)
{
	const uint8_t *v = NULL;

	assert_int_equal(reply_opt(rep, n, code, &v), -1);
}

/* Server ID, Client ID and transaction ID of a valid reply */
static void assert_reply_ids(const uint8_t *rep, int n, uint8_t type)
{
	const uint8_t *v = NULL;

	assert_true(n >= 4);
	assert_int_equal(rep[0], type);
	assert_memory_equal(rep + 1, "\x12\x34\x56", 3);
	assert_int_equal(reply_opt(rep, n, 2, &v), (int)sizeof(our_duid));
	assert_memory_equal(v, our_duid, sizeof(our_duid));
	assert_int_equal(reply_opt(rep, n, 1, &v), (int)sizeof(client_duid));
	assert_memory_equal(v, client_duid, sizeof(client_duid));
}

static void assert_config(const struct ctx *c, const uint8_t *rep, int n)
{
	static const uint8_t search[] =
		"\x07" "example" "\x03" "com" "\x00"
		"\x04" "corp" "\x07" "example" "\x03" "org" "\x00";
	const uint8_t *v = NULL;

	assert_int_equal(reply_opt(rep, n, 23, &v), 32);
	assert_memory_equal(v, c->ip6.dns, 32);
	assert_int_equal(reply_opt(rep, n, 24, &v), (int)sizeof(search) - 1);
	assert_memory_equal(v, search, sizeof(search) - 1);
}

/* The IA_NA in the reply carries our IAID and the host's address */
static void assert_ia_na_address(const struct ctx *c, const uint8_t *rep,
				 int n)
{
	const uint8_t *ia = NULL, *addr = NULL;
	int l;

	l = reply_opt(rep, n, 3, &ia);
	assert_true(l >= 12 + 4 + 24);
	assert_memory_equal(ia, iaid, 4);
	assert_memory_equal(ia + 4, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
	assert_int_equal(find_opt(ia, 12, (size_t)l, 5, &addr), 24);
	assert_memory_equal(addr, &c->ip6.addr, 16);
	assert_memory_equal(addr + 16, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
}

static uint16_t reply_status(const uint8_t *rep, int n)
{
	const uint8_t *v = NULL;

	assert_true(reply_opt(rep, n, 13, &v) >= 2);
	return be16(v);
}

static void solicit_gets_advertise_with_address_and_config(void **state)
{
	uint8_t rep[1500];
	const uint8_t *v = NULL;
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 1);
	add_client_id(&m);
	opt(&m, 8, "\x00\x00", 2);
	add_ia_na(&m, NULL);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 2);
	assert_ia_na_address(&c, rep, n);
	assert_config(&c, rep, n);
	assert_int_equal(reply_opt(rep, n, 7, &v), 1);
	assert_int_equal(v[0], 255);
	assert_no_opt(rep, n, 14);
	assert_no_opt(rep, n, 39);
}

static void rapid_commit_solicit_gets_reply_with_rapid_commit(void **s)
{
	uint8_t rep[1500];
	const uint8_t *v = NULL;
	struct msg m;
	struct ctx c;
	int n;

	(void)s;
	ctx_init(&c);
	msg_init(&m, 1);
	add_client_id(&m);
	opt(&m, 14, NULL, 0);
	add_ia_na(&m, NULL);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_int_equal(reply_opt(rep, n, 14, &v), 0);
	assert_ia_na_address(&c, rep, n);
	assert_no_opt(rep, n, 7);
}

static void solicit_naming_a_server_is_ignored(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 1);
	add_client_id(&m);
	opt(&m, 2, our_duid, sizeof(our_duid));
	add_ia_na(&m, NULL);
	assert_int_equal(build(&c, &m, rep), 0);
}

static void request_renew_rebind_with_our_server_id_get_reply(void **state)
{
	uint8_t types[] = { 3, 5, 6 };
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	size_t i;
	int n;

	(void)state;
	ctx_init(&c);
	for (i = 0; i < sizeof(types); i++) {
		msg_init(&m, types[i]);
		add_client_id(&m);
		if (types[i] != 6)	/* REBIND goes to any server */
			opt(&m, 2, our_duid, sizeof(our_duid));
		add_ia_na(&m, &c.ip6.addr);

		n = build(&c, &m, rep);
		assert_reply_ids(rep, n, 7);
		assert_ia_na_address(&c, rep, n);
		assert_config(&c, rep, n);
	}
}

static void request_with_wrong_or_missing_server_id_is_ignored(void **s)
{
	uint8_t other[10], rep[1500];
	struct msg m;
	struct ctx c;

	(void)s;
	ctx_init(&c);
	memcpy(other, our_duid, sizeof(other));
	other[9] ^= 1;

	msg_init(&m, 3);
	add_client_id(&m);
	opt(&m, 2, other, sizeof(other));
	add_ia_na(&m, NULL);
	assert_int_equal(build(&c, &m, rep), 0);

	msg_init(&m, 3);
	add_client_id(&m);
	add_ia_na(&m, NULL);
	assert_int_equal(build(&c, &m, rep), 0);

	/* Same for RENEW, RELEASE, DECLINE */
	m.b[0] = 5;
	assert_int_equal(build(&c, &m, rep), 0);
	m.b[0] = 8;
	assert_int_equal(build(&c, &m, rep), 0);
	m.b[0] = 9;
	assert_int_equal(build(&c, &m, rep), 0);
}

static void information_request_gets_config_without_ia(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 11);
	add_client_id(&m);
	opt(&m, 6, "\x00\x17\x00\x18", 4);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_config(&c, rep, n);
	assert_no_opt(rep, n, 3);
	assert_no_opt(rep, n, 13);
}

static void information_request_without_client_id_gets_reply(void **state)
{
	uint8_t rep[1500];
	const uint8_t *v = NULL;
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 11);

	n = build(&c, &m, rep);
	assert_true(n > 0);
	assert_int_equal(rep[0], 7);
	assert_int_equal(reply_opt(rep, n, 1, &v), -1);
	assert_int_equal(reply_opt(rep, n, 2, &v), (int)sizeof(our_duid));
}

static void information_request_with_ia_is_ignored(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 11);
	add_client_id(&m);
	add_ia_na(&m, NULL);
	assert_int_equal(build(&c, &m, rep), 0);
}

static void no_dhcp_dns_and_no_dhcp_search_omit_options(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	c.no_dhcp_dns = true;
	c.no_dhcp_search = true;
	msg_init(&m, 11);
	add_client_id(&m);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_no_opt(rep, n, 23);
	assert_no_opt(rep, n, 24);
}

static void confirm_of_on_link_address_gets_success(void **state)
{
	struct in6_addr a = a6("2001:db8:1:2::abcd");
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 4);
	add_client_id(&m);
	add_ia_na(&m, &a);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_int_equal(reply_status(rep, n), 0);
	assert_no_opt(rep, n, 3);
}

static void confirm_of_off_link_address_gets_not_on_link(void **state)
{
	struct in6_addr a = a6("2001:db8:1:3::10");
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 4);
	add_client_id(&m);
	add_ia_na(&m, &c.ip6.addr);
	add_ia_na(&m, &a);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_int_equal(reply_status(rep, n), 4);
}

static void confirm_without_addresses_gets_no_reply(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 4);
	add_client_id(&m);
	add_ia_na(&m, NULL);
	assert_int_equal(build(&c, &m, rep), 0);
}

static void release_and_decline_get_success(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 8);
	add_client_id(&m);
	opt(&m, 2, our_duid, sizeof(our_duid));
	add_ia_na(&m, &c.ip6.addr);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_int_equal(reply_status(rep, n), 0);

	m.b[0] = 9;
	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 7);
	assert_int_equal(reply_status(rep, n), 0);
}

static void ia_ta_and_second_ia_na_get_no_addrs_avail(void **state)
{
	const uint8_t *ia = NULL, *st = NULL;
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	size_t off;
	int n, l, na = 0, ta = 0;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 1);
	add_client_id(&m);
	add_ia_na(&m, NULL);
	add_ia_na(&m, NULL);
	opt(&m, 4, iaid, 4);

	n = build(&c, &m, rep);
	assert_reply_ids(rep, n, 2);

	/* Walk all IAs in the reply */
	for (off = 4; off < (size_t)n;) {
		uint16_t code = be16(rep + off);

		l = be16(rep + off + 2);
		ia = rep + off + 4;
		if (code == 3 && na++ == 1) {
			assert_int_equal(find_opt(ia, 12, (size_t)l, 13, &st),
					 2 + (int)strlen("one address only"));
			assert_int_equal(be16(st), 2);
			assert_int_equal(find_opt(ia, 12, (size_t)l, 5, &st),
					 -1);
		} else if (code == 4) {
			ta++;
			assert_memory_equal(ia, iaid, 4);
			assert_true(find_opt(ia, 4, (size_t)l, 13, &st) >= 2);
			assert_int_equal(be16(st), 2);
		}
		off += 4 + (size_t)l;
	}
	assert_int_equal(na, 2);
	assert_int_equal(ta, 1);
	assert_ia_na_address(&c, rep, n);
}

static void fqdn_is_sent_when_client_asks(void **state)
{
	static const uint8_t exp[] = "\x04\x05guest\x07" "example\x03" "com";
	uint8_t rep[1500];
	const uint8_t *v = NULL;
	struct msg m;
	struct ctx c;
	int n;

	(void)state;
	ctx_init(&c);
	strcpy(c.fqdn, "guest.example.com");
	msg_init(&m, 11);
	opt(&m, 39, "\x01\x00", 2);

	n = build(&c, &m, rep);
	assert_true(n > 0);
	assert_int_equal(reply_opt(rep, n, 39, &v), (int)sizeof(exp));
	assert_memory_equal(v, exp, sizeof(exp));
}

static void server_messages_get_no_reply(void **state)
{
	uint8_t types[] = { 2, 7, 10, 12, 13, 0, 255 };
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	size_t i;

	(void)state;
	ctx_init(&c);
	for (i = 0; i < sizeof(types); i++) {
		msg_init(&m, types[i]);
		add_client_id(&m);
		assert_int_equal(build(&c, &m, rep), 0);
	}
}

static void malformed_messages_get_no_reply(void **state)
{
	uint8_t big[200], rep[1500];
	struct msg m;
	struct ctx c;

	(void)state;
	ctx_init(&c);

	/* Truncated header */
	msg_init(&m, 1);
	m.len = 3;
	assert_true(build(&c, &m, rep) < 0);

	/* Solicit without Client ID */
	msg_init(&m, 1);
	add_ia_na(&m, NULL);
	assert_true(build(&c, &m, rep) <= 0);

	/* Option length past the end */
	msg_init(&m, 1);
	add_client_id(&m);
	put16(&m, 6);
	put16(&m, 40);
	put16(&m, 23);
	assert_true(build(&c, &m, rep) < 0);

	/* Truncated option header */
	msg_init(&m, 1);
	add_client_id(&m);
	put16(&m, 6);
	put(&m, "\x00", 1);
	assert_true(build(&c, &m, rep) < 0);

	/* Client ID empty, too short, and too long */
	msg_init(&m, 1);
	opt(&m, 1, NULL, 0);
	assert_true(build(&c, &m, rep) < 0);
	msg_init(&m, 1);
	opt(&m, 1, "\x00\x01", 2);
	assert_true(build(&c, &m, rep) < 0);
	memset(big, 7, sizeof(big));
	msg_init(&m, 1);
	opt(&m, 1, big, sizeof(big));
	assert_true(build(&c, &m, rep) < 0);

	/* Rapid Commit with a value */
	msg_init(&m, 1);
	add_client_id(&m);
	opt(&m, 14, "x", 1);
	assert_true(build(&c, &m, rep) < 0);

	/* IA_NA shorter than its fixed part */
	msg_init(&m, 1);
	add_client_id(&m);
	opt(&m, 3, iaid, 4);
	assert_true(build(&c, &m, rep) < 0);

	/* IA Address nested in IA_NA, lying about its length */
	msg_init(&m, 4);
	add_client_id(&m);
	add_ia_na(&m, &c.ip6.addr);
	m.b[4 + 14 + 4 + 12 + 3] = 60;	/* IAADDR length */
	assert_true(build(&c, &m, rep) < 0);

	/* IA Address too short for an address */
	msg_init(&m, 4);
	add_client_id(&m);
	opt_open(&m, 3);
	put(&m, iaid, 4);
	put32(&m, 0);
	put32(&m, 0);
	opt(&m, 5, &c.ip6.addr, 16);
	opt_close(&m);
	assert_true(build(&c, &m, rep) < 0);

	/* Status code in IA Address running past it */
	msg_init(&m, 3);
	add_client_id(&m);
	opt(&m, 2, our_duid, sizeof(our_duid));
	opt_open(&m, 3);
	put(&m, iaid, 4);
	put32(&m, 0);
	put32(&m, 0);
	opt_open(&m, 5);
	put(&m, &c.ip6.addr, 16);
	put32(&m, 0);
	put32(&m, 0);
	put16(&m, 13);
	put16(&m, 10);
	put16(&m, 0);
	opt_close(&m);
	opt_close(&m);
	assert_true(build(&c, &m, rep) < 0);
}

static void reply_that_does_not_fit_is_refused(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 1);
	add_client_id(&m);
	add_ia_na(&m, NULL);
	assert_int_equal(dhcpv6_build_reply(&c, pv_make(m.b, m.len), rep, 30),
			 -ENOSPC);
}

static void every_truncation_of_a_message_is_handled(void **state)
{
	uint8_t rep[1500];
	struct msg m;
	struct ctx c;
	size_t l;

	(void)state;
	ctx_init(&c);
	msg_init(&m, 4);
	add_client_id(&m);
	add_ia_na(&m, &c.ip6.addr);
	opt(&m, 8, "\x00\x00", 2);

	for (l = 0; l <= m.len; l++) {
		uint8_t *copy = malloc(l ? l : 1); /* exact size for ASan */
		int n;

		assert_non_null(copy);
		memcpy(copy, m.b, l);
		n = dhcpv6_build_reply(&c, pv_make(copy, l), rep,
				       sizeof(rep));
		assert_true(n <= (int)sizeof(rep));
		if (l == m.len)
			assert_true(n > 0);
		free(copy);
	}
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(solicit_gets_advertise_with_address_and_config),
	cmocka_unit_test(rapid_commit_solicit_gets_reply_with_rapid_commit),
	cmocka_unit_test(solicit_naming_a_server_is_ignored),
	cmocka_unit_test(request_renew_rebind_with_our_server_id_get_reply),
	cmocka_unit_test(request_with_wrong_or_missing_server_id_is_ignored),
	cmocka_unit_test(information_request_gets_config_without_ia),
	cmocka_unit_test(information_request_without_client_id_gets_reply),
	cmocka_unit_test(information_request_with_ia_is_ignored),
	cmocka_unit_test(no_dhcp_dns_and_no_dhcp_search_omit_options),
	cmocka_unit_test(confirm_of_on_link_address_gets_success),
	cmocka_unit_test(confirm_of_off_link_address_gets_not_on_link),
	cmocka_unit_test(confirm_without_addresses_gets_no_reply),
	cmocka_unit_test(release_and_decline_get_success),
	cmocka_unit_test(ia_ta_and_second_ia_na_get_no_addrs_avail),
	cmocka_unit_test(fqdn_is_sent_when_client_asks),
	cmocka_unit_test(server_messages_get_no_reply),
	cmocka_unit_test(malformed_messages_get_no_reply),
	cmocka_unit_test(reply_that_does_not_fit_is_refused),
	cmocka_unit_test(every_truncation_of_a_message_is_handled),
};

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
