// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcpguest.c - a frame-level TCP guest, and the peers it talks to, for
 * regression tests of the daemon's TCP translation.
 *
 * Usage: tcpguest [OPTIONS] SOCKPATH CASE...
 *
 * Connects to the daemon's UNIX stream socket (qemu stream framing: 4-byte
 * big-endian length, then the Ethernet frame) and plays the guest: it
 * builds Ethernet/IPv4/IPv6/TCP frames itself, with correct checksums, and
 * runs a small TCP client with its own sequence bookkeeping. It also plays
 * the remote peers: it runs in the namespace that holds the peer addresses
 * and listens there with ordinary sockets, one port per connection, so it
 * knows exactly which peer socket belongs to which guest connection.
 *
 * Every byte carries its owner: guest data of connection N is a sequence of
 * 16-byte records "C<N as 4 hex>:<record as 8 hex> \n", peer data the same
 * with 'S'. Peers and the guest check every byte they receive against the
 * pattern as it arrives, so a byte of another connection, a duplicate or a
 * hole is reported at once with the offending record.
 *
 * Frames are queued into one buffer and written with one write() per batch
 * (tx_flush()), which the daemon reads in one go: this is what lets the
 * reuse case put "data on A, RST for A, SYN for B" into a single batch.
 * Frames from the daemon are read whenever we wait, so it never blocks on
 * us; every wait has a deadline (-t).
 *
 * Each case runs for IPv4, then IPv6 (unless -4 or -6). Exit status: 0 if
 * every case passed, 1 on the first failure (with a message saying what was
 * expected), 2 on usage or set-up errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/conn.h"
#include "common/frame.h"


#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10

#define MAX_CONNS 8192
#define REC 16				/* pattern record size */
#define RTO_MS 800			/* our retransmission timeout */

#define SEQ_LT(a, b) ((int32_t)((a) - (b)) < 0)
#define SEQ_LE(a, b) ((int32_t)((a) - (b)) <= 0)
#define SEQ_GT(a, b) ((int32_t)((a) - (b)) > 0)
#define SEQ_GE(a, b) ((int32_t)((a) - (b)) >= 0)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

enum gstate { G_NEW, G_SYN_SENT, G_EST, G_CLOSED };

/* Remote end of a connection: a socket of ours on the peer address */
struct peer {
	int lfd;			/* listener for this connection's port */
	int fd;				/* accepted socket */
	bool eof, rst, closed;
	size_t rx;			/* bytes received, all checked */
	size_t tx_total, tx_done;	/* bytes to send to the guest, sent */
	bool shut_pending, shut_done;
};

/* Guest end of a connection: our own TCP client */
struct conn {
	unsigned id;
	int family;
	uint16_t sport, dport;
	enum gstate st;
	bool manual;			/* no automatic sending at all */
	bool ws_offer;			/* offer window scaling in our SYN */
	uint16_t mss;			/* ours */
	bool no_split;			/* send as Linux does: see g_output() */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wnd, max_wnd;
	int snd_ws;			/* daemon's window scale, -1: none */
	uint32_t rcv_nxt, rcv_wnd, rcv_adv;	/* rcv_adv: right edge sent */
	size_t tx_total;		/* guest data to send, in bytes */
	bool fin_queued, fin_sent, fin_acked;
	bool synack_seen, got_fin, got_rst, sent_rst, ack_due;
	bool ack_lazy;			/* ACK only every 2 full segments... */
	bool ack_now;			/* ...unless this says otherwise */
	uint32_t rcv_acked;		/* rcv_nxt in the last ACK sent */
	unsigned rx_dups;		/* segments we had all of already */
	uint8_t rst_flags;
	uint32_t rst_seq, rst_ack;
	uint16_t synack_mss;
	int synack_ws;
	uint8_t synack_flags;
	uint32_t synack_ack;
	unsigned acks, dupacks, probes;
	size_t rx;			/* in-order bytes from the daemon */
	uint64_t t_syn, t_progress;
	struct peer p;
	/* storm bookkeeping */
	int mode, step;
	size_t out_len, in_len;
	bool done;
	char note[200];			/* first anomaly, checked later */
	char label[40];			/* role in the case, for messages */
};

static const char *sock_path;
static int sock = -1;
static int timeout_ms = 20000;
static uint64_t rng_state = 1;
static unsigned count_opt;
static bool verbose, only4, only6;
static uint16_t port_next = 20000;
static const char *cur_case = "";

static struct in_addr ip4_guest, ip4_gw, ip4_peer;
static struct in6_addr ip6_guest, ip6_peer;
static uint8_t mac_guest[6] = { 0x52, 0x54, 0x00, 0x7c, 0x90, 0x01 };
static uint8_t mac_daemon[6];
static bool mac_known;

static struct conn *conns[MAX_CONNS];
static unsigned nconns;
static struct conn *by_port[65536];	/* guest port -> connection */

static bool failed;

static uint8_t txb[1 << 20];		/* frames queued for one write */
static unsigned tx_batches;		/* write()s with frames, for the summary */
static size_t tx_len;
static unsigned tx_frames;
static uint8_t rxb[8 << 20];		/* bytes from the daemon */
static size_t rx_len;
static uint8_t frame[65536];

/* ---- helpers ---------------------------------------------------------- */

static uint32_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

static const char *fam_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

static void __attribute__((format(printf, 2, 3)))
cfail(const struct conn *c, const char *fmt, ...)
{
	va_list ap;

	if (failed)
		return;
	failed = true;
	fprintf(stderr, "tcpguest: %s: FAIL: ", cur_case);
	if (c)
		fprintf(stderr, "conn %u%s (%s, guest port %u -> peer port "
			"%u): ", c->id, c->label, fam_name(c->family),
			c->sport, c->dport);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* note() - remember the first anomaly of @c: the case fails on it when the
 * connection is done, after the peers had a chance to show the damage
 */
static void __attribute__((format(printf, 2, 3)))
note(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	if (c->note[0])
		return;
	va_start(ap, fmt);
	vsnprintf(c->note, sizeof(c->note), fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 1, 2))) vlog(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	fprintf(stderr, "tcpguest: %s: ", cur_case);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- data patterns ---------------------------------------------------- */

/* pat_fill() - @len bytes of the pattern of (@dir, @id) from offset @off */
static void pat_fill(uint8_t *buf, char dir, unsigned id, size_t off,
		     size_t len)
{
	char rec[REC + 1];
	size_t i = 0;

	while (i < len) {
		size_t r = (off + i) / REC, o = (off + i) % REC;
		size_t n = MIN(REC - o, len - i);

		snprintf(rec, sizeof(rec), "%c%04x:%08zx \n", dir,
			 id & 0xffff, r & 0xffffffff);
		memcpy(buf + i, rec + o, n);
		i += n;
	}
}

/* pat_check() - compare received bytes with the expected pattern
 * Return: -1 if all match, else the index of the first mismatch
 */
static long pat_check(const uint8_t *buf, char dir, unsigned id, size_t off,
		      size_t len)
{
	static uint8_t exp[65536];
	size_t done = 0;

	while (done < len) {
		size_t n = MIN(len - done, sizeof(exp)), i;

		pat_fill(exp, dir, id, off + done, n);
		if (memcmp(exp, buf + done, n)) {
			for (i = 0; exp[i] == buf[done + i]; i++)
				;
			return (long)(done + i);
		}
		done += n;
	}
	return -1;
}

/* Printable copy of up to 32 bytes, for messages */
static const char *show(const uint8_t *p, size_t len)
{
	static char s[2][40];
	static int w;
	size_t i;

	w ^= 1;
	len = MIN(len, (size_t)32);
	for (i = 0; i < len; i++)
		s[w][i] = (p[i] >= 32 && p[i] < 127) ? (char)p[i] : '.';
	s[w][i] = 0;
	return s[w];
}

static void check_rx(struct conn *c, const uint8_t *buf, size_t len,
		     bool at_peer)
{
	size_t off = at_peer ? c->p.rx : c->rx, rs;
	char dir = at_peer ? 'C' : 'S', whose[96] = "";
	unsigned other;
	uint8_t exp[32];
	long bad;

	bad = pat_check(buf, dir, c->id, off, len);
	if (bad < 0)
		return;
	/* Show whole records: from the start of the one that differs */
	rs = (size_t)bad - MIN((size_t)bad, (off + (size_t)bad) % REC);
	pat_fill(exp, dir, c->id, off + rs, sizeof(exp));
	if (len - rs >= 7 && (buf[rs] == 'C' || buf[rs] == 'S') &&
	    buf[rs + 5] == ':' && sscanf((const char *)buf + rs + 1, "%4x",
					 &other) == 1 &&
	    other != (c->id & 0xffff))
		snprintf(whose, sizeof(whose), " (that is %s data of "
			 "connection %u)", buf[rs] == 'C' ? "guest" : "peer",
			 other);
	cfail(c, "%s received a wrong byte at stream offset %zu: got "
	      "\"%s\", expected \"%s\"%s", at_peer ? "the peer" : "the guest",
	      off + (size_t)bad, show(buf + rs, len - rs),
	      show(exp, sizeof(exp)), whose);
}

/* ---- the connection to the daemon ------------------------------------- */

static int sock_open(void)
{
	sock = unix_connect_retry("tcpguest", sock_path, (uint64_t)timeout_ms,
				  8 << 20);
	return sock < 0 ? -1 : 0;
}

/* sock_read() - append what the daemon sent to rxb, without parsing
 * Return: 0, or -1 if the connection is gone
 */
static int sock_read(void)
{
	for (;;) {
		ssize_t n;

		if (rx_len == sizeof(rxb)) {
			cfail(NULL, "more than %zu bytes of unprocessed "
			      "frames from the daemon", sizeof(rxb));
			return -1;
		}
		n = recv(sock, rxb + rx_len, sizeof(rxb) - rx_len, 0);
		if (n > 0) {
			rx_len += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		cfail(NULL, "the daemon closed the connection (%s)",
		      n ? strerror(errno) : "EOF");
		return -1;
	}
}

static int tx_flush(void);

/* frame_queue() - add one frame to the batch written by tx_flush() */
static void frame_queue(const uint8_t *f, size_t len)
{
	if (len < 60) {			/* Ethernet minimum, as a NIC pads */
		memset(frame + len, 0, 60 - len);
		len = 60;
	}
	if (tx_len + 4 + len > sizeof(txb))
		tx_flush();		/* a window of large segments */
	if (tx_len + 4 + len > sizeof(txb)) {
		cfail(NULL, "transmit batch overflow");
		return;
	}
	put_be32(txb + tx_len, (uint32_t)len);
	memcpy(txb + tx_len + 4, f, len);
	tx_len += 4 + len;
	tx_frames++;
}

/* tx_flush() - write the queued frames, in one write() if we can
 * Return: number of write() calls it took, 0 if nothing was queued
 */
static int tx_flush(void)
{
	uint64_t deadline = now_ms() + timeout_ms;
	size_t off = 0;
	int calls = 0;

	if (tx_len)
		tx_batches++;

	while (off < tx_len && !failed) {
		struct pollfd pfd = { .fd = sock, .events = POLLOUT };
		ssize_t n = send(sock, txb + off, tx_len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			calls++;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			cfail(NULL, "write to the daemon: %s",
			      strerror(errno));
			break;
		}
		if (now_ms() > deadline) {
			cfail(NULL, "the daemon stopped reading frames");
			break;
		}
		poll(&pfd, 1, 50);
		sock_read();		/* so that the daemon never blocks */
	}
	tx_len = 0;
	tx_frames = 0;
	return calls;
}

/* ---- frame building --------------------------------------------------- */

/* g_seg() - queue a segment from the guest on @c
 * @seq:	sequence number
 * @flags:	TCP flags (SYN adds our MSS and, if offered, window scale)
 * @data:	payload, may be NULL if @len is 0
 */
static void g_seg(struct conn *c, uint32_t seq, uint8_t flags,
		  const uint8_t *data, size_t len)
{
	size_t o = eth_hdr_put(frame, mac_daemon, mac_guest,
			       c->family == AF_INET ? 0x0800 : 0x86dd);
	size_t thl = TCP_HLEN, l4len;
	uint8_t *ip = frame + o, *th;
	uint32_t wnd = c->rcv_wnd;

	if (flags & F_SYN)
		thl += c->ws_offer ? 8 : 4;
	l4len = thl + len;

	if (c->family == AF_INET)
		th = ip + ip4_hdr_put(ip, 6, &ip4_guest, &ip4_peer,
				      (uint16_t)(IP4_HLEN + l4len),
				      (uint16_t)rng(), IP4_DF);
	else
		th = ip + ip6_hdr_put(ip, 6, &ip6_guest, &ip6_peer,
				      (uint16_t)l4len, 64);

	put_be16(th, c->sport);
	put_be16(th + 2, c->dport);
	put_be32(th + 4, seq);
	put_be32(th + 8, (flags & F_ACK) ? c->rcv_nxt : 0);
	th[12] = (uint8_t)((thl / 4) << 4);
	th[13] = flags;
	put_be16(th + 14, (uint16_t)MIN(wnd, 65535U));
	put_be16(th + 16, 0);
	put_be16(th + 18, 0);
	if (flags & F_SYN) {
		th[20] = 2;
		th[21] = 4;
		put_be16(th + 22, c->mss);
		if (c->ws_offer) {
			th[24] = 1;
			th[25] = 3;
			th[26] = 3;
			th[27] = 0;	/* our shift: 0, the window is as is */
		}
	}
	if (len)
		memcpy(th + thl, data, len);
	put_be16(th + 16, csum_l4(c->family, ip, th, l4len, 6));

	if ((flags & F_ACK) && !(flags & F_RST) &&
	    SEQ_GT(c->rcv_nxt + MIN(wnd, 65535U), c->rcv_adv))
		c->rcv_adv = c->rcv_nxt + MIN(wnd, 65535U);
	if (flags & F_ACK) {
		c->ack_due = c->ack_now = false;
		c->rcv_acked = c->rcv_nxt;
	}
	frame_queue(frame, o + (c->family == AF_INET ? IP4_HLEN : IP6_HLEN) +
		    l4len);
}

/* g_data() - queue a data segment: pattern bytes [@off, @off + @len) */
static void g_data(struct conn *c, size_t off, size_t len, uint8_t flags)
{
	static uint8_t buf[65536];
	uint32_t seq = c->iss + 1 + (uint32_t)off;

	pat_fill(buf, 'C', c->id, off, len);
	g_seg(c, seq, F_ACK | F_PSH | flags, buf, len);
	if (SEQ_GT(seq + (uint32_t)len, c->snd_max))
		c->snd_max = seq + (uint32_t)len;
}

static void g_ack(struct conn *c)
{
	g_seg(c, c->snd_nxt, F_ACK, NULL, 0);
}

static void g_rst(struct conn *c)
{
	g_seg(c, c->snd_nxt, F_RST | F_ACK, NULL, 0);
	c->sent_rst = true;
	c->st = G_CLOSED;
}

static void arp_request(void)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	size_t o = eth_hdr_put(frame, bcast, mac_guest, 0x0806);
	uint8_t *a = frame + o;

	put_be16(a, 1);
	put_be16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put_be16(a + 6, 1);
	memcpy(a + 8, mac_guest, 6);
	memcpy(a + 14, &ip4_guest, 4);
	memset(a + 18, 0, 6);
	memcpy(a + 24, &ip4_gw, 4);
	frame_queue(frame, o + 28);
}

/* ---- peers ------------------------------------------------------------ */

static int peer_listen(struct conn *c)
{
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	socklen_t sl;
	int one = 1, s;

	memset(&sa, 0, sizeof(sa));
	if (c->family == AF_INET) {
		sa.in.sin_family = AF_INET;
		sa.in.sin_port = htons(c->dport);
		sa.in.sin_addr = ip4_peer;
		sl = sizeof(sa.in);
	} else {
		sa.in6.sin6_family = AF_INET6;
		sa.in6.sin6_port = htons(c->dport);
		sa.in6.sin6_addr = ip6_peer;
		sl = sizeof(sa.in6);
	}
	s = socket(c->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sl) || listen(s, 8)) {
		int e = errno;

		close(s);
		return -e;
	}
	c->p.lfd = s;
	return 0;
}

static void peer_accept(struct conn *c)
{
	int s = accept4(c->p.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (s < 0)
		return;
	c->p.fd = s;
	close(c->p.lfd);	/* one connection per port: more is a bug */
	c->p.lfd = -1;
	vlog("conn %u: peer accepted", c->id);
}

static void peer_read(struct conn *c)
{
	static uint8_t buf[1 << 16];

	while (!c->p.eof && !c->p.rst) {
		ssize_t n = recv(c->p.fd, buf, sizeof(buf), 0);

		if (n > 0) {
			check_rx(c, buf, (size_t)n, true);
			c->p.rx += (size_t)n;
			continue;
		}
		if (!n) {
			c->p.eof = true;
			vlog("conn %u: peer EOF after %zu bytes", c->id,
			     c->p.rx);
		} else if (errno == ECONNRESET || errno == EPIPE) {
			c->p.rst = true;
			vlog("conn %u: peer reset after %zu bytes", c->id,
			     c->p.rx);
		} else if (errno != EAGAIN && errno != EINTR) {
			cfail(c, "peer recv: %s", strerror(errno));
		}
		return;
	}
}

static void peer_write(struct conn *c)
{
	static uint8_t buf[1 << 16];

	while (c->p.tx_done < c->p.tx_total && !c->p.rst) {
		size_t n = MIN(c->p.tx_total - c->p.tx_done, sizeof(buf));
		ssize_t w;

		pat_fill(buf, 'S', c->id, c->p.tx_done, n);
		w = send(c->p.fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			c->p.tx_done += (size_t)w;
			continue;
		}
		if (w < 0 && (errno == ECONNRESET || errno == EPIPE))
			c->p.rst = true;
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			cfail(c, "peer send: %s", strerror(errno));
		return;
	}
	if (c->p.shut_pending && !c->p.shut_done &&
	    c->p.tx_done == c->p.tx_total) {
		shutdown(c->p.fd, SHUT_WR);
		c->p.shut_done = true;
	}
}

/* peer_reset() - abort the peer's socket: the kernel sends an RST */
static void peer_reset(struct conn *c)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(c->p.fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(c->p.fd);
	c->p.fd = -1;
	c->p.closed = true;
}

static void peer_close(struct conn *c)
{
	if (c->p.lfd >= 0)
		close(c->p.lfd);
	if (c->p.fd >= 0)
		close(c->p.fd);
	c->p.lfd = c->p.fd = -1;
	c->p.closed = true;
}

/* ---- guest connections ------------------------------------------------- */

/* conn_new() - a guest connection, with a listening peer unless @closed */
static struct conn *conn_new(int family, bool closed)
{
	struct conn *c;
	int rc;

	if (nconns == MAX_CONNS) {
		cfail(NULL, "too many connections");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		cfail(NULL, "out of memory");
		return NULL;
	}
	c->id = nconns;
	c->family = family;
	c->sport = (uint16_t)(32768 + nconns % 28000);
	c->p.lfd = c->p.fd = -1;
	c->mss = family == AF_INET ? 1460 : 1440;
	c->ws_offer = true;
	c->snd_ws = -1;
	c->rcv_wnd = 65535;
	c->iss = rng();
	c->snd_una = c->snd_nxt = c->snd_max = c->iss;
	for (;;) {
		c->dport = port_next++;
		if (port_next > 64000)
			port_next = 20000;
		if (closed || !(rc = peer_listen(c)))
			break;
		if (rc != -EADDRINUSE) {
			cfail(c, "listen on the peer address: %s",
			      strerror(-rc));
			free(c);
			return NULL;
		}
	}
	if (by_port[c->sport] && !by_port[c->sport]->done &&
	    by_port[c->sport]->st != G_CLOSED) {
		cfail(c, "guest port still in use");
		free(c);
		return NULL;
	}
	by_port[c->sport] = c;
	conns[nconns++] = c;
	return c;
}

static void g_connect(struct conn *c)
{
	g_seg(c, c->iss, F_SYN, NULL, 0);
	c->snd_nxt = c->snd_max = c->iss + 1;
	c->st = G_SYN_SENT;
	c->t_syn = now_ms();
}

/* Offset of the next data byte to send */
static size_t tx_sent(const struct conn *c)
{
	return (size_t)(c->snd_nxt - c->iss - 1) - (c->fin_sent ? 1 : 0);
}

/* g_output() - send what the window allows, retransmit on timeout */
static void g_output(struct conn *c, uint64_t now)
{
	if (c->st == G_SYN_SENT && now - c->t_syn > RTO_MS) {
		g_seg(c, c->iss, F_SYN, NULL, 0);
		c->t_syn = now;
	}
	if (c->st != G_EST || c->manual)
		return;

	if (c->snd_una != c->snd_nxt && now - c->t_progress > RTO_MS) {
		/* Go back N: everything from the oldest unacknowledged */
		vlog("conn %u: retransmitting from %u", c->id,
		     c->snd_una - c->iss - 1);
		c->snd_nxt = c->snd_una;
		if (c->fin_sent && !c->fin_acked)
			c->fin_sent = false;
		c->t_progress = now;
	}
	while (tx_sent(c) < c->tx_total) {
		uint32_t wnd = c->snd_wnd, fl = c->snd_nxt - c->snd_una;
		size_t off = tx_sent(c), seg = c->mss, n;
		uint8_t fin = 0;

		/* no_split: a Linux sender's segments are at most half the
		 * largest window seen (the SYN-ACK's counts: unscaled, it
		 * may be a little larger than any scaled one after it), and
		 * it never cuts one to fit what is left of the window: it
		 * waits for an ACK that moves the edge
		 */
		if (c->no_split)
			seg = MAX(MIN(seg, (size_t)c->max_wnd / 2), (size_t)1);
		n = MIN(seg, c->tx_total - off);
		if (fl >= wnd || (c->no_split && n > wnd - fl))
			break;
		n = MIN(n, (size_t)(wnd - fl));
		if (off + n == c->tx_total && c->fin_queued &&
		    !c->fin_acked && fl + n < wnd)
			fin = F_FIN;
		if (c->snd_una == c->snd_nxt)
			c->t_progress = now;
		g_data(c, off, n, fin);
		c->snd_nxt += (uint32_t)n + (fin ? 1 : 0);
		if (fin) {
			c->fin_sent = true;
			if (SEQ_GT(c->snd_nxt, c->snd_max))
				c->snd_max = c->snd_nxt;
		}
	}
	if (tx_sent(c) == c->tx_total && c->fin_queued && !c->fin_sent &&
	    !c->fin_acked) {
		if (c->snd_una == c->snd_nxt)
			c->t_progress = now;
		g_seg(c, c->snd_nxt, F_FIN | F_ACK, NULL, 0);
		c->snd_nxt++;
		c->fin_sent = true;
		if (SEQ_GT(c->snd_nxt, c->snd_max))
			c->snd_max = c->snd_nxt;
	}
}

/* ---- frames from the daemon ------------------------------------------- */

static void parse_syn_opts(struct conn *c, const uint8_t *o, size_t len)
{
	size_t i = 0;

	c->synack_mss = 0;
	c->synack_ws = -1;
	while (i < len && o[i]) {
		if (o[i] == 1) {
			i++;
			continue;
		}
		if (i + 1 >= len || o[i + 1] < 2 || i + o[i + 1] > len)
			return;
		if (o[i] == 2 && o[i + 1] == 4)
			c->synack_mss = get_be16(o + i + 2);
		if (o[i] == 3 && o[i + 1] == 3)
			c->synack_ws = o[i + 2];
		i += o[i + 1];
	}
}

static void tcp_from_daemon(struct conn *c, const uint8_t *th, size_t l4len)
{
	size_t thl = (size_t)(th[12] >> 4) * 4, len;
	uint32_t seq = get_be32(th + 4), ack = get_be32(th + 8);
	uint8_t flags = th[13];
	uint32_t wnd = get_be16(th + 14);
	const uint8_t *data;

	if (thl < TCP_HLEN || thl > l4len) {
		cfail(c, "segment with data offset %zu in %zu bytes",
		      thl, l4len);
		return;
	}
	data = th + thl;
	len = l4len - thl;

	if (flags & F_RST) {
		bool ok = c->st == G_SYN_SENT ? (flags & F_ACK) &&
			  ack == c->iss + 1 : seq == c->rcv_nxt;

		vlog("conn %u: RST seq %u ack %u flags 0x%02x", c->id, seq,
		     ack, flags);
		if (c->st == G_CLOSED && !c->got_rst) {
			/* answer to a segment on a dead connection */
			c->got_rst = true;
			c->rst_flags = flags;
			c->rst_seq = seq;
			c->rst_ack = ack;
			return;
		}
		if (!ok)
			cfail(c, "unacceptable RST: seq %u ack %u, expected "
			      "seq %u", seq, ack, c->rcv_nxt);
		c->got_rst = true;
		c->rst_flags = flags;
		c->rst_seq = seq;
		c->rst_ack = ack;
		c->st = G_CLOSED;
		return;
	}

	if (c->st == G_SYN_SENT) {
		if (flags == F_ACK || flags == (F_ACK | F_PSH)) {
			/* Not the SYN-ACK: note it, wait for the real one,
			 * and see what the peer gets meanwhile
			 */
			note(c, "ACK before the SYN-ACK, acknowledging %d "
			     "bytes the guest never sent (ack %u, our SYN "
			     "was %u)", (int)(ack - c->iss - 1), ack, c->iss);
			return;
		}
		if ((flags & (F_SYN | F_ACK)) != (F_SYN | F_ACK)) {
			cfail(c, "answer to our SYN with flags 0x%02x, "
			      "expected SYN+ACK", flags);
			return;
		}
		if (ack != c->iss + 1) {
			/* Go on as if it were right, so that the peer
			 * shows what went wrong, but fail in the end
			 */
			note(c, "SYN-ACK acknowledges %d bytes the guest "
			     "never sent (ack %u, expected %u)",
			     (int)(ack - c->iss - 1), ack, c->iss + 1);
			ack = c->iss + 1;
		}
		c->synack_seen = true;
		c->synack_flags = flags;
		c->synack_ack = ack;
		parse_syn_opts(c, th + TCP_HLEN, thl - TCP_HLEN);
		c->snd_ws = c->ws_offer ? c->synack_ws : -1;
		if (c->snd_ws < 0)
			c->snd_ws = 0;
		c->rcv_nxt = seq + 1;
		/* Nothing advertised in this sequence space yet: start the
		 * right edge here, or comparing with a zeroed one breaks when
		 * the window straddles 2^31
		 */
		c->rcv_adv = c->rcv_nxt;
		c->snd_una = ack;
		c->snd_wnd = wnd;	/* never scaled in a SYN */
		c->max_wnd = wnd;
		c->st = G_EST;
		c->t_progress = now_ms();
		c->ack_due = true;
		vlog("conn %u: SYN-ACK, mss %u ws %d", c->id, c->synack_mss,
		     c->synack_ws);
		return;
	}
	if (c->st != G_EST)
		return;		/* late segments after we reset */

	if (flags & F_SYN) {		/* retransmitted SYN-ACK */
		c->ack_due = true;
		return;
	}
	if (!(flags & F_ACK)) {
		cfail(c, "segment without ACK, flags 0x%02x", flags);
		return;
	}
	c->acks++;
	if (SEQ_GT(ack, c->snd_max)) {
		note(c, "the daemon acknowledges %u bytes the guest never "
		     "sent (ack %u, highest sent %u)", ack - c->snd_max,
		     ack, c->snd_max);
		ack = c->snd_max;
	}
	if (SEQ_GT(ack, c->snd_una)) {
		c->snd_una = ack;
		c->t_progress = now_ms();
		c->dupacks = 0;
		if (SEQ_GT(ack, c->snd_nxt))
			c->snd_nxt = ack;
		if (c->fin_sent && ack == c->snd_nxt)
			c->fin_acked = true;
	} else if (ack == c->snd_una && !len && !(flags & F_FIN) &&
		   c->snd_una != c->snd_nxt && !c->manual) {
		if (++c->dupacks == 3) {
			c->snd_nxt = c->snd_una;
			if (c->fin_sent && !c->fin_acked)
				c->fin_sent = false;
			c->dupacks = 0;
		}
	} else if (ack == c->snd_una && !len) {
		c->dupacks++;
	}
	c->snd_wnd = wnd << c->snd_ws;
	c->max_wnd = MAX(c->max_wnd, c->snd_wnd);

	if (len) {
		uint32_t right = c->rcv_nxt + c->rcv_wnd;
		size_t skip, take;

		if (len > c->mss)
			cfail(c, "%zu-byte segment, larger than the guest's "
			      "MSS %u", len, c->mss);
		if (SEQ_GT(seq + (uint32_t)len, c->rcv_adv)) {
			if (len == 1 && seq == c->rcv_adv) {
				c->probes++;
			} else {
				cfail(c, "the daemon sent %u bytes past the "
				      "window the guest advertised (segment "
				      "%u+%zu, right edge %u)",
				      seq + (uint32_t)len - c->rcv_adv, seq,
				      len, c->rcv_adv);
				return;
			}
		}
		c->ack_due = true;
		if (SEQ_LE(seq + (uint32_t)len, c->rcv_nxt)) {
			c->rx_dups++;		/* duplicate */
			c->ack_now = true;
			return;
		}
		if (SEQ_GT(seq, c->rcv_nxt)) {
			c->ack_now = true;	/* out of order: ACK what we have */
			return;
		}
		skip = c->rcv_nxt - seq;
		take = len - skip;
		if (SEQ_GT(c->rcv_nxt + (uint32_t)take, right))
			take = right - c->rcv_nxt;
		if (take) {
			check_rx(c, data + skip, take, false);
			c->rx += take;
			c->rcv_nxt += (uint32_t)take;
		}
		if (take < len - skip)
			return;		/* FIN beyond what we took */
	}
	if (flags & F_FIN) {
		if (seq + (uint32_t)len == c->rcv_nxt && !c->got_fin) {
			c->got_fin = true;
			c->rcv_nxt++;
			vlog("conn %u: FIN after %zu bytes", c->id, c->rx);
		}
		c->ack_due = c->ack_now = true;
	}
}

/* Does @a equal the IPv4 or IPv6 address we expect in frames to us? */
static void frame_from_daemon(const uint8_t *f, size_t len)
{
	const uint8_t *ip = f + ETH_HLEN, *th;
	uint16_t type, sport, dport;
	size_t l4len;
	struct conn *c;
	int family;

	if (len < ETH_HLEN)
		return;
	type = get_be16(f + 12);
	if (type == 0x0806 && len >= ETH_HLEN + 28 && get_be16(ip + 6) == 2 &&
	    !memcmp(ip + 14, &ip4_gw, 4)) {
		memcpy(mac_daemon, ip + 8, 6);
		mac_known = true;
		return;
	}
	if (type == 0x0800 && len >= ETH_HLEN + IP4_HLEN && ip[9] == 6) {
		size_t ihl = (size_t)(ip[0] & 0xf) * 4;
		size_t tot = get_be16(ip + 2);

		if (ihl < IP4_HLEN || tot < ihl || ETH_HLEN + tot > len) {
			cfail(NULL, "malformed IPv4 frame from the daemon");
			return;
		}
		if (csum_fold(csum_add(0, ip, ihl))) {
			cfail(NULL, "bad IPv4 header checksum from the "
			      "daemon");
			return;
		}
		family = AF_INET;
		th = ip + ihl;
		l4len = tot - ihl;
	} else if (type == 0x86dd && len >= ETH_HLEN + IP6_HLEN &&
		   ip[6] == 6) {
		l4len = get_be16(ip + 4);
		if (ETH_HLEN + IP6_HLEN + l4len > len) {
			cfail(NULL, "malformed IPv6 frame from the daemon");
			return;
		}
		family = AF_INET6;
		th = ip + IP6_HLEN;
	} else {
		return;			/* RA, ICMP errors...: not ours */
	}
	if (l4len < TCP_HLEN) {
		cfail(NULL, "truncated TCP segment from the daemon");
		return;
	}
	if (csum_l4(family, ip, th, l4len, 6)) {
		cfail(NULL, "bad TCP checksum from the daemon");
		return;
	}
	sport = get_be16(th);
	dport = get_be16(th + 2);
	c = by_port[dport];
	if (!c || c->family != family || c->dport != sport) {
		vlog("segment for unknown port %u from %u, flags 0x%02x",
		     dport, sport, th[13]);
		return;
	}
	tcp_from_daemon(c, th, l4len);
}

/* rx_process() - handle every complete frame in rxb */
static void rx_process(void)
{
	size_t off = 0;

	while (rx_len - off >= 4) {
		uint32_t flen = get_be32(rxb + off);

		if (flen > 65535 || flen < ETH_HLEN) {
			cfail(NULL, "the daemon sent a frame of %u bytes",
			      flen);
			return;
		}
		if (rx_len - off - 4 < flen)
			break;
		frame_from_daemon(rxb + off + 4, flen);
		off += 4 + flen;
	}
	memmove(rxb, rxb + off, rx_len - off);
	rx_len -= off;
}

/* ---- the event loop ---------------------------------------------------- */

static struct pollfd pfds[2 * MAX_CONNS + 1];
static struct conn *pconn[2 * MAX_CONNS + 1];

static bool conn_live(const struct conn *c)
{
	return !c->done && !c->p.closed;
}

/* pump() - one round: read frames and peer sockets, answer, send */
static void pump(int wait_ms)
{
	unsigned n = 1, i;
	uint64_t now;

	tx_flush();
	pfds[0].fd = sock;
	pfds[0].events = POLLIN;
	for (i = 0; i < nconns; i++) {
		struct conn *c = conns[i];

		if (!conn_live(c))
			continue;
		if (c->p.lfd >= 0) {
			pfds[n].fd = c->p.lfd;
			pfds[n].events = POLLIN;
			pconn[n++] = c;
		}
		if (c->p.fd >= 0) {
			pfds[n].fd = c->p.fd;
			pfds[n].events = 0;
			if (!c->p.eof && !c->p.rst)
				pfds[n].events |= POLLIN;
			if (c->p.tx_done < c->p.tx_total ||
			    (c->p.shut_pending && !c->p.shut_done))
				pfds[n].events |= POLLOUT;
			pconn[n++] = c;
		}
	}
	if (poll(pfds, n, wait_ms) < 0 && errno != EINTR) {
		cfail(NULL, "poll: %s", strerror(errno));
		return;
	}
	if (pfds[0].revents)
		sock_read();
	rx_process();
	for (i = 1; i < n; i++) {
		struct conn *c = pconn[i];

		if (!pfds[i].revents)
			continue;
		if (pfds[i].fd == c->p.lfd) {
			peer_accept(c);
			continue;
		}
		if (c->p.fd != pfds[i].fd)
			continue;
		if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR))
			peer_read(c);
	}
	now = now_ms();
	for (i = 0; i < nconns; i++) {
		struct conn *c = conns[i];

		if (c->done)
			continue;
		if (c->p.fd >= 0 && !c->p.closed)
			peer_write(c);
		g_output(c, now);
		if (c->ack_due && c->st == G_EST &&
		    (!c->ack_lazy || c->ack_now ||
		     c->rcv_nxt - c->rcv_acked >= 2U * c->mss))
			g_ack(c);
	}
	tx_flush();
}

typedef bool (*cond_fn)(struct conn *c);

/* wait_until() - pump until @cond(@c) holds
 * Return: 0, or 1 on failure or timeout (reported)
 */
static int wait_until(cond_fn cond, struct conn *c, const char *what)
{
	uint64_t deadline = now_ms() + timeout_ms;

	while (!failed) {
		if (cond(c))
			return 0;
		if (now_ms() > deadline) {
			if (c)
				cfail(c, "timed out after %d ms waiting for "
				      "%s (guest: state %d, sent %zu/%zu, "
				      "acked %u, received %zu, fin %d/%d, "
				      "rst %d; peer: accepted %d, received "
				      "%zu, sent %zu/%zu, eof %d, rst %d)%s%s",
				      timeout_ms, what, c->st, tx_sent(c),
				      c->tx_total, c->snd_una - c->iss - 1,
				      c->rx, c->fin_acked, c->got_fin,
				      c->got_rst, c->p.fd >= 0, c->p.rx,
				      c->p.tx_done, c->p.tx_total, c->p.eof,
				      c->p.rst, c->note[0] ? "; earlier: " : "",
				      c->note);
			else
				cfail(NULL, "timed out after %d ms waiting "
				      "for %s", timeout_ms, what);
			return 1;
		}
		pump(20);
	}
	return 1;
}

/* observe() - pump for @ms milliseconds: a bounded window in which
 * something must NOT happen (checked by the caller afterwards)
 */
static void observe(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (!failed && now_ms() < end)
		pump(10);
}

#define WAIT(cond, c, what)						\
	do {								\
		if (wait_until(cond, c, what))				\
			return 1;					\
	} while (0)

#define CHECK(expr, c, ...)						\
	do {								\
		if (!(expr)) {						\
			cfail(c, __VA_ARGS__);				\
			return 1;					\
		}							\
	} while (0)

/* ---- conditions --------------------------------------------------------- */

static bool c_mac(struct conn *c)
{
	(void)c;
	return mac_known;
}

static bool c_answered(struct conn *c)
{
	return c->synack_seen || c->got_rst;
}

static bool c_est(struct conn *c)
{
	return c->st == G_EST && c->p.fd >= 0;
}

static bool c_all_acked(struct conn *c)
{
	return tx_sent(c) == c->tx_total && c->snd_una == c->snd_nxt;
}

static bool c_peer_all(struct conn *c)
{
	return c->p.rx >= c->tx_total;
}

static bool c_peer_eof(struct conn *c)
{
	return c->p.eof || c->p.rst;
}

static bool c_peer_rst(struct conn *c)
{
	return c->p.rst || c->p.eof;
}

static bool c_guest_all(struct conn *c)
{
	return c->rx >= c->p.tx_total || c->got_fin || c->got_rst;
}

static bool c_got_fin(struct conn *c)
{
	return c->got_fin || c->got_rst;
}

static bool c_fin_acked(struct conn *c)
{
	return c->fin_acked || c->got_rst;
}

static bool c_got_rst(struct conn *c)
{
	return c->got_rst;
}

static unsigned acks_before;
static bool c_acked_more(struct conn *c)
{
	return c->acks > acks_before;
}

static uint32_t want_una;
static bool c_una(struct conn *c)
{
	return SEQ_GE(c->snd_una, want_una);
}

/* ---- building blocks for the cases ---------------------------------------- */

static int learn_mac(void)
{
	uint64_t next = 0, deadline = now_ms() + timeout_ms;

	while (!mac_known && !failed) {
		if (now_ms() >= next) {
			arp_request();
			next = now_ms() + 300;
		}
		if (now_ms() > deadline)
			break;
		pump(20);
	}
	if (!mac_known)
		return wait_until(c_mac, NULL, "an ARP reply from the daemon");
	return failed;
}

/* open_conn() - new connection, handshake done, peer accepted */
static struct conn *open_conn(int family)
{
	struct conn *c = conn_new(family, false);

	if (!c)
		return NULL;
	g_connect(c);
	if (wait_until(c_answered, c, "the SYN-ACK"))
		return NULL;
	if (c->got_rst) {
		cfail(c, "the daemon answered our SYN with an RST");
		return NULL;
	}
	if (wait_until(c_est, c, "the peer to accept the connection"))
		return NULL;
	return c;
}

/* close_both() - guest FIN first (with all data), then the peer's, and
 * check that each side got exactly what the other sent
 */
static int close_guest_first(struct conn *c)
{
	c->manual = false;
	c->fin_queued = true;
	WAIT(c_peer_all, c, "the peer to receive all guest data");
	WAIT(c_peer_eof, c, "the peer to see the guest's FIN");
	CHECK(c->p.eof, c, "the peer saw a reset instead of the guest's FIN");
	WAIT(c_fin_acked, c, "the daemon to ACK the guest's FIN");
	CHECK(!c->got_rst, c, "reset instead of the ACK of the guest's FIN");
	WAIT(c_guest_all, c, "the guest to receive all peer data");
	c->p.shut_pending = true;
	WAIT(c_got_fin, c, "the peer's FIN at the guest");
	CHECK(!c->got_rst, c, "reset instead of the peer's FIN");
	CHECK(c->rx == c->p.tx_total, c, "guest received %zu bytes, the "
	      "peer sent %zu", c->rx, c->p.tx_total);
	CHECK(c->p.rx == c->tx_total, c, "peer received %zu bytes, the "
	      "guest sent %zu", c->p.rx, c->tx_total);
	pump(0);			/* our ACK of the FIN */
	CHECK(!c->note[0], c, "%s", c->note);
	peer_close(c);
	c->st = G_CLOSED;
	c->done = true;
	return 0;
}

static int close_peer_first(struct conn *c)
{
	c->manual = false;
	c->p.shut_pending = true;
	WAIT(c_got_fin, c, "the peer's FIN at the guest");
	CHECK(!c->got_rst, c, "reset instead of the peer's FIN");
	CHECK(c->rx == c->p.tx_total, c, "FIN after %zu bytes, the peer "
	      "sent %zu", c->rx, c->p.tx_total);
	c->fin_queued = true;
	WAIT(c_peer_all, c, "the peer to receive all guest data");
	WAIT(c_peer_eof, c, "the peer to see the guest's FIN");
	CHECK(c->p.eof, c, "the peer saw a reset instead of the guest's FIN");
	WAIT(c_fin_acked, c, "the daemon to ACK the guest's FIN");
	CHECK(!c->got_rst, c, "the daemon never ACKed the guest's FIN (peer "
	      "closed first): the retransmitted FIN got an RST");
	CHECK(c->p.rx == c->tx_total, c, "peer received %zu bytes, the "
	      "guest sent %zu", c->p.rx, c->tx_total);
	CHECK(!c->note[0], c, "%s", c->note);
	peer_close(c);
	c->st = G_CLOSED;
	c->done = true;
	return 0;
}

/* probe_gone() - a segment on a connection the daemon forgot must be
 * answered with an RST
 */
static int probe_gone(struct conn *c)
{
	c->got_rst = false;
	c->st = G_CLOSED;
	g_ack(c);
	WAIT(c_got_rst, c, "an RST for a segment on the closed connection");
	return 0;
}

/* ---- the cases ---------------------------------------------------------- */

static int case_handshake(int family)
{
	struct conn *c = conn_new(family, false), *d;

	if (!c)
		return 1;
	c->ws_offer = true;
	c->mss = 1300;
	g_connect(c);
	WAIT(c_answered, c, "the SYN-ACK");
	CHECK(!c->got_rst, c, "RST instead of SYN-ACK");
	CHECK(c->synack_flags == (F_SYN | F_ACK), c, "SYN-ACK flags 0x%02x",
	      c->synack_flags);
	CHECK(c->synack_mss >= 536 && c->synack_mss <= 1460, c,
	      "SYN-ACK MSS option %u (absent or out of range 536..1460)",
	      c->synack_mss);
	CHECK(c->synack_ws >= 0 && c->synack_ws <= 14, c,
	      "SYN-ACK without a valid window scale option (%d) although "
	      "the guest offered one", c->synack_ws);
	WAIT(c_est, c, "the peer to accept the connection");
	/* The window in a later segment is scaled: it must make sense */
	c->tx_total = 100000;
	WAIT(c_peer_all, c, "100000 bytes at the peer");
	if (close_guest_first(c))
		return 1;

	d = conn_new(family, false);
	if (!d)
		return 1;
	d->ws_offer = false;
	g_connect(d);
	WAIT(c_answered, d, "the SYN-ACK");
	CHECK(!d->got_rst, d, "RST instead of SYN-ACK");
	CHECK(d->synack_ws < 0, d, "SYN-ACK carries window scale %d although "
	      "the guest offered none (RFC 7323 1.3)", d->synack_ws);
	CHECK(d->synack_mss >= 536, d, "SYN-ACK MSS option %u",
	      d->synack_mss);
	WAIT(c_est, d, "the peer to accept the connection");
	d->p.tx_total = 100000;		/* unscaled window: 64 KiB at most */
	WAIT(c_guest_all, d, "100000 bytes at the guest");
	return close_peer_first(d);
}

static int case_data_out(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->tx_total = 512 * 1024;
	WAIT(c_peer_all, c, "all guest data at the peer");
	WAIT(c_all_acked, c, "the daemon to ACK all guest data");
	return close_guest_first(c);
}

/* Guest to peer with large segments sent the way Linux sends them: a
 * window whose right edge stops short of a whole segment, with nothing in
 * flight, would stall this sender for good (a real guest for its persist
 * timer), so every ACK must leave room for one or move the edge
 */
static int case_no_split(int family)
{
	struct conn *c = conn_new(family, false);

	if (!c)
		return 1;
	c->mss = 65000;
	c->no_split = true;
	g_connect(c);
	WAIT(c_answered, c, "the SYN-ACK");
	CHECK(!c->got_rst, c, "RST instead of SYN-ACK");
	WAIT(c_est, c, "the peer to accept the connection");
	c->tx_total = 16 * 1024 * 1024;
	WAIT(c_peer_all, c, "all guest data at the peer");
	WAIT(c_all_acked, c, "the daemon to ACK all guest data");
	return close_guest_first(c);
}

static int case_data_in(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->p.tx_total = 2 * 1024 * 1024;
	WAIT(c_guest_all, c, "all peer data at the guest");
	CHECK(!c->got_fin && !c->got_rst, c, "FIN or RST before the data");
	return close_peer_first(c);
}

/* Peer to guest, with a guest that ACKs only once it holds two full
 * segments unacknowledged (or a duplicate, or a FIN): a delayed-ACK
 * receiver whose timer never fires. The daemon stops asking for the
 * socket's input events while the guest has plenty in flight, since its
 * ACKs bring it back anyway (tcp/to_guest.c, tcp_quiet()); it must never count on
 * the ACK of less than two segments, which wouldn't come. First a bulk
 * transfer, then writes of 1.4 segments, each awaited at the guest: every
 * second one finds a segment and a bit unACKed, and only its retransmission
 * timer (a second) would get a daemon that waits for that ACK going again.
 */
static int case_lazy_ack(int family)
{
	struct conn *c = open_conn(family);
	unsigned dups;
	int i;

	if (!c)
		return 1;
	c->ack_lazy = true;
	c->p.tx_total = 2 * 1024 * 1024;
	WAIT(c_guest_all, c, "all peer data at the guest");
	dups = c->rx_dups;
	for (i = 0; i < 40; i++) {
		c->p.tx_total += c->mss * 7 / 5;
		WAIT(c_guest_all, c, "the next 1.4 segments at the guest");
	}
	/* A retransmission or two may come from a stall of this machine */
	CHECK(c->rx_dups - dups <= 2, c, "%u retransmissions in 40 small "
	      "writes: the daemon held new data back waiting for an ACK",
	      c->rx_dups - dups);
	CHECK(!c->got_fin && !c->got_rst, c, "FIN or RST before the data");
	return close_peer_first(c);
}

static int case_fin_guest(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->tx_total = 10000;
	c->fin_queued = true;		/* data and FIN in one batch */
	WAIT(c_peer_all, c, "all guest data at the peer");
	WAIT(c_peer_eof, c, "the guest's FIN at the peer");
	CHECK(c->p.eof && !c->p.rst, c, "the peer saw a reset, not a FIN");
	WAIT(c_fin_acked, c, "the daemon to ACK the guest's FIN");
	CHECK(!c->got_rst, c, "reset instead of the ACK of the guest's FIN");
	CHECK(!c->got_fin, c, "FIN to the guest before the peer closed");
	/* Half-closed: the peer can still send */
	c->p.tx_total = 50000;
	WAIT(c_guest_all, c, "peer data after the guest's FIN");
	CHECK(c->rx == 50000 && !c->got_fin, c, "guest got %zu bytes, "
	      "fin %d, expected 50000 and no FIN yet", c->rx, c->got_fin);
	return close_guest_first(c);
}

static int case_fin_peer(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->p.tx_total = 10000;
	c->p.shut_pending = true;
	WAIT(c_got_fin, c, "the peer's FIN at the guest");
	CHECK(!c->got_rst, c, "reset instead of FIN");
	CHECK(c->rx == 10000, c, "FIN after %zu bytes, expected 10000",
	      c->rx);
	/* Half-closed the other way: the guest can still send */
	c->tx_total = 50000;
	WAIT(c_peer_all, c, "guest data after the peer's FIN");
	CHECK(!c->p.eof && !c->p.rst, c, "the peer's socket ended early");
	return close_peer_first(c);
}

static int case_rst_guest(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->tx_total = 5000;
	WAIT(c_peer_all, c, "guest data at the peer");
	WAIT(c_all_acked, c, "the daemon to ACK it");
	g_rst(c);
	WAIT(c_peer_rst, c, "the reset at the peer");
	CHECK(c->p.rst, c, "the peer saw an orderly EOF, not ECONNRESET");
	CHECK(c->p.rx == 5000, c, "the peer got %zu bytes, expected 5000",
	      c->p.rx);
	if (probe_gone(c))
		return 1;
	peer_close(c);
	c->done = true;
	return 0;
}

static int case_rst_peer(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->tx_total = 5000;
	c->p.tx_total = 5000;
	WAIT(c_peer_all, c, "guest data at the peer");
	WAIT(c_guest_all, c, "peer data at the guest");
	WAIT(c_all_acked, c, "the daemon to ACK guest data");
	peer_reset(c);
	WAIT(c_got_rst, c, "an RST frame at the guest");
	CHECK(c->rst_seq == c->rcv_nxt, c, "RST sequence %u, the guest "
	      "expects %u", c->rst_seq, c->rcv_nxt);
	if (probe_gone(c))
		return 1;
	c->done = true;
	return 0;
}

static int case_zero_window(int family)
{
	struct conn *c = conn_new(family, false);
	size_t total = 300000;

	if (!c)
		return 1;
	c->rcv_wnd = 0;			/* SYN and handshake ACK: window 0 */
	g_connect(c);
	WAIT(c_answered, c, "the SYN-ACK");
	CHECK(!c->got_rst, c, "RST instead of SYN-ACK");
	WAIT(c_est, c, "the peer to accept the connection");
	c->p.tx_total = total;
	observe(800);
	CHECK(c->rx == 0, c, "the guest received %zu bytes in a zero window",
	      c->rx);
	vlog("zero window: %u probes, peer wrote %zu", c->probes,
	     c->p.tx_done);
	CHECK(c->p.tx_done > 0, c, "the peer could not send anything");
	/* Window update: everything must arrive, intact and in order */
	c->rcv_wnd = 65535;
	g_ack(c);
	WAIT(c_guest_all, c, "all peer data after the window update");
	CHECK(c->rx == total, c, "guest received %zu bytes, expected %zu",
	      c->rx, total);
	/* And zero again in the middle of a transfer */
	c->rcv_wnd = 0;
	g_ack(c);
	pump(0);
	c->p.tx_total = 2 * total;
	observe(500);
	{
		size_t got = c->rx;

		observe(500);
		CHECK(c->rx == got, c, "the guest received %zu bytes while "
		      "its window was zero", c->rx - got);
	}
	c->rcv_wnd = 65535;
	g_ack(c);
	WAIT(c_guest_all, c, "all peer data after the second update");
	CHECK(c->rx == 2 * total, c, "guest received %zu bytes, expected %zu",
	      c->rx, 2 * total);
	return close_peer_first(c);
}

static int case_retransmit(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->manual = true;
	/* The same segment twice in one batch, then again alone, then an
	 * overlapping one: the peer must get every byte exactly once
	 */
	g_data(c, 0, 1000, 0);
	g_data(c, 0, 1000, 0);
	c->snd_nxt = c->iss + 1 + 1000;
	tx_flush();
	want_una = c->iss + 1 + 1000;
	WAIT(c_una, c, "the ACK of bytes 0-999");
	g_data(c, 0, 1000, 0);
	g_data(c, 500, 1000, 0);
	g_data(c, 1500, 500, 0);
	c->snd_nxt = c->iss + 1 + 2000;
	tx_flush();
	want_una = c->iss + 1 + 2000;
	WAIT(c_una, c, "the ACK of bytes 0-1999");
	acks_before = c->acks;
	g_data(c, 1000, 1000, 0);	/* old, entirely */
	tx_flush();
	WAIT(c_acked_more, c, "an ACK for a duplicate segment");
	CHECK(c->snd_una == c->iss + 1 + 2000, c, "ACK moved to %u",
	      c->snd_una - c->iss - 1);
	c->tx_total = 2000;
	WAIT(c_peer_all, c, "2000 bytes at the peer");
	observe(200);
	CHECK(c->p.rx == 2000, c, "peer got %zu bytes, expected 2000",
	      c->p.rx);
	return close_guest_first(c);
}

static int case_out_of_order(int family)
{
	struct conn *c = open_conn(family);

	if (!c)
		return 1;
	c->manual = true;
	acks_before = c->acks;
	g_data(c, 1000, 1000, 0);		/* a gap before it */
	c->snd_nxt = c->iss + 1 + 2000;
	tx_flush();
	WAIT(c_acked_more, c, "a duplicate ACK for the segment after a gap");
	observe(200);
	CHECK(c->snd_una == c->iss + 1, c, "the daemon ACKed past a gap, to "
	      "offset %u", c->snd_una - c->iss - 1);
	CHECK(c->p.rx == 0, c, "the peer got %zu bytes before the gap was "
	      "filled", c->p.rx);
	g_data(c, 0, 1000, 0);			/* fill it */
	tx_flush();
	want_una = c->iss + 1 + 1000;
	WAIT(c_una, c, "the ACK of the filled gap");
	if (c->snd_una != c->iss + 1 + 2000) {	/* dropped: resend */
		g_data(c, 1000, 1000, 0);
		tx_flush();
	}
	want_una = c->iss + 1 + 2000;
	WAIT(c_una, c, "the ACK of bytes 0-1999");
	/* Reordered within one batch */
	g_data(c, 3000, 1000, 0);
	g_data(c, 2000, 1000, 0);
	c->snd_nxt = c->iss + 1 + 4000;
	tx_flush();
	want_una = c->iss + 1 + 3000;
	WAIT(c_una, c, "the ACK of bytes 2000-2999");
	if (c->snd_una != c->iss + 1 + 4000) {
		g_data(c, 3000, 1000, 0);
		tx_flush();
	}
	want_una = c->iss + 1 + 4000;
	WAIT(c_una, c, "the ACK of bytes 0-3999");
	c->tx_total = 4000;
	WAIT(c_peer_all, c, "4000 bytes at the peer");
	return close_guest_first(c);
}

static int case_closed_port(int family)
{
	struct conn *c = conn_new(family, true);

	if (!c)
		return 1;
	g_connect(c);
	WAIT(c_answered, c, "an answer to a SYN for a closed port");
	CHECK(c->got_rst, c, "SYN-ACK for a port nobody listens on");
	CHECK((c->rst_flags & (F_RST | F_ACK)) == (F_RST | F_ACK), c,
	      "RST flags 0x%02x, expected RST+ACK", c->rst_flags);
	CHECK(c->rst_ack == c->iss + 1, c, "RST acknowledges %u, expected "
	      "%u", c->rst_ack, c->iss + 1);
	c->done = true;
	return 0;
}

/* case_reuse() - data on A, RST for A and SYN for B in one batch, many
 * times: B's peer must get B's bytes only. A's peer may or may not get
 * A's data (it came before the RST), but only A's, and must see the reset
 */
static int case_reuse(int family)
{
	unsigned rounds = count_opt ? count_opt : 200, r;

	for (r = 0; r < rounds && !failed; r++) {
		int fam = (r & 1) ? (family == AF_INET ? AF_INET6 : AF_INET)
				  : family;
		size_t alen = 16 + rng() % 1400;
		struct conn *a = open_conn(fam), *b;

		if (!a)
			return 1;
		snprintf(a->label, sizeof(a->label), " [A of round %u]", r);
		b = conn_new(fam, false);
		if (!b)
			return 1;
		snprintf(b->label, sizeof(b->label), " [B of round %u]", r);
		g_data(a, 0, alen, 0);
		a->snd_nxt += (uint32_t)alen;
		a->tx_total = alen;
		g_rst(a);
		g_seg(b, b->iss, F_SYN, NULL, 0);
		b->snd_nxt = b->snd_max = b->iss + 1;
		b->st = G_SYN_SENT;
		b->t_syn = now_ms();
		if (tx_flush() != 1)
			fprintf(stderr, "tcpguest: reuse: round %u: batch "
				"took more than one write\n", r);

		WAIT(c_answered, b, "B's SYN-ACK");
		CHECK(!b->got_rst, b, "round %u: B reset by the daemon", r);
		b->tx_total = 16 + rng() % 3000;
		b->fin_queued = true;
		WAIT(c_est, b, "B's peer to accept");
		WAIT(c_peer_all, b, "B's bytes at B's peer");
		WAIT(c_peer_eof, b, "B's FIN at B's peer");
		CHECK(b->p.eof, b, "round %u: B's peer got a reset", r);
		CHECK(b->p.rx == b->tx_total, b, "round %u: B's peer got %zu "
		      "bytes, B sent %zu", r, b->p.rx, b->tx_total);
		WAIT(c_fin_acked, b, "the ACK of B's FIN");
		CHECK(!b->got_rst, b, "round %u: reset instead of the ACK of "
		      "B's FIN", r);
		b->p.shut_pending = true;
		WAIT(c_got_fin, b, "B's peer FIN at the guest");
		pump(0);
		peer_close(b);
		b->done = true;
		CHECK(!b->note[0], b, "round %u: %s", r, b->note);
		CHECK(!a->note[0], a, "round %u: %s", r, a->note);

		WAIT(c_peer_rst, a, "A's reset at A's peer");
		CHECK(a->p.rst, a, "round %u: A's peer saw EOF, not a reset",
		      r);
		CHECK(a->p.rx <= alen, a, "round %u: A's peer got %zu bytes, "
		      "A sent %zu", r, a->p.rx, alen);
		peer_close(a);
		a->done = true;
	}
	if (failed)
		return 1;
	printf("reuse %s: %u rounds\n", fam_name(family), rounds);
	return 0;
}

/* ---- storm -------------------------------------------------------------- */

enum { M_GFIN, M_PFIN, M_GRST, M_PRST, M_GRST_NOW, M_COUNT };
static const char *const mode_name[] = {
	"guest FIN first", "peer FIN first", "guest RST", "peer RST",
	"guest RST right after its data",
};

/* storm_step() - advance one connection; Return: true once it's done */
static bool storm_step(struct conn *c)
{
	switch (c->step) {
	case 0:
		g_connect(c);
		c->step = 1;
		return false;
	case 1:
		if (c->got_rst) {
			cfail(c, "reset during the handshake");
			return true;
		}
		if (!c->synack_seen)
			return false;
		c->tx_total = c->out_len;
		if (c->mode == M_GFIN)
			c->fin_queued = true;
		if (c->mode == M_GRST_NOW) {
			g_output(c, now_ms());
			g_rst(c);
			c->step = 3;
			return false;
		}
		c->step = 2;
		return false;
	case 2:
		if (c->p.fd < 0)
			return false;
		if (!c->p.tx_total) {
			c->p.tx_total = c->in_len;
			if (c->mode == M_PFIN)
				c->p.shut_pending = true;
		}
		if (c->got_rst) {
			cfail(c, "unexpected reset (%s)", mode_name[c->mode]);
			return true;
		}
		if (c->p.rx < c->out_len || c->rx < c->in_len)
			return false;
		switch (c->mode) {
		case M_GFIN:
			if (!c->p.eof || !c->fin_acked)
				return false;
			c->p.shut_pending = true;
			break;
		case M_PFIN:
			if (!c->got_fin)
				return false;
			c->fin_queued = true;
			break;
		case M_GRST:
			if (c->snd_una != c->snd_nxt)
				return false;
			g_rst(c);
			break;
		case M_PRST:
			peer_reset(c);
			break;
		}
		c->step = 3;
		return false;
	case 3:
		switch (c->mode) {
		case M_GFIN:
			if (c->got_rst) {
				cfail(c, "RST instead of the peer's FIN (%s)",
				      mode_name[c->mode]);
				return true;
			}
			if (!c->got_fin)
				return false;
			if (c->p.rst)
				cfail(c, "peer saw a reset (%s)",
				      mode_name[c->mode]);
			break;
		case M_PFIN:
			if (c->got_rst) {
				cfail(c, "RST instead of the ACK of the "
				      "guest's FIN (%s)%s", mode_name[c->mode],
				      c->fin_sent ? ": the daemon never ACKed "
				      "the FIN, and the retransmitted one got "
				      "an RST" : "");
				return true;
			}
			if (!c->fin_acked || !c->p.eof)
				return false;
			if (c->p.rst)
				cfail(c, "peer saw a reset (%s)",
				      mode_name[c->mode]);
			break;
		case M_GRST:
		case M_GRST_NOW:
			if (c->p.fd < 0 || (!c->p.rst && !c->p.eof))
				return false;
			if (!c->p.rst)
				cfail(c, "the peer saw EOF, not a reset (%s)",
				      mode_name[c->mode]);
			break;
		case M_PRST:
			if (!c->got_rst)
				return false;
			break;
		}
		if (c->note[0])
			cfail(c, "%s (%s)", c->note, mode_name[c->mode]);
		if (c->mode != M_GRST_NOW && c->p.rx != c->out_len)
			cfail(c, "peer got %zu bytes, guest sent %zu (%s)",
			      c->p.rx, c->out_len, mode_name[c->mode]);
		if (c->mode == M_GRST_NOW && c->p.rx > c->out_len)
			cfail(c, "peer got %zu bytes, guest sent %zu (%s)",
			      c->p.rx, c->out_len, mode_name[c->mode]);
		if (c->mode != M_PRST && c->mode != M_GRST &&
		    c->mode != M_GRST_NOW && c->rx != c->in_len)
			cfail(c, "guest got %zu bytes, peer sent %zu (%s)",
			      c->rx, c->in_len, mode_name[c->mode]);
		return true;
	}
	return true;
}

static int case_storm(int family)
{
	unsigned total = count_opt ? count_opt : 300, opened = 0, ndone = 0;
	unsigned active_max = 48, i;
	struct conn *act[256];
	unsigned nact = 0, batches = tx_batches;
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms * 2;

	(void)family;
	while (ndone < total && !failed) {
		unsigned limit;

		while (nact < active_max && opened < total) {
			int fam = only4 ? AF_INET : only6 ? AF_INET6 :
				  (rng() & 1) ? AF_INET : AF_INET6;
			struct conn *c = conn_new(fam, false);

			if (!c)
				return 1;
			c->mode = (int)(rng() % M_COUNT);
			c->out_len = rng() % 3 ? rng() % 6000 : 0;
			c->in_len = rng() % 3 ? rng() % 6000 : 0;
			act[nact++] = c;
			opened++;
		}
		/* Shuffle, then step everyone; batches of random size */
		for (i = nact; i > 1; i--) {
			unsigned j = rng() % i;
			struct conn *t = act[i - 1];

			act[i - 1] = act[j];
			act[j] = t;
		}
		limit = 1 + rng() % 24;
		for (i = 0; i < nact && !failed; i++) {
			struct conn *c = act[i];

			if (storm_step(c)) {
				peer_close(c);
				c->st = G_CLOSED;
				c->done = true;
				act[i--] = act[--nact];
				ndone++;
				continue;
			}
			if (tx_frames >= limit) {
				tx_flush();
				limit = 1 + rng() % 24;
			}
		}
		pump(5);
		if (now_ms() > deadline) {
			cfail(NULL, "storm: timed out with %u of %u "
			      "connections done", ndone, total);
			for (i = 0; i < nact && i < 8; i++) {
				struct conn *c = act[i];

				fprintf(stderr, "  conn %u %s %s step %d: "
					"guest st %d sent %zu/%zu acked %u rx "
					"%zu fin %d/%d rst %d; peer fd %d rx "
					"%zu tx %zu/%zu eof %d rst %d\n",
					c->id, fam_name(c->family),
					mode_name[c->mode], c->step, c->st,
					tx_sent(c), c->tx_total,
					c->snd_una - c->iss - 1, c->rx,
					c->fin_acked, c->got_fin, c->got_rst,
					c->p.fd, c->p.rx, c->p.tx_done,
					c->p.tx_total, c->p.eof, c->p.rst);
			}
			return 1;
		}
	}
	/* Let the last ACKs go out */
	pump(0);
	if (failed)
		return 1;
	printf("storm: %u connections, %u batches\n", total,
	       tx_batches - batches);
	return failed;
}

/* ---- main --------------------------------------------------------------- */

struct tcase {
	const char *name;
	int (*fn)(int family);
	bool once;			/* mixes families itself */
	const char *what;
};

static const struct tcase cases[] = {
	{ "handshake", case_handshake, false,
	  "SYN-ACK options (MSS, window scale only if offered)" },
	{ "data-out", case_data_out, false, "512 KiB guest -> peer" },
	{ "no-split", case_no_split, false,
	  "16 MiB guest -> peer, 65000-byte segments never cut to fit" },
	{ "data-in", case_data_in, false, "2 MiB peer -> guest, ACKed" },
	{ "lazy-ack", case_lazy_ack, false,
	  "2 MiB peer -> guest, ACKed every 2 segments; then small writes" },
	{ "fin-guest", case_fin_guest, false,
	  "guest FIN first, peer sends after it" },
	{ "fin-peer", case_fin_peer, false,
	  "peer FIN first, guest sends after it" },
	{ "rst-guest", case_rst_guest, false, "guest RST: peer ECONNRESET" },
	{ "rst-peer", case_rst_peer, false, "peer RST: RST frame to guest" },
	{ "zero-window", case_zero_window, false,
	  "zero window, then window update" },
	{ "retransmit", case_retransmit, false,
	  "duplicate and overlapping segments" },
	{ "out-of-order", case_out_of_order, false,
	  "segment after a gap, then the gap" },
	{ "closed-port", case_closed_port, false, "SYN to a closed port" },
	{ "reuse", case_reuse, false,
	  "data A, RST A, SYN B in one batch (-n rounds)" },
	{ "storm", case_storm, true,
	  "-n mixed connections in shuffled batches" },
	{ NULL, NULL, false, NULL },
};

static void usage(const char *name)
{
	const struct tcase *t;

	fprintf(stderr,
		"Usage: %s [OPTIONS] SOCKPATH CASE...\n"
		"  -t SECONDS  deadline for each wait (default 20)\n"
		"  -s SEED     PRNG seed (default: from the clock, printed)\n"
		"  -n COUNT    rounds (reuse) or connections (storm)\n"
		"  -4 / -6     IPv4 or IPv6 only\n"
		"  -a ADDR     guest IPv4 address (default 192.0.2.2)\n"
		"  -A ADDR     guest IPv6 address (default 2001:db8:1::2)\n"
		"  -g ADDR     gateway IPv4 address (default 192.0.2.1)\n"
		"  -p ADDR     peer IPv4 address (default 203.0.113.7)\n"
		"  -P ADDR     peer IPv6 address (default 2001:db8:2::7)\n"
		"  -b PORT     first peer port (default 20000)\n"
		"  -v          verbose\n"
		"Cases:\n", name);
	for (t = cases; t->name; t++)
		fprintf(stderr, "  %-13s %s\n", t->name, t->what);
	exit(2);
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	bool seeded = false;
	int opt, i;

	inet_pton(AF_INET, "192.0.2.2", &ip4_guest);
	inet_pton(AF_INET, "192.0.2.1", &ip4_gw);
	inet_pton(AF_INET, "203.0.113.7", &ip4_peer);
	inet_pton(AF_INET6, "2001:db8:1::2", &ip6_guest);
	inet_pton(AF_INET6, "2001:db8:2::7", &ip6_peer);

	while ((opt = getopt(argc, argv, "t:s:n:46a:A:g:p:P:b:vh")) != -1) {
		switch (opt) {
		case 't':
			timeout_ms = atoi(optarg) * 1000;
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'n':
			count_opt = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case '4':
			only4 = true;
			break;
		case '6':
			only6 = true;
			break;
		case 'a':
			if (inet_pton(AF_INET, optarg, &ip4_guest) != 1)
				usage(argv[0]);
			break;
		case 'A':
			if (inet_pton(AF_INET6, optarg, &ip6_guest) != 1)
				usage(argv[0]);
			break;
		case 'g':
			if (inet_pton(AF_INET, optarg, &ip4_gw) != 1)
				usage(argv[0]);
			break;
		case 'p':
			if (inet_pton(AF_INET, optarg, &ip4_peer) != 1)
				usage(argv[0]);
			break;
		case 'P':
			if (inet_pton(AF_INET6, optarg, &ip6_peer) != 1)
				usage(argv[0]);
			break;
		case 'b':
			port_next = (uint16_t)atoi(optarg);
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind > argc - 2 || (only4 && only6) || timeout_ms <= 0)
		usage(argv[0]);
	sock_path = argv[optind++];
	for (i = optind; i < argc; i++) {
		const struct tcase *t;

		for (t = cases; t->name && strcmp(t->name, argv[i]); t++)
			;
		if (!t->name) {
			fprintf(stderr, "tcpguest: unknown case %s\n",
				argv[i]);
			usage(argv[0]);
		}
	}
	if (!seeded)
		rng_state = now_ms() ^ ((uint64_t)getpid() << 32);
	if (!rng_state)
		rng_state = 1;
	printf("tcpguest: seed %llu\n", (unsigned long long)rng_state);
	fflush(stdout);

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	if (sock_open())
		return 2;
	cur_case = "arp";
	if (learn_mac())
		return 1;

	for (i = optind; i < argc; i++) {
		const struct tcase *t;
		int f;

		for (t = cases; strcmp(t->name, argv[i]); t++)
			;
		for (f = 0; f < 2; f++) {
			int family = f ? AF_INET6 : AF_INET;
			uint64_t t0 = now_ms();
			char name[64];

			if ((only4 && f) || (only6 && !f) || (t->once && f))
				continue;
			snprintf(name, sizeof(name), "%s/%s", t->name,
				 t->once ? "mixed" : fam_name(family));
			cur_case = name;
			if (t->fn(family) || failed) {
				if (!failed)
					cfail(NULL, "failed");
				return 1;
			}
			printf("tcpguest: %s: ok (%llu ms)\n", name,
			       (unsigned long long)(now_ms() - t0));
			fflush(stdout);
		}
	}
	tx_flush();
	close(sock);
	return 0;
}
