/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * user.h - the vhost-user control protocol (vhost/user.c): the device as
 * the front-end configured it, and the features we offer
 */
#ifndef VHOST_USER_H
#define VHOST_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "vhost/virtqueue.h"

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
/* With --virtio-compat: what upstream passt offers (Debian 13's
 * 0.0~git20250503; Debian sid's 2025-10 release adds GUEST_CSUM), so that a
 * guest booted on us can migrate to it: QEMU refuses to load a virtio-net
 * device on a target whose back-end lacks a feature the guest negotiated
 */
#define VU_FEATURES_COMPAT                                             \
	((1ULL << VIRTIO_F_VERSION_1) |                                \
	 (1ULL << VHOST_USER_F_PROTOCOL_FEATURES) |                    \
	 (1ULL << VHOST_F_LOG_ALL) | (1ULL << VIRTIO_NET_F_MRG_RXBUF))
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

/**
 * struct vu_dev - the device as the current front-end configured it
 * @fd:		connected control socket, -1 if none
 * @features:	acked virtio/vhost features (SET_FEATURES)
 * @protocol_features: acked protocol features
 * @mem:	guest memory and dirty log
 * @vq:		the queues
 * @log_call_fd: SET_LOG_FD eventfd, -1 if none
 * @appeared:	demux_guest_appeared() was called for this connection
 * @gen:	generation of @fd's epoll reference
 */
struct vu_dev {
	int fd;
	uint32_t gen;
	uint64_t features, protocol_features;
	struct vu_mem mem;
	struct virtq vq[VU_QUEUES];
	int log_call_fd;
	bool appeared;
};

extern struct vu_dev vu_dev;

int vu_init(struct ctx *c);
void vu_listen_handler(struct ctx *c);
void vu_ctrl_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void vu_cleanup(struct ctx *c);
void vu_disconnect(struct ctx *c);
int vu_eventfd_learn(void);
int vu_eventfd_check(int fd);

#endif /* VHOST_USER_H */
