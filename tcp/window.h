/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * window.h - the window we offer the guest (window.c): above conn.h and
 * kept.c, below every segment to the guest.
 */
#ifndef TCP_WINDOW_H
#define TCP_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

struct ctx;
struct tcp_conn;

void tcp_wnd_repeat(bool on);
int tcp_buf_unlock(int s);
uint32_t tcp_sock_room(const struct tcp_conn *conn, bool *low, bool *idle,
		       uint16_t *ratio);
uint16_t tcp_wnd_offered(const struct tcp_conn *conn);
uint16_t tcp_wnd_to_guest(struct ctx *c, struct tcp_conn *conn);
void tcp_window_check(const struct tcp_conn *conn);

#endif /* TCP_WINDOW_H */
