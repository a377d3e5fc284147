// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bulk.c - the least a process can spend moving bulk TCP data: the
 * benchmark's "bare socket" figure (bench/ns.sh).
 *
 * bulk [-t SECS] [-l BYTES] [-r FILE] listen ADDR PORT send|recv|peek
 * bulk [-t SECS] [-l BYTES] [-r FILE] connect ADDR PORT send|recv|peek
 *
 *   listen      accept one connection on ADDR PORT
 *   connect     connect to ADDR PORT
 *   send        write BYTES at a time (default 1 MiB) with blocking
 *               send() for SECS seconds (default 8), then close
 *   recv        read BYTES at a time with blocking recv() until EOF
 *   peek        the same with MSG_PEEK at a peek offset (SO_PEEK_OFF),
 *               each BYTES read then dropped with one recv(MSG_TRUNC), as
 *               our daemon takes data for the guest
 *   -r FILE     create FILE once listening or connected
 *
 * At the end it prints one line on stdout:
 *   bytes=N secs=S cpu=C
 * N bytes moved in S seconds of transfer, C seconds of its own CPU time
 * (user + system, getrusage()), which includes the softirq work the
 * kernel runs on its time: on a veth pair, the other end's receive (for
 * a sender) or transmission (for a receiver) mostly.
 *
 * Nothing else: no event loop, no frames, no guest. What such a process
 * spends per GiB is what the kernel charges any process for those bytes
 * on that path, so a back-end can't get below it by much.
 *
 * Exit status: 0 success, 1 failure (message on stderr), 64 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BULK_MAX	(64L << 20)	/* largest -l */

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "bulk: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* touch() - create FILE, if there is one */
static void touch(const char *file)
{
	FILE *f = file ? fopen(file, "w") : NULL;

	if (file && !f)
		die(file);
	if (f)
		fclose(f);
}

/*
 * sock_open() - the connection, listening or connecting on ADDR PORT;
 * READY is created once listening or connected
 */
static int sock_open(int listening, const char *addr, const char *port,
		     const char *ready)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	int p = atoi(port), s, one = 1, c;
	socklen_t sl;

	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)p);
		sl = sizeof(*a4);
	} else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)p);
		sl = sizeof(*a6);
	} else {
		fprintf(stderr, "bulk: bad address '%s'\n", addr);
		exit(64);
	}
	s = socket(ss.ss_family, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	if (!listening) {
		if (connect(s, (struct sockaddr *)&ss, sl))
			die("connect");
		touch(ready);
		return s;
	}
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&ss, sl) || listen(s, 1))
		die("bind/listen");
	touch(ready);
	c = accept(s, NULL, NULL);
	if (c < 0)
		die("accept");
	close(s);
	return c;
}

int main(int argc, char **argv)
{
	double secs = 8, t0, t1, c0, c1;
	const char *ready = NULL;
	long len = 1L << 20;
	long long total = 0;
	int opt, s, peek = 0, zero = 0;
	char *buf;
	ssize_t n;

	while ((opt = getopt(argc, argv, "t:l:r:")) != -1) {
		switch (opt) {
		case 't':
			secs = atof(optarg);
			break;
		case 'l':
			len = atol(optarg);
			break;
		case 'r':
			ready = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 4 || len <= 0 || len > BULK_MAX || secs <= 0 ||
	    (strcmp(argv[optind], "listen") && strcmp(argv[optind], "connect")))
		goto usage;
	if (!strcmp(argv[optind + 3], "peek"))
		peek = 1;
	else if (strcmp(argv[optind + 3], "send") &&
		 strcmp(argv[optind + 3], "recv"))
		goto usage;

	buf = calloc(1, (size_t)len);
	if (!buf)
		die("calloc");
	s = sock_open(!strcmp(argv[optind], "listen"), argv[optind + 1],
		      argv[optind + 2], ready);
	if (peek && setsockopt(s, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)))
		die("SO_PEEK_OFF");

	t0 = mono_s();
	c0 = cpu_s();
	if (!strcmp(argv[optind + 3], "send")) {
		double end = t0 + secs;

		while (mono_s() < end) {
			n = send(s, buf, (size_t)len, MSG_NOSIGNAL);
			if (n < 0)
				die("send");
			total += n;
		}
	} else {
		for (;;) {
			n = recv(s, buf, (size_t)len, peek ? MSG_PEEK : 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				die("recv");
			if (!n)
				break;
			total += n;
			if (peek && recv(s, NULL, (size_t)n, MSG_TRUNC) != n)
				die("recv(MSG_TRUNC)");
		}
	}
	t1 = mono_s();
	c1 = cpu_s();
	close(s);
	printf("bytes=%lld secs=%.3f cpu=%.4f\n", total, t1 - t0, c1 - c0);
	return 0;

usage:
	fprintf(stderr, "usage: bulk [-t SECS] [-l BYTES] [-r FILE] "
		"listen|connect ADDR PORT send|recv|peek\n");
	return 64;
}
