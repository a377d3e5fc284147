/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * env.h - the PASST_* environment variables, read once at start (env.c)
 */
#ifndef ENV_H
#define ENV_H

#include <stdbool.h>

/**
 * struct env_vars - what the environment asked for, as env_init() found it
 * @no_io_uring:	PASST_NO_IO_URING: plain system calls, no io_uring
 * @io_uring_wait:	PASST_IO_URING_WAIT: the loop waits in the io_uring
 * @no_hugefile:	PASST_NO_HUGEFILE: stream output buffer in a memfd
 * @no_splice:		PASST_NO_SPLICE: stream output copied with send()
 * @coalesce_us:	PASST_COALESCE_US, unparsed (tap/coalesce.c reads
 *			it), or NULL
 * @test_forbidden_syscall: PASST_TEST_FORBIDDEN_SYSCALL (test hooks build
 *			only), NAME[:ARG...], or NULL
 * @test_sendfile_ok:	PASST_TEST_SENDFILE_OK (test hooks build only), a
 *			count of sendfile() calls, unparsed, or NULL
 *
 * The strings point into the environment, which the daemon never changes.
 */
struct env_vars {
	bool no_io_uring;
	bool io_uring_wait;
	bool no_hugefile;
	bool no_splice;
	const char *coalesce_us;
	const char *test_forbidden_syscall;
	const char *test_sendfile_ok;
};

void env_init(void);
const struct env_vars *env_get(void);

#endif /* ENV_H */
