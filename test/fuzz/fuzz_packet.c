// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_packet.c - pkt_parse() and the layer-4 accessors on arbitrary
 * frames: every view they return must lie inside the frame, the layer-3
 * view inside the frame after the Ethernet header, layer 4 inside layer 3,
 * the UDP payload inside layer 4.
 */
#include <errno.h>
#include <sys/socket.h>

#include "fuzz_common.h"
#include "icmp/icmp.h"
#include "net/packet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t sport, dport, id;
	struct pview payload;
	struct pkt p;
	int rc;

	rc = pkt_parse(data, size, &p);
	if (rc) {
		FZ_CHECK(rc == -EINVAL);
		return 0;
	}

	FZ_CHECK(size >= ETH_HDR_LEN);
	FZ_CHECK(p.frame.p == data && p.frame.len == size);
	FZ_CHECK(p.eth_dst == data && p.eth_src == data + 6);
	FZ_CHECK(fz_view_in(p.l3, data + ETH_HDR_LEN, size - ETH_HDR_LEN));
	FZ_CHECK(fz_view_in(p.l4, p.l3.p, p.l3.len));

	switch (p.family) {
	case AF_INET:
		FZ_CHECK(p.ethertype == ETHTYPE_IP);
		FZ_CHECK(p.l3.len >= 20);
		break;
	case AF_INET6:
		FZ_CHECK(p.ethertype == ETHTYPE_IPV6);
		FZ_CHECK(p.l3.len >= 40);
		break;
	default:
		FZ_CHECK(p.family == 0);
		FZ_CHECK(!p.l4.p && !p.l4.len);
	}

	if (!pkt_udp(&p, &sport, &dport, &payload)) {
		FZ_CHECK(p.proto == IPPROTO_UDP && !p.frag);
		FZ_CHECK(fz_view_in(payload, p.l4.p, p.l4.len));
		FZ_CHECK(payload.len + UDP_HDR_LEN <= p.l4.len);
	}

	rc = icmp_echo_parse(&p, &id);
	FZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOTSUP);
	if (!rc)
		FZ_CHECK(p.l4.len >= ICMP_HDR_LEN);
	return 0;
}

FZ_INIT_LOG
