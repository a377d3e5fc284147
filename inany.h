/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * inany.h - an IPv4 or IPv6 socket address, and an IPv4 or IPv6 address,
 * in one type each: what a UDP flow stores (flow_udp.h) and fwd/fwd.c's
 * helpers (sockaddr_len(), sockaddr_port(), sockaddr_set()) work on.
 */
#ifndef INANY_H
#define INANY_H

#include <netinet/in.h>
#include <sys/socket.h>

/* A socket address of either family */
union sockaddr_inany {
	struct sockaddr sa;
	struct sockaddr_in sa4;
	struct sockaddr_in6 sa6;
};

/* An address in its family's own format */
union inany_addr {
	struct in_addr v4;
	struct in6_addr v6;
};

#endif /* INANY_H */
