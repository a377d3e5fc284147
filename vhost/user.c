// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * user.c - the vhost-user control protocol, back-end side, for one
 * virtio-net device, as QEMU 10 drives it (the vhost-user specification in
 * QEMU's docs/interop/vhost-user.rst, "the spec").
 *
 * Theory of operation
 *
 * Connection: QEMU connects to the UNIX socket bound by tap/listen.c (-s),
 * or hands us a connected one (--fd). One front-end at a time: a second
 * connection is accepted and closed at once. When the front-end goes (EOF,
 * error, or a message we can't recover from) every trace of it goes too:
 * guest memory is unmapped, kick/call/err/log fds closed, queues reset.
 * Then -1/--one-off ends the process, otherwise we wait for the next
 * connection (QEMU's reconnect), which starts from a clean device.
 *
 * Messages: a 12-byte header (request, flags, size) and size bytes of
 * payload, with file descriptors as SCM_RIGHTS on any part of it. The
 * socket is non-blocking: a message that is all there is read whole, its
 * header and its payload, and handled in the same round; otherwise bytes
 * and fds are accumulated across rounds until it is, so a slow or
 * stalling front-end never blocks the loop. Up to VU_MSGS_PER_ROUND
 * messages are handled per round. Framing errors can't be resynchronised
 * and end the connection: a payload larger than the largest message we know
 * (VU_PAYLOAD_MAX), more than VU_MAX_FDS fds, truncated control data.
 *
 * Requests: one table (vu_reqs) has a row per request we know: its
 * payload size (exact, a maximum, or variable: then its handler checks
 * it), its fd count, what we answer (an ack on NEED_REPLY, data, or a
 * result always) and its handler. vu_handle() checks a message against
 * its row before the handler looks at it; fds a request doesn't consume
 * are closed after it, whatever happened. A request we refuse (bad size, index
 * out of range, ring outside guest memory, out of order, e.g. a kick
 * before the ring is mapped) is logged (rate-limited: QEMU is untrusted),
 * and answered with a non-zero u64 if it carries NEED_REPLY. A refused
 * request that must be answered with data (GET_VRING_BASE) ends the
 * connection instead, as there is no answer QEMU could act on. Unknown
 * requests are refused the same way and the connection goes on.
 *
 * Ring life cycle (the spec, "Starting and stopping rings"):
 * SET_VRING_NUM, _BASE, _ADDR configure a ring, SET_VRING_KICK starts it
 * (its eventfd joins the event loop), with protocol features negotiated
 * SET_VRING_ENABLE turns processing on and off, GET_VRING_BASE stops it
 * and reports where we are: after it we neither touch guest memory nor
 * signal for that ring. SET_MEM_TABLE may come at any time: the new
 * regions are mapped first, and only if all of them map do they replace
 * the old ones (mem.c), after which every ring's pointers are translated
 * again.
 *
 * Ring fds: kick, call and error fds (and SET_LOG_FD's) must be eventfds
 * (vu_eventfd_check()), and are made non-blocking: we write the call and
 * log fds from the loop, and an eventfd QEMU hands us in blocking mode, at
 * its counter's limit, or a pipe nobody reads would stall us there.
 * Anything else is refused with its request.
 *
 * Guest memory: SET_MEM_TABLE and SET_LOG_BASE are checked and mapped by
 * mem.c. A guest access that faults because the front-end shrank a file
 * under us (mem.c, "Memory that shrinks") drops the front-end after the
 * message or kick that made it, or at the end of the round (net.c's
 * vu_fault_check(), also after each message here).
 *
 * Queue pairs (VHOST_USER_PROTOCOL_F_MQ): GET_QUEUE_NUM offers
 * VU_MAX_PAIRS; with queues=N QEMU drives N pairs over this one socket,
 * rings 2p (RX) and 2p + 1 (TX), all sharing the memory table and the
 * features; one-time requests (SET_OWNER, SET_MEM_TABLE, ...) come once.
 * Each ring is started and enabled on its own: the guest enables the
 * pairs it uses, and the others stay disabled.
 *
 * The data path (RX/TX) is in net.c, ring kicks and the end of a loop
 * round included, guest memory in mem.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "demux.h"
#include "log.h"
#include "loop.h"
#include "tap/listen.h"
#include "tap/tap.h"
#include "vhost/net.h"
#include "migrate/announce.h"
#include "migrate/transfer.h"
#include "uring.h"
#include "util.h"

/* Request codes (front-end to back-end) */
enum vu_request {
	VU_GET_FEATURES = 1,
	VU_SET_FEATURES = 2,
	VU_SET_OWNER = 3,
	VU_RESET_OWNER = 4,
	VU_SET_MEM_TABLE = 5,
	VU_SET_LOG_BASE = 6,
	VU_SET_LOG_FD = 7,
	VU_SET_VRING_NUM = 8,
	VU_SET_VRING_ADDR = 9,
	VU_SET_VRING_BASE = 10,
	VU_GET_VRING_BASE = 11,
	VU_SET_VRING_KICK = 12,
	VU_SET_VRING_CALL = 13,
	VU_SET_VRING_ERR = 14,
	VU_GET_PROTOCOL_FEATURES = 15,
	VU_SET_PROTOCOL_FEATURES = 16,
	VU_GET_QUEUE_NUM = 17,
	VU_SET_VRING_ENABLE = 18,
	VU_SEND_RARP = 19,
	VU_SET_DEVICE_STATE_FD = 42,
	VU_CHECK_DEVICE_STATE = 43,
};

#define VU_HDR_LEN 12
#define VU_VERSION 0x1
#define VU_FLAG_REPLY 0x4
#define VU_FLAG_NEED_REPLY 0x8
#define VU_MAX_FDS 8
#define VU_VRING_NOFD 0x100
#define VU_VRING_IDX_MASK 0xff
#define VU_VRING_F_LOG 0x1
/* Largest payload: memory table with VU_MAX_REGIONS regions */
#define VU_PAYLOAD_MAX (8 + 32 * VU_MAX_REGIONS)
/* A handler sent its answer itself (see struct vu_req) */
#define VU_ANSWERED 1
/* Messages handled per wake-up, so a flood can't monopolise the loop */
#define VU_MSGS_PER_ROUND 64

struct vu_state {
	uint32_t index, num;
};

struct vu_addr {
	uint32_t index, flags;
	uint64_t desc, used, avail, log;
};

struct vu_log_msg {
	uint64_t size, offset;
};

struct vu_dev vu_dev = { .fd = -1, .log_call_fd = -1 };

/**
 * struct vu_ctl - the control protocol's own state, beside the device's
 *		   (struct vu_dev)
 * @rx:		a message being received...
 * @rx.buf:	...its bytes
 * @rx.got:	...how many of them are in
 * @rx.fds:	...the descriptors that came with it
 * @rx.nfds:	...how many
 * @inflight:	heads in flight, per queue: outside struct virtq, so that
 *		the queues' state stays on a page or two, and only queues in
 *		use touch their bitmap
 * @efd:	how an eventfd looks to fstat(): from one of ours, before
 *		the sandbox (vu_eventfd_learn())
 * @efd.dev:	its device
 * @efd.type:	its file type
 * @efd.known:	@efd was learned
 */
static struct vu_ctl {
	struct {
		uint8_t buf[VU_HDR_LEN + VU_PAYLOAD_MAX];
		size_t got;
		int fds[VU_MAX_FDS];
		unsigned nfds;
	} rx;
	uint64_t inflight[VU_QUEUES][VQ_INFLIGHT_WORDS];
	struct {
		dev_t dev;
		mode_t type;
		bool known;
	} efd;
} vu_ctl;

static const char *vu_req_name(uint32_t req);

/* Close a ring's (or the log's) eventfd: an interrupt queued on the
 * io_uring may name it (vu_net_flush()), see uring_close()
 */
static void vu_close_fd(int *fd)
{
	uring_close(*fd);
	*fd = -1;
}

/* Stop a ring: no more kicks, no processing, no signals, no polls */
static void vu_vq_stop(struct ctx *c, struct virtq *vq)
{
	if (vq->kick_fd >= 0) {
		loop_del(c, vq->kick_fd);
		vu_close_fd(&vq->kick_fd);
	}
	vq->started = false;
	vu_net_tx_reset((unsigned)(vq - vu_dev.vq));
}

/**
 * vu_dev_reset() - forget everything the front-end set up; keep the connection
 * @c:		execution context
 */
static void vu_dev_reset(struct ctx *c)
{
	struct vu_dev *d = &vu_dev;
	unsigned i;

	for (i = 0; i < VU_QUEUES; i++) {
		vu_vq_stop(c, &d->vq[i]);
		vu_close_fd(&d->vq[i].call_fd);
		vu_close_fd(&d->vq[i].err_fd);
		vq_reset(&d->vq[i]);
	}
	vu_mem_unmap(&d->mem);
	vu_log_unmap(&d->mem);
	memset(&d->mem, 0, sizeof(d->mem));
	vu_close_fd(&d->log_call_fd);
	d->features = d->protocol_features = 0;
}

static void vu_rx_reset(void)
{
	unsigned i;

	for (i = 0; i < vu_ctl.rx.nfds; i++)
		close(vu_ctl.rx.fds[i]);
	vu_ctl.rx.nfds = 0;
	vu_ctl.rx.got = 0;
}

/**
 * vu_disconnect() - the front-end is gone: reset the device, wait for another
 * @c:		execution context
 */
void vu_disconnect(struct ctx *c)
{
	struct vu_dev *d = &vu_dev;

	vu_dev_reset(c);
	vu_rx_reset();
	if (d->fd >= 0) {
		loop_del(c, d->fd);
		close(d->fd);
	}
	d->fd = -1;
	d->appeared = false;
	migrate_front_end_gone(c);
	announce_front_end_gone();

	if (migrate_source_done()) {
		info("vhost-user: front-end disconnected after migrating "
		     "away, lingering (--one-off has no effect now)");
	} else if (c->one_off) {
		info("vhost-user: front-end disconnected, exiting (one-off)");
		c->quit = true;
	} else {
		info("vhost-user: front-end disconnected, waiting for the "
		     "next one");
	}
}

static void vu_attach(struct ctx *c, int fd)
{
	unsigned i;

	vu_dev.fd = fd;
	vu_dev.gen = loop_gen_next();
	vu_dev.appeared = false;
	for (i = 0; i < VU_QUEUES; i++)
		vq_reset(&vu_dev.vq[i]);
	vu_rx_reset();
	if (loop_add(c, fd, EPOLLIN | EPOLLRDHUP,
		     loop_ref(REF_FE_CONN, 0, vu_dev.gen)))
		die_perror("epoll_ctl");
}

/**
 * vu_init() - set up the vhost-user front-end: inherited fd or listener
 * @c:		execution context
 *
 * Return: 0; dies on failures, which are configuration errors here
 */
int vu_init(struct ctx *c)
{
	unsigned i;
	int rc;

	for (i = 0; i < VU_QUEUES; i++) {
		vu_dev.vq[i].inflight = vu_ctl.inflight[i];
		vq_reset(&vu_dev.vq[i]);
	}
	/* Now or never: the sandbox allows no eventfd(), no sigaction() */
	if ((rc = vu_eventfd_learn()))
		die("vhost-user: can't create an eventfd: %s", strerror(-rc));
	if ((rc = vu_mem_guard(&vu_dev.mem)))
		die("vhost-user: can't catch SIGBUS: %s", strerror(-rc));

	if (c->fd_inherited >= 0) {
		vu_attach(c, tap_inherited(c));
		return 0;
	}

	tap_listen(c);
	info("You can now start qemu with:");
	info("    qemu-system-x86_64 ... -chardev socket,id=chr0,path=%s "
	     "-netdev vhost-user,id=n0,chardev=chr0 "
	     "-device virtio-net-pci,netdev=n0 "
	     "-object memory-backend-memfd,id=mem0,share=on,size=<RAM> "
	     "-numa node,memdev=mem0", c->sock_path);
	return 0;
}

/**
 * vu_listen_handler() - accept a front-end, or turn away an extra one
 * @c:		execution context
 */
void vu_listen_handler(struct ctx *c)
{
	int fd = tap_accept(c);

	if (fd < 0)
		return;
	if (vu_dev.fd >= 0) {
		struct pollfd p = { .fd = vu_dev.fd, .events = POLLRDHUP };

		/* The old front-end may be gone, with its EOF not read yet */
		if (poll(&p, 1, 0) > 0 &&
		    (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
			vu_disconnect(c);
		if (c->quit) {
			close(fd);
			return;
		}
	}
	if (vu_dev.fd >= 0) {
		info_rl("vhost-user: a front-end is already connected, "
			"refusing another one");
		close(fd);
		return;
	}
	info("vhost-user: front-end connected");
	vu_attach(c, fd);
}

/**
 * vu_send_reply() - send a reply with a payload
 * @req:	the request answered
 * @payload:	its payload
 * @len:	length of @payload, at most 8 bytes
 *
 * Return: 0, or -errno if it didn't all go
 */
static int vu_send_reply(uint32_t req, const void *payload, uint32_t len)
{
	uint8_t buf[VU_HDR_LEN + 8];
	uint32_t flags = VU_VERSION | VU_FLAG_REPLY;
	ssize_t n;

	memcpy(buf, &req, 4);
	memcpy(buf + 4, &flags, 4);
	memcpy(buf + 8, &len, 4);
	memcpy(buf + VU_HDR_LEN, payload, len);
	n = send(vu_dev.fd, buf, VU_HDR_LEN + len,
		 MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n != (ssize_t)(VU_HDR_LEN + len))
		return n < 0 ? -errno : -EIO;
	return 0;
}

static int vu_reply_u64(uint32_t req, uint64_t v)
{
	return vu_send_reply(req, &v, sizeof(v));
}

/* A received message, split up */
struct vu_msg {
	uint32_t req, flags, size;
	const uint8_t *p;
};

/* Check payload size and fd count; log and refuse otherwise */
static int vu_expect(const struct vu_msg *m, uint32_t size, unsigned nfds)
{
	if (m->size != size) {
		warn_rl("vhost-user: %s: payload of %u bytes, expected %u",
			vu_req_name(m->req), m->size, size);
		return -EINVAL;
	}
	if (vu_ctl.rx.nfds != nfds) {
		warn_rl("vhost-user: %s: %u file descriptors, expected %u",
			vu_req_name(m->req), vu_ctl.rx.nfds, nfds);
		return -EINVAL;
	}
	return 0;
}

/* Take the @i-th fd of the message: we own it from now on */
static int vu_take_fd(unsigned i)
{
	int fd = vu_ctl.rx.fds[i];

	vu_ctl.rx.fds[i] = -1;
	return fd;
}

static uint64_t vu_u64(const struct vu_msg *m)
{
	uint64_t v;

	memcpy(&v, m->p, 8);
	return v;
}

/* Index of a ring from a state message, or -EINVAL (logged) */
static int vu_ring_index(const struct vu_msg *m, uint32_t index)
{
	if (index >= VU_QUEUES) {
		warn_rl("vhost-user: %s: ring %u out of range",
			vu_req_name(m->req), index);
		return -EINVAL;
	}
	return (int)index;
}

/* Translate the rings of @vq again; log if they're no longer mapped */
static void vu_vq_retranslate(struct virtq *vq, unsigned i)
{
	if (!vq->size || !vq->addr_set)
		return;
	if (vq_translate(vq, &vu_dev.mem)) {
		warn_rl("vhost-user: ring %u is outside guest memory now", i);
		vq->started = false;
	}
}

/* The RX ring can take frames: say hello to the guest, once */
static void vu_check_appeared(struct ctx *c)
{
	if (!vu_dev.appeared && vu_net_connected(c)) {
		vu_dev.appeared = true;
		demux_guest_appeared(c);
	}
}

/* The features we offer: all, or upstream's set with --virtio-compat */
static uint64_t vu_features_offer(const struct ctx *c)
{
	return c->virtio_compat ? VU_FEATURES_COMPAT : VU_FEATURES;
}

/**
 * vu_set_features() - SET_FEATURES: the features of our offer it accepts
 * @c:		execution context
 * @m:		the message
 *
 * Return: 0 or -EINVAL
 */
static int vu_set_features(struct ctx *c, const struct vu_msg *m)
{
	uint64_t f = vu_u64(m);
	bool ev = !!(f & (1ULL << VIRTIO_RING_F_EVENT_IDX));
	unsigned i;

	if (!(f & (1ULL << VIRTIO_F_VERSION_1))) {
		warn_rl("vhost-user: SET_FEATURES without VERSION_1: "
			"legacy virtio is not supported");
		return -EINVAL;
	}
	if (f & ~vu_features_offer(c)) {
		warn_rl("vhost-user: SET_FEATURES: 0x%llx not offered",
			(unsigned long long)(f & ~vu_features_offer(c)));
		return -EINVAL;
	}
	vu_dev.features = f;
	vu_dev.mem.log_on = !!(f & (1ULL << VHOST_F_LOG_ALL));
	for (i = 0; i < VU_QUEUES; i++) {
		struct virtq *vq = &vu_dev.vq[i];

		if (vq->event_idx == ev)
			continue;
		vq->event_idx = ev;
		vq_notify_reset(vq);
	}
	debug("vhost-user: features 0x%llx", (unsigned long long)f);
	if (!(f & (1ULL << VHOST_USER_F_PROTOCOL_FEATURES))) {
		for (i = 0; i < VU_QUEUES; i++)
			vu_dev.vq[i].enabled = true;
		vu_check_appeared(c);
	}
	return 0;
}

/**
 * vu_set_mem_table() - SET_MEM_TABLE: map the guest's memory regions
 * @c:		execution context, unused
 * @m:		the message, with the regions and their descriptors
 *
 * Return: 0 or -errno
 */
static int vu_set_mem_table(struct ctx *c, const struct vu_msg *m)
{
	uint32_t n, i;
	int rc;

	(void)c;
	if (m->size < 8) {
		warn_rl("vhost-user: SET_MEM_TABLE: %u bytes", m->size);
		return -EINVAL;
	}
	memcpy(&n, m->p, 4);
	if (!n || n > VU_MAX_REGIONS) {
		warn_rl("vhost-user: SET_MEM_TABLE: %u regions", n);
		return -EINVAL;
	}
	if ((rc = vu_expect(m, 8 + 32 * n, n)))
		return rc;
	if ((rc = vu_mem_map(&vu_dev.mem, m->p + 8, n, vu_ctl.rx.fds)))
		return rc;
	for (i = 0; i < VU_QUEUES; i++)
		vu_vq_retranslate(&vu_dev.vq[i], i);
	return 0;
}

static int vu_set_log_base(struct ctx *c, const struct vu_msg *m)
{
	struct vu_log_msg l;

	(void)c;
	memcpy(&l, m->p, sizeof(l));
	return vu_log_map(&vu_dev.mem, vu_ctl.rx.fds[0], l.size, l.offset);
}

static int vu_set_log_fd(struct ctx *c, const struct vu_msg *m)
{
	int rc;

	(void)c;
	(void)m;
	if ((rc = vu_eventfd_check(vu_ctl.rx.fds[0]))) {
		warn_rl("vhost-user: SET_LOG_FD: the fd isn't an eventfd (%s), "
			"refused", strerror(-rc));
		return -EINVAL;
	}
	vu_close_fd(&vu_dev.log_call_fd);
	vu_dev.log_call_fd = vu_take_fd(0);
	return 0;
}

/**
 * vu_set_vring_num() - SET_VRING_NUM: the size of a ring
 * @c:		execution context, unused
 * @m:		the message
 *
 * Return: 0 or -EINVAL
 */
static int vu_set_vring_num(struct ctx *c, const struct vu_msg *m)
{
	struct vu_state s;
	struct virtq *vq;
	int i;

	(void)c;
	memcpy(&s, m->p, sizeof(s));
	if ((i = vu_ring_index(m, s.index)) < 0)
		return i;
	vq = &vu_dev.vq[i];
	if (!s.num || s.num > VQ_MAX_SIZE || (s.num & (s.num - 1))) {
		warn_rl("vhost-user: SET_VRING_NUM: bad size %u", s.num);
		return -EINVAL;
	}
	if (vq->started) {
		warn_rl("vhost-user: SET_VRING_NUM: ring %u is running", i);
		return -EBUSY;
	}
	vq->size = s.num;
	vq->desc = vq->avail = vq->used = NULL;
	vu_vq_retranslate(vq, i);
	return 0;
}

/**
 * vu_set_vring_addr() - SET_VRING_ADDR: where a ring's parts are
 * @c:		execution context
 * @m:		the message
 *
 * The addresses are the front-end's (QEMU's virtual ones), translated
 * through the memory table.
 *
 * Return: 0, or -EINVAL, -EFAULT
 */
static int vu_set_vring_addr(struct ctx *c, const struct vu_msg *m)
{
	struct virtq *vq, tmp;
	struct vu_addr a;
	int i;

	memcpy(&a, m->p, sizeof(a));
	if ((i = vu_ring_index(m, a.index)) < 0)
		return i;
	vq = &vu_dev.vq[i];
	if (!vq->size) {
		warn_rl("vhost-user: SET_VRING_ADDR: ring %u has no size "
			"(SET_VRING_NUM first)", i);
		return -EINVAL;
	}
	if (!vu_dev.mem.n) {
		warn_rl("vhost-user: SET_VRING_ADDR: no memory table yet");
		return -EINVAL;
	}
	if (a.flags & ~VU_VRING_F_LOG) {
		warn_rl("vhost-user: SET_VRING_ADDR: unknown flags 0x%x",
			a.flags);
		return -EINVAL;
	}
	/* Try on a copy: a refused request leaves the ring as it was */
	tmp = *vq;
	tmp.desc_qva = a.desc;
	tmp.used_qva = a.used;
	tmp.avail_qva = a.avail;
	tmp.addr_set = true;
	if (vq_translate(&tmp, &vu_dev.mem)) {
		warn_rl("vhost-user: SET_VRING_ADDR: ring %u (desc 0x%llx "
			"avail 0x%llx used 0x%llx, size %u) is not in guest "
			"memory", i, (unsigned long long)a.desc,
			(unsigned long long)a.avail,
			(unsigned long long)a.used, vq->size);
		return -EFAULT;
	}
	*vq = tmp;
	vq->log_gpa = a.log;
	vq->log_flag = a.flags & VU_VRING_F_LOG;
	vq->used_idx = vq_used_idx_guest(vq);
	vq->broken = false;
	vu_check_appeared(c);
	return 0;
}

/**
 * vu_set_vring_base() - SET_VRING_BASE: the index a ring starts from
 * @c:		execution context, unused
 * @m:		the message
 *
 * Return: 0 or -EINVAL
 */
static int vu_set_vring_base(struct ctx *c, const struct vu_msg *m)
{
	struct vu_state s;
	int i;

	(void)c;
	memcpy(&s, m->p, sizeof(s));
	if ((i = vu_ring_index(m, s.index)) < 0)
		return i;
	if (s.num > UINT16_MAX) {
		warn_rl("vhost-user: SET_VRING_BASE: bad index %u", s.num);
		return -EINVAL;
	}
	if (vu_dev.vq[i].started) {
		warn_rl("vhost-user: SET_VRING_BASE: ring %u is running", i);
		return -EBUSY;
	}
	vu_dev.vq[i].last_avail = vu_dev.vq[i].avail_seen = (uint16_t)s.num;
	return 0;
}

/**
 * vu_get_vring_base() - GET_VRING_BASE: stop a ring, report where it stopped
 * @c:		execution context
 * @m:		the message
 *
 * Return: 0 or -errno
 */
static int vu_get_vring_base(struct ctx *c, const struct vu_msg *m)
{
	struct vu_state s;
	struct virtq *vq;
	int i;

	memcpy(&s, m->p, sizeof(s));
	if ((i = vu_ring_index(m, s.index)) < 0)
		return i;
	vq = &vu_dev.vq[i];

	/* Last interrupt and log notification, before we go quiet */
	vu_net_flush(c);
	vu_vq_stop(c, vq);
	vu_close_fd(&vq->call_fd);
	vq->need_call = false;

	s.num = vq->last_avail;
	debug("vhost-user: ring %u stopped at %u", i, s.num);
	return vu_send_reply(m->req, &s, sizeof(s));
}

/**
 * vu_eventfd_learn() - see what an eventfd looks like, while we may still
 *			create one (vu_init(), before the sandbox)
 *
 * Return: 0, or -errno if we can't create one
 */
int vu_eventfd_learn(void)
{
	struct stat st;
	int fd, rc = 0;

	if (vu_ctl.efd.known)
		return 0;
	if ((fd = eventfd(0, EFD_CLOEXEC)) < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
	} else {
		vu_ctl.efd.dev = st.st_dev;
		vu_ctl.efd.type = st.st_mode & S_IFMT;
		vu_ctl.efd.known = true;
	}
	close(fd);
	return rc;
}

/**
 * vu_eventfd_check() - is a descriptor from the front-end an eventfd?
 *			Make it non-blocking
 * @fd:		descriptor
 *
 * An eventfd is a file of the kernel's anonymous inode file system, with
 * no file type, as signalfds, timerfds, epoll and inotify fds are too; it
 * takes a write of eight zero bytes, which they refuse, and which adds 0
 * to its counter and can't block, whatever the counter says (a reader may
 * wake up for nothing: a spurious interrupt at most). Then O_NONBLOCK,
 * which QEMU's own eventfds have already: it's the file's flag, shared
 * with QEMU.
 *
 * Return: 0 if it is one, now non-blocking; -EINVAL if it isn't, -errno
 *	   if we can't tell
 */
int vu_eventfd_check(int fd)
{
	static const uint64_t zero;
	struct stat st;
	int fl, rc;

	if ((rc = vu_eventfd_learn()))
		return rc;
	if (fstat(fd, &st))
		return -errno;
	if (st.st_dev != vu_ctl.efd.dev ||
	    (st.st_mode & S_IFMT) != vu_ctl.efd.type)
		return -EINVAL;
	if (write(fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero))
		return -EINVAL;
	if ((fl = fcntl(fd, F_GETFL)) < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	return 0;
}

/**
 * vu_vring_fd() - KICK, CALL, ERR: ring index and NOFD bit, 0 or 1 descriptor
 * @m:		the message
 * @fd:		set to the descriptor, -1 if none
 *
 * Return: the ring's index, or -EINVAL
 */
static int vu_vring_fd(const struct vu_msg *m, int *fd)
{
	uint64_t v;
	int i, rc;

	*fd = -1;
	v = vu_u64(m);
	if (v & ~(uint64_t)(VU_VRING_IDX_MASK | VU_VRING_NOFD)) {
		warn_rl("vhost-user: %s: bad payload 0x%llx",
			vu_req_name(m->req), (unsigned long long)v);
		return -EINVAL;
	}
	if ((i = vu_ring_index(m, v & VU_VRING_IDX_MASK)) < 0)
		return i;
	if (vu_ctl.rx.nfds != ((v & VU_VRING_NOFD) ? 0U : 1U)) {
		warn_rl("vhost-user: %s: %u fds with%s NOFD",
			vu_req_name(m->req), vu_ctl.rx.nfds,
			(v & VU_VRING_NOFD) ? "" : "out");
		return -EINVAL;
	}
	if (vu_ctl.rx.nfds && (rc = vu_eventfd_check(vu_ctl.rx.fds[0]))) {
		warn_rl("vhost-user: %s: ring %i: the fd isn't an eventfd "
			"(%s), refused", vu_req_name(m->req), i,
			strerror(-rc));
		return -EINVAL;
	}
	if (vu_ctl.rx.nfds)
		*fd = vu_take_fd(0);
	return i;
}

/**
 * vu_set_vring_kick() - SET_VRING_KICK: a ring's kick descriptor; it starts
 * @c:		execution context
 * @m:		the message
 *
 * Return: 0 or -errno
 */
static int vu_set_vring_kick(struct ctx *c, const struct vu_msg *m)
{
	struct virtq *vq;
	int i, fd;

	if ((i = vu_vring_fd(m, &fd)) < 0)
		return i;
	vq = &vu_dev.vq[i];
	if (fd < 0) {
		warn_rl("vhost-user: SET_VRING_KICK: ring %u: polling "
			"without a kick fd is not supported", i);
		return -EINVAL;
	}
	if (!vq->desc) {
		warn_rl("vhost-user: SET_VRING_KICK: ring %u is not set up "
			"(memory table, size and addresses first)", i);
		close(fd);
		return -EINVAL;
	}
	vu_vq_stop(c, vq);
	vq->kick_gen = loop_gen_next();
	/* Edge-triggered, and never read: each write of the driver's is an
	 * edge (eventfds wake their waiters on every write), and the counter
	 * it leaves can't overflow in practice (2^64 - 1 kicks). That saves
	 * a read() per kick.
	 */
	if (loop_add(c, fd, EPOLLIN | EPOLLET,
		     loop_ref(REF_FE_KICK, i, vq->kick_gen))) {
		warn_perror("vhost-user: epoll_ctl on kick fd");
		close(fd);
		return -EINVAL;
	}
	vq->kick_fd = fd;
	vq->started = true;
	vq->broken = false;
	vq_notify_reset(vq);
	if (!(vu_dev.features & (1ULL << VHOST_USER_F_PROTOCOL_FEATURES)))
		vq->enabled = true;
	debug("vhost-user: ring %u started at %u", i, vq->last_avail);

	if (i % 2 == VU_TX_Q)
		vu_net_tx(c, i);
	vu_check_appeared(c);
	/* Rings started after we gave our connections away: the migration
	 * failed or was cancelled, and the guest runs here again
	 */
	migrate_device_started(c);
	announce_device_started(c);
	return 0;
}

/**
 * vu_vring_call() - SET_VRING_CALL, SET_VRING_ERR: call or error descriptor
 * @m:		the message
 * @err:	it's the error descriptor
 *
 * Return: 0 or -EINVAL
 */
static int vu_vring_call(const struct vu_msg *m, bool err)
{
	uint64_t one = 1;
	struct virtq *vq;
	int i, fd;

	if ((i = vu_vring_fd(m, &fd)) < 0)
		return i;
	vq = &vu_dev.vq[i];
	if (err) {
		vu_close_fd(&vq->err_fd);
		vq->err_fd = fd;
		return 0;
	}
	vu_close_fd(&vq->call_fd);
	vq->call_fd = fd;
	/* Unstick a driver that waited for an interrupt across reconnects */
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		debug("vhost-user: call fd write: %s", strerror(errno));
	return 0;
}

/**
 * vu_set_vring_enable() - SET_VRING_ENABLE: enable or disable a ring
 * @c:		execution context
 * @m:		the message
 *
 * Return: 0 or -EINVAL
 */
static int vu_set_vring_enable(struct ctx *c, const struct vu_msg *m)
{
	struct vu_state s;
	int i;

	memcpy(&s, m->p, sizeof(s));
	if ((i = vu_ring_index(m, s.index)) < 0)
		return i;
	if (s.num > 1) {
		warn_rl("vhost-user: SET_VRING_ENABLE: bad value %u", s.num);
		return -EINVAL;
	}
	vu_dev.vq[i].enabled = s.num;
	debug("vhost-user: ring %u %s", i, s.num ? "enabled" : "disabled");
	if (s.num && i % 2 == VU_TX_Q)
		vu_net_tx(c, i);
	vu_check_appeared(c);
	/* A migration target may have waited for this to go on */
	if (s.num)
		migrate_device_started(c);
	return 0;
}

/* SET_DEVICE_STATE_FD payload */
struct vu_transfer {
	uint32_t direction, phase;
};

/**
 * vu_set_device_state_fd() - SET_DEVICE_STATE_FD: start a migration transfer
 * @c:		execution context
 * @m:		the message, with the pipe
 *
 * Reply first (0x100: no fd of ours, use the pipe), then the transfer runs from
 * the loop (migrate/transfer.c).
 *
 * Return: VU_ANSWERED (replied, whether or not the transfer starts), -EINVAL,
 *	or -ECONNABORTED if the reply failed
 */
static int vu_set_device_state_fd(struct ctx *c, const struct vu_msg *m)
{
	struct vu_transfer t;
	int fd, rc;

	memcpy(&t, m->p, sizeof(t));
	fd = vu_take_fd(0);
	if (t.phase != 0 || t.direction > MIGRATE_LOAD) {
		warn_rl("vhost-user: SET_DEVICE_STATE_FD: direction %u, "
			"phase %u not supported", t.direction, t.phase);
		close(fd);
		return -EINVAL;
	}
	if (vu_reply_u64(m->req, 0x100)) {
		close(fd);
		return -ECONNABORTED;
	}
	rc = migrate_state_fd(c, t.direction, fd);
	if (rc)
		debug("vhost-user: device state transfer refused: %s",
		      strerror(-rc));
	return VU_ANSWERED;
}

/* The deferred answer to CHECK_DEVICE_STATE: migrate_check()'s callback */
static void vu_device_state_reply(struct ctx *c, int result)
{
	if (vu_dev.fd < 0)
		return;
	if (vu_reply_u64(VU_CHECK_DEVICE_STATE, result ? 1 : 0))
		vu_disconnect(c);
}

static int vu_get_features(struct ctx *c, const struct vu_msg *m)
{
	return vu_reply_u64(m->req, vu_features_offer(c));
}

static int vu_get_protocol_features(struct ctx *c, const struct vu_msg *m)
{
	(void)c;
	return vu_reply_u64(m->req, VU_PROTOCOL_FEATURES);
}

static int vu_get_queue_num(struct ctx *c, const struct vu_msg *m)
{
	(void)c;
	return vu_reply_u64(m->req, VU_MAX_PAIRS);
}

static int vu_set_protocol_features(struct ctx *c, const struct vu_msg *m)
{
	uint64_t f = vu_u64(m);

	(void)c;
	if (f & ~VU_PROTOCOL_FEATURES) {
		warn_rl("vhost-user: SET_PROTOCOL_FEATURES: 0x%llx not offered",
			(unsigned long long)f);
		return -EINVAL;
	}
	vu_dev.protocol_features = f;
	return 0;
}

static int vu_reset_owner(struct ctx *c, const struct vu_msg *m)
{
	(void)m;
	vu_dev_reset(c);
	return 0;
}

static int vu_set_vring_call(struct ctx *c, const struct vu_msg *m)
{
	(void)c;
	return vu_vring_call(m, false);
}

static int vu_set_vring_err(struct ctx *c, const struct vu_msg *m)
{
	(void)c;
	return vu_vring_call(m, true);
}

/* QEMU announces the guest (the payload is its MAC, which isn't what the
 * pod's network knows): we announce the pod
 */
static int vu_send_rarp(struct ctx *c, const struct vu_msg *m)
{
	(void)m;
	announce_send_rarp(c);
	return 0;
}

static int vu_check_device_state(struct ctx *c, const struct vu_msg *m)
{
	int rc = migrate_check(c, vu_device_state_reply);

	/* In progress: vu_device_state_reply() answers, when done */
	if (rc == -EINPROGRESS)
		return VU_ANSWERED;
	return vu_reply_u64(m->req, rc ? 1 : 0) ? -ECONNABORTED : VU_ANSWERED;
}

/* What we say back to a request */
enum vu_answer {
	VU_ACK,		/* 0 or 1 if the front-end asked (NEED_REPLY) */
	VU_DATA,	/* the handler answers with data: a refusal ends the
			 * connection, as there is nothing QEMU could act on
			 */
	VU_RESULT,	/* always 0 or 1, unless the handler answered */
	VU_LOG_RESULT,	/* VU_RESULT with LOG_SHMFD, else VU_NONE */
	VU_NONE,	/* nothing, whatever the flags say */
};

/* The payload size is: exactly .size, at most .size, or the handler's */
enum vu_size_rule {
	VU_SIZE_EQ,
	VU_SIZE_MAX,
	VU_SIZE_ANY,
};

/* .nfds: the handler checks the fd count */
#define VU_FDS_ANY	0xff

/**
 * struct vu_req - what a request must carry, and who handles it
 * @name:	for the log
 * @rule:	how @size bounds the payload
 * @size:	payload size
 * @nfds:	file descriptors, or VU_FDS_ANY
 * @answer:	what we say back (enum vu_answer)
 * @fn:		handler, called once the message passed the checks, NULL
 *		if there is nothing to do; returns 0, -errno to refuse the
 *		request, -ECONNABORTED to end the connection, or
 *		VU_ANSWERED if it sent the answer itself
 */
struct vu_req {
	const char *name;
	uint8_t rule;
	uint16_t size;
	uint8_t nfds;
	uint8_t answer;
	int (*fn)(struct ctx *c, const struct vu_msg *m);
};

#define VU_REQ(code, r, sz, fds, ans, f)				\
	[VU_##code] = { .name = #code, .rule = VU_SIZE_##r, .size = (sz), \
			.nfds = (fds), .answer = (ans), .fn = (f) }

/* Every request we know: the checks of each before its handler */
static const struct vu_req vu_reqs[] = {
	VU_REQ(GET_FEATURES, MAX, 8, 0, VU_DATA, vu_get_features),
	VU_REQ(SET_FEATURES, EQ, 8, 0, VU_ACK, vu_set_features),
	VU_REQ(SET_OWNER, EQ, 0, 0, VU_ACK, NULL),
	VU_REQ(RESET_OWNER, EQ, 0, 0, VU_ACK, vu_reset_owner),
	VU_REQ(SET_MEM_TABLE, ANY, 0, VU_FDS_ANY, VU_ACK, vu_set_mem_table),
	VU_REQ(SET_LOG_BASE, EQ, sizeof(struct vu_log_msg), 1, VU_LOG_RESULT,
	       vu_set_log_base),
	VU_REQ(SET_LOG_FD, MAX, 8, 1, VU_ACK, vu_set_log_fd),
	VU_REQ(SET_VRING_NUM, EQ, sizeof(struct vu_state), 0, VU_ACK,
	       vu_set_vring_num),
	VU_REQ(SET_VRING_ADDR, EQ, sizeof(struct vu_addr), 0, VU_ACK,
	       vu_set_vring_addr),
	VU_REQ(SET_VRING_BASE, EQ, sizeof(struct vu_state), 0, VU_ACK,
	       vu_set_vring_base),
	VU_REQ(GET_VRING_BASE, EQ, sizeof(struct vu_state), 0, VU_DATA,
	       vu_get_vring_base),
	VU_REQ(SET_VRING_KICK, EQ, 8, VU_FDS_ANY, VU_ACK, vu_set_vring_kick),
	VU_REQ(SET_VRING_CALL, EQ, 8, VU_FDS_ANY, VU_ACK, vu_set_vring_call),
	VU_REQ(SET_VRING_ERR, EQ, 8, VU_FDS_ANY, VU_ACK, vu_set_vring_err),
	VU_REQ(GET_PROTOCOL_FEATURES, MAX, 8, 0, VU_DATA,
	       vu_get_protocol_features),
	VU_REQ(SET_PROTOCOL_FEATURES, EQ, 8, 0, VU_ACK,
	       vu_set_protocol_features),
	VU_REQ(GET_QUEUE_NUM, MAX, 8, 0, VU_DATA, vu_get_queue_num),
	VU_REQ(SET_VRING_ENABLE, EQ, sizeof(struct vu_state), 0, VU_ACK,
	       vu_set_vring_enable),
	VU_REQ(SEND_RARP, EQ, 8, 0, VU_ACK, vu_send_rarp),
	VU_REQ(SET_DEVICE_STATE_FD, EQ, sizeof(struct vu_transfer), 1,
	       VU_RESULT, vu_set_device_state_fd),
	VU_REQ(CHECK_DEVICE_STATE, EQ, 0, 0, VU_DATA, vu_check_device_state),
};

/* The table's row for a request, NULL if we don't know it */
static const struct vu_req *vu_req_find(uint32_t req)
{
	if (req < ARRAY_SIZE(vu_reqs) && vu_reqs[req].name)
		return &vu_reqs[req];
	return NULL;
}

static const char *vu_req_name(uint32_t req)
{
	const struct vu_req *r = vu_req_find(req);

	return r ? r->name : "unknown";
}

/**
 * vu_req_check() - check payload size and descriptors against the request's row
 * @r:		the row of vu_reqs
 * @m:		the message
 *
 * Return: 0 or -EINVAL
 */
static int vu_req_check(const struct vu_req *r, const struct vu_msg *m)
{
	if (r->rule == VU_SIZE_MAX && m->size > r->size) {
		warn_rl("vhost-user: %s: payload of %u bytes, expected at "
			"most %u", r->name, m->size, r->size);
		return -EINVAL;
	}
	if (r->rule == VU_SIZE_EQ)
		return vu_expect(m, r->size, r->nfds == VU_FDS_ANY ?
					     vu_ctl.rx.nfds : r->nfds);
	if (r->nfds != VU_FDS_ANY && vu_ctl.rx.nfds != r->nfds) {
		warn_rl("vhost-user: %s: %u file descriptors, expected %u",
			r->name, vu_ctl.rx.nfds, r->nfds);
		return -EINVAL;
	}
	return 0;
}

/**
 * vu_handle() - handle one complete message
 * @c:		execution context
 * @m:		the message
 *
 * Check it against its row of vu_reqs, call the handler, answer as the row
 * says.
 *
 * Return: 0 to go on, -ECONNABORTED to drop the connection
 */
static int vu_handle(struct ctx *c, const struct vu_msg *m)
{
	const struct vu_req *r = vu_req_find(m->req);
	unsigned answer = r ? r->answer : VU_ACK;
	int rc;

	trace("vhost-user: %s (%u), %u bytes, %u fds", vu_req_name(m->req),
	      m->req, m->size, vu_ctl.rx.nfds);

	if (!r) {
		warn_rl("vhost-user: unsupported request %u (%s), %u bytes",
			m->req, vu_req_name(m->req), m->size);
		rc = -EOPNOTSUPP;
	} else if (!(rc = vu_req_check(r, m)) && r->fn) {
		rc = r->fn(c, m);
	}
	if (rc == -ECONNABORTED)
		return rc;

	if (answer == VU_LOG_RESULT)
		answer = (vu_dev.protocol_features &
			  (1ULL << VHOST_USER_PROTOCOL_F_LOG_SHMFD)) ?
			 VU_RESULT : VU_NONE;

	switch (answer) {
	case VU_DATA:
		/* A request that wants data and got none can't go on */
		return rc < 0 ? -ECONNABORTED : 0;
	case VU_RESULT:
		if (rc == VU_ANSWERED)
			return 0;
		return vu_reply_u64(m->req, rc ? 1 : 0) ? -ECONNABORTED : 0;
	case VU_ACK:
		if ((m->flags & VU_FLAG_NEED_REPLY) &&
		    vu_reply_u64(m->req, rc ? 1 : 0))
			return -ECONNABORTED;
		return 0;
	default:
		return 0;
	}
}

/**
 * vu_collect_fds() - collect descriptors from control messages
 * @mh:		the message received
 *
 * Return: 0, -EPROTO if there are too many or they were truncated
 */
static int vu_collect_fds(struct msghdr *mh)
{
	struct cmsghdr *cm;
	int rc = 0;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		unsigned n, i;
		int *fds;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)CMSG_DATA(cm);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, fds + i, sizeof(fd));
			if (vu_ctl.rx.nfds < VU_MAX_FDS) {
				vu_ctl.rx.fds[vu_ctl.rx.nfds++] = fd;
			} else {
				close(fd);
				rc = -EPROTO;
			}
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		rc = -EPROTO;
	return rc;
}

/**
 * vu_recv() - read what's there of the message being received
 *
 * Header and payload alike. At most one read per byte of the largest message,
 * so a front-end that trickles a byte at a time costs its own message's length.
 *
 * Return: 1 once it is complete, 0 to wait for more, negative to disconnect
 */
static int vu_recv(void)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VU_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	uint32_t size;
	ssize_t n;

	for (;;) {
		size_t want;

		if (vu_ctl.rx.got < VU_HDR_LEN) {
			want = VU_HDR_LEN - vu_ctl.rx.got;
		} else {
			memcpy(&size, vu_ctl.rx.buf + 8, 4);
			want = VU_HDR_LEN + size - vu_ctl.rx.got;
		}
		iov.iov_base = vu_ctl.rx.buf + vu_ctl.rx.got;
		iov.iov_len = want;
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		n = recvmsg(vu_dev.fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -errno;
		}
		if (vu_collect_fds(&mh)) {
			warn_rl("vhost-user: more than %u fds with one message, "
				"or truncated control data", VU_MAX_FDS);
			return -EPROTO;
		}
		vu_ctl.rx.got += n;
		if (vu_ctl.rx.got < VU_HDR_LEN)
			continue;

		memcpy(&size, vu_ctl.rx.buf + 8, 4);
		if (size > VU_PAYLOAD_MAX) {
			uint32_t req;

			memcpy(&req, vu_ctl.rx.buf, 4);
			warn_rl("vhost-user: %s (%u): payload of %u bytes is "
				"too large", vu_req_name(req), req, size);
			return -EPROTO;
		}
		if (vu_ctl.rx.got == VU_HDR_LEN + size)
			return 1;
	}
}

/**
 * vu_ctrl_handler() - events on the control socket: read and handle
 *		       messages
 * @c:		execution context
 * @ref:	epoll reference: generation of the connection
 * @events:	epoll events
 */
void vu_ctrl_handler(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	unsigned i;
	int rc;

	if (vu_dev.fd < 0 || ref.gen != vu_dev.gen)
		return;		/* for a connection that is gone */
	if (!(events & EPOLLIN)) {
		if (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			vu_disconnect(c);
		return;
	}

	for (i = 0; i < VU_MSGS_PER_ROUND && vu_dev.fd >= 0; i++) {
		struct vu_msg m;

		rc = vu_recv();
		if (rc < 0) {
			if (rc != -ECONNRESET)
				warn("vhost-user: control connection: %s, "
				     "closing it", strerror(-rc));
			vu_disconnect(c);
			return;
		}
		if (!rc)
			return;

		memcpy(&m.req, vu_ctl.rx.buf, 4);
		memcpy(&m.flags, vu_ctl.rx.buf + 4, 4);
		memcpy(&m.size, vu_ctl.rx.buf + 8, 4);
		m.p = vu_ctl.rx.buf + VU_HDR_LEN;
		rc = vu_handle(c, &m);
		vu_rx_reset();
		if (vu_fault_check(c))
			return;
		if (rc) {
			warn("vhost-user: can't go on after %s, closing the "
			     "connection", vu_req_name(m.req));
			vu_disconnect(c);
			return;
		}
	}
}

/**
 * vu_cleanup() - unmap and close everything, remove the socket file
 * @c:		execution context
 */
void vu_cleanup(struct ctx *c)
{
	vu_dev_reset(c);
	vu_rx_reset();
	tap_listen_cleanup(c);
}
