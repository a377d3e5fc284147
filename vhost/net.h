/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * net.h - the virtio-net data path of the vhost-user front-end
 * (vhost/net.c)
 */
#ifndef VHOST_NET_H
#define VHOST_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost/user.h"

struct ctx;

/* Size of the virtio-net header with VIRTIO_F_VERSION_1 */
#define VU_NET_HDR_LEN 12

/**
 * struct vu_net_hdr - virtio-net header (VIRTIO 1.x 5.1.6), little-endian
 * @flags:	VU_NET_HDR_F_*
 * @gso_type:	VU_NET_HDR_GSO_*
 * @hdr_len:	length of the headers of a GSO frame
 * @gso_size:	payload per segment of a GSO frame
 * @csum_start:	where checksumming starts, with NEEDS_CSUM
 * @csum_offset: where the checksum goes, from @csum_start
 * @num_buffers: RX: descriptor chains the frame takes (always 1 without
 *		MRG_RXBUF)
 *
 * Packed: it sits right before the Ethernet frame, at any alignment.
 */
struct vu_net_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
} __attribute__((packed));

_Static_assert(sizeof(struct vu_net_hdr) == VU_NET_HDR_LEN,
	       "virtio-net header with VERSION_1 is 12 bytes");

#define VU_NET_HDR_F_NEEDS_CSUM	1
#define VU_NET_HDR_GSO_TCPV4	1
#define VU_NET_HDR_GSO_TCPV6	4

void vu_net_tx(struct ctx *c, unsigned q);
void vu_kick_handler(struct ctx *c, union epoll_ref ref);
bool vu_fault_check(struct ctx *c);
void vu_net_tx_reset(unsigned q);
void vu_net_rx_select(unsigned pair);
int vu_net_send(struct ctx *c, const void *frame, size_t len);
bool vu_net_rx_kicks(struct ctx *c, bool on);
void vu_net_flush(struct ctx *c);
int vu_net_connected(const struct ctx *c);
struct tap_seg;
struct iovec;
unsigned vu_net_seg_reserve(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg, struct iovec *iov,
			    unsigned iov_max);
int vu_net_seg_commit(struct ctx *c, struct tap_seg *seg,
		      const struct iovec *iov, size_t len, uint16_t csum_start,
		      uint16_t csum_off, uint16_t gso_size, int family);
void vu_net_seg_done(struct ctx *c);

#endif /* VHOST_NET_H */
