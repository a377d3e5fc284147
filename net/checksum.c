// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * checksum.c - one's complement sums.
 *
 * csum_add() accumulates 16-bit big-endian words into a 32-bit partial sum
 * (an odd trailing byte is padded with zero), csum_fold() folds the carries
 * and complements. The result is in network byte order ready to be stored
 * with memcpy into a header. Callers sum across discontiguous pieces by
 * passing the partial sum along; every piece but the last must be of even
 * length.
 */
#include <arpa/inet.h>
#include <string.h>
#include <sys/uio.h>

#include "checksum.h"

uint32_t csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	uint64_t s = sum;

	while (len >= 8) {
		s += (uint32_t)b[0] << 8 | b[1];
		s += (uint32_t)b[2] << 8 | b[3];
		s += (uint32_t)b[4] << 8 | b[5];
		s += (uint32_t)b[6] << 8 | b[7];
		b += 8;
		len -= 8;
	}
	while (len >= 2) {
		s += (uint32_t)b[0] << 8 | b[1];
		b += 2;
		len -= 2;
	}
	if (len)
		s += (uint32_t)b[0] << 8;

	while (s >> 32)
		s = (s & 0xffffffff) + (s >> 32);
	return (uint32_t)s;
}

uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

uint16_t csum(const void *buf, size_t len, uint32_t init)
{
	return csum_fold(csum_add(init, buf, len));
}

uint32_t csum_pseudo4(struct in_addr src, struct in_addr dst, uint8_t proto,
		      uint16_t len)
{
	uint8_t ph[12];

	memcpy(ph, &src, 4);
	memcpy(ph + 4, &dst, 4);
	ph[8] = 0;
	ph[9] = proto;
	ph[10] = len >> 8;
	ph[11] = len & 0xff;
	return csum_add(0, ph, sizeof(ph));
}

uint32_t csum_pseudo6(const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, uint32_t len)
{
	uint8_t ph[40];

	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	ph[32] = len >> 24;
	ph[33] = (len >> 16) & 0xff;
	ph[34] = (len >> 8) & 0xff;
	ph[35] = len & 0xff;
	ph[36] = ph[37] = ph[38] = 0;
	ph[39] = proto;
	return csum_add(0, ph, sizeof(ph));
}

/**
 * csum_add_iov() - add up to @len bytes spread over @n pieces to a sum
 * @sum:	partial sum so far (of an even number of bytes)
 * @iov:	pieces, of any length, odd ones included
 * @n:		number of pieces
 * @len:	bytes to add at most
 *
 * A piece that starts at an odd offset contributes its sum byte-swapped:
 * its first byte is the low half of a 16-bit word.
 *
 * Return: new partial sum
 */
uint32_t csum_add_iov(uint32_t sum, const struct iovec *iov, unsigned n,
		      size_t len)
{
	uint64_t acc = sum;
	size_t off = 0;
	unsigned i;

	for (i = 0; i < n && off < len; i++) {
		size_t l = iov[i].iov_len < len - off ? iov[i].iov_len
						      : len - off;
		uint32_t s = csum_add(0, iov[i].iov_base, l);

		if (off & 1) {
			while (s >> 16)
				s = (s & 0xffff) + (s >> 16);
			s = ((s & 0xff) << 8) | (s >> 8);
		}
		acc += s;
		off += l;
	}
	while (acc >> 32)
		acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}
