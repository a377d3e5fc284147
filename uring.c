// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uring.c - io_uring for the system calls that end a loop round.
 *
 * Theory of operation
 *
 * At the end of every loop round (main_round_end()) the daemon makes a few
 * small system calls whose results nobody waits for: one recv(MSG_TRUNC)
 * per connection to drop what the guest ACKed during the round (tcp/to_guest.c,
 * tcp_sock_sync()), and with vhost-user one eventfd write per ring that
 * got used entries (vu_net_flush()). Here they are queued instead and go
 * to the kernel together, with one io_uring_enter() (uring_flush()), so a
 * round with many connections costs one call instead of one per
 * connection, and the discards ride with the notification.
 *
 * Only what can't wait is queued: recv() with MSG_DONTWAIT and writes to
 * eventfds both complete during the submission, so their completions are
 * read right after it, from shared memory. One that went asynchronous
 * anyway is reaped at a later flush; its slot stays taken until then.
 * A failed operation calls back its owner, with the tag it gave (a flow
 * index and generation, say), and a send() does whatever its result (its
 * owner must learn when its bytes are free), from uring_flush() (or
 * uring_epoll_wait())
 * only, never from inside a queueing call: the owner must check that the
 * thing still exists. Owners queue nothing that can be invalidated before
 * the flush: TCP queues its discards after the round's last close can
 * have happened.
 *
 * Descriptors: a queued operation names its descriptor by number, and the
 * kernel looks the number up only when the operation is submitted. A
 * descriptor closed before that, whose number a socket accepted, an
 * eventfd or a pipe received later in the round then takes, would get
 * the operation instead: the eight bytes of an interrupt in a TCP
 * connection or a migration stream, say. So whatever may have named a
 * descriptor in a queued operation closes it with uring_close(), never
 * with close(): if an operation not submitted yet names it, everything
 * queued is submitted first (the round's calls go a little earlier, and
 * in the same order). Once submitted, an operation holds the kernel's own
 * reference to the file, whatever happens to the number; should the
 * submission fail, the close waits for the next one that succeeds, and
 * the number stays taken until then. Sanitizer and fuzzing builds
 * (URING_CHECK) check it: each queued operation remembers the file its
 * descriptor was (device, inode: eventfds all share one, so one eventfd
 * taking another's number goes unseen), and a submission that finds
 * another file there aborts, naming the descriptor.
 *
 * The ring is restricted (IORING_REGISTER_RESTRICTIONS, set while it is
 * still disabled) to IORING_OP_RECV and IORING_OP_WRITE, and where the
 * loop waits in it IORING_OP_SEND and IORING_OP_EPOLL_WAIT, so the seccomp
 * filter, which can't see inside io_uring_enter(), gives nothing away by
 * allowing it: the ring can do nothing the filter doesn't allow anyway.
 *
 * Waiting in the ring (Linux 6.15 and later, IORING_OP_EPOLL_WAIT): the
 * loop's wait for events is one more operation on the ring, queued after
 * the round's others, so a round ends with a single io_uring_enter() that
 * submits everything and sleeps until epoll has events (uring_epoll_wait(),
 * from loop_wait()), instead of io_uring_enter() plus epoll_wait(). The
 * stream front-end then also queues its end-of-round send() here
 * (uring_send()). As the submission completes the queued calls before it
 * sleeps, it asks for as many completions as it submitted, plus the wait:
 * failures are called back before the events are handed out. Opt-in,
 * with PASST_IO_URING_WAIT=1: it halves the system calls of a round that
 * ends with a write to the stream front-end, but measured no cheaper in
 * CPU time than the two calls (doc/bench-history.md). Otherwise, or where
 * the opcode is missing (the probe says so), uring_flush() submits at the
 * end of the round and epoll_wait() waits.
 *
 * Fallback: when the kernel refuses (no io_uring, kernel.io_uring_disabled,
 * a container's seccomp profile, no restrictions before Linux 5.10) or
 * the environment has PASST_NO_IO_URING=1, uring_on() is false, every
 * uring_*() queueing call returns -1 and callers make the plain system
 * call at once, as they would without this file. The log says which.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "env.h"
#include "log.h"
#include "uring.h"
#include "util.h"

#define URING_ENTRIES 2048		/* TCP_DEFER_MAX discards + writes */
/* Linux 6.15's opcode; Debian 12's headers stop before it */
#define URING_OP_EPOLL_WAIT 59
#define URING_TAG_WAIT UINT64_MAX	/* user_data of the loop's wait */

struct uring_op {
	uring_done_fn done;		/* NULL: free slot, or nobody cares */
	uint64_t tag;
	uint32_t want;			/* expected result */
	bool always;			/* call back whatever the result */
	bool busy;
};

/**
 * struct uring_state - the ring and the operations on it
 * @ring:	the io_uring
 * @ok:		uring_init() set up a ring that works here
 * @wait:	the loop waits in the ring
 * @ctx:	execution context, for the callbacks
 * @ops:	operations by slot (the SQE's user_data)
 * @op_next:	where to look for a free slot
 * @queued:	SQEs not yet submitted...
 * @queued_fd:	...and the descriptors they name
 * @closing:	closes waiting for a submission...
 * @nclosing:	...how many
 * @inflight:	submitted, no completion yet
 * @due:	operations to call back (failed ones, and sends), only from
 *		uring_flush() or uring_epoll_wait(): never from inside a
 *		queueing call, whose caller may be in the middle of a loop
 * @due.done:	the callback
 * @due.tag:	its tag
 * @due.res:	the result
 * @ndue:	entries in @due
 * @due_head:	the first not called back yet
 */
static struct uring_state {
	struct io_uring ring;
	bool ok;
	bool wait;
	struct ctx *ctx;
	struct uring_op ops[URING_ENTRIES];
	unsigned op_next;
	unsigned queued;
	int queued_fd[URING_ENTRIES];
	int closing[URING_ENTRIES];
	unsigned nclosing;
	unsigned inflight;
	struct {
		uring_done_fn done;
		uint64_t tag;
		int res;
	} due[URING_ENTRIES];
	unsigned ndue;
	unsigned due_head;
} ur;

/**
 * uring_on() - is the ring in use?
 *
 * Return: true if uring_init() set up a ring that works here; false if
 *	   there is none (PASST_NO_IO_URING, an old kernel, a sandbox that
 *	   forbids it), and callers take their synchronous paths
 */
bool uring_on(void)
{
	return ur.ok;
}

/**
 * uring_waits() - does the loop wait in the ring (uring_epoll_wait())?
 *
 * Return: true if so: the end of a round submits nothing itself
 */
bool uring_waits(void)
{
	return ur.wait;
}

/**
 * uring_reap() - read every completion there is, noting those to call back
 * @wait_res:	the result of the loop's wait, if it came, NULL if not asked
 */
static void uring_reap(int *wait_res)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	io_uring_for_each_cqe(&ur.ring, head, cqe) {
		uint64_t i = io_uring_cqe_get_data64(cqe);
		struct uring_op *op;

		n++;
		if (i == URING_TAG_WAIT && wait_res) {
			*wait_res = cqe->res;
			continue;
		}
		if (i >= URING_ENTRIES || !ur.ops[i].busy)
			continue;
		op = &ur.ops[i];
		op->busy = false;
		ur.inflight--;
		if (ur.ndue == URING_ENTRIES && ur.due_head) {
			/* Callbacks under way: drop the ones made */
			memmove(ur.due, ur.due + ur.due_head,
				(ur.ndue - ur.due_head) * sizeof(ur.due[0]));
			ur.ndue -= ur.due_head;
			ur.due_head = 0;
		}
		if (op->done && (op->always || cqe->res != (int)op->want) &&
		    ur.ndue < URING_ENTRIES) {
			ur.due[ur.ndue].done = op->done;
			ur.due[ur.ndue].tag = op->tag;
			ur.due[ur.ndue++].res = cqe->res;
		}
	}
	io_uring_cq_advance(&ur.ring, n);
}

#ifdef URING_CHECK
/* What the descriptors of the queued operations were when queued */
static struct {
	dev_t dev;
	ino_t ino;
} queued_id[URING_ENTRIES];

/* The file @fd is, into queued_id[@i] */
static void uring_id_get(unsigned i, int fd)
{
	struct stat st;

	memset(&queued_id[i], 0, sizeof(queued_id[i]));
	if (!fstat(fd, &st)) {
		queued_id[i].dev = st.st_dev;
		queued_id[i].ino = st.st_ino;
	}
}

/**
 * uring_id_check() - every queued operation still names its file
 *
 * Checked before a submission: a descriptor closed (and maybe taken again)
 * while a queued operation names it is a bug of ours, abort().
 */
static void uring_id_check(void)
{
	unsigned i;

	for (i = 0; i < ur.queued; i++) {
		struct stat st;

		if (fstat(ur.queued_fd[i], &st) ||
		    st.st_dev != queued_id[i].dev ||
		    st.st_ino != queued_id[i].ino) {
			err("io_uring: descriptor %i was closed (and maybe "
			    "taken again) while a queued operation named it",
			    ur.queued_fd[i]);
			abort();
		}
	}
}
#else
static void uring_id_get(unsigned i, int fd)
{
	(void)i;
	(void)fd;
}

static void uring_id_check(void)
{
}
#endif

/* Does an operation not submitted yet name @fd? */
static bool uring_names(int fd)
{
	unsigned i;

	for (i = 0; i < ur.queued; i++) {
		if (ur.queued_fd[i] == fd)
			return true;
	}
	return false;
}

/**
 * uring_submitted() - the kernel took the oldest queued SQEs
 * @n:		number of SQEs it took
 *
 * The others (an error stopped it) still name their descriptors; closes that
 * waited for the ones taken go ahead unless still named.
 */
static void uring_submitted(unsigned n)
{
	unsigned i;

	n = MIN(n, ur.queued);
	memmove(ur.queued_fd, ur.queued_fd + n, (ur.queued - n) * sizeof(int));
#ifdef URING_CHECK
	memmove(queued_id, queued_id + n,
		(ur.queued - n) * sizeof(queued_id[0]));
#endif
	ur.queued -= n;
	/* Closes that waited for this, unless still named (another error) */
	for (i = 0; i < ur.nclosing;) {
		if (uring_names(ur.closing[i])) {
			i++;
			continue;
		}
		close(ur.closing[i]);
		ur.closing[i] = ur.closing[--ur.nclosing];
	}
}

/* Submit what was queued (one io_uring_enter()): the kernel holds its
 * descriptors from then on
 */
static void uring_submit(void)
{
	int rc;

	if (!ur.queued)
		return;
	uring_id_check();
	do
		rc = io_uring_submit(&ur.ring);
	while (rc == -EINTR);
	if (rc < 0)
		warn_rl("io_uring: submit: %s", strerror(-rc));
	uring_submitted(rc < 0 ? 0 : (unsigned)rc);
}

/* Submit what was queued, read what completed */
static void uring_submit_reap(void)
{
	uring_submit();
	if (ur.inflight)
		uring_reap(NULL);
}

/*
 * Call back the owners of the operations noted so far. A callback may
 * queue, close (uring_close()) and so reap more: those are noted after
 * the others, and called back in this same pass; a nested call returns
 */
static void uring_callbacks(void)
{
	static bool running;

	if (running)
		return;
	running = true;
	while (ur.due_head < ur.ndue) {
		unsigned i = ur.due_head++;

		ur.due[i].done(ur.ctx, ur.due[i].tag, ur.due[i].res);
	}
	ur.ndue = ur.due_head = 0;
	running = false;
}

/**
 * uring_flush() - submit what was queued, read what completed, and call
 *		   back the owners of failed operations and sends
 *
 * One io_uring_enter(), only if something was queued.
 */
void uring_flush(void)
{
	if (!ur.ok)
		return;
	uring_submit_reap();
	uring_callbacks();
}

/**
 * uring_epoll_wait() - submit the round's calls and wait for events, in
 *			one io_uring_enter()
 * @epfd:	epoll descriptor
 * @ev:		events, filled in
 * @max:	size of @ev
 *
 * The owners of failed operations and of sends are called back before
 * this returns.
 * An error is as fatal as one of epoll_wait() (loop_wait() dies): a wait
 * left behind in the ring could take edge-triggered events later.
 *
 * Return: number of events, or -errno
 */
int uring_epoll_wait(int epfd, struct epoll_event *ev, int max)
{
	int res = INT32_MIN, rc;
	struct io_uring_sqe *sqe;

	if (!(sqe = io_uring_get_sqe(&ur.ring))) {
		uring_submit_reap();
		if (!(sqe = io_uring_get_sqe(&ur.ring)))
			return -EBUSY;
	}
	io_uring_prep_rw(URING_OP_EPOLL_WAIT, sqe, epfd, ev, (unsigned)max, 0);
	io_uring_sqe_set_data64(sqe, URING_TAG_WAIT);

	/* What was queued completes while it's submitted: count it in */
	uring_id_check();
	rc = io_uring_submit_and_wait(&ur.ring, ur.queued + 1);
	while (rc == -EINTR)
		rc = io_uring_submit_and_wait(&ur.ring, 1);
	if (rc < 0)
		return rc;
	uring_submitted((unsigned)rc);
	uring_reap(&res);
	/* Something that went asynchronous came first: wait on */
	while (res == INT32_MIN) {
		struct io_uring_cqe *cqe;

		rc = io_uring_wait_cqe(&ur.ring, &cqe);
		if (rc && rc != -EINTR)
			return rc;
		uring_reap(&res);
	}
	uring_callbacks();
	return res;
}

/**
 * uring_get() - a free SQE and operation slot
 * @slot:	the slot, filled in
 *
 * Flushes (and, if all slots are in flight, waits for one completion) when
 * there are none.
 *
 * Return: the SQE, NULL if none can be had
 */
static struct io_uring_sqe *uring_get(unsigned *slot)
{
	struct io_uring_sqe *sqe;
	unsigned i;

	if (ur.queued + ur.inflight >= URING_ENTRIES) {
		uring_submit_reap();
		if (ur.inflight >= URING_ENTRIES) {
			struct io_uring_cqe *cqe;

			if (io_uring_wait_cqe(&ur.ring, &cqe))
				return NULL;
			uring_reap(NULL);
		}
	}
	/* The slot first: an SQE taken and left unfilled would go to the
	 * kernel with the last operation it held
	 */
	for (i = 0; i < URING_ENTRIES; i++) {
		unsigned s = (ur.op_next + i) % URING_ENTRIES;

		if (!ur.ops[s].busy) {
			*slot = s;
			break;
		}
	}
	if (i == URING_ENTRIES)
		return NULL;	/* can't be: slots >= queued + inflight */
	sqe = io_uring_get_sqe(&ur.ring);
	if (!sqe) {
		uring_submit_reap();
		if (!(sqe = io_uring_get_sqe(&ur.ring)))
			return NULL;
	}
	ur.op_next = (*slot + 1) % URING_ENTRIES;
	return sqe;
}

/**
 * uring_queue() - note a prepared SQE as queued, with its callback
 * @sqe:	the SQE, prepared
 * @slot:	its operation slot, from uring_get()
 * @fd:		descriptor the operation names
 * @done:	callback for the result, NULL for none
 * @tag:	passed to @done
 * @want:	expected result
 * @always:	call @done back whatever the result, not only unexpected ones
 *
 * Return: 0
 */
static int uring_queue(struct io_uring_sqe *sqe, unsigned slot, int fd,
		       uring_done_fn done, uint64_t tag, uint32_t want,
		       bool always)
{
	uring_id_get(ur.queued, fd);
	ur.queued_fd[ur.queued] = fd;
	ur.ops[slot].busy = true;
	ur.ops[slot].always = always;
	ur.ops[slot].done = done;
	ur.ops[slot].tag = tag;
	ur.ops[slot].want = want;
	io_uring_sqe_set_data64(sqe, slot);
	ur.queued++;
	ur.inflight++;
	return 0;
}

/**
 * uring_recv_trunc() - queue a recv(MSG_TRUNC | MSG_DONTWAIT) of @len bytes
 * @s:		socket, closed only with uring_close()
 * @len:	bytes to drop from its receive queue
 * @done:	called (from a later uring_flush()) if fewer went, or an error
 * @tag:	passed to @done
 *
 * Return: 0 if queued, -1 if the caller must make the call itself
 */
int uring_recv_trunc(int s, uint32_t len, uring_done_fn done, uint64_t tag)
{
	struct io_uring_sqe *sqe;
	unsigned slot;

	if (!ur.ok || !(sqe = uring_get(&slot)))
		return -1;
	io_uring_prep_recv(sqe, s, NULL, len, MSG_TRUNC | MSG_DONTWAIT);
	return uring_queue(sqe, slot, s, done, tag, len, false);
}

/**
 * uring_write() - queue a write(), for eventfds (never blocks)
 * @fd:		descriptor, closed only with uring_close()
 * @buf:	bytes, valid until the write completed (static)
 * @len:	length
 *
 * Return: 0 if queued, -1 if the caller must make the call itself
 */
int uring_write(int fd, const void *buf, uint32_t len)
{
	struct io_uring_sqe *sqe;
	unsigned slot;

	if (!ur.ok || !(sqe = uring_get(&slot)))
		return -1;
	io_uring_prep_write(sqe, fd, buf, len, 0);
	return uring_queue(sqe, slot, fd, NULL, 0, len, false);
}

/**
 * uring_send() - queue a send(MSG_DONTWAIT | MSG_NOSIGNAL), only where the
 *		  loop waits in the ring (it completes during that wait)
 * @s:		socket, closed only with uring_close()
 * @buf:	bytes, untouched until then
 * @len:	length
 * @done:	called from that wait with the result, whatever it is: until
 *		then the bytes are the kernel's
 * @tag:	passed to @done
 *
 * Return: 0 if queued, -1 if the caller must make the call itself
 */
int uring_send(int s, const void *buf, uint32_t len, uring_done_fn done,
	       uint64_t tag)
{
	struct io_uring_sqe *sqe;
	unsigned slot;

	if (!ur.wait || !(sqe = uring_get(&slot)))
		return -1;
	io_uring_prep_send(sqe, s, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	return uring_queue(sqe, slot, s, done, tag, len, true);
}

/**
 * uring_close() - close a descriptor that queued operations may name
 * @fd:		descriptor, or -1 (nothing to do)
 *
 * If an operation not submitted yet names @fd, everything queued goes to
 * the kernel first (see "Descriptors" above), and if that fails, the
 * close waits for the next submission that takes it.
 */
void uring_close(int fd)
{
	if (fd < 0)
		return;
	if (ur.ok && uring_names(fd)) {
		uring_submit();
		if (uring_names(fd) && ur.nclosing < URING_ENTRIES) {
			ur.closing[ur.nclosing++] = fd;
			return;
		}
	}
	close(fd);
}

/* Can the kernel wait for epoll events in a ring (Linux 6.15)? */
static bool uring_probe_wait(void)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(&ur.ring);
	bool ok;

	if (!p)
		return false;
	ok = p->last_op >= URING_OP_EPOLL_WAIT &&
	     io_uring_opcode_supported(p, URING_OP_EPOLL_WAIT) &&
	     io_uring_opcode_supported(p, IORING_OP_SEND);
	io_uring_free_probe(p);
	return ok;
}

/**
 * uring_setup() - set the ring up, restricted to our opcodes, and enable it
 * @wait:	the loop is to wait for epoll events in the ring
 *
 * Return: 0 or -errno
 */
static int uring_setup(bool wait)
{
	struct io_uring_restriction r[4];
	unsigned flags = IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_COOP_TASKRUN;
	unsigned nr = 2;
	int rc;

	rc = io_uring_queue_init(URING_ENTRIES, &ur.ring, flags);
	if (rc == -EINVAL) {
		/* Before Linux 6.0: no SINGLE_ISSUER (5.19: COOP_TASKRUN) */
		flags = IORING_SETUP_R_DISABLED;
		rc = io_uring_queue_init(URING_ENTRIES, &ur.ring, flags);
	}
	if (rc)
		return rc;

	memset(r, 0, sizeof(r));
	r[0].opcode = IORING_RESTRICTION_SQE_OP;
	r[0].sqe_op = IORING_OP_RECV;
	r[1].opcode = IORING_RESTRICTION_SQE_OP;
	r[1].sqe_op = IORING_OP_WRITE;
	ur.wait = wait && uring_probe_wait();
	if (ur.wait) {
		r[nr].opcode = IORING_RESTRICTION_SQE_OP;
		r[nr++].sqe_op = IORING_OP_SEND;
		r[nr].opcode = IORING_RESTRICTION_SQE_OP;
		r[nr++].sqe_op = URING_OP_EPOLL_WAIT;
	}
	/* Debian 12's liburing.so doesn't export io_uring_register_
	 * restrictions() and io_uring_enable_rings(): the system call
	 */
	if (syscall(__NR_io_uring_register, ur.ring.ring_fd,
		    IORING_REGISTER_RESTRICTIONS, r, nr) < 0 ||
	    syscall(__NR_io_uring_register, ur.ring.ring_fd,
		    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0) {
		rc = -errno;
		io_uring_queue_exit(&ur.ring);
		ur.wait = false;
		return rc;
	}
	return 0;
}

/**
 * uring_init() - set the ring up, or settle for plain system calls
 * @c:		execution context, for the callbacks
 *
 * Before the sandbox: io_uring_setup() and io_uring_register() are not in
 * the seccomp allow-list, only io_uring_enter() is.
 */
void uring_init(struct ctx *c)
{
	int rc;

	ur.ctx = c;
	if (env_get()->no_io_uring) {
		info("io_uring: not used (PASST_NO_IO_URING): plain system "
		     "calls");
		return;
	}
	if ((rc = uring_setup(env_get()->io_uring_wait))) {
		info("io_uring: unavailable (%s): plain system calls",
		     strerror(-rc));
		return;
	}
	ur.ok = true;
	if (ur.wait)
		info("io_uring: end-of-round socket discards, notifications "
		     "and front-end writes batched, and the loop waits in "
		     "the ring (restricted to recv, write, send and "
		     "epoll_wait)");
	else
		info("io_uring: end-of-round socket discards and "
		     "notifications batched (ring restricted to recv and "
		     "write)");
}

/**
 * uring_exit() - tear the ring down (tests; the process exit does it too)
 */
void uring_exit(void)
{
	unsigned i;

	if (ur.ok) {
		uring_flush();
		io_uring_queue_exit(&ur.ring);
	}
	for (i = 0; i < ur.nclosing; i++)
		close(ur.closing[i]);
	ur.ok = ur.wait = false;
	memset(ur.ops, 0, sizeof(ur.ops));
	ur.queued = ur.inflight = ur.op_next = 0;
	ur.ndue = ur.due_head = ur.nclosing = 0;
}
