/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flow.h - the one flow table shared by every translated protocol (ICMP
 * echo, TCP, UDP), and the hash that finds a flow by its addresses.
 *
 * A flow is one conversation between the guest and a remote endpoint. Its
 * index in the table and its generation are what epoll references carry,
 * so the table is a fixed-size static array and an index stays valid for
 * the flow's whole life (see flow.c for the lifetime rules). Every
 * per-protocol flow structure starts with a struct flow_common, so any
 * entry can be inspected through the common part before its type is
 * known.
 */
#ifndef FLOW_H
#define FLOW_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "flow_common.h"
#include "flow_tcp.h"
#include "flow_udp.h"

struct ctx;
#include "log.h"
#include "loop.h"

/**
 * struct icmp_flow - an ICMP/ICMPv6 echo flow, see icmp/icmp.c
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
 * @tcp:		FLOW_TCP
 * @udp:		FLOW_UDP
 */
union flow {
	struct flow_common f;
	struct {
		struct flow_common f;
		uint32_t next_free;
	} free;
	struct icmp_flow icmp;
	struct tcp_conn tcp;
	struct udp_flow udp;
};

void flow_init(void);
union flow *flow_alloc(void);
void flow_close(union flow *flow);
void flow_defer_free(void);
unsigned flow_idx(const union flow *flow);
union flow *flow_at(unsigned idx);
union flow *flow_live(unsigned idx, enum flow_type type);
union flow *flow_from_ref(union epoll_ref ref, enum flow_type type);
union epoll_ref flow_ref(const union flow *flow, enum ref_type type);
unsigned flow_count(void);
unsigned flow_span(void);
void flow_log_stats(void);
const char *flow_type_name(enum flow_type type);

/*
 * Per-flow log messages: "TCP flow 12: " (the flow's type and index), then
 * the message. @fl is any flow structure (union flow, struct tcp_conn,
 * struct udp_flow, struct icmp_flow): whatever has the common part as .f.
 * The _rl variants are rate-limited per call site, as log_rl().
 */
#define FLOW_LOG_FMT "%s flow %u: "
#define FLOW_LOG_ARGS(fl)						\
	flow_type_name((fl)->f.type),					\
	flow_idx((const union flow *)&(fl)->f)

#define flow_log(lvl, fl, fmt, ...)					\
	do {								\
		if (log_level >= (lvl))					\
			log_msg(lvl, FLOW_LOG_FMT fmt, FLOW_LOG_ARGS(fl), \
				##__VA_ARGS__);				\
	} while (0)
#define flow_log_rl(lvl, fl, fmt, ...)					\
	log_rl(lvl, FLOW_LOG_FMT fmt, FLOW_LOG_ARGS(fl), ##__VA_ARGS__)

#define flow_warn(fl, ...) flow_log(LOG_LVL_WARN, fl, __VA_ARGS__)
#define flow_dbg(fl, ...) flow_log(LOG_LVL_DEBUG, fl, __VA_ARGS__)
#define flow_trace(fl, ...) flow_log(LOG_LVL_TRACE, fl, __VA_ARGS__)
#define flow_warn_rl(fl, ...) flow_log_rl(LOG_LVL_WARN, fl, __VA_ARGS__)
#define flow_dbg_rl(fl, ...) flow_log_rl(LOG_LVL_DEBUG, fl, __VA_ARGS__)

void flow_lru_touch(union flow *flow);
unsigned flow_dgram_count(void);
int flow_reclaim_dgram(struct ctx *c, uint64_t now, uint64_t min_idle);

void flow_key_set(struct flow_key *k, enum flow_type type, int family,
		  const void *gaddr, uint16_t gport, const void *raddr,
		  uint16_t rport);
unsigned flow_hash_bucket(const struct flow_key *k);
uint64_t flow_key_hash(const struct flow_key *k);
int flow_hash_insert(union flow *flow);
void flow_hash_remove(union flow *flow);
union flow *flow_hash_lookup(const struct flow_key *k);

#endif /* FLOW_H */
