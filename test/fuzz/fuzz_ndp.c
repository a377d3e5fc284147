// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_ndp.c - ndp_reply() on arbitrary frames, and the RA and NA
 * builders with arbitrary buffer sizes.
 *
 * Input: a knob byte (configuration corner, fuzz_common.h), a flags byte
 * (bits 0-2: buffer size for the builders; bit 3: leave the ICMPv6
 * checksum as it is instead of fixing it, so that the fuzzer gets past
 * the checksum check; bit 4: RAs disabled; bit 5: guest link-local address
 * already known), then an Ethernet frame. What ndp_reply() answers must
 * be a well-formed RA or NA no larger than NDP_RA_MAX, whose options tile
 * it exactly, between unicast, specified addresses (to multicast for the
 * RA to all-nodes).
 */
#include <errno.h>
#include <sys/socket.h>

#include "fuzz_common.h"
#include "net/checksum.h"
#include "net/ndp.h"

static struct ctx c;

static void check_nd(const uint8_t *m, size_t len)
{
	size_t off;

	FZ_CHECK(len >= 16 && len <= NDP_RA_MAX);
	FZ_CHECK(m[0] == 134 || m[0] == 136);
	FZ_CHECK(m[1] == 0);
	off = m[0] == 134 ? 16 : 24;
	FZ_CHECK(off <= len);
	while (off < len) {
		FZ_CHECK(off + 2 <= len);
		FZ_CHECK(m[off + 1] != 0);
		FZ_CHECK(off + (size_t)m[off + 1] * 8 <= len);
		off += (size_t)m[off + 1] * 8;
	}
}

/* What would go to the guest, through local/local.c */
static void reply(const struct pkt *p)
{
	struct in6_addr src, dst;
	uint8_t out[NDP_RA_MAX];
	uint8_t *copy;
	size_t n;

	n = ndp_reply(&c, p, out, sizeof(out), &src, &dst);
	if (!n)
		return;
	FZ_CHECK(!IN6_IS_ADDR_MULTICAST(&src) &&
		 !IN6_IS_ADDR_UNSPECIFIED(&src));
	FZ_CHECK(!IN6_IS_ADDR_UNSPECIFIED(&dst));
	FZ_CHECK(n <= NDP_RA_MAX);
	copy = malloc(n);
	memcpy(copy, out, n); /* ASan: exactly what was written */
	check_nd(copy, n);
	free(copy);
}

static void build(uint8_t flags, const struct in6_addr *target)
{
	static const size_t caps[8] = {NDP_RA_MAX, 2000,	   16, 32, 100,
				       0,	   NDP_RA_MAX - 1, 200};
	size_t cap = caps[flags & 7], n;
	uint8_t *out = malloc(cap ? cap : 1);

	n = ndp_build_ra(&c, out, cap);
	FZ_CHECK(n <= cap);
	if (n)
		check_nd(out, n);
	n = ndp_build_na(&c, target, out, cap);
	FZ_CHECK(n <= cap);
	if (n)
		check_nd(out, n);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in6_addr target = {0};
	uint8_t flags, *f;
	size_t flen;
	struct pkt p;

	if (size < 2)
		return 0;
	fz_ctx_base(&c);
	fz_ctx_knob(&c, data[0]);
	flags = data[1];
	c.no_ra = !!(flags & 16);
	if (flags & 32)
		fz_a6(&c.ip6.guest_ll, "fe80::2");

	flen = size - 2;
	f = malloc(flen ? flen : 1);
	memcpy(f, data + 2, flen);

	if (!pkt_parse(f, flen, &p)) {
		if (p.family == AF_INET6 && p.proto == IPPROTO_ICMPV6 &&
		    p.l4.len >= 4 && !(flags & 8)) {
			uint8_t *m = f + (p.l4.p - f);
			uint16_t sum;

			m[2] = m[3] = 0;
			sum = csum(m, p.l4.len,
				   csum_pseudo6(&p.src6, &p.dst6,
						IPPROTO_ICMPV6,
						(uint32_t)p.l4.len));
			memcpy(m + 2, &sum, 2);
		}
		reply(&p);
		if (p.family == AF_INET6)
			target = p.dst6;
	}
	build(flags, &target);
	free(f);
	return 0;
}

FZ_INIT_LOG
