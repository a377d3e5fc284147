// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_migrate_load.c - the target's side of the device-state transfer
 * (migrate/transfer.c) reads a bounded amount per loop round: a pipe full
 * of stream (here garbage, which is read and dropped) takes several
 * calls of migrate_pipe_handler(), each reading at most
 * MIGRATE_LOAD_ROUND bytes, so that a front-end that keeps the pipe full
 * can't keep the loop away from everything else; at end of file the
 * garbage is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ctx.h"
#include "loop.h"
#include "migrate/transfer.h"

static struct ctx c;

/* Bytes in the pipe of which @fd is an end */
static int in_pipe(int fd)
{
	int n = 0;

	assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
	return n;
}

/* The transfer's epoll reference, as the loop would hand it over */
static union epoll_ref pipe_ref(void)
{
	struct epoll_event ev;

	assert_int_equal(epoll_wait(c.epollfd, &ev, 1, 1000), 1);
	return (union epoll_ref){ .u64 = ev.data.u64 };
}

static void test_load_read_is_bounded_per_round(void **state)
{
	static uint8_t junk[65536];
	int p[2], full, calls = 0, left;
	union epoll_ref ref;

	(void)state;
	c.epollfd = epoll_create1(EPOLL_CLOEXEC);
	assert_true(c.epollfd >= 0);
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	/* As large as we may (fs.pipe-max-size: 1 MiB), then full */
	if (fcntl(p[1], F_SETPIPE_SZ, 4 << 20) < 0)
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	memset(junk, 0xa5, sizeof(junk));
	while (write(p[1], junk, sizeof(junk)) > 0)
		;
	full = in_pipe(p[1]);
	if (full <= 2 * MIGRATE_LOAD_ROUND)
		skip();		/* a pipe this small shows nothing */

	assert_int_equal(migrate_state_fd(&c, MIGRATE_LOAD, p[0]), 0);
	ref = pipe_ref();
	migrate_pipe_handler(&c, ref, EPOLLIN);
	left = in_pipe(p[1]);
	assert_true(left > 0);
	assert_true(full - left <= MIGRATE_LOAD_ROUND);

	/* The rest, a round at a time, then end of file: refused */
	while ((left = in_pipe(p[1])) > 0 && calls++ < 1000) {
		migrate_pipe_handler(&c, pipe_ref(), EPOLLIN);
		assert_true(left - in_pipe(p[1]) <= MIGRATE_LOAD_ROUND);
	}
	assert_true(calls >= full / MIGRATE_LOAD_ROUND - 1);
	close(p[1]);
	migrate_pipe_handler(&c, pipe_ref(), EPOLLIN);
	assert_true(migrate_check(&c, NULL) < 0);
	assert_int_not_equal(migrate_check(&c, NULL), -EINPROGRESS);
	close(c.epollfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_read_is_bounded_per_round),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
