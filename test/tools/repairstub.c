// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * repairstub.c - a passt-repair that dies at a chosen moment, for tests.
 *
 * Usage: repairstub [-q N] [-s N -g FILE [-a]] PATH
 *
 * Connects to the daemon's repair socket PATH and serves its requests as
 * passt-repair does (one command byte, 1 on, 0 off, -1 off without window
 * probe, for the sockets passed with SCM_RIGHTS; the byte echoed), without
 * passt-repair's checks, filter or sandbox. With -q N it quits when the
 * N-th request comes in, before applying it and without an answer: a
 * helper killed between two requests (a poke's "on" applied, its "off"
 * never). With -s N it stalls at the N-th request, before applying it,
 * until FILE (-g) exists, up to 120 s: a helper that is slow to answer;
 * with -a it applies that request first, and stalls before its answer
 * (a helper that set repair mode, and then hung).
 * It needs CAP_NET_ADMIN, as passt-repair does. Messages on stderr:
 * "repairstub: connected", one line per request, "repairstub: quitting
 * at request N", "repairstub: stalling at request N", "repairstub: going
 * on". Exit status 0 on end of file or at -q, 1 on errors.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define STUB_FDS_MAX	253	/* SCM_MAX_FD */

/* Apply @cmd to the @n sockets of @fds, and close them */
static void stub_apply(const int *fds, int n, int8_t cmd)
{
	int i, v = cmd;

	for (i = 0; i < n; i++) {
		if (setsockopt(fds[i], IPPROTO_TCP, TCP_REPAIR, &v, sizeof(v)))
			fprintf(stderr, "repairstub: TCP_REPAIR %i: %s\n", v,
				strerror(errno));
		close(fds[i]);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	unsigned long quit_at = 0, stall_at = 0, nreq = 0;
	const char *go = NULL;
	bool apply_first = false;
	int s, opt;

	while ((opt = getopt(argc, argv, "q:s:g:a")) != -1) {
		if (opt == 'q')
			quit_at = strtoul(optarg, NULL, 0);
		else if (opt == 's')
			stall_at = strtoul(optarg, NULL, 0);
		else if (opt == 'g')
			go = optarg;
		else if (opt == 'a')
			apply_first = true;
		else
			goto usage;
	}
	if (optind != argc - 1 || strlen(argv[optind]) >= sizeof(a.sun_path) ||
	    (stall_at && !go))
		goto usage;
	memcpy(a.sun_path, argv[optind], strlen(argv[optind]) + 1);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		fprintf(stderr, "repairstub: %s: %s\n", a.sun_path,
			strerror(errno));
		return 1;
	}
	fprintf(stderr, "repairstub: connected\n");

	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * STUB_FDS_MAX)];
			struct cmsghdr align;
		} u;
		int8_t cmd;
		struct iovec iov = { &cmd, 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		struct cmsghdr *cm;
		int fds[STUB_FDS_MAX], n = 0;
		ssize_t r = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);

		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return 0;
		if (r < 0) {
			fprintf(stderr, "repairstub: recvmsg: %s\n",
				strerror(errno));
			return 1;
		}
		nreq++;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t len;

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			len = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			if (len > STUB_FDS_MAX - (size_t)n)
				len = STUB_FDS_MAX - (size_t)n;
			memcpy(fds + n, CMSG_DATA(cm), len * sizeof(int));
			n += (int)len;
		}
		fprintf(stderr, "repairstub: request %lu: %i for %i socket(s)\n",
			nreq, cmd, n);
		if (quit_at && nreq == quit_at) {
			fprintf(stderr, "repairstub: quitting at request %lu\n",
				nreq);
			return 0;
		}
		if (stall_at && nreq == stall_at) {
			unsigned waited;

			if (apply_first) {
				stub_apply(fds, n, cmd);
				n = 0;
			}
			fprintf(stderr, "repairstub: stalling at request %lu\n",
				nreq);
			for (waited = 0; access(go, F_OK) && waited < 12000;
			     waited++)
				usleep(10000);
			fprintf(stderr, "repairstub: going on\n");
		}
		stub_apply(fds, n, cmd);
		if (send(s, &cmd, 1, MSG_NOSIGNAL) != 1) {
			fprintf(stderr, "repairstub: send: %s\n",
				strerror(errno));
			return 1;
		}
	}
usage:
	fprintf(stderr, "Usage: %s [-q N] [-s N -g FILE [-a]] PATH\n", argv[0]);
	return 1;
}
