// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uring.c - io_uring for the system calls that end a loop round.
 *
 * Theory of operation
 *
 * At the end of every loop round (main_round_end()) the daemon makes a few
 * small system calls whose results nobody waits for: one recv(MSG_TRUNC)
 * per connection to drop what the guest ACKed during the round (tcp.c,
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
 * index and generation, say), from uring_flush() only, never from inside
 * a queueing call: the owner must check that the thing still exists. Owners queue nothing that can be invalidated before the flush:
 * TCP queues its discards after the round's last close can have happened.
 *
 * The ring is restricted (IORING_REGISTER_RESTRICTIONS, set while it is
 * still disabled) to IORING_OP_RECV and IORING_OP_WRITE, so the seccomp
 * filter, which can't see inside io_uring_enter(), gives nothing away by
 * allowing it: the ring can do nothing the filter doesn't allow anyway.
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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "uring.h"
#include "util.h"

#define URING_ENTRIES 2048		/* TCP_DEFER_MAX discards + writes */

struct uring_op {
	uring_done_fn done;		/* NULL: free slot, or nobody cares */
	uint64_t tag;
	uint32_t want;			/* expected result */
	bool busy;
};

static struct io_uring ring;
static bool ring_ok;
static struct ctx *ring_ctx;
static struct uring_op ops[URING_ENTRIES];
static unsigned op_next;		/* where to look for a free slot */
static unsigned queued;			/* SQEs not yet submitted */
static unsigned inflight;		/* submitted, no completion yet */

/* Failed operations, called back only from uring_flush(): never from
 * inside a queueing call, whose caller may be in the middle of a loop
 */
static struct {
	uring_done_fn done;
	uint64_t tag;
	int res;
} fails[URING_ENTRIES];
static unsigned nfails;

bool uring_on(void)
{
	return ring_ok;
}

/* Read every completion there is, noting failed operations */
static void uring_reap(void)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;

	io_uring_for_each_cqe(&ring, head, cqe) {
		uint64_t i = io_uring_cqe_get_data64(cqe);
		struct uring_op *op;

		n++;
		if (i >= URING_ENTRIES || !ops[i].busy)
			continue;
		op = &ops[i];
		op->busy = false;
		inflight--;
		if (op->done && cqe->res != (int)op->want &&
		    nfails < URING_ENTRIES) {
			fails[nfails].done = op->done;
			fails[nfails].tag = op->tag;
			fails[nfails++].res = cqe->res;
		}
	}
	io_uring_cq_advance(&ring, n);
}

/* Submit what was queued (one io_uring_enter()), read what completed */
static void uring_submit_reap(void)
{
	int rc;

	if (queued) {
		do
			rc = io_uring_submit(&ring);
		while (rc == -EINTR);
		if (rc < 0)
			warn_rl("io_uring: submit: %s", strerror(-rc));
		queued = 0;
	}
	if (inflight)
		uring_reap();
}

/**
 * uring_flush() - submit what was queued, read what completed, and call
 *		   back the owners of failed operations
 *
 * One io_uring_enter(), only if something was queued.
 */
void uring_flush(void)
{
	unsigned i, n;

	if (!ring_ok)
		return;
	uring_submit_reap();
	n = nfails;
	nfails = 0;
	for (i = 0; i < n; i++)
		fails[i].done(ring_ctx, fails[i].tag, fails[i].res);
}

/* A free SQE and slot, flushing (and, if all are in flight, waiting for
 * one completion) when there are none
 */
static struct io_uring_sqe *uring_get(unsigned *slot)
{
	struct io_uring_sqe *sqe;
	unsigned i;

	if (queued + inflight >= URING_ENTRIES) {
		uring_submit_reap();
		if (inflight >= URING_ENTRIES) {
			struct io_uring_cqe *cqe;

			if (io_uring_wait_cqe(&ring, &cqe))
				return NULL;
			uring_reap();
		}
	}
	sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		uring_submit_reap();
		if (!(sqe = io_uring_get_sqe(&ring)))
			return NULL;
	}
	for (i = 0; i < URING_ENTRIES; i++) {
		unsigned s = (op_next + i) % URING_ENTRIES;

		if (!ops[s].busy) {
			op_next = (s + 1) % URING_ENTRIES;
			*slot = s;
			return sqe;
		}
	}
	return NULL;	/* can't be: slots >= queued + inflight */
}

static int uring_queue(struct io_uring_sqe *sqe, unsigned slot,
		       uring_done_fn done, uint64_t tag, uint32_t want)
{
	ops[slot].busy = true;
	ops[slot].done = done;
	ops[slot].tag = tag;
	ops[slot].want = want;
	io_uring_sqe_set_data64(sqe, slot);
	queued++;
	inflight++;
	return 0;
}

/**
 * uring_recv_trunc() - queue a recv(MSG_TRUNC | MSG_DONTWAIT) of @len bytes
 * @s:		socket, open until the next uring_flush()
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

	if (!ring_ok || !(sqe = uring_get(&slot)))
		return -1;
	io_uring_prep_recv(sqe, s, NULL, len, MSG_TRUNC | MSG_DONTWAIT);
	return uring_queue(sqe, slot, done, tag, len);
}

/**
 * uring_write() - queue a write(), for eventfds (never blocks)
 * @fd:		descriptor, open until the next uring_flush()
 * @buf:	bytes, valid until the write completed (static)
 * @len:	length
 *
 * Return: 0 if queued, -1 if the caller must make the call itself
 */
int uring_write(int fd, const void *buf, uint32_t len)
{
	struct io_uring_sqe *sqe;
	unsigned slot;

	if (!ring_ok || !(sqe = uring_get(&slot)))
		return -1;
	io_uring_prep_write(sqe, fd, buf, len, 0);
	return uring_queue(sqe, slot, NULL, 0, len);
}

/* Set the ring up disabled, restrict it to our two opcodes, enable it */
static int uring_setup(void)
{
	struct io_uring_restriction r[2];
	unsigned flags = IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_COOP_TASKRUN;
	int rc;

	rc = io_uring_queue_init(URING_ENTRIES, &ring, flags);
	if (rc == -EINVAL) {
		/* Before Linux 6.0: no SINGLE_ISSUER (5.19: COOP_TASKRUN) */
		flags = IORING_SETUP_R_DISABLED;
		rc = io_uring_queue_init(URING_ENTRIES, &ring, flags);
	}
	if (rc)
		return rc;

	memset(r, 0, sizeof(r));
	r[0].opcode = IORING_RESTRICTION_SQE_OP;
	r[0].sqe_op = IORING_OP_RECV;
	r[1].opcode = IORING_RESTRICTION_SQE_OP;
	r[1].sqe_op = IORING_OP_WRITE;
	/* Debian 12's liburing.so doesn't export io_uring_register_
	 * restrictions() and io_uring_enable_rings(): the system call
	 */
	if (syscall(__NR_io_uring_register, ring.ring_fd,
		    IORING_REGISTER_RESTRICTIONS, r, 2) < 0 ||
	    syscall(__NR_io_uring_register, ring.ring_fd,
		    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0) {
		rc = -errno;
		io_uring_queue_exit(&ring);
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
	const char *no = getenv("PASST_NO_IO_URING");
	int rc;

	ring_ctx = c;
	if (no && *no && strcmp(no, "0")) {
		info("io_uring: not used (PASST_NO_IO_URING): plain system "
		     "calls");
		return;
	}
	if ((rc = uring_setup())) {
		info("io_uring: unavailable (%s): plain system calls",
		     strerror(-rc));
		return;
	}
	ring_ok = true;
	info("io_uring: end-of-round socket discards and notifications "
	     "batched (ring restricted to recv and write)");
}

/**
 * uring_exit() - tear the ring down (tests; the process exit does it too)
 */
void uring_exit(void)
{
	if (ring_ok) {
		uring_flush();
		io_uring_queue_exit(&ring);
	}
	ring_ok = false;
	memset(ops, 0, sizeof(ops));
	queued = inflight = op_next = nfails = 0;
}
