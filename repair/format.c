// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * repair/format.c - encoder and decoder of upstream passt's version 2
 * migration stream.
 *
 * Theory of operation
 *
 * The stream is strictly sequential, with no tags or lengths: a 16-byte
 * header (magic, version, compat_version), then the stages of the chosen
 * version in order. Version 2 has two stages that carry bytes: "observed
 * addresses" (42 bytes) and "transfer flows" (a count, count basic records
 * of 112 bytes, then count extended records of 52 bytes each followed by
 * its send and receive queue bytes). Integers are big-endian, except the
 * four flowside ports, which upstream copies raw from memory and are
 * therefore little-endian on every architecture it runs on: we always
 * write and read them as little-endian.
 *
 * Writer: mig_put_*() append to a struct mig_buf that grows with realloc().
 * An allocation failure is sticky in the buffer, so the caller checks once
 * at the end.
 *
 * Reader: mig_parse() takes the whole stream in memory (the daemon reads
 * the pipe to EOF first, up to MIG_STREAM_MAX), picks the version, then
 * runs that version's stage list (mig_versions[]: a later version adds an
 * entry with its own list). It decodes everything into host-order structs
 * and validates every field the target would apply, so that a corrupt or
 * hostile stream is refused as a whole before any socket is touched. The
 * queue bytes are not copied: each flow points into the caller's buffer.
 *
 * Refusals: -EINVAL (bad magic, zero version, truncated, inconsistent
 * record), -ENOTSUP (no supported version in [compat, version]), -E2BIG
 * (stream, flow count or queue over our limits). A one-line reason naming
 * the flow index goes to @why.
 *
 * Trailing bytes after the last stage are ignored, as upstream ignores
 * them (it stops reading and closes the pipe); @used tells how many bytes
 * were consumed.
 *
 * This file must never do I/O, log, or keep state between calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repair/format.h"

/* Writer */

/**
 * mig_buf_free() - Release the memory of an output buffer, zero it
 * @b:		Buffer
 */
void mig_buf_free(struct mig_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/**
 * mig_buf_room() - make room for more bytes at the end of a buffer
 * @b:		the buffer
 * @n:		number of bytes
 *
 * Return: pointer to them, NULL on (sticky) error
 */
static uint8_t *mig_buf_room(struct mig_buf *b, size_t n)
{
	uint8_t *p;
	size_t cap;

	if (b->err)
		return NULL;
	if (n > SIZE_MAX / 2 - b->len) {
		b->err = -ENOMEM;
		return NULL;
	}
	if (b->len + n > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->p = p;
		b->cap = cap;
	}
	p = b->p + b->len;
	b->len += n;
	return p;
}

static void mig_put_bytes(struct mig_buf *b, const void *d, size_t n)
{
	uint8_t *p = mig_buf_room(b, n);

	if (p && n)
		memcpy(p, d, n);
}

static void mig_put8(struct mig_buf *b, uint8_t v)
{
	mig_put_bytes(b, &v, 1);
}

static void mig_put16(struct mig_buf *b, uint16_t v)
{
	uint8_t d[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	mig_put_bytes(b, d, 2);
}

static void mig_put16le(struct mig_buf *b, uint16_t v)
{
	uint8_t d[2] = {(uint8_t)v, (uint8_t)(v >> 8)};

	mig_put_bytes(b, d, 2);
}

static void mig_put32(struct mig_buf *b, uint32_t v)
{
	uint8_t d[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16),
			(uint8_t)(v >> 8), (uint8_t)v};

	mig_put_bytes(b, d, 4);
}

static void mig_put64(struct mig_buf *b, uint64_t v)
{
	mig_put32(b, (uint32_t)(v >> 32));
	mig_put32(b, (uint32_t)v);
}

/**
 * mig_put_header_versions() - Append a header with given version fields
 * @b:		Output buffer
 * @version:	Highest version the data is written for
 * @compat:	Lowest version the data is compatible with
 */
void mig_put_header_versions(struct mig_buf *b, uint32_t version,
			     uint32_t compat)
{
	mig_put64(b, MIG_MAGIC);
	mig_put32(b, version);
	mig_put32(b, compat);
}

/**
 * mig_put_header() - Append the header of a version 2 stream (compat 2)
 * @b:		Output buffer
 */
void mig_put_header(struct mig_buf *b)
{
	mig_put_header_versions(b, MIG_VERSION, MIG_VERSION);
}

/**
 * mig_put_addrs() - Append the "observed addresses" stage
 * @b:		Output buffer
 * @a:		Guest addresses and MAC address (unknown: zero)
 */
void mig_put_addrs(struct mig_buf *b, const struct mig_addrs *a)
{
	mig_put_bytes(b, &a->addr6, 16);
	mig_put_bytes(b, &a->addr6_ll, 16);
	mig_put_bytes(b, &a->addr4, 4);
	mig_put_bytes(b, a->mac, ETH_ADDR_LEN);
}

/**
 * mig_put_count() - Append the flow count of the "transfer flows" stage
 * @b:		Output buffer
 * @n:		Number of basic (and then extended) records to follow
 */
void mig_put_count(struct mig_buf *b, uint32_t n)
{
	mig_put32(b, n);
}

static void mig_put_flowside(struct mig_buf *b, const struct mig_flowside *s)
{
	mig_put_bytes(b, &s->oaddr, 16);
	mig_put_bytes(b, &s->eaddr, 16);
	mig_put16le(b, s->oport);
	mig_put16le(b, s->eport);
}

/**
 * mig_put_basic() - Append one basic flow record (112 bytes)
 * @b:		Output buffer
 * @t:		Record, integers in host order
 */
void mig_put_basic(struct mig_buf *b, const struct mig_tcp_basic *t)
{
	mig_put8(b, t->pif[0]);
	mig_put8(b, t->pif[1]);
	mig_put_flowside(b, &t->side[0]);
	mig_put_flowside(b, &t->side[1]);
	mig_put8(b, t->retries);
	mig_put8(b, t->ws_from_tap);
	mig_put8(b, t->ws_to_tap);
	mig_put8(b, t->events);
	mig_put32(b, t->tap_mss);
	mig_put32(b, t->sndbuf);
	mig_put8(b, t->flags);
	mig_put8(b, t->seq_dup_ack_approx);
	mig_put16(b, t->wnd_from_tap);
	mig_put16(b, t->wnd_to_tap);
	mig_put32(b, t->seq_to_tap);
	mig_put32(b, t->seq_ack_from_tap);
	mig_put32(b, t->seq_from_tap);
	mig_put32(b, t->seq_ack_to_tap);
	mig_put32(b, t->seq_init_from_tap);
}

/**
 * mig_put_ext() - Append one extended flow record and its queue bytes
 * @b:		Output buffer
 * @e:		Record, integers in host order
 * @sndq:	@e->sndq bytes of send queue (may be NULL if that is 0)
 * @rcvq:	@e->rcvq bytes of receive queue (may be NULL if that is 0)
 *
 * With @e->tcpi_state 0 (MIG_TCP_SKIP), only the 52-byte record is written
 * and the queues are ignored, as the target expects no data after it.
 */
void mig_put_ext(struct mig_buf *b, const struct mig_tcp_ext *e,
		 const void *sndq, const void *rcvq)
{
	bool data = e->tcpi_state != MIG_TCP_SKIP;

	if (data && ((e->sndq && !sndq) || (e->rcvq && !rcvq))) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}

	mig_put32(b, e->seq_snd);
	mig_put32(b, e->seq_rcv);
	mig_put32(b, e->sndq);
	mig_put32(b, e->notsent);
	mig_put32(b, e->rcvq);
	mig_put32(b, e->mss);
	mig_put32(b, e->timestamp);
	mig_put32(b, e->snd_wl1);
	mig_put32(b, e->snd_wnd);
	mig_put32(b, e->max_window);
	mig_put32(b, e->rcv_wnd);
	mig_put32(b, e->rcv_wup);
	mig_put8(b, e->snd_ws);
	mig_put8(b, e->rcv_ws);
	mig_put8(b, e->tcpi_state);
	mig_put8(b, e->tcpi_options);

	if (!data)
		return;
	mig_put_bytes(b, sndq, e->sndq);
	mig_put_bytes(b, rcvq, e->rcvq);
}

/**
 * mig_put_stream() - Encode a decoded stream again, as version 2
 * @b:		Output buffer
 * @s:		Stream as filled by mig_parse() (or by hand)
 */
void mig_put_stream(struct mig_buf *b, const struct mig_stream_in *s)
{
	uint32_t i;

	mig_put_header(b);
	mig_put_addrs(b, &s->addrs);
	mig_put_count(b, s->count);
	for (i = 0; i < s->count; i++)
		mig_put_basic(b, &s->flows[i].b);
	for (i = 0; i < s->count; i++) {
		const struct mig_flow_in *f = &s->flows[i];

		mig_put_ext(b, &f->e, f->sndq, f->rcvq);
	}
}

/* Reader */

/* Cursor over the stream being parsed */
struct mig_rd {
	const uint8_t *p;
	size_t len;
	size_t off;
	char *why;
	size_t whylen;
};

__attribute__((format(printf, 3, 4))) static int
mig_fail(struct mig_rd *r, int rc, const char *fmt, ...)
{
	va_list ap;

	if (r->why && r->whylen) {
		va_start(ap, fmt);
		vsnprintf(r->why, r->whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* Take @n bytes: pointer to them, NULL if the stream ends before */
static const uint8_t *mig_take(struct mig_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->len - r->off < n)
		return NULL;
	p = r->p + r->off;
	r->off += n;
	return p;
}

static int mig_truncated(struct mig_rd *r, const char *what, size_t n)
{
	return mig_fail(r, -EINVAL,
			"truncated: %s needs %zu bytes at offset %zu, "
			"stream has %zu",
			what, n, r->off, r->len - r->off);
}

static uint16_t mig_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint16_t mig_get16le(const uint8_t *p)
{
	return (uint16_t)(p[1] << 8 | p[0]);
}

static uint32_t mig_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Stage "observed addresses": anything goes, values are adopted as hints */
static int mig_rd_addrs(struct mig_rd *r, struct mig_stream_in *out)
{
	const uint8_t *p = mig_take(r, MIG_ADDRS_LEN);

	if (!p)
		return mig_truncated(r, "address stage", MIG_ADDRS_LEN);
	memcpy(&out->addrs.addr6, p, 16);
	memcpy(&out->addrs.addr6_ll, p + 16, 16);
	memcpy(&out->addrs.addr4, p + 32, 4);
	memcpy(out->addrs.mac, p + 36, ETH_ADDR_LEN);
	return 0;
}

static void mig_dec_flowside(const uint8_t *p, struct mig_flowside *s)
{
	memcpy(&s->oaddr, p, 16);
	memcpy(&s->eaddr, p + 16, 16);
	s->oport = mig_get16le(p + 32);
	s->eport = mig_get16le(p + 34);
}

/**
 * mig_dec_basic() - decode a basic record
 * @p:		the record, MIG_BASIC_LEN bytes
 * @t:		decoded, filled in
 */
static void mig_dec_basic(const uint8_t *p, struct mig_tcp_basic *t)
{
	t->pif[0] = p[0];
	t->pif[1] = p[1];
	mig_dec_flowside(p + 2, &t->side[0]);
	mig_dec_flowside(p + 2 + MIG_FLOWSIDE_LEN, &t->side[1]);
	t->retries = p[74];
	t->ws_from_tap = p[75];
	t->ws_to_tap = p[76];
	t->events = p[77];
	t->tap_mss = mig_get32(p + 78);
	t->sndbuf = mig_get32(p + 82);
	t->flags = p[86];
	t->seq_dup_ack_approx = p[87];
	t->wnd_from_tap = mig_get16(p + 88);
	t->wnd_to_tap = mig_get16(p + 90);
	t->seq_to_tap = mig_get32(p + 92);
	t->seq_ack_from_tap = mig_get32(p + 96);
	t->seq_from_tap = mig_get32(p + 100);
	t->seq_ack_to_tap = mig_get32(p + 104);
	t->seq_init_from_tap = mig_get32(p + 108);
}

/**
 * mig_dec_ext() - decode an extended record
 * @p:		the record, MIG_EXT_LEN bytes
 * @e:		decoded, filled in
 */
static void mig_dec_ext(const uint8_t *p, struct mig_tcp_ext *e)
{
	e->seq_snd = mig_get32(p);
	e->seq_rcv = mig_get32(p + 4);
	e->sndq = mig_get32(p + 8);
	e->notsent = mig_get32(p + 12);
	e->rcvq = mig_get32(p + 16);
	e->mss = mig_get32(p + 20);
	e->timestamp = mig_get32(p + 24);
	e->snd_wl1 = mig_get32(p + 28);
	e->snd_wnd = mig_get32(p + 32);
	e->max_window = mig_get32(p + 36);
	e->rcv_wnd = mig_get32(p + 40);
	e->rcv_wup = mig_get32(p + 44);
	e->snd_ws = p[48];
	e->rcv_ws = p[49];
	e->tcpi_state = p[50];
	e->tcpi_options = p[51];
}

static const char *mig_pif_name(uint8_t pif)
{
	static const char *names[] = {"NONE", "HOST", "TAP", "SPLICE"};

	return pif < 4 ? names[pif] : "invalid";
}

/**
 * mig_check_basic() - check one basic record, as upstream would write it
 * @r:		stream being read, for the reason of a failure
 * @i:		index of the flow
 * @t:		the record
 *
 * Upstream can't have written anything else.
 *
 * Return: 0, or -EINVAL with the reason in @r
 */
static int mig_check_basic(struct mig_rd *r, uint32_t i,
			   const struct mig_tcp_basic *t)
{
	const struct mig_flowside *h, *tap;
	const struct in6_addr *a[4];
	bool v4;
	int k;

	if (!((t->pif[0] == MIG_PIF_TAP && t->pif[1] == MIG_PIF_HOST) ||
	      (t->pif[0] == MIG_PIF_HOST && t->pif[1] == MIG_PIF_TAP)))
		return mig_fail(r, -EINVAL,
				"flow %u: interfaces %s (%u) and %s (%u), "
				"need one TAP and one HOST",
				i, mig_pif_name(t->pif[0]), t->pif[0],
				mig_pif_name(t->pif[1]), t->pif[1]);

	if (!(t->events & MIG_EV_ESTABLISHED))
		return mig_fail(r, -EINVAL,
				"flow %u: events 0x%02x lack ESTABLISHED", i,
				t->events);
	if (t->ws_from_tap > MIG_WS_MAX)
		return mig_fail(r, -EINVAL, "flow %u: ws_from_tap %u > %u", i,
				t->ws_from_tap, MIG_WS_MAX);
	if (t->ws_to_tap > MIG_WS_MAX)
		return mig_fail(r, -EINVAL, "flow %u: ws_to_tap %u > %u", i,
				t->ws_to_tap, MIG_WS_MAX);
	/* Upstream keeps these in 3, 16 (MSS >> 2, 14 bits) and 24 bits */
	if (t->retries > 7)
		return mig_fail(r, -EINVAL, "flow %u: retries %u > 7", i,
				t->retries);
	if (t->tap_mss > 65535)
		return mig_fail(r, -EINVAL, "flow %u: tap_mss %u > 65535", i,
				t->tap_mss);
	if (t->sndbuf > 0xffffff)
		return mig_fail(r, -EINVAL,
				"flow %u: sndbuf %u needs more than 24 bits", i,
				t->sndbuf);

	h = &t->side[mig_basic_host_side(t)];
	tap = &t->side[mig_basic_tap_side(t)];
	if (!tap->oport || !tap->eport || !h->oport || !h->eport)
		return mig_fail(r, -EINVAL,
				"flow %u: zero port (TAP %u -> %u, "
				"HOST %u -> %u)",
				i, tap->eport, tap->oport, h->oport, h->eport);

	/* One family for the four addresses, the socket's: that of the TAP
	 * side's oaddr. The HOST side's local address may be unspecified
	 * (::), which then doesn't say anything about the family.
	 */
	v4 = mig_addr_is_v4(&tap->oaddr);
	a[0] = &tap->oaddr;
	a[1] = &tap->eaddr;
	a[2] = &h->eaddr;
	a[3] = &h->oaddr;
	for (k = 1; k < 4; k++) {
		if (k == 3 && IN6_IS_ADDR_UNSPECIFIED(a[3]))
			continue;
		if (mig_addr_is_v4(a[k]) != v4)
			return mig_fail(r, -EINVAL,
					"flow %u: address families differ "
					"between sides (TAP side is %s)",
					i, v4 ? "IPv4" : "IPv6");
	}
	return 0;
}

/* Sort key for the duplicate check: a flowside in wire order + flow index */
struct mig_key {
	uint8_t k[MIG_FLOWSIDE_LEN];
	uint32_t i;
};

static int mig_key_cmp(const struct mig_key *x, const struct mig_key *y)
{
	int c = memcmp(x->k, y->k, sizeof(x->k));

	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

/**
 * mig_key_sift() - move a key down the max-heap of the first keys
 * @keys:	the heap
 * @i:		index of the key to move
 * @n:		number of keys in the heap
 */
static void mig_key_sift(struct mig_key *keys, uint32_t i, uint32_t n)
{
	for (;;) {
		uint32_t big = i, l = 2 * i + 1, r = l + 1;
		struct mig_key t;

		if (l < n && mig_key_cmp(&keys[l], &keys[big]) > 0)
			big = l;
		if (r < n && mig_key_cmp(&keys[r], &keys[big]) > 0)
			big = r;
		if (big == i)
			return;
		t = keys[i];
		keys[i] = keys[big];
		keys[big] = t;
		i = big;
	}
}

/*
 * Heapsort, not qsort(): for more than about 60 keys glibc's qsort() asks
 * the kernel for the amount of memory (sysinfo()), which the sandbox's
 * seccomp filter doesn't allow, and a target restoring that many flows was
 * killed. In place, no allocation, O(n log n) for any input.
 */
static void mig_key_sort(struct mig_key *keys, uint32_t n)
{
	uint32_t i;

	for (i = n / 2; i-- > 0;)
		mig_key_sift(keys, i, n);
	for (i = n; i-- > 1;) {
		struct mig_key t = keys[0];

		keys[0] = keys[i];
		keys[i] = t;
		mig_key_sift(keys, 0, i);
	}
}

/**
 * mig_check_dups() - refuse two flows with the same 4-tuple on one side
 * @r:		stream being read, for the reason of a failure
 * @s:		the stream's flows
 * @host:	look at the HOST side, not the TAP side
 *
 * Return: 0, or -errno with the reason in @r
 */
static int mig_check_dups(struct mig_rd *r, const struct mig_stream_in *s,
			  bool host)
{
	struct mig_key *keys;
	uint32_t i, n = s->count;
	int rc = 0;

	if (n < 2)
		return 0;
	keys = calloc(n, sizeof(*keys));
	if (!keys)
		return mig_fail(r, -ENOMEM, "out of memory (%u flows)", n);

	for (i = 0; i < n; i++) {
		const struct mig_tcp_basic *t = &s->flows[i].b;
		const struct mig_flowside *f;

		f = &t->side[host ? mig_basic_host_side(t)
				  : mig_basic_tap_side(t)];
		memcpy(keys[i].k, &f->oaddr, 16);
		memcpy(keys[i].k + 16, &f->eaddr, 16);
		keys[i].k[32] = (uint8_t)(f->oport >> 8);
		keys[i].k[33] = (uint8_t)f->oport;
		keys[i].k[34] = (uint8_t)(f->eport >> 8);
		keys[i].k[35] = (uint8_t)f->eport;
		keys[i].i = i;
	}
	mig_key_sort(keys, n);

	for (i = 1; i < n; i++) {
		if (memcmp(keys[i - 1].k, keys[i].k, sizeof(keys[i].k)))
			continue;
		rc = mig_fail(r, -EINVAL,
			      "flow %u: same %s-side addresses and ports as "
			      "flow %u",
			      keys[i].i, host ? "HOST" : "TAP", keys[i - 1].i);
		break;
	}
	free(keys);
	return rc;
}

static bool mig_state_ok(uint8_t st)
{
	switch (st) {
	case MIG_TCP_ESTABLISHED:
	case MIG_TCP_FIN_WAIT1:
	case MIG_TCP_FIN_WAIT2:
	case MIG_TCP_CLOSE_WAIT:
	case MIG_TCP_LAST_ACK:
	case MIG_TCP_CLOSING:
		return true;
	}
	return false;
}

/**
 * mig_check_ext() - check an extended record that isn't a skip record
 * @r:		stream being read, for the reason of a failure
 * @i:		index of the flow
 * @e:		the record
 *
 * Return: 0, or -errno with the reason in @r
 */
static int mig_check_ext(struct mig_rd *r, uint32_t i,
			 const struct mig_tcp_ext *e)
{
	if (!mig_state_ok(e->tcpi_state))
		return mig_fail(r, -EINVAL,
				"flow %u: TCP state %u can't be migrated", i,
				e->tcpi_state);
	if (e->sndq > MIG_QUEUE_MAX)
		return mig_fail(r, -E2BIG, "flow %u: sndq %u > %u", i, e->sndq,
				MIG_QUEUE_MAX);
	if (e->rcvq > MIG_QUEUE_MAX)
		return mig_fail(r, -E2BIG, "flow %u: rcvq %u > %u", i, e->rcvq,
				MIG_QUEUE_MAX);
	if (e->notsent > e->sndq)
		return mig_fail(r, -EINVAL, "flow %u: notsent %u > sndq %u", i,
				e->notsent, e->sndq);
	/* FIN_WAIT2: our FIN, the last thing we sent, is acknowledged, so
	 * is everything before it: a send queue can't be there. A target
	 * restoring one puts it after the FIN it queues again at seq_snd - 1,
	 * out of step with the peer for good
	 */
	if (e->tcpi_state == MIG_TCP_FIN_WAIT2 && e->sndq)
		return mig_fail(r, -EINVAL, "flow %u: FIN_WAIT2 with %u bytes "
				"in the send queue", i, e->sndq);
	if (!e->mss || e->mss > 65535)
		return mig_fail(r, -EINVAL, "flow %u: mss %u not in 1..65535",
				i, e->mss);
	if (e->snd_ws > MIG_WS_MAX)
		return mig_fail(r, -EINVAL, "flow %u: snd_ws %u > %u", i,
				e->snd_ws, MIG_WS_MAX);
	if (e->rcv_ws > MIG_WS_MAX)
		return mig_fail(r, -EINVAL, "flow %u: rcv_ws %u > %u", i,
				e->rcv_ws, MIG_WS_MAX);
	/* rcv_wnd is one more than the window after a FIN was received */
	if (e->snd_wnd > MIG_WND_MAX)
		return mig_fail(r, -EINVAL, "flow %u: snd_wnd %u > %u", i,
				e->snd_wnd, MIG_WND_MAX);
	if (e->max_window > MIG_WND_MAX)
		return mig_fail(r, -EINVAL, "flow %u: max_window %u > %u", i,
				e->max_window, MIG_WND_MAX);
	if (e->rcv_wnd > MIG_WND_MAX + 1)
		return mig_fail(r, -EINVAL, "flow %u: rcv_wnd %u > %u", i,
				e->rcv_wnd, MIG_WND_MAX + 1);
	return 0;
}

/**
 * mig_rd_flows() - stage "transfer flows": count, records and data
 * @r:		stream being read
 * @out:	the flows, filled in
 *
 * Stage "transfer flows": count, basic records, extended records + data
 *
 * Return: 0, or -errno with the reason in @r
 */
static int mig_rd_flows(struct mig_rd *r, struct mig_stream_in *out)
{
	const uint8_t *p = mig_take(r, MIG_COUNT_LEN);
	uint32_t i, n;
	int rc;

	if (!p)
		return mig_truncated(r, "flow count", MIG_COUNT_LEN);
	n = mig_get32(p);
	if (n > MIG_FLOWS_MAX)
		return mig_fail(r, -E2BIG, "flow count %u > %u", n,
				MIG_FLOWS_MAX);
	if (!n)
		return 0;

	/* Records alone need this much: don't allocate for a short stream */
	if ((uint64_t)n * (MIG_BASIC_LEN + MIG_EXT_LEN) > r->len - r->off)
		return mig_fail(r, -EINVAL,
				"truncated: %u flows need at least %llu bytes "
				"at offset %zu, stream has %zu",
				n,
				(unsigned long long)n *
					(MIG_BASIC_LEN + MIG_EXT_LEN),
				r->off, r->len - r->off);

	out->flows = calloc(n, sizeof(*out->flows));
	if (!out->flows)
		return mig_fail(r, -ENOMEM, "out of memory (%u flows)", n);
	out->count = n;

	for (i = 0; i < n; i++) {
		struct mig_tcp_basic *t = &out->flows[i].b;

		/* Can't fail after the check above, but keep it obvious */
		if (!(p = mig_take(r, MIG_BASIC_LEN)))
			return mig_truncated(r, "basic record", MIG_BASIC_LEN);
		mig_dec_basic(p, t);
		if ((rc = mig_check_basic(r, i, t)))
			return rc;
	}
	if ((rc = mig_check_dups(r, out, true)) ||
	    (rc = mig_check_dups(r, out, false)))
		return rc;

	for (i = 0; i < n; i++) {
		struct mig_flow_in *f = &out->flows[i];
		char what[48];

		if (!(p = mig_take(r, MIG_EXT_LEN))) {
			snprintf(what, sizeof(what), "flow %u extended record",
				 i);
			return mig_truncated(r, what, MIG_EXT_LEN);
		}
		mig_dec_ext(p, &f->e);
		if (f->e.tcpi_state == MIG_TCP_SKIP) {
			f->skip = true;
			continue;
		}
		if ((rc = mig_check_ext(r, i, &f->e)))
			return rc;

		if (!(f->sndq = mig_take(r, f->e.sndq))) {
			snprintf(what, sizeof(what), "flow %u send queue", i);
			return mig_truncated(r, what, f->e.sndq);
		}
		if (!(f->rcvq = mig_take(r, f->e.rcvq))) {
			snprintf(what, sizeof(what), "flow %u receive queue",
				 i);
			return mig_truncated(r, what, f->e.rcvq);
		}
	}
	return 0;
}

typedef int (*mig_stage_fn)(struct mig_rd *r, struct mig_stream_in *out);

/* Stages that carry bytes, in stream order ("prepare flows" has none) */
static const mig_stage_fn mig_stages_v2[] = {mig_rd_addrs, mig_rd_flows};

/* Versions we read, highest first: a v3 adds its own stage list above */
static const struct {
	uint32_t version;
	const mig_stage_fn *stages;
	size_t nstages;
} mig_versions[] = {
	{2, mig_stages_v2, sizeof(mig_stages_v2) / sizeof(mig_stages_v2[0])},
};

/**
 * mig_parse() - Decode and validate a complete migration stream
 * @buf:	Stream, as read from the device-state pipe up to EOF
 * @len:	Length of @buf
 * @out:	Decoded stream, on success: free with mig_stream_in_free().
 *		Queue pointers in it point into @buf
 * @why:	One-line reason of a refusal, may be NULL
 * @whylen:	Size of @why
 *
 * Return: 0 if the whole stream is consistent, -EINVAL if malformed,
 *	   truncated or inconsistent, -ENOTSUP if no version we read is in
 *	   [compat_version, version], -E2BIG if over MIG_STREAM_MAX,
 *	   MIG_FLOWS_MAX flows or MIG_QUEUE_MAX bytes in a queue, -ENOMEM.
 *	   On failure, @out holds nothing to free.
 */
int mig_parse(const uint8_t *buf, size_t len, struct mig_stream_in *out,
	      char *why, size_t whylen)
{
	struct mig_rd r = {buf, len, 0, why, whylen};
	uint32_t version, compat;
	const uint8_t *p;
	uint64_t magic;
	size_t v, s;
	int rc;

	memset(out, 0, sizeof(*out));
	if (why && whylen)
		why[0] = '\0';

	if (len > MIG_STREAM_MAX)
		return mig_fail(&r, -E2BIG, "stream of %zu bytes > %llu", len,
				MIG_STREAM_MAX);
	if (!(p = mig_take(&r, MIG_HDR_LEN)))
		return mig_truncated(&r, "header", MIG_HDR_LEN);

	magic = (uint64_t)mig_get32(p) << 32 | mig_get32(p + 4);
	version = mig_get32(p + 8);
	compat = mig_get32(p + 12);
	if (magic != MIG_MAGIC)
		return mig_fail(&r, -EINVAL, "bad magic 0x%016llx",
				(unsigned long long)magic);
	if (!version || !compat)
		return mig_fail(&r, -EINVAL,
				"zero version field (version %u, compat %u)",
				version, compat);

	for (v = 0; v < sizeof(mig_versions) / sizeof(mig_versions[0]); v++) {
		if (compat <= mig_versions[v].version &&
		    mig_versions[v].version <= version)
			break;
	}
	if (v == sizeof(mig_versions) / sizeof(mig_versions[0]))
		return mig_fail(
			&r, -ENOTSUP,
			"unsupported version %u (compat %u), we read %u",
			version, compat, MIG_VERSION);
	out->version = mig_versions[v].version;

	for (s = 0; s < mig_versions[v].nstages; s++) {
		if ((rc = mig_versions[v].stages[s](&r, out))) {
			mig_stream_in_free(out);
			return rc;
		}
	}

	out->used = r.off;
	return 0;
}

/**
 * mig_stream_need() - How long is the stream, as far as its start tells?
 * @buf:	The stream's first bytes, as read so far
 * @len:	How many
 * @need:	Length of the stream as far as @buf announces it: the end of
 *		the next piece whose length is known (the header, then the
 *		addresses and count, then the basic records and the first
 *		extended record, then that flow's queue bytes and the next
 *		extended record...), or the end of the whole stream
 *
 * For the target, which holds the stream in memory until it's complete:
 * reading no further than @need bounds the buffer by what the stream
 * itself announces for the flows it carries (each queue at most
 * MIG_QUEUE_MAX), not by a fixed size. Only the lengths and the limits on
 * them are looked at here: mig_parse() checks everything else at the end.
 *
 * Return: 1 if @need is the length of the whole stream, 0 if more lengths
 *	   follow once @need bytes are there, -EINVAL (bad magic, zero
 *	   version field), -ENOTSUP (no version we read) or -E2BIG (too
 *	   many flows, a queue too long) if no stream starting with @buf
 *	   could be accepted
 */
int mig_stream_need(const uint8_t *buf, size_t len, uint64_t *need)
{
	uint64_t off = MIG_HDR_LEN + MIG_ADDRS_LEN + MIG_COUNT_LEN;
	uint32_t version, compat, n, i;

	if (len < MIG_HDR_LEN) {
		*need = MIG_HDR_LEN;
		return 0;
	}
	version = mig_get32(buf + 8);
	compat = mig_get32(buf + 12);
	if (((uint64_t)mig_get32(buf) << 32 | mig_get32(buf + 4)) !=
	    MIG_MAGIC || !version || !compat)
		return -EINVAL;
	/* Version 2's layout: the only one mig_versions[] has */
	if (compat > MIG_VERSION || version < MIG_VERSION)
		return -ENOTSUP;

	if (len < off) {
		*need = off;
		return 0;
	}
	n = mig_get32(buf + off - MIG_COUNT_LEN);
	if (n > MIG_FLOWS_MAX)
		return -E2BIG;
	off += (uint64_t)n * MIG_BASIC_LEN;

	for (i = 0; i < n; i++) {
		const uint8_t *e = buf + off;
		uint32_t sndq, rcvq;

		if (len < off + MIG_EXT_LEN) {
			*need = off + MIG_EXT_LEN;
			return 0;
		}
		off += MIG_EXT_LEN;
		if (e[50] == MIG_TCP_SKIP)	/* tcpi_state: no queues */
			continue;
		sndq = mig_get32(e + 8);
		rcvq = mig_get32(e + 16);
		if (sndq > MIG_QUEUE_MAX || rcvq > MIG_QUEUE_MAX)
			return -E2BIG;
		off += (uint64_t)sndq + rcvq;
	}
	*need = off;
	return 1;
}

/**
 * mig_stream_in_free() - Release a decoded stream, zero it
 * @s:		Stream filled by mig_parse()
 */
void mig_stream_in_free(struct mig_stream_in *s)
{
	free(s->flows);
	memset(s, 0, sizeof(*s));
}

/* Helpers */

/**
 * mig_basic_host_side() - Index of the HOST (socket) side of a flow
 * @t:		Basic record
 *
 * Return: 1 if the target side is HOST (flow opened by the guest), else 0
 */
int mig_basic_host_side(const struct mig_tcp_basic *t)
{
	return t->pif[1] == MIG_PIF_HOST ? 1 : 0;
}

/**
 * mig_basic_tap_side() - Index of the TAP (guest) side of a flow
 * @t:		Basic record
 *
 * Return: the other index than mig_basic_host_side()
 */
int mig_basic_tap_side(const struct mig_tcp_basic *t)
{
	return !mig_basic_host_side(t);
}

/**
 * mig_addr_is_v4() - Is an address of the stream an IPv4 one (v4-mapped)?
 * @a:		Address as found in a flowside
 *
 * Return: true for ::ffff:a.b.c.d
 */
bool mig_addr_is_v4(const struct in6_addr *a)
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a->s6_addr, pfx, sizeof(pfx));
}

/**
 * mig_basic_is_v4() - Is the flow's socket IPv4? (TAP side's oaddr decides)
 * @t:		Basic record
 *
 * Return: true for an IPv4 flow
 */
bool mig_basic_is_v4(const struct mig_tcp_basic *t)
{
	return mig_addr_is_v4(&t->side[mig_basic_tap_side(t)].oaddr);
}

static bool mig_side_eq(const struct mig_flowside *a,
			const struct mig_flowside *b)
{
	return !memcmp(&a->oaddr, &b->oaddr, 16) &&
	       !memcmp(&a->eaddr, &b->eaddr, 16) && a->oport == b->oport &&
	       a->eport == b->eport;
}

/**
 * mig_basic_eq() - are two basic records the same, field by field?
 * @a:		one record
 * @b:		the other one
 *
 * Return: true if they are
 */
static bool mig_basic_eq(const struct mig_tcp_basic *a,
			 const struct mig_tcp_basic *b)
{
	return a->pif[0] == b->pif[0] && a->pif[1] == b->pif[1] &&
	       mig_side_eq(&a->side[0], &b->side[0]) &&
	       mig_side_eq(&a->side[1], &b->side[1]) &&
	       a->retries == b->retries && a->ws_from_tap == b->ws_from_tap &&
	       a->ws_to_tap == b->ws_to_tap && a->events == b->events &&
	       a->tap_mss == b->tap_mss && a->sndbuf == b->sndbuf &&
	       a->flags == b->flags &&
	       a->seq_dup_ack_approx == b->seq_dup_ack_approx &&
	       a->wnd_from_tap == b->wnd_from_tap &&
	       a->wnd_to_tap == b->wnd_to_tap &&
	       a->seq_to_tap == b->seq_to_tap &&
	       a->seq_ack_from_tap == b->seq_ack_from_tap &&
	       a->seq_from_tap == b->seq_from_tap &&
	       a->seq_ack_to_tap == b->seq_ack_to_tap &&
	       a->seq_init_from_tap == b->seq_init_from_tap;
}

static bool mig_ext_eq(const struct mig_tcp_ext *a, const struct mig_tcp_ext *b)
{
	return a->seq_snd == b->seq_snd && a->seq_rcv == b->seq_rcv &&
	       a->sndq == b->sndq && a->notsent == b->notsent &&
	       a->rcvq == b->rcvq && a->mss == b->mss &&
	       a->timestamp == b->timestamp && a->snd_wl1 == b->snd_wl1 &&
	       a->snd_wnd == b->snd_wnd && a->max_window == b->max_window &&
	       a->rcv_wnd == b->rcv_wnd && a->rcv_wup == b->rcv_wup &&
	       a->snd_ws == b->snd_ws && a->rcv_ws == b->rcv_ws &&
	       a->tcpi_state == b->tcpi_state &&
	       a->tcpi_options == b->tcpi_options;
}

/**
 * mig_stream_in_equal() - Do two decoded streams carry the same content?
 * @a:		Stream
 * @b:		Stream
 *
 * The version parsed as and the bytes consumed don't count; queue contents
 * are compared byte by byte, not by pointer.
 *
 * Return: true if addresses, flows and queue bytes are the same
 */
bool mig_stream_in_equal(const struct mig_stream_in *a,
			 const struct mig_stream_in *b)
{
	uint32_t i;

	if (memcmp(&a->addrs.addr6, &b->addrs.addr6, 16) ||
	    memcmp(&a->addrs.addr6_ll, &b->addrs.addr6_ll, 16) ||
	    a->addrs.addr4.s_addr != b->addrs.addr4.s_addr ||
	    memcmp(a->addrs.mac, b->addrs.mac, ETH_ADDR_LEN) ||
	    a->count != b->count)
		return false;

	for (i = 0; i < a->count; i++) {
		const struct mig_flow_in *x = &a->flows[i], *y = &b->flows[i];

		if (x->skip != y->skip || !mig_basic_eq(&x->b, &y->b) ||
		    !mig_ext_eq(&x->e, &y->e))
			return false;
		if (x->skip)
			continue;
		if ((x->e.sndq && memcmp(x->sndq, y->sndq, x->e.sndq)) ||
		    (x->e.rcvq && memcmp(x->rcvq, y->rcvq, x->e.rcvq)))
			return false;
	}
	return true;
}
