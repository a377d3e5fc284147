// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_packet.c - the frame parser and its bounds-checked views: what is
 * accepted, what every truncation and every lying length field gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "net/packet.h"

static uint8_t frame[256];

/* Ethernet + IPv4 (20-byte header) + UDP 1234 -> 53 with @plen payload */
static size_t build_udp4(size_t plen)
{
	uint16_t tot = (uint16_t)(20 + 8 + plen), ulen = (uint16_t)(8 + plen);
	uint8_t *ip = frame + 14, *udp = ip + 20;

	memset(frame, 0, sizeof(frame));
	memset(frame, 0xff, 6);
	frame[6] = 0x52;
	frame[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = tot >> 8;
	ip[3] = tot & 0xff;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	ip[12] = 192, ip[13] = 0, ip[14] = 2, ip[15] = 2;
	ip[16] = 203, ip[17] = 0, ip[18] = 113, ip[19] = 7;
	udp[0] = 1234 >> 8;
	udp[1] = 1234 & 0xff;
	udp[3] = 53;
	udp[4] = ulen >> 8;
	udp[5] = ulen & 0xff;
	memset(udp + 8, 'x', plen);
	return 14 + tot;
}

/* Ethernet + IPv6 + @ext bytes of hop-by-hop options + ICMPv6 echo */
static size_t build_icmp6(size_t ext)
{
	uint8_t *ip = frame + 14, *l4 = ip + 40 + ext;
	uint16_t plen = (uint16_t)(ext + 8);

	memset(frame, 0, sizeof(frame));
	frame[12] = 0x86;
	frame[13] = 0xdd;
	ip[0] = 0x60;
	ip[4] = plen >> 8;
	ip[5] = plen & 0xff;
	ip[6] = ext ? 0 : IPPROTO_ICMPV6;
	ip[7] = 255;
	ip[8] = 0x20, ip[9] = 0x01, ip[10] = 0x0d, ip[11] = 0xb8;
	ip[23] = 2;
	ip[24] = 0x20, ip[25] = 0x01, ip[26] = 0x0d, ip[27] = 0xb8;
	ip[39] = 7;
	if (ext) {
		ip[40] = IPPROTO_ICMPV6;
		ip[41] = (uint8_t)(ext / 8 - 1);
	}
	l4[0] = 128;
	return 14 + 40 + plen;
}

static void test_pv_at_refuses_anything_past_the_end(void **state)
{
	uint8_t b[10] = { 0 };
	struct pview v = pv_make(b, sizeof(b));
	uint16_t u16;
	uint32_t u32;

	(void)state;
	assert_non_null(pv_at(v, 0, 10));
	assert_non_null(pv_at(v, 10, 0));
	assert_null(pv_at(v, 0, 11));
	assert_null(pv_at(v, 11, 0));
	assert_null(pv_at(v, 9, 2));
	assert_null(pv_at(v, 2, SIZE_MAX));
	assert_null(pv_at(v, SIZE_MAX, 2));
	assert_false(pv_be16(v, 9, &u16));
	assert_false(pv_be32(v, 7, &u32));
	assert_true(pv_be32(v, 6, &u32));
	assert_int_equal(pv_sub(v, 8, 3).len, 0);
	assert_null(pv_sub(v, 8, 3).p);
	assert_int_equal(pv_tail(v, 11).len, 0);
	assert_int_equal(pv_tail(v, 4).len, 6);
}

static void test_pv_reads_big_endian(void **state)
{
	uint8_t b[4] = { 0x12, 0x34, 0x56, 0x78 };
	struct pview v = pv_make(b, sizeof(b));
	uint16_t u16;
	uint32_t u32;

	(void)state;
	assert_true(pv_be16(v, 1, &u16));
	assert_int_equal(u16, 0x3456);
	assert_true(pv_be32(v, 0, &u32));
	assert_int_equal(u32, 0x12345678);
}

static void test_udp4_frame_is_parsed(void **state)
{
	size_t len = build_udp4(5);
	uint16_t sport, dport;
	struct pview payload;
	struct pkt p;

	(void)state;
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_int_equal(p.ethertype, ETHTYPE_IP);
	assert_int_equal(p.family, AF_INET);
	assert_int_equal(p.proto, IPPROTO_UDP);
	assert_int_equal(p.src4.s_addr, htonl(0xc0000202));
	assert_int_equal(p.dst4.s_addr, htonl(0xcb007107));
	assert_int_equal(p.ttl, 64);
	assert_false(p.frag);
	assert_int_equal(pkt_udp(&p, &sport, &dport, &payload), 0);
	assert_int_equal(sport, 1234);
	assert_int_equal(dport, 53);
	assert_int_equal(payload.len, 5);
	assert_memory_equal(payload.p, "xxxxx", 5);
}

static void test_ethernet_padding_is_trimmed_by_ip_length(void **state)
{
	size_t len = build_udp4(0);
	struct pkt p;

	(void)state;
	assert_int_equal(pkt_parse(frame, len + 18, &p), 0);	/* padded */
	assert_int_equal(p.l3.len, 28);
	assert_int_equal(p.l4.len, 8);
}

static void test_every_truncation_of_a_udp4_frame_is_refused(void **state)
{
	size_t len = build_udp4(5), l;
	struct pkt p;

	(void)state;
	/* Up to the end of the IP payload, each cut loses part of it */
	for (l = 0; l < len; l++)
		assert_int_equal(pkt_parse(frame, l, &p), -EINVAL);
}

static void test_frame_in_pieces_is_parsed_from_its_head(void **state)
{
	size_t len = build_udp4(100), head = 14 + 20 + 8 + 10;
	struct pkt p;

	(void)state;
	assert_int_equal(pkt_parse_part(frame, head, len, &p), 0);
	assert_int_equal(p.family, AF_INET);
	assert_int_equal(p.proto, IPPROTO_UDP);
	assert_int_equal(p.l3.len, head - 14);	/* views stay in the head */
	assert_int_equal(p.l4.len, 18);
	assert_int_equal(p.tail_len, len - head);
	/* Ethernet padding in the tail isn't part of the IP packet */
	assert_int_equal(pkt_parse_part(frame, head, len + 18, &p), 0);
	assert_int_equal(p.tail_len, len - head);
	/* The whole frame in the head: nothing in the tail */
	assert_int_equal(pkt_parse_part(frame, len, len, &p), 0);
	assert_int_equal(p.tail_len, 0);
}

static void test_frame_in_pieces_without_its_headers_is_refused(void **state)
{
	size_t len = build_udp4(100);
	struct pkt p;

	(void)state;
	/* No layer-4 byte in the head, or not even the IP header */
	assert_int_equal(pkt_parse_part(frame, 14 + 20, len, &p), -EINVAL);
	assert_int_equal(pkt_parse_part(frame, 14 + 10, len, &p), -EINVAL);
	/* IP claims more than the whole frame */
	assert_int_equal(pkt_parse_part(frame, 60, len - 1, &p), -EINVAL);
	/* Head longer than the frame */
	assert_int_equal(pkt_parse_part(frame, len + 1, len, &p), -EINVAL);
	/* Not IP */
	frame[12] = 0x08;
	frame[13] = 0x06;
	assert_int_equal(pkt_parse_part(frame, 60, len, &p), -EINVAL);
}

static void test_ipv4_lying_lengths_are_refused(void **state)
{
	size_t len = build_udp4(5);
	uint16_t sport, dport;
	struct pview payload;
	struct pkt p;

	(void)state;
	frame[14] = 0x44;			/* IHL 16 < 20 */
	assert_int_equal(pkt_parse(frame, len, &p), -EINVAL);
	frame[14] = 0x4f;			/* IHL 60 > total length */
	assert_int_equal(pkt_parse(frame, len, &p), -EINVAL);
	frame[14] = 0x45;
	frame[17] = 200;			/* total length > frame */
	assert_int_equal(pkt_parse(frame, len, &p), -EINVAL);
	frame[17] = (uint8_t)(len - 14);
	frame[14] = 0x65;			/* version 6 in an IPv4 frame */
	assert_int_equal(pkt_parse(frame, len, &p), -EINVAL);
	frame[14] = 0x45;
	frame[14 + 20 + 5] = 100;		/* UDP length > IP payload */
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_int_equal(pkt_udp(&p, &sport, &dport, &payload), -EINVAL);
	frame[14 + 20 + 5] = 7;			/* UDP length < header */
	assert_int_equal(pkt_udp(&p, &sport, &dport, &payload), -EINVAL);
}

static void test_ipv4_fragments_are_marked(void **state)
{
	size_t len = build_udp4(5);
	uint16_t sport, dport;
	struct pview payload;
	struct pkt p;

	(void)state;
	frame[14 + 6] = 0x20;			/* more fragments */
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_true(p.frag);
	assert_int_equal(pkt_udp(&p, &sport, &dport, &payload), -EINVAL);
	frame[14 + 6] = 0x00;
	frame[14 + 7] = 0x01;			/* offset 8 */
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_true(p.frag);
	frame[14 + 7] = 0;
	frame[14 + 6] = 0x40;			/* DF only */
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_false(p.frag);
}

static void test_ipv6_extension_headers_are_skipped(void **state)
{
	size_t len = build_icmp6(16);
	struct pkt p;

	(void)state;
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_int_equal(p.family, AF_INET6);
	assert_int_equal(p.proto, IPPROTO_ICMPV6);
	assert_int_equal(p.l4.len, 8);
	assert_int_equal(p.l4.p[0], 128);
	assert_int_equal(p.ttl, 255);
}

static void test_ipv6_extension_header_past_the_end_is_refused(void **state)
{
	size_t len = build_icmp6(8);
	struct pkt p;

	(void)state;
	frame[14 + 41] = 5;		/* claims 48 bytes, 16 are there */
	assert_int_equal(pkt_parse(frame, len, &p), -EINVAL);
}

static void test_ipv6_extension_header_chain_is_bounded(void **state)
{
	uint8_t *ip = frame + 14;
	struct pkt p;
	int i;

	(void)state;
	build_icmp6(0);
	/* 20 destination-options headers, each pointing to the next */
	ip[6] = 60;
	for (i = 0; i < 20; i++) {
		ip[40 + 8 * i] = 60;
		ip[41 + 8 * i] = 0;
	}
	ip[4] = 0;
	ip[5] = 160;
	assert_int_equal(pkt_parse(frame, 14 + 40 + 160, &p), -EINVAL);
}

static void test_ipv6_payload_length_lie_is_refused(void **state)
{
	size_t len = build_icmp6(0);
	struct pkt p;

	(void)state;
	frame[14 + 5] = 100;
	assert_int_equal(pkt_parse(frame, len, &p), -EINVAL);
}

static void test_ipv6_fragment_header_marks_fragment(void **state)
{
	size_t len = build_icmp6(8);
	struct pkt p;

	(void)state;
	frame[14 + 6] = 44;		/* fragment header instead of hop-by-hop */
	assert_int_equal(pkt_parse(frame, len, &p), 0);
	assert_true(p.frag);
}

static void test_arp_and_unknown_ethertypes_keep_their_payload(void **state)
{
	struct pkt p;

	(void)state;
	memset(frame, 0, sizeof(frame));
	frame[12] = 0x08;
	frame[13] = 0x06;
	assert_int_equal(pkt_parse(frame, 42, &p), 0);
	assert_int_equal(p.ethertype, ETHTYPE_ARP);
	assert_int_equal(p.family, 0);
	assert_int_equal(p.l3.len, 28);
	frame[12] = 0x88;
	frame[13] = 0xcc;
	assert_int_equal(pkt_parse(frame, 60, &p), 0);
	assert_int_equal(p.ethertype, 0x88cc);
	assert_int_equal(pkt_parse(frame, 13, &p), -EINVAL);
	assert_int_equal(pkt_parse(NULL, 0, &p), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pv_at_refuses_anything_past_the_end),
		cmocka_unit_test(test_pv_reads_big_endian),
		cmocka_unit_test(test_udp4_frame_is_parsed),
		cmocka_unit_test(test_ethernet_padding_is_trimmed_by_ip_length),
		cmocka_unit_test(test_every_truncation_of_a_udp4_frame_is_refused),
		cmocka_unit_test(test_frame_in_pieces_is_parsed_from_its_head),
		cmocka_unit_test(test_frame_in_pieces_without_its_headers_is_refused),
		cmocka_unit_test(test_ipv4_lying_lengths_are_refused),
		cmocka_unit_test(test_ipv4_fragments_are_marked),
		cmocka_unit_test(test_ipv6_extension_headers_are_skipped),
		cmocka_unit_test(test_ipv6_extension_header_past_the_end_is_refused),
		cmocka_unit_test(test_ipv6_extension_header_chain_is_bounded),
		cmocka_unit_test(test_ipv6_payload_length_lie_is_refused),
		cmocka_unit_test(test_ipv6_fragment_header_marks_fragment),
		cmocka_unit_test(test_arp_and_unknown_ethertypes_keep_their_payload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
