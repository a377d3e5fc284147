/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kept.h - what waits for a connection's socket (kept.c): guest data the
 * socket refused inside our window, and a migration's never-sent data;
 * above conn.h, below window.h.
 */
#ifndef TCP_KEPT_H
#define TCP_KEPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ctx;
struct iovec;
struct tcp_conn;

/**
 * struct tcpm_tail - never-sent data from a migration that the socket
 *		      couldn't take yet (TCP_F_TAIL): written as it drains
 * @idx:	flow index
 * @gen:	flow generation
 * @p:		the bytes (ours: copied out of the stream)
 * @len:	how many
 * @off:	how many of them are written
 * @fin:	shutdown(SHUT_WR) once they all are
 */
struct tcpm_tail {
	unsigned idx;
	uint32_t gen;
	uint8_t *p;
	uint32_t len, off;
	bool fin;
};

struct tcpm_tail *tcpm_tail_of(const struct tcp_conn *conn);
int tcpm_tail_add(struct tcp_conn *conn, const uint8_t *p, uint32_t len,
		  bool fin);
ssize_t tcp_kept_add(const struct ctx *c, struct tcp_conn *conn,
		     const struct iovec *iov, unsigned niov, size_t skip,
		     size_t len);
bool tcp_kept_can(const struct ctx *c, const struct tcp_conn *conn,
		  size_t len);
int tcp_kept_write(struct tcp_conn *conn);
bool tcp_kept_fin(struct tcp_conn *conn);
bool tcp_kept_add_fin(const struct ctx *c, struct tcp_conn *conn);
void tcp_kept_drop(struct tcp_conn *conn);
void tcp_kept_forget(struct tcp_conn *conn);

#endif /* TCP_KEPT_H */
