/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream.h - qemu stream/socket front-end (length-prefixed frames)
 */
#ifndef TAP_STREAM_H
#define TAP_STREAM_H

#include <stdint.h>

#include "loop.h"

struct ctx;
struct tap_frontend;

extern const struct tap_frontend stream_frontend;

void stream_out_init(void);
void stream_handler(struct ctx *c, union epoll_ref ref, uint32_t events);

/* Frames longer than this from the guest reset the connection */
#define STREAM_FRAME_MAX 65535
/* Frames shorter than an Ethernet header reset the connection */
#define STREAM_FRAME_MIN 14

#endif /* TAP_STREAM_H */
