/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * demux.h - the guest's frames to their owners (demux.c): what the
 * front-ends (stream/, vhost/) call with each frame from the guest
 */
#ifndef DEMUX_H
#define DEMUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;
struct iovec;

void demux_input(struct ctx *c, const uint8_t *frame, size_t len);
bool demux_input_part(struct ctx *c, const uint8_t *head, size_t hlen,
		      const struct iovec *tail, unsigned ntail, size_t len);
void demux_input_end(struct ctx *c);
void demux_guest_appeared(struct ctx *c);
void demux_log_stats(void);

#endif /* DEMUX_H */
