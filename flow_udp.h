/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flow_udp.h - the per-flow state of a UDP flow, as stored in the flow
 * table (see udp/udp.c).
 */
#ifndef FLOW_UDP_H
#define FLOW_UDP_H

#include <stdint.h>

#include "flow_common.h"
#include "inany.h"

/**
 * struct udp_flow - datagrams between a guest port and a remote endpoint
 * @f:		common part; key: guest address and port, remote address and
 *		port as the guest sees them
 * @sock:	socket owned by the flow (guest-initiated), connected to the
 *		host-side remote, or -1
 * @lsock:	listening socket of a forwarded port the flow came in on
 *		(not owned), or -1
 * @peer:	host-side address of the remote for flows on @lsock: where
 *		the guest's datagrams go (it can differ from the key's remote
 *		address, which is what the guest sees after mapping)
 * @last_ms:	last datagram in either direction, for the idle timeout
 */
struct udp_flow {
	struct flow_common f;
	int sock;
	int lsock;
	union sockaddr_inany peer;
	uint64_t last_ms;
};

#endif /* FLOW_UDP_H */
