// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_uring.c - uring.c on real descriptors: queued discards drop bytes
 * from a TCP socket's receive queue and a short one calls back its owner
 * with its tag (from uring_flush() only, even when the ring filled up on
 * the way), a queued eventfd write lands, nothing happens before the
 * flush, a descriptor closed with uring_close() gets what was queued for
 * it, never whatever takes its number before the flush, a send() queued
 * with the loop's wait calls back its owner with
 * what it sent, full or short (the owner's bytes are free only then), and
 * with PASST_NO_IO_URING=1 (or no ring) every queueing call
 * says the caller must do it itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "env.h"
#include "uring.h"

static uint64_t failed_tag;
static int failed_res, failed_n;

static void on_fail(struct ctx *c, uint64_t tag, int res)
{
	(void)c;
	failed_tag = tag;
	failed_res = res;
	failed_n++;
}

/* A connected TCP pair on the loopback: *a sends, *b receives */
static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*a = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept(l, NULL, NULL);
	assert_true(*b >= 0);
	close(l);
}

/* Bytes in @s's receive queue, once the sender's @want arrived */
static int inq(int s)
{
	int n = 0;

	assert_int_equal(ioctl(s, FIONREAD, &n), 0);
	return n;
}

static void wait_inq(int s, int want)
{
	for (int i = 0; i < 1000 && inq(s) < want; i++)
		usleep(1000);
	assert_int_equal(inq(s), want);
}

static int setup(void **state)
{
	(void)state;
	unsetenv("PASST_NO_IO_URING");
	env_init();
	uring_init(NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uring_exit();
	return 0;
}

static void test_discards_and_short_one_calls_back(void **state)
{
	static uint8_t buf[1000];
	int a, b;

	(void)state;
	if (!uring_on())
		skip();		/* no io_uring here: the fallback test covers */
	tcp_pair(&a, &b);
	assert_int_equal(write(a, buf, sizeof(buf)), sizeof(buf));
	wait_inq(b, 1000);

	failed_n = 0;
	assert_int_equal(uring_recv_trunc(b, 300, on_fail, 7), 0);
	assert_int_equal(uring_recv_trunc(b, 600, on_fail, 8), 0);
	assert_int_equal(uring_recv_trunc(b, 500, on_fail, 9), 0);
	assert_int_equal(inq(b), 1000);		/* nothing before the flush */
	uring_flush();
	assert_int_equal(inq(b), 0);
	/* The third found 100 bytes of its 500 */
	assert_int_equal(failed_n, 1);
	assert_int_equal(failed_tag, 9);
	assert_int_equal(failed_res, 100);
	close(a);
	close(b);
}

static void test_eventfd_write_lands_at_flush(void **state)
{
	static const uint64_t one = 1;
	uint64_t v = 0;
	int e = eventfd(0, EFD_NONBLOCK);

	(void)state;
	if (!uring_on())
		skip();
	assert_true(e >= 0);
	assert_int_equal(uring_write(e, &one, sizeof(one)), 0);
	assert_int_equal(uring_write(e, &one, sizeof(one)), 0);
	assert_int_equal(read(e, &v, sizeof(v)), -1);	/* not yet */
	uring_flush();
	assert_int_equal(read(e, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 2);
	close(e);
}

/* A write queued on an eventfd that is closed, whose number a new
 * eventfd takes before the flush: the old one gets it, as it did when it
 * was queued, and the new one nothing (before uring_close(), the new one
 * got it: eight bytes in whatever took the number)
 */
static void test_close_submits_what_names_it(void **state)
{
	static const uint64_t one = 1;
	uint64_t v = 0;
	int e = eventfd(0, EFD_NONBLOCK), keep, again;

	(void)state;
	if (!uring_on())
		skip();
	assert_true(e >= 0);
	keep = dup(e);		/* to read the old one's counter */
	assert_int_equal(uring_write(e, &one, sizeof(one)), 0);
	uring_close(e);
	again = eventfd(0, EFD_NONBLOCK);
	assert_int_equal(again, e);		/* the number, reused */
	uring_flush();
	assert_int_equal(read(again, &v, sizeof(v)), -1);
	assert_int_equal(read(keep, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 1);
	close(again);
	close(keep);
}

/* Closing a descriptor nothing queued names submits nothing: the round's
 * operations still wait for the flush
 */
static void test_close_of_another_waits(void **state)
{
	static const uint64_t one = 1;
	int e = eventfd(0, EFD_NONBLOCK), other = eventfd(0, 0);
	uint64_t v;

	(void)state;
	if (!uring_on())
		skip();
	assert_int_equal(uring_write(e, &one, sizeof(one)), 0);
	uring_close(other);
	assert_int_equal(read(e, &v, sizeof(v)), -1);	/* not yet */
	uring_flush();
	assert_int_equal(read(e, &v, sizeof(v)), sizeof(v));
	close(e);
}

/* @bytes in a socket's queue, then 5000 discards of one byte each (the
 * ring has 2048 entries: it fills up on the way); return the failures
 * seen before the final flush
 */
static int ones_past_the_ring(int bytes)
{
	static uint8_t buf[5000];
	int a, b, i, before;

	tcp_pair(&a, &b);
	assert_int_equal(write(a, buf, bytes), bytes);
	wait_inq(b, bytes);
	failed_n = 0;
	for (i = 0; i < 5000; i++)
		assert_int_equal(uring_recv_trunc(b, 1, on_fail, i), 0);
	before = failed_n;
	uring_flush();
	assert_int_equal(inq(b), 0);
	close(a);
	close(b);
	return before;
}

static void test_many_more_than_the_ring(void **state)
{
	(void)state;
	if (!uring_on())
		skip();
	assert_int_equal(ones_past_the_ring(5000), 0);
	assert_int_equal(failed_n, 0);
}

static void test_failures_called_back_only_at_flush(void **state)
{
	(void)state;
	if (!uring_on())
		skip();
	/* 2000 find no byte: called back at the flush, not while queueing */
	assert_int_equal(ones_past_the_ring(3000), 0);
	assert_int_equal(failed_n, 2000);
}

/* One send() with the loop's wait: the owner hears of it, whatever it
 * sent (here all of it, then only what the socket had room for)
 */
static void test_send_with_wait_always_calls_back(void **state)
{
	static uint8_t buf[256 * 1024];
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	int sv[2], efd, ep, snd = 4096, n, rc;
	static const uint64_t one = 1;

	(void)state;
	uring_exit();
	setenv("PASST_IO_URING_WAIT", "1", 1);
	env_init();
	uring_init(NULL);
	unsetenv("PASST_IO_URING_WAIT");
	env_init();
	if (!uring_waits())
		skip();		/* before Linux 6.15: no wait in the ring */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &snd,
				    sizeof(snd)), 0);
	efd = eventfd(0, EFD_NONBLOCK);
	ep = epoll_create1(0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
	assert_int_equal(write(efd, &one, sizeof(one)), sizeof(one));

	failed_n = 0;
	assert_int_equal(uring_send(sv[0], buf, 100, on_fail, 3), 0);
	assert_int_equal(failed_n, 0);
	assert_int_equal(uring_epoll_wait(ep, out, 4), 1);
	assert_int_equal(failed_n, 1);
	assert_int_equal(failed_tag, 3);
	assert_int_equal(failed_res, 100);

	/* More than the socket takes: called back with what went */
	assert_int_equal(uring_send(sv[0], buf, sizeof(buf), on_fail, 4), 0);
	assert_int_equal(uring_epoll_wait(ep, out, 4), 1);
	assert_int_equal(failed_n, 2);
	assert_int_equal(failed_tag, 4);
	rc = failed_res;
	assert_true(rc > 0 && rc < (int)sizeof(buf));
	assert_int_equal(ioctl(sv[1], FIONREAD, &n), 0);
	assert_int_equal(n, 100 + rc);

	close(ep);
	close(efd);
	close(sv[0]);
	close(sv[1]);
}

static void test_disabled_by_environment(void **state)
{
	static const uint64_t one = 1;

	(void)state;
	uring_exit();
	setenv("PASST_NO_IO_URING", "1", 1);
	env_init();
	uring_init(NULL);
	assert_false(uring_on());
	assert_int_equal(uring_recv_trunc(0, 1, on_fail, 0), -1);
	assert_int_equal(uring_write(0, &one, sizeof(one)), -1);
	uring_flush();		/* harmless */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_discards_and_short_one_calls_back),
		cmocka_unit_test(test_eventfd_write_lands_at_flush),
		cmocka_unit_test(test_close_submits_what_names_it),
		cmocka_unit_test(test_close_of_another_waits),
		cmocka_unit_test(test_many_more_than_the_ring),
		cmocka_unit_test(test_failures_called_back_only_at_flush),
		cmocka_unit_test(test_send_with_wait_always_calls_back),
		cmocka_unit_test(test_disabled_by_environment),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
