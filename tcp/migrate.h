/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * migrate.h - TCP connections across a live migration (tcp/migrate*.c):
 * established connections moved to another instance (vhost-user mode)
 * with TCP_REPAIR. What both sides do to one socket (making it deaf,
 * reading and writing its repair state) is repair/sock.c's.
 *
 * Theory of operation
 *
 * Our connections keep little payload of their own (a tail: what a socket
 * refused, or couldn't take at a restore: tcp/kept.c; the
 * dump carries it): the socket's receive queue holds what the guest
 * hasn't ACKed yet (from seq_acked on), the send queue what the peer
 * hasn't. So a connection is its flow entry, its tail, plus its socket's
 * queues and TCP state, and TCP_REPAIR lets us read both
 * queues and the state out of the kernel and write them into a new
 * socket elsewhere (see doc/migration.md for the stream).
 *
 * Whatever can't be moved ends the way it really ended: a connection
 * reset or timed out before the dump goes out as a skip record, which
 * the target turns into a RST to the guest; one that completed after the
 * state was taken, or all of them when there is no TCP_REPAIR, is reset
 * towards its peer when the source's linger ends (a FIN would tell the
 * peer that the guest closed it, and a cut upload would look complete).
 *
 * The source holds its connections, and releases or resumes them
 * (migrate_src.c), and writes their records (migrate_dump.c). The target
 * restores them at the LOAD, parked, and lets them go when the guest runs
 * (migrate_dst.c), leaves what its sockets couldn't take at once to
 * tcp/kept.c, and pokes their peers for a while (migrate_poke.c).
 *
 * Sequence numbers and FINs, as upstream passt writes and reads them
 * (checked against its binary and the wire, migrate_interop.sh): queue
 * lengths are data bytes only. Our FIN is in SIOCOUTQ while it isn't
 * ACKed (one less then); seq_snd is always snd_una, so in FIN_WAIT2 it
 * is one past the FIN, and the target queues the FIN again (shutdown()
 * in repair mode) at seq_snd - 1. The peer's FIN is never in SIOCINQ,
 * but it is in TCP_QUEUE_SEQ (rcv_nxt): seq_rcv = rcv_nxt - SIOCINQ is
 * one past the first unread byte in CLOSE_WAIT, LAST_ACK and CLOSING,
 * and rcv_wup is written one less (rcv_wnd one more) to stay within the
 * restored rcv_nxt. A socket that went from FIN_WAIT2 or LAST_ACK to
 * CLOSE cleanly (both FINs exchanged, ours acknowledged) is written as
 * FIN_WAIT2 with the peer's FIN received, which is what it was a moment
 * before: the target delivers what is left and both FINs to the guest.
 */
#ifndef TCP_MIGRATE_H
#define TCP_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;
struct mig_buf;
struct mig_stream_in;

/* Source */
void tcp_migrate_listen(struct ctx *c, bool on);
bool tcp_migrate_listen_paused(void);
int tcp_migrate_source_hold(struct ctx *c);
void tcp_migrate_source_write(struct ctx *c, struct mig_buf *b);
unsigned tcp_migrate_source_resume(struct ctx *c, bool give_up,
				   unsigned *waiting);
unsigned tcp_migrate_movable(void);
unsigned tcp_migrate_source_release(struct ctx *c);
unsigned tcp_migrate_source_unborn(struct ctx *c);
unsigned tcp_migrate_held(void);

/* Target */
int tcp_migrate_target_check(const struct mig_stream_in *s, char *why,
			     size_t whylen);
int tcp_migrate_target(struct ctx *c, struct mig_stream_in *s, uint8_t **buf);
unsigned tcp_migrate_parked(void);
unsigned tcp_migrate_target_release(struct ctx *c, unsigned *reset,
				    void (*before_off)(struct ctx *c),
				    bool give_up);
unsigned tcp_migrate_target_waiting(void);
void tcp_migrate_target_retry(struct ctx *c);
void tcp_migrate_target_timer(struct ctx *c, uint64_t now);
unsigned tcp_migrate_target_drop(struct ctx *c);
void tcp_migrate_poke_timer(struct ctx *c, uint64_t now);
unsigned tcp_migrate_poke(struct ctx *c);
void tcp_migrate_repair_retry(struct ctx *c);

#endif /* TCP_MIGRATE_H */
