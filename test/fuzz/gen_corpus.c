// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gen_corpus.c - write the seed corpus of the fuzz harnesses: valid guest
 * frames (ARP request, DHCP DISCOVER/REQUEST/INFORM, DHCPv6 SOLICIT/
 * REQUEST/INFORMATION-REQUEST/CONFIRM, NDP RS/NS, TCP SYN and handshake,
 * UDP datagrams, ICMP and ICMPv6 echo requests), a virtqueue with good
 * chains, and vhost-user sessions (set-up, then frames both ways, dirty
 * log, stop and restart, reconnect), passt-repair requests (good ones
 * and the ones its test refuses) and command lines (what libvirt and
 * KubeVirt pass, good and bad options), each in the input format of its
 * harness (see fuzz_*.c).
 *
 * Usage: gen_corpus DIR -- creates DIR/NAME/seed-* for every harness.
 * Addresses match fuzz_common.h: guest 192.0.2.10 / 2001:db8:1:2::15 /
 * fe80::2, gateway 192.0.2.1 / fe80::1, our MAC 9a:55:9a:55:9a:55.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

static const uint8_t guest_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
static const uint8_t our_mac[6] = {0x9a, 0x55, 0x9a, 0x55, 0x9a, 0x55};
static const char *outdir;

struct buf {
	uint8_t b[4096];
	size_t len;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > sizeof(b->b)) {
		fprintf(stderr, "gen_corpus: seed too long\n");
		exit(1);
	}
	memcpy(b->b + b->len, d, n);
	b->len += n;
}

static void put8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put16(struct buf *b, uint16_t v)
{
	uint8_t d[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	put(b, d, 2);
}

static void put32(struct buf *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b, (uint16_t)v);
}

static void put_a4(struct buf *b, const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		exit(1);
	put(b, &a, 4);
}

static void put_a6(struct buf *b, const char *s)
{
	struct in6_addr a;

	if (inet_pton(AF_INET6, s, &a) != 1)
		exit(1);
	put(b, &a, 16);
}

static void mkdir_p(const char *d)
{
	if (mkdir(d, 0755) && errno != EEXIST) {
		perror(d);
		exit(1);
	}
}

static void write_seed(const char *harness, const char *name, const void *pre,
		       size_t prelen, const void *d, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, harness);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/%s/seed-%s", outdir, harness, name);
	f = fopen(path, "wb");
	if (!f || fwrite(pre, 1, prelen, f) != prelen ||
	    fwrite(d, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* RFC 1071 */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet header; then the caller appends the packet */
static void eth(struct buf *f, const uint8_t *dst, uint16_t type)
{
	f->len = 0;
	put(f, dst, 6);
	put(f, guest_mac, 6);
	put16(f, type);
}

/* Complete an IPv4 or IPv6 frame around the layer-4 message @l4 */
static void ip4_frame(struct buf *f, const char *src, const char *dst,
		      uint8_t proto, const struct buf *l4)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t *ip, *m;
	uint32_t s;
	uint16_t c;
	int off = proto == 6 ? 16 : proto == 17 ? 6 : 2;

	eth(f, strcmp(dst, "255.255.255.255") ? our_mac : bcast, 0x0800);
	put8(f, 0x45);
	put8(f, 0);
	put16(f, (uint16_t)(20 + l4->len));
	put16(f, 1);
	put16(f, 0x4000);
	put8(f, 64);
	put8(f, proto);
	put16(f, 0);
	put_a4(f, src);
	put_a4(f, dst);
	ip = f->b + 14;
	c = fold(sum16(0, ip, 20));
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	put(f, l4->b, l4->len);
	m = f->b + 34;
	s = proto == 1 ? 0 : sum16(0, ip + 12, 8) + proto + (uint32_t)l4->len;
	m[off] = m[off + 1] = 0;
	c = fold(sum16(s, m, l4->len));
	m[off] = (uint8_t)(c >> 8);
	m[off + 1] = (uint8_t)c;
}

static void ip6_frame(struct buf *f, const uint8_t *dmac, const char *src,
		      const char *dst, uint8_t proto, uint8_t hlim,
		      const struct buf *l4)
{
	uint8_t *ip, *m;
	uint32_t s;
	uint16_t c;
	int off = proto == 6 ? 16 : proto == 17 ? 6 : 2;

	eth(f, dmac, 0x86dd);
	put32(f, 0x60000000);
	put16(f, (uint16_t)l4->len);
	put8(f, proto);
	put8(f, hlim);
	put_a6(f, src);
	put_a6(f, dst);
	ip = f->b + 14;
	put(f, l4->b, l4->len);
	m = f->b + 54;
	s = sum16(0, ip + 8, 32) + proto + (uint32_t)l4->len;
	m[off] = m[off + 1] = 0;
	c = fold(sum16(s, m, l4->len));
	m[off] = (uint8_t)(c >> 8);
	m[off + 1] = (uint8_t)c;
}

static void udp(struct buf *u, uint16_t sport, uint16_t dport,
		const struct buf *payload)
{
	u->len = 0;
	put16(u, sport);
	put16(u, dport);
	put16(u, (uint16_t)(8 + payload->len));
	put16(u, 0);
	put(u, payload->b, payload->len);
}

static void tcp(struct buf *t, uint16_t sport, uint16_t dport, uint32_t seq,
		uint32_t ack, uint8_t flags, const char *data)
{
	bool syn = flags & 0x02;

	t->len = 0;
	put16(t, sport);
	put16(t, dport);
	put32(t, seq);
	put32(t, ack);
	put8(t, syn ? 0x80 : 0x50); /* 32 or 20 bytes of header */
	put8(t, flags);
	put16(t, 64240);
	put16(t, 0);
	put16(t, 0);
	if (syn) {
		put(t, "\x02\x04\x05\xb4", 4); /* MSS 1460 */
		put(t, "\x04\x02", 2);	       /* SACK permitted */
		put(t, "\x01\x03\x03\x07", 4); /* NOP, window scale 7 */
		put(t, "\x01\x01", 2);
	}
	if (data)
		put(t, data, strlen(data));
}

/* BOOTP request of @type with our usual client options */
static void dhcp_msg(struct buf *d, uint8_t type, const char *ciaddr,
		     const char *reqaddr, const char *server)
{
	static const uint8_t cookie[4] = {99, 130, 83, 99};
	uint8_t zero[236] = {0};

	d->len = 0;
	put(d, zero, sizeof(zero));
	d->b[0] = 1;
	d->b[1] = 1;
	d->b[2] = 6;
	memcpy(d->b + 4, "\x12\x34\x56\x78", 4);
	if (ciaddr) {
		struct in_addr a;

		inet_pton(AF_INET, ciaddr, &a);
		memcpy(d->b + 12, &a, 4);
	}
	memcpy(d->b + 28, guest_mac, 6);
	put(d, cookie, 4);
	put8(d, 53);
	put8(d, 1);
	put8(d, type);
	put8(d, 61);
	put8(d, 7);
	put8(d, 1);
	put(d, guest_mac, 6);
	put8(d, 57);
	put8(d, 2);
	put16(d, 1500);
	if (reqaddr) {
		put8(d, 50);
		put8(d, 4);
		put_a4(d, reqaddr);
	}
	if (server) {
		put8(d, 54);
		put8(d, 4);
		put_a4(d, server);
	}
	put8(d, 12);
	put8(d, 5);
	put(d, "guest", 5);
	put8(d, 81);
	put8(d, 9);
	put(d,
	    "\x00\x00\x00"
	    "\x05guest\x00",
	    9);
	put8(d, 55);
	put8(d, 8);
	put(d, "\x01\x03\x06\x0c\x0f\x1a\x77\x79", 8);
	put8(d, 255);
}

static void dhcpv6_opt(struct buf *d, uint16_t code, const void *v, size_t len)
{
	put16(d, code);
	put16(d, (uint16_t)len);
	put(d, v, len);
}

/* DHCPv6 message of @type: client ID, optional server ID, IA_NA */
static void dhcpv6_msg(struct buf *d, uint8_t type, bool server, bool ia,
		       bool rapid)
{
	struct buf duid = {.len = 0}, ian = {.len = 0};

	d->len = 0;
	put8(d, type);
	put(d, "\xab\xcd\xef", 3);
	put16(&duid, 3);
	put16(&duid, 1);
	put(&duid, guest_mac, 6);
	dhcpv6_opt(d, 1, duid.b, duid.len);
	if (server) {
		duid.len = 0;
		put16(&duid, 3);
		put16(&duid, 1);
		put(&duid, our_mac, 6);
		dhcpv6_opt(d, 2, duid.b, duid.len);
	}
	if (ia) {
		struct buf a = {.len = 0};

		put32(&ian, 0x1234);
		put32(&ian, 0);
		put32(&ian, 0);
		put_a6(&a, "2001:db8:1:2::15");
		put32(&a, 3600);
		put32(&a, 7200);
		dhcpv6_opt(&ian, 5, a.b, a.len);
		dhcpv6_opt(d, 3, ian.b, ian.len);
	}
	dhcpv6_opt(d, 6, "\x00\x17\x00\x18\x00\x27", 6); /* ORO */
	dhcpv6_opt(d, 8, "\x00\x00", 2);		 /* elapsed */
	dhcpv6_opt(d, 39, "\x00\x05guest\x00", 8);	 /* FQDN */
	if (rapid)
		dhcpv6_opt(d, 14, NULL, 0);
}

/* A whole frame: seed of the packet and tap harnesses */
static void frame_seed(const char *name, const struct buf *f)
{
	uint8_t rec[4] = {0, (uint8_t)(f->len >> 8), (uint8_t)f->len, 0x80};

	write_seed("packet", name, NULL, 0, f->b, f->len);
	write_seed("tap", name, rec, 4, f->b, f->len);
}

static void virtqueue_seed(void)
{
	/* Header: queue size 8 (2^3), fixed layout, dirty log on */
	static uint8_t mem[32 + 0x2000];
	uint8_t *g = mem + 32;
	unsigned i;

	memset(mem, 0, sizeof(mem));
	mem[0] = 3 | 32;

#define DESC(i, addr, len, flags, next)                         \
	do {                                                    \
		uint8_t *d_ = g + 16 * (i);                     \
		uint64_t a_ = (addr);                           \
		uint32_t l_ = (len);                            \
		for (unsigned k_ = 0; k_ < 8; k_++)             \
			d_[k_] = (uint8_t)(a_ >> (8 * k_));     \
		for (unsigned k_ = 0; k_ < 4; k_++)             \
			d_[8 + k_] = (uint8_t)(l_ >> (8 * k_)); \
		d_[12] = (uint8_t)(flags);                      \
		d_[13] = (uint8_t)((flags) >> 8);               \
		d_[14] = (uint8_t)(next);                       \
		d_[15] = (uint8_t)((next) >> 8);                \
	} while (0)

	/* 0: readable 100 bytes -> 1: writable 200 bytes in region 1 */
	DESC(0, 0x1800, 100, 1, 1);
	DESC(1, 0x10000, 200, 2, 0);
	/* 2: a buffer across the end of region 0 (fails: gap) */
	DESC(2, 0x1ff0, 64, 0, 0);
	/* 3: indirect table at 0x1c00 with two entries */
	DESC(3, 0x1c00, 32, 4, 0);
	for (i = 0; i < 2; i++) {
		uint8_t *d = g + 0x1c00 + 16 * i;

		d[0] = (uint8_t)(0x00 + i * 0x80);
		d[1] = 0x19;
		d[8] = 64;
		d[12] = i ? 2 : 1;
		d[14] = 1;
	}
	/* Available ring at 0x1000: idx 3, heads 0, 3, 2 */
	g[0x1000 + 2] = 3;
	g[0x1000 + 4] = 0;
	g[0x1000 + 6] = 3;
	g[0x1000 + 8] = 2;
	write_seed("virtqueue", "chains", NULL, 0, mem, sizeof(mem));
#undef DESC
}


/* vhost_user: operation codes of fuzz_vhost_user.c (op byte bits 0-4) */
enum {
	VU_GET_FEATURES = 1, VU_SET_FEATURES = 2, VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6, VU_SET_VRING_NUM = 8, VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10, VU_SET_VRING_KICK = 12, VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ENABLE = 18, VU_OP_RAW = 20, VU_OP_SETUP = 21,
	VU_OP_TX = 22, VU_OP_RX = 23, VU_OP_ROUND = 24, VU_OP_RECONNECT = 25,
	VU_OP_SEG = 26, VU_OP_GET_BASE = 30,
};
#define VU_NEED_REPLY 0x20

/* Little endian, as the harness reads its multi-byte fields */
static void put16le(struct buf *b, uint16_t v)
{
	put8(b, (uint8_t)v);
	put8(b, (uint8_t)(v >> 8));
}

/* Set-up macro: features byte (bit 1 MRG_RXBUF, 2 GUEST_CSUM, 3-4
 * GUEST_TSO4/6, 5 LOG_ALL, 6 host offloads), memory table (one region),
 * queue size 2^qexp
 */
static void vu_setup(struct buf *b, uint8_t feat, uint8_t qexp, bool reply)
{
	put8(b, VU_OP_SETUP | (reply ? VU_NEED_REPLY : 0));
	put8(b, feat);
	put8(b, 0);
	put8(b, qexp);
}

/* RX buffers: count - 1, size variant (0: 1 KiB), pieces - 1 */
static void vu_rx(struct buf *b, uint8_t n, uint8_t size, uint8_t pieces)
{
	put8(b, VU_OP_RX);
	put8(b, n);
	put8(b, size);
	put8(b, pieces);
}

/* One TX frame: control byte (bits 0-1: pieces - 1, 2: header in its own
 * descriptor, 3: indirect), then the frame
 */
static void vu_tx(struct buf *b, uint8_t ctl, const struct buf *f)
{
	put8(b, VU_OP_TX);
	put8(b, 0);
	put8(b, ctl);
	put16le(b, (uint16_t)f->len);
	put(b, f->b, f->len);
}

static void vhost_user_seeds(const struct buf *arp, const struct buf *dhcp,
			     const struct buf *rs)
{
	static struct buf b;

	/* Set-up, buffers, ARP request in one piece (handed over in place) */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x02, 8, false);
	vu_rx(&b, 63, 0, 1);
	vu_tx(&b, 0, arp);
	put8(&b, VU_OP_ROUND);
	write_seed("vhost_user", "arp", NULL, 0, b.b, b.len);

	/* DHCP in three pieces, header apart (gathered), REPLY_ACK */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x02, 6, true);
	vu_rx(&b, 31, 0, 1);
	vu_tx(&b, 0x06, dhcp);
	write_seed("vhost_user", "dhcp", NULL, 0, b.b, b.len);

	/* No MRG_RXBUF, small buffers; NDP RS through an indirect table */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x00, 4, false);
	vu_rx(&b, 7, 0, 3);
	vu_tx(&b, 0x08, rs);
	vu_rx(&b, 7, 3, 3);
	vu_tx(&b, 0x01, arp);
	write_seed("vhost_user", "nomrg-rs", NULL, 0, b.b, b.len);

	/* Offloads: frames built in place (TSO), IPv4 and IPv6 */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x5e, 8, false);
	vu_rx(&b, 127, 0, 3);
	put8(&b, VU_OP_SEG);
	put8(&b, 0x04); /* IPv4, 3 frames */
	put16le(&b, 1460 - 536);
	put16le(&b, 3000);
	put8(&b, VU_OP_SEG);
	put8(&b, 0x03); /* IPv6, 2 frames */
	put16le(&b, 1440 - 536);
	put16le(&b, 100);
	write_seed("vhost_user", "seg-tso", NULL, 0, b.b, b.len);

	/* Dirty logging: LOG_ALL, a log, frames both ways */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x22, 5, false);
	put8(&b, VU_SET_LOG_BASE | VU_NEED_REPLY);
	put8(&b, 0);
	vu_rx(&b, 15, 0, 1);
	vu_tx(&b, 0x05, dhcp);
	write_seed("vhost_user", "log", NULL, 0, b.b, b.len);

	/* Stop TX (GET_VRING_BASE), frames and a kick: untouched; restart */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x02, 3, false);
	vu_rx(&b, 7, 0, 1);
	put8(&b, VU_OP_GET_BASE);
	put8(&b, 1);
	vu_tx(&b, 0, arp);
	put8(&b, VU_SET_VRING_BASE);
	put8(&b, 1);
	put8(&b, VU_SET_VRING_KICK);
	put8(&b, 1);
	vu_tx(&b, 0, arp);
	write_seed("vhost_user", "stop-restart", NULL, 0, b.b, b.len);

	/* Reconnect: the device starts from scratch */
	b.len = 0;
	put8(&b, 0);
	vu_setup(&b, 0x02, 3, false);
	vu_rx(&b, 7, 0, 1);
	put8(&b, VU_OP_RECONNECT);
	put8(&b, 0);
	vu_setup(&b, 0x02, 3, false);
	vu_rx(&b, 7, 0, 1);
	vu_tx(&b, 0, arp);
	write_seed("vhost_user", "reconnect", NULL, 0, b.b, b.len);

	/* Step by step, two memory regions, no protocol features */
	b.len = 0;
	put8(&b, 0);
	put8(&b, VU_GET_FEATURES);
	put8(&b, 0);
	put8(&b, VU_SET_FEATURES);
	put8(&b, 0x02);
	put8(&b, VU_SET_MEM_TABLE);
	put8(&b, 1 | 1 << 3);
	{
		uint8_t r;

		for (r = 0; r < 2; r++) {
			put8(&b, VU_SET_VRING_CALL);
			put8(&b, r);
			put8(&b, VU_SET_VRING_NUM);
			put8(&b, (uint8_t)(r | 6 << 1));
			put8(&b, VU_SET_VRING_BASE);
			put8(&b, r);
			put8(&b, VU_SET_VRING_ADDR);
			put8(&b, r);
			put8(&b, VU_SET_VRING_KICK);
			put8(&b, r);
		}
	}
	put8(&b, VU_SET_VRING_ENABLE);
	put8(&b, 3);
	vu_rx(&b, 31, 0, 1);
	vu_tx(&b, 0x02, arp);
	write_seed("vhost_user", "steps", NULL, 0, b.b, b.len);

	/* A header announcing a payload too large: connection closed */
	b.len = 0;
	put8(&b, 0);
	put8(&b, VU_OP_RAW);
	put(&b, "\x05\x00\x00\x00\x01\x00\x00\x00\x00\x00\x01\x00", 12);
	put16le(&b, 0);
	put8(&b, 0);
	vu_setup(&b, 0x02, 3, false);
	write_seed("vhost_user", "raw-oversize", NULL, 0, b.b, b.len);
}

/* passt-repair requests: command, flags, control data (fuzz_repair.c) */
static void repair_seed(const char *name, int8_t cmd, uint8_t flags,
			int level, int type, int nfds, int nmsgs)
{
	struct buf b = { .len = 0 };
	int m, i;

	put8(&b, (uint8_t)cmd);
	put8(&b, flags);
	for (m = 0; m < nmsgs; m++) {
		struct cmsghdr cm = {
			.cmsg_len = CMSG_LEN(sizeof(int) * nfds),
			.cmsg_level = level, .cmsg_type = type,
		};
		size_t pad;

		put(&b, &cm, sizeof(cm));
		for (i = 0; i < nfds; i++) {
			int fd = 10 + i;

			put(&b, &fd, sizeof(fd));
		}
		pad = CMSG_SPACE(sizeof(int) * nfds) -
		      CMSG_LEN(sizeof(int) * nfds);
		while (pad--)
			put8(&b, 0);
	}
	write_seed("repair", name, NULL, 0, b.b, b.len);
}

static void repair_seeds(void)
{
	repair_seed("on-1", 1, 0, SOL_SOCKET, SCM_RIGHTS, 1, 1);
	repair_seed("off-3", 0, 0, SOL_SOCKET, SCM_RIGHTS, 3, 1);
	repair_seed("off-nowp-253", -1, 0, SOL_SOCKET, SCM_RIGHTS, 253, 1);
	repair_seed("nofd", 1, 0, SOL_SOCKET, SCM_RIGHTS, 0, 0);
	repair_seed("badcmd", 5, 0, SOL_SOCKET, SCM_RIGHTS, 1, 1);
	repair_seed("creds", 1, 0, SOL_SOCKET, 2 /* SCM_CREDENTIALS */, 3, 1);
	repair_seed("two", 1, 0, SOL_SOCKET, SCM_RIGHTS, 2, 2);
	repair_seed("ctrunc", 1, 1, SOL_SOCKET, SCM_RIGHTS, 4, 1);
}

/* Command lines: NUL-separated arguments after "passt" (fuzz_conf.c) */
static void conf_seed(const char *name, const char *const *args)
{
	struct buf b = { .len = 0 };

	put8(&b, 3);
	for (; *args; args++) {
		put(&b, *args, strlen(*args));
		if (args[1])
			put8(&b, 0);
	}
	write_seed("conf", name, NULL, 0, b.b, b.len);
}

static void conf_seeds(void)
{
	static const char *const libvirt[] = {
		"--one-off", "--socket", "/run/libvirt/qemu/passt/1-vm.sock",
		"--pid", "/run/libvirt/qemu/passt/1-vm.pid", "--vhost-user",
		"--mtu", "1500", "--interface", "eth0", "--address",
		"192.0.2.10", "--netmask", "24", "--log-file",
		"/var/log/passt.log", "--tcp-ports", "22,80:8080,~25",
		"--udp-ports", "53-54", NULL };
	static const char *const kubevirt[] = {
		"-f", "--vhost-user", "-s", "/tmp/p.sock", "--repair-path",
		"/tmp/p.repair", "--migrate-linger-timeout", "30", "-t",
		"all", "-u", "none", "--runas", "0:0", NULL };
	static const char *const v6[] = {
		"-6", "-a", "2001:db8::5", "-g", "fe80::1", "-D",
		"2001:db8::53", "-S", "example.com", "--dns-forward",
		"2001:db8::1", "-M", "52:54:00:12:34:56", "-H", "guest",
		"--fqdn", "guest.example.com", "-o", "2001:db8::9", NULL };
	static const char *const v4[] = {
		"-4", "-qd", "-n", "255.255.255.0", "-g", "192.0.2.1",
		"--map-host-loopback", "192.0.2.1", "--map-guest-addr",
		"192.0.2.99", "--no-dhcp-dns", "--no-map-gw", "-T", "auto",
		"--log-size", "1048576", "--trace", "-p", "/tmp/x.pcap", NULL };
	static const char *const bad[] = {
		"-4", "-6", "--mtu", "70000", "-t", "70000-1", "--fd", "x",
		"--bogus", NULL };
	static const char *const help[] = { "--help", NULL };

	conf_seed("libvirt", libvirt);
	conf_seed("kubevirt", kubevirt);
	conf_seed("v6", v6);
	conf_seed("v4", v4);
	conf_seed("bad", bad);
	conf_seed("help", help);
}

int main(int argc, char **argv)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t pre2[2] = {0, 0};
	struct buf f, l4, pl, tapin, vu_arp, vu_dhcp, vu_rs;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 1;
	}
	outdir = argv[1];
	mkdir_p(outdir);

	/* ARP request: who has 192.0.2.1? tell 192.0.2.10 */
	eth(&f, bcast, 0x0806);
	put(&f, "\x00\x01\x08\x00\x06\x04\x00\x01", 8);
	put(&f, guest_mac, 6);
	put_a4(&f, "192.0.2.10");
	put(&f, "\0\0\0\0\0\0", 6);
	put_a4(&f, "192.0.2.1");
	frame_seed("arp-request", &f);
	vu_arp = f;
	write_seed("arp", "request", pre2, 1, f.b + 14, f.len - 14);

	/* DHCP */
	{
		static const struct {
			const char *name;
			uint8_t type;
			const char *ciaddr, *req, *server;
		} m[] = {
			{"discover", 1, NULL, NULL, NULL},
			{"request", 3, NULL, "192.0.2.10", "192.0.2.1"},
			{"renew", 3, "192.0.2.10", NULL, NULL},
			{"inform", 8, "192.0.2.10", NULL, NULL},
		};
		unsigned i;

		for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
			char name[64];

			dhcp_msg(&pl, m[i].type, m[i].ciaddr, m[i].req,
				 m[i].server);
			write_seed("dhcp", m[i].name, pre2, 2, pl.b, pl.len);
			udp(&l4, 68, 67, &pl);
			ip4_frame(&f, m[i].ciaddr ? m[i].ciaddr : "0.0.0.0",
				  "255.255.255.255", 17, &l4);
			snprintf(name, sizeof(name), "dhcp-%s", m[i].name);
			frame_seed(name, &f);
			if (m[i].type == 1)
				vu_dhcp = f;
		}
	}

	/* DHCPv6 */
	{
		static const uint8_t mc[6] = {0x33, 0x33, 0, 1, 0, 2};
		static const struct {
			const char *name;
			uint8_t type;
			bool server, ia, rapid;
		} m[] = {
			{"solicit", 1, false, true, false},
			{"solicit-rapid", 1, false, true, true},
			{"request", 3, true, true, false},
			{"confirm", 4, false, true, false},
			{"renew", 5, true, true, false},
			{"info-request", 11, false, false, false},
			{"release", 8, true, true, false},
		};
		unsigned i;

		for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
			char name[64];

			dhcpv6_msg(&pl, m[i].type, m[i].server, m[i].ia,
				   m[i].rapid);
			write_seed("dhcpv6", m[i].name, pre2, 2, pl.b, pl.len);
			udp(&l4, 546, 547, &pl);
			ip6_frame(&f, mc, "fe80::2", "ff02::1:2", 17, 1, &l4);
			snprintf(name, sizeof(name), "dhcpv6-%s", m[i].name);
			frame_seed(name, &f);
		}
	}

	/* NDP: RS with SLLA; NS for the router and for a global address */
	{
		static const uint8_t mc_r[6] = {0x33, 0x33, 0, 0, 0, 2};
		static const uint8_t mc_s[6] = {0x33, 0x33, 0xff, 0, 0, 1};

		l4.len = 0;
		put(&l4, "\x85\x00\x00\x00\x00\x00\x00\x00", 8);
		put(&l4, "\x01\x01", 2);
		put(&l4, guest_mac, 6);
		ip6_frame(&f, mc_r, "fe80::2", "ff02::2", 58, 255, &l4);
		frame_seed("ndp-rs", &f);
		vu_rs = f;
		write_seed("ndp", "rs", pre2, 2, f.b, f.len);

		l4.len = 8;
		ip6_frame(&f, mc_r, "::", "ff02::2", 58, 255, &l4);
		write_seed("ndp", "rs-unspec", pre2, 2, f.b, f.len);

		l4.len = 0;
		put(&l4, "\x87\x00\x00\x00\x00\x00\x00\x00", 8);
		put_a6(&l4, "fe80::1");
		put(&l4, "\x01\x01", 2);
		put(&l4, guest_mac, 6);
		ip6_frame(&f, mc_s, "fe80::2", "ff02::1:ff00:1", 58, 255, &l4);
		frame_seed("ndp-ns", &f);
		write_seed("ndp", "ns", pre2, 2, f.b, f.len);

		l4.len = 0;
		put(&l4, "\x87\x00\x00\x00\x00\x00\x00\x00", 8);
		put_a6(&l4, "2001:db8:1:2::1");
		ip6_frame(&f, our_mac, "2001:db8:1:2::15", "2001:db8:1:2::1",
			  58, 255, &l4);
		frame_seed("ndp-ns-global", &f);
		write_seed("ndp", "ns-global", pre2, 2, f.b, f.len);
	}

	/* ICMP echo requests */
	l4.len = 0;
	put(&l4, "\x08\x00\x00\x00\x12\x34\x00\x01pingpingpingping", 24);
	ip4_frame(&f, "192.0.2.10", "192.0.2.1", 1, &l4);
	frame_seed("icmp-echo", &f);
	l4.b[0] = 128;
	ip6_frame(&f, our_mac, "2001:db8:1:2::15", "fe80::1", 58, 64, &l4);
	frame_seed("icmpv6-echo", &f);

	/* UDP datagrams to the gateway (loopback on the host): DNS port */
	pl.len = 0;
	put(&pl,
	    "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x07"
	    "example"
	    "\x03"
	    "com"
	    "\x00\x00\x01\x00\x01",
	    29);
	udp(&l4, 40001, 53, &pl);
	ip4_frame(&f, "192.0.2.10", "192.0.2.1", 17, &l4);
	frame_seed("udp4", &f);
	ip6_frame(&f, our_mac, "2001:db8:1:2::15", "fe80::1", 17, 64, &l4);
	frame_seed("udp6", &f);

	/* TCP SYN to the gateway, port 80 */
	tcp(&l4, 40000, 80, 1000, 0, 0x02, NULL);
	ip4_frame(&f, "192.0.2.10", "192.0.2.1", 6, &l4);
	frame_seed("tcp4-syn", &f);
	ip6_frame(&f, our_mac, "2001:db8:1:2::15", "fe80::1", 6, 64, &l4);
	frame_seed("tcp6-syn", &f);

	/* TCP handshake, data, ACKs, FIN: sequence numbers fixed up by the
	 * harness (control bits 0 and 1) from what passt sends
	 */
	tapin.len = 0;
	put8(&tapin, 0);
	{
		static const struct {
			uint8_t flags;
			const char *data;
		} seg[] = {
			{0x02, NULL},
			{0x10, NULL},
			{0x18, "GET / HTTP/1.0\r\n\r\n"},
			{0x10, NULL},
			{0x10, NULL},
			{0x11, NULL},
			{0x10, NULL},
		};
		unsigned i;

		for (i = 0; i < sizeof(seg) / sizeof(seg[0]); i++) {
			tcp(&l4, 40002, 80, 5000, 0, seg[i].flags, seg[i].data);
			ip4_frame(&f, "192.0.2.10", "192.0.2.1", 6, &l4);
			put16(&tapin, (uint16_t)f.len);
			put8(&tapin, i ? 0x83 : 0x80);
			put(&tapin, f.b, f.len);
		}
	}
	write_seed("tap", "tcp4-session", NULL, 0, tapin.b, tapin.len);

	virtqueue_seed();
	vhost_user_seeds(&vu_arp, &vu_dhcp, &vu_rs);
	repair_seeds();
	conf_seeds();
	return 0;
}
