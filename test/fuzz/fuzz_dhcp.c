// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_dhcp.c - dhcp_build_reply() on arbitrary BOOTP/DHCP messages.
 *
 * Input: a knob byte (configuration corner, fuzz_common.h), a byte picking
 * the reply buffer size, then the UDP payload. A reply must fit the buffer
 * and DHCP_MAX_REPLY, be a BOOTREPLY at least DHCP_MIN_REPLY long, and its
 * options must be well-formed TLVs ending with the end option, the first
 * one being the message type.
 */
#include <errno.h>

#include "fuzz_common.h"
#include "net/dhcp.h"

static struct ctx c;

static void check_reply(const uint8_t *r, int len)
{
	size_t off = DHCP_OPTS_OFF;

	FZ_CHECK(len >= DHCP_MIN_REPLY && len <= DHCP_MAX_REPLY);
	FZ_CHECK(r[0] == 2 && r[1] == 1 && r[2] == 6);
	FZ_CHECK(!memcmp(r + DHCP_HDR_LEN, "\x63\x82\x53\x63", 4));
	FZ_CHECK(r[off] == DHCP_OPT_MSG_TYPE && r[off + 1] == 1);
	for (;;) {
		FZ_CHECK(off < (size_t)len);
		if (r[off] == DHCP_OPT_END)
			break;
		if (r[off] == DHCP_OPT_PAD) {
			off++;
			continue;
		}
		FZ_CHECK(off + 2 <= (size_t)len);
		FZ_CHECK(off + 2 + r[off + 1] <= (size_t)len);
		off += 2 + r[off + 1];
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[8] = {
		DHCP_MAX_REPLY, 1500, 548, 300, 299, 1, 576, DHCP_MAX_REPLY};
	struct in_addr dst;
	size_t cap;
	uint8_t *out;
	int rc;

	if (size < 2)
		return 0;
	fz_ctx_base(&c);
	fz_ctx_knob(&c, data[0]);
	cap = caps[data[1] & 7];
	out = malloc(cap);

	rc = dhcp_build_reply(&c, pv_make(data + 2, size - 2), out, cap, &dst);
	if (rc > 0) {
		FZ_CHECK((size_t)rc <= cap);
		check_reply(out, rc);
	} else {
		FZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOSPC);
	}
	free(out);
	return 0;
}

FZ_INIT_LOG
