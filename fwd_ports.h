/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fwd_ports.h - inbound port forwarding tables, one struct fwd_ports per
 * protocol, as struct ctx holds them (conf/ports.c fills them from -t and
 * -u, fwd/fwd.c opens their listening sockets).
 *
 * For each host port a table records whether it is forwarded (@map), to
 * which guest port (@delta), and which bind group (address and interface
 * of the -t/-u option that named it) its listening socket uses. Lookups
 * are O(1) and never allocate.
 */
#ifndef FWD_PORTS_H
#define FWD_PORTS_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#define NUM_PORTS 65536
#define FWD_BIND_MAX 16		/* -t or -u options per protocol */

enum fwd_mode {
	FWD_NONE = 0,	/* nothing forwarded (default, or "none") */
	FWD_SPEC,	/* explicit list of ports and ranges */
	FWD_ALL,	/* "all": every non-ephemeral port */
};

/**
 * struct fwd_bind - where listening sockets for a group of ports bind
 * @af:		AF_INET, AF_INET6, or AF_UNSPEC for any address
 * @addr:	address to bind to, if @af is not AF_UNSPEC
 * @ifname:	interface to bind to (SO_BINDTODEVICE), empty for any
 */
struct fwd_bind {
	sa_family_t af;
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;
	char ifname[IFNAMSIZ];
};

/**
 * struct fwd_ports - port forwarding configuration for one protocol
 * @mode:	see enum fwd_mode
 * @count:	number of forwarded ports
 * @map:	bitmap of forwarded host ports
 * @delta:	guest port = host port + @delta[port] (mod 65536)
 * @bind_idx:	index in @bind of each forwarded port's bind group
 * @bind:	bind groups, one per accepted -t/-u option
 * @bind_count:	entries in @bind
 * @none_given:	"none" was given explicitly: nothing may be added
 */
struct fwd_ports {
	enum fwd_mode mode;
	unsigned count;
	uint8_t map[NUM_PORTS / 8];
	uint16_t delta[NUM_PORTS];
	uint8_t bind_idx[NUM_PORTS];
	struct fwd_bind bind[FWD_BIND_MAX];
	unsigned bind_count;
	bool none_given;
};

/**
 * fwd_port_isset() - is a host port forwarded?
 * @fwd:	forwarding table
 * @port:	host port
 *
 * Return: true if @port is forwarded
 */
static inline bool fwd_port_isset(const struct fwd_ports *fwd, uint16_t port)
{
	return fwd->map[port / 8] & (1U << (port % 8));
}

/**
 * fwd_port_target() - guest port a forwarded host port maps to
 * @fwd:	forwarding table
 * @port:	host port, forwarded
 *
 * Return: guest-side port number
 */
static inline uint16_t fwd_port_target(const struct fwd_ports *fwd,
				       uint16_t port)
{
	return (uint16_t)(port + fwd->delta[port]);
}

#endif /* FWD_PORTS_H */
