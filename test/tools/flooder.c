// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flooder.c - a hostile or broken guest, for the flood tests
 * (test/integration/tests/flood_*.sh).
 *
 * Usage: flooder [-t SECS] [-n COUNT] MODE ARG...
 *
 *   udp DST PORT0        datagrams to DST, ports PORT0 to PORT0 + COUNT - 1
 *                        (default 40000, wrapping at 65535), one each, round
 *                        after round, for SECS seconds (default 10): every
 *                        destination port is a new flow for the daemon
 *   syn SRC DST PORT0    TCP SYNs from SRC (random source ports) to DST,
 *                        ports PORT0 to PORT0 + COUNT - 1, through a raw
 *                        socket: the kernel keeps no state for them
 *   icmp DST             ICMP echo requests to DST with every identifier,
 *                        0 to 65535, over and over, for SECS seconds
 *   hold DST PORT        COUNT (default 200) TCP connections to DST:PORT
 *                        with the smallest receive buffer, never read,
 *                        held for SECS seconds; prints how many connected
 *   writer ADDR PORT     accept connections on ADDR:PORT and write to each
 *                        as fast as it takes it, until killed
 *   partial SOCKPATH     connect to the daemon's stream socket as the
 *                        front-end, write the length and the first bytes
 *                        of a frame and stall, neither writing nor reading,
 *                        for SECS seconds; then finish the frame a byte at
 *                        a time, send one ARP request, and exit 0 only if
 *                        the daemon answers it within 5 s
 *
 * Everything runs in whatever network namespace it's started in (the
 * guest's, for all but writer and partial). It prints one line "MODE: N
 * sent" (or "connected", "answered") to stdout, and exits 1 on a failure
 * to set up, 0 otherwise: what the daemon does with the flood is for the
 * test to check.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/conn.h"
#include "common/frame.h"

static int secs = 10;
static unsigned count;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Address and family from a string; port set in network order */
static socklen_t addr_parse(const char *s, uint16_t port,
			    struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		return sizeof(*a4);
	}
	if (inet_pton(AF_INET6, s, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		return sizeof(*a6);
	}
	fprintf(stderr, "flooder: bad address %s\n", s);
	exit(2);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static uint16_t port_n(unsigned port0, unsigned i)
{
	return (uint16_t)(1 + (port0 - 1 + i) % 65535);
}

static int mode_udp(const char *dst, unsigned port0)
{
	struct sockaddr_storage ss;
	uint64_t end = now_ms() + (uint64_t)secs * 1000;
	unsigned long sent = 0;
	socklen_t sl;
	unsigned i;
	int s;

	sl = addr_parse(dst, 0, &ss);
	s = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	while (now_ms() < end) {
		for (i = 0; i < count && now_ms() < end; i++) {
			set_port(&ss, port_n(port0, i));
			/* ENOBUFS, EAGAIN, ICMP errors: a flood goes on */
			if (sendto(s, "flood", 5, MSG_DONTWAIT,
				   (struct sockaddr *)&ss, sl) == 5)
				sent++;
			if (!(i % 64))
				poll(NULL, 0, 1);
		}
	}
	printf("udp: %lu sent\n", sent);
	return 0;
}

static int mode_syn(const char *src, const char *dst, unsigned port0)
{
	uint64_t end = now_ms() + (uint64_t)secs * 1000;
	struct sockaddr_storage ss, sa;
	unsigned long sent = 0;
	uint8_t seg[24];
	socklen_t sl;
	unsigned i;
	int s;

	sl = addr_parse(dst, 0, &ss);
	addr_parse(src, 0, &sa);
	if (sa.ss_family != ss.ss_family || ss.ss_family != AF_INET) {
		fprintf(stderr, "flooder: syn: IPv4 addresses only\n");
		return 2;
	}
	s = socket(AF_INET, SOCK_RAW, IPPROTO_TCP);
	if (s < 0)
		die("raw socket");
	srandom((unsigned)getpid());
	while (now_ms() < end) {
		for (i = 0; i < count && now_ms() < end; i++) {
			uint16_t sport = (uint16_t)(1024 + random() % 60000);
			uint16_t dport = port_n(port0, i);
			uint32_t seq = (uint32_t)random(), sum;
			uint8_t ph[12];

			memset(seg, 0, sizeof(seg));
			seg[0] = sport >> 8;
			seg[1] = sport & 0xff;
			seg[2] = dport >> 8;
			seg[3] = dport & 0xff;
			memcpy(seg + 4, &seq, 4);
			seg[12] = 6 << 4;	/* 24 bytes: MSS option */
			seg[13] = 0x02;		/* SYN */
			seg[14] = 0xff;
			seg[15] = 0xff;
			seg[20] = 2;
			seg[21] = 4;
			seg[22] = 1460 >> 8;
			seg[23] = 1460 & 0xff;
			memcpy(ph, &((struct sockaddr_in *)&sa)->sin_addr, 4);
			memcpy(ph + 4, &((struct sockaddr_in *)&ss)->sin_addr,
			       4);
			ph[8] = 0;
			ph[9] = IPPROTO_TCP;
			ph[10] = 0;
			ph[11] = sizeof(seg);
			sum = csum_add(csum_add(0, ph, sizeof(ph)), seg,
				       sizeof(seg));
			put_be16(seg + 16, csum_fold(sum));
			if (sendto(s, seg, sizeof(seg), MSG_DONTWAIT,
				   (struct sockaddr *)&ss, sl) > 0)
				sent++;
			if (!(i % 64))
				poll(NULL, 0, 1);
		}
	}
	printf("syn: %lu sent\n", sent);
	return 0;
}

static int mode_icmp(const char *dst)
{
	uint64_t end = now_ms() + (uint64_t)secs * 1000;
	unsigned long sent = 0;
	struct sockaddr_storage ss;
	uint8_t msg[16];
	unsigned id, seq = 0;
	socklen_t sl;
	int s;

	sl = addr_parse(dst, 0, &ss);
	if (ss.ss_family != AF_INET) {
		fprintf(stderr, "flooder: icmp: IPv4 only\n");
		return 2;
	}
	s = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (s < 0)
		die("raw socket");
	/* Replies are not our business: don't keep them */
	shutdown(s, SHUT_RD);
	while (now_ms() < end) {
		seq++;
		for (id = 0; id <= 0xffff && now_ms() < end; id++) {
			uint16_t sum;

			memset(msg, 0, sizeof(msg));
			msg[0] = 8;		/* echo request */
			msg[4] = (uint8_t)(id >> 8);
			msg[5] = (uint8_t)id;
			msg[6] = (uint8_t)(seq >> 8);
			msg[7] = (uint8_t)seq;
			memcpy(msg + 8, "floodfld", 8);
			sum = csum_fold(csum_add(0, msg, sizeof(msg)));
			put_be16(msg + 2, sum);
			if (sendto(s, msg, sizeof(msg), MSG_DONTWAIT,
				   (struct sockaddr *)&ss, sl) > 0)
				sent++;
			if (!(id % 64))
				poll(NULL, 0, 1);
		}
	}
	printf("icmp: %lu sent\n", sent);
	return 0;
}

static int mode_hold(const char *dst, unsigned port)
{
	uint64_t end = now_ms() + (uint64_t)secs * 1000;
	struct sockaddr_storage ss;
	unsigned i, ok = 0;
	struct pollfd *p;
	socklen_t sl;
	int one = 1;

	sl = addr_parse(dst, (uint16_t)port, &ss);
	p = calloc(count, sizeof(*p));
	if (!p)
		die("calloc");
	for (i = 0; i < count; i++) {
		int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (s < 0)
			die("socket");
		/* The smallest buffer the kernel gives: a tiny window */
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
		if (connect(s, (struct sockaddr *)&ss, sl) &&
		    errno != EINPROGRESS)
			die("connect");
		p[i].fd = s;
		p[i].events = POLLOUT;
	}
	/* Count the ones that connect; never read anything */
	while (now_ms() < end && ok < count) {
		if (poll(p, count, 100) < 0 && errno != EINTR)
			die("poll");
		for (i = 0; i < count; i++) {
			int e = 0;
			socklen_t el = sizeof(e);

			if (p[i].fd < 0 || !(p[i].revents & (POLLOUT | POLLERR)))
				continue;
			getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &e, &el);
			if (!e)
				ok++;
			p[i].fd = -p[i].fd - 1;	/* poll() ignores it now */
		}
	}
	printf("hold: %u connected\n", ok);
	fflush(stdout);
	while (now_ms() < end)
		poll(NULL, 0, (int)(end - now_ms()));
	return 0;
}

__attribute__((noreturn))
static void mode_writer(const char *addr, unsigned port)
{
	static char buf[65536];
	struct pollfd p[1024];
	struct sockaddr_storage ss;
	unsigned n = 1, i;
	socklen_t sl;
	int one = 1;

	memset(buf, 'w', sizeof(buf));
	sl = addr_parse(addr, (uint16_t)port, &ss);
	p[0].fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (p[0].fd < 0)
		die("socket");
	setsockopt(p[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(p[0].fd, (struct sockaddr *)&ss, sl) ||
	    listen(p[0].fd, 1024))
		die("bind/listen");
	p[0].events = POLLIN;
	fprintf(stderr, "flooder: writer listening\n");
	for (;;) {
		if (poll(p, n, -1) < 0 && errno != EINTR)
			die("poll");
		if ((p[0].revents & POLLIN) && n < 1024) {
			int s = accept4(p[0].fd, NULL, NULL, SOCK_NONBLOCK);

			if (s >= 0) {
				p[n].fd = s;
				p[n].events = POLLOUT;
				n++;
			}
		}
		for (i = 1; i < n; i++) {
			if (p[i].revents & (POLLERR | POLLHUP)) {
				close(p[i].fd);
				p[i--] = p[--n];
				continue;
			}
			if (p[i].revents & POLLOUT)
				(void)!write(p[i].fd, buf, sizeof(buf));
		}
	}
}

/* qemu stream framing: 4-byte big-endian length, then the frame */
static int mode_partial(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint8_t frame[4 + 42], buf[65536];
	uint64_t end;
	size_t i;
	int s;

	/* ARP request from 52:54:00:f1:00:d0, 192.0.2.2, for 192.0.2.1 */
	static const uint8_t arp[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0x52, 0x54, 0x00, 0xf1, 0x00, 0xd0, 0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
		0x52, 0x54, 0x00, 0xf1, 0x00, 0xd0, 192, 0, 2, 2,
		0, 0, 0, 0, 0, 0, 192, 0, 2, 1,
	};

	if (strlen(path) >= sizeof(a.sun_path))
		return 2;
	strcpy(a.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("connect");

	frame[0] = frame[1] = 0;
	frame[2] = 0;
	frame[3] = sizeof(arp);
	memcpy(frame + 4, arp, sizeof(arp));

	/* Length and 10 bytes of the frame, then nothing at all */
	if (write(s, frame, 14) != 14)
		die("write");
	printf("partial: stalled\n");
	fflush(stdout);
	poll(NULL, 0, secs * 1000);

	/* The rest, a byte at a time, then the whole frame again */
	for (i = 14; i < sizeof(frame); i++) {
		if (write(s, frame + i, 1) != 1)
			die("write");
		poll(NULL, 0, 5);
	}
	if (write(s, frame, sizeof(frame)) != (ssize_t)sizeof(frame))
		die("write");

	/* Any ARP reply for 192.0.2.1 (the first frame may be one too) */
	end = now_ms() + 5000;
	fcntl(s, F_SETFL, O_NONBLOCK);
	while (now_ms() < end) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(s, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (i = 0; i + 4 + 42 <= (size_t)n; i++) {
			const uint8_t *f = buf + i + 4;

			if (f[12] == 0x08 && f[13] == 0x06 && f[21] == 2 &&
			    !memcmp(f + 28, "\xc0\x00\x02\x01", 4)) {
				printf("partial: answered\n");
				return 0;
			}
		}
	}
	printf("partial: no answer\n");
	return 1;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	int opt;

	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		switch (opt) {
		case 't':
			secs = atoi(optarg);
			break;
		case 'n':
			count = (unsigned)atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		goto usage;

	signal(SIGPIPE, SIG_IGN);
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(argv[0], "udp") && argc == 3) {
		count = count ? count : 40000;
		return mode_udp(argv[1], (unsigned)atoi(argv[2]));
	}
	if (!strcmp(argv[0], "syn") && argc == 4) {
		count = count ? count : 40000;
		return mode_syn(argv[1], argv[2], (unsigned)atoi(argv[3]));
	}
	if (!strcmp(argv[0], "icmp") && argc == 2)
		return mode_icmp(argv[1]);
	if (!strcmp(argv[0], "hold") && argc == 3) {
		count = count ? count : 200;
		return mode_hold(argv[1], (unsigned)atoi(argv[2]));
	}
	if (!strcmp(argv[0], "writer") && argc == 3)
		mode_writer(argv[1], (unsigned)atoi(argv[2]));
	if (!strcmp(argv[0], "partial") && argc == 2)
		return mode_partial(argv[1]);
usage:
	fprintf(stderr, "usage: flooder [-t SECS] [-n COUNT] "
		"udp|syn|icmp|hold|writer|partial ARG...\n");
	return 2;
}
