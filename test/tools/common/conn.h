/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conn.h - the test tools' monotonic clock in milliseconds, and their
 * connection to the daemon's UNIX stream socket (the qemu stream
 * protocol's transport): retried until a deadline, since a test starts
 * the tool and the daemon together.
 */
#ifndef TEST_COMMON_CONN_H
#define TEST_COMMON_CONN_H

#include <stdint.h>

uint64_t now_ms(void);
int unix_connect_retry(const char *prog, const char *path,
		       uint64_t timeout_ms, int bufsize);

#endif /* TEST_COMMON_CONN_H */
