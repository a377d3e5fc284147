/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vhost_user.h - the vhost-user front-end: control protocol (vhost_user.c)
 * and virtio-net data path (vu_net.c)
 */
#ifndef TAP_VHOST_USER_H
#define TAP_VHOST_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "tap/virtqueue.h"

struct ctx;

/* Virtio/vhost feature bits */
#define VIRTIO_NET_F_CSUM 0
#define VIRTIO_NET_F_GUEST_CSUM 1
#define VIRTIO_NET_F_GUEST_TSO4 7
#define VIRTIO_NET_F_GUEST_TSO6 8
#define VIRTIO_NET_F_HOST_TSO4 11
#define VIRTIO_NET_F_HOST_TSO6 12
#define VIRTIO_NET_F_MRG_RXBUF 15
#define VIRTIO_NET_F_MQ 22	/* QEMU offers it with mq=on, if we do */
#define VHOST_F_LOG_ALL 26
#define VHOST_USER_F_PROTOCOL_FEATURES 30
#define VIRTIO_F_VERSION_1 32

/* Protocol feature bits */
#define VHOST_USER_PROTOCOL_F_MQ 0
#define VHOST_USER_PROTOCOL_F_LOG_SHMFD 1
#define VHOST_USER_PROTOCOL_F_RARP 2
#define VHOST_USER_PROTOCOL_F_REPLY_ACK 3
#define VHOST_USER_PROTOCOL_F_DEVICE_STATE 19

/* What we offer */
#define VU_FEATURES                                                    \
	((1ULL << VIRTIO_F_VERSION_1) |                                \
	 (1ULL << VHOST_USER_F_PROTOCOL_FEATURES) |                    \
	 (1ULL << VHOST_F_LOG_ALL) | (1ULL << VIRTIO_NET_F_MRG_RXBUF) |   \
	 (1ULL << VIRTIO_NET_F_GUEST_CSUM) | (1ULL << VIRTIO_NET_F_CSUM) |  \
	 (1ULL << VIRTIO_NET_F_HOST_TSO4) | (1ULL << VIRTIO_NET_F_HOST_TSO6) |  \
	 (1ULL << VIRTIO_NET_F_GUEST_TSO4) | (1ULL << VIRTIO_NET_F_GUEST_TSO6) | \
	 (1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << VIRTIO_NET_F_MQ))
#define VU_PROTOCOL_FEATURES                                           \
	((1ULL << VHOST_USER_PROTOCOL_F_LOG_SHMFD) |                   \
	 (1ULL << VHOST_USER_PROTOCOL_F_RARP) |                        \
	 (1ULL << VHOST_USER_PROTOCOL_F_REPLY_ACK) |                   \
	 (1ULL << VHOST_USER_PROTOCOL_F_DEVICE_STATE) |                \
	 (1ULL << VHOST_USER_PROTOCOL_F_MQ))

/* Queues: pairs of RX (2p, to the guest) and TX (2p + 1, from the guest);
 * QEMU sets up as many pairs as its queues= says, up to what
 * GET_QUEUE_NUM tells it (pairs, as QEMU reads it), and the guest uses
 * the first ones (VIRTIO_NET_CTRL_MQ, which QEMU turns into
 * SET_VRING_ENABLE)
 */
#define VU_RX_Q 0
#define VU_TX_Q 1
#define VU_MAX_PAIRS 16
#define VU_QUEUES (2 * VU_MAX_PAIRS)

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

/**
 * struct vu_dev - the device as the current front-end configured it
 * @fd:		connected control socket, -1 if none
 * @features:	acked virtio/vhost features (SET_FEATURES)
 * @protocol_features: acked protocol features
 * @mem:	guest memory and dirty log
 * @vq:		the queues
 * @log_call_fd: SET_LOG_FD eventfd, -1 if none
 * @appeared:	tap_guest_appeared() was called for this connection
 * @gen:	generation of @fd's epoll reference
 * @check_pending: CHECK_DEVICE_STATE waits for the transfer to end
 */
struct vu_dev {
	int fd;
	uint32_t gen;
	bool check_pending;
	uint64_t features, protocol_features;
	struct vu_mem mem;
	struct virtq vq[VU_QUEUES];
	int log_call_fd;
	bool appeared;
};

extern struct vu_dev vu_dev;

/* vhost_user.c */
int vu_init(struct ctx *c);
void vu_listen_handler(struct ctx *c);
void vu_ctrl_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void vu_kick_handler(struct ctx *c, union epoll_ref ref);
void vu_cleanup(struct ctx *c);
int vu_eventfd_learn(void);
int vu_eventfd_check(int fd);

/* vu_net.c */
void vu_net_tx(struct ctx *c, unsigned q);
void vu_net_tx_kick(struct ctx *c, unsigned q);
void vu_net_tx_reset(unsigned q);
uint64_t vu_net_poll_at(void);
void vu_net_poll(struct ctx *c, uint64_t now);
void vu_net_rx_select(unsigned pair);
unsigned vu_net_tx_pair(void);
int vu_net_send(struct ctx *c, const void *frame, size_t len);
size_t vu_net_room(const struct ctx *c);
bool vu_net_rx_kicks(struct ctx *c, bool on);
void vu_net_flush(struct ctx *c);
void vu_net_log_stats(void);
int vu_net_connected(const struct ctx *c);
struct tap_seg;
struct iovec;
unsigned vu_net_seg_reserve(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg, struct iovec *iov,
			    unsigned iov_max);
int vu_net_seg_commit(struct ctx *c, struct tap_seg *seg,
		      const struct iovec *iov, size_t len, uint16_t csum_start,
		      uint16_t csum_off, uint16_t gso_size, int family);
bool vu_net_gso(const struct ctx *c, int family);
void vu_net_seg_done(struct ctx *c);
bool vu_net_csum_partial(const struct ctx *c);

#endif /* TAP_VHOST_USER_H */
