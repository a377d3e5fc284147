/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tcp_internal.h - what the files of tcp/ share with each other, and
 * nobody else: tcp.c (state machine, timers), connect.c
 * (set-up), to_guest.c and from_guest.c (the two directions of data),
 * rst_owed.c, and the migration files. The layers below them have their
 * own headers: conn.h (the connection, its events, its timer), window.h
 * (the window we offer the guest), seg.h (control segments, end-of-round
 * marks), close.h (the end of a connection).
 */
#ifndef TCP_TCP_INTERNAL_H
#define TCP_TCP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flow_tcp.h"
#include "net/packet.h"

struct ctx;
struct iovec;
struct pkt;
struct pview;

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

#define TCP_WS_OURS 8			/* our window scale when offered */

#define SEQ_LT(a, b) ((int32_t)((a) - (b)) < 0)
#define SEQ_LE(a, b) ((int32_t)((a) - (b)) <= 0)
#define SEQ_GT(a, b) ((int32_t)((a) - (b)) > 0)
#define SEQ_GE(a, b) ((int32_t)((a) - (b)) >= 0)

extern bool tcp_peek_offset_ok;

/**
 * struct tcp_rst_owed - a RST the guest should have had for a connection
 *			 that is gone (rst_owed.c, tcp_rst_owe())
 * @key:	the connection's flow key
 * @seq:	our sequence number towards the guest (the RST's)
 * @ack:	the next sequence number from the guest (the RST's ACK)
 * @inbound:	the connection came from a peer
 * @at:		when it was owed, ms
 */
struct tcp_rst_owed {
	struct flow_key key;
	uint32_t seq, ack;
	bool inbound;
	uint64_t at;
};

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

/* connect.c: set-up, half-open connections, listeners */
void tcp_parse_syn_opts(struct pview opts, uint16_t *mss, int *ws);
uint16_t tcp_mss_link(const struct ctx *c, int family);
void tcp_sock_tune(int s);
void tcp_listen_pause(bool paused);
bool tcp_listen_paused(void);
void tcp_conn_from_guest(struct ctx *c, const struct pkt *p,
			 const struct flow_key *k, uint32_t seq,
			 struct pview opts);
void tcp_connect_failed(struct ctx *c, struct tcp_conn *conn, int e);
void tcp_connect_done(struct ctx *c, struct tcp_conn *conn);

/* to_guest.c: socket -> guest, and the end of the round */
void tcp_quiet(struct ctx *c, struct tcp_conn *conn);
int tcp_data_later(struct ctx *c, struct tcp_conn *conn);
int tcp_sock_sync(struct ctx *c, struct tcp_conn *conn);
int tcp_data_to_guest(struct ctx *c, struct tcp_conn *conn);
int tcp_rewind(struct ctx *c, struct tcp_conn *conn);
int tcp_ack_from_guest(struct ctx *c, struct tcp_conn *conn, uint32_t ack,
		       uint32_t wnd, bool bare);

/* from_guest.c: guest -> socket */
void tcp_pend_forget(const struct tcp_conn *conn);
bool tcp_data_from_guest(struct ctx *c, struct tcp_conn *conn,
			 uint32_t seq, uint8_t flags, struct pview payload,
			 const struct pkt *p);

/* kept.c: guest data the socket refused, kept; what waits for the socket */
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
void tcp_kept_drop(struct tcp_conn *conn);
void tcp_kept_forget(struct tcp_conn *conn);

/* rst_owed.c: RSTs the guest is still owed */
void tcp_rst_owe(const struct tcp_conn *conn);
void tcp_rst_owed_flush(struct ctx *c);
unsigned tcp_rst_owed_get(const struct tcp_rst_owed **list);
void tcp_rst_owed_clear(void);

#endif /* TCP_TCP_INTERNAL_H */
