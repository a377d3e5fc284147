/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * announce.h - the frames that tell a network a host is here now: RARP,
 * gratuitous ARP, unsolicited Neighbour Advertisement (net/announce_frames.c).
 */
#ifndef NET_ANNOUNCE_FRAMES_H
#define NET_ANNOUNCE_FRAMES_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "net/packet.h"

#define ETHTYPE_RARP 0x8035

/* Ethernet's minimum frame (without FCS): RARP and ARP are padded to it */
#define ANNOUNCE_ETH_MIN 60
/* Ethernet, IPv6, NA with a Target Link-Layer Address option */
#define ANNOUNCE_NA_LEN (ETH_HDR_LEN + IP6_HDR_LEN + 24 + 8)
#define ANNOUNCE_FRAME_MAX ANNOUNCE_NA_LEN

size_t announce_frame_rarp(uint8_t *f, size_t cap,
			   const uint8_t mac[ETH_ADDR_LEN]);
size_t announce_frame_garp(uint8_t *f, size_t cap,
			   const uint8_t mac[ETH_ADDR_LEN],
			   struct in_addr addr);
size_t announce_frame_na(uint8_t *f, size_t cap,
			 const uint8_t mac[ETH_ADDR_LEN],
			 const struct in6_addr *addr);

#endif /* NET_ANNOUNCE_FRAMES_H */
