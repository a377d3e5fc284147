/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream_internal.h - what the stream front-end's connection and input
 * (stream/stream.c) and its output (stream/stream_out.c) share: nothing else
 * includes it
 */
#ifndef STREAM_STREAM_INTERNAL_H
#define STREAM_STREAM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct ctx;
struct tap_seg;

/* The output ring. A ring that never empties (a guest with frames always
 * queued) cycles through all of it, and its pages count in our resident
 * memory: 4 MiB is as fast as 8 and keeps our peak below upstream's
 * (doc/bench-history.md, "Stream output")
 */
#define STREAM_OUT_SIZE (4 * 1024 * 1024)

/* stream/stream.c: the connection */
void stream_epoll_update(struct ctx *c);

/* stream/stream_out.c: the output */
void stream_out_init(void);
void stream_out_reset(int fd, uint32_t gen);
bool stream_out_waiting(void);
int stream_queue(struct ctx *c, const void *frame, size_t len);
unsigned stream_seg_reserve(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg,
			    struct iovec *iov, unsigned iov_max);
int stream_seg_commit(struct ctx *c, struct tap_seg *seg,
		      const struct iovec *iov, size_t len,
		      uint16_t csum_start, uint16_t csum_off,
		      uint16_t gso_size, int family);
size_t stream_room(const struct ctx *c);
void stream_flush(struct ctx *c);
void stream_flush_end(struct ctx *c);

#endif /* STREAM_STREAM_INTERNAL_H */
