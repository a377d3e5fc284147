/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * repair/tcp_info.h - TCP_INFO as the kernel lays it out, not as a C library
 * copies it.
 *
 * getsockopt(TCP_INFO) fills the kernel's struct tcp_info (uapi
 * linux/tcp.h), as far as the caller's buffer and the kernel's own
 * version go, and says how far in the returned length. glibc's struct
 * tcp_info (netinet/tcp.h) is a copy of an old prefix of it (up to
 * tcpi_total_retrans, 104 bytes, in 2.36 to 2.43); another C library, or
 * a later glibc, may copy more or less, so nothing past that prefix may be
 * read through it, nor may fields be appended to it. The two headers
 * can't both be included, so the fields we read are declared here, by the
 * kernel's offsets (checked below), and read with tcp_info_get(), which
 * says which of them the kernel filled.
 */
#ifndef REPAIR_TCP_INFO_H
#define REPAIR_TCP_INFO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef TCP_INFO
#define TCP_INFO	11
#endif

/**
 * struct tcp_info_k - the kernel's struct tcp_info, up to tcpi_segs_in
 *		       (Linux 4.2): the fields the daemon reads, and the ones
 *		       before them as padding
 */
struct tcp_info_k {
	uint8_t tcpi_state;	/* TCP_ESTABLISHED... (linux/tcp.h) */
	uint8_t tcpi_ca_state;
	uint8_t tcpi_retransmits;
	uint8_t tcpi_probes;
	uint8_t tcpi_backoff;
	uint8_t tcpi_options;	/* TCPI_OPT_* */
	uint8_t tcpi_snd_wscale : 4, tcpi_rcv_wscale : 4;
	uint8_t tcpi_flags7;	/* app_limited, fastopen_client_fail */
	uint32_t tcpi_u32[24];	/* tcpi_rto ... tcpi_total_retrans */
#define TCPI_U32_UNACKED	4	/* tcpi_unacked, in tcpi_u32[] */
	uint64_t tcpi_pacing_rate;
	uint64_t tcpi_max_pacing_rate;
	uint64_t tcpi_bytes_acked;
	uint64_t tcpi_bytes_received;
	uint32_t tcpi_segs_out;
	uint32_t tcpi_segs_in;
};

/* The kernel's offsets (include/uapi/linux/tcp.h) */
_Static_assert(offsetof(struct tcp_info_k, tcpi_options) == 5,
	       "tcpi_options");
_Static_assert(offsetof(struct tcp_info_k, tcpi_u32) == 8, "tcpi_rto");
_Static_assert(offsetof(struct tcp_info_k, tcpi_pacing_rate) == 104,
	       "tcpi_pacing_rate");
_Static_assert(offsetof(struct tcp_info_k, tcpi_bytes_acked) == 120,
	       "tcpi_bytes_acked");
_Static_assert(offsetof(struct tcp_info_k, tcpi_segs_in) == 140,
	       "tcpi_segs_in");
_Static_assert(sizeof(struct tcp_info_k) == 144, "size");

/* Did the kernel fill @field of a struct tcp_info_k, given its @len? */
#define TCP_INFO_HAS(len, field)					\
	((size_t)(len) >= offsetof(struct tcp_info_k, field) +		\
			  sizeof(((struct tcp_info_k *)0)->field))

/**
 * tcp_info_get() - TCP_INFO of a socket, by the kernel's layout
 * @s:		TCP socket
 * @ti:		filled as far as the kernel goes, zeroes beyond
 *
 * Return: how many bytes the kernel filled (see TCP_INFO_HAS()), or -errno
 */
static inline int tcp_info_get(int s, struct tcp_info_k *ti)
{
	socklen_t sl = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	if (getsockopt(s, IPPROTO_TCP, TCP_INFO, ti, &sl))
		return -errno;
	return (int)sl;
}

#endif /* REPAIR_TCP_INFO_H */
