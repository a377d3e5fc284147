/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pcap.h - capture of guest-facing frames (-p FILE)
 */
#ifndef TAP_PCAP_H
#define TAP_PCAP_H

#include <stddef.h>

int pcap_init(const char *path);
void pcap_frame(const void *frame, size_t len);
struct iovec;
void pcap_frame_iov(const void *hdr, size_t hlen, const struct iovec *iov,
		    unsigned n, size_t plen);

#endif /* TAP_PCAP_H */
