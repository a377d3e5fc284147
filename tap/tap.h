/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tap.h - the guest-facing frame interface, independent of the front-end.
 *
 * Input: a front-end (stream.c, vhost/net.c) hands each complete
 * Ethernet frame from the guest to tap_input(), which records it in the
 * pcap file, learns the guest's MAC, parses it and dispatches it to the
 * service or protocol that owns it; a TCP frame in pieces may go to
 * tap_input_part() instead, which takes it as it lies.
 *
 * Output: services and protocols build frames with tap_send_ip4() /
 * tap_send_ip6() (which add Ethernet and IP headers and fill in the IP
 * and layer-4 checksums) or tap_send_frame() for raw Ethernet (ARP). The
 * front-end queues them; tap_flush() pushes the queue out at the end of
 * each event-loop round.
 */
#ifndef TAP_TAP_H
#define TAP_TAP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

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

void tap_input(struct ctx *c, const uint8_t *frame, size_t len);
/* Pieces after the head tap_input_part() takes, at most */
#define TAP_TAIL_MAX 63
bool tap_input_part(struct ctx *c, const uint8_t *head, size_t hlen,
		    const struct iovec *tail, unsigned ntail, size_t len);
void tap_input_end(struct ctx *c);
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
uint8_t tap_queue_in(const struct ctx *c);
void tap_queue_out(const struct ctx *c, uint8_t pair);
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
bool tap_backlog(const struct ctx *c);
void tap_resume(struct ctx *c);
uint64_t tap_poll_at(const struct ctx *c);
void tap_poll(struct ctx *c);
void tap_flush(struct ctx *c);
void tap_log_stats(void);
/* tap_connected() - a guest front-end is attached and can take frames */
int tap_connected(const struct ctx *c);
/* tap_guest_appeared() - called by a front-end when a guest attaches */
void tap_guest_appeared(struct ctx *c);

/* Largest IP packet (L3+L4) tap_send_ip*() accepts */
#define TAP_IP_MAX (65535)

#endif /* TAP_TAP_H */
