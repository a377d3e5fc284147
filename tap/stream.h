/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream.h - qemu stream/socket front-end (length-prefixed frames)
 */
#ifndef TAP_STREAM_H
#define TAP_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"

struct ctx;
struct iovec;
struct tap_seg;
struct tap_frontend;

extern const struct tap_frontend stream_frontend;

int stream_init(struct ctx *c);
void stream_out_init(void);
void stream_listen_handler(struct ctx *c);
void stream_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
int stream_queue(struct ctx *c, const void *frame, size_t len);
void stream_flush(struct ctx *c);
void stream_flush_end(struct ctx *c);
bool stream_backlog(const struct ctx *c);
void stream_resume(struct ctx *c);
uint64_t stream_poll_at(void);
void stream_poll(struct ctx *c, uint64_t now);
size_t stream_room(const struct ctx *c);
unsigned stream_seg_reserve(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg, struct iovec *iov,
			    unsigned iov_max);
int stream_seg_commit(struct ctx *c, struct tap_seg *seg, size_t len);
void stream_cleanup(struct ctx *c);

/* Frames longer than this from the guest reset the connection */
#define STREAM_FRAME_MAX 65535
/* Frames shorter than an Ethernet header reset the connection */
#define STREAM_FRAME_MIN 14

#endif /* TAP_STREAM_H */
