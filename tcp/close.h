/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * close.h - the end of a connection (close.c): above seg.h, below the two
 * directions, set-up, the dispatch and migration.
 */
#ifndef TCP_CLOSE_H
#define TCP_CLOSE_H

#include <stdbool.h>

struct ctx;
struct tcp_conn;

#define TCP_DRAIN_MS 200		/* a closed connection's socket still
					 * sending: look again this often */

void tcp_desync(struct ctx *c, struct tcp_conn *conn, const char *what,
		int e);
void tcp_close(struct ctx *c, struct tcp_conn *conn, bool rst);
void tcp_rst(struct ctx *c, struct tcp_conn *conn);
bool tcp_maybe_done(struct ctx *c, struct tcp_conn *conn);

#endif /* TCP_CLOSE_H */
