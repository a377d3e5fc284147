// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtqueue.c - split virtqueues, device side (VIRTIO 1.x, section 2.7),
 * for the vhost-user front-end. Guest memory and its translation are in
 * mem.c.
 *
 * Theory of operation
 *
 * Rings: a queue of size Q (a power of two, at most 32768) has three
 * areas, all little-endian: the descriptor table (16 bytes per entry), the
 * available ring (flags, idx, Q heads, used_event) written by the driver,
 * and the used ring (flags, idx, Q {id, len}, avail_event) written by us.
 * vq_translate() requires each area to be contiguous in one region and
 * naturally aligned; otherwise the ring is unusable and the caller refuses
 * the request that set it.
 *
 * Consuming (vq_pop()): the driver's avail->idx is loaded, then an
 * acquire barrier orders the reads of the entries it publishes; the next
 * load comes only once those entries are all taken (@avail_seen), as the
 * driver's CPU keeps writing that line while it posts buffers, and a load
 * per chain cost a cache miss per chain (a 64 KiB frame to the guest
 * takes 17 chains of 4 KiB). A distance
 * from our last_avail larger than Q can only come from a broken or hostile
 * driver: the ring is reported broken (-EIO) and not touched again until it
 * is set up anew. Each head is walked through its chain: every descriptor
 * is copied out of guest memory once (the guest may change it under us;
 * we only ever act on our copy), indexes are checked against the table
 * size, the number of hops is bounded by VQ_CHAIN_MAX, direct and
 * indirect ones together (a loop can't last longer, and a chain of
 * zero-length descriptors costs no more than one that carries bytes: what
 * walking a ring costs is proportional to the entries the driver made
 * available, @walked tells the caller, who budgets per round), readable
 * descriptors must precede writable ones, the total
 * length must fit the 32-bit used length, and every buffer is translated
 * into pieces (struct vq_iov) that lie in mapped memory, at most
 * VQ_IOV_MAX of them. An indirect descriptor (allowed only as the whole
 * chain) points to a table that must itself be mapped contiguously, and
 * aligned for the 64-bit loads we read its entries with
 * (VQ_INDIRECT_ALIGN: the spec asks no alignment of indirect tables,
 * "anywhere in memory"; QEMU copies entries out at any alignment; Linux
 * guests kmalloc() them, which gives at least that), and whose entries
 * obey the same rules, minus further indirection. A chain that breaks any
 * rule is consumed and returned with length 0 (-EINVAL with a valid
 * head), so the driver gets its buffers back and the queue goes on.
 *
 * Heads in flight: a head vq_pop() took stays marked (@inflight) until
 * its chain is used (vq_fill()) or given back (vq_release()). A driver
 * that makes the same head available again meanwhile (in several entries,
 * or reusing it before it came back) breaks the spec (a buffer made
 * available is the device's until it is used): vq_pop() consumes that entry
 * and returns -EBUSY without a chain, so nothing of ours ever holds the
 * same buffers twice, and the used ring never names a head twice for one
 * offer. Our callers never keep chains across loop rounds, so marks only
 * live within one batch.
 *
 * Completing: vq_fill() writes used entries after the published used->idx
 * and vq_publish() makes n of them visible with one release barrier and
 * one idx store. vq_unpop() gives back the last entries taken, whose
 * chains weren't filled (RX frames that didn't fit), after vq_release()
 * of each chain vq_pop() returned among them.
 *
 * Notifications (VIRTIO 1.x, 2.7.7 and 2.7.10): the driver's kicks are
 * wanted on the RX ring only while some flow waits for buffers
 * (vu_net_rx_kicks()), on the TX ring not while we are taking frames out
 * of it anyway (vq_kicks()). Without VIRTIO_RING_F_EVENT_IDX that is
 * used->flags NO_NOTIFY, and we interrupt the driver unless avail->flags
 * has NO_INTERRUPT. With it, the flags mean nothing to either side:
 *  - kicks: avail_event, at the end of the used ring, is the avail->idx
 *    after which the driver kicks. Turning kicks on moves it to the index
 *    the driver has published so far, and again until that stands still
 *    after a full barrier, so its next entry kicks us whatever it raced
 *    with. Turning them off writes nothing: the index stays behind, and
 *    at most one more kick comes when the driver passes it.
 *  - interrupts (vq_notify_wanted()): used_event, at the end of the
 *    available ring, is the used->idx after which the driver wants one.
 *    We interrupt if our used->idx moved past it since the last time we
 *    decided (@signalled), and always the first time after the ring was
 *    set up. On its TX ring, a Linux guest asks for one only once part
 *    of what it has in flight is done (virtqueue_enable_cb_delayed()):
 *    with a few frames in flight, that is still most of them.
 *
 * Dirty logging: vq_copy_to() marks every page it writes, and
 * vq_fill()/vq_publish() the used ring entries and index, with
 * vu_log_write() (mem.c).
 *
 * This file never allocates and never dereferences guest memory outside
 * the pieces the translation functions of mem.c return.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "vhost/virtqueue.h"
#include "util.h"

#define VQ_DESC_LEN 16

/**
 * vq_notify_reset() - forget what we told the driver about notifications
 * @vq:		queue
 *
 * For a new ring, a (re)started one, or a change of EVENT_IDX: the next
 * vq_kicks() writes whatever it wants, and the next vq_notify_wanted()
 * says yes.
 */
void vq_notify_reset(struct virtq *vq)
{
	vq->used_flags = vq->avail_event = -1;
	vq->signalled_ok = false;
}

/**
 * vq_reset() - forget everything about a queue (fds must be closed first)
 * @vq:		queue, its @inflight bitmap set (kept), or NULL
 */
void vq_reset(struct virtq *vq)
{
	uint64_t *inflight = vq->inflight;

	memset(vq, 0, sizeof(*vq));
	vq->inflight = inflight;
	vq->kick_fd = vq->call_fd = vq->err_fd = -1;
	vq_notify_reset(vq);
}

/* Translate @len bytes at @qva, contiguous and @align-aligned, or NULL */
static uint8_t *vq_map_area(const struct vu_mem *m, uint64_t qva,
			    uint64_t len, uintptr_t align)
{
	uint64_t got = len;
	uint8_t *p = vu_qva_to_va(m, qva, &got);

	if (!p || got < len || ((uintptr_t)p & (align - 1)))
		return NULL;
	return p;
}

/**
 * vq_translate() - (re)compute our pointers to the rings of a queue
 * @vq:		queue with size and addresses set
 * @m:		guest memory
 *
 * Return: 0, -EINVAL if size, addresses or the bitmap of heads in flight
 *	   aren't set, -EFAULT if an area isn't mapped contiguously and
 *	   aligned (the pointers are cleared)
 */
int vq_translate(struct virtq *vq, const struct vu_mem *m)
{
	uint64_t q = vq->size;

	vq->desc = vq->avail = vq->used = NULL;
	vq_notify_reset(vq);	/* a new ring: whatever the driver left */
	vq->avail_seen = vq->last_avail;
	if (!vq->size || !vq->addr_set || !vq->inflight)
		return -EINVAL;
	/* A new ring: no chain of it is ours */
	memset(vq->inflight, 0, (MIN(q, VQ_MAX_SIZE) + 63) / 64 * 8);
	vq->desc = vq_map_area(m, vq->desc_qva, VQ_DESC_LEN * q, 16);
	vq->avail = vq_map_area(m, vq->avail_qva, 6 + 2 * q, 2);
	vq->used = vq_map_area(m, vq->used_qva, 6 + 8 * q, 4);
	if (!vq->desc || !vq->avail || !vq->used) {
		vq->desc = vq->avail = vq->used = NULL;
		return -EFAULT;
	}
	return 0;
}

/**
 * vq_ready() - may the queue be processed now?
 * @vq:		queue
 *
 * Return: true if started, not broken, and its rings are mapped
 */
bool vq_ready(const struct virtq *vq)
{
	return vq->started && !vq->broken && vq->desc;
}

static uint16_t vq_load16(const uint8_t *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED));
}

static void vq_store16(uint8_t *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, htole16(v), __ATOMIC_RELAXED);
}

static uint16_t vq_avail_idx(const struct virtq *vq)
{
	return vq_load16(vq->avail + 2);
}

/**
 * vq_avail_count() - chains the driver made available that we didn't take
 * @vq:		ready queue
 *
 * Return: count, or -EIO if the driver's index is impossible
 */
int vq_avail_count(const struct virtq *vq)
{
	uint16_t n = (uint16_t)(vq_avail_idx(vq) - vq->last_avail);

	if (n > vq->size)
		return -EIO;
	return n;
}

/**
 * vq_used_idx_guest() - used->idx as currently stored in guest memory
 * @vq:		queue with translated rings
 *
 * Return: the index
 */
uint16_t vq_used_idx_guest(const struct virtq *vq)
{
	return vq_load16(vq->used + 2);
}

struct vq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags, next;
};

/* Copy descriptor @i of @table out of guest memory, once: two 64-bit
 * loads (the table is 16-byte aligned, see vq_translate()), which the
 * compiler may neither repeat nor split
 */
static void vq_desc_read(const uint8_t *table, unsigned i, struct vq_desc *d)
{
	const uint64_t *p = (const uint64_t *)(table + (size_t)i * VQ_DESC_LEN);
	uint64_t rest = le64toh(__atomic_load_n(p + 1, __ATOMIC_RELAXED));

	d->addr = le64toh(__atomic_load_n(p, __ATOMIC_RELAXED));
	d->len = (uint32_t)rest;
	d->flags = (uint16_t)(rest >> 32);
	d->next = (uint16_t)(rest >> 48);
}

/**
 * vq_elem_add() - append the translated pieces of one buffer to a chain element
 * @m:		guest memory table
 * @e:		the element
 * @d:		the buffer's descriptor
 *
 * Return: 0 or -EINVAL
 */
static int vq_elem_add(const struct vu_mem *m, struct vq_elem *e,
		       const struct vq_desc *d)
{
	bool wr = d->flags & VQ_DESC_F_WRITE;
	uint64_t gpa = d->addr, left = d->len;

	if (!wr && e->in_num)
		return -EINVAL;		/* readable after writable */
	if (e->out_len + e->in_len + left > UINT32_MAX)
		return -EINVAL;
	while (left) {
		uint64_t got = left;
		uint8_t *p = vu_gpa_to_va(m, gpa, &got);
		struct vq_iov *v;

		if (!p)
			return -EFAULT;
		if (e->out_num + e->in_num >= VQ_IOV_MAX)
			return -ENOBUFS;
		v = &e->iov[e->out_num + e->in_num];
		v->base = p;
		v->len = (uint32_t)got;
		v->gpa = gpa;
		if (wr) {
			e->in_num++;
			e->in_len += got;
		} else {
			e->out_num++;
			e->out_len += got;
		}
		gpa += got;
		left -= got;
	}
	return 0;
}

/**
 * vq_walk() - walk a descriptor chain into an element
 * @m:		guest memory table
 * @e:		the element; @e->walked counts the descriptors read, at most
 *		VQ_CHAIN_MAX
 * @table:	the descriptor table
 * @n:		its number of entries
 * @i:		first descriptor of the chain
 * @indirect:	@table is an indirect one (no further indirection)
 *
 * Return: 0, or -EINVAL, -ELOOP, -E2BIG, -EFAULT for a chain we refuse
 */
static int vq_walk(const struct vu_mem *m, struct vq_elem *e,
		   const uint8_t *table, unsigned n, unsigned i, bool indirect)
{
	unsigned hops = 0;
	struct vq_desc d;
	int rc;

	for (;;) {
		if (i >= n)
			return -EINVAL;
		if (++hops > n)
			return -ELOOP;
		if (e->walked == VQ_CHAIN_MAX)
			return -E2BIG;
		e->walked++;
		vq_desc_read(table, i, &d);
		if (d.flags & VQ_DESC_F_INDIRECT) {
			uint64_t got, len = d.len;
			const uint8_t *t;

			if (indirect || hops > 1 || (d.flags & VQ_DESC_F_NEXT))
				return -EINVAL;
			if (!len || len % VQ_DESC_LEN ||
			    len / VQ_DESC_LEN > VQ_MAX_SIZE)
				return -EINVAL;
			got = len;
			t = vu_gpa_to_va(m, d.addr, &got);
			if (!t || got < len)
				return -EFAULT;
			if ((uintptr_t)t % VQ_INDIRECT_ALIGN)
				return -EINVAL;
			return vq_walk(m, e, t, (unsigned)(len / VQ_DESC_LEN),
				       0, true);
		}
		if ((rc = vq_elem_add(m, e, &d)))
			return rc;
		if (!(d.flags & VQ_DESC_F_NEXT))
			return 0;
		i = d.next;
	}
}

static bool vq_inflight(const struct virtq *vq, uint16_t head)
{
	return vq->inflight[head / 64] & (1ULL << (head % 64));
}

/**
 * vq_pop() - take the next available descriptor chain
 * @vq:		ready queue
 * @m:		guest memory
 * @e:		filled with the chain's pieces
 *
 * A chain returned (0) is in flight until vq_fill() or vq_release().
 *
 * @e->walked says how many descriptors were read, whatever the result.
 *
 * Return: 0; -ENOENT if none is available; -EIO if the ring is broken
 *	   (nothing was taken); -EBUSY if the entry names a head in flight
 *	   (the entry was taken, and @e->head is @vq->size: there is nothing
 *	   to return); -EINVAL (or another -errno) for a bad chain, which was
 *	   taken: @e->head is then its head if that is a valid index (return
 *	   it with length 0), or @vq->size if not
 */
int vq_pop(struct virtq *vq, const struct vu_mem *m, struct vq_elem *e)
{
	uint16_t head, known = (uint16_t)(vq->avail_seen - vq->last_avail);
	int rc;

	e->walked = 0;
	if (!known || known > vq->size) {
		int n = vq_avail_count(vq);

		if (n < 0)
			return n;
		if (!n)
			return -ENOENT;
		/* Entries published before avail->idx are visible after this */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		vq->avail_seen = (uint16_t)(vq->last_avail + n);
	}

	head = vq_load16(vq->avail + 4 + 2 * (vq->last_avail % vq->size));
	vq->last_avail++;

	e->out_num = e->in_num = 0;
	e->out_len = e->in_len = 0;
	if (head >= vq->size) {
		e->head = (uint16_t)vq->size;
		return -EINVAL;
	}
	if (vq_inflight(vq, head)) {
		e->head = (uint16_t)vq->size;
		return -EBUSY;
	}
	e->head = head;
	rc = vq_walk(m, e, vq->desc, vq->size, head, false);
	if (!rc)
		vq->inflight[head / 64] |= 1ULL << (head % 64);
	return rc;
}

/**
 * vq_release() - a chain vq_pop() returned won't be used: not in flight
 *		  any more (give its entry back with vq_unpop())
 * @vq:		queue
 * @head:	its head
 */
void vq_release(struct virtq *vq, uint16_t head)
{
	if (vq->inflight && head < vq->size && head < VQ_MAX_SIZE)
		vq->inflight[head / 64] &= ~(1ULL << (head % 64));
}

/**
 * vq_unpop() - give back the last entries vq_pop() took, not filled
 * @vq:		queue
 * @n:		how many (each chain vq_pop() returned among them must have
 *		been released with vq_release())
 */
void vq_unpop(struct virtq *vq, unsigned n)
{
	vq->last_avail -= n;
}

/**
 * vq_fill() - write a used entry, not yet visible to the driver
 * @vq:		ready queue
 * @m:		guest memory (dirty log)
 * @off:	entries already filled since the last vq_publish()
 * @head:	chain head
 * @len:	bytes written into the chain
 */
void vq_fill(struct virtq *vq, struct vu_mem *m, unsigned off, uint16_t head,
	     uint32_t len)
{
	unsigned slot = (uint16_t)(vq->used_idx + off) % vq->size;
	uint8_t *u = vq->used + 4 + 8 * (size_t)slot;
	uint32_t v;

	vq_release(vq, head);	/* the driver's again */
	v = htole32(head);
	memcpy(u, &v, 4);
	v = htole32(len);
	memcpy(u + 4, &v, 4);
	vu_log_write(m, vq->log_gpa + 4 + 8 * (uint64_t)slot, 8);
}

/**
 * vq_publish() - make filled used entries visible to the driver
 * @vq:		ready queue
 * @m:		guest memory (dirty log)
 * @n:		entries filled
 */
void vq_publish(struct virtq *vq, struct vu_mem *m, unsigned n)
{
	if (!n)
		return;
	/* Entries before the index */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	vq->used_idx += n;
	vq_store16(vq->used + 2, vq->used_idx);
	vu_log_write(m, vq->log_gpa + 2, 2);
	vq->need_call = true;
}

/**
 * vq_notify_wanted() - does the driver want an interrupt for new entries?
 * @vq:		ready queue
 *
 * With EVENT_IDX, the answer counts as given: the next call only looks at
 * entries published after this one.
 *
 * Return: true unless avail->flags has NO_INTERRUPT, or with EVENT_IDX, if
 *	   used->idx passed used_event since the last call
 */
bool vq_notify_wanted(struct virtq *vq)
{
	uint16_t old = vq->signalled, ev;
	bool known = vq->signalled_ok;

	/* Our used->idx store before the driver's flags or used_event */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->event_idx)
		return !(vq_load16(vq->avail) & VQ_AVAIL_F_NO_INTERRUPT);

	vq->signalled = vq->used_idx;
	vq->signalled_ok = true;
	if (!known)
		return true;
	ev = vq_load16(vq->avail + 4 + 2 * (size_t)vq->size);
	/* used_event in [old, used_idx): entry used_event + 1 is new */
	return (uint16_t)(vq->used_idx - ev - 1) <
	       (uint16_t)(vq->used_idx - old);
}

/**
 * vq_kicks_event() - vq_kicks() with EVENT_IDX: see "Notifications" above
 * @vq:		ready queue
 * @m:		guest memory (dirty log)
 * @on:		true: kicks wanted (avail_event at the driver's avail->idx)
 *
 * Return: true if kicks were just turned on (look at the ring again)
 */
static bool vq_kicks_event(struct virtq *vq, struct vu_mem *m, bool on)
{
	uint64_t gpa = vq->log_gpa + 4 + 8 * (uint64_t)vq->size;
	bool moved = false;
	int tries;
	uint16_t a;

	if (!on)
		return false;
	a = vq_avail_idx(vq);
	/* A driver that keeps moving its index only delays its own kick */
	for (tries = 0; tries < 4 && vq->avail_event != a; tries++) {
		vq_store16(vq->used + 4 + 8 * (size_t)vq->size, a);
		vu_log_write(m, gpa, 2);
		vq->avail_event = a;
		moved = true;
		/* Our avail_event store before our next load of avail->idx */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		a = vq_avail_idx(vq);
	}
	return moved;
}

/**
 * vq_kicks() - ask the driver to kick us for new available entries, or not
 * @vq:		ready queue
 * @m:		guest memory (dirty log)
 * @on:		true: kicks wanted (used->flags 0, or avail_event at the
 *		driver's avail->idx), false: NO_NOTIFY (or nothing)
 *
 * Only a hint (VIRTIO 1.x, 2.7.10): a driver may kick anyway, and one that
 * looked at the flags just before we turned kicks on won't kick for what
 * it published then. So turning them on is followed by a full barrier, and
 * the caller looks at the ring again afterwards.
 *
 * Return: true if kicks were just turned on (look at the ring again)
 */
bool vq_kicks(struct virtq *vq, struct vu_mem *m, bool on)
{
	int want = on ? 0 : VQ_USED_F_NO_NOTIFY;

	if (vq->event_idx)
		return vq_kicks_event(vq, m, on);
	if (vq->used_flags == want)
		return false;
	vq_store16(vq->used, (uint16_t)want);
	vu_log_write(m, vq->log_gpa, 2);
	vq->used_flags = want;
	if (!on)
		return false;
	/* Our flags store before our next load of avail->idx */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return true;
}

/**
 * vq_copy_to() - copy into the writable pieces of a chain
 * @m:		guest memory (dirty log)
 * @e:		chain
 * @off:	offset in the chain's writable bytes
 * @buf:	data
 * @len:	its length
 *
 * Return: bytes copied (less than @len if the chain is too short)
 */
size_t vq_copy_to(struct vu_mem *m, const struct vq_elem *e, size_t off,
		  const void *buf, size_t len)
{
	const uint8_t *src = buf;
	size_t done = 0;
	unsigned i;

	for (i = e->out_num; i < e->out_num + e->in_num && done < len; i++) {
		const struct vq_iov *v = &e->iov[i];
		size_t n;

		if (off >= v->len) {
			off -= v->len;
			continue;
		}
		n = MIN(v->len - off, len - done);
		memcpy(v->base + off, src + done, n);
		vu_log_write(m, v->gpa + off, n);
		done += n;
		off = 0;
	}
	return done;
}

/**
 * vq_copy_from() - copy out of the readable pieces of a chain
 * @e:		chain
 * @off:	offset in the chain's readable bytes
 * @buf:	destination
 * @len:	bytes wanted
 *
 * Return: bytes copied (less than @len if the chain is too short)
 */
size_t vq_copy_from(const struct vq_elem *e, size_t off, void *buf,
		    size_t len)
{
	uint8_t *dst = buf;
	size_t done = 0;
	unsigned i;

	for (i = 0; i < e->out_num && done < len; i++) {
		const struct vq_iov *v = &e->iov[i];
		size_t n;

		if (off >= v->len) {
			off -= v->len;
			continue;
		}
		n = MIN(v->len - off, len - done);
		memcpy(dst + done, v->base + off, n);
		done += n;
		off = 0;
	}
	return done;
}
