// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sock.c - one socket as both sides of a TCP migration handle it: its
 * queues and windows read and written in repair mode, its progress as
 * TCP_INFO tells it, made deaf to its peer (IP_MINTTL) or put behind a
 * drop-all filter while it is held, its retransmission timeout capped
 * once it is restored. It knows sockets only: tcp/'s migration files
 * know the connection around each (their theory of operation is in
 * tcp/migrate.h).
 */
#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "inany.h"
#include "kernel_abi.h"
#include "repair/format.h"
#include "repair/sock.h"
#include "repair/tcp_info.h"
#include "util.h"

/* TCP_RTO_MAX_MS: the least the kernel takes, and its default (TCP_RTO_MAX,
 * unless net.ipv4.tcp_rto_max_ms says otherwise: tcpm_rto_cap())
 */
#define TCPM_RTO_CAP_MS		1000
#define TCPM_RTO_DEFAULT_MS	120000

/* A new socket's TCP_RTO_MAX_MS (the namespace's tcp_rto_max_ms), 0 until
 * read
 */
static int tcpm_rto_max_ms;

/* Segments with a lower TTL (hop limit) are dropped: all but a peer's on
 * the same link that sends with the largest one (IP_MINTTL, RFC 5082)
 */
#define TCPM_DEAF_TTL	255

/**
 * tcpm_filter_attach() - attach "ret #0": the filter that drops every
 *			  segment before TCP sees it
 * @s:		socket
 *
 * Return: 0 or -errno
 */
int tcpm_filter_attach(int s)
{
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = { .len = 1, .filter = &drop };

	return setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
			  sizeof(prog)) ? -errno : 0;
}

/**
 * tcpm_filtered() - has @s a socket filter (ours, or the repair helper's)?
 * @s:		socket
 *
 * SO_GET_FILTER gives a classic filter's length, and fails with EACCES
 * for an eBPF one, which it can't read back: our passt-repair attaches
 * its drop-all filter so, where it may load one (passt-repair.c).
 *
 * Return: true if it has one
 */
bool tcpm_filtered(int s)
{
	socklen_t len = 0;

	if (getsockopt(s, SOL_SOCKET, SO_GET_FILTER, NULL, &len))
		return errno == EACCES;
	return len;
}

/**
 * tcpm_filter_detach() - take the socket filter off
 * @s:		socket
 */
void tcpm_filter_detach(int s)
{
	int zero = 0;

	setsockopt(s, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof(zero));
}

/* The family of socket @s, AF_UNSPEC if unknown */
static int tcpm_family(int s)
{
	union sockaddr_inany sa = { .sa.sa_family = AF_UNSPEC };
	socklen_t sl = sizeof(sa);

	if (getsockname(s, &sa.sa, &sl))
		return AF_UNSPEC;
	return sa.sa.sa_family;
}

/**
 * tcpm_deaf() - deaf or not: @on, drop every segment that doesn't come
 *		 with the largest TTL (hop limit) before TCP sees it; off,
 *		 take them again. No privilege needed, unlike a socket filter
 *		 on some kernels.
 * @s:		socket
 * @family:	its family, AF_UNSPEC if the caller doesn't know (we ask)
 * @on:		deaf, or not
 *
 * Return: 0 or -errno
 */
int tcpm_deaf(int s, int family, bool on)
{
	int v = on ? TCPM_DEAF_TTL : 0;

	if (family == AF_UNSPEC)
		family = tcpm_family(s);
	if (family == AF_INET6)
		return setsockopt(s, IPPROTO_IPV6, IPV6_MINHOPCOUNT, &v,
				  sizeof(v)) ? -errno : 0;
	return setsockopt(s, IPPROTO_IP, IP_MINTTL, &v, sizeof(v)) ?
	       -errno : 0;
}

/**
 * tcpm_queue() - select the queue that repair mode reads and writes
 * @s:		socket, in repair mode
 * @q:		TCPM_QUEUE_*
 *
 * Return: 0 or -errno
 */
int tcpm_queue(int s, int q)
{
	return setsockopt(s, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ?
	       -errno : 0;
}

/**
 * tcpm_get_u32() - read a 32-bit TCP socket option
 * @s:		socket
 * @opt:	option
 * @v:		its value
 *
 * Return: 0 or -errno
 */
int tcpm_get_u32(int s, int opt, uint32_t *v)
{
	socklen_t sl = sizeof(*v);

	return getsockopt(s, IPPROTO_TCP, opt, v, &sl) ? -errno : 0;
}

/**
 * tcpm_get_window() - read the socket's windows (TCP_REPAIR_WINDOW)
 * @s:		socket, in repair mode
 * @w:		the windows
 *
 * Return: 0 or -errno
 */
int tcpm_get_window(int s, struct tcpm_window *w)
{
	socklen_t sl = sizeof(*w);

	return getsockopt(s, IPPROTO_TCP, TCP_REPAIR_WINDOW, w, &sl) ?
	       -errno : 0;
}

/**
 * tcpm_fin_rcvd() - has the peer's FIN been counted in the receive
 *		     queue's sequence?
 * @st:		Linux TCP state (tcpi_state)
 *
 * Return: true if it has
 */
bool tcpm_fin_rcvd(uint8_t st)
{
	return st == MIG_TCP_CLOSE_WAIT || st == MIG_TCP_LAST_ACK ||
	       st == MIG_TCP_CLOSING;
}

/**
 * tcpm_in_repair() - is TCP_REPAIR on for @s?
 * @s:		socket
 *
 * Return: true if it is
 */
bool tcpm_in_repair(int s)
{
	socklen_t sl = sizeof(int);
	int on = 0;

	return !getsockopt(s, IPPROTO_TCP, TCP_REPAIR, &on, &sl) && on;
}

/**
 * tcpm_fill() - write what the socket takes of @len bytes at @p, in repair
 *		 mode (into the selected queue) or not
 * @s:		socket
 * @p:		bytes
 * @len:	how many
 *
 * Return: bytes written (fewer than @len: the socket is full), or -errno
 */
ssize_t tcpm_fill(int s, const uint8_t *p, uint32_t len)
{
	size_t chunk = TCPM_CHUNK;
	uint32_t done = 0;

	while (done < len) {
		ssize_t n = send(s, p + done, MIN(chunk, (size_t)(len - done)),
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if ((errno == ENOBUFS || errno == ENOMEM) &&
			    chunk > TCPM_CHUNK_MIN) {
				chunk /= 2;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		done += (uint32_t)n;
	}
	return done;
}

/**
 * tcpm_progress() - what a socket tells of its peer so far
 * @s:		socket
 * @pr:		filled with it
 *
 * Return: 0, or -errno (-ENODATA from a kernel without those fields)
 */
int tcpm_progress(int s, struct tcpm_progress *pr)
{
	struct tcp_info_k ti;
	int n = tcp_info_get(s, &ti);

	memset(pr, 0, sizeof(*pr));
	if (n < 0)
		return n;
	if (!TCP_INFO_HAS(n, tcpi_segs_in))
		return -ENODATA;
	pr->segs_in = ti.tcpi_segs_in;
	pr->unacked = ti.tcpi_u32[TCPI_U32_UNACKED];
	pr->bytes_acked = ti.tcpi_bytes_acked;
	pr->bytes_received = ti.tcpi_bytes_received;
	return 0;
}

/**
 * tcpm_lap() - one step of a phase's timing, for the debug log
 * @t:		when the step began (now_ns()); set to now
 *
 * Return: microseconds since *@t
 */
unsigned tcpm_lap(uint64_t *t)
{
	uint64_t now = now_ns(), d = (now - *t) / 1000;

	*t = now;
	return (unsigned)MIN(d, (uint64_t)UINT32_MAX);
}

/**
 * tcpm_rto_cap() - cap a restored socket's retransmission timeout at 1 s
 *		    (TCP_RTO_MAX_MS, Linux 6.15), or give it back what it had:
 *		    the administrator's net.ipv4.tcp_rto_max_ms, which a new
 *		    socket has (read from the first one capped), not the
 *		    kernel's default; best effort (older kernels: nothing)
 * @s:		socket
 * @on:		cap it, or not
 */
void tcpm_rto_cap(int s, bool on)
{
	int v = tcpm_rto_max_ms ? tcpm_rto_max_ms : TCPM_RTO_DEFAULT_MS;
	socklen_t sl = sizeof(v);

	if (on) {
		if (!tcpm_rto_max_ms &&
		    !getsockopt(s, IPPROTO_TCP, TCP_RTO_MAX_MS, &v, &sl) &&
		    v >= TCPM_RTO_CAP_MS)
			tcpm_rto_max_ms = v;
		v = TCPM_RTO_CAP_MS;
	}
	setsockopt(s, IPPROTO_TCP, TCP_RTO_MAX_MS, &v, sizeof(v));
}
