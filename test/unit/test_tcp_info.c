// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_tcp_info.c - repair/tcp_info.h reads TCP_INFO by the kernel's layout:
 * on a real connection over loopback, the fields the daemon reads say
 * what the connection did (state, bytes and segments received, the
 * options and window scales), the kernel fills at least as far as
 * tcpi_segs_in, and the fields that a C library's copy of the structure
 * also has read the same through both.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "repair/tcp_info.h"

/* A connected pair over loopback: @c the client, @a the accepted end */
static void pair(int *c, int *a)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*c >= 0);
	assert_int_equal(connect(*c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*a = accept(l, NULL, NULL);
	assert_true(*a >= 0);
	close(l);
}

static void test_kernel_layout(void **state)
{
	char buf[1000] = { 0 }, got[1000];
	struct tcp_info_k k;
	struct tcp_info g;
	socklen_t sl = sizeof(g);
	int c, a, n, i;

	(void)state;
	pair(&c, &a);
	for (i = 0; i < 3; i++) {
		assert_int_equal(write(c, buf, sizeof(buf)), sizeof(buf));
		assert_int_equal(recv(a, got, sizeof(got), MSG_WAITALL),
				 sizeof(got));
	}

	n = tcp_info_get(a, &k);
	assert_true(n >= (int)sizeof(k));
	assert_true(TCP_INFO_HAS(n, tcpi_segs_in));
	assert_int_equal(k.tcpi_state, TCP_ESTABLISHED);
	assert_int_equal(k.tcpi_bytes_received, 3 * sizeof(buf));
	/* The handshake's ACK and three segments, at least */
	assert_true(k.tcpi_segs_in >= 4);
	assert_true(k.tcpi_options & TCPI_OPT_TIMESTAMPS);

	/* The prefix a C library copies reads the same */
	assert_int_equal(getsockopt(a, IPPROTO_TCP, TCP_INFO, &g, &sl), 0);
	assert_int_equal(g.tcpi_state, k.tcpi_state);
	assert_int_equal(g.tcpi_options, k.tcpi_options);
	assert_int_equal(g.tcpi_snd_wscale, k.tcpi_snd_wscale);
	assert_int_equal(g.tcpi_rcv_wscale, k.tcpi_rcv_wscale);
	assert_int_equal(offsetof(struct tcp_info, tcpi_unacked),
			 offsetof(struct tcp_info_k, tcpi_u32) +
			 TCPI_U32_UNACKED * sizeof(uint32_t));
	assert_int_equal(g.tcpi_unacked, k.tcpi_u32[TCPI_U32_UNACKED]);

	/* The sender saw what was sent acknowledged, and its SYN */
	n = tcp_info_get(c, &k);
	assert_true(TCP_INFO_HAS(n, tcpi_bytes_acked));
	assert_int_equal(k.tcpi_bytes_acked, 3 * sizeof(buf) + 1);

	close(c);
	close(a);
}

static void test_short_buffer(void **state)
{
	(void)state;
	/* A length that stops before a field says it isn't there */
	assert_false(TCP_INFO_HAS(104, tcpi_pacing_rate));
	assert_true(TCP_INFO_HAS(112, tcpi_pacing_rate));
	assert_false(TCP_INFO_HAS(143, tcpi_segs_in));
	assert_true(TCP_INFO_HAS(1, tcpi_state));
	assert_int_equal(tcp_info_get(-1, &(struct tcp_info_k){ 0 }), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_layout),
		cmocka_unit_test(test_short_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
