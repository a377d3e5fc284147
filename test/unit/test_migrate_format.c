// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_migrate_format.c - the version 2 migration stream codec
 * (repair/format.c): byte layout against the offsets of doc/migration.md
 * (section 2, "The wire format"), round trips, every refusal with its
 * errno and reason, truncation at every length, skip records, and the
 * fixtures in test/data/migrate/; how long a stream is as far as its first
 * bytes tell (mig_stream_need(), what bounds the target's buffer), at
 * every prefix length.
 *
 * The fixtures are built here by hand, byte by byte at the documented
 * offsets (not with the encoder under test), and compared with the files.
 * To rewrite the files after a deliberate change:
 *   MIG_FIXTURES_WRITE=1 build/test/unit/test_migrate_format
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repair/format.h"

static void a6(struct in6_addr *a, const char *s)
{
	assert_int_equal(inet_pton(AF_INET6, s, a), 1);
}

/* A guest-initiated flow @n (TAP side 0, HOST side 1), IPv4 or IPv6 */
static void flow_tap_init(struct mig_tcp_basic *b, struct mig_tcp_ext *e,
			  unsigned n, int v4)
{
	memset(b, 0, sizeof(*b));
	memset(e, 0, sizeof(*e));
	b->pif[0] = MIG_PIF_TAP;
	b->pif[1] = MIG_PIF_HOST;
	if (v4) {
		a6(&b->side[0].eaddr, "::ffff:192.0.2.10");
		a6(&b->side[0].oaddr, "::ffff:203.0.113.5");
		a6(&b->side[1].oaddr, "::ffff:198.51.100.2");
		a6(&b->side[1].eaddr, "::ffff:203.0.113.5");
	} else {
		a6(&b->side[0].eaddr, "2001:db8:1:2::15");
		a6(&b->side[0].oaddr, "2001:db8:ff::5");
		a6(&b->side[1].oaddr, "2001:db8:2::2");
		a6(&b->side[1].eaddr, "2001:db8:ff::5");
	}
	b->side[0].eport = (uint16_t)(40000 + n);
	b->side[0].oport = 443;
	b->side[1].oport = (uint16_t)(50000 + n);
	b->side[1].eport = 443;
	b->retries = 1;
	b->ws_from_tap = 7;
	b->ws_to_tap = 8;
	b->events =
		MIG_EV_SOCK_ACCEPTED | MIG_EV_TAP_SYN_RCVD | MIG_EV_ESTABLISHED;
	b->tap_mss = 1460;
	b->sndbuf = 0x123456;
	b->flags = MIG_F_ACK_TO_TAP_DUE;
	b->seq_dup_ack_approx = 0x5a;
	b->wnd_from_tap = 0xfaf0;
	b->wnd_to_tap = 0x1234;
	b->seq_to_tap = 0x11223344 + n;
	b->seq_ack_from_tap = 0x11223300;
	b->seq_from_tap = 0xa1b2c3d4;
	b->seq_ack_to_tap = 0xa1b2c3d0;
	b->seq_init_from_tap = 0xa0000000;

	e->seq_snd = 0x01020304;
	e->seq_rcv = 0x05060708;
	e->sndq = 1200;
	e->notsent = 200;
	e->rcvq = 300;
	e->mss = 1460;
	e->timestamp = 0xdeadbeef;
	e->snd_wl1 = 0x05060000;
	e->snd_wnd = 64240 << 7;
	e->max_window = 64240 << 7;
	e->rcv_wnd = 65535 << 8;
	e->rcv_wup = 0x05060708;
	e->snd_ws = 7;
	e->rcv_ws = 8;
	e->tcpi_state = MIG_TCP_ESTABLISHED;
	e->tcpi_options = MIG_TCPI_OPT_TIMESTAMPS | MIG_TCPI_OPT_SACK |
			  MIG_TCPI_OPT_WSCALE;
}

static uint8_t qbytes[2 * 65536];

static void qinit(void)
{
	size_t i;

	for (i = 0; i < sizeof(qbytes); i++)
		qbytes[i] = (uint8_t)(i * 7 + (i >> 8));
}

static void addrs_init(struct mig_addrs *a)
{
	static const uint8_t mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

	a6(&a->addr6, "2001:db8:1:2::15");
	a6(&a->addr6_ll, "fe80::5054:ff:fe12:3456");
	assert_int_equal(inet_pton(AF_INET, "192.0.2.10", &a->addr4), 1);
	memcpy(a->mac, mac, 6);
}

/* Encode @n flows: queues come from qbytes (send) and qbytes + 65536 */
static void encode(struct mig_buf *out, const struct mig_tcp_basic *b,
		   const struct mig_tcp_ext *e, unsigned n)
{
	struct mig_addrs a;
	unsigned i;

	addrs_init(&a);
	memset(out, 0, sizeof(*out));
	mig_put_header(out);
	mig_put_addrs(out, &a);
	mig_put_count(out, n);
	for (i = 0; i < n; i++)
		mig_put_basic(out, &b[i]);
	for (i = 0; i < n; i++)
		mig_put_ext(out, &e[i], qbytes, qbytes + 65536);
	assert_int_equal(out->err, 0);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Parse, expect @rc, and (on failure) a reason containing @needle */
static void expect(const uint8_t *buf, size_t len, int rc, const char *needle)
{
	struct mig_stream_in s;
	char why[256];
	int got = mig_parse(buf, len, &s, why, sizeof(why));

	if (got != rc || (needle && !strstr(why, needle)))
		fail_msg("got %d \"%s\", want %d \"%s\"", got, why, rc,
			 needle ? needle : "");
	if (rc)
		assert_null(s.flows);
	mig_stream_in_free(&s);
}

static void test_header_bytes_are_magic_and_versions_be(void **state)
{
	static const uint8_t want[16] = {0xb1, 0xbb, 0x1d, 0x1b, 0x0b, 0xb1,
					 0xd1, 0xb0, 0,	   0,	 0,    2,
					 0,    0,    0,	   2};
	struct mig_buf b = {0};

	(void)state;
	mig_put_header(&b);
	assert_int_equal(b.err, 0);
	assert_int_equal(b.len, MIG_HDR_LEN);
	assert_memory_equal(b.p, want, 16);
	mig_buf_free(&b);
	assert_null(b.p);
}

/* The doc's size example, and the offsets of the fields in it */
static void test_size_example_layout_matches_doc(void **state)
{
	struct mig_tcp_basic b;
	struct mig_tcp_ext e;
	struct mig_buf out;
	const uint8_t *r, *x;

	(void)state;
	qinit();
	flow_tap_init(&b, &e, 0, 1);
	e.sndq = 1200; /* 1000 unacked + 200 unsent */
	e.notsent = 200;
	e.rcvq = 300;
	encode(&out, &b, &e, 1);
	assert_int_equal(out.len, 1726);

	/* Addresses at 16: IPv6, link-local, IPv4, MAC */
	assert_int_equal(out.p[16], 0x20);
	assert_int_equal(out.p[17], 0x01);
	assert_int_equal(out.p[32], 0xfe);
	assert_int_equal(out.p[33], 0x80);
	assert_memory_equal(out.p + 48, "\xc0\x00\x02\x0a", 4);
	assert_memory_equal(out.p + 52, "\x52\x54\x00\x12\x34\x56", 6);
	assert_int_equal(be32(out.p + 58), 1);

	r = out.p + 62;
	assert_int_equal(r[0], MIG_PIF_TAP);
	assert_int_equal(r[1], MIG_PIF_HOST);
	/* side[0].oaddr at 2: ::ffff:203.0.113.5 */
	assert_memory_equal(r + 2,
			    "\0\0\0\0\0\0\0\0\0\0\xff\xff\xcb\x00\x71\x05", 16);
	/* side[0].eaddr at 18: ::ffff:192.0.2.10 */
	assert_memory_equal(r + 18 + 10, "\xff\xff\xc0\x00\x02\x0a", 6);
	/* Ports little-endian at flowside offsets 32 and 34 */
	assert_int_equal(r[2 + 32], 443 & 0xff);
	assert_int_equal(r[2 + 33], 443 >> 8);
	assert_int_equal(r[2 + 34], 40000 & 0xff);
	assert_int_equal(r[2 + 35], 40000 >> 8);
	assert_int_equal(r[38 + 32], 50000 & 0xff);
	assert_int_equal(r[38 + 33], 50000 >> 8);
	assert_int_equal(r[38 + 34], 443 & 0xff);
	assert_int_equal(r[74], 1);
	assert_int_equal(r[75], 7);
	assert_int_equal(r[76], 8);
	assert_int_equal(r[77], 0x07);
	assert_int_equal(be32(r + 78), 1460);
	assert_int_equal(be32(r + 82), 0x123456);
	assert_int_equal(r[86], MIG_F_ACK_TO_TAP_DUE);
	assert_int_equal(r[87], 0x5a);
	assert_int_equal(r[88], 0xfa);
	assert_int_equal(r[89], 0xf0);
	assert_int_equal(r[90], 0x12);
	assert_int_equal(be32(r + 92), 0x11223344);
	assert_int_equal(be32(r + 96), 0x11223300);
	assert_int_equal(be32(r + 100), 0xa1b2c3d4);
	assert_int_equal(be32(r + 104), 0xa1b2c3d0);
	assert_int_equal(be32(r + 108), 0xa0000000);

	x = out.p + 62 + 112;
	assert_int_equal(be32(x), 0x01020304);
	assert_int_equal(be32(x + 4), 0x05060708);
	assert_int_equal(be32(x + 8), 1200);
	assert_int_equal(be32(x + 12), 200);
	assert_int_equal(be32(x + 16), 300);
	assert_int_equal(be32(x + 20), 1460);
	assert_int_equal(be32(x + 24), 0xdeadbeef);
	assert_int_equal(be32(x + 28), 0x05060000);
	assert_int_equal(be32(x + 32), 64240 << 7);
	assert_int_equal(be32(x + 36), 64240 << 7);
	assert_int_equal(be32(x + 40), 65535 << 8);
	assert_int_equal(be32(x + 44), 0x05060708);
	assert_int_equal(x[48], 7);
	assert_int_equal(x[49], 8);
	assert_int_equal(x[50], 1);
	assert_int_equal(x[51], 7);
	assert_memory_equal(x + 52, qbytes, 1200);
	assert_memory_equal(x + 52 + 1200, qbytes + 65536, 300);

	expect(out.p, out.len, 0, NULL);
	mig_buf_free(&out);
}

static void test_round_trip_preserves_every_field(void **state)
{
	struct mig_tcp_basic b[4];
	struct mig_tcp_ext e[4];
	struct mig_stream_in s, s2;
	struct mig_buf out, again = {0};
	struct mig_addrs a;
	char why[256];
	unsigned i;

	(void)state;
	qinit();
	for (i = 0; i < 4; i++)
		flow_tap_init(&b[i], &e[i], i, i & 1);
	/* Flow 1 opened from the host side: HOST is side 0 */
	b[1].pif[0] = MIG_PIF_HOST;
	b[1].pif[1] = MIG_PIF_TAP;
	{
		struct mig_flowside t = b[1].side[0];

		b[1].side[0] = b[1].side[1];
		b[1].side[1] = t;
	}
	e[2].sndq = 0;
	e[2].notsent = 0;
	e[2].rcvq = 0;
	e[2].tcpi_state = MIG_TCP_FIN_WAIT2;
	e[3].tcpi_state = MIG_TCP_SKIP;
	e[3].notsent = 99999; /* leftovers: ignored */
	e[0].tcpi_state = MIG_TCP_CLOSE_WAIT;
	e[0].rcv_wnd = MIG_WND_MAX + 1;
	e[1].sndq = 65536;
	e[1].rcvq = 65536;
	e[1].notsent = 65536;

	encode(&out, b, e, 4);
	assert_int_equal(mig_parse(out.p, out.len, &s, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(s.version, 2);
	assert_int_equal(s.used, out.len);
	assert_int_equal(s.count, 4);
	addrs_init(&a);
	assert_memory_equal(&s.addrs.addr6, &a.addr6, 16);
	assert_memory_equal(&s.addrs.addr6_ll, &a.addr6_ll, 16);
	assert_int_equal(s.addrs.addr4.s_addr, a.addr4.s_addr);
	assert_memory_equal(s.addrs.mac, a.mac, 6);

	for (i = 0; i < 4; i++) {
		const struct mig_flow_in *f = &s.flows[i];

		assert_int_equal(f->b.pif[0], b[i].pif[0]);
		assert_int_equal(f->b.side[0].oport, b[i].side[0].oport);
		assert_int_equal(f->b.side[1].eport, b[i].side[1].eport);
		assert_memory_equal(&f->b.side[1].eaddr, &b[i].side[1].eaddr,
				    16);
		assert_int_equal(f->b.sndbuf, b[i].sndbuf);
		assert_int_equal(f->b.wnd_from_tap, b[i].wnd_from_tap);
		assert_int_equal(f->b.seq_init_from_tap,
				 b[i].seq_init_from_tap);
		assert_int_equal(f->e.tcpi_state, e[i].tcpi_state);
		assert_int_equal(f->e.rcv_wnd, e[i].rcv_wnd);
		assert_int_equal(f->e.notsent, e[i].notsent);
		assert_int_equal(f->skip, i == 3);
		if (f->skip) {
			assert_null(f->sndq);
			assert_null(f->rcvq);
			continue;
		}
		assert_memory_equal(f->sndq, qbytes, e[i].sndq);
		assert_memory_equal(f->rcvq, qbytes + 65536, e[i].rcvq);
	}
	assert_int_equal(mig_basic_host_side(&s.flows[0].b), 1);
	assert_int_equal(mig_basic_host_side(&s.flows[1].b), 0);
	assert_int_equal(mig_basic_tap_side(&s.flows[1].b), 1);
	assert_true(mig_basic_is_v4(&s.flows[1].b));
	assert_false(mig_basic_is_v4(&s.flows[0].b));

	/* Encoding the decoded stream gives the same bytes back */
	mig_put_stream(&again, &s);
	assert_int_equal(again.err, 0);
	assert_int_equal(again.len, out.len);
	assert_memory_equal(again.p, out.p, out.len);
	assert_int_equal(mig_parse(again.p, again.len, &s2, NULL, 0), 0);
	assert_true(mig_stream_in_equal(&s, &s2));
	s2.flows[0].b.seq_to_tap++;
	assert_false(mig_stream_in_equal(&s, &s2));

	mig_stream_in_free(&s);
	mig_stream_in_free(&s2);
	assert_null(s.flows);
	mig_buf_free(&out);
	mig_buf_free(&again);
}

static void test_empty_stream_and_trailing_bytes(void **state)
{
	struct mig_stream_in s;
	struct mig_buf out;
	uint8_t *p;

	(void)state;
	encode(&out, NULL, NULL, 0);
	assert_int_equal(out.len, 62);
	assert_int_equal(mig_parse(out.p, out.len, &s, NULL, 0), 0);
	assert_int_equal(s.count, 0);
	assert_null(s.flows);
	mig_stream_in_free(&s);

	/* Trailing bytes are ignored, as upstream does, but not consumed */
	p = calloc(1, out.len + 5);
	memcpy(p, out.p, out.len);
	memset(p + out.len, 0xee, 5);
	assert_int_equal(mig_parse(p, out.len + 5, &s, NULL, 0), 0);
	assert_int_equal(s.used, 62);
	mig_stream_in_free(&s);
	free(p);
	mig_buf_free(&out);
}

static void test_every_truncation_is_refused_with_einval(void **state)
{
	struct mig_tcp_basic b[3];
	struct mig_tcp_ext e[3];
	struct mig_buf out;
	size_t len;
	uint8_t *p;

	(void)state;
	qinit();
	for (len = 0; len < 3; len++)
		flow_tap_init(&b[len], &e[len], (unsigned)len, len != 1);
	e[0].sndq = 30;
	e[0].notsent = 10;
	e[0].rcvq = 20;
	e[1].tcpi_state = MIG_TCP_SKIP;
	e[2].sndq = 0;
	e[2].notsent = 0;
	e[2].rcvq = 7;
	encode(&out, b, e, 3);

	/* An exact-size copy for each length, so ASan sees any over-read */
	for (len = 0; len < out.len; len++) {
		p = malloc(len ? len : 1);
		memcpy(p, out.p, len);
		expect(p, len, -EINVAL, "truncated");
		free(p);
	}
	expect(out.p, out.len, 0, NULL);
	mig_buf_free(&out);
}

static void test_versions_pick_2_or_refuse(void **state)
{
	struct mig_stream_in s;
	struct mig_buf out;
	char why[256];

	(void)state;
	encode(&out, NULL, NULL, 0);

	/* A newer writer compatible back to 2: read as 2 */
	out.p[11] = 3;
	assert_int_equal(mig_parse(out.p, out.len, &s, why, sizeof(why)), 0);
	assert_int_equal(s.version, 2);
	mig_stream_in_free(&s);
	out.p[8] = 0x7f;
	assert_int_equal(mig_parse(out.p, out.len, &s, why, sizeof(why)), 0);
	mig_stream_in_free(&s);
	out.p[8] = 0;

	/* Only newer than 2 */
	out.p[15] = 3;
	expect(out.p, out.len, -ENOTSUP, "unsupported version 3");
	/* Version 1 (native-order MSS, no timestamp) */
	out.p[11] = 1;
	out.p[15] = 1;
	expect(out.p, out.len, -ENOTSUP, "unsupported version 1");
	/* compat above version */
	out.p[11] = 2;
	out.p[15] = 5;
	expect(out.p, out.len, -ENOTSUP, "unsupported");

	out.p[15] = 0;
	expect(out.p, out.len, -EINVAL, "zero version");
	out.p[15] = 2;
	out.p[11] = 0;
	expect(out.p, out.len, -EINVAL, "zero version");
	out.p[11] = 2;
	expect(out.p, out.len, 0, NULL);

	out.p[7] ^= 1;
	expect(out.p, out.len, -EINVAL, "bad magic");
	out.p[7] ^= 1;
	out.p[0] = 0xb0;
	expect(out.p, out.len, -EINVAL, "bad magic");
	mig_buf_free(&out);
}

static void fx_be32(uint8_t *p, uint32_t v);

static void test_limits_are_e2big(void **state)
{
	struct mig_tcp_basic b;
	uint8_t *x;
	struct mig_tcp_ext e;
	struct mig_buf out;

	(void)state;
	encode(&out, NULL, NULL, 0);

	/* Never read: the length alone is refused */
	expect(out.p, (size_t)MIG_STREAM_MAX + 1, -E2BIG, "stream of");

	out.p[58] = 0;
	out.p[59] = 0;
	out.p[60] = 0x80; /* 32768: the limit itself */
	out.p[61] = 0x01;
	expect(out.p, out.len, -E2BIG, "flow count 32769 > 32768");
	out.p[61] = 0x00;
	expect(out.p, out.len, -EINVAL, "truncated: 32768 flows");
	out.p[58] = 0xff;
	expect(out.p, out.len, -E2BIG, "flow count");
	mig_buf_free(&out);

	/* Queue lengths: refused before any data is needed */
	flow_tap_init(&b, &e, 0, 1);
	e.tcpi_state = MIG_TCP_SKIP;
	encode(&out, &b, &e, 1);
	x = out.p + out.len - MIG_EXT_LEN;
	x[50] = MIG_TCP_ESTABLISHED;
	fx_be32(x + 12, 0);		   /* notsent */
	fx_be32(x + 8, MIG_QUEUE_MAX + 1); /* sndq */
	expect(out.p, out.len, -E2BIG, "flow 0: sndq 67108865 > 67108864");
	fx_be32(x + 8, MIG_QUEUE_MAX); /* allowed, but absent */
	expect(out.p, out.len, -EINVAL, "flow 0 send queue");
	fx_be32(x + 8, 0);
	fx_be32(x + 16, MIG_QUEUE_MAX + 1); /* rcvq */
	expect(out.p, out.len, -E2BIG, "flow 0: rcvq 67108865 > 67108864");
	fx_be32(x + 16, 0xffffffff);
	expect(out.p, out.len, -E2BIG, "rcvq");
	mig_buf_free(&out);
}

/* A bad value in flow 1 of two: the reason must name it, and flow 1 */
struct bad {
	const char *name;
	void (*mut)(struct mig_tcp_basic *b, struct mig_tcp_ext *e);
	int rc;
	const char *why;
};

#define MUT(n, body)                                                  \
	static void n(struct mig_tcp_basic *b, struct mig_tcp_ext *e) \
	{                                                             \
		(void)b;                                              \
		(void)e;                                              \
		body;                                                 \
	}

MUT(m_notsent, {
	e[1].sndq = 800;
	e[1].notsent = 900;
})
MUT(m_fin_wait2_sndq, {
	e[1].tcpi_state = MIG_TCP_FIN_WAIT2;
	e[1].sndq = 800;
	e[1].notsent = 0;
})
MUT(m_pif_tap_tap, { b[1].pif[1] = MIG_PIF_TAP; })
MUT(m_pif_host_host, { b[1].pif[0] = MIG_PIF_HOST; })
MUT(m_pif_splice, { b[1].pif[0] = MIG_PIF_SPLICE; })
MUT(m_pif_none, { b[1].pif[1] = MIG_PIF_NONE; })
MUT(m_pif_junk, { b[1].pif[1] = 200; })
MUT(m_ws_from, { b[1].ws_from_tap = 15; })
MUT(m_ws_to, { b[1].ws_to_tap = 255; })
MUT(m_snd_ws, { e[1].snd_ws = 15; })
MUT(m_rcv_ws, { e[1].rcv_ws = 15; })
MUT(m_state_syn_sent, { e[1].tcpi_state = 2; })
MUT(m_state_syn_recv, { e[1].tcpi_state = 3; })
MUT(m_state_time_wait, { e[1].tcpi_state = 6; })
MUT(m_state_close, { e[1].tcpi_state = 7; })
MUT(m_state_listen, { e[1].tcpi_state = 10; })
MUT(m_state_junk, { e[1].tcpi_state = 12; })
MUT(m_events, { b[1].events = MIG_EV_TAP_SYN_RCVD | 0xf8; })
MUT(m_fam_host_e, { a6(&b[1].side[1].eaddr, "2001:db8::1"); })
MUT(m_fam_host_o, { a6(&b[1].side[1].oaddr, "2001:db8::1"); })
MUT(m_fam_tap_e, { a6(&b[1].side[0].eaddr, "2001:db8::1"); })
MUT(m_fam_tap_o, { a6(&b[1].side[0].oaddr, "2001:db8::1"); })
MUT(m_dup_host, {
	b[1] = b[0];
	b[1].side[0].eport++; /* different guest port, same socket */
})
MUT(m_dup_tap, {
	b[1] = b[0];
	b[1].side[1].oport++; /* same guest connection, two sockets */
})
MUT(m_dup_reversed, {
	/* Same host socket, but this time the flow was opened by the host */
	b[1].pif[0] = MIG_PIF_HOST;
	b[1].pif[1] = MIG_PIF_TAP;
	b[1].side[0] = b[0].side[1];
	b[1].side[1] = b[0].side[0];
	b[1].side[1].eport++;
})
MUT(m_max_window, { e[1].max_window = MIG_WND_MAX + 1; })
MUT(m_snd_wnd, { e[1].snd_wnd = 0xffffffff; })
MUT(m_rcv_wnd, { e[1].rcv_wnd = MIG_WND_MAX + 2; })
MUT(m_mss0, { e[1].mss = 0; })
MUT(m_mss_big, { e[1].mss = 65536; })
MUT(m_port_tap_o, { b[1].side[0].oport = 0; })
MUT(m_port_tap_e, { b[1].side[0].eport = 0; })
MUT(m_port_host_o, { b[1].side[1].oport = 0; })
MUT(m_port_host_e, { b[1].side[1].eport = 0; })
MUT(m_retries, { b[1].retries = 8; })
MUT(m_tap_mss, { b[1].tap_mss = 65536; })
MUT(m_sndbuf, { b[1].sndbuf = 1U << 24; })

static const struct bad bads[] = {
	{"notsent", m_notsent, -EINVAL, "flow 1: notsent 900 > sndq 800"},
	{"fin_wait2 with a send queue", m_fin_wait2_sndq, -EINVAL,
	 "flow 1: FIN_WAIT2 with 800 bytes in the send queue"},
	{"tap/tap", m_pif_tap_tap, -EINVAL,
	 "flow 1: interfaces TAP (2) and TAP (2)"},
	{"host/host", m_pif_host_host, -EINVAL,
	 "flow 1: interfaces HOST (1) and HOST (1)"},
	{"splice", m_pif_splice, -EINVAL, "flow 1: interfaces SPLICE"},
	{"none", m_pif_none, -EINVAL, "NONE (0), need one TAP and one HOST"},
	{"junk pif", m_pif_junk, -EINVAL, "invalid (200)"},
	{"ws_from_tap", m_ws_from, -EINVAL, "flow 1: ws_from_tap 15 > 14"},
	{"ws_to_tap", m_ws_to, -EINVAL, "flow 1: ws_to_tap 255 > 14"},
	{"snd_ws", m_snd_ws, -EINVAL, "flow 1: snd_ws 15 > 14"},
	{"rcv_ws", m_rcv_ws, -EINVAL, "flow 1: rcv_ws 15 > 14"},
	{"SYN_SENT", m_state_syn_sent, -EINVAL, "flow 1: TCP state 2"},
	{"SYN_RECV", m_state_syn_recv, -EINVAL, "flow 1: TCP state 3"},
	{"TIME_WAIT", m_state_time_wait, -EINVAL, "flow 1: TCP state 6"},
	{"CLOSE", m_state_close, -EINVAL, "flow 1: TCP state 7"},
	{"LISTEN", m_state_listen, -EINVAL, "flow 1: TCP state 10"},
	{"state 12", m_state_junk, -EINVAL, "flow 1: TCP state 12"},
	{"events", m_events, -EINVAL, "flow 1: events 0xfa lack ESTABLISHED"},
	{"family host eaddr", m_fam_host_e, -EINVAL,
	 "flow 1: address families differ"},
	{"family host oaddr", m_fam_host_o, -EINVAL,
	 "flow 1: address families differ"},
	{"family tap eaddr", m_fam_tap_e, -EINVAL,
	 "flow 1: address families differ"},
	{"family tap oaddr", m_fam_tap_o, -EINVAL,
	 "flow 1: address families differ between sides (TAP side is IPv6)"},
	{"dup host", m_dup_host, -EINVAL,
	 "flow 1: same HOST-side addresses and ports as flow 0"},
	{"dup tap", m_dup_tap, -EINVAL,
	 "flow 1: same TAP-side addresses and ports as flow 0"},
	{"dup host reversed", m_dup_reversed, -EINVAL,
	 "flow 1: same HOST-side"},
	{"max_window", m_max_window, -EINVAL,
	 "flow 1: max_window 1073725441 > 1073725440"},
	{"snd_wnd", m_snd_wnd, -EINVAL, "flow 1: snd_wnd 4294967295"},
	{"rcv_wnd", m_rcv_wnd, -EINVAL, "flow 1: rcv_wnd 1073725442"},
	{"mss 0", m_mss0, -EINVAL, "flow 1: mss 0 not in 1..65535"},
	{"mss 65536", m_mss_big, -EINVAL, "flow 1: mss 65536"},
	{"tap oport", m_port_tap_o, -EINVAL, "flow 1: zero port"},
	{"tap eport", m_port_tap_e, -EINVAL, "flow 1: zero port"},
	{"host oport", m_port_host_o, -EINVAL, "flow 1: zero port"},
	{"host eport", m_port_host_e, -EINVAL, "flow 1: zero port"},
	{"retries", m_retries, -EINVAL, "flow 1: retries 8 > 7"},
	{"tap_mss", m_tap_mss, -EINVAL, "flow 1: tap_mss 65536"},
	{"sndbuf", m_sndbuf, -EINVAL, "flow 1: sndbuf 16777216"},
};

static void test_inconsistent_records_are_refused(void **state)
{
	struct mig_tcp_basic b[2];
	struct mig_tcp_ext e[2];
	struct mig_buf out;
	size_t i;

	(void)state;
	qinit();
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		flow_tap_init(&b[0], &e[0], 0, 1);
		flow_tap_init(&b[1], &e[1], 1, 1);
		bads[i].mut(b, e);
		encode(&out, b, e, 2);
		expect(out.p, out.len, bads[i].rc, bads[i].why);
		/* Without a place for the reason, same verdict */
		{
			struct mig_stream_in s;

			assert_int_equal(mig_parse(out.p, out.len, &s, NULL, 0),
					 bads[i].rc);
		}
		mig_buf_free(&out);
	}

	/* The mutations are really the only thing wrong */
	flow_tap_init(&b[0], &e[0], 0, 1);
	flow_tap_init(&b[1], &e[1], 1, 1);
	encode(&out, b, e, 2);
	expect(out.p, out.len, 0, NULL);
	mig_buf_free(&out);
}

static void test_edge_values_are_accepted(void **state)
{
	static const uint8_t states[] = {1, 4, 5, 8, 9, 11};
	struct mig_tcp_basic b[2];
	struct mig_tcp_ext e[2];
	struct mig_buf out;
	size_t i;

	(void)state;
	qinit();
	for (i = 0; i < sizeof(states); i++) {
		flow_tap_init(&b[0], &e[0], 0, 1);
		flow_tap_init(&b[1], &e[1], 1, 0);
		e[1].tcpi_state = states[i];
		/* Unspecified local address on the HOST side, either family */
		memset(&b[0].side[1].oaddr, 0, 16);
		memset(&b[1].side[1].oaddr, 0, 16);
		b[1].ws_from_tap = b[1].ws_to_tap = 14;
		e[1].snd_ws = e[1].rcv_ws = 14;
		e[1].max_window = e[1].snd_wnd = MIG_WND_MAX;
		e[1].rcv_wnd = MIG_WND_MAX + 1;
		e[1].mss = 65535;
		e[0].mss = 1;
		e[0].notsent = e[0].sndq;
		/* FIN_WAIT2: our FIN acknowledged, nothing to send before it */
		if (states[i] == MIG_TCP_FIN_WAIT2)
			e[1].sndq = e[1].notsent = 0;
		b[1].retries = 7;
		b[1].tap_mss = 65532;
		b[1].sndbuf = 0xffffff;
		b[1].events = 0xff;
		encode(&out, b, e, 2);
		expect(out.p, out.len, 0, NULL);
		mig_buf_free(&out);
	}
}

/* Many flows: the duplicate check sorts them (heapsort, not qsort()) */
static void test_many_flows_duplicates_found_anywhere(void **state)
{
	enum { N = 300 };
	static struct mig_tcp_basic b[N];
	static struct mig_tcp_ext e[N];
	struct mig_buf out;
	unsigned i;

	(void)state;
	qinit();
	for (i = 0; i < N; i++) {
		flow_tap_init(&b[i], &e[i], i, i % 2);
		e[i].sndq = e[i].notsent = e[i].rcvq = 0;
	}
	encode(&out, b, e, N);
	expect(out.p, out.len, 0, NULL);
	mig_buf_free(&out);

	/* The last flow's TAP side is the eighth one's (same family) */
	b[N - 1].side[0] = b[7].side[0];
	encode(&out, b, e, N);
	expect(out.p, out.len, -EINVAL, "flow 299: same TAP-side");
	mig_buf_free(&out);
	b[N - 1].side[0].eport = (uint16_t)(40000 + N - 1);

	/* Flow 150's HOST side is flow 4's */
	b[150].side[1] = b[4].side[1];
	encode(&out, b, e, N);
	expect(out.p, out.len, -EINVAL, "flow 150: same HOST-side");
	mig_buf_free(&out);
}

static void test_skip_record_has_no_data_and_is_not_checked(void **state)
{
	struct mig_tcp_basic b[3];
	struct mig_tcp_ext e[3];
	struct mig_stream_in s;
	struct mig_buf out;
	unsigned i;

	(void)state;
	qinit();
	for (i = 0; i < 3; i++)
		flow_tap_init(&b[i], &e[i], i, 1);
	/* Leftovers that would be refused in a real record */
	e[1].tcpi_state = MIG_TCP_SKIP;
	e[1].sndq = 0xffffffff;
	e[1].notsent = 0xfffffff0;
	e[1].rcvq = 12345678;
	e[1].mss = 0;
	e[1].snd_ws = 200;
	e[1].max_window = 0xffffffff;
	encode(&out, b, e, 3);
	assert_int_equal(out.len, 62 + 3 * 164 + 2 * (1200 + 300));
	assert_int_equal(mig_parse(out.p, out.len, &s, NULL, 0), 0);
	assert_false(s.flows[0].skip);
	assert_true(s.flows[1].skip);
	assert_false(s.flows[2].skip);
	assert_null(s.flows[1].sndq);
	assert_int_equal(s.flows[1].e.sndq, 0xffffffff);
	assert_memory_equal(s.flows[2].sndq, qbytes, 1200);
	assert_memory_equal(s.flows[2].rcvq, qbytes + 65536, 300);
	assert_ptr_equal(s.flows[2].rcvq + 300, out.p + out.len);
	mig_stream_in_free(&s);

	/* The basic record of a skipped flow is still checked */
	b[1].pif[0] = MIG_PIF_HOST;
	mig_buf_free(&out);
	encode(&out, b, e, 3);
	expect(out.p, out.len, -EINVAL, "flow 1: interfaces");
	mig_buf_free(&out);
}

static void test_writer_errors_are_sticky(void **state)
{
	struct mig_tcp_basic b;
	struct mig_tcp_ext e;
	struct mig_buf out = {0};

	(void)state;
	flow_tap_init(&b, &e, 0, 1);
	mig_put_ext(&out, &e, NULL, qbytes);
	assert_int_equal(out.err, -EINVAL);
	assert_int_equal(out.len, 0);
	mig_put_header(&out);
	assert_int_equal(out.len, 0);
	mig_buf_free(&out);

	/* A skip record needs no queues, and gets none */
	e.tcpi_state = MIG_TCP_SKIP;
	mig_put_ext(&out, &e, NULL, NULL);
	assert_int_equal(out.err, 0);
	assert_int_equal(out.len, MIG_EXT_LEN);
	mig_buf_free(&out);
}

static void test_v4_mapped_helper(void **state)
{
	struct in6_addr a;

	(void)state;
	a6(&a, "::ffff:192.0.2.1");
	assert_true(mig_addr_is_v4(&a));
	a6(&a, "::ffff:0.0.0.0");
	assert_true(mig_addr_is_v4(&a));
	a6(&a, "::");
	assert_false(mig_addr_is_v4(&a));
	a6(&a, "::192.0.2.1");
	assert_false(mig_addr_is_v4(&a));
	a6(&a, "2001:db8::ffff:c000:201");
	assert_false(mig_addr_is_v4(&a));
}

/* Fixtures, hand-built at the documented offsets */

struct fx {
	uint8_t p[4096];
	size_t len;
};

static void fx_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void fx_v4(uint8_t *p, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(p, 0, 10);
	p[10] = p[11] = 0xff;
	p[12] = a;
	p[13] = b;
	p[14] = c;
	p[15] = d;
}

static void fx_v6(uint8_t *p, uint16_t last)
{
	memset(p, 0, 16);
	p[0] = 0x20;
	p[1] = 0x01;
	p[2] = 0x0d;
	p[3] = 0xb8;
	p[14] = (uint8_t)(last >> 8);
	p[15] = (uint8_t)last;
}

static void fx_head(struct fx *f, uint32_t count)
{
	static const uint8_t magic[8] = {0xb1, 0xbb, 0x1d, 0x1b,
					 0x0b, 0xb1, 0xd1, 0xb0};
	uint8_t *a = f->p + 16;

	memset(f, 0, sizeof(*f));
	memcpy(f->p, magic, 8);
	fx_be32(f->p + 8, 2);
	fx_be32(f->p + 12, 2);
	fx_v6(a, 0x15);
	a[16] = 0xfe;
	a[17] = 0x80;
	a[31] = 0x15;
	a[32] = 192;
	a[34] = 2;
	a[35] = 10;
	memcpy(a + 36, "\x52\x54\x00\x12\x34\x56", 6);
	fx_be32(f->p + 58, count);
	f->len = 62;
}

/* Basic record @i of a guest-opened flow: guest port 40000 + i, to 443 */
static void fx_basic(struct fx *f, unsigned i, int v4)
{
	uint8_t *r = f->p + 62 + 112 * i;
	uint16_t gport = (uint16_t)(40000 + i), lport = (uint16_t)(50000 + i);

	r[0] = MIG_PIF_TAP;
	r[1] = MIG_PIF_HOST;
	if (v4) {
		fx_v4(r + 2, 203, 0, 113, 5);	/* TAP oaddr */
		fx_v4(r + 18, 192, 0, 2, 10);	/* TAP eaddr */
		fx_v4(r + 38, 198, 51, 100, 2); /* HOST oaddr */
		fx_v4(r + 54, 203, 0, 113, 5);	/* HOST eaddr */
	} else {
		fx_v6(r + 2, 0x5);
		fx_v6(r + 18, 0x15);
		fx_v6(r + 38, 0x2);
		fx_v6(r + 54, 0x5);
	}
	r[2 + 32] = 443 & 0xff; /* ports: little-endian */
	r[2 + 33] = 443 >> 8;
	r[2 + 34] = (uint8_t)gport;
	r[2 + 35] = (uint8_t)(gport >> 8);
	r[38 + 32] = (uint8_t)lport;
	r[38 + 33] = (uint8_t)(lport >> 8);
	r[38 + 34] = 443 & 0xff;
	r[38 + 35] = 443 >> 8;
	r[74] = 0; /* retries */
	r[75] = 7;
	r[76] = 7;
	r[77] = 0x07; /* ESTABLISHED | ... */
	fx_be32(r + 78, 1460);
	fx_be32(r + 82, 87040 >> 8);
	r[86] = 0;
	r[87] = 0x10;
	r[88] = 0x01; /* wnd_from_tap 502 */
	r[89] = 0xf6;
	r[90] = 0x01; /* wnd_to_tap 502 */
	r[91] = 0xf6;
	fx_be32(r + 92, 1000000 + 100 * i);
	fx_be32(r + 96, 1000000 + 100 * i);
	fx_be32(r + 100, 2000000);
	fx_be32(r + 104, 2000000);
	fx_be32(r + 108, 1999000);
}

/* Extended record at the end, then queues of @sndq and @rcvq bytes */
static void fx_ext(struct fx *f, uint8_t state, uint32_t sndq, uint32_t notsent,
		   uint32_t rcvq)
{
	uint8_t *x = f->p + f->len;
	uint32_t k;

	fx_be32(x, 3000000);
	fx_be32(x + 4, 4000000);
	fx_be32(x + 8, sndq);
	fx_be32(x + 12, notsent);
	fx_be32(x + 16, rcvq);
	fx_be32(x + 20, 1448);
	fx_be32(x + 24, 0x00c0ffee);
	fx_be32(x + 28, 4000000);
	fx_be32(x + 32, 64256 << 7);
	fx_be32(x + 36, 64256 << 7);
	fx_be32(x + 40, 65483 << 7);
	fx_be32(x + 44, 4000000);
	x[48] = 7;
	x[49] = 7;
	x[50] = state;
	x[51] = 0x07;
	f->len += 52;
	if (!state)
		return;
	for (k = 0; k < sndq; k++)
		f->p[f->len++] = (uint8_t)('a' + k % 26);
	for (k = 0; k < rcvq; k++)
		f->p[f->len++] = (uint8_t)('A' + k % 26);
}

/* Path of a fixture: next to this source, or found from the binary */
static void fx_path(char *path, size_t size, const char *name)
{
	char exe[PATH_MAX];
	const char *slash = strrchr(__FILE__, '/');
	ssize_t n;

	snprintf(path, size, "%.*s/../data/migrate/%s",
		 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".",
		 name);
	if (!access(path, F_OK) || getenv("MIG_FIXTURES_WRITE"))
		return;
	/* BUILD/test/unit/test_migrate_format: the tree is three up */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(path, size, "%s/../../../test/data/migrate/%s", dirname(exe),
		 name);
}

static void fx_check(const struct fx *f, const char *name)
{
	static uint8_t file[8192];
	char path[PATH_MAX + 64];
	size_t n;
	FILE *fp;

	fx_path(path, sizeof(path), name);
	if (getenv("MIG_FIXTURES_WRITE")) {
		fp = fopen(path, "wb");
		assert_non_null(fp);
		assert_int_equal(fwrite(f->p, 1, f->len, fp), f->len);
		assert_int_equal(fclose(fp), 0);
	}
	fp = fopen(path, "rb");
	if (!fp)
		fail_msg("can't open fixture %s", path);
	n = fread(file, 1, sizeof(file), fp);
	fclose(fp);
	assert_int_equal(n, f->len);
	assert_memory_equal(file, f->p, n);
}

/* fx_rewrites_same() - @s, parsed from @f, written out again is @f, byte
 * for byte; frees @s
 */
static void fx_rewrites_same(const struct fx *f, struct mig_stream_in *s)
{
	struct mig_buf out = {0};

	mig_put_stream(&out, s);
	assert_int_equal(out.len, f->len);
	assert_memory_equal(out.p, f->p, f->len);
	mig_buf_free(&out);
	mig_stream_in_free(s);
}

static void test_fixtures_parse_as_documented(void **state)
{
	struct mig_stream_in s;
	struct fx f;
	char why[256];

	(void)state;
	/* v2-empty.bin: header, addresses, count 0 */
	fx_head(&f, 0);
	fx_check(&f, "v2-empty.bin");
	assert_int_equal(mig_parse(f.p, f.len, &s, why, sizeof(why)), 0);
	assert_int_equal(s.count, 0);
	assert_int_equal(s.addrs.addr4.s_addr, htonl(0xc000020a));
	assert_int_equal(s.addrs.mac[5], 0x56);
	fx_rewrites_same(&f, &s);

	/* v2-one-flow.bin: the size example, 1000 + 200 + 300 bytes */
	fx_head(&f, 1);
	fx_basic(&f, 0, 1);
	f.len += 112;
	fx_ext(&f, MIG_TCP_ESTABLISHED, 1200, 200, 300);
	assert_int_equal(f.len, 1726);
	fx_check(&f, "v2-one-flow.bin");
	assert_int_equal(mig_parse(f.p, f.len, &s, why, sizeof(why)), 0);
	assert_int_equal(s.count, 1);
	assert_true(mig_basic_is_v4(&s.flows[0].b));
	assert_int_equal(s.flows[0].b.side[0].eport, 40000);
	assert_int_equal(s.flows[0].b.side[1].oport, 50000);
	assert_int_equal(s.flows[0].b.side[1].eport, 443);
	assert_int_equal(s.flows[0].b.sndbuf, 87040 >> 8);
	assert_int_equal(s.flows[0].e.notsent, 200);
	assert_int_equal(s.flows[0].e.timestamp, 0x00c0ffee);
	assert_memory_equal(s.flows[0].sndq, "abcdef", 6);
	assert_memory_equal(s.flows[0].rcvq, "ABCDEF", 6);
	fx_rewrites_same(&f, &s);

	/* v2-truncated.bin: the same, cut in the send queue */
	f.len = 1000;
	fx_check(&f, "v2-truncated.bin");
	expect(f.p, f.len, -EINVAL, "flow 0 send queue");

	/* v2-two-flows-skip.bin: an IPv6 flow, then a skipped IPv4 one */
	fx_head(&f, 2);
	fx_basic(&f, 0, 0);
	fx_basic(&f, 1, 1);
	f.len += 2 * 112;
	fx_ext(&f, MIG_TCP_FIN_WAIT1, 11, 11, 5);
	fx_ext(&f, MIG_TCP_SKIP, 0xffff, 0xfffff, 0xffff);
	assert_int_equal(f.len, 62 + 2 * 164 + 16);
	fx_check(&f, "v2-two-flows-skip.bin");
	assert_int_equal(mig_parse(f.p, f.len, &s, why, sizeof(why)), 0);
	assert_int_equal(s.count, 2);
	assert_false(mig_basic_is_v4(&s.flows[0].b));
	assert_false(s.flows[0].skip);
	assert_int_equal(s.flows[0].e.tcpi_state, MIG_TCP_FIN_WAIT1);
	assert_memory_equal(s.flows[0].sndq, "abcdefghijk", 11);
	assert_memory_equal(s.flows[0].rcvq, "ABCDE", 5);
	assert_true(s.flows[1].skip);
	assert_int_equal(s.used, f.len);
	fx_rewrites_same(&f, &s);

	/* v2-notsent-gt-sndq.bin: 900 never sent of an 800-byte queue */
	fx_head(&f, 1);
	fx_basic(&f, 0, 1);
	f.len += 112;
	fx_ext(&f, MIG_TCP_ESTABLISHED, 800, 900, 0);
	fx_check(&f, "v2-notsent-gt-sndq.bin");
	expect(f.p, f.len, -EINVAL, "flow 0: notsent 900 > sndq 800");
}

/*
 * mig_stream_need() at every prefix of @p/@len (a valid stream, possibly
 * with trailing bytes after @end): never more than @end, more than the
 * prefix unless complete, complete exactly at @end; and a reader that
 * reads up to each @need gets there in 3 + 2 x flows steps at most
 */
static void need_walk(const uint8_t *p, size_t len, size_t end)
{
	unsigned steps = 0;
	uint64_t need = 0;
	size_t l;
	int rc;

	for (l = 0; l <= len; l++) {
		rc = mig_stream_need(p, l, &need);
		assert_true(rc == 0 || rc == 1);
		assert_true(need <= end);
		if (rc == 0)
			assert_true(need > l);
		else
			assert_int_equal(need, end);
	}
	for (l = 0; (rc = mig_stream_need(p, l, &need)) == 0; l = need)
		steps++;
	assert_int_equal(rc, 1);
	assert_int_equal(need, end);
	assert_true(steps <= 3 + 2 * be32(p + 58));
}

static void test_stream_need_bounds_the_buffer(void **state)
{
	struct mig_tcp_basic b[3];
	struct mig_tcp_ext e[3];
	struct mig_buf out;
	uint64_t need;
	uint8_t *p;
	unsigned i;

	(void)state;
	qinit();
	/* Nothing yet: the header; then the addresses and the count */
	assert_int_equal(mig_stream_need(NULL, 0, &need), 0);
	assert_int_equal(need, 16);

	/* No flows: 62 bytes, whatever follows them */
	encode(&out, NULL, NULL, 0);
	need_walk(out.p, out.len, 62);
	p = calloc(1, out.len + (1 << 16));
	memcpy(p, out.p, out.len);
	memset(p + out.len, 0xee, 1 << 16);
	assert_int_equal(mig_stream_need(p, out.len + (1 << 16), &need), 1);
	assert_int_equal(need, 62);
	free(p);
	mig_buf_free(&out);

	/* The size example: 1726 bytes */
	flow_tap_init(&b[0], &e[0], 0, 1);
	e[0].sndq = 1200;
	e[0].notsent = 200;
	e[0].rcvq = 300;
	encode(&out, b, e, 1);
	need_walk(out.p, out.len, 1726);
	mig_buf_free(&out);

	/* Three flows, the middle one skipped (no queue bytes) */
	for (i = 0; i < 3; i++) {
		flow_tap_init(&b[i], &e[i], i, i & 1);
		e[i].sndq = 100 * (i + 1);
		e[i].rcvq = 7 * i;
	}
	e[1].tcpi_state = MIG_TCP_SKIP;
	encode(&out, b, e, 3);
	need_walk(out.p, out.len, out.len);
	assert_int_equal(out.len, 62 + 3 * 164 + 100 + 300 + 14);

	/* What no stream we take can start with: refused at once */
	out.p[7] ^= 1;
	assert_int_equal(mig_stream_need(out.p, 16, &need), -EINVAL);
	out.p[7] ^= 1;
	out.p[15] = 3;	/* compat 3: not version 2's layout */
	assert_int_equal(mig_stream_need(out.p, 16, &need), -ENOTSUP);
	out.p[11] = 3;	/* version 3, compat 2: still version 2's */
	out.p[15] = 2;
	assert_int_equal(mig_stream_need(out.p, 16, &need), 0);
	assert_int_equal(need, 62);
	out.p[11] = 2;
	fx_be32(out.p + 58, MIG_FLOWS_MAX + 1);
	assert_int_equal(mig_stream_need(out.p, 62, &need), -E2BIG);
	fx_be32(out.p + 58, MIG_FLOWS_MAX);
	assert_int_equal(mig_stream_need(out.p, 62, &need), 0);
	assert_int_equal(need, 62 + (uint64_t)MIG_FLOWS_MAX * 112 + 52);
	fx_be32(out.p + 58, 3);
	/* The first extended record's send queue, one over the limit */
	fx_be32(out.p + 62 + 3 * 112 + 8, MIG_QUEUE_MAX + 1);
	assert_int_equal(mig_stream_need(out.p, out.len, &need), -E2BIG);
	fx_be32(out.p + 62 + 3 * 112 + 8, MIG_QUEUE_MAX);
	assert_int_equal(mig_stream_need(out.p, out.len, &need), 0);
	assert_int_equal(need, 62 + 3 * 112 + 52 + MIG_QUEUE_MAX + 0 + 52);
	mig_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_bytes_are_magic_and_versions_be),
		cmocka_unit_test(test_size_example_layout_matches_doc),
		cmocka_unit_test(test_round_trip_preserves_every_field),
		cmocka_unit_test(test_empty_stream_and_trailing_bytes),
		cmocka_unit_test(test_every_truncation_is_refused_with_einval),
		cmocka_unit_test(test_versions_pick_2_or_refuse),
		cmocka_unit_test(test_limits_are_e2big),
		cmocka_unit_test(test_inconsistent_records_are_refused),
		cmocka_unit_test(test_edge_values_are_accepted),
		cmocka_unit_test(test_many_flows_duplicates_found_anywhere),
		cmocka_unit_test(
			test_skip_record_has_no_data_and_is_not_checked),
		cmocka_unit_test(test_writer_errors_are_sticky),
		cmocka_unit_test(test_v4_mapped_helper),
		cmocka_unit_test(test_fixtures_parse_as_documented),
		cmocka_unit_test(test_stream_need_bounds_the_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
