/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stream.h - qemu stream/socket front-end (length-prefixed frames)
 */
#ifndef STREAM_STREAM_H
#define STREAM_STREAM_H

struct tap_frontend;

extern const struct tap_frontend stream_frontend;

/* Frames longer than this from the guest reset the connection */
#define STREAM_FRAME_MAX 65535
/* Frames shorter than an Ethernet header reset the connection */
#define STREAM_FRAME_MIN 14

#endif /* STREAM_STREAM_H */
