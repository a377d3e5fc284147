/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * arp.h - ARP responder: we answer for every IPv4 address but the guest's.
 */
#ifndef NET_ARP_H
#define NET_ARP_H

#include <stddef.h>
#include <stdint.h>

#include "net/packet.h"

struct ctx;

/* Ethernet header plus an Ethernet/IPv4 ARP packet */
#define ARP_FRAME_LEN (ETH_HDR_LEN + 28)

int arp_build_reply(const struct ctx *c, struct pview req, uint8_t *frame,
		    size_t cap);

#endif /* NET_ARP_H */
