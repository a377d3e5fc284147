/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * repair/format.h - encoder and decoder of upstream passt's version 2
 * migration stream (the bytes that go through the vhost-user device-state
 * pipe), see doc/migration.md, section 2.
 *
 * Pure code: no sockets, no file descriptors, no global state. The writer
 * appends to a growable buffer; the reader takes a complete stream held in
 * memory, decodes it into host-order structures and validates every field
 * that the target would otherwise have to trust, so that the daemon applies
 * nothing unless the whole stream is consistent.
 */
#ifndef REPAIR_FORMAT_H
#define REPAIR_FORMAT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/packet.h"

#define MIG_MAGIC      0xB1BB1D1B0BB1D1B0ULL
#define MIG_VERSION    2
#define MIG_QUEUE_MAX  (64U << 20)  /* per queue, as upstream */
#define MIG_STREAM_MAX (1ULL << 30) /* whole stream we accept: 1 GiB */
#define MIG_FLOWS_MAX  32768	    /* FLOW_MAX */

/* Wire sizes of the pieces of a version 2 stream */
#define MIG_HDR_LEN	 16
#define MIG_ADDRS_LEN	 42
#define MIG_COUNT_LEN	 4
#define MIG_FLOWSIDE_LEN 36
#define MIG_BASIC_LEN	 112
#define MIG_EXT_LEN	 52

/* Largest window a peer can express: 65535 << 14 (RFC 7323 cap) */
#define MIG_WND_MAX (65535U << 14)
#define MIG_WS_MAX  14

enum mig_pif {
	MIG_PIF_NONE = 0,
	MIG_PIF_HOST = 1,
	MIG_PIF_TAP = 2,
	MIG_PIF_SPLICE = 3,
};

/* Connection event bits (basic record, "events") */
#define MIG_EV_SOCK_ACCEPTED	0x01
#define MIG_EV_TAP_SYN_RCVD	0x02
#define MIG_EV_ESTABLISHED	0x04
#define MIG_EV_SOCK_FIN_RCVD	0x08 /* with ESTABLISHED */
#define MIG_EV_TAP_SYN_ACK_SENT 0x08 /* without ESTABLISHED */
#define MIG_EV_SOCK_FIN_SENT	0x10
#define MIG_EV_TAP_FIN_RCVD	0x20
#define MIG_EV_TAP_FIN_SENT	0x40
#define MIG_EV_TAP_FIN_ACKED	0x80

/* Connection flag bits (basic record, "flags") */
#define MIG_F_STALLED		  0x01
#define MIG_F_LOCAL		  0x02
#define MIG_F_ACTIVE_CLOSE	  0x04
#define MIG_F_ACK_TO_TAP_DUE	  0x08
#define MIG_F_ACK_FROM_TAP_DUE	  0x10
#define MIG_F_ACK_FROM_TAP_BLOCKS 0x20
#define MIG_F_SYN_RETRIED	  0x40

/* Linux TCP states that may appear in an extended record (tcpi_state) */
#define MIG_TCP_SKIP	    0 /* the source could not dump it */
#define MIG_TCP_ESTABLISHED 1
#define MIG_TCP_FIN_WAIT1   4
#define MIG_TCP_FIN_WAIT2   5
#define MIG_TCP_CLOSE_WAIT  8
#define MIG_TCP_LAST_ACK    9
#define MIG_TCP_CLOSING	    11

/* TCPI_OPT_* bits (extended record, "tcpi_options") */
#define MIG_TCPI_OPT_TIMESTAMPS 0x01
#define MIG_TCPI_OPT_SACK	0x02
#define MIG_TCPI_OPT_WSCALE	0x04
#define MIG_TCPI_OPT_ECN	0x08

/* One side of a flow. Addresses in network order (IPv4 as v4-mapped),
 * ports as numbers in host order (little-endian on the wire)
 */
struct mig_flowside {
	struct in6_addr oaddr, eaddr;
	uint16_t oport, eport;
};

/* Basic flow record (112 bytes on the wire), all integers in host order */
struct mig_tcp_basic {
	uint8_t pif[2];
	struct mig_flowside side[2];
	uint8_t retries, ws_from_tap, ws_to_tap, events;
	uint32_t tap_mss, sndbuf;
	uint8_t flags, seq_dup_ack_approx;
	uint16_t wnd_from_tap, wnd_to_tap;
	uint32_t seq_to_tap, seq_ack_from_tap, seq_from_tap, seq_ack_to_tap,
		seq_init_from_tap;
};

/* Extended flow record (52 bytes on the wire), all integers in host order */
struct mig_tcp_ext {
	uint32_t seq_snd, seq_rcv, sndq, notsent, rcvq, mss, timestamp, snd_wl1,
		snd_wnd, max_window, rcv_wnd, rcv_wup;
	uint8_t snd_ws, rcv_ws, tcpi_state, tcpi_options;
};

/* Stage "observed addresses" (42 bytes on the wire) */
struct mig_addrs {
	struct in6_addr addr6, addr6_ll;
	struct in_addr addr4;
	uint8_t mac[ETH_ADDR_LEN];
};

/*
 * Writer: a growable output buffer. Start from a zeroed struct; errors are
 * sticky in @err (-ENOMEM, -EINVAL for a queue pointer missing), and once
 * set, later mig_put_*() calls append nothing.
 */
struct mig_buf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

void mig_buf_free(struct mig_buf *b);
void mig_put_header(struct mig_buf *b);
void mig_put_header_versions(struct mig_buf *b, uint32_t version,
			     uint32_t compat);
void mig_put_addrs(struct mig_buf *b, const struct mig_addrs *a);
void mig_put_count(struct mig_buf *b, uint32_t n);
void mig_put_basic(struct mig_buf *b, const struct mig_tcp_basic *t);
void mig_put_ext(struct mig_buf *b, const struct mig_tcp_ext *e,
		 const void *sndq, const void *rcvq);

/* Reader: one flow as decoded. @sndq and @rcvq point into the buffer given
 * to mig_parse() (valid as long as it is), NULL for a skip record; @skip is
 * set when the source wrote tcpi_state 0, and then @e holds leftovers.
 */
struct mig_flow_in {
	struct mig_tcp_basic b;
	struct mig_tcp_ext e;
	const uint8_t *sndq, *rcvq;
	bool skip;
};

struct mig_stream_in {
	uint32_t version; /* version the stream was parsed as */
	struct mig_addrs addrs;
	uint32_t count;
	struct mig_flow_in *flows; /* @count entries, malloc'd or NULL */
	size_t used;		   /* bytes consumed (trailing ignored) */
};

int mig_parse(const uint8_t *buf, size_t len, struct mig_stream_in *out,
	      char *why, size_t whylen);
void mig_stream_in_free(struct mig_stream_in *s);
int mig_stream_need(const uint8_t *buf, size_t len, uint64_t *need);

/* Helpers for the daemon and the tests */
int mig_basic_host_side(const struct mig_tcp_basic *t);
int mig_basic_tap_side(const struct mig_tcp_basic *t);
bool mig_addr_is_v4(const struct in6_addr *a);
bool mig_basic_is_v4(const struct mig_tcp_basic *t);
void mig_put_stream(struct mig_buf *b, const struct mig_stream_in *s);
bool mig_stream_in_equal(const struct mig_stream_in *a,
			 const struct mig_stream_in *b);

#endif /* REPAIR_FORMAT_H */
