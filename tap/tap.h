/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tap.h - the frame layer every service and protocol sends through to the
 * guest, independent of the front-end.
 *
 * Output: services and protocols build frames with tap_send_ip4() /
 * tap_send_ip6() (which add Ethernet and IP headers and fill in the IP
 * and layer-4 checksums) or tap_send_frame() for raw Ethernet (ARP). The
 * front-end queues them; its flush operation (passt.c calls it directly;
 * tap_flush() for the fuzz harnesses) pushes the queue out at the end of
 * each event-loop round.
 *
 * Input doesn't pass here: a front-end hands each frame from the guest to
 * demux.c (demux.h), which calls the frame's owner.
 *
 * Front-ends: tap.c reaches the one in use only through its struct
 * tap_frontend (stream/stream.c: stream_frontend; vhost/net.c:
 * vu_frontend), chosen once at start (tap_frontend_set()).
 */
#ifndef TAP_TAP_H
#define TAP_TAP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"

struct ctx;
struct pkt;
struct iovec;

/**
 * struct tap_seg - a frame built in place, in the front-end's own buffers
 * @l2:		start of the frame: Ethernet, IP and layer-4 headers go here,
 *		contiguous for the header length given at reservation
 * @hlen:	header bytes reserved at @l2
 * @iov:	index of the first payload piece in the caller's iovec array
 * @niov:	number of payload pieces
 * @cap:	payload capacity
 * @fe_first:	front-end private: first buffer (chain) of the frame
 * @fe_count:	front-end private: number of buffers (chains)
 */
struct tap_seg {
	uint8_t *l2;
	size_t hlen;
	unsigned iov, niov;
	size_t cap;
	unsigned fe_first, fe_count;
};

/**
 * struct tap_frontend - what a front-end does for tap.c: it carries frames
 *			 between the guest and tap.c, which never names it
 * @name:	for the log: "stream", "vhost-user"
 * @init:	set up: inherited fd or listening socket; 0 or -errno
 * @accept:	a front-end connects to the listening socket
 * @handler:	an event on the front-end's connection (REF_FE_CONN)
 * @kick:	a kick on one of its queues (REF_FE_KICK); NULL: none
 * @cleanup:	close and unmap everything, remove the socket file
 * @connected:	non-zero if frames can be sent to the guest now
 * @send:	queue one Ethernet frame (at least 60 bytes) for the guest;
 *		0 or -errno
 * @reserve:	reserve frames to be built in place (tap_seg_reserve())
 * @commit:	queue a reserved frame of @len bytes; @csum_start,
 *		@csum_off (the layer-4 checksum, which the guest completes)
 *		and @gso_size are non-zero only if @csum_partial says so;
 *		0 or -errno
 * @done:	give back what was reserved and not committed; NULL: nothing
 * @csum_partial: can the guest complete layer-4 checksums? NULL: no
 * @gso:	can TCP frames to the guest carry more than the MSS (for
 *		AF_INET or AF_INET6)? NULL: no
 * @room:	bytes that can be queued for the guest right now
 * @queue_in:	queue pair the frame being handled came in on; NULL: one
 * @queue_out:	send what follows on that queue pair; NULL: one
 * @kicks:	ask (true) or stop asking the guest to notify us of new room;
 *		true if that just changed to asking; NULL: not needed
 * @backlog:	is input already read waiting for the next round? NULL: no
 * @resume:	take that input
 * @poll_at:	when input is to be polled (ns, CLOCK_MONOTONIC), 0 if its
 *		notifications wake us
 * @poll:	take input, its poll being due at @now
 * @flush:	end of a loop round: push out what was queued
 * @log_stats:	report the front-end's own counters; NULL: none
 */
struct tap_frontend {
	const char *name;
	int (*init)(struct ctx *c);
	void (*accept)(struct ctx *c);
	void (*handler)(struct ctx *c, union epoll_ref ref, uint32_t events);
	void (*kick)(struct ctx *c, union epoll_ref ref);
	void (*cleanup)(struct ctx *c);
	int (*connected)(const struct ctx *c);
	int (*send)(struct ctx *c, const void *frame, size_t len);
	unsigned (*reserve)(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg,
			    struct iovec *iov, unsigned iov_max);
	int (*commit)(struct ctx *c, struct tap_seg *seg,
		      const struct iovec *iov, size_t len,
		      uint16_t csum_start, uint16_t csum_off,
		      uint16_t gso_size, int family);
	void (*done)(struct ctx *c);
	bool (*csum_partial)(const struct ctx *c);
	bool (*gso)(const struct ctx *c, int family);
	size_t (*room)(const struct ctx *c);
	unsigned (*queue_in)(void);
	void (*queue_out)(unsigned pair);
	bool (*kicks)(struct ctx *c, bool on);
	bool (*backlog)(const struct ctx *c);
	void (*resume)(struct ctx *c);
	uint64_t (*poll_at)(void);
	void (*poll)(struct ctx *c, uint64_t now);
	void (*flush)(struct ctx *c);
	void (*log_stats)(void);
};

void tap_frontend_set(const struct tap_frontend *fe);
const char *tap_frontend_name(void);
int tap_init(struct ctx *c);
void tap_cleanup(struct ctx *c);
/* Pieces a frame from the guest is taken in after its head, at most
 * (demux_input_part())
 */
#define TAP_TAIL_MAX 63
int tap_send_frame(struct ctx *c, const void *frame, size_t len);
int tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		 uint8_t proto, const void *l4, size_t l4len);
int tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		 const struct in6_addr *dst, uint8_t proto, const void *l4,
		 size_t l4len);
size_t tap_hdr_len(int family);
int tap_send_l4(struct ctx *c, int family, const void *src, const void *dst,
		uint8_t proto, uint8_t *frame, size_t l4len);
size_t tap_tx_room(const struct ctx *c);
bool tap_rx_kicks(struct ctx *c, bool waiting);
uint8_t tap_queue_in(void);
void tap_queue_out(uint8_t pair);
unsigned tap_seg_reserve(struct ctx *c, size_t hlen, size_t plen, unsigned n,
			 struct tap_seg *seg, struct iovec *iov,
			 unsigned iov_max);
unsigned tap_seg_trim(const struct tap_seg *seg, unsigned nseg,
		      struct iovec *iov, size_t *max);
int tap_seg_send(struct ctx *c, int family, const void *src, const void *dst,
		 uint8_t proto, struct tap_seg *seg, const struct iovec *iov,
		 size_t l4hlen, size_t plen, uint16_t gso_size);
size_t tap_seg_tcp_max(const struct ctx *c, int family, size_t mss);
void tap_seg_done(struct ctx *c);
void tap_flush(struct ctx *c);
void tap_log_stats(uint64_t *tx, uint64_t *tx_fail);
/* tap_connected() - a guest front-end is attached and can take frames */
int tap_connected(const struct ctx *c);

/* Largest IP packet (L3+L4) tap_send_ip*() accepts */
#define TAP_IP_MAX (65535)

#endif /* TAP_TAP_H */
