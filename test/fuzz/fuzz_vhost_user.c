// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_vhost_user.c - the vhost-user control protocol (vu_ctrl_handler()
 * and everything behind it: memory table, dirty log, ring set-up, start and
 * stop) and the virtio-net data path it enables (vu_net_tx() into
 * demux_input(), frames back through vu_net_send() and the in-place
 * reservation of vu_net_seg_reserve()), driven the way QEMU drives them.
 *
 * The front-end is us: one end of a socketpair is handed to vu_init() as an
 * inherited connected socket (--fd), and the fuzz input is decoded into a
 * sequence of operations, mostly vhost-user messages written to the other
 * end with their file descriptors (SCM_RIGHTS): memfds for SET_MEM_TABLE
 * and SET_LOG_BASE, eventfds for SET_VRING_KICK/CALL/ERR and SET_LOG_FD.
 * Each message is built from a few input bytes so that most are valid or
 * nearly so; a modifier bit bends its size, fd count or flags, another
 * sends it in two pieces with a loop round in between, and a raw operation
 * writes whatever the input says (framing errors included). A loop round
 * follows each message, unless OP_ROUND with the split bit asked for a
 * batch: then the messages pile up until the next OP_ROUND, and are all
 * there for one round, as a front-end faster than the loop makes it (with
 * the kicks and frames of that round: what a descriptor closed and taken
 * again within one round needs).
 *
 * Guest memory is one memfd of MEM_SIZE bytes, which we map too; canonical
 * memory tables describe it (whole, or in slices) at guest physical 0 and
 * QEMU virtual QVA_BASE, from file offset = guest physical address. Rings
 * and buffers have a fixed layout in it (see below), so that data path
 * operations can place descriptor chains (frames from the input) in the TX
 * ring, post RX buffers and kick. Whatever passt writes back is checked.
 *
 * The event loop is ours: loop_add()/loop_del() record registrations and a
 * poll() round dispatches control socket events to vu_ctrl_handler(),
 * kicks to vu_kick_handler() (one per write, as EPOLLET gives them:
 * reg_edge()) and a device-state fd's to migrate_pipe_handler(), then calls
 * tcp_defer_handler(), tap_flush() and uring_flush(), like
 * main_round_end(): the interrupts go through io_uring, as in the daemon,
 * where the kernel has it (and the library, built with URING_CHECK,
 * aborts if a descriptor a queued operation names was closed before the
 * flush). Replies are read after messages that may have one, at OP_ROUND
 * and before a disconnect. TCP, UDP and ICMP are off (no sockets).
 *
 * Checks, besides ASan and UBSan:
 * - replies have flags VERSION | REPLY and 8 bytes of payload;
 * - no registration is made twice; nothing stays registered, mapped
 *   (vu_dev) or open (fds below 512 by one poll(), all of /proc/self/fd
 *   on thorough runs) after the front-end is gone;
 *   no mapping of our memfds survives (checked every MAPS_EVERY runs and
 *   on the first ones);
 * - as long as the input did only canonical things ("clean"): used ring
 *   entries name chains we posted and not yet got back, with a length
 *   that fits (0 on TX); frames to the guest carry a sane virtio-net
 *   header (num_buffers 1 without MRG_RXBUF, the spec's "MUST"), parse,
 *   come from our MAC, have correct checksums unless NEEDS_CSUM; with
 *   dirty logging on, every page written is marked (used->flags too);
 *   a ring stopped with GET_VRING_BASE isn't touched again (index or
 *   flags) until its next SET_VRING_KICK.
 *   FUZZ_VU_LAX=1 turns the header check off.
 *
 * Input: a knob byte (fz_ctx_knob()), then operations: an op byte (bits
 * 0-4: operation, bit 5: NEED_REPLY, bit 6: mutate, bit 7: split send),
 * then the operation's own bytes (see op_*()). Missing bytes read as 0.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <dirent.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "demux.h"
#include "env.h"
#include "flow.h"
#include "loop.h"
#include "migrate/transfer.h"
#include "net/checksum.h"
#include "tap/tap.h"
#include "vhost/net.h"
#include "vhost/vhost.h"
#include "tcp/tcp.h"
#include "test/tools/common/vring_desc.h"
#include "test/tools/common/vu_req.h"
#include "uring.h"
#include "util.h"

/* Guest memory and its layout (guest physical = memfd offset) */
#define MEM_SIZE  0x100000ULL
#define QVA_BASE  0x7f1200000000ULL
#define RING(r)	  ((uint64_t)(r) * 0x10000)
#define DESC_OFF  0x0
#define AVAIL_OFF 0x2000
#define USED_OFF  0x3000
#define RXB_BASE  0x20000ULL /* RX buffers: 1 KiB per descriptor index */
#define RXB_SIZE  1024
#define TXB_BASE  0xa0000ULL /* TX slots of 8 KiB */
#define TX_SLOT	  0x2000
#define TX_SLOTS  48
#define QMAX	  512 /* largest queue we lay out */
#define CHAIN_MAX 6

#define MAX_OPS	     96
#define MAX_CONNECTS 4
#define MAX_REGS     16
#define MAX_FDS	     12
#define MAPS_EVERY   64

#define NOFD	     0x100

/* Operations beyond the requests (op byte, bits 0-4) */
enum {
	OP_UNKNOWN = 19, OP_RAW, OP_SETUP, OP_TX, OP_RX, OP_ROUND,
	OP_RECONNECT, OP_SEG, OP_SCRIBBLE, OP_TX2, OP_RX2, OP_GET_BASE,
	OP_MEM,
};

static struct ctx c;
static bool lax, verbose;
static unsigned n_rx_frames, n_tx_done; /* per run, for FUZZ_LOG */

/* ---- input ---------------------------------------------------------- */

static const uint8_t *in_p;
static size_t in_left;

static uint8_t g8(void)
{
	if (!in_left)
		return 0;
	in_left--;
	return *in_p++;
}

static uint16_t g16(void)
{
	return (uint16_t)(g8() | g8() << 8);
}

static uint32_t g32(void)
{
	return (uint32_t)g16() | (uint32_t)g16() << 16;
}

static uint64_t g64(void)
{
	return (uint64_t)g32() | (uint64_t)g32() << 32;
}

static size_t gbytes(void *d, size_t n)
{
	n = MIN(n, in_left);
	memcpy(d, in_p, n);
	in_p += n;
	in_left -= n;
	return n;
}

/* ---- our event loop --------------------------------------------------- */

#include "fuzz_loop.h"

/* This run does the costly checks (the first few, then 1 in MAPS_EVERY) */
static bool thorough;

/* Whether registration @r, which poll() found ready, has an event to
 * deliver: always if level-triggered; for EPOLLET, once after registering
 * and then once per write to it since the last event. Only kick fds are
 * registered that way here (TCP is off), eventfds which a write makes
 * readable again, so we consume the counter to see the next edge; anything
 * else (a fuzzed fd kind) gets its one event, and more only while read()
 * finds something.
 */
static bool reg_edge(int r)
{
	uint64_t v;

	if (!(regs[r].events & EPOLLET))
		return true;
	if (read(regs[r].fd, &v, sizeof(v)) != sizeof(v) && regs[r].fired)
		return false;
	regs[r].fired = true;
	return true;
}

/* poll() rounds over the registrations until nothing happens, like
 * loop_run(); EPOLLET ones deliver edges (reg_edge()). Returns the number
 * of events dispatched.
 */
static unsigned loop_round(void)
{
	unsigned rounds, total = 0;

	for (rounds = 0; rounds < 8; rounds++) {
		struct pollfd pf[MAX_REGS];
		union epoll_ref ref[MAX_REGS];
		unsigned i, n = n_regs, got = 0;

		for (i = 0; i < n; i++) {
			/* A registration of a closed fd (costly: 1 in
			 * MAPS_EVERY runs, see thorough)
			 */
			FZ_CHECK(!thorough || fcntl(regs[i].fd, F_GETFD) >= 0);
			pf[i].fd = regs[i].fd;
			pf[i].events = (short)(regs[i].events &
					       (POLLIN | POLLOUT | POLLRDHUP));
			pf[i].revents = 0;
			ref[i] = regs[i].ref;
		}
		if (n && poll(pf, n, 0) > 0) {
			for (i = 0; i < n; i++) {
				uint32_t ev = (uint32_t)pf[i].revents;
				int r;

				if (!ev)
					continue;
				r = reg_find(pf[i].fd);
				if (r < 0 || regs[r].ref.u64 != ref[i].u64 ||
				    !reg_edge(r))
					continue;
				got++;
				switch (ref[i].type) {
				case REF_FE_CONN:
					vu_ctrl_handler(&c, ref[i], ev);
					break;
				case REF_FE_KICK:
					vu_kick_handler(&c, ref[i]);
					break;
				case REF_MIGRATE: /* a fuzzed DEVICE_STATE fd */
					migrate_pipe_handler(&c, ref[i], ev);
					break;
				default:
					FZ_CHECK(0);
				}
			}
		}
		tcp_defer_handler(&c);
		tap_flush(&c);
		uring_flush();
		total += got;
		if (!got)
			break;
	}
	return total;
}

/* ---- guest memory and our model of the rings ------------------------- */

static int ram_fd = -1;
static uint8_t *ram;

struct chain {
	uint8_t n;
	uint16_t d[CHAIN_MAX];
	uint32_t cap; /* writable bytes (RX) */
};

static struct gring {
	unsigned q;		/* size we set, 0: none */
	uint16_t avail_idx;	/* next avail entry we write */
	uint16_t used_seen;	/* used entries we've looked at */
	uint16_t next_desc;
	int base_hint;		/* from GET_VRING_BASE, -1 if none */
	bool stopped;		/* GET_VRING_BASE answered, no KICK since */
	uint16_t stop_used;
	uint16_t used_flags;	/* used->flags as last seen */
	uint16_t avail_event;	/* avail_event as last seen... */
	unsigned ev_q;		/* ...for this ring size (0: not yet) */
	int kick, call, err;	/* our ends of the eventfds */
	bool desc_busy[QMAX];
	bool head_busy[QMAX];
	struct chain ch[QMAX];
} rings[2];

static unsigned tx_slot;
static bool batch;	  /* no loop round after each message */
static bool clean;	  /* only canonical operations so far */
static uint64_t features; /* acked, as far as we know (clean only) */
static bool log_on;	  /* dirty log mapped and LOG_ALL acked */
static uint8_t *log_map;  /* our mapping of the canonical log */
static size_t log_map_len, log_off, log_size;
static int peer = -1;
static unsigned connects;

static uint8_t *gp(uint64_t gpa, size_t len)
{
	FZ_CHECK(gpa <= MEM_SIZE && len <= MEM_SIZE - gpa);
	return ram + gpa;
}

static void put16(uint64_t gpa, uint16_t v)
{
	v = htole16(v);
	__atomic_store_n((uint16_t *)gp(gpa, 2), v, __ATOMIC_RELEASE);
}

static uint16_t get16(uint64_t gpa)
{
	return le16toh(__atomic_load_n((uint16_t *)gp(gpa, 2),
				       __ATOMIC_ACQUIRE));
}

static void desc_write(unsigned r, unsigned i, uint64_t addr, uint32_t len,
		       uint16_t flags, uint16_t next)
{
	uint8_t *d = gp(RING(r) + DESC_OFF + 16 * (uint64_t)i, 16);

	vring_desc_put(d, addr, len, flags, next);
}

static void log_unmap(void)
{
	if (log_map)
		munmap(log_map, log_map_len);
	log_map = NULL;
	log_on = false;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Forget the rings: the device has no rings any more */
static void rings_reset(void)
{
	unsigned r;

	for (r = 0; r < 2; r++) {
		struct gring *g = &rings[r];

		close_fd(&g->kick);
		close_fd(&g->call);
		close_fd(&g->err);
		memset(g, 0, sizeof(*g));
		g->kick = g->call = g->err = -1;
		g->base_hint = -1;
		memset(gp(RING(r), 0x10000), 0, 0x10000);
	}
	features = 0;
	log_unmap();
}

static bool log_marked(uint64_t gpa, uint64_t len);

/* used->flags (NO_NOTIFY: kicks wanted or not), and avail_event after
 * the used entries (the same, with EVENT_IDX), are writes too: logged,
 * and never to a stopped ring (looked at before a stop is noted, too)
 */
static void used_flags_check(unsigned r)
{
	struct gring *g = &rings[r];
	uint16_t f = get16(RING(r) + USED_OFF), ev;
	uint64_t ev_off;

	if (!g->q)
		return;
	ev_off = RING(r) + USED_OFF + 4 + 8 * (uint64_t)g->q;
	ev = get16(ev_off);
	if (g->ev_q != g->q) {		/* another place: look from now on */
		g->ev_q = g->q;
		g->avail_event = ev;
	} else if (ev != g->avail_event) {
		g->avail_event = ev;
		if (clean) {
			FZ_CHECK(!g->stopped);
			if (log_on)
				FZ_CHECK(log_marked(ev_off, 2));
		}
	}
	if (f == g->used_flags)
		return;
	g->used_flags = f;
	if (!clean)
		return;
	FZ_CHECK(!(f & ~1) && !g->stopped);
	if (log_on)
		FZ_CHECK(log_marked(RING(r) + USED_OFF, 2));
}

/* ---- front-end connection --------------------------------------------- */

static void drain_replies_now(void);

static void disconnect(void)
{
	unsigned i;

	if (peer >= 0) {
		drain_replies_now();	/* unread replies are checked too */
		close(peer);
		peer = -1;
	}
	for (i = 0; i < 256 && vu_dev.fd >= 0; i++)
		vu_ctrl_handler(&c, loop_ref(REF_FE_CONN, 0, vu_dev.gen),
				EPOLLIN | EPOLLRDHUP);
	FZ_CHECK(vu_dev.fd < 0);
	rings_reset();
}

static bool connect_fe(void)
{
	int sv[2];

	if (connects >= MAX_CONNECTS)
		return false;
	connects++;
	disconnect();
	FZ_CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	peer = sv[1];
	c.fd_inherited = sv[0];
	vu_init(&c);
	c.fd_inherited = -1;
	FZ_CHECK(vu_dev.fd == sv[0]);
	return true;
}

/* A message that may be answered was sent since the last drain_replies():
 * only then is it worth a recv() (OP_ROUND and the end of a run read
 * anyway, see drain_replies_now())
 */
static bool replies_due;

/* Whether request @req with @flags is answered, or may be */
static bool reply_possible(uint32_t req, uint32_t flags)
{
	switch (req) {
	case SET_FEATURES: case SET_OWNER: case RESET_OWNER:
	case SET_MEM_TABLE: case SET_LOG_FD: case SET_VRING_NUM:
	case SET_VRING_ADDR: case SET_VRING_BASE: case SET_VRING_KICK:
	case SET_VRING_CALL: case SET_VRING_ERR: case SET_PROTOCOL_FEATURES:
	case SET_VRING_ENABLE: case SEND_RARP:
		return flags & F_NEED_REPLY;
	default:
		return true;
	}
}

/* Read and check the replies; note where stopped rings stopped */
static void drain_replies_now(void)
{
	static uint8_t buf[4096];
	static size_t have;
	ssize_t n;

	replies_due = false;
	while (peer >= 0 &&
	       (n = recv(peer, buf + have, sizeof(buf) - have,
			 MSG_DONTWAIT)) > 0) {
		size_t off = 0;

		have += (size_t)n;
		while (have - off >= 12) {
			uint32_t req, flags, size;

			memcpy(&req, buf + off, 4);
			memcpy(&flags, buf + off + 4, 4);
			memcpy(&size, buf + off + 8, 4);
			FZ_CHECK(flags == (F_VERSION | F_REPLY));
			FZ_CHECK(size == 8);
			if (have - off < 20)
				break;
			if (req == GET_VRING_BASE) {
				uint32_t idx, num;

				memcpy(&idx, buf + off + 12, 4);
				memcpy(&num, buf + off + 16, 4);
				/* Rings past pair 0 (queue pairs) are
				 * taken, but not modelled here
				 */
				FZ_CHECK(idx < VU_QUEUES &&
					 num <= UINT16_MAX);
				if (idx < 2)
					rings[idx].base_hint = (int)num;
				if (idx < 2 && rings[idx].q) {
					used_flags_check(idx);
					rings[idx].stopped = true;
					rings[idx].stop_used = get16(
						RING(idx) + USED_OFF + 2);
				}
			}
			off += 20;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	if (peer < 0)
		have = 0;
}

static void drain_replies(void)
{
	if (replies_due)
		drain_replies_now();
}

/* ---- messages ---------------------------------------------------------- */

struct msg {
	uint32_t req, flags, size;
	uint8_t p[512];
	int fds[MAX_FDS];
	unsigned nfds;
};

static int memfd(const char *name, uint64_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	FZ_CHECK(fd >= 0);
	FZ_CHECK(!ftruncate(fd, (off_t)size));
	return fd;
}

static int evfd(void)
{
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	FZ_CHECK(fd >= 0);
	return fd;
}

/* An fd of kind @k: wrong ones for most requests */
static int some_fd(uint8_t k)
{
	switch (k % 4) {
	case 0:
		return evfd();
	case 1:
		return memfd("fzvu-small", 4096);
	case 2:
		return dup(ram_fd);
	default:
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	}
}

static void msg_init(struct msg *m, uint32_t req, uint8_t op)
{
	memset(m, 0, sizeof(*m));
	m->req = req;
	m->flags = F_VERSION | ((op & 0x20) ? F_NEED_REPLY : 0);
}

static void msg_u64(struct msg *m, uint64_t v)
{
	memcpy(m->p, &v, 8);
	m->size = 8;
}

static void msg_state(struct msg *m, uint32_t index, uint32_t num)
{
	memcpy(m->p, &index, 4);
	memcpy(m->p + 4, &num, 4);
	m->size = 8;
}

/* Bend size, fd count or flags */
static void msg_mutate(struct msg *m)
{
	uint8_t b = g8(), d;

	clean = false;
	switch (b & 3) {
	case 0:
		d = (uint8_t)((b >> 2) & 15);
		if (d < 8)
			m->size = m->size > d ? m->size - d - 1 : 0;
		else
			m->size = MIN(m->size + d - 7,
				      (uint32_t)sizeof(m->p));
		break;
	case 1:
		if ((b & 4) && m->nfds) {
			close(m->fds[--m->nfds]);
		} else {
			d = (uint8_t)(1 + ((b >> 3) & 7));
			while (d-- && m->nfds < MAX_FDS)
				m->fds[m->nfds++] = some_fd(g8());
		}
		break;
	case 2:
		m->flags = g32();
		break;
	default:
		m->req = g8();
		break;
	}
}

/* Send @len bytes of @buf with @nfds fds; best effort */
static void send_part(const void *buf, size_t len, const int *fds,
		      unsigned nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (peer < 0 || !len)
		return;
	if (nfds) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(peer, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		(void)0;
}

/* Send a message (closing our copies of its fds), let passt handle it */
static void msg_send(struct msg *m, uint8_t op)
{
	uint8_t buf[12 + sizeof(m->p)];
	size_t len = 12 + m->size;
	unsigned i;

	if (op & 0x40)
		msg_mutate(m);
	memcpy(buf, &m->req, 4);
	memcpy(buf + 4, &m->flags, 4);
	memcpy(buf + 8, &m->size, 4);
	memcpy(buf + 12, m->p, MIN((size_t)m->size, sizeof(m->p)));
	len = MIN(len, sizeof(buf));

	if (op & 0x80) {
		/* Two pieces, a loop round in between; fds with either */
		uint8_t s = g8();
		size_t cut = 1 + s % (len - 1 ? len - 1 : 1);

		if (cut >= len)
			cut = len - 1;
		send_part(buf, cut, m->fds, (s & 0x80) ? 0 : m->nfds);
		loop_round();
		drain_replies();
		send_part(buf + cut, len - cut, m->fds,
			  (s & 0x80) ? m->nfds : 0);
	} else {
		send_part(buf, len, m->fds, m->nfds);
	}
	for (i = 0; i < m->nfds; i++)
		close(m->fds[i]);
	m->nfds = 0;
	/* Only now, whole, can it have been answered */
	replies_due |= reply_possible(m->req, m->flags);
	if (batch)
		return;
	loop_round();
	drain_replies();
}

/* Canonical ring addresses of ring @r */
static void ring_addrs(unsigned r, uint64_t a[3])
{
	a[0] = QVA_BASE + RING(r) + DESC_OFF;
	a[1] = QVA_BASE + RING(r) + USED_OFF;
	a[2] = QVA_BASE + RING(r) + AVAIL_OFF;
}

/* SET_FEATURES payload from a byte: VERSION_1 and a selection */
static uint64_t features_pick(uint8_t v)
{
	uint64_t f = 1ULL << VIRTIO_F_VERSION_1;

	if (v & 1)
		f |= 1ULL << VHOST_USER_F_PROTOCOL_FEATURES;
	if (v & 2)
		f |= 1ULL << VIRTIO_NET_F_MRG_RXBUF;
	if (v & 4)
		f |= 1ULL << VIRTIO_NET_F_GUEST_CSUM;
	if (v & 8)
		f |= 1ULL << VIRTIO_NET_F_GUEST_TSO4;
	if (v & 16)
		f |= 1ULL << VIRTIO_NET_F_GUEST_TSO6;
	if (v & 32)
		f |= 1ULL << VHOST_F_LOG_ALL;
	if (v & 64)
		f |= (1ULL << VIRTIO_NET_F_CSUM) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO4) |
		     (1ULL << VIRTIO_NET_F_HOST_TSO6);
	/* Bit 7 picks a raw payload instead: EVENT_IDX goes with two
	 * others, so that half the picks have it
	 */
	if (!(v & 2) != !(v & 4))
		f |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	return f;
}

static void req_features(uint8_t op, uint8_t v, uint64_t raw, bool use_raw)
{
	struct msg m;
	uint64_t f = use_raw ? raw : features_pick(v);

	msg_init(&m, SET_FEATURES, op);
	msg_u64(&m, f);
	if (use_raw)
		clean = false;
	else
		features = f;
	msg_send(&m, op);
	log_on = log_map && (features & (1ULL << VHOST_F_LOG_ALL));
}

/* The memory table: variant byte, then per-variant bytes */
static void req_mem_table(uint8_t op, uint8_t v)
{
	struct msg m;
	uint32_t n = 1 + (v >> 3) % 8, i;
	uint64_t slice;

	msg_init(&m, SET_MEM_TABLE, op);
	if ((v & 7) == 0)
		n = 1;
	if ((v & 7) >= 2)
		clean = false;
	slice = (MEM_SIZE / n) & ~0xfffULL;
	for (i = 0; i < n; i++) {
		uint64_t r[4], start = slice * i;
		uint64_t size = i == n - 1 ? MEM_SIZE - start : slice;
		int fd;

		r[0] = start;		 /* guest physical */
		r[1] = size;
		r[2] = QVA_BASE + start; /* QEMU virtual */
		r[3] = start;		 /* mmap_offset */
		fd = dup(ram_fd);
		switch ((v & 7) < 2 ? 0 : g8() % 10) {
		case 0:
			break;
		case 1: /* file too small for it */
			close(fd);
			fd = memfd("fzvu-small", (g16() % 64) * 512);
			r[3] = 0;
			break;
		case 2: /* not a regular file */
			close(fd);
			fd = some_fd(g8() | 1) ;
			if (fd < 0)
				fd = evfd();
			break;
		case 3: /* unaligned offset, slice shifted */
			r[3] = start + (g8() | 1);
			if (r[3] > MEM_SIZE)
				r[3] = MEM_SIZE;
			if (r[1] > MEM_SIZE - r[3])
				r[1] = MEM_SIZE - r[3];
			if (!r[1])
				r[1] = 1;
			break;
		case 4: /* guest physical somewhere else */
			r[0] = g64();
			break;
		case 5: /* QEMU virtual somewhere else */
			r[2] = g64();
			break;
		case 6: /* size from the input */
			r[1] = g64();
			break;
		case 7: /* offset from the input */
			r[3] = g64();
			break;
		case 8: /* all from the input */
			r[0] = g64();
			r[1] = g64();
			r[2] = g64();
			r[3] = g64();
			break;
		default: /* size off by some */
			r[1] += (int8_t)g8();
			break;
		}
		memcpy(m.p + 8 + 32 * i, r, 32);
		m.fds[m.nfds++] = fd;
	}
	if ((v & 7) == 7) /* region count from the input */
		n = g8() % 10;
	memcpy(m.p, &n, 4);
	m.size = 8 + 32 * MIN(n, 8U);
	if (n > 8)
		m.size = 8 + 32 * 8;
	msg_send(&m, op);
}

static void req_log_base(uint8_t op, uint8_t v)
{
	uint64_t l[2], file;
	struct msg m;
	int fd;

	msg_init(&m, SET_LOG_BASE, op);
	l[0] = (v & 1) ? 4 : MEM_SIZE / VU_LOG_PAGE / 8; /* size */
	l[1] = ((v >> 1) & 3) * 8;			  /* offset */
	file = l[0] + l[1];
	if (v & 0x40) { /* file too small */
		file = g8() % (file ? file : 1);
		clean = false;
	}
	if (v & 0x80) {
		l[0] = g64();
		l[1] = g64();
		file = g16();
		clean = false;
	}
	fd = memfd("fzvu-log", file);
	memcpy(m.p, l, 16);
	m.size = 16;
	m.fds[m.nfds++] = fd;
	if (!(v & 0xc0) && !(op & 0x40)) {
		/* Canonical: we watch the log through our own mapping */
		log_unmap();
		log_map_len = (size_t)file;
		log_map = mmap(NULL, log_map_len, PROT_READ, MAP_SHARED, fd,
			       0);
		FZ_CHECK(log_map != MAP_FAILED);
		log_off = (size_t)l[1];
		log_size = (size_t)l[0];
		m.fds[0] = dup(fd);
		close(fd);
	}
	msg_send(&m, op);
	log_on = log_map && (features & (1ULL << VHOST_F_LOG_ALL));
}

/* Index byte: ring 0 or 1, or anything */
static uint32_t ring_index(uint8_t v)
{
	if (v & 0x40) {
		clean = false;
		return g8();
	}
	return v & 1;
}

static void req_vring_fd(uint8_t op, uint32_t req, uint8_t v)
{
	struct msg m;
	uint32_t idx = ring_index(v);
	uint64_t p = idx;
	int fd = -1;

	msg_init(&m, req, op);
	if (v & 2)
		p |= NOFD;
	else
		fd = evfd();
	if (v & 0x80) {
		p = g64();
		clean = false;
	}
	msg_u64(&m, p);
	if (fd >= 0) {
		m.fds[m.nfds++] = dup(fd);
		if (idx < 2) {
			int *mine = req == SET_VRING_KICK ? &rings[idx].kick :
				    req == SET_VRING_CALL ? &rings[idx].call :
							    &rings[idx].err;
			close_fd(mine);
			*mine = fd;
		} else {
			close(fd);
		}
	}
	if (req == SET_VRING_KICK && idx < 2)
		rings[idx].stopped = false;
	msg_send(&m, op);
}

static void req_vring_num(uint8_t op, uint8_t v)
{
	struct msg m;
	uint32_t idx = ring_index(v), num = 1U << ((v >> 1) % 10);

	msg_init(&m, SET_VRING_NUM, op);
	if (v & 0x80) {
		num = g32();
		clean = false;
	}
	/* Passt refuses it while the ring runs: only a fresh ring may change
	 * size in our model (else our chains would be lost)
	 */
	if (idx < 2) {
		struct gring *g = &rings[idx];

		/* Chains posted past the stop were laid out for the old size:
		 * with another one, the avail entries the ring resumes at mean
		 * nothing (a driver would lay them out again; we don't)
		 */
		if (g->q && g->stopped && num != g->q &&
		    (g->base_hint < 0 || g->avail_idx != (uint16_t)g->base_hint))
			clean = false;
		if (!rings[idx].q || rings[idx].stopped)
			rings[idx].q = (num && num <= QMAX &&
					!(num & (num - 1))) ? num : 0;
		else if (num != rings[idx].q)
			clean = false;
		if (!rings[idx].q)
			clean = false;
	}
	msg_state(&m, idx, num);
	msg_send(&m, op);
}

static void req_vring_addr(uint8_t op, uint8_t v)
{
	uint32_t idx = ring_index(v), flags = (v & 0x20) ? 1 : 0;
	uint64_t a[3], logaddr;
	struct msg m;

	msg_init(&m, SET_VRING_ADDR, op);
	ring_addrs(idx & 1, a);
	logaddr = RING(idx & 1) + USED_OFF;
	if (v & 0x80) {
		uint8_t w = g8();

		clean = false;
		if (w & 0x80)
			flags = g32();
		a[w % 3] += (uint64_t)(int64_t)(int32_t)g32();
		if (w & 0x40)
			logaddr = g64();
	}
	memcpy(m.p, &idx, 4);
	memcpy(m.p + 4, &flags, 4);
	memcpy(m.p + 8, &a[0], 8);
	memcpy(m.p + 16, &a[1], 8);
	memcpy(m.p + 24, &a[2], 8);
	memcpy(m.p + 32, &logaddr, 8);
	m.size = 40;
	if (idx < 2) {
		/* passt reads used->idx from memory: our count goes on */
		rings[idx].used_seen = get16(RING(idx) + USED_OFF + 2);
	}
	msg_send(&m, op);
}

static void req_vring_base(uint8_t op, uint8_t v)
{
	uint32_t idx = ring_index(v), num = 0;
	struct msg m;

	msg_init(&m, SET_VRING_BASE, op);
	if (idx < 2) {
		struct gring *g = &rings[idx];

		num = g->base_hint >= 0 ? (uint32_t)g->base_hint
					: g->avail_idx;
		/* Chains we posted past that point are lost to our model if
		 * this is refused or skips them: fine, they stay busy
		 */
	}
	if (v & 0x80) {
		num = g32();
		clean = false;
	}
	msg_state(&m, idx, num);
	msg_send(&m, op);
}

static void req_state(uint8_t op, uint32_t req, uint8_t v)
{
	uint32_t idx = ring_index(v), num = (v >> 1) & 1;
	struct msg m;

	msg_init(&m, req, op);
	if (v & 0x80) {
		num = g32();
		clean = false;
	}
	msg_state(&m, idx, num);
	msg_send(&m, op);
}

/* A request from the op code */
static void op_request(uint8_t op, uint32_t req)
{
	uint8_t v = g8();
	struct msg m;

	switch (req) {
	case SET_FEATURES:
		req_features(op, v, (v & 0x80) ? g64() : 0, v & 0x80);
		return;
	case SET_MEM_TABLE:
		req_mem_table(op, v);
		return;
	case SET_LOG_BASE:
		req_log_base(op, v);
		return;
	case SET_VRING_NUM:
		req_vring_num(op, v);
		return;
	case SET_VRING_ADDR:
		req_vring_addr(op, v);
		return;
	case SET_VRING_BASE:
		req_vring_base(op, v);
		return;
	case GET_VRING_BASE:
		req_state(op, req, v & ~2);
		return;
	case SET_VRING_ENABLE:
		req_state(op, req, v);
		return;
	case SET_VRING_KICK:
	case SET_VRING_CALL:
	case SET_VRING_ERR:
		req_vring_fd(op, req, v);
		return;
	}

	msg_init(&m, req, op);
	switch (req) {
	case SET_PROTOCOL_FEATURES:
		msg_u64(&m, (v & 0x80) ? g64() : (uint64_t)(v & 0xe));
		if (v & 0x80)
			clean = false;
		break;
	case SET_LOG_FD:
		m.fds[m.nfds++] = evfd();
		if (v & 1)
			msg_u64(&m, 0);
		break;
	case SEND_RARP:
		m.size = 8;
		gbytes(m.p, 6);
		break;
	case RESET_OWNER:
		/* Rings gone, log gone, features gone */
		msg_send(&m, op);
		rings_reset();
		return;
	case GET_FEATURES:
	case GET_PROTOCOL_FEATURES:
	case GET_QUEUE_NUM:
		if (v & 1)
			msg_u64(&m, 0);
		break;
	default:
		break;
	}
	msg_send(&m, op);
}

/* Unknown request code, payload from the input */
static void op_unknown(uint8_t op)
{
	uint8_t v = g8();
	struct msg m;

	msg_init(&m, v & 1 ? g32() : (uint32_t)(v >> 1) + 20, op);
	if (m.req >= 1 && m.req <= SEND_RARP)
		m.req = 0;
	m.size = g8() % 64;
	gbytes(m.p, m.size);
	msg_send(&m, op);
}

/* Anything: header as given, any payload, any fds */
static void op_raw(uint8_t op)
{
	uint8_t buf[12 + 300];
	uint32_t size;
	int fds[MAX_FDS];
	unsigned nfds, i;
	size_t plen;

	(void)op;
	clean = false;
	gbytes(buf, 12);
	memcpy(&size, buf + 8, 4);
	plen = g16() % 300;
	plen = gbytes(buf + 12, plen);
	nfds = g8() % (MAX_FDS + 1);
	for (i = 0; i < nfds; i++)
		fds[i] = some_fd(g8());
	send_part(buf, 12 + plen, fds, nfds);
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	replies_due = true;
	if (batch)
		return;
	loop_round();
	drain_replies();
}

/* What QEMU does at start-up and device start */
static void op_setup(uint8_t op)
{
	uint8_t fv = g8(), mv = g8(), qv = g8(), r;
	uint8_t flags = op & 0x20; /* NEED_REPLY or not, nothing else */

	static const uint32_t first[] = {GET_FEATURES, GET_PROTOCOL_FEATURES,
					 SET_PROTOCOL_FEATURES, SET_OWNER};
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(first); i++) {
		struct msg m;

		msg_init(&m, first[i], flags);
		if (first[i] == SET_PROTOCOL_FEATURES)
			msg_u64(&m, 0xe); /* LOG_SHMFD, RARP, REPLY_ACK */
		msg_send(&m, flags);
	}
	for (r = 0; r < 2; r++)
		req_vring_fd(flags, SET_VRING_CALL, r);
	req_features(flags, fv | 1, 0, false);
	req_mem_table(flags, (uint8_t)(mv & 0xf9)); /* canonical kinds */
	for (r = 0; r < 2; r++) {
		req_vring_num(flags, (uint8_t)(r | (((qv % 10)) << 1)));
		req_vring_base(flags, r);
		req_vring_addr(flags, (uint8_t)(r | ((fv & 0x20) ? 0x20 : 0)));
		req_vring_fd(flags, SET_VRING_KICK, r);
	}
	for (r = 0; r < 2; r++)
		req_state(flags, SET_VRING_ENABLE, (uint8_t)(r | 2));
}

/* ---- data path ---------------------------------------------------------- */

/* Take @n free descriptors of ring @r, in @d; false if there aren't */
static bool desc_alloc(struct gring *g, unsigned n, uint16_t *d)
{
	unsigned i, got = 0, tries;

	for (tries = 0; tries < g->q && got < n; tries++) {
		i = g->next_desc++ % g->q;
		if (!g->desc_busy[i])
			d[got++] = (uint16_t)i;
	}
	if (got < n)
		return false;
	for (i = 0; i < n; i++)
		g->desc_busy[d[i]] = true;
	return true;
}

static void avail_push(unsigned r, uint16_t head)
{
	struct gring *g = &rings[r];
	uint64_t a = RING(r) + AVAIL_OFF;

	put16(a + 4 + 2 * (uint64_t)(g->avail_idx % g->q), head);
	g->avail_idx++;
}

static void avail_publish(unsigned r, bool kick)
{
	uint64_t one = 1;

	put16(RING(r) + AVAIL_OFF + 2, rings[r].avail_idx);
	if (kick && rings[r].kick >= 0 &&
	    write(rings[r].kick, &one, sizeof(one)) < 0)
		(void)0;
}

static bool log_marked(uint64_t gpa, uint64_t len)
{
	uint64_t p;

	if (!len)
		return true;
	for (p = gpa / VU_LOG_PAGE; p <= (gpa + len - 1) / VU_LOG_PAGE; p++) {
		if (p / 8 >= log_size)
			break;
		if (!(log_map[log_off + p / 8] & (1U << (p % 8))))
			return false;
	}
	return true;
}

static bool csum_ok(const uint8_t *p, size_t len, uint32_t init)
{
	return csum(p, len, init) == 0;
}

/* A frame passt wrote for the guest, with its virtio-net header */
static void check_rx_frame(const uint8_t *h, const uint8_t *f, size_t len,
			   unsigned nbuf)
{
	bool partial = h[0] & 1;
	uint16_t num, cstart, coff;
	struct pkt p;

	memcpy(&num, h + 10, 2);
	memcpy(&cstart, h + 6, 2);
	memcpy(&coff, h + 8, 2);
	num = le16toh(num);
	cstart = le16toh(cstart);
	coff = le16toh(coff);
	FZ_CHECK(!(h[0] & ~1));
	FZ_CHECK(!partial || (features & (1ULL << VIRTIO_NET_F_GUEST_CSUM)));
	FZ_CHECK(h[1] == 0 || h[1] == 1 || h[1] == 4);
	FZ_CHECK(h[1] != 1 ||
		 (features & (1ULL << VIRTIO_NET_F_GUEST_TSO4)));
	FZ_CHECK(h[1] != 4 ||
		 (features & (1ULL << VIRTIO_NET_F_GUEST_TSO6)));
	FZ_CHECK(!h[1] || partial);
	if (!lax)
		FZ_CHECK(num == nbuf);
	/* Not padded when built in place: virtio needs no padding */
	/* An IPv6 payload may be 65535 bytes on top of the 40 of its header */
	FZ_CHECK(len >= 14 && len <= 14 + 40 + 65535U);
	FZ_CHECK(!memcmp(f + 6, c.our_mac, 6));
	FZ_CHECK(pkt_parse(f, len, &p) == 0);
	if (partial)
		FZ_CHECK(cstart < len && (size_t)cstart + coff + 2 <= len);
	if (p.family != AF_INET && p.family != AF_INET6)
		return;
	if (p.family == AF_INET)
		FZ_CHECK(csum_ok(p.l3.p, 20, 0));
	if (!p.l4.p || partial || h[1])
		return;
	switch (p.proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_ICMPV6:
		if (p.proto == IPPROTO_UDP && p.family == AF_INET &&
		    p.l4.len >= 8 && !p.l4.p[6] && !p.l4.p[7])
			break;
		FZ_CHECK(csum_ok(p.l4.p, p.l4.len,
				 p.family == AF_INET
					 ? csum_pseudo4(p.src4, p.dst4, p.proto,
							(uint16_t)p.l4.len)
					 : csum_pseudo6(&p.src6, &p.dst6,
							p.proto,
							(uint32_t)p.l4.len)));
		break;
	case IPPROTO_ICMP:
		FZ_CHECK(csum_ok(p.l4.p, p.l4.len, 0));
		break;
	}
}

/* Look at new used entries of ring @r; free their chains, check them */
static void reap(unsigned r)
{
	static uint8_t frame[VU_NET_HDR_LEN + FRAME_MAX_LEN + 8192];
	struct gring *g = &rings[r];
	uint16_t now, n, k;
	size_t flen = 0;
	unsigned nbuf = 0, want = 0;

	if (!g->q)
		return;
	used_flags_check(r);
	now = get16(RING(r) + USED_OFF + 2);
	n = (uint16_t)(now - g->used_seen);
	if (g->stopped && clean)
		FZ_CHECK(now == g->stop_used);
	if (clean)
		FZ_CHECK(n <= g->q);
	if (n > g->q)
		n = (uint16_t)g->q;
	for (k = 0; k < n; k++) {
		uint64_t u = RING(r) + USED_OFF + 4 +
			     8 * (uint64_t)((uint16_t)(g->used_seen + k) %
					    g->q);
		uint32_t id, len;
		struct chain *ch;
		unsigned i;

		memcpy(&id, gp(u, 4), 4);
		memcpy(&len, gp(u + 4, 4), 4);
		id = le32toh(id);
		len = le32toh(len);
		if (id >= g->q || !g->head_busy[id]) {
			FZ_CHECK(!clean);
			continue;
		}
		ch = &g->ch[id];
		g->head_busy[id] = false;
		for (i = 0; i < ch->n; i++)
			g->desc_busy[ch->d[i]] = false;
		if (!clean)
			continue;
		if (log_on)
			FZ_CHECK(log_marked(u - 0, 8) &&
				 log_marked(RING(r) + USED_OFF + 2, 2));
		if (r == VU_TX_Q) {
			n_tx_done++;
			FZ_CHECK(len == 0);
			continue;
		}
		FZ_CHECK(len <= ch->cap);
		/* Gather what was written (each descriptor RXB_SIZE max) */
		{
			uint32_t left = len;

			for (i = 0; i < ch->n && left; i++) {
				uint32_t l = MIN(left, (uint32_t)RXB_SIZE);
				uint64_t a = RXB_BASE +
					     (uint64_t)ch->d[i] * RXB_SIZE;
				uint32_t dl;

				memcpy(&dl, gp(RING(r) + 16 * (uint64_t)ch->d[i]
						       + 8, 4),
				       4);
				l = MIN(l, le32toh(dl));
				if (log_on)
					FZ_CHECK(log_marked(a, l));
				if (flen + l <= sizeof(frame))
					memcpy(frame + flen, gp(a, l), l);
				flen += l;
				left -= l;
			}
		}
		/* A frame is num_buffers used entries */
		if (!want) {
			uint16_t num;

			FZ_CHECK(flen >= VU_NET_HDR_LEN);
			memcpy(&num, frame + 10, 2);
			num = le16toh(num);
			want = (features & (1ULL << VIRTIO_NET_F_MRG_RXBUF)) ?
				       num : 1;
			FZ_CHECK(want >= 1 || lax);
			if (!want)
				want = 1;
		}
		nbuf++;
		if (nbuf == want) {
			FZ_CHECK(flen <= sizeof(frame));
			check_rx_frame(frame, frame + VU_NET_HDR_LEN,
				       flen - VU_NET_HDR_LEN, nbuf);
			n_rx_frames++;
			flen = 0;
			nbuf = want = 0;
		}
	}
	/* Frames are published whole */
	if (clean)
		FZ_CHECK(!want);
	g->used_seen = now;
}

static void reap_all(void)
{
	reap(0);
	reap(1);
}

/* Frames from the input into the TX ring, then a kick */
static void op_tx(uint8_t op)
{
	struct gring *g = &rings[VU_TX_Q];
	unsigned n = 1 + g8() % 8, f;
	bool kick = true;

	(void)op;
	if (!g->q)
		return;
	for (f = 0; f < n && in_left; f++) {
		uint8_t ctl = g8();
		size_t len = g16() % (TX_SLOT - 256), pieces = 1 + (ctl & 3);
		uint64_t slot = TXB_BASE + (uint64_t)(tx_slot++ % TX_SLOTS) *
						   TX_SLOT;
		uint8_t *hdr = gp(slot, VU_NET_HDR_LEN);
		uint16_t d[CHAIN_MAX];
		unsigned nd, i, k = 0;
		bool sep = ctl & 4, indirect = ctl & 8, wr = ctl & 16;
		size_t off, each;

		memset(hdr, 0, VU_NET_HDR_LEN);
		if (ctl & 0x80)
			gbytes(hdr, VU_NET_HDR_LEN);
		len = gbytes(gp(slot + VU_NET_HDR_LEN, len), len);
		if (pieces > len)
			pieces = len ? len : 1;
		nd = (unsigned)pieces + (sep ? 1 : 0) + (wr ? 1 : 0);
		if (!desc_alloc(g, indirect ? 1 : nd, d))
			break;
		g->ch[d[0]].n = indirect ? 1 : (uint8_t)nd;
		memcpy(g->ch[d[0]].d, d, sizeof(d));
		g->head_busy[d[0]] = true;

		/* Descriptors, directly or in an indirect table at the end of
		 * the slot
		 */
		{
			uint64_t tbl = slot + TX_SLOT - 16 * CHAIN_MAX;
			uint64_t a[CHAIN_MAX];
			uint32_t l[CHAIN_MAX];
			uint16_t fl[CHAIN_MAX];

			if (sep) {
				a[k] = slot;
				l[k] = VU_NET_HDR_LEN;
				fl[k++] = 0;
				off = VU_NET_HDR_LEN;
			} else {
				off = 0;
			}
			each = (len + (sep ? 0 : VU_NET_HDR_LEN)) / pieces;
			for (i = 0; i < pieces; i++) {
				size_t end = i == pieces - 1 ?
						     VU_NET_HDR_LEN + len :
						     off + each;

				a[k] = slot + off;
				l[k] = (uint32_t)(end - off);
				fl[k++] = 0;
				off = end;
			}
			if (wr) {
				a[k] = slot + TX_SLOT - 160;
				l[k] = 64;
				fl[k++] = VQ_DESC_F_WRITE;
			}
			for (i = 0; i < k; i++) {
				uint16_t fli = fl[i] |
					       (i + 1 < k ? VQ_DESC_F_NEXT : 0);

				if (indirect) {
					uint8_t *t = gp(tbl + 16 * i, 16);
					uint64_t a64 = htole64(a[i]);
					uint32_t l32 = htole32(l[i]);
					uint16_t f16 = htole16(fli),
						 n16 = htole16((uint16_t)(i + 1));

					memcpy(t, &a64, 8);
					memcpy(t + 8, &l32, 4);
					memcpy(t + 12, &f16, 2);
					memcpy(t + 14, &n16, 2);
				} else {
					desc_write(VU_TX_Q, d[i], a[i], l[i],
						   fli,
						   i + 1 < k ? d[i + 1] : 0);
				}
			}
			if (indirect)
				desc_write(VU_TX_Q, d[0], tbl, 16 * k,
					   VQ_DESC_F_INDIRECT, 0);
		}
		avail_push(VU_TX_Q, d[0]);
		if (ctl & 0x40)
			kick = false;
	}
	avail_publish(VU_TX_Q, kick);
	loop_round();
	drain_replies();
}

/* Post RX buffers, kick */
static void op_rx(uint8_t op)
{
	struct gring *g = &rings[VU_RX_Q];
	uint8_t nv = g8(), sv = g8(), pv = g8();
	unsigned n, i, j;
	static const uint32_t sizes[8] = {RXB_SIZE, RXB_SIZE, 512, 100, 64,
					  16, 8, 1};

	(void)op;
	if (!g->q)
		return;
	n = 1 + nv % g->q;
	for (i = 0; i < n; i++) {
		unsigned pieces = 1 + (pv & 3);
		uint32_t sz = sizes[sv & 7], cap = 0;
		uint16_t d[CHAIN_MAX];

		if (!desc_alloc(g, pieces, d))
			break;
		for (j = 0; j < pieces; j++) {
			uint16_t fl = VQ_DESC_F_WRITE;

			if (j + 1 < pieces)
				fl |= VQ_DESC_F_NEXT;
			if ((pv & 0x80) && j == 0)
				fl &= (uint16_t)~VQ_DESC_F_WRITE; /* bad */
			desc_write(VU_RX_Q, d[j],
				   RXB_BASE + (uint64_t)d[j] * RXB_SIZE, sz, fl,
				   j + 1 < pieces ? d[j + 1] : 0);
			cap += sz;
		}
		g->ch[d[0]].n = (uint8_t)pieces;
		memcpy(g->ch[d[0]].d, d, sizeof(d));
		g->ch[d[0]].cap = cap;
		g->head_busy[d[0]] = true;
		avail_push(VU_RX_Q, d[0]);
		if (pv & 0x08) {
			/* The same head again, before it came back: the
			 * daemon must never hold it twice (-EBUSY)
			 */
			avail_push(VU_RX_Q, d[0]);
			clean = false;
		}
		if (pv & 0x40) /* varying sizes */
			sv = (uint8_t)(sv + 1);
	}
	/* NO_INTERRUPT, sometimes */
	put16(RING(VU_RX_Q) + AVAIL_OFF, (pv & 0x20) ? 1 : 0);
	avail_publish(VU_RX_Q, !(pv & 0x10));
	loop_round();
	drain_replies();
}

/* Frames built in place in RX buffers, as TCP does */
static void op_seg(uint8_t op)
{
	static struct tap_seg seg[16];
	static struct iovec iov[128];
	uint8_t v = g8();
	int family = (v & 1) ? AF_INET6 : AF_INET;
	size_t mss = 536 + g16() % 9000, hdr = tap_hdr_len(family);
	size_t plen = tap_seg_tcp_max(&c, family, mss);
	unsigned n = 1 + (v >> 1) % 16, got, f;
	size_t last = g16(), total = SIZE_MAX;
	unsigned iov_max = (v & 0x80) ? 3 : ARRAY_SIZE(iov), niov = 0;

	(void)op;
	got = tap_seg_reserve(&c, hdr + 20, plen, n, seg, iov, iov_max);
	FZ_CHECK(got <= n);
	/* Every frame with its full room, pieces in order, within iov_max */
	for (f = 0; f < got; f++) {
		FZ_CHECK(seg[f].cap == plen);
		FZ_CHECK(seg[f].iov == niov);
		niov += seg[f].niov;
	}
	FZ_CHECK(niov <= iov_max);
	FZ_CHECK(tap_seg_trim(seg, got, iov, &total) == niov);
	FZ_CHECK(total == got * plen);
	for (f = 0; f < got; f++) {
		uint8_t *th = seg[f].l2 + hdr;
		size_t p = seg[f].cap, done = 0;
		unsigned i;
		uint32_t seq = htonl(1000 + f);

		FZ_CHECK(seg[f].hlen == hdr + 20);
		if (f == got - 1 && last < p)
			p = last;
		memset(th, 0, 20);
		th[0] = 0;
		th[1] = 80;
		th[2] = 0x9c;
		th[3] = 0x40;
		memcpy(th + 4, &seq, 4);
		th[12] = 5 << 4;
		th[13] = 0x10;
		th[14] = 0xff;
		for (i = seg[f].iov; i < seg[f].iov + seg[f].niov && done < p;
		     i++) {
			size_t l = MIN(iov[i].iov_len, p - done);

			memset(iov[i].iov_base, 'a' + (int)f, l);
			done += l;
		}
		FZ_CHECK(done == p);
		if (family == AF_INET)
			tap_seg_send(&c, family, &c.ip4.gw, &c.ip4.addr,
				     IPPROTO_TCP, &seg[f], iov, 20, p,
				     p > mss ? (uint16_t)mss : 0);
		else
			tap_seg_send(&c, family, &c.ip6.gw, &c.ip6.addr,
				     IPPROTO_TCP, &seg[f], iov, 20, p,
				     p > mss ? (uint16_t)mss : 0);
		if (p < seg[f].cap)
			break;
	}
	tap_seg_done(&c);
	(void)tap_tx_room(&c);
	loop_round();
	drain_replies();
}

/* Write input bytes anywhere in guest memory */
static void op_scribble(void)
{
	uint64_t gpa = g32() % MEM_SIZE;
	size_t len = g8() % 64;

	clean = false;
	len = MIN(len, MEM_SIZE - gpa);
	gbytes(gp(gpa, len), len);
}

static void op_reconnect(void)
{
	uint8_t v = g8();

	switch (v % 3) {
	case 0: /* we close: EOF */
		break;
	case 1: /* hang-up without EPOLLIN */
		vu_ctrl_handler(&c, loop_ref(REF_FE_CONN, 0, vu_dev.gen),
				EPOLLHUP);
		break;
	default: /* half close, then EOF with whatever was left */
		if (peer >= 0)
			shutdown(peer, SHUT_WR);
		loop_round();
		break;
	}
	connect_fe();
}

/* ---- the run ------------------------------------------------------------- */

/* Open fds: all of them (/proc, costly), or with one poll() those below
 * FD_PROBE, where a leak of this harness lands (POLLNVAL: not open)
 */
#define FD_PROBE 512
static unsigned count_fds(bool all)
{
	static struct pollfd pf[FD_PROBE];
	unsigned n = 0, i;
	DIR *d;

	if (!all) {
		for (i = 0; i < FD_PROBE; i++) {
			pf[i].fd = (int)i;
			pf[i].events = 0;
		}
		FZ_CHECK(poll(pf, FD_PROBE, 0) >= 0);
		for (i = 0; i < FD_PROBE; i++)
			n += !(pf[i].revents & POLLNVAL);
		return n;
	}
	d = opendir("/proc/self/fd");
	FZ_CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Mappings of our memfds other than our own guest memory */
static unsigned count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned n = 0;

	FZ_CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/memfd:fzvu"))
			n++;
	fclose(f);
	return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_log_init();
	lax = !!getenv("FUZZ_VU_LAX");
	verbose = !!getenv("FUZZ_LOG");
	flow_init();
	fz_ctx_base(&c);
	c.mode = MODE_VU;
	tap_frontend_set(&vu_frontend);
	tcp_init(&c);
	env_init();
	uring_init(&c);
	ram_fd = memfd("fzvu-ram", MEM_SIZE);
	ram = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd,
		   0);
	FZ_CHECK(ram != MAP_FAILED);
	rings[0].kick = rings[0].call = rings[0].err = -1;
	rings[1].kick = rings[1].call = rings[1].err = -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned long runs;
	unsigned fds_before, ops = 0, r;

	if (size < 1)
		return 0;
	thorough = runs < 16 || !(runs % MAPS_EVERY);
	fds_before = count_fds(thorough);
	in_p = data;
	in_left = size;

	fz_ctx_base(&c);
	fz_ctx_knob(&c, g8());
	c.mode = MODE_VU;
	c.no_tcp = c.no_udp = c.no_icmp = true;
	memset(ram, 0, MEM_SIZE);
	clean = true;
	features = 0;
	tx_slot = 0;
	batch = false;
	connects = 0;
	rings_reset();
	n_rx_frames = n_tx_done = 0;

	connect_fe();
	while (in_left && ops++ < MAX_OPS) {
		uint8_t op = g8();
		unsigned kind = op & 0x1f;
		bool log_was = log_on;

		if (vu_dev.fd < 0 && kind != OP_RECONNECT && !connect_fe())
			break;
		if (kind >= 1 && kind <= SEND_RARP) {
			op_request(op, kind);
		} else if (kind == 0 || kind == OP_UNKNOWN) {
			op_unknown(op);
		} else {
			switch (kind) {
			case OP_RAW:
				op_raw(op);
				break;
			case OP_SETUP:
				op_setup(op);
				break;
			case OP_TX:
			case OP_TX2:
				op_tx(op);
				break;
			case OP_RX:
			case OP_RX2:
				op_rx(op);
				break;
			case OP_ROUND:
				/* The split bit: a batch starts (see the top) */
				batch = op & 0x80;
				if (batch)
					break;
				loop_round();
				drain_replies_now();
				break;
			case OP_RECONNECT:
				op_reconnect();
				break;
			case OP_SEG:
				op_seg(op);
				break;
			case OP_SCRIBBLE:
				op_scribble();
				break;
			case OP_GET_BASE:
				op_request(op, GET_VRING_BASE);
				break;
			case OP_MEM:
				op_request(op, SET_MEM_TABLE);
				break;
			}
		}
		/* Dirty log checks only for what was written with the log on
		 * before this operation and still on after it
		 */
		if (!log_was) {
			bool keep = log_on;

			log_on = false;
			reap_all();
			log_on = keep;
		} else {
			reap_all();
		}
	}

	if (verbose)
		fprintf(stderr, "fuzz_vhost_user: %s run, %u TX chains back, "
				"%u RX frames checked\n",
			clean ? "clean" : "non-canonical", n_tx_done,
			n_rx_frames);

	/* The front-end goes: nothing of it may stay */
	disconnect();
	FZ_CHECK(n_regs == 0);
	FZ_CHECK(vu_dev.mem.n == 0 && !vu_dev.mem.log_map &&
		 vu_dev.log_call_fd < 0);
	for (r = 0; r < VU_QUEUES; r++)
		FZ_CHECK(vu_dev.vq[r].kick_fd < 0 &&
			 vu_dev.vq[r].call_fd < 0 && vu_dev.vq[r].err_fd < 0 &&
			 !vu_dev.vq[r].desc);
	FZ_CHECK(count_fds(thorough) == fds_before);
	if (thorough)
		FZ_CHECK(count_maps() == 1);
	runs++;
	return 0;
}
