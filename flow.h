/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flow.h - the one flow table shared by every translated protocol (ICMP
 * echo now, TCP and UDP next), and the hash that finds a flow by its
 * addresses.
 *
 * A flow is one conversation between the guest and a remote endpoint. Its
 * index in the table is what epoll references carry (24 bits), so the
 * table is a fixed-size static array and an index stays valid for the
 * flow's whole life. Every per-protocol flow structure starts with a
 * struct flow_common, so any entry can be inspected through the common
 * part before its type is known.
 */
#ifndef FLOW_H
#define FLOW_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* Table size: must fit the 24-bit index of union epoll_ref */
#define FLOW_MAX 32768
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
 * @key:	addresses and ports (or echo identifier) of the flow
 */
struct flow_common {
	uint8_t type;
	uint8_t state;
	uint8_t hashed;
	struct flow_key key;
};

/**
 * struct icmp_flow - an ICMP/ICMPv6 echo flow, see net/icmp.c
 * @f:		common part, key: guest address, echo identifier, target
 * @sock:	ping socket, -1 if none
 * @last_ms:	last activity (either direction), for the idle timeout
 */
struct icmp_flow {
	struct flow_common f;
	int sock;
	uint64_t last_ms;
};

/**
 * union flow - one entry of the flow table
 * @f:		common part, valid for every entry
 * @free:	free entry: @f.type is FLOW_NONE, @next_free links the list
 * @icmp:	FLOW_ICMP
 */
union flow {
	struct flow_common f;
	struct {
		struct flow_common f;
		uint32_t next_free;
	} free;
	struct icmp_flow icmp;
};

void flow_init(void);
union flow *flow_alloc(void);
void flow_free(union flow *flow);
unsigned flow_idx(const union flow *flow);
union flow *flow_at(unsigned idx);
unsigned flow_count(void);
unsigned flow_span(void);

void flow_key_set(struct flow_key *k, enum flow_type type, int family,
		  const void *gaddr, uint16_t gport, const void *raddr,
		  uint16_t rport);
unsigned flow_hash_bucket(const struct flow_key *k);
int flow_hash_insert(union flow *flow);
void flow_hash_remove(union flow *flow);
union flow *flow_hash_lookup(const struct flow_key *k);

#endif /* FLOW_H */
