/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flow_common.h - what every flow has, whatever its protocol: the key the
 * flow hash finds it by, and the common first member of every
 * per-protocol flow structure. flow.h builds the table out of these.
 */
#ifndef FLOW_COMMON_H
#define FLOW_COMMON_H

#include <netinet/in.h>
#include <stdint.h>

/* Table size: must fit the 24-bit index of union epoll_ref */
#define FLOW_MAX 32768
/* UDP and ICMP echo flows together: at most this many (see flow.c, Reclaim) */
#define FLOW_DGRAM_MAX (FLOW_MAX / 2)
/* A UDP or ICMP flow may be reclaimed for a new one once idle this long */
#define FLOW_RECLAIM_IDLE_MS 1000
/* Hash buckets: a power of two, at least twice FLOW_MAX (load <= 0.5) */
#define FLOW_HASH_SIZE (FLOW_MAX * 2)

enum flow_type {
	FLOW_NONE = 0, /* free entry */
	FLOW_ICMP,     /* ICMP or ICMPv6 echo, via a ping socket */
	FLOW_TCP,
	FLOW_UDP,
	FLOW_TYPE_MAX,
};

/**
 * struct flow_key - what identifies a flow in the hash table
 * @gaddr:	guest-side address (IPv4 stored IPv4-mapped)
 * @raddr:	remote address (IPv4 stored IPv4-mapped)
 * @gport:	guest-side port, or ICMP echo identifier
 * @rport:	remote port, 0 for ICMP
 * @type:	enum flow_type
 * @family:	AF_INET or AF_INET6 (an IPv6 packet to an IPv4-mapped
 *		address is not the same flow as its IPv4 twin)
 * @pad:	always zero: keys are hashed and compared as bytes
 *
 * Build keys with flow_key_set() only, so that padding is always zero.
 */
struct flow_key {
	struct in6_addr gaddr;
	struct in6_addr raddr;
	uint16_t gport;
	uint16_t rport;
	uint8_t type;
	uint8_t family;
	uint8_t pad[2];
};

/**
 * struct flow_common - first member of every per-protocol flow structure
 * @type:	enum flow_type, FLOW_NONE when free
 * @state:	protocol-specific state
 * @hashed:	the flow is in the hash table under @key
 * @closing:	closed in this loop round, freed after it (see flow.c)
 * @gen:	generation: epoll references carry it, and an event whose
 *		generation differs belongs to an earlier flow in this slot
 * @key:	addresses and ports (or echo identifier) of the flow
 * @lru:	on the list of UDP and ICMP echo flows in order of last use
 * @dgram:	counted among the UDP and ICMP echo flows (until freed)
 * @qpair:	front-end queue pair the guest's frames of the flow last
 *		came in on: ours to the guest go there (tap_queue_out())
 * @lru_prev:	that list: index + 1 of the flow used before, 0 if none
 * @lru_next:	index + 1 of the flow used after this one, 0 if none
 */
struct flow_common {
	uint8_t type;
	uint8_t state;
	uint8_t hashed;
	uint8_t closing;
	uint32_t gen;
	struct flow_key key;
	uint8_t lru;
	uint8_t dgram;
	uint8_t qpair;
	uint32_t lru_prev;
	uint32_t lru_next;
};

#endif /* FLOW_COMMON_H */
