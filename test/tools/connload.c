// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * connload.c - connection load for the benchmark's extra dimensions
 * (bench/dims.sh): TCP connection rate and many concurrent connections.
 *
 * connload [-t SECS] [-r FILE] [-d FILE] [-s FILE] MODE ARG...
 *
 *   serve ADDR PORT NPORTS echo|sink
 *        listen on PORT to PORT + NPORTS - 1 and serve every connection:
 *        echo what comes in, or read and drop it; until killed
 *   crr ADDR PORT
 *        for SECS (-t): connect, write 1 KiB, read the 1 KiB echo, close,
 *        again and again (TCP_CRR); prints
 *        "tx=N fails=F secs=S p50_us=X p99_us=Y" (per transaction)
 *   conns ADDR PORT NPORTS N
 *        open N connections (spread over the ports), all at once; then
 *        (-r FILE created) write to all of them, 16 KiB (-w BYTES) at a
 *        time, for SECS; then (-d FILE created) keep them open until -s FILE
 *        exists; prints "open=N failed=F bytes=B secs=S"
 *
 * A connection counts as open once connect() completes; one that fails
 * (refused, reset, 20 s without completing) as failed. Raises its own
 * descriptor limits (as root) to what N needs. Every loop is bounded in
 * count and time; exit status 0, 1 on errors, 64 on usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 1024		/* crr: bytes each way */
#define CHUNK (16 * 1024)	/* conns: bytes per write, by default */
#define CHUNK_MAX (1024 * 1024)	/* -w at most */
#define PORTS_MAX 64
#define CONNS_MAX 200000
#define CONNECT_NS (20 * 1000000000LL)

static int secs = 5;
static size_t chunk = CHUNK;		/* -w */
static const char *ready_file, *done_file, *stop_file;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: connload [-t SECS] [-r FILE] [-d FILE] "
		"[-s FILE] [-w BYTES] serve ADDR PORT NPORTS echo|sink | crr ADDR PORT | "
		"conns ADDR PORT NPORTS N\n");
	exit(64);
}

static void touch(const char *path)
{
	FILE *f;

	if (path && (f = fopen(path, "w")))
		fclose(f);
}

/* Descriptors for @n connections, and some */
static void fd_limit(unsigned long n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur >= n + 64)
		return;
	rl.rlim_cur = n + 64;
	if (rl.rlim_max < rl.rlim_cur)
		rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		perror("connload: RLIMIT_NOFILE");
}

static int addr_fill(struct sockaddr_in *sa, const char *addr, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
		fprintf(stderr, "connload: bad address %s\n", addr);
		return -1;
	}
	return 0;
}

/* ---- serve ---------------------------------------------------------- */

static int serve(const char *addr, int port, int nports, bool echo)
{
	static uint8_t buf[CHUNK];
	struct epoll_event ev, evs[256];
	int ep, i, one = 1;

	fd_limit(CONNS_MAX);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0 || nports < 1 || nports > PORTS_MAX)
		return 1;
	for (i = 0; i < nports; i++) {
		struct sockaddr_in sa;
		int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (s < 0 || addr_fill(&sa, addr, port + i))
			return 1;
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) ||
		    listen(s, 4096)) {
			perror("connload: bind/listen");
			return 1;
		}
		ev.events = EPOLLIN;
		ev.data.u64 = (uint64_t)s << 1 | 1;
		epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	}
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);

		for (i = 0; i < n; i++) {
			int fd = (int)(evs[i].data.u64 >> 1), c, k;
			ssize_t r;

			if (evs[i].data.u64 & 1) {
				/* A listener: take what the backlog has */
				for (k = 0; k < 256; k++) {
					c = accept4(fd, NULL, NULL,
						    SOCK_NONBLOCK);
					if (c < 0)
						break;
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY,
						   &one, sizeof(one));
					ev.events = EPOLLIN | EPOLLRDHUP;
					ev.data.u64 = (uint64_t)c << 1;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
				continue;
			}
			for (k = 0; k < 16; k++) {
				r = read(fd, buf, sizeof(buf));
				if (r > 0 && echo &&
				    write(fd, buf, (size_t)r) != r) {
					r = -1;
					errno = EIO;
				}
				if (r <= 0)
					break;
			}
			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
			}
		}
	}
	return 0;
}

/* ---- crr ------------------------------------------------------------ */

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static int crr(const char *addr, int port)
{
	static long long lat[4 * 1000 * 1000];
	static uint8_t msg[MSG], in[MSG];
	long long t0 = now_ns(), end = t0 + secs * 1000000000LL, t;
	unsigned long tx = 0, fails = 0;
	struct sockaddr_in sa;
	int one = 1;

	if (addr_fill(&sa, addr, port))
		return 1;
	memset(msg, 'x', sizeof(msg));
	while ((t = now_ns()) < end && tx < sizeof(lat) / sizeof(lat[0])) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct timeval tv = { 5, 0 };
		size_t got = 0;
		ssize_t r;

		if (s < 0)
			return 1;
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) ||
		    write(s, msg, sizeof(msg)) != (ssize_t)sizeof(msg)) {
			fails++;
			close(s);
			continue;
		}
		while (got < sizeof(in)) {
			r = read(s, in + got, sizeof(in) - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(s);
		if (got < sizeof(in)) {
			fails++;
			continue;
		}
		lat[tx++] = now_ns() - t;
	}
	t = now_ns();
	if (!tx) {
		printf("tx=0 fails=%lu secs=%.3f p50_us=0 p99_us=0\n", fails,
		       (double)(t - t0) / 1e9);
		return 1;
	}
	qsort(lat, tx, sizeof(lat[0]), cmp_ll);
	printf("tx=%lu fails=%lu secs=%.3f p50_us=%.1f p99_us=%.1f\n", tx,
	       fails, (double)(t - t0) / 1e9, (double)lat[tx / 2] / 1000,
	       (double)lat[tx * 99 / 100] / 1000);
	return 0;
}

/* ---- conns ---------------------------------------------------------- */

static int conns(const char *addr, int port, int nports, unsigned long n)
{
	struct epoll_event ev, evs[1024];
	unsigned long i, open_n = 0, failed = 0, pending = 0;
	unsigned long long bytes = 0;
	long long t0, end;
	uint8_t *buf;
	int ep, *fds;
	bool *up;

	if (n < 1 || n > CONNS_MAX || nports < 1 || nports > PORTS_MAX)
		usage();
	fd_limit(n);
	fds = calloc(n, sizeof(*fds));
	up = calloc(n, sizeof(*up));
	buf = malloc(chunk);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!fds || !up || !buf || ep < 0) {
		free(fds);
		free(up);
		free(buf);
		return 1;
	}
	memset(buf, 'y', chunk);

	/* Open them all, non-blocking; completion (or failure) on EPOLLOUT */
	for (i = 0; i < n; i++) {
		struct sockaddr_in sa;
		int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		fds[i] = -1;
		if (s < 0) {
			failed++;
			continue;
		}
		addr_fill(&sa, addr, port + (int)(i % (unsigned long)nports));
		if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) &&
		    errno != EINPROGRESS) {
			failed++;
			close(s);
			continue;
		}
		fds[i] = s;
		ev.events = EPOLLOUT;
		ev.data.u64 = i;
		epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
		pending++;
	}
	end = now_ns() + CONNECT_NS;
	while (pending && now_ns() < end) {
		int k, m = epoll_wait(ep, evs, 1024, 100);

		for (k = 0; k < m; k++) {
			int err = 0;
			socklen_t l = sizeof(err);

			i = evs[k].data.u64;
			epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], NULL);
			pending--;
			if (getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &l) ||
			    err) {
				failed++;
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			up[i] = true;
			open_n++;
		}
	}
	/* Still connecting after the deadline: failed */
	for (i = 0; i < n && pending; i++) {
		if (fds[i] >= 0 && !up[i]) {
			close(fds[i]);
			fds[i] = -1;
			pending--;
			failed++;
		}
	}
	fprintf(stderr, "connload: %lu open, %lu failed\n", open_n, failed);
	touch(ready_file);

	/* Write to every open one, a chunk at a time, for SECS */
	for (i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		ev.events = EPOLLOUT;
		ev.data.u64 = i;
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	t0 = now_ns();
	end = t0 + secs * 1000000000LL;
	while (open_n && now_ns() < end) {
		int k, m = epoll_wait(ep, evs, 1024, 100);

		for (k = 0; k < m; k++) {
			ssize_t r = write(fds[evs[k].data.u64], buf, chunk);

			if (r > 0)
				bytes += (unsigned long long)r;
		}
	}
	printf("open=%lu failed=%lu bytes=%llu secs=%.3f\n", open_n, failed,
	       bytes, (double)(now_ns() - t0) / 1e9);
	fflush(stdout);
	touch(done_file);
	/* Hold them open until told (at most 5 minutes) */
	end = now_ns() + 300 * 1000000000LL;
	while (stop_file && access(stop_file, F_OK) && now_ns() < end)
		usleep(20000);
	free(fds);
	free(up);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int opt;

	signal(SIGPIPE, SIG_IGN);
	while ((opt = getopt(argc, argv, "t:r:d:s:w:")) != -1) {
		switch (opt) {
		case 't':
			secs = atoi(optarg);
			break;
		case 'r':
			ready_file = optarg;
			break;
		case 'd':
			done_file = optarg;
			break;
		case 's':
			stop_file = optarg;
			break;
		case 'w':
			chunk = strtoul(optarg, NULL, 10);
			if (chunk < 1 || chunk > CHUNK_MAX)
				usage();
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 5 && !strcmp(argv[0], "serve"))
		return serve(argv[1], atoi(argv[2]), atoi(argv[3]),
			     !strcmp(argv[4], "echo"));
	if (argc == 3 && !strcmp(argv[0], "crr"))
		return crr(argv[1], atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[0], "conns"))
		return conns(argv[1], atoi(argv[2]), atoi(argv[3]),
			     strtoul(argv[4], NULL, 10));
	usage();
	return 64;
}
