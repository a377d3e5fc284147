// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * net.c - the virtio-net data path of the vhost-user front-end: guest
 * frames in from the TX ring, frames out into the RX ring.
 *
 * Theory of operation
 *
 * Every buffer the guest posts carries a 12-byte virtio-net header (VIRTIO
 * 1.x, section 5.1.6) before the Ethernet frame. We offer the guest checksum
 * and TCP segmentation offload for what it sends (VIRTIO_NET_F_CSUM,
 * HOST_TSO4/6): we terminate its TCP and never look at its checksums, so
 * a 64 KiB segment with a partial checksum costs us one frame instead of
 * forty, and the guest computes nothing. Its header is then ignored. On
 * RX the header carries num_buffers, and NEEDS_CSUM when the guest took
 * VIRTIO_NET_F_GUEST_CSUM (see vu_net_seg_commit()), and with GUEST_TSO4/6
 * TCP frames may carry up to 64 KiB: the guest takes them as one
 * super-segment of gso_size pieces, as if it had merged them itself.
 *
 * TX (guest to us, ring 1): on a kick, chains are taken from the ring, at
 * most VU_TX_BUDGET per call, and no more once VU_TX_WALK_BUDGET
 * descriptors were read for them. A frame that lies in one piece of guest
 * memory after the header is handed to demux_input() in place: demux_input()
 * parses through bounds-checked views, so the guest changing the bytes
 * under us can confuse the parse but never make it read out of bounds.
 * A frame spread over several pieces (what a Linux guest sends with TSO:
 * headers in one, payload in page fragments) goes to demux_input_part() as
 * it lies if it is TCP with all its headers in the first piece: TCP then
 * writes the payload pieces to its socket straight from guest memory.
 * Any other frame in pieces is gathered into one of VU_TX_GATHER static
 * buffers first. Protocols may keep pointers into the
 * frames until demux_input_end(), which we call at the end of the batch,
 * before the chains go back to the used ring (length 0) with one index
 * update, and before a gathered frame would reuse a buffer: so
 * VU_TX_GATHER gathered segments of a TCP stream still make one
 * sendmsg(). If the budget ran out with chains left, we write to our own
 * kick eventfd so the loop comes back to them after serving everybody
 * else. A disabled (but started) ring is
 * drained and its frames dropped, as the spec asks.
 * Coalescing (tap/coalesce.c): after each pass, coalesce_pass() may say
 * that the guest sends a trickle of bulk frames; kicks then stay off and
 * the loop polls the ring at the time it says (vu_net_poll(), from the
 * deadline of loop_wait()), until a pass says otherwise. A kick that
 * comes meanwhile (the driver looked before we turned them off) is
 * ignored: the poll takes its frames.
 *
 * RX (us to the guest, ring 0): tap_send_frame() lands in vu_net_send(),
 * which copies the frame once, straight into the guest's buffers: the
 * header into the first chain, then the frame, continuing into further
 * chains (MRG_RXBUF) until it fits; num_buffers is then patched in the
 * first chain's header and all the chains' used entries are published with
 * one index update. Without buffers we give the chains back and return
 * -ENOBUFS: TCP keeps its data in the socket and tries again once
 * vu_net_room() (tap_tx_room()) says there is room, which it checks after
 * every loop round; a kick on the RX ring wakes the loop for that.
 * vu_net_room() estimates the room as available chains times the average
 * chain capacity seen so far.
 *
 * RX in place: TCP reads socket data straight into the guest's buffers.
 * vu_net_seg_reserve() takes, for each frame, as many chains as its
 * headers and maximum payload need (the headers must fit the first piece
 * of the first chain) and hands out the pieces past the headers as
 * iovecs. The guest lays those chains out: a frame that can't get all of
 * its room (no chain left, the iovecs ran out in the middle of one, a
 * first piece too short for the headers, a head we hold already) is given
 * back with its chains, never handed out short, so that every frame
 * reserved holds exactly the payload asked for, in no more iovecs than
 * the caller has. vu_net_seg_commit() writes the virtio-net header
 * (num_buffers, and with VIRTIO_NET_F_GUEST_CSUM the NEEDS_CSUM flag, so
 * the guest completes or trusts the checksum and we never read the
 * payload again) and fills the used entries; vu_net_seg_done() gives the
 * chains that were not needed back, and publishes. Frames are committed
 * in order and only the last may carry less than its room, so unneeded
 * chains are always the last ones taken.
 *
 * Interrupts: publishing used entries only marks a ring; vu_net_flush()
 * (vu_round_end(), once per loop round) writes the call eventfds of the
 * marked rings unless the driver asked for no interrupts (queued on the
 * io_uring of uring.c, with the round's socket discards, where there is
 * one), and the log eventfd if dirty pages were logged.
 *
 * Kicks and rounds: the driver's kicks come here (vu_kick_handler()), and
 * so does the end of each loop round (vu_round_end()); both drop a
 * front-end whose memory shrank under us (vu_fault_check(), which
 * disconnects through user.c) before it is touched again.
 *
 * Queue pairs (multiqueue, see user.c): TX rings are served each on
 * its own kick, and vu_net_tx_pair() says which pair the frame being
 * handed over came from. A flow remembers the pair its guest frames last
 * came in on, and its frames to the guest go to that pair's RX ring
 * (vu_net_rx_select(), before the protocol sends): a Linux guest sends on
 * the queue of the CPU its socket is served on (XPS) and takes each RX
 * queue's interrupt on the CPU of the same number, so a flow's receive
 * work stays on one CPU, and flows on different CPUs don't all land on
 * one. Frames of flows that haven't said anything, and frames for a pair
 * that isn't running (any more), go to pair 0, which a guest always uses.
 * Room for blocked flows is asked for on every RX ring (kicks on all), and
 * vu_net_room() reports the most any ring has: a flow whose own ring is
 * still full finds that out, and waits again.
 *
 * A ring whose chains break the rules badly on RX (no writable buffer,
 * loops, addresses outside guest memory), or whose available index is
 * impossible, is marked broken and ignored until QEMU sets it up again;
 * on TX, a bad chain is returned with length 0 and the ring goes on.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ctx.h"
#include "demux.h"
#include "log.h"
#include "net/packet.h"
#include "tap/coalesce.h"
#include "tap/pcap.h"
#include "tap/tap.h"
#include "vhost/mem.h"
#include "vhost/net.h"
#include "vhost/vhost.h"
#include "uring.h"
#include "util.h"

/* Chains taken from the TX ring per call, and descriptors read for them
 * (vq_elem.walked), before yielding to the loop: a round costs a ring
 * what those cost, whatever its chains look like (at most VQ_CHAIN_MAX
 * descriptors each). Frames of a Linux guest take one to three, 19 with
 * TSO: 256 of those fit 4096
 */
#define VU_TX_BUDGET 256
#define VU_TX_WALK_BUDGET 4096
/* Frames up to this long (after the header) are accepted from the guest:
 * with TSO, an IP packet of up to 64 KiB plus its Ethernet header
 */
#define VU_FRAME_MAX (ETH_HDR_LEN + 65535)
/* Guess of the capacity of one RX chain until we've seen some */
#define VU_RX_CAP_GUESS 1536
/* Gather buffers for TX frames in several pieces, used in turn */
#define VU_TX_GATHER 4
/* Chains reserved for frames built in place, at most */
#define VU_RES_MAX 512

/**
 * struct vu_net - the data path's state (the device's is struct vu_dev,
 *		   vhost/user.c)
 * @tx_buf:	gather buffers for TX frames in several pieces, used in turn
 * @tx_gathered: of @tx_buf, in use in this batch
 * @tx_elem:	the TX chain being taken
 * @rx_first:	the first RX chain of a frame being sent
 * @rx_elem:	a further RX chain of it
 * @rx_heads:	heads of the RX chains of a frame, for the used ring
 * @rx_lens:	...and their lengths
 * @tx_co:	coalescing of each TX ring (tap/coalesce.c). Reset
 *		(vu_net_tx_reset()) whenever a ring stops, and so before it
 *		starts: SET_VRING_KICK stops it first
 * @tx_poll_at:	when to poll each TX ring, 0 while it kicks us
 * @rx_q:	RX ring selected for sending
 * @tx_pair:	pair of the TX ring being served
 * @res_q:	RX ring of the chains reserved
 * @res_elem:	chains reserved for frames built in place
 * @res_count:	chains taken
 * @res_used:	chains committed (a prefix)
 * @res_short:	a short frame was committed: no more
 * @stats:	counters, for the log
 * @stats.tx_bad:	TX frames malformed
 * @stats.tx_dropped:	TX frames dropped
 * @stats.rx_nobufs:	frames to the guest without RX buffers
 * @stats.calls:	interrupts to the guest, per ring
 * @stats.held:		...not sent, not wanted (used_event, NO_INTERRUPT)
 * @stats.frames:	frames to (RX) and from (TX) the guest, per ring
 */
static struct vu_net {
	uint8_t tx_buf[VU_TX_GATHER][VU_FRAME_MAX];
	unsigned tx_gathered;
	struct vq_elem tx_elem;
	struct vq_elem rx_first, rx_elem;
	uint16_t rx_heads[VQ_MAX_SIZE];
	uint32_t rx_lens[VQ_MAX_SIZE];
	struct coalesce tx_co[VU_QUEUES];
	uint64_t tx_poll_at[VU_QUEUES];
	unsigned rx_q;
	unsigned tx_pair;
	unsigned res_q;
	struct vq_elem res_elem[VU_RES_MAX];
	unsigned res_count;
	unsigned res_used;
	bool res_short;
	struct {
		uint64_t tx_bad, tx_dropped, rx_nobufs;
		uint64_t calls[VU_QUEUES], held[VU_QUEUES], frames[VU_QUEUES];
	} stats;
} vn = { .rx_q = VU_RX_Q };

/* Can frames go to the guest on RX ring @vq? */
static bool vu_rx_ok(const struct virtq *vq)
{
	return vu_dev.fd >= 0 && vq_ready(vq) && vq->enabled;
}

/* The RX ring frames go to now: the selected one, or pair 0's if that one
 * isn't running; its index in @qi
 */
static struct virtq *vu_rx_vq(unsigned *qi)
{
	*qi = vu_rx_ok(&vu_dev.vq[vn.rx_q]) ? vn.rx_q : VU_RX_Q;
	return &vu_dev.vq[*qi];
}

/**
 * vu_net_rx_select() - choose the queue pair frames to the guest go to
 * @pair:	pair a flow's frames last came from (vu_net_tx_pair())
 */
void vu_net_rx_select(unsigned pair)
{
	vn.rx_q = 2 * (pair % VU_MAX_PAIRS) + VU_RX_Q;
}

/**
 * vu_net_tx_pair() - the queue pair of the frame being handed over
 *
 * Return: pair index, 0 outside vu_net_tx()
 */
static unsigned vu_net_tx_pair(void)
{
	return vn.tx_pair;
}

/* Mark a ring broken: ignore it until it is set up again */
static void vu_net_broken(struct virtq *vq, unsigned i, const char *why)
{
	warn_rl("vhost-user: ring %u: %s, ignoring it until it is set up "
		"again", i, why);
	vq->broken = true;
}

/* Hand a frame starting at @off into piece @i, continuing in the next
 * ones, to demux_input_part(): true if it took it
 */
static bool vu_net_tx_part(struct ctx *c, const struct vq_elem *e,
			   unsigned i, size_t off, size_t len)
{
	struct iovec tail[TAP_TAIL_MAX];
	size_t hlen = e->iov[i].len - off;
	unsigned n;

	if (e->out_num - i - 1 > TAP_TAIL_MAX)
		return false;
	for (n = 0; i + 1 + n < e->out_num; n++) {
		tail[n].iov_base = e->iov[i + 1 + n].base;
		tail[n].iov_len = e->iov[i + 1 + n].len;
	}
	return demux_input_part(c, e->iov[i].base + off, hlen, tail, n, len);
}

/**
 * vu_net_tx_one() - hand one TX chain's frame to demux_input()
 * @c:		execution context
 * @e:		the chain
 */
static void vu_net_tx_one(struct ctx *c, const struct vq_elem *e)
{
	size_t len, off = VU_NET_HDR_LEN;
	unsigned i;

	if (e->out_len < VU_NET_HDR_LEN + ETH_HDR_LEN ||
	    e->out_len - VU_NET_HDR_LEN > VU_FRAME_MAX) {
		vn.stats.tx_dropped++;
		debug_rl("vhost-user: TX chain of %llu bytes dropped",
			 (unsigned long long)e->out_len);
		return;
	}
	len = e->out_len - VU_NET_HDR_LEN;

	/* Find the piece the frame starts in: in place if it all fits */
	for (i = 0; i < e->out_num; i++) {
		if (off < e->iov[i].len)
			break;
		off -= e->iov[i].len;
	}
	if (i < e->out_num && e->iov[i].len - off >= len) {
		demux_input(c, e->iov[i].base + off, len);
		return;
	}
	/* TCP with its headers in this piece: the rest as it lies */
	if (i < e->out_num && vu_net_tx_part(c, e, i, off, len))
		return;
	/* All buffers hold frames of this batch: end it, they're free */
	if (vn.tx_gathered == VU_TX_GATHER) {
		demux_input_end(c);
		vn.tx_gathered = 0;
	}
	if (vq_copy_from(e, VU_NET_HDR_LEN, vn.tx_buf[vn.tx_gathered],
			 len) != len)
		return;
	demux_input(c, vn.tx_buf[vn.tx_gathered++], len);
}

/**
 * vu_net_tx() - take frames from one of the guest's TX rings
 * @c:		execution context
 * @q:		ring index (odd)
 */
void vu_net_tx(struct ctx *c, unsigned q)
{
	unsigned n = 0, frames = 0, budget, walked = 0;
	struct vu_dev *d = &vu_dev;
	uint64_t one = 1, bytes = 0;
	bool more = false;
	struct virtq *vq;
	int rc;

	if (q >= VU_QUEUES || q % 2 != VU_TX_Q)
		return;
	vq = &d->vq[q];
	vn.tx_poll_at[q] = 0;
	if (!vq_ready(vq))
		return;
	vn.tx_pair = q / 2;
	/* No kicks while we take frames out anyway */
	vq_kicks(vq, &d->mem, false);
	for (budget = 0; budget < VU_TX_BUDGET; budget++) {
		if (walked >= VU_TX_WALK_BUDGET) {
			more = true;
			break;
		}
		rc = vq_pop(vq, &d->mem, &vn.tx_elem);
		walked += vn.tx_elem.walked;
		if (rc == -ENOENT)
			break;
		if (rc == -EIO) {
			vu_net_broken(vq, q, "impossible avail index");
			break;
		}
		if (rc == -EBUSY) {
			/* Its chain is ours already: not returned twice */
			vn.stats.tx_bad++;
			warn_rl("vhost-user: TX ring %u: a head in flight was "
				"made available again, skipped", q);
			continue;
		}
		if (rc) {
			vn.stats.tx_bad++;
			warn_rl("vhost-user: bad TX descriptor chain (%s), "
				"dropped", strerror(-rc));
			if (vn.tx_elem.head < vq->size)
				vq_fill(vq, &d->mem, n++, vn.tx_elem.head, 0);
			continue;
		}
		trace("vhost-user: TX chain %u: %llu bytes in %u pieces",
		      vn.tx_elem.head, (unsigned long long)vn.tx_elem.out_len,
		      vn.tx_elem.out_num);
		if (vq->enabled)
			vu_net_tx_one(c, &vn.tx_elem);
		bytes += vn.tx_elem.out_len;
		frames++;
		vq_fill(vq, &d->mem, n++, vn.tx_elem.head, 0);
		/* demux_input() can't stop the ring, but be safe */
		if (!vq_ready(vq))
			break;
	}
	/* Protocols may point into the frames until this: before the guest
	 * gets its buffers back
	 */
	demux_input_end(c);
	vn.tx_gathered = 0;
	vn.tx_pair = 0;
	if (vq->desc)
		vq_publish(vq, &d->mem, n);
	vn.stats.frames[q] += n;

	if (!vq_ready(vq))
		return;
	if (budget == VU_TX_BUDGET)
		more = true;
	/* A trickle of bulk: kicks stay off, vu_net_poll() comes back */
	if (!more)
		vn.tx_poll_at[q] = coalesce_pass(&vn.tx_co[q], now_ns(), bytes,
					      frames);
	if (vn.tx_poll_at[q])
		return;
	/* More than our budget: come back after the others had their turn.
	 * Otherwise kicks on again, and if frames came meanwhile, unkicked,
	 * come back for them too.
	 */
	if ((more ||
	     (vq_kicks(vq, &d->mem, true) && vq_avail_count(vq) > 0)) &&
	    vq->kick_fd >= 0 && write(vq->kick_fd, &one, sizeof(one)) < 0)
		debug("vhost-user: self-kick: %s", strerror(errno));
}

/**
 * vu_fault_check() - drop the front-end if a guest memory access faulted
 * @c:		execution context
 *
 * A faulted access (mem.c, vu_mem_faulted()): this front-end goes
 * (user.c, vu_disconnect()), and the next one starts from nothing.
 *
 * Return: true if it went
 */
bool vu_fault_check(struct ctx *c)
{
	if (!vu_mem_faulted())
		return false;
	if (vu_dev.fd >= 0)
		vu_disconnect(c);
	return true;
}

/**
 * vu_kick_handler() - the driver kicked a ring
 * @c:		execution context
 * @ref:	epoll reference: ring index, generation of its kick fd
 *
 * The ring may have been stopped, or given another kick fd, since the
 * event was queued: then the event is stale and dropped. While we poll a
 * TX ring (coalescing), a kick is one the driver sent before it saw that
 * we don't want them: the poll takes its frames.
 */
void vu_kick_handler(struct ctx *c, union epoll_ref ref)
{
	unsigned idx = ref.idx;
	struct virtq *vq;

	if (idx >= VU_QUEUES)
		return;
	vq = &vu_dev.vq[idx];
	if (vq->kick_fd < 0 || vq->kick_gen != ref.gen)
		return;
	if (idx % 2 == VU_TX_Q && !vn.tx_poll_at[idx])
		vu_net_tx(c, idx);
	vu_fault_check(c);
	/* RX: new buffers. The loop resumes blocked flows after this round */
}

/**
 * vu_net_tx_reset() - a ring stopped: forget its coalescing, and if we
 *		       polled it, ask for kicks again in guest memory
 * @q:		ring index
 *
 * Whoever runs the ring next may be another back-end (the target of a
 * migration, which takes the used ring's flags as they are): it must
 * find kicks asked for, as they are between our loop rounds otherwise.
 */
void vu_net_tx_reset(unsigned q)
{
	struct virtq *vq;

	if (q >= VU_QUEUES)
		return;
	vq = &vu_dev.vq[q];
	if (vn.tx_poll_at[q] && vq->desc)
		vq_kicks(vq, &vu_dev.mem, true);
	vn.tx_poll_at[q] = 0;
	coalesce_reset(&vn.tx_co[q], COALESCE_TARGET_RING);
}

/**
 * vu_net_poll_at() - when the next TX ring is to be polled
 *
 * Return: time (ns, CLOCK_MONOTONIC), 0 if none is
 */
static uint64_t vu_net_poll_at(void)
{
	uint64_t at = 0;
	unsigned q;

	for (q = VU_TX_Q; q < VU_QUEUES; q += 2) {
		if (vn.tx_poll_at[q] && (!at || vn.tx_poll_at[q] < at))
			at = vn.tx_poll_at[q];
	}
	return at;
}

/**
 * vu_net_poll() - take frames from TX rings whose poll is due
 * @c:		execution context
 * @now:	current time (ns, CLOCK_MONOTONIC)
 */
static void vu_net_poll(struct ctx *c, uint64_t now)
{
	unsigned q;

	for (q = VU_TX_Q; q < VU_QUEUES; q += 2) {
		if (vn.tx_poll_at[q] && vn.tx_poll_at[q] <= now)
			vu_net_tx(c, q);
	}
}

/**
 * vu_net_connected() - can frames be sent to the guest now?
 * @c:		execution context
 *
 * Return: non-zero if the RX ring frames go to (that of the selected pair,
 *	   or pair 0's) is started and enabled
 */
int vu_net_connected(const struct ctx *c)
{
	unsigned q;

	(void)c;
	return vu_rx_ok(vu_rx_vq(&q));
}

/* Give back the last @n chains taken from @vq, of heads @heads, and @extra
 * entries taken after them without a chain (vq_pop() failed)
 */
static void vu_net_giveback(struct virtq *vq, const uint16_t *heads,
			    unsigned n, unsigned extra)
{
	unsigned i;

	for (i = 0; i < n; i++)
		vq_release(vq, heads[i]);
	vq_unpop(vq, n + extra);
}

/**
 * vu_net_send() - copy one frame into the guest's RX buffers
 * @c:		execution context
 * @frame:	Ethernet frame
 * @len:	its length
 *
 * Return: 0, -ENOTCONN if the RX ring isn't running, -ENOBUFS if the
 *	   guest posted too few buffers (nothing was consumed), -EMSGSIZE
 *	   if the frame can't fit one buffer and MRG_RXBUF is off
 */
int vu_net_send(struct ctx *c, const void *frame, size_t len)
{
	struct vu_dev *d = &vu_dev;
	bool mrg = d->features & (1ULL << VIRTIO_NET_F_MRG_RXBUF);
	struct vu_net_hdr hdr = { .num_buffers = htole16(1) };
	const uint8_t *hdr_bytes = (const uint8_t *)&hdr;
	size_t total = VU_NET_HDR_LEN + len, done = 0;
	unsigned n = 0, i, q;
	struct virtq *vq = vu_rx_vq(&q);
	uint16_t nbuf;

	(void)c;
	if (!vu_rx_ok(vq))
		return -ENOTCONN;

	/* num_buffers is patched below if the frame takes more chains */
	while (done < total) {
		struct vq_elem *e = n ? &vn.rx_elem : &vn.rx_first;
		size_t w = 0, hw;
		int rc;

		if (n >= vq->size) {
			vu_net_giveback(vq, vn.rx_heads, n, 0);
			return -ENOBUFS;
		}
		rc = vq_pop(vq, &d->mem, e);
		if (rc == -ENOENT || rc == -EBUSY) {
			/* None left, or the next is one of ours already */
			vu_net_giveback(vq, vn.rx_heads, n, rc == -EBUSY);
			vn.stats.rx_nobufs++;
			return -ENOBUFS;
		}
		if (rc || !e->in_num || e->out_num) {
			if (!rc)
				vq_release(vq, e->head);
			vu_net_giveback(vq, vn.rx_heads, n, rc == -EIO ? 0 : 1);
			vu_net_broken(vq, q, rc == -EIO ?
				      "impossible avail index" :
				      "bad RX descriptor chain");
			return -ENOTCONN;
		}
		vn.rx_heads[n] = e->head;
		if (!mrg && e->in_len < total) {
			vu_net_giveback(vq, vn.rx_heads, 1, 0);
			debug_rl("vhost-user: RX buffer of %llu bytes too "
				 "small for a %zu-byte frame",
				 (unsigned long long)e->in_len, len);
			return -EMSGSIZE;
		}

		if (done < VU_NET_HDR_LEN) {
			hw = vq_copy_to(&d->mem, e, 0, hdr_bytes + done,
					VU_NET_HDR_LEN - done);
			done += hw;
			w += hw;
		}
		if (done >= VU_NET_HDR_LEN) {
			size_t fw = vq_copy_to(&d->mem, e, w,
					       (const uint8_t *)frame +
					       (done - VU_NET_HDR_LEN),
					       total - done);
			done += fw;
			w += fw;
		}
		vq->cap_est = vq->cap_est ?
			      (uint32_t)((vq->cap_est * 7ULL + e->in_len) / 8) :
			      (uint32_t)e->in_len;
		vn.rx_lens[n] = (uint32_t)w;
		n++;
	}

	if (n > 1) {
		nbuf = htole16((uint16_t)n);
		/* The header may itself span chains if they're tiny */
		if (vn.rx_first.in_len >= VU_NET_HDR_LEN) {
			vq_copy_to(&d->mem, &vn.rx_first,
				   offsetof(struct vu_net_hdr, num_buffers),
				   &nbuf, sizeof(nbuf));
		} else {
			vu_net_giveback(vq, vn.rx_heads, n, 0);
			return -ENOBUFS;
		}
	}
	for (i = 0; i < n; i++)
		vq_fill(vq, &d->mem, i, vn.rx_heads[i], vn.rx_lens[i]);
	vq_publish(vq, &d->mem, n);
	vn.stats.frames[q]++;
	return 0;
}

/**
 * vu_net_rx_kicks() - ask the guest to kick us when it posts RX buffers,
 *		       or not, on every running RX ring
 * @c:		execution context
 * @on:		true while something waits for buffers
 *
 * Return: true if kicks were just turned on for a ring: look at the room
 *	   again, as buffers posted just before weren't kicked for
 */
bool vu_net_rx_kicks(struct ctx *c, bool on)
{
	bool turned = false;
	unsigned q;

	(void)c;
	for (q = VU_RX_Q; q < VU_QUEUES; q += 2) {
		if (vu_rx_ok(&vu_dev.vq[q]) &&
		    vq_kicks(&vu_dev.vq[q], &vu_dev.mem, on))
			turned = true;
	}
	return turned;
}

/* Approximate bytes RX ring @vq can take: available chains times their
 * estimated capacity
 */
static size_t vu_rx_room(const struct virtq *vq)
{
	uint32_t cap;
	int n;

	if (!vu_rx_ok(vq))
		return 0;
	n = vq_avail_count(vq);
	if (n <= 0)
		return 0;
	cap = vq->cap_est ? vq->cap_est : VU_RX_CAP_GUESS;
	if (cap <= VU_NET_HDR_LEN)
		return 0;
	return (size_t)n * (cap - VU_NET_HDR_LEN);
}

/**
 * vu_net_room() - approximate bytes the guest's posted RX buffers can take
 * @c:		execution context
 *
 * Return: the most any running RX ring can take (see vu_rx_room()), 0 if
 *	   none is running
 */
static size_t vu_net_room(const struct ctx *c)
{
	size_t room = 0;
	unsigned q;

	(void)c;
	for (q = VU_RX_Q; q < VU_QUEUES; q += 2)
		room = MAX(room, vu_rx_room(&vu_dev.vq[q]));
	return room;
}

/**
 * vu_net_log_stats() - report interrupt counters (SIGUSR1, exit), if any
 */
static void vu_net_log_stats(void)
{
	uint64_t k[2] = { 0 }, h[2] = { 0 };
	char pairs[VU_MAX_PAIRS * 48] = "";
	bool more = false;
	size_t off = 0;
	unsigned q;

	for (q = 0; q < VU_QUEUES; q++) {
		k[q % 2] += vn.stats.calls[q];
		h[q % 2] += vn.stats.held[q];
	}
	if (k[0] || k[1] || h[0] || h[1]) {
		info("vhost-user: interrupts to the guest: RX %llu, TX %llu; "
		     "not wanted (used_event, NO_INTERRUPT): RX %llu, TX %llu",
		     (unsigned long long)k[VU_RX_Q],
		     (unsigned long long)k[VU_TX_Q],
		     (unsigned long long)h[VU_RX_Q],
		     (unsigned long long)h[VU_TX_Q]);
	}

	/* Frames per queue pair, once more than pair 0 carried any */
	for (q = 2; q < VU_QUEUES; q++)
		more = more || vn.stats.frames[q];
	if (!more)
		return;
	for (q = 0; q < VU_QUEUES; q += 2) {
		const uint64_t *f = vn.stats.frames + q;
		int w;

		if (!f[VU_RX_Q] && !f[VU_TX_Q])
			continue;
		w = snprintf(pairs + off, sizeof(pairs) - off,
			     " %u: %llu/%llu", q / 2,
			     (unsigned long long)f[VU_RX_Q],
			     (unsigned long long)f[VU_TX_Q]);
		if (w < 0 || (size_t)w >= sizeof(pairs) - off)
			break;
		off += (size_t)w;
	}
	info("vhost-user: frames to/from the guest per queue pair:%s", pairs);
}

/**
 * vu_net_flush() - interrupt the guest for rings with new used entries,
 *		    and tell QEMU about dirty pages
 * @c:		execution context
 */
void vu_net_flush(struct ctx *c)
{
	static const uint64_t one = 1;	/* read by io_uring after we return */
	struct vu_dev *d = &vu_dev;
	unsigned i;

	(void)c;
	for (i = 0; i < VU_QUEUES; i++) {
		struct virtq *vq = &d->vq[i];

		if (!vq->need_call || !vq_ready(vq))
			continue;
		vq->need_call = false;
		if (vq->call_fd < 0)
			continue;
		if (!vq_notify_wanted(vq)) {
			vn.stats.held[i]++;
			continue;
		}
		vn.stats.calls[i]++;
		/* With the round's socket discards, in one io_uring_enter() */
		if (uring_write(vq->call_fd, &one, sizeof(one)) &&
		    write(vq->call_fd, &one, sizeof(one)) < 0)
			debug_rl("vhost-user: call fd write: %s",
				 strerror(errno));
	}
	if (d->mem.log_dirty) {
		d->mem.log_dirty = false;
		if (d->log_call_fd >= 0 &&
		    write(d->log_call_fd, &one, sizeof(one)) < 0)
			debug_rl("vhost-user: log fd write: %s",
				 strerror(errno));
	}
}

/**
 * vu_net_csum_partial() - may frames to the guest carry a partial checksum?
 * @c:		execution context
 *
 * Return: true if the guest negotiated VIRTIO_NET_F_GUEST_CSUM
 */
static bool vu_net_csum_partial(const struct ctx *c)
{
	(void)c;
	return vu_dev.features & (1ULL << VIRTIO_NET_F_GUEST_CSUM);
}

/**
 * vu_net_gso() - may TCP frames to the guest be larger than its MSS?
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 *
 * Return: true if the guest takes TCP segmentation offload for @family
 *	   (VIRTIO_NET_F_GUEST_TSO4/6), which requires partial checksums
 */
static bool vu_net_gso(const struct ctx *c, int family)
{
	int bit = family == AF_INET ? VIRTIO_NET_F_GUEST_TSO4
				    : VIRTIO_NET_F_GUEST_TSO6;

	return vu_net_csum_partial(c) && (vu_dev.features & (1ULL << bit));
}

/* Give back the reserved chains from @from on, and @extra entries taken
 * after them without a chain
 */
static void vu_net_res_giveback(struct virtq *vq, unsigned from,
				unsigned extra)
{
	unsigned i;

	for (i = from; i < vn.res_count; i++)
		vq_release(vq, vn.res_elem[i].head);
	vq_unpop(vq, vn.res_count - from + extra);
	vn.res_count = from;
}

/**
 * vu_net_pieces() - writable pieces of a chain from a byte on, as iovecs
 * @e:		the chain
 * @off:	first byte of its writable part to use
 * @max:	bytes wanted at most
 * @iov:	the pieces, filled in
 * @iov_max:	number of entries @iov has room for
 * @got:	set to the bytes the pieces hold, at most @max
 *
 * Return: number of entries of @iov used
 */
static unsigned vu_net_pieces(const struct vq_elem *e, size_t off,
			      size_t max, struct iovec *iov, unsigned iov_max,
			      size_t *got)
{
	unsigned i, n = 0;

	*got = 0;
	for (i = e->out_num; i < e->out_num + e->in_num && *got < max; i++) {
		const struct vq_iov *v = &e->iov[i];
		size_t l;

		if (off >= v->len) {
			off -= v->len;
			continue;
		}
		if (n == iov_max)
			break;
		l = MIN(v->len - off, max - *got);
		iov[n].iov_base = v->base + off;
		iov[n].iov_len = l;
		*got += l;
		n++;
		off = 0;
	}
	return n;
}

/**
 * vu_net_seg_reserve() - take RX chains for frames built in place
 * @c:		execution context
 * @hlen:	header bytes per frame (after the virtio-net header)
 * @plen:	payload bytes per frame, at most
 * @n:		frames wanted
 * @seg:	filled with the frames
 * @iov:	filled with their payload pieces, in order
 * @iov_max:	room in @iov
 *
 * Return: number of frames reserved, 0 if there are no buffers (or the
 *	   guest's buffers can't hold the headers in one piece)
 */
unsigned vu_net_seg_reserve(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg, struct iovec *iov,
			    unsigned iov_max)
{
	struct vu_dev *d = &vu_dev;
	struct virtq *vq = vu_rx_vq(&vn.res_q);
	bool mrg = d->features & (1ULL << VIRTIO_NET_F_MRG_RXBUF);
	size_t need = VU_NET_HDR_LEN + hlen;
	unsigned f, niov = 0;

	(void)c;
	vn.res_count = vn.res_used = 0;
	vn.res_short = false;
	if (!vu_rx_ok(vq))
		return 0;

	for (f = 0; f < n; f++) {
		unsigned first = vn.res_count, first_iov = niov, extra = 0;
		size_t cap = 0;

		while (cap < plen) {
			struct vq_elem *e;
			size_t got, off;
			unsigned k;
			int rc;

			if (vn.res_count == VU_RES_MAX || niov == iov_max)
				goto partial;
			e = &vn.res_elem[vn.res_count];
			rc = vq_pop(vq, &d->mem, e);
			if (rc == -ENOENT)
				goto partial;
			if (rc == -EBUSY) {
				/* One of ours again: stop before it */
				extra = 1;
				goto partial;
			}
			if (rc || !e->in_num || e->out_num) {
				if (!rc)
					vq_release(vq, e->head);
				vu_net_res_giveback(vq, 0, rc == -EIO ? 0 : 1);
				vu_net_broken(vq, vn.res_q, rc == -EIO ?
					      "impossible avail index" :
					      "bad RX descriptor chain");
				return 0;
			}
			vn.res_count++;
			vq->cap_est = vq->cap_est ?
				(uint32_t)((vq->cap_est * 7ULL + e->in_len) / 8) :
				(uint32_t)e->in_len;

			off = 0;
			if (vn.res_count - 1 == first) {
				/* Headers go in one piece of the first chain */
				if (e->iov[e->out_num].len < need ||
				    (!mrg && e->in_len < need + plen))
					goto partial;
				seg[f].l2 = e->iov[e->out_num].base +
					    VU_NET_HDR_LEN;
				off = need;
			}
			k = vu_net_pieces(e, off, plen - cap, iov + niov,
					  iov_max - niov, &got);
			niov += k;
			cap += got;
			if (!mrg)
				break;
		}
		/* Out of iovecs in the middle of a chain: the frame would be
		 * short, and everybody counts on its full room
		 */
		if (cap < plen)
			goto partial;
		seg[f].hlen = hlen;
		seg[f].iov = first_iov;
		seg[f].niov = niov - first_iov;
		seg[f].cap = cap;
		seg[f].fe_first = first;
		seg[f].fe_count = vn.res_count - first;
		continue;
partial:
		/* This frame can't be completed: give its chains back */
		vu_net_res_giveback(vq, first, extra);
		break;
	}
	return f;
}

/**
 * vu_net_seg_commit() - finish a frame built in place in guest buffers
 * @c:		execution context
 * @seg:	frame from vu_net_seg_reserve()
 * @iov:	the iovec array given to vu_net_seg_reserve()
 * @len:	frame length, from the Ethernet header on
 * @csum_start:	offset of the layer-4 header for a partial checksum, or 0
 *		if the checksum is complete
 * @csum_off:	offset of the checksum field in the layer-4 header
 * @gso_size:	payload bytes per segment if the frame is a TCP segment
 *		larger than the guest's MSS (see vu_net_gso()), else 0
 * @family:	AF_INET or AF_INET6, for @gso_size
 *
 * Return: 0, or -EINVAL if frames weren't committed in order
 */
int vu_net_seg_commit(struct ctx *c, struct tap_seg *seg,
		      const struct iovec *iov, size_t len, uint16_t csum_start,
		      uint16_t csum_off, uint16_t gso_size, int family)
{
	struct vu_dev *d = &vu_dev;
	struct virtq *vq = &d->vq[vn.res_q];
	struct vu_net_hdr *vhdr = (struct vu_net_hdr *)(seg->l2 -
							 VU_NET_HDR_LEN);
	size_t left = VU_NET_HDR_LEN + len;
	unsigned i, used = 0;

	if (!vu_rx_ok(vq) || seg->fe_first != vn.res_used || vn.res_short)
		return -EINVAL;

	if (len < seg->hlen)
		return -EINVAL;
	if (c->pcap_file[0])
		pcap_frame_iov(seg->l2, seg->hlen, iov + seg->iov,
			       seg->niov, len - seg->hlen);

	memset(vhdr, 0, sizeof(*vhdr));
	if (csum_start) {
		vhdr->flags = VU_NET_HDR_F_NEEDS_CSUM;
		vhdr->csum_start = htole16(csum_start);
		vhdr->csum_offset = htole16(csum_off);
	}
	if (gso_size && csum_start) {
		/* A TCP super-segment the guest takes as if it had merged it */
		vhdr->gso_type = family == AF_INET ? VU_NET_HDR_GSO_TCPV4
						   : VU_NET_HDR_GSO_TCPV6;
		vhdr->hdr_len = htole16((uint16_t)seg->hlen);
		vhdr->gso_size = htole16(gso_size);
	}

	for (i = 0; i < seg->fe_count && left; i++) {
		const struct vq_elem *e = &vn.res_elem[seg->fe_first + i];
		size_t w = MIN(left, (size_t)e->in_len), done = 0;
		unsigned k;

		for (k = e->out_num; k < e->out_num + e->in_num && done < w;
		     k++) {
			size_t l = MIN((size_t)e->iov[k].len, w - done);

			vu_log_write(&d->mem, e->iov[k].gpa, l);
			done += l;
		}
		vq_fill(vq, &d->mem, seg->fe_first + i, e->head, (uint32_t)w);
		left -= w;
		used++;
	}
	/* Without MRG_RXBUF a frame is one chain, and num_buffers must be 1 */
	vhdr->num_buffers = htole16((uint16_t)used);
	vn.res_used += used;
	vn.stats.frames[vn.res_q]++;
	if (used < seg->fe_count)
		vn.res_short = true;
	return left ? -EINVAL : 0;
}

/**
 * vu_net_seg_done() - give back unneeded chains, publish the frames
 * @c:		execution context
 */
void vu_net_seg_done(struct ctx *c)
{
	struct virtq *vq = &vu_dev.vq[vn.res_q];

	(void)c;
	if (!vu_rx_ok(vq) || !vn.res_count)
		return;
	vu_net_res_giveback(vq, vn.res_used, 0);
	vq_publish(vq, &vu_dev.mem, vn.res_used);
	vn.res_count = vn.res_used = 0;
}

/**
 * vu_round_end() - end of a loop round (passt.c): drop a front-end
 *		    whose memory shrank under us, interrupt the guest
 * @c:		execution context
 */
static void vu_round_end(struct ctx *c)
{
	vu_fault_check(c);
	vu_net_flush(c);
}

/* The vhost-user front-end, for tap.c: the protocol (user.c) sets it up,
 * the data path here takes the kicks and ends the loop's rounds
 */
const struct tap_frontend vu_frontend = {
	.name		= "vhost-user",
	.init		= vu_init,
	.accept		= vu_listen_handler,
	.handler	= vu_ctrl_handler,
	.kick		= vu_kick_handler,
	.cleanup	= vu_cleanup,
	.connected	= vu_net_connected,
	.send		= vu_net_send,
	.reserve	= vu_net_seg_reserve,
	.commit		= vu_net_seg_commit,
	.done		= vu_net_seg_done,
	.csum_partial	= vu_net_csum_partial,
	.gso		= vu_net_gso,
	.room		= vu_net_room,
	.queue_in	= vu_net_tx_pair,
	.queue_out	= vu_net_rx_select,
	.kicks		= vu_net_rx_kicks,
	.poll_at	= vu_net_poll_at,
	.poll		= vu_net_poll,
	.flush		= vu_round_end,
	.log_stats	= vu_net_log_stats,
};
