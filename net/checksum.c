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

/* Vectors of eight 32-bit lanes: plain SSE2 pairs by default, one AVX2
 * register where the CPU has it (target_clones picks at load time)
 */
typedef uint32_t csum_vec __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define CSUM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CSUM_CLONES
#endif

#define CSUM_BLOCKS 16384
#define CSUM_AHEAD 1024

/* Add the 32-byte block at @b to the lanes of @acc */
#define CSUM_BLOCK(acc, b)						\
	do {								\
		csum_vec v_;						\
									\
		memcpy(&v_, (b), sizeof(v_));				\
		(acc) += (v_ & lo) + (v_ >> 16);			\
	} while (0)

/**
 * csum_native() - one's complement sum of 32-byte blocks, native words
 * @b:		data, any alignment
 * @n:		number of 32-byte blocks
 *
 * Each lane adds the two 16-bit halves of its 32-bit word; a lane can take
 * 32768 blocks (2 * 0xffff each) before it could overflow, so the lanes
 * are emptied into a 64-bit total every CSUM_BLOCKS blocks (a quarter of
 * them in each of the four accumulators below).
 * Four blocks a step, into four accumulators, so that four loads are in
 * flight at once, and 1 KiB ahead asked for while there is that much left:
 * what we sum was mostly just written by the kernel (a peek of megabytes)
 * and comes from memory or a far cache (doc/bench-history.md,
 * "Checksum").
 *
 * Return: the sum of the 16-bit words as loaded (host byte order), with
 * carries not yet folded
 */
CSUM_CLONES
static uint64_t csum_native(const uint8_t *b, size_t n)
{
	const csum_vec lo = { 0xffff, 0xffff, 0xffff, 0xffff,
			      0xffff, 0xffff, 0xffff, 0xffff };
	const size_t w = sizeof(csum_vec);
	uint64_t total = 0;

	while (n) {
		size_t k = n < CSUM_BLOCKS ? n : CSUM_BLOCKS;
		csum_vec a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 };
		unsigned i;

		n -= k;
		for (; k >= 4; k -= 4, b += 4 * w) {
			if ((k + n) * w > CSUM_AHEAD + 4 * w) {
				__builtin_prefetch(b + CSUM_AHEAD);
				__builtin_prefetch(b + CSUM_AHEAD + 2 * w);
			}
			CSUM_BLOCK(a0, b);
			CSUM_BLOCK(a1, b + w);
			CSUM_BLOCK(a2, b + 2 * w);
			CSUM_BLOCK(a3, b + 3 * w);
		}
		for (; k; k--, b += w)
			CSUM_BLOCK(a0, b);
		/* A lane took CSUM_BLOCKS / 4 (+ 3) blocks: two still fit */
		a0 += a1;
		a2 += a3;
		for (i = 0; i < 8; i++)
			total += (uint64_t)a0[i] + a2[i];
	}
	return total;
}

/**
 * csum_add() - add bytes to a partial sum of big-endian 16-bit words
 * @sum:	partial sum so far
 * @buf:	bytes, any alignment
 * @len:	length; an odd last byte counts as padded with zero
 *
 * The bulk is summed as native words (csum_native()): the one's complement
 * sum commutes with swapping bytes, so on a little-endian host the folded
 * native sum, byte-swapped, is the sum of the big-endian words.
 *
 * Return: new partial sum (not folded to 16 bits)
 */
uint32_t csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	size_t bulk = len & ~(sizeof(csum_vec) - 1);
	uint64_t s = sum;

	if (bulk) {
		uint64_t n = csum_native(b, bulk / sizeof(csum_vec));

		while (n >> 16)
			n = (n & 0xffff) + (n >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		n = ((n & 0xff) << 8) | (n >> 8);
#endif
		s += n;
		b += bulk;
		len -= bulk;
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

/**
 * csum_fold() - fold a 32-bit one's complement sum into a checksum field
 * @sum:	sum of 16-bit words, carries not yet folded (csum_add())
 *
 * Return: the one's complement of the folded sum, in network order, ready
 *	   to be stored in a header
 */
uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/**
 * csum() - the Internet checksum of a buffer
 * @buf:	data
 * @len:	bytes at @buf, any count (an odd last byte is padded)
 * @init:	sum to start from: a pseudo-header's (csum_pseudo4(),
 *		csum_pseudo6()), or 0
 *
 * Return: the checksum in network order, ready to be stored in a header
 */
uint16_t csum(const void *buf, size_t len, uint32_t init)
{
	return csum_fold(csum_add(init, buf, len));
}

/**
 * csum_pseudo4() - partial sum of an IPv4 pseudo-header (RFC 768, 793)
 * @src:	source address
 * @dst:	destination address
 * @proto:	layer-4 protocol number
 * @len:	layer-4 length, header and payload
 *
 * Return: the unfolded sum, to start csum() or csum_add() from
 */
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

/**
 * csum_pseudo6() - partial sum of an IPv6 pseudo-header (RFC 8200, 8.1)
 * @src:	source address
 * @dst:	destination address
 * @proto:	next header: the layer-4 protocol number
 * @len:	upper-layer packet length, header and payload
 *
 * Return: the unfolded sum, to start csum() or csum_add() from
 */
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
