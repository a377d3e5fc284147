// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_loop.c - loop_wait()'s deadline (loop.c), which input coalescing
 * polls by: a wait with nothing to report returns by its deadline, one
 * whose deadline has passed returns at once, events are reported either
 * way; the same where epoll_pwait2() is refused (a seccomp filter of the
 * test's own makes it fail with EPERM, as a container's profile would),
 * with epoll_wait()'s milliseconds instead.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctx.h"
#include "loop.h"
#include "util.h"

#define MS 1000000ULL

static struct ctx c;

/* The checks, in whatever process runs them: 0 if all held, else the
 * number of the first that didn't
 */
static int deadline_checks(void)
{
	struct epoll_event ev[4];
	uint64_t t0, one = 1;
	int efd, n;

	memset(&c, 0, sizeof(c));
	if (loop_init(&c))
		return 1;

	/* Nothing happens: back by the deadline, no events */
	t0 = now_ns();
	n = loop_wait(&c, ev, 4, true, t0 + 3 * MS);
	if (n != 0 || now_ns() < t0 + 3 * MS)
		return 2;

	/* A deadline in the past: at once */
	if (loop_wait(&c, ev, 4, true, t0) != 0)
		return 3;

	/* An event is reported, deadline or not */
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0 || loop_add(&c, efd, EPOLLIN, loop_ref(REF_FE_KICK, 7, 9)))
		return 4;
	if (write(efd, &one, sizeof(one)) != sizeof(one))
		return 5;
	n = loop_wait(&c, ev, 4, true, now_ns() + 1000 * MS);
	if (n != 1 || ((union epoll_ref){ .u64 = ev[0].data.u64 }).idx != 7)
		return 6;
	n = loop_wait(&c, ev, 4, true, t0);
	if (n != 1)
		return 7;
	close(efd);
	close(c.epollfd);
	return 0;
}

static void test_deadline_with_epoll_pwait2(void **state)
{
	(void)state;
	assert_int_equal(deadline_checks(), 0);
}

static void test_deadline_where_epoll_pwait2_is_refused(void **state)
{
	struct epoll_event ev;
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);

		if (!f || seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM),
					   SCMP_SYS(epoll_pwait2), 0) ||
		    seccomp_load(f))
			_exit(100);
		seccomp_release(f);
		/* The filter is there */
		if (epoll_pwait2(-1, &ev, 1, NULL, NULL) != -1 ||
		    errno != EPERM)
			_exit(101);
		_exit(deadline_checks());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadline_with_epoll_pwait2),
		cmocka_unit_test(test_deadline_where_epoll_pwait2_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
