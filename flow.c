// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flow.c - flow table, flow lifetime and flow hash.
 *
 * Theory of operation
 *
 * Table: a static array of FLOW_MAX entries, union flow each. Entries are
 * handed out in O(1): first from a LIFO list of freed entries (linked
 * through the free entries themselves), then from the never-used tail
 * starting at ft.first_unused. Entries above ft.first_unused have never
 * been used, so protocols scanning the table (timers) stop at flow_span().
 * When the last flow goes, the whole table is reset to its initial state,
 * which also brings flow_span() back to zero. The zero-initialised state
 * of the statics is a valid empty table, so flow_init() only re-seeds the
 * hash and is safe to call again (tests do).
 *
 * Lifetime rules
 *
 *  1. flow_alloc() gives a zeroed entry with a fresh generation (f.gen,
 *     never 0). The protocol sets f.type and registers its sockets with
 *     flow_ref(), which puts index and generation in the epoll reference.
 *  2. A protocol closes a flow by releasing what it owns (epoll
 *     registration, socket, any per-flow pending state it keeps outside
 *     the entry) and calling flow_close(). That removes the flow from the
 *     hash at once, so a new flow with the same addresses can be created
 *     in the same round, and marks it closing. The entry itself is NOT
 *     freed: its index can't be handed out again in this loop round.
 *  3. The main loop calls flow_defer_free() once per round, after every
 *     event of the round and every end-of-round hook has run. Only there
 *     do closing entries return to the free list.
 *  4. Whoever holds an index across calls (an epoll reference, a list of
 *     ACKs due, a batched write) looks the flow up with flow_live() or
 *     flow_from_ref(), which refuse free and closing entries, entries of
 *     another type, and (flow_from_ref) another generation. So an event
 *     or a pending action for a flow that is gone can never be taken for
 *     the flow that later gets its slot, and a slot can never be reused
 *     within the round in which it was closed.
 *
 * Hash: open addressing with linear probing over FLOW_HASH_SIZE buckets
 * (twice the table, so the load factor never exceeds 1/2 and probe
 * sequences stay short). A bucket holds a flow index plus one, 0 meaning
 * empty. Removal shifts later members of the probe run back into the hole
 * (no tombstones), so lookups stay correct and the table never degrades.
 * Keys are hashed with SipHash-2-4 under a random secret drawn at start-up:
 * keys are chosen by the guest and by remote peers, and an unkeyed hash
 * would let them pile flows into one probe run.
 *
 * Reclaim: a guest may open flows faster than they idle out, and every
 * UDP flow it starts and every ICMP echo flow holds a socket. So:
 *
 *  - UDP and ICMP echo flows together hold at most FLOW_DGRAM_MAX entries
 *    (half the table; TCP keeps the other half), counting those closed in
 *    this round, whose entries are only freed at its end. They are kept
 *    on a list in order of last use (a datagram either way moves a flow
 *    to its end, flow_lru_touch()). A new UDP or ICMP flow that finds
 *    this share used up, or the table full, closes the least recently
 *    used UDP or ICMP echo flow, provided that one has seen no datagram
 *    for FLOW_RECLAIM_IDLE_MS (1 s), and its own datagram is dropped (as
 *    a router drops what it has no room for, rate-limited warning): the
 *    entry is free from the next round on. A new one that finds no
 *    descriptor left (EMFILE, ENFILE) closes that flow under the same
 *    condition and takes its socket's place at once. An active flow is
 *    never taken.
 *  - A new TCP connection from the guest that finds no descriptor left
 *    closes the least recently used UDP or ICMP echo flow however recent,
 *    or else the oldest half-open TCP connection (tcp/connect.c), and
 *    tries again: datagram flows come back by themselves with the next
 *    datagram.
 *  - TCP connections the guest has opened whose remote has not answered
 *    yet (connect() in progress) are at most TCP_HALF_OPEN_MAX; the next
 *    SYN resets the oldest of them (tcp/connect.c), unless the kernel says the
 *    remote has answered it meanwhile (the daemon may be behind its
 *    events under a flood): that one goes on to its SYN-ACK, and the
 *    next oldest is looked at. Those the remote did answer
 *    wait for the guest's ACK for a bounded number of SYN-ACK
 *    retransmissions, not in this count: the guest's ACK may be queued
 *    behind a flood of its own.
 *
 * Closing for reclaim is an ordinary close (rules 2 and 3 above): the
 * socket goes at once, the entry at the end of the round. So what one
 * round can open and close is bounded by the input a round takes from the
 * front-end (stream/stream.c: 2048 frames; vhost-user: its TX budget), and the
 * table, with entries closed in the round, can't be filled by one flood.
 * Messages about any of this are rate-limited (warn_rl(), debug_rl()).
 *
 * Invariants: an entry is in the hash if and only if f.hashed is set, and
 * then under exactly the key stored in f.key; a free entry has type
 * FLOW_NONE and is never hashed; a closing entry is never hashed. Nothing
 * here allocates memory or does I/O beyond the one getrandom() call in
 * flow_init(). A flow is on the use list if and only if f.lru is set, and
 * then it is a live (not closing) FLOW_UDP or FLOW_ICMP entry.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <unistd.h>

#include "flow.h"
#include "log.h"
#include "loop.h"
#include "util.h"

/**
 * struct flow_table - the flow table and everything that indexes it
 * @tab:	the entries
 * @hashtab:	the keyed hash: flow index + 1, 0: empty
 * @free_head:	index + 1 of a freed entry, 0: none
 * @first_unused: entries from here on were never used
 * @active:	entries in use, closing ones too
 * @gen:	the generation the next flow gets
 * @closed:	indices closed in this round, freed at its end...
 * @closed_n:	...how many
 * @hash_k0:	the hash secret (flow_init()), first half...
 * @hash_k1:	...and second
 * @lru_head:	UDP and ICMP echo flows by last use, least recently used:
 *		index + 1, 0: none...
 * @lru_tail:	...and most recently used
 * @dgram_n:	UDP and ICMP entries, closing ones too
 */
static struct flow_table {
	union flow tab[FLOW_MAX];
	uint32_t hashtab[FLOW_HASH_SIZE];
	uint32_t free_head;
	unsigned first_unused;
	unsigned active;
	uint32_t gen;
	uint32_t closed[FLOW_MAX];
	unsigned closed_n;
	uint64_t hash_k0, hash_k1;
	uint32_t lru_head;
	uint32_t lru_tail;
	unsigned dgram_n;
} ft;

_Static_assert(FLOW_MAX <= (1 << 24), "flow index must fit epoll_ref.idx");
_Static_assert((FLOW_HASH_SIZE & (FLOW_HASH_SIZE - 1)) == 0,
	       "FLOW_HASH_SIZE must be a power of two");
_Static_assert(FLOW_HASH_SIZE >= 2 * FLOW_MAX, "hash load must stay <= 1/2");
_Static_assert(sizeof(struct flow_key) % 8 == 0, "key hashed in 8-byte words");

/**
 * flow_init() - empty the flow table and seed the hash secret
 *
 * Any flow still in the table is forgotten (its socket is not closed):
 * call at start-up, before flows exist.
 */
void flow_init(void)
{
	uint64_t k[2] = {0, 0};

	memset(ft.tab, 0, sizeof(ft.tab));
	memset(ft.hashtab, 0, sizeof(ft.hashtab));
	ft.free_head = 0;
	ft.first_unused = 0;
	ft.active = 0;
	ft.closed_n = 0;
	ft.lru_head = ft.lru_tail = 0;
	ft.dgram_n = 0;

	if (getrandom(k, sizeof(k), GRND_NONBLOCK) != sizeof(k))
		warn("flow: no random hash secret, using a fixed one");
	ft.hash_k0 = k[0];
	ft.hash_k1 = k[1];
}

/**
 * flow_alloc() - take a free entry from the flow table
 *
 * Return: zeroed entry with type FLOW_NONE (the caller sets it), or NULL if
 *	   the table is full; the caller logs that, rate-limited
 */
union flow *flow_alloc(void)
{
	union flow *flow;

	if (ft.free_head) {
		flow = &ft.tab[ft.free_head - 1];
		ft.free_head = flow->free.next_free;
	} else if (ft.first_unused < FLOW_MAX) {
		flow = &ft.tab[ft.first_unused++];
	} else {
		return NULL;
	}

	memset(flow, 0, sizeof(*flow));
	if (!++ft.gen)
		ft.gen = 1;
	flow->f.gen = ft.gen;
	ft.active++;
	return flow;
}

/* Take a flow off the use list (it must be on it) */
static void flow_lru_unlink(union flow *flow)
{
	struct flow_common *f = &flow->f;

	if (f->lru_prev)
		ft.tab[f->lru_prev - 1].f.lru_next = f->lru_next;
	else
		ft.lru_head = f->lru_next;
	if (f->lru_next)
		ft.tab[f->lru_next - 1].f.lru_prev = f->lru_prev;
	else
		ft.lru_tail = f->lru_prev;
	f->lru_prev = f->lru_next = 0;
}

/**
 * flow_lru_touch() - a UDP or ICMP echo flow was just used: put it at the
 *		      most recent end of the use list (adding it if new)
 * @flow:	live FLOW_UDP or FLOW_ICMP entry
 */
void flow_lru_touch(union flow *flow)
{
	struct flow_common *f = &flow->f;
	uint32_t me = flow_idx(flow) + 1;

	if (f->closing)
		return;
	if (f->lru) {
		if (ft.lru_tail == me)
			return;
		flow_lru_unlink(flow);
	} else {
		f->lru = 1;
		if (!f->dgram)
			ft.dgram_n++;
		f->dgram = 1;
	}
	f->lru_prev = ft.lru_tail;
	f->lru_next = 0;
	if (ft.lru_tail)
		ft.tab[ft.lru_tail - 1].f.lru_next = me;
	else
		ft.lru_head = me;
	ft.lru_tail = me;
}

/**
 * flow_dgram_count() - UDP and ICMP echo entries in the table, including
 *			those closed in this round and not freed yet
 *
 * Return: their number, at most FLOW_DGRAM_MAX when protocols ask first
 */
unsigned flow_dgram_count(void)
{
	return ft.dgram_n;
}

/**
 * flow_reclaim_dgram() - close the least recently used UDP or ICMP flow
 * @c:		execution context
 * @now:	current time, milliseconds (CLOCK_MONOTONIC)
 * @min_idle:	only if it has seen no datagram for this long (ms)
 *
 * Return: 0 if a flow was closed (its socket now, its entry at the end of
 *	   the round), -ENOENT if there is none, -EBUSY if the least recently
 *	   used one is not idle for long enough
 */
int flow_reclaim_dgram(struct ctx *c, uint64_t now, uint64_t min_idle)
{
	union flow *flow;
	uint64_t last;
	int *sock;

	if (!ft.lru_head)
		return -ENOENT;
	flow = &ft.tab[ft.lru_head - 1];
	last = flow->f.type == FLOW_UDP ? flow->udp.last_ms
					: flow->icmp.last_ms;
	if (now < last || now - last < min_idle)
		return -EBUSY;

	flow_dbg_rl(flow, "reclaimed for a new flow, idle %llu ms",
		    (unsigned long long)(now - last));
	/* What udp.c and icmp.c do to close one: the socket, then the flow
	 * (a UDP flow on a forwarded port's socket owns none)
	 */
	sock = flow->f.type == FLOW_UDP ? &flow->udp.sock : &flow->icmp.sock;
	if (*sock >= 0) {
		loop_del(c, *sock);
		close(*sock);
		*sock = -1;
	}
	flow_close(flow);
	return 0;
}

/**
 * flow_close() - a flow is over: unhash it now, free it after this round
 * @flow:	entry from flow_alloc(), not closing yet
 *
 * The caller has released the flow's resources (sockets, epoll) already.
 */
void flow_close(union flow *flow)
{
	if (flow->f.closing)
		return;
	if (flow->f.hashed)
		flow_hash_remove(flow);
	if (flow->f.lru) {
		flow_lru_unlink(flow);
		flow->f.lru = 0;
	}
	flow->f.closing = 1;
	ft.closed[ft.closed_n++] = flow_idx(flow);
}

/* Return an entry to the free list: only from flow_defer_free() */
static void flow_free(union flow *flow)
{
	if (flow->f.dgram)
		ft.dgram_n--;
	memset(flow, 0, sizeof(*flow));
	flow->free.next_free = ft.free_head;
	ft.free_head = flow_idx(flow) + 1;

	if (!--ft.active) {
		/* Last one gone: back to the pristine table, span 0 */
		ft.free_head = 0;
		ft.first_unused = 0;
	}
}

/**
 * flow_defer_free() - end of a loop round: free the flows closed in it
 */
void flow_defer_free(void)
{
	unsigned i;

	for (i = 0; i < ft.closed_n; i++)
		flow_free(&ft.tab[ft.closed[i]]);
	ft.closed_n = 0;
}

/**
 * flow_type_name() - name of a flow type, for log messages
 * @type:	the type
 *
 * Return: "TCP", "UDP", "ICMP", or "free" for FLOW_NONE and anything else
 */
const char *flow_type_name(enum flow_type type)
{
	switch (type) {
	case FLOW_TCP:
		return "TCP";
	case FLOW_UDP:
		return "UDP";
	case FLOW_ICMP:
		return "ICMP";
	default:
		return "free";
	}
}

/**
 * flow_idx() - index of a flow table entry
 * @flow:	entry in the table
 *
 * Return: index, as carried by epoll references
 */
unsigned flow_idx(const union flow *flow)
{
	return (unsigned)(flow - ft.tab);
}

/**
 * flow_at() - flow table entry at a given index
 * @idx:	index, e.g. from an epoll reference
 *
 * Return: entry (possibly free: check f.type), NULL if @idx is out of range
 */
union flow *flow_at(unsigned idx)
{
	if (idx >= FLOW_MAX)
		return NULL;
	return &ft.tab[idx];
}

/**
 * flow_live() - flow at an index, if it is in use, open, and of a type
 * @idx:	index, e.g. kept in a list of pending actions
 * @type:	enum flow_type expected
 *
 * Return: the flow, NULL if @idx is out of range, free, closing, or of
 *	   another type
 */
union flow *flow_live(unsigned idx, enum flow_type type)
{
	union flow *flow = flow_at(idx);

	if (!flow || flow->f.type != type || flow->f.closing)
		return NULL;
	return flow;
}

/**
 * flow_from_ref() - the flow an epoll reference was registered for
 * @ref:	reference from an epoll event
 * @type:	enum flow_type expected
 *
 * Return: the flow, NULL if it is gone (closed, freed, or its slot now
 *	   holds a later flow)
 */
union flow *flow_from_ref(union epoll_ref ref, enum flow_type type)
{
	union flow *flow = flow_live(ref.idx, type);

	if (!flow || flow->f.gen != ref.gen)
		return NULL;
	return flow;
}

/**
 * flow_ref() - epoll reference for a socket of a flow
 * @flow:	flow
 * @type:	enum ref_type of the socket
 *
 * Return: reference carrying the flow's index and generation
 */
union epoll_ref flow_ref(const union flow *flow, enum ref_type type)
{
	return loop_ref(type, flow_idx(flow), flow->f.gen);
}

/**
 * flow_count() - number of flows in use, of any type
 *
 * Return: count of allocated entries
 */
unsigned flow_count(void)
{
	return ft.active;
}

/**
 * flow_span() - bound for scans: no entry at or above it is in use
 *
 * Return: one past the highest index handed out since the table was last
 *	   empty
 */
unsigned flow_span(void)
{
	return ft.first_unused;
}

/**
 * flow_key_set() - fill in a flow key
 * @k:		key to fill (fully overwritten, padding zeroed)
 * @type:	enum flow_type
 * @family:	AF_INET or AF_INET6
 * @gaddr:	guest-side address, struct in_addr or struct in6_addr
 * @gport:	guest-side port or echo identifier, host order
 * @raddr:	remote address, struct in_addr or struct in6_addr
 * @rport:	remote port, host order, 0 for ICMP
 */
void flow_key_set(struct flow_key *k, enum flow_type type, int family,
		  const void *gaddr, uint16_t gport, const void *raddr,
		  uint16_t rport)
{
	memset(k, 0, sizeof(*k));
	k->type = (uint8_t)type;
	k->family = (uint8_t)family;
	k->gport = gport;
	k->rport = rport;

	if (family == AF_INET) {
		k->gaddr.s6_addr[10] = k->gaddr.s6_addr[11] = 0xff;
		k->raddr.s6_addr[10] = k->raddr.s6_addr[11] = 0xff;
		memcpy(&k->gaddr.s6_addr[12], gaddr, 4);
		memcpy(&k->raddr.s6_addr[12], raddr, 4);
	} else {
		memcpy(&k->gaddr, gaddr, 16);
		memcpy(&k->raddr, raddr, 16);
	}
}

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3)     \
	do {                         \
		v0 += v1;            \
		v1 = ROTL64(v1, 13); \
		v1 ^= v0;            \
		v0 = ROTL64(v0, 32); \
		v2 += v3;            \
		v3 = ROTL64(v3, 16); \
		v3 ^= v2;            \
		v0 += v3;            \
		v3 = ROTL64(v3, 21); \
		v3 ^= v0;            \
		v2 += v1;            \
		v1 = ROTL64(v1, 17); \
		v1 ^= v2;            \
		v2 = ROTL64(v2, 32); \
	} while (0)

/**
 * flow_siphash() - SipHash-2-4 of a key whose length is a multiple of 8 bytes
 * @data:	key to hash
 * @len:	length of @data in bytes, a multiple of 8
 *
 * Return: the 64-bit hash, keyed by the flow table's secret
 */
static uint64_t flow_siphash(const void *data, size_t len)
{
	uint64_t v0 = ft.hash_k0 ^ 0x736f6d6570736575ULL;
	uint64_t v1 = ft.hash_k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = ft.hash_k0 ^ 0x6c7967656e657261ULL;
	uint64_t v3 = ft.hash_k1 ^ 0x7465646279746573ULL;
	const uint8_t *d = data;
	uint64_t m;
	size_t i;

	for (i = 0; i < len; i += 8) {
		memcpy(&m, d + i, 8);
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}

	m = (uint64_t)len << 56;
	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;

	v2 ^= 0xff;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);

	return v0 ^ v1 ^ v2 ^ v3;
}

/**
 * flow_key_hash() - keyed 64-bit hash of a flow key
 * @k:		key
 *
 * Return: SipHash-2-4 of @k under the secret drawn by flow_init(); also
 *	   what TCP initial sequence numbers are made of (RFC 6528)
 */
uint64_t flow_key_hash(const struct flow_key *k)
{
	return flow_siphash(k, sizeof(*k));
}

/**
 * flow_hash_bucket() - home bucket of a key: where its probe run starts
 * @k:		key, built with flow_key_set()
 *
 * Return: bucket index, below FLOW_HASH_SIZE: the low bits of
 *	   flow_key_hash()
 */
unsigned flow_hash_bucket(const struct flow_key *k)
{
	return (unsigned)(flow_siphash(k, sizeof(*k)) & (FLOW_HASH_SIZE - 1));
}

/* Bucket holding @k, or the empty bucket that ends its probe run */
static unsigned flow_hash_probe(const struct flow_key *k)
{
	unsigned b = flow_hash_bucket(k);

	while (ft.hashtab[b]) {
		const union flow *flow = &ft.tab[ft.hashtab[b] - 1];

		if (!memcmp(&flow->f.key, k, sizeof(*k)))
			break;
		b = (b + 1) & (FLOW_HASH_SIZE - 1);
	}
	return b;
}

/**
 * flow_hash_insert() - make a flow findable under its key
 * @flow:	flow with f.key set, not yet hashed
 *
 * Return: 0, -EEXIST if another flow has the same key, -EINVAL if @flow is
 *	   already hashed
 */
int flow_hash_insert(union flow *flow)
{
	unsigned b;

	if (flow->f.hashed)
		return -EINVAL;

	b = flow_hash_probe(&flow->f.key);
	if (ft.hashtab[b])
		return -EEXIST;

	ft.hashtab[b] = flow_idx(flow) + 1;
	flow->f.hashed = 1;
	return 0;
}

/**
 * flow_hash_remove() - remove a flow from the hash
 * @flow:	flow, hashed or not (then nothing happens)
 */
void flow_hash_remove(union flow *flow)
{
	const unsigned mask = FLOW_HASH_SIZE - 1;
	unsigned hole, b;

	if (!flow->f.hashed)
		return;

	hole = flow_hash_probe(&flow->f.key);
	flow->f.hashed = 0;
	if (ft.hashtab[hole] != flow_idx(flow) + 1)
		return; /* cannot happen while the invariants hold */
	ft.hashtab[hole] = 0;

	/* Pull back members of the run that the hole would cut off */
	for (b = (hole + 1) & mask; ft.hashtab[b]; b = (b + 1) & mask) {
		const union flow *f = &ft.tab[ft.hashtab[b] - 1];
		unsigned home = flow_hash_bucket(&f->f.key);

		if (((b - home) & mask) >= ((b - hole) & mask)) {
			ft.hashtab[hole] = ft.hashtab[b];
			ft.hashtab[b] = 0;
			hole = b;
		}
	}
}

/**
 * flow_hash_lookup() - find a flow by key
 * @k:		key, built with flow_key_set()
 *
 * Return: the flow, or NULL if none has this key
 */
union flow *flow_hash_lookup(const struct flow_key *k)
{
	unsigned b = flow_hash_probe(k);

	if (!ft.hashtab[b])
		return NULL;
	return &ft.tab[ft.hashtab[b] - 1];
}

/**
 * flow_log_stats() - log how many flows of each type are open (SIGUSR1)
 */
void flow_log_stats(void)
{
	unsigned n[FLOW_TYPE_MAX] = { 0 }, i;

	for (i = 0; i < ft.first_unused; i++)
		if (ft.tab[i].f.type < FLOW_TYPE_MAX)
			n[ft.tab[i].f.type]++;
	info("flows: %u (TCP %u, UDP %u, ICMP %u)", ft.active,
	     n[FLOW_TCP], n[FLOW_UDP], n[FLOW_ICMP]);
}
