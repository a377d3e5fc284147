/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flow_tcp.h - the per-connection state of a translated TCP connection,
 * as stored in the flow table (see tcp/tcp.c and the files beside it for
 * what each field means).
 */
#ifndef FLOW_TCP_H
#define FLOW_TCP_H

#include <stdint.h>

#include "flow_common.h"

/* f.state */
enum tcp_state {
	TCP_ST_CLOSED = 0,
	TCP_ST_CONNECTING,		/* guest SYN seen, connect() in progress */
	TCP_ST_SYN_TO_GUEST,	/* accepted from a peer, SYN sent to guest */
	TCP_ST_SYNACK_TO_GUEST,	/* connected, SYN-ACK sent, awaiting ACK */
	TCP_ST_ESTABLISHED,	/* data may flow; FIN flags say what's closed */
};

/* flags */
#define TCP_F_GUEST_FIN		(1U << 0) /* FIN from guest consumed */
#define TCP_F_SOCK_EOF		(1U << 1) /* peer closed: no more data */
#define TCP_F_FIN_SENT		(1U << 2) /* our FIN is at seq_to_guest - 1 */
#define TCP_F_FIN_ACKED		(1U << 3) /* guest ACKed our FIN */
#define TCP_F_OUT_WAIT		(1U << 4) /* EPOLLOUT armed: window update */
#define TCP_F_ACK_DUE		(1U << 5) /* an ACK to the guest is pending */
#define TCP_F_BLOCKED		(1U << 6) /* data waits for room in tap queue */
#define TCP_F_INBOUND		(1U << 7) /* connection came from a peer */
#define TCP_F_WS		(1U << 8) /* window scaling in use */
#define TCP_F_REFUSED		(1U << 9) /* socket refused guest data, and
					   * it wasn't kept */
#define TCP_F_MIGRATED		(1U << 10) /* socket held by a migration:
					    * in repair mode, filtered, out
					    * of the loop (migrate_src.c) */
#define TCP_F_DATA_DUE		(1U << 11) /* guest ACK or window: send more
					    * at the end of the round */
#define TCP_F_DEFERRED		(1U << 12) /* on the end-of-round list */
#define TCP_F_QUIET		(1U << 13) /* EPOLLIN off: guest ACKs drive
					    * reads (to_guest.c, tcp_quiet()) */
#define TCP_F_WND_IDLE		(1U << 14) /* the window's measurement found
					    * the send queue empty */
#define TCP_F_SOCK_DRY		(1U << 15) /* the last peek got less than it
					    * asked for */
#define TCP_F_PARKED		(1U << 16) /* with TCP_F_MIGRATED: restored
					    * by a migration, in repair mode
					    * until the guest runs here
					    * (migrate_dst.c) */
#define TCP_F_TAIL		(1U << 17) /* a migration's never-sent data,
					    * or data kept, waits for room
					    * in the socket (kept.c): guest
					    * data and FIN wait behind it */
#define TCP_F_DRAINING		(1U << 18) /* both FINs done, the socket
					    * still sends ours: closed once
					    * the peer ACKed it all
					    * (tcp_maybe_done()) */
#define TCP_F_KEPT		(1U << 19) /* with TCP_F_TAIL: the tail is
					    * guest data the socket refused,
					    * kept and ACKed (kept.c) */
#define TCP_F_WND_DUE		(1U << 20) /* a window update found no room
					    * to the guest: sent again with
					    * TCP_F_BLOCKED (from_guest.c) */
#define TCP_F_BUF_GROWN		(1U << 21) /* the send buffer is as large
					    * as tcp_sock_grow() makes it */
#define TCP_F_GUEST_HERE	(1U << 22) /* with TCP_F_MIGRATED: held for
					    * a repair helper while the
					    * guest runs here: its data is
					    * kept and ACKed
					    * (from_guest.c, kept.c) */

/**
 * struct tcp_conn - a TCP connection between the guest and a host socket
 * @f:			flow common part: key (guest addr/port, remote
 *			addr/port as the guest sees them), state
 * @sock:		host socket
 * @flags:		TCP_F_*
 * @ws_guest:		shift for windows the guest advertises
 * @ws_ours:		shift for windows we advertise
 * @retries:		retransmissions without progress
 * @dup_acks:		duplicate ACKs seen at @seq_acked
 * @mss:		largest payload we send to the guest in one segment
 * @wnd_ratio:		payload per 64 kiB of memory in the socket's send
 *			queue, last measured (0: not yet, see tcp_sock_room())
 * @seq_to_guest:	next sequence number we send (snd_nxt)
 * @seq_acked:		oldest unacknowledged sequence number (snd_una)
 * @acked_unread:	bytes the guest ACKed that are still at the head of
 *			the socket's receive queue (discarded in one go at
 *			the end of a round, see tcp_discard_due())
 * @seq_isn:		our initial sequence number
 * @seq_from_guest:	next sequence number we expect from the guest
 * @wnd_guest:		guest's receive window, bytes
 * @wnd_edge:		right edge (guest sequence number) of the window we
 *			last measured from the socket
 * @wnd_span:		the room that measurement found, 0: measure again
 * @wnd_adv:		largest right edge (guest sequence number) of the
 *			windows we advertised: what the guest may send
 * @timer:		deadline (ms) of the retransmission/handshake timer
 * @last_ms:		last activity, for the idle timeout (ms, the low 32
 *			bits: compared modulo 2^32)
 * @wnd_max:		largest window field we sent after the handshake (as
 *			sent, scaled): a Linux guest sends segments of half
 *			the largest window it saw, at most (from_guest.c);
 *			the largest field there is on a restored connection
 *			(the source's windows aren't known)
 */
struct tcp_conn {
	struct flow_common f;
	int sock;
	uint32_t flags;
	uint8_t ws_guest;
	uint8_t ws_ours;
	uint8_t retries;
	uint8_t dup_acks;
	uint16_t mss;
	uint16_t wnd_ratio;
	uint32_t seq_to_guest;
	uint32_t seq_acked;
	uint32_t acked_unread;
	uint32_t seq_isn;
	uint32_t seq_from_guest;
	uint32_t wnd_guest;
	uint32_t wnd_edge;
	uint32_t wnd_span;
	uint32_t wnd_adv;
	uint64_t timer;
	uint32_t last_ms;
	uint16_t wnd_max;
};

#endif /* FLOW_TCP_H */
