// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_dhcpv6.c - dhcpv6_build_reply() on arbitrary DHCPv6 messages.
 *
 * Input: a knob byte (configuration corner, fuzz_common.h), a byte picking
 * the reply buffer size, then the UDP payload. A reply must fit the buffer
 * and DHCPV6_MAX_REPLY, be an ADVERTISE or a REPLY with the client's
 * transaction ID, and its options must tile the rest of the message
 * exactly, as must the options nested in the IAs we put in.
 */
#include <errno.h>

#include "fuzz_common.h"
#include "net/dhcpv6.h"

static struct ctx c;

static void check_opts(const uint8_t *p, size_t len, int depth)
{
	size_t off = 0;

	FZ_CHECK(depth <= 3);
	while (off < len) {
		uint16_t code, olen;

		FZ_CHECK(off + 4 <= len);
		code = (uint16_t)(p[off] << 8 | p[off + 1]);
		olen = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
		FZ_CHECK(off + 4 + olen <= len);
		if (code == DHCPV6_OPT_IA_NA || code == DHCPV6_OPT_IA_PD) {
			FZ_CHECK(olen >= 12);
			check_opts(p + off + 16, olen - 12u, depth + 1);
		} else if (code == DHCPV6_OPT_IA_TA) {
			FZ_CHECK(olen >= 4);
			check_opts(p + off + 8, olen - 4u, depth + 1);
		} else if (code == DHCPV6_OPT_IAADDR) {
			FZ_CHECK(olen >= 24);
			check_opts(p + off + 28, olen - 24u, depth + 1);
		}
		off += 4 + (size_t)olen;
	}
	FZ_CHECK(off == len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[8] = {
		DHCPV6_MAX_REPLY, 1500, 200, 64, 4, 0, 1232 - 1,
		DHCPV6_MAX_REPLY};
	size_t cap;
	uint8_t *out;
	int rc;

	if (size < 2)
		return 0;
	fz_ctx_base(&c);
	fz_ctx_knob(&c, data[0]);
	cap = caps[data[1] & 7];
	out = malloc(cap ? cap : 1);

	rc = dhcpv6_build_reply(&c, pv_make(data + 2, size - 2), out, cap);
	if (rc > 0) {
		FZ_CHECK((size_t)rc <= cap && rc <= DHCPV6_MAX_REPLY);
		FZ_CHECK(rc >= 4 && size >= 6);
		FZ_CHECK(out[0] == DHCPV6_ADVERTISE || out[0] == DHCPV6_REPLY);
		FZ_CHECK(!memcmp(out + 1, data + 3, 3));
		check_opts(out + 4, (size_t)rc - 4, 1);
	} else {
		FZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOSPC);
	}
	free(out);
	return 0;
}

FZ_INIT_LOG
