// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_vhost_user.c - the file descriptors QEMU hands us for kicks,
 * interrupts, errors and the dirty log's "updated" notification: eventfds
 * only, made non-blocking (so that writing one never stalls us); pipes,
 * sockets, files, devices and other anonymous-inode files are refused, and
 * left as they were.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "vhost/net.h"

static int setup(void **state)
{
	(void)state;
	assert_int_equal(vu_eventfd_learn(), 0);
	alarm(10);	/* a check that blocks fails, instead of hanging */
	return 0;
}

static bool nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	return fl & O_NONBLOCK;
}

/* Refused, and its flags untouched */
static void refused(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fd >= 0);
	assert_int_equal(vu_eventfd_check(fd), -EINVAL);
	assert_int_equal(fcntl(fd, F_GETFL), fl);
	close(fd);
}

static void test_blocking_eventfd_is_made_nonblocking(void **state)
{
	int fd = eventfd(3, EFD_CLOEXEC);
	uint64_t v;

	(void)state;
	assert_false(nonblocking(fd));
	assert_int_equal(vu_eventfd_check(fd), 0);
	assert_true(nonblocking(fd));
	/* The probe added nothing */
	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 3);
	close(fd);
}

/* At its limit, a blocking eventfd blocks a writer: the check doesn't,
 * and afterwards, neither does an interrupt
 */
static void test_full_eventfd_never_blocks(void **state)
{
	uint64_t full = 0xfffffffffffffffeULL, one = 1;
	int fd = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_int_equal(write(fd, &full, sizeof(full)), sizeof(full));
	assert_int_equal(vu_eventfd_check(fd), 0);
	assert_int_equal(write(fd, &one, sizeof(one)), -1);
	assert_int_equal(errno, EAGAIN);
	close(fd);
}

static void test_other_files_are_refused(void **state)
{
	int p[2], s[2];
	sigset_t mask;

	(void)state;
	assert_int_equal(pipe(p), 0);
	refused(p[1]);		/* a pipe nobody reads would block us */
	refused(p[0]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
	refused(s[0]);
	close(s[1]);
	refused(memfd_create("not-an-eventfd", MFD_CLOEXEC));
	refused(open("/dev/null", O_WRONLY | O_CLOEXEC));
	/* Anonymous inodes too, but not eventfds */
	refused(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
	refused(epoll_create1(EPOLL_CLOEXEC));
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	refused(signalfd(-1, &mask, SFD_CLOEXEC));
	assert_int_equal(vu_eventfd_check(-1), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(t) cmocka_unit_test_setup(t, setup)
		T(test_blocking_eventfd_is_made_nonblocking),
		T(test_full_eventfd_never_blocks),
		T(test_other_files_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
