// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_arp.c - arp_build_reply() on arbitrary ARP packets.
 *
 * Input: one knob byte (configuration corner, see fuzz_common.h; its low
 * bits also pick the reply buffer size), then the ARP packet (what follows
 * the Ethernet header). A reply must fit the buffer and be exactly
 * ARP_FRAME_LEN bytes, from our MAC, answering the asker.
 */
#include <errno.h>

#include "fuzz_common.h"
#include "net/arp.h"

static struct ctx c;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[4] = {ARP_FRAME_LEN, ARP_FRAME_LEN + 18,
				       ARP_FRAME_LEN - 1, 14};
	size_t cap;
	uint8_t *out;
	int rc;

	if (size < 1)
		return 0;
	fz_ctx_base(&c);
	fz_ctx_knob(&c, data[0]);
	cap = caps[data[0] & 3];
	out = malloc(cap);

	rc = arp_build_reply(&c, pv_make(data + 1, size - 1), out, cap);
	if (rc >= 0) {
		FZ_CHECK(rc == ARP_FRAME_LEN && (size_t)rc <= cap);
		FZ_CHECK(size - 1 >= 28);
		FZ_CHECK(!memcmp(out, data + 1 + 8, 6)); /* to the asker */
		FZ_CHECK(!memcmp(out + 6, c.our_mac, 6));
		FZ_CHECK(out[12] == 0x08 && out[13] == 0x06);
	} else {
		FZ_CHECK(rc == -EINVAL || rc == -ENOENT || rc == -ENOSPC);
	}
	free(out);
	return 0;
}

FZ_INIT_LOG
