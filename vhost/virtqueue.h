/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * virtqueue.h - split virtqueues (device side)
 *
 * See virtqueue.c for the theory of operation.
 */
#ifndef VHOST_VIRTQUEUE_H
#define VHOST_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vhost/mem.h"

/* Largest queue size the split ring format allows */
#define VQ_MAX_SIZE 32768
/* Words of a queue's bitmap of heads in flight (struct virtq.inflight) */
#define VQ_INFLIGHT_WORDS (VQ_MAX_SIZE / 64)
/* Buffer pieces one chain may map to (descriptors split at region ends) */
#define VQ_IOV_MAX 64
/* Descriptors one chain may have, direct and indirect ones together: each
 * one with bytes is a piece at least, plus the one that points to an
 * indirect table; a frame of Linux's takes at most MAX_SKB_FRAGS + 2 (19,
 * or 47 with the largest frag count). Zero-length ones (which QEMU
 * refuses outright) count too
 */
#define VQ_CHAIN_MAX (VQ_IOV_MAX + 1)
/* Alignment of an indirect descriptor table: what our 64-bit loads of its
 * entries need (see vq_walk())
 */
#define VQ_INDIRECT_ALIGN 8
/* Descriptor flags */
#define VQ_DESC_F_NEXT 1
#define VQ_DESC_F_WRITE 2
#define VQ_DESC_F_INDIRECT 4
/* avail->flags */
#define VQ_AVAIL_F_NO_INTERRUPT 1
#define VQ_USED_F_NO_NOTIFY	1
/* Feature bit: used_event and avail_event instead of the flags */
#define VIRTIO_RING_F_EVENT_IDX 29

/**
 * struct vq_iov - one guest buffer piece, contiguous in our mapping
 * @base:	where it is mapped
 * @len:	length
 * @gpa:	guest physical address (for dirty logging)
 */
struct vq_iov {
	uint8_t *base;
	uint32_t len;
	uint64_t gpa;
};

/**
 * struct vq_elem - a descriptor chain taken from the available ring
 * @head:	head descriptor index (the id to return in the used ring)
 * @out_num:	device-readable pieces, first in @iov
 * @in_num:	device-writable pieces, after those
 * @out_len:	total readable bytes
 * @in_len:	total writable bytes
 * @walked:	descriptors read for it (its cost, good chain or bad)
 * @iov:	the pieces
 */
struct vq_elem {
	uint16_t head;
	unsigned out_num, in_num;
	unsigned walked;
	uint64_t out_len, in_len;
	struct vq_iov iov[VQ_IOV_MAX];
};

/**
 * struct virtq - device-side state of one split virtqueue
 * @size:	number of descriptors (SET_VRING_NUM), a power of two
 * @desc_qva, @avail_qva, @used_qva: ring addresses (SET_VRING_ADDR)
 * @log_gpa:	guest physical address of the used ring, for dirty logging
 * @log_flag:	VHOST_VRING_F_LOG was set with the addresses
 * @addr_set:	SET_VRING_ADDR seen
 * @desc, @avail, @used: the rings in our mapping, NULL unless translated
 * @last_avail:	next available ring entry to consume (free-running)
 * @avail_seen:	avail->idx as we last loaded it: entries before it are
 *		published (vq_pop() loads it again only once it got there)
 * @used_idx:	next used ring entry to fill (free-running)
 * @started:	kick fd given: we may process the ring
 * @enabled:	SET_VRING_ENABLE 1 (or no protocol features)
 * @broken:	the driver broke the ring: ignore it until set up again
 * @kick_fd, @call_fd, @err_fd: eventfds, -1 if none
 * @kick_gen:	generation of @kick_fd's epoll reference
 * @need_call:	used entries published since the last interrupt
 * @cap_est:	estimated writable bytes per chain (RX room)
 * @used_flags:	what we last wrote to used->flags, -1: nothing yet
 * @event_idx:	VIRTIO_RING_F_EVENT_IDX negotiated
 * @avail_event: what we last wrote to avail_event, -1: nothing yet
 * @signalled:	used_idx when we last decided about an interrupt
 * @signalled_ok: @signalled is meaningful (false: interrupt regardless)
 * @inflight:	bit per head (VQ_INFLIGHT_WORDS words, the owner's, kept
 *		by vq_reset()): chain taken by vq_pop() and neither used
 *		(vq_fill()) nor given back (vq_release()). Only the first
 *		@size bits mean anything, cleared by vq_translate(), which
 *		refuses a queue without: queues not in use never touch it
 */
struct virtq {
	unsigned size;
	uint64_t desc_qva, avail_qva, used_qva, log_gpa;
	bool log_flag;
	bool addr_set;
	uint8_t *desc, *avail, *used;
	uint16_t last_avail, avail_seen, used_idx;
	bool started, enabled, broken;
	int kick_fd, call_fd, err_fd;
	uint32_t kick_gen;
	bool need_call;
	uint32_t cap_est;
	int used_flags;
	bool event_idx;
	int avail_event;
	uint16_t signalled;
	bool signalled_ok;
	uint64_t *inflight;
};

void vq_reset(struct virtq *vq);
int vq_translate(struct virtq *vq, const struct vu_mem *m);
bool vq_ready(const struct virtq *vq);
void vq_notify_reset(struct virtq *vq);
int vq_avail_count(const struct virtq *vq);
int vq_pop(struct virtq *vq, const struct vu_mem *m, struct vq_elem *e);
void vq_unpop(struct virtq *vq, unsigned n);
void vq_release(struct virtq *vq, uint16_t head);
void vq_fill(struct virtq *vq, struct vu_mem *m, unsigned off,
	     uint16_t head, uint32_t len);
void vq_publish(struct virtq *vq, struct vu_mem *m, unsigned n);
uint16_t vq_used_idx_guest(const struct virtq *vq);
bool vq_notify_wanted(struct virtq *vq);
bool vq_kicks(struct virtq *vq, struct vu_mem *m, bool on);
size_t vq_copy_to(struct vu_mem *m, const struct vq_elem *e, size_t off,
		  const void *buf, size_t len);
size_t vq_copy_from(const struct vq_elem *e, size_t off, void *buf,
		    size_t len);

#endif /* VHOST_VIRTQUEUE_H */
