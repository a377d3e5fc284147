/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vring_desc.h - write one split-ring descriptor as a guest driver does:
 * 16 bytes, little-endian (virtio 1.x, 2.7.5): addr (8), len (4),
 * flags (2), next (2). Shared by the unit tests, the fuzz harnesses and
 * the test tools that play the guest.
 */
#ifndef TEST_COMMON_VRING_DESC_H
#define TEST_COMMON_VRING_DESC_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

/* vring_desc_put() - descriptor at @d: @addr, @len, @flags, @next */
static inline void vring_desc_put(uint8_t *d, uint64_t addr, uint32_t len,
				  uint16_t flags, uint16_t next)
{
	addr = htole64(addr);
	len = htole32(len);
	flags = htole16(flags);
	next = htole16(next);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

#endif /* TEST_COMMON_VRING_DESC_H */
