// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_tap.c - demux_input(), the whole guest-frame dispatch, with the real
 * ARP, NDP, DHCP, DHCPv6, ICMP, TCP and UDP code behind it, in stream mode.
 *
 * Isolation: at start-up the process moves to a network namespace of its
 * own (unshare(), as root or through a user namespace) that has nothing but
 * loopback, so the sockets the TCP, UDP and ICMP paths open can reach no
 * real network. Loopback (which also holds the gateway address, for echo
 * requests, which aren't mapped to loopback) has a TCP server on port 80
 * (writes 3000 bytes to every connection) and a UDP echo server on port 53,
 * both families, so that the gateway address (mapped to loopback) gets
 * connections established and datagrams answered. If no namespace can be had,
 * TCP, UDP and ICMP are turned off in the context (--no-tcp, --no-udp,
 * --no-icmp) and only the rest is fuzzed.
 *
 * The event loop is ours: loop_add(), loop_mod() and loop_del() record the
 * registrations (at most MAX_REGS, which bounds the sockets a run opens),
 * and after every batch of frames a poll() round dispatches to the real
 * socket handlers. The front-end is one end of a socketpair: what passt
 * writes to the guest is read back from the other end, and every frame
 * must parse (pkt_parse()) and carry correct IPv4 header and layer-4
 * checksums.
 *
 * Input: a knob byte (configuration corner, fuzz_common.h), then records
 * of [length: 2 bytes, big endian][control byte][frame]. Control byte:
 * bit 0: for a TCP segment, replace its ACK number with the end of the
 * last segment we sent the guest; bit 1: replace its sequence number with
 * the last ACK number we sent; bit 7: end the batch after this frame
 * (demux_input_end(), a loop round). Frames stay valid until the iteration
 * ends, as the stream front-end's buffer does until demux_input_end().
 * At the end every flow is timed out, so no state survives an iteration.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "demux.h"
#include "flow.h"
#include "loop.h"
#include "net/checksum.h"
#include "icmp/icmp.h"
#include "stream/stream.h"
#include "tap/tap.h"
#include "tcp/tcp.h"
#include "udp/udp.h"
#include "util.h"

#define MAX_REGS     64
#define MAX_FRAMES   32
#define MAX_ACCEPTED 16
#define SRV_PORT_TCP 80
#define SRV_PORT_UDP 53

static struct ctx c;
static bool isolated;
static int peer = -1; /* our end of the front-end socket */
static int srv_tcp[2] = {-1, -1}, srv_udp[2] = {-1, -1};
static int accepted[MAX_ACCEPTED];
static unsigned n_accepted;
static uint64_t fake_now;

/* Sequence tracking of what we sent the guest, for the ACK fix-up */
static uint32_t last_seq_end, last_ack;

#include "fuzz_loop.h"

/* One poll() round over the registered sockets, like loop_run() */
static void loop_round(void)
{
	struct pollfd pf[MAX_REGS];
	union epoll_ref ref[MAX_REGS];
	unsigned i, n = n_regs;

	for (i = 0; i < n; i++) {
		pf[i].fd = regs[i].fd;
		pf[i].events = (short)(regs[i].events &
				       (POLLIN | POLLOUT | POLLRDHUP));
		pf[i].revents = 0;
		ref[i] = regs[i].ref;
	}
	if (poll(pf, n, 0) <= 0)
		goto defer;
	for (i = 0; i < n; i++) {
		uint32_t ev = (uint32_t)pf[i].revents;
		int r;

		if (!ev)
			continue;
		/* Events for what a handler before this one closed (or
		 * replaced, with the same fd) are delivered all the same,
		 * as epoll may: the handlers must drop them themselves
		 */
		r = reg_find(pf[i].fd);
		(void)r;
		switch (ref[i].type) {
		case REF_TCP:
			tcp_sock_handler(&c, ref[i], ev);
			break;
		case REF_UDP:
		case REF_UDP_LISTEN:
			udp_sock_handler(&c, ref[i], ev);
			break;
		case REF_ICMP:
			icmp_sock_handler(&c, ref[i], ev);
			break;
		case REF_FE_CONN:
			if (ev & EPOLLOUT)
				tap_flush(&c);
			break;
		default:
			break;
		}
	}
defer:
	tcp_defer_handler(&c);
	flow_defer_free();
}

/* Our loopback servers: accept and write, echo datagrams */
static void servers_round(void)
{
	static uint8_t buf[4096];
	unsigned i;

	for (i = 0; i < 2; i++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		ssize_t n;
		int s;

		if (srv_tcp[i] >= 0) {
			while (n_accepted < MAX_ACCEPTED &&
			       (s = accept4(srv_tcp[i], NULL, NULL,
					    SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
				       0) {
				memset(buf, 'x', 3000);
				if (send(s, buf, 3000, MSG_NOSIGNAL) < 0)
					(void)0;
				accepted[n_accepted++] = s;
			}
		}
		if (srv_udp[i] >= 0) {
			while ((n = recvfrom(srv_udp[i], buf, sizeof(buf),
					     MSG_DONTWAIT,
					     (struct sockaddr *)&sa, &sl)) >=
			       0) {
				sendto(srv_udp[i], buf, (size_t)n, MSG_DONTWAIT,
				       (struct sockaddr *)&sa, sl);
				sl = sizeof(sa);
			}
		}
	}
	for (i = 0; i < n_accepted; i++) {
		while (recv(accepted[i], buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	}
}

static void servers_close_accepted(void)
{
	while (n_accepted)
		close(accepted[--n_accepted]);
}

/* Checksum of @len bytes with pseudo-header sum @init must fold to 0 */
static bool csum_ok(const uint8_t *p, size_t len, uint32_t init)
{
	return csum(p, len, init) == 0;
}

/* A frame we sent the guest: must parse, checksums must be right */
static void check_out_frame(const uint8_t *f, size_t len)
{
	struct pkt p;
	const uint8_t *l4;

	FZ_CHECK(len >= FRAME_MIN_LEN && len <= FRAME_MAX_LEN);
	FZ_CHECK(!memcmp(f + 6, c.our_mac, 6));
	FZ_CHECK(pkt_parse(f, len, &p) == 0);
	if (p.family != AF_INET && p.family != AF_INET6)
		return;
	l4 = p.l4.p;
	if (p.family == AF_INET) {
		FZ_CHECK(csum_ok(p.l3.p, 20, 0));
		FZ_CHECK(!p.frag);
	}
	if (!l4)
		return;
	switch (p.proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_ICMPV6:
		if (p.proto == IPPROTO_UDP && p.family == AF_INET &&
		    p.l4.len >= 8 && !l4[6] && !l4[7])
			break;
		FZ_CHECK(csum_ok(l4, p.l4.len,
				 p.family == AF_INET
					 ? csum_pseudo4(p.src4, p.dst4, p.proto,
							(uint16_t)p.l4.len)
					 : csum_pseudo6(&p.src6, &p.dst6,
							p.proto,
							(uint32_t)p.l4.len)));
		break;
	case IPPROTO_ICMP:
		FZ_CHECK(csum_ok(l4, p.l4.len, 0));
		break;
	}
	if (p.proto == IPPROTO_TCP && p.l4.len >= 20) {
		uint32_t seq, ack;
		size_t doff = (size_t)(l4[12] >> 4) * 4;

		FZ_CHECK(doff >= 20 && doff <= p.l4.len);
		pv_be32(p.l4, 4, &seq);
		pv_be32(p.l4, 8, &ack);
		last_seq_end = seq + (uint32_t)(p.l4.len - doff) +
			       ((l4[13] & 0x02) ? 1 : 0) +
			       ((l4[13] & 0x01) ? 1 : 0);
		if (l4[13] & 0x10)
			last_ack = ack;
	}
}

/* Read back and check what passt wrote to the front-end */
static void drain(void)
{
	static uint8_t in[1 << 20];
	static size_t in_len;
	int rounds;

	for (rounds = 0; rounds < 64; rounds++) {
		size_t off = 0;
		ssize_t n;

		tap_flush(&c);
		n = recv(peer, in + in_len, sizeof(in) - in_len, MSG_DONTWAIT);
		if (n <= 0)
			break;
		in_len += (size_t)n;
		while (in_len - off >= 4) {
			uint32_t flen;

			memcpy(&flen, in + off, 4);
			flen = ntohl(flen);
			FZ_CHECK(flen >= FRAME_MIN_LEN &&
				 flen <= FRAME_MAX_LEN);
			if (in_len - off - 4 < flen)
				break;
			check_out_frame(in + off + 4, flen);
			off += 4 + flen;
		}
		memmove(in, in + off, in_len - off);
		in_len -= off;
	}
}

static int srv_open(int family, int type, uint16_t port)
{
	union {
		struct sockaddr_in a4;
		struct sockaddr_in6 a6;
	} sa;
	int s = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	socklen_t sl;

	if (s < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	if (family == AF_INET) {
		sa.a4.sin_family = AF_INET;
		sa.a4.sin_port = htons(port);
		sa.a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sl = sizeof(sa.a4);
	} else {
		sa.a6.sin6_family = AF_INET6;
		sa.a6.sin6_port = htons(port);
		sa.a6.sin6_addr = in6addr_loopback;
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		sl = sizeof(sa.a6);
	}
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sl) ||
	    (type == SOCK_STREAM && listen(s, 64))) {
		close(s);
		return -1;
	}
	return s;
}

/* A network namespace with just loopback, up; ping sockets allowed */
static bool netns_init(void)
{
	struct ifreq ifr;
	int s, fd;

	if (getenv("FUZZ_NO_NETNS"))
		return false;
	if (unshare(CLONE_NEWNET) && unshare(CLONE_NEWUSER | CLONE_NEWNET))
		return false;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	/* The gateway address on loopback too, so that echo requests to it
	 * (ICMP isn't mapped to loopback) get their replies
	 */
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo:1");
	ifr.ifr_addr.sa_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1",
		  &((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr);
	ioctl(s, SIOCSIFADDR, &ifr);
	close(s);
	fd = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "0 2147483647", 12) < 0)
			(void)0;
		close(fd);
	}
	return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int sv[2];

	(void)argc;
	(void)argv;
	fz_log_init();
	isolated = netns_init();
	if (!isolated)
		fprintf(stderr, "fuzz_tap: no network namespace: TCP, UDP and "
				"ICMP off\n");
	if (isolated) {
		srv_tcp[0] = srv_open(AF_INET, SOCK_STREAM, SRV_PORT_TCP);
		srv_tcp[1] = srv_open(AF_INET6, SOCK_STREAM, SRV_PORT_TCP);
		srv_udp[0] = srv_open(AF_INET, SOCK_DGRAM, SRV_PORT_UDP);
		srv_udp[1] = srv_open(AF_INET6, SOCK_DGRAM, SRV_PORT_UDP);
	}
	FZ_CHECK(!socketpair(
		AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
	flow_init();
	tap_frontend_set(&stream_frontend);
	fz_ctx_base(&c);
	peer = sv[1];
	c.fd_inherited = sv[0];	/* the stream front-end's --fd */
	FZ_CHECK(!tap_init(&c));
	tcp_init(&c);
	return 0;
}

static void ctx_setup(uint8_t knob)
{
	fz_ctx_base(&c);
	fz_ctx_knob(&c, knob);
	if (!isolated)
		c.no_tcp = c.no_udp = c.no_icmp = true;
}

/* Time every flow out: nothing may survive an iteration */
static void flows_expire(void)
{
	static unsigned n;

	/* A day past the clock the flows use, not past the last call's: a
	 * day more per iteration wrapped the low 32 bits of a connection's
	 * last activity (last_ms, flow_tcp.h) into the idle timeout's
	 * window about once in 50 iterations. Two seconds apart from one
	 * iteration to the next, either way: the timers that scan at most
	 * once a second (icmp_timer()) scan every time
	 */
	fake_now = now_ms() + 24ULL * 3600 * 1000 + 2000 * (++n & 1);
	tcp_timer(&c, fake_now);
	udp_timer(&c, fake_now);
	icmp_timer(&c, fake_now);
	tcp_defer_handler(&c);
	flow_defer_free();	/* the end of the loop round */
	drain();
	FZ_CHECK(flow_count() == 0);
}

static void fixup_tcp(uint8_t *f, size_t len, uint8_t ctl)
{
	struct pkt p;
	uint8_t *th;

	if (!(ctl & 3) || pkt_parse(f, len, &p) || p.proto != IPPROTO_TCP ||
	    p.l4.len < 20)
		return;
	th = f + (p.l4.p - f);
	if (ctl & 1) {
		uint32_t v = htonl(last_seq_end);

		memcpy(th + 8, &v, 4);
	}
	if (ctl & 2) {
		uint32_t v = htonl(last_ack);

		memcpy(th + 4, &v, 4);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf;
	size_t off = 1;
	int frames = 0;
	bool pending = false;

	if (size < 1)
		return 0;
	ctx_setup(data[0]);
	last_seq_end = last_ack = 0;

	/* One copy of the whole input: frames live as long as it does */
	buf = malloc(size);
	memcpy(buf, data, size);

	while (size - off >= 3 && frames < MAX_FRAMES) {
		size_t flen = (size_t)(buf[off] << 8 | buf[off + 1]);
		uint8_t ctl = buf[off + 2];
		uint8_t *f;

		off += 3;
		if (flen > size - off)
			flen = size - off;
		f = buf + off;
		off += flen;
		frames++;

		fixup_tcp(f, flen, ctl);
		demux_input(&c, f, flen);
		pending = true;
		if (ctl & 0x80) {
			demux_input_end(&c);
			pending = false;
			drain();
			servers_round();
			loop_round();
			servers_round();
			loop_round();
			drain();
		}
	}
	if (pending)
		demux_input_end(&c);
	drain();
	servers_round();
	loop_round();
	drain();

	servers_close_accepted();
	loop_round();
	flows_expire();
	free(buf);
	return 0;
}
