// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * repairsrv.c - the daemon's side of the passt-repair protocol, for tests.
 *
 * Usage: repairsrv [-n N] [-t SECS] [-d MS] [-w FILE] [-m MODE] [-b] PATH
 *
 * Listens on the UNIX socket PATH (mode 0666, so that an unprivileged
 * helper can connect too), optionally waiting -d MS milliseconds between
 * bind() and listen() so that a helper watching the directory meets
 * ECONNREFUSED first, and accepts one helper. It then makes N established
 * TCP sockets (N/2 loopback connections, both ends; the namespace needs lo
 * up) and runs MODE:
 *
 *   cycle      (default) commands ON, OFF, ON, OFF_NO_WP (-1), each sent
 *              for all N sockets in batches of 1, 253 (SCM_MAX_FD), then
 *              up to 253; each batch's echo must equal the command, and
 *              after each command getsockopt(TCP_REPAIR) on every socket
 *              must say 1 for ON and 0 otherwise. Then the connection is
 *              closed: the helper should exit 0
 *   reset      ON for one socket, then close without reading the echo, so
 *              the helper's next recvmsg() gets ECONNRESET
 *   bad-cmd    command 5 with one socket: expect the connection to close,
 *              without an echo, and the socket untouched
 *   no-fd      command 1 without any descriptor: expect the close
 *   not-tcp    command 1 with a UDP socket: expect the close
 *   mixed      command 1 with a TCP socket, a UDP socket, another TCP
 *              socket: expect the close, and neither TCP socket in repair
 *              mode or with a socket filter (a request is all or nothing)
 *   unix       command 1 with a UNIX stream socket: expect the close, and
 *              no socket filter on it
 *   pipe       command 1 with a pipe: expect the close
 *   expect-fail  ON for all N sockets in one batch (N <= 253): expect the
 *              close (a helper without CAP_NET_ADMIN), no socket in repair
 *   filter     the drop-all filter: of N sockets (N <= 252, even), the
 *              first of each connected pair made deaf (IP_MINTTL 255), its
 *              peer sending with TTL 255, which that limit lets through;
 *              ON for all in one batch: each deaf socket must have a
 *              filter, the others none, and what its peer sends must be
 *              dropped: retransmitted, never queued. With -b, the filter
 *              must be the helper's shared eBPF program (SO_GET_FILTER
 *              can't read it back: EACCES). Then OFF: no filter left, and
 *              the peer's data arrives
 *
 * With -w FILE, repairsrv keeps the connection open once MODE is done
 * (saying "repairsrv: waiting") until FILE exists, so that a test can look
 * at the helper meanwhile.
 *
 * Every wait has a deadline (-t, default 10 s). Messages go to stderr;
 * "repairsrv: listening" once PATH accepts connections, "repairsrv:
 * connected" once the helper is in.
 *
 * Exit status: 0 if the helper behaved as MODE expects, 1 if not, 2 on
 * usage or set-up errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "kernel_abi.h"

#define MAX_BATCH 253
#define MAX_SOCKS 2048
#define USAGE "usage: repairsrv [-n N] [-t SECS] [-d MS] [-w FILE] " \
	      "[-m MODE] [-b] PATH"

static int timeout_ms = 10000;

__attribute__((format(printf, 2, 3), noreturn))
static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "repairsrv: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(status);
}

/* wait_in() - poll fd for input until the deadline: 1 ready, 0 timeout */
static int wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int rc;

	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		die(2, "poll: %s", strerror(errno));
	return rc;
}

/* send_cmd() - one request: the command byte, fds as SCM_RIGHTS if n > 0 */
static void send_cmd(int s, int8_t cmd, const int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_BATCH)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = &cmd, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (n) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}

	if (sendmsg(s, &mh, MSG_NOSIGNAL) != 1)
		die(1, "sendmsg (command %d, %d fds): %s", cmd, n,
		    strerror(errno));
}

/* recv_echo() - the helper's reply: the byte, or -1 on close/reset */
static int recv_echo(int s)
{
	int8_t b;
	ssize_t n;

	if (!wait_in(s))
		die(1, "no reply from the helper within %d ms", timeout_ms);
	n = recv(s, &b, 1, 0);
	if (n == 1)
		return b;
	if (n == 0 || errno == ECONNRESET)
		return -256;
	die(1, "recv: %s", strerror(errno));
	return -256;
}

static int repair_get(int fd)
{
	socklen_t len = sizeof(int);
	int v = -1;

	if (getsockopt(fd, SOL_TCP, TCP_REPAIR, &v, &len))
		die(1, "getsockopt(TCP_REPAIR): %s", strerror(errno));
	return v;
}

/* check_all() - every socket's TCP_REPAIR is @want: else fail */
static void check_all(const int *fds, int n, int want, const char *what)
{
	int i, v;

	for (i = 0; i < n; i++) {
		v = repair_get(fds[i]);
		if (v != want)
			die(1, "%s: socket %d of %d has TCP_REPAIR %d, not %d",
			    what, i + 1, n, v, want);
	}
}

/* make_socks() - n established TCP sockets over loopback */
static void make_socks(int *fds, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l, i;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, n) || getsockname(l, (struct sockaddr *)&a, &len))
		die(2, "loopback listener: %s (is lo up?)", strerror(errno));

	for (i = 0; i < n; i += 2) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 ||
		    connect(fds[i], (struct sockaddr *)&a, sizeof(a)))
			die(2, "loopback connect: %s", strerror(errno));
		if (i + 1 < n) {
			fds[i + 1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
			if (fds[i + 1] < 0)
				die(2, "accept: %s", strerror(errno));
		}
	}
	close(l);
}

/* no_filter() - fail if a socket filter is attached to @fd */
static void no_filter(int fd, const char *what)
{
	socklen_t len = 0;

	/* SO_GET_FILTER with no room: the length, in instructions */
	if (getsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, NULL, &len))
		die(1, "%s: SO_GET_FILTER: %s", what, strerror(errno));
	if (len)
		die(1, "%s: a socket filter of %u instruction(s) is attached",
		    what, (unsigned)len);
}

/*
 * filter_kind() - the filter on @fd: 0 none, 1 classic, 2 eBPF (which
 * SO_GET_FILTER can't read back)
 */
static int filter_kind(int fd, const char *what)
{
	socklen_t len = 0;

	if (!getsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, NULL, &len))
		return len ? 1 : 0;
	if (errno == EACCES)
		return 2;
	die(1, "%s: SO_GET_FILTER: %s", what, strerror(errno));
	return -1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* sockopt_int() - an integer socket option of @fd */
static int sockopt_int(int fd, int level, int opt)
{
	socklen_t len = sizeof(int);
	int v = 0;

	if (getsockopt(fd, level, opt, &v, &len))
		die(2, "getsockopt(%d, %d): %s", level, opt, strerror(errno));
	return v;
}

/*
 * run_filter() - the drop-all filter on deaf sockets (see "filter" at the
 * top); @bpf: it must be the shared eBPF program
 */
static void run_filter(int s, int *fds, int n, int bpf)
{
	int deaf[MAX_BATCH], peer[MAX_BATCH], ttl = 255, i, r, v;
	struct tcp_info ti;
	socklen_t sl;
	long end;

	if (n % 2 || n > MAX_BATCH - 1)
		die(2, "filter: an even N, at most %d", MAX_BATCH - 1);
	make_socks(fds, n);
	for (i = 0; i < n; i += 2) {
		if (setsockopt(fds[i], IPPROTO_IP, IP_MINTTL, &ttl,
			       sizeof(ttl)) ||
		    setsockopt(fds[i + 1], IPPROTO_IP, IP_TTL, &ttl,
			       sizeof(ttl)))
			die(2, "IP_MINTTL, IP_TTL: %s", strerror(errno));
	}
	send_cmd(s, 1, fds, n);
	if ((r = recv_echo(s)) != 1)
		die(1, "filter: ON: reply %d", r);
	check_all(fds, n, 1, "filter: ON");
	for (i = 0; i < n; i++) {
		int k = filter_kind(fds[i], "filter: ON");

		if (i % 2 && k)
			die(1, "filter: socket %d, not deaf, has a filter", i);
		if (!(i % 2) && (!k || (bpf && k != 2)))
			die(1, "filter: deaf socket %d has %s", i,
			    !k ? "no filter" : "a classic filter, not the "
						"shared eBPF program");
		if (i % 2)
			peer[i / 2] = fds[i];
		else
			deaf[i / 2] = fds[i];
	}
	/* The peers leave repair mode to send */
	send_cmd(s, 0, peer, n / 2);
	if ((r = recv_echo(s)) != 0)
		die(1, "filter: OFF for the peers: reply %d", r);
	check_all(peer, n / 2, 0, "filter: OFF for the peers");

	/* The peers send: each segment must reach the socket (TTL 255) and
	 * be dropped by the filter: sent again, and never queued
	 */
	for (i = 0; i < n; i += 2) {
		if (send(fds[i + 1], "x", 1, MSG_DONTWAIT) != 1)
			die(2, "filter: send: %s", strerror(errno));
	}
	end = now_ms() + timeout_ms;
	for (i = 0; i < n; i += 2) {
		do {
			sl = sizeof(ti);
			if (getsockopt(fds[i + 1], IPPROTO_TCP, TCP_INFO, &ti,
				       &sl))
				die(2, "TCP_INFO: %s", strerror(errno));
			if (now_ms() > end)
				die(1, "filter: peer %d never sent again", i);
			if (!ti.tcpi_total_retrans)
				poll(NULL, 0, 20);
		} while (!ti.tcpi_total_retrans);
		if ((v = sockopt_int(fds[i], SOL_SOCKET, SO_ERROR)) ||
		    ioctl(fds[i], FIONREAD, &v) || v)
			die(1, "filter: socket %d took %d byte(s) its filter "
			    "should have dropped", i, v);
	}
	fprintf(stderr, "repairsrv: filter: %d deaf socket(s) with %s "
		"filter, dropping\n", n / 2, bpf ? "the eBPF" : "a");

	send_cmd(s, 0, deaf, n / 2);
	if ((r = recv_echo(s)) != 0)
		die(1, "filter: OFF: reply %d", r);
	check_all(fds, n, 0, "filter: OFF");
	for (i = 0; i < n; i++)
		no_filter(fds[i], "filter: OFF");
	for (i = 0; i < n; i += 2) {
		do {
			if (ioctl(fds[i], FIONREAD, &v))
				die(2, "FIONREAD: %s", strerror(errno));
			if (now_ms() > end + timeout_ms)
				die(1, "filter: socket %d: nothing after OFF",
				    i);
			if (!v)
				poll(NULL, 0, 20);
		} while (!v);
	}
}

/* expect_close() - the helper must close without echoing */
static void expect_close(int s, const char *what)
{
	int r = recv_echo(s);

	if (r != -256)
		die(1, "%s: the helper replied %d instead of closing", what, r);
	fprintf(stderr, "repairsrv: %s: helper closed the connection\n", what);
}

static void run_cycle(int s, const int *fds, int n)
{
	static const int8_t cmds[] = { 1, 0, 1, -1 };
	unsigned int c;
	int off, b, batches, r;

	for (c = 0; c < sizeof(cmds); c++) {
		batches = 0;
		for (off = 0; off < n; off += b) {
			b = off ? MAX_BATCH : 1;
			if (b > n - off)
				b = n - off;
			send_cmd(s, cmds[c], fds + off, b);
			r = recv_echo(s);
			if (r != cmds[c])
				die(1, "command %d, batch of %d at %d: reply %d",
				    cmds[c], b, off, r);
			batches++;
		}
		check_all(fds, n, cmds[c] == 1, "after command");
		fprintf(stderr, "repairsrv: command %d: %d sockets, %d batches, ok\n",
			cmds[c], n, batches);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *mode = "cycle", *wait_file = NULL;
	int n = 600, delay = 0, opt, l, s, bpf = 0;
	static int fds[MAX_SOCKS];

	while ((opt = getopt(argc, argv, "n:t:d:w:m:b")) != -1) {
		switch (opt) {
		case 'n':
			n = atoi(optarg);
			break;
		case 't':
			timeout_ms = atoi(optarg) * 1000;
			break;
		case 'd':
			delay = atoi(optarg);
			break;
		case 'm':
			mode = optarg;
			break;
		case 'b':
			bpf = 1;
			break;
		case 'w':
			wait_file = optarg;
			break;
		default:
			die(2, USAGE);
		}
	}
	if (optind != argc - 1 || n < 1 || n > MAX_SOCKS || timeout_ms <= 0)
		die(2, USAGE);
	if (strlen(argv[optind]) >= sizeof(a.sun_path))
		die(2, "path too long");
	strcpy(a.sun_path, argv[optind]);

	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(a.sun_path);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)))
		die(2, "bind %s: %s", a.sun_path, strerror(errno));
	if (chmod(a.sun_path, 0666))
		die(2, "chmod %s: %s", a.sun_path, strerror(errno));
	if (delay) {
		struct timespec ts = { delay / 1000,
				       (delay % 1000) * 1000000L };

		/* Not synchronisation: a window for ECONNREFUSED */
		nanosleep(&ts, NULL);
	}
	if (listen(l, 1))
		die(2, "listen: %s", strerror(errno));
	fprintf(stderr, "repairsrv: listening\n");

	if (!wait_in(l))
		die(1, "no helper connected within %d ms", timeout_ms);
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0)
		die(2, "accept: %s", strerror(errno));
	fprintf(stderr, "repairsrv: connected\n");

	if (!strcmp(mode, "cycle")) {
		make_socks(fds, n);
		run_cycle(s, fds, n);
	} else if (!strcmp(mode, "filter")) {
		run_filter(s, fds, n, bpf);
	} else if (!strcmp(mode, "reset")) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		make_socks(fds, 2);
		send_cmd(s, 1, fds, 1);
		/* The echo is there, unread: close() now resets */
		if (poll(&p, 1, timeout_ms) != 1)
			die(1, "no reply from the helper");
		check_all(fds, 1, 1, "reset");
	} else if (!strcmp(mode, "bad-cmd")) {
		make_socks(fds, 2);
		send_cmd(s, 5, fds, 1);
		expect_close(s, "command 5");
		check_all(fds, 1, 0, "command 5");
	} else if (!strcmp(mode, "no-fd")) {
		send_cmd(s, 1, NULL, 0);
		expect_close(s, "no descriptors");
	} else if (!strcmp(mode, "not-tcp")) {
		fds[0] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fds[0] < 0)
			die(2, "socket: %s", strerror(errno));
		send_cmd(s, 1, fds, 1);
		expect_close(s, "UDP socket");
	} else if (!strcmp(mode, "mixed")) {
		int tcp[2], mix[3];

		make_socks(tcp, 2);
		mix[0] = tcp[0];
		mix[1] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		mix[2] = tcp[1];
		if (mix[1] < 0)
			die(2, "socket: %s", strerror(errno));
		send_cmd(s, 1, mix, 3);
		expect_close(s, "TCP, UDP, TCP");
		check_all(tcp, 2, 0, "TCP, UDP, TCP");
		no_filter(tcp[0], "TCP, UDP, TCP: the first");
		no_filter(tcp[1], "TCP, UDP, TCP: the last");
	} else if (!strcmp(mode, "unix")) {
		int sp[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
			die(2, "socketpair: %s", strerror(errno));
		send_cmd(s, 1, sp, 1);
		expect_close(s, "UNIX socket");
		no_filter(sp[0], "UNIX socket");
	} else if (!strcmp(mode, "pipe")) {
		int p[2];

		if (pipe2(p, O_CLOEXEC))
			die(2, "pipe: %s", strerror(errno));
		send_cmd(s, 1, p, 1);
		expect_close(s, "pipe");
	} else if (!strcmp(mode, "expect-fail")) {
		if (n > MAX_BATCH)
			die(2, "expect-fail: at most %d sockets", MAX_BATCH);
		make_socks(fds, n);
		send_cmd(s, 1, fds, n);
		expect_close(s, "repair on");
		check_all(fds, n, 0, "repair on refused");
	} else {
		die(2, "unknown mode %s", mode);
	}

	if (wait_file) {
		int i;

		fprintf(stderr, "repairsrv: waiting\n");
		for (i = 0; access(wait_file, F_OK); i++) {
			if (i * 20 > timeout_ms)
				die(1, "%s never appeared", wait_file);
			poll(NULL, 0, 20);
		}
	}

	close(s);
	close(l);
	unlink(a.sun_path);
	fprintf(stderr, "repairsrv: %s: ok\n", mode);
	return 0;
}
