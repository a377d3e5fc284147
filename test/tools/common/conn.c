// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * conn.c - clock and daemon connection shared by the test tools (conn.h)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"

/**
 * now_ms() - CLOCK_MONOTONIC in milliseconds
 *
 * Return: the time
 */
uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/**
 * unix_connect_retry() - connect to a UNIX stream socket, retrying
 * @prog:	the tool's name, for messages
 * @path:	socket path
 * @timeout_ms:	keep retrying (every 20 ms) for this long
 * @bufsize:	SO_RCVBUF and SO_SNDBUF to ask for
 *
 * Return: the connected socket, non-blocking, or -1 (message printed)
 */
int unix_connect_retry(const char *prog, const char *path,
		       uint64_t timeout_ms, int bufsize)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	uint64_t deadline = now_ms() + timeout_ms;
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "%s: socket path too long\n", prog);
		return -1;
	}
	strcpy(addr.sun_path, path);
	for (;;) {
		struct timespec pause = { 0, 20 * 1000 * 1000 };

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fprintf(stderr, "%s: socket: %s\n", prog,
				strerror(errno));
			return -1;
		}
		if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
			break;
		close(fd);
		if (now_ms() > deadline) {
			fprintf(stderr, "%s: connect %s: %s\n", prog, path,
				strerror(errno));
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}
