// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * stream_out.c - the qemu stream front-end's output: frames to the guest,
 * each with its 4-byte big-endian length prefix, queued in a ring and
 * written to the connected UNIX stream socket (the connection and the
 * input: stream/stream.c)
 *
 * Theory of operation
 *
 * The ring: frames are appended, prefix and all, to one output buffer, a
 * ring (STREAM_OUT_SIZE) of a shared memory file mapped twice back to
 * back, so that a frame, or a whole batch of frames built in place, is
 * contiguous wherever it starts. An empty ring starts again at its
 * origin.
 *
 * When: frames go to the socket once per read batch and once per event
 * loop round (the flush operation), however much is queued (megabytes
 * towards a fast guest): smaller sends would find the data still in the
 * cache, but every send() wakes the reader, which costs more than the
 * cache saves.
 *
 * By reference: sendfile() from the file hands the ring's pages to the
 * socket, and the front-end's recv() copies out of them, which saves the
 * copy a send() makes. The kernel then holds references to the ring, so
 * what the front-end hasn't read must not be overwritten: the ring reuses
 * bytes only once SIOCOUTQ (what the socket still holds, in memory
 * charged, so at least its bytes) says they were read. The socket holds
 * at most half the ring (SO_SNDBUF). Huge pages pay here: the file is on
 * a tmpfs of our own with huge pages (hugefile.c; a memfd where that's
 * refused, or with PASST_NO_HUGEFILE=1), whose 2 MiB pages the kernel
 * finds, references and maps as one; but for the file's first 2 MiB, see
 * stream_out_init(). (vmsplice() into a pipe and splice() into the socket
 * would do the same with one more call and pinned pages.)
 *
 * By copy: fewer than STREAM_ZC_MIN queued bytes go with one send()
 * instead, as do all where sendfile() from the file isn't allowed (tried
 * at start-up) or with PASST_NO_SPLICE=1, and all after a sendfile()
 * refused later on (what the socket still holds by reference is
 * reclaimed as ever). Where the loop waits in the io_uring (uring.c,
 * opt-in), that send() is queued there and goes with the wait
 * (stream_flush_end()); its callback, which runs before any event is
 * handled, frees what the socket took and puts back what it didn't.
 *
 * Partial writes: a frame is never split between buffer and socket by
 * us: if the socket takes only part of what is queued, the rest stays,
 * and EPOLLOUT (armed while bytes are queued or the ring runs low on
 * room) wakes us to resume exactly where the kernel stopped. The loop
 * never blocks.
 *
 * Failures: if the front-end goes with bytes unread, the ring gets new
 * pages (a hole punched in the file: the old ones live on for the old
 * socket), so the next front-end's frames never reach it. If the buffer
 * has no room for a frame (the guest stopped reading), the frame is
 * dropped and counted, and the count is logged, rate-limited.
 *
 * Figures (the copy saved, ring sizes, huge pages): doc/bench-history.md,
 * "Stream output".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "env.h"
#include "hugefile.h"
#include "log.h"
#include "tap/pcap.h"
#include "stream/stream.h"
#include "stream/stream_internal.h"
#include "tap/tap.h"
#include "uring.h"
#include "util.h"

/**
 * struct stream_out - the output ring and how it's written
 * @ring:	the ring, mapped twice back to back
 * @file:	the file it maps, -1 before stream_out_init()
 * @free:	positions before this are free
 * @sock:	...before this, in the socket
 * @tail:	...before this, queued
 * @waiting:	EPOLLOUT requested
 * @zc:		we write by reference, sendfile() (see above)
 * @resv_ptr:	frames being built in place: stream_seg_reserve() hands out
 *		pointers from where @tail was then, and stream_seg_commit()
 *		takes them back...
 * @resv_pos:	...and that position
 * @dropped:	frames dropped: buffer full
 * @uring_start: a send() queued on the io_uring starts here...
 * @uring_busy:	...and hasn't completed yet
 * @fd:		the connected socket (stream.c), -1 if none
 * @gen:	its generation, which the queued send()s carry
 *
 * The ring: STREAM_OUT_SIZE bytes of a file, mapped twice back to back,
 * so that whatever starts in the first mapping runs on contiguously.
 * Positions count bytes queued since the ring was last empty, and
 *   @free <= @sock <= @tail:
 * before @free, the front-end has read everything (or holds no reference
 * to it): free; before @sock, in the socket; before @tail, queued. A
 * position's byte is at offset (position + STREAM_OUT_ORIGIN) %
 * STREAM_OUT_SIZE of the file.
 */
static struct stream_out {
	uint8_t *ring;
	int file;
	size_t free, sock, tail;
	bool waiting;
	bool zc;
	uint8_t *resv_ptr;
	size_t resv_pos;
	uint64_t dropped;
	size_t uring_start;
	bool uring_busy;
	int fd;
	uint32_t gen;
} out = { .file = -1, .fd = -1 };
#ifdef PASST_TEST_HOOKS
static long hook_sendfile_ok = -1;	/* sendfile() calls left to succeed */
#endif

/* Where an empty ring starts again: past the file's first 2 MiB, which
 * have small pages (see stream_out_init()), so that what's queued in a
 * round lies on huge pages, unless it's more than the rest of the ring
 */
#define STREAM_OUT_ORIGIN	HUGEFILE_ALIGN

#define OUT_OFF(pos)	(((pos) + STREAM_OUT_ORIGIN) % STREAM_OUT_SIZE)
#define OUT_AT(pos)	(out.ring + OUT_OFF(pos))

/* Fewer queued bytes than this go out with send() (a copy): the page
 * references cost more than copying a few frames
 */
#define STREAM_ZC_MIN (16 * 1024)

/**
 * stream_out_reset() - empty the output buffer, for a new connection
 * @fd:		the connected socket (stream.c), -1 if none
 * @gen:	generation of the connection, which the queued send()s carry
 *
 * Also after one gone with bytes unread. Dies if the ring can't get new
 * pages.
 */
void stream_out_reset(int fd, uint32_t gen)
{
	if (out.free != out.sock) {
		/* A front-end gone with bytes unread may still hold them in
		 * its socket (by reference, also if we copy since a failed
		 * sendfile()): give the ring new pages, so that it never sees
		 * what we queue for the next one
		 */
		if (fallocate(out.file,
			      FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, STREAM_OUT_SIZE))
			die_perror("stream output buffer: new pages");
	}
	out.free = out.sock = out.tail = 0;
	out.waiting = false;
	out.uring_busy = false;
	out.fd = fd;
	out.gen = gen;
}

/**
 * stream_zc_probe() - can we sendfile() from the file into a UNIX socket?
 *
 * Tried on a socket pair, with bytes written at the start of the file read
 * back.
 *
 * Return: true if so
 */
static bool stream_zc_probe(void)
{
	static const uint8_t pat[4] = { 'p', 'a', 's', 't' };
	off_t off = 0;
	uint8_t back[4];
	bool ok;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return false;
	memcpy(out.ring, pat, sizeof(pat));
	ok = sendfile(sv[0], out.file, &off, sizeof(pat)) == sizeof(pat) &&
	     recv(sv[1], back, sizeof(back), MSG_DONTWAIT) == sizeof(back) &&
	     !memcmp(back, pat, sizeof(pat));
	close(sv[0]);
	close(sv[1]);
	return ok;
}

/**
 * stream_out_init() - map the output buffer, and choose how it's written
 *
 * Before the sandbox: memfd_create(), mmap() and socketpair()
 * aren't allowed after it. Dies if the buffer can't be mapped.
 */
void stream_out_init(void)
{
	const char *why, *huge_why;
	size_t slack;
	uint8_t *base;
	int fd;

	if (out.ring)
		return;
	fd = hugefile_open(STREAM_OUT_SIZE, &huge_why);
	if (fd < 0) {
		fd = memfd_create("passt-stream-out", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, STREAM_OUT_SIZE))
			die_perror("stream output buffer");
	}
	/* Two mappings back to back, the first aligned for huge pages */
	base = mmap(NULL, 2 * STREAM_OUT_SIZE + HUGEFILE_ALIGN, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		die_perror("stream output buffer: mapping");
	slack = (HUGEFILE_ALIGN - (uintptr_t)base % HUGEFILE_ALIGN) %
		HUGEFILE_ALIGN;
	if (slack)
		munmap(base, slack);
	munmap(base + slack + 2 * STREAM_OUT_SIZE, HUGEFILE_ALIGN - slack);
	base += slack;
	if (mmap(base, STREAM_OUT_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap(base + STREAM_OUT_SIZE, STREAM_OUT_SIZE,
		 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED)
		die_perror("stream output buffer: mapping");
	/* Frames only run on into the second mapping, past the ring's end,
	 * and only there would a page of the file be mapped twice, and
	 * counted twice in our RSS. The kernel maps a huge page whole at its
	 * first touch, whichever the mapping: so the file's first 2 MiB get
	 * small pages, as both mappings of them have huge pages off (which
	 * also keeps khugepaged from merging them later), and so does the
	 * second mapping, whatever it touches. An empty ring starts again
	 * past them (STREAM_OUT_ORIGIN), where the pages are huge.
	 */
	madvise(base, HUGEFILE_ALIGN, MADV_NOHUGEPAGE);
	madvise(base + STREAM_OUT_SIZE, STREAM_OUT_SIZE, MADV_NOHUGEPAGE);
	/* Volatile: to the compiler, these are two different bytes */
	((volatile uint8_t *)base)[STREAM_OUT_SIZE] = 1;
	if (((volatile uint8_t *)base)[0] != 1)
		die("stream output buffer: mappings don't alias");
	out.ring = base;
	out.file = fd;
	if (huge_why)
		info("stream: output buffer in a memfd (no huge pages: %s)",
		     huge_why);
	else
		info("stream: output buffer on huge pages (a tmpfs of our own)");

#ifdef PASST_TEST_HOOKS
	if (env_get()->test_sendfile_ok)
		hook_sendfile_ok = atol(env_get()->test_sendfile_ok);
#endif
	if (env_get()->no_splice) {
		why = "PASST_NO_SPLICE";
	} else {
		out.zc = stream_zc_probe();
		why = out.zc ? NULL : "sendfile() refused";
	}
	if (out.zc)
		info("stream: frames to the front-end spliced from the "
		     "output buffer (sendfile), not copied");
	else
		info("stream: frames to the front-end copied with send() "
		     "(zero-copy not used: %s)", why);
}

/**
 * stream_out_waiting() - is EPOLLOUT requested (stream_out_wait())?
 *
 * Return: true while we wait for the front-end to read
 */
bool stream_out_waiting(void)
{
	return out.waiting;
}

/* Room in the ring, as far as we know (stream_reclaim() knows better) */
static size_t stream_out_room(void)
{
	return STREAM_OUT_SIZE - (out.tail - out.free);
}

/* Learn what the front-end has read: what its socket still holds is at
 * most what SIOCOUTQ says (the memory charged for it, overhead included)
 */
static void stream_reclaim(void)
{
	int outq;

	if (out.free < out.sock && out.fd >= 0 &&
	    !ioctl(out.fd, SIOCOUTQ, &outq) && outq >= 0 &&
	    (size_t)outq < out.sock - out.free)
		out.free = out.sock - (size_t)outq;
}

/* Before queueing: an empty ring starts again at its beginning, which
 * the cache may still hold
 */
static void stream_out_rewind(void)
{
	if (out.free == out.tail)
		out.free = out.sock = out.tail = 0;
}

/**
 * stream_queue() - queue one frame for the guest
 * @c:		execution context
 * @frame:	Ethernet frame
 * @len:	its length, at most STREAM_FRAME_MAX
 *
 * Return: 0, -ENOTCONN without a client, -ENOBUFS if dropped (counted)
 */
int stream_queue(struct ctx *c, const void *frame, size_t len)
{
	uint32_t prefix = htonl((uint32_t)len);
	uint8_t *p;

	if (out.fd < 0)
		return -ENOTCONN;

	if (stream_out_room() < len + 4) {
		stream_flush(c);
		stream_reclaim();
	}
	stream_out_rewind();
	if (stream_out_room() < len + 4) {
		out.dropped++;
		warn_rl("Front-end not reading: %llu frame(s) dropped so far",
			(unsigned long long)out.dropped);
		return -ENOBUFS;
	}
	p = OUT_AT(out.tail);
	memcpy(p, &prefix, 4);
	memcpy(p + 4, frame, len);
	out.tail += len + 4;
	return 0;
}

/**
 * stream_seg_reserve() - reserve frames in the output buffer, to be built
 *			  in place (see tap_seg_reserve())
 * @c:		execution context
 * @hlen:	header bytes per frame
 * @plen:	payload bytes per frame, at most
 * @n:		frames wanted
 * @seg:	filled with the frames
 * @iov:	filled with one payload piece per frame
 * @iov_max:	room in @iov
 *
 * Frames are laid out back to back, each after room for its prefix, so
 * that frames sent in order, all full but the last, end up exactly where
 * stream_queue() would have put them. The ring's second mapping makes
 * the whole reservation contiguous.
 *
 * Return: number of frames reserved
 */
unsigned stream_seg_reserve(struct ctx *c, size_t hlen, size_t plen,
			    unsigned n, struct tap_seg *seg,
			    struct iovec *iov, unsigned iov_max)
{
	size_t slot = 4 + MAX(hlen + plen, (size_t)FRAME_MIN_LEN);
	unsigned i;

	(void)c;
	if (out.fd < 0 || hlen + plen > STREAM_FRAME_MAX)
		return 0;
	if (out.sock == out.tail || stream_out_room() < slot * n)
		stream_reclaim();
	stream_out_rewind();
	n = MIN(n, (unsigned)(stream_out_room() / slot));
	n = MIN(n, iov_max);
	out.resv_ptr = OUT_AT(out.tail);
	out.resv_pos = out.tail;
	for (i = 0; i < n; i++) {
		seg[i].l2 = out.resv_ptr + i * slot + 4;
		seg[i].hlen = hlen;
		seg[i].iov = i;
		seg[i].niov = 1;
		seg[i].cap = plen;
		iov[i].iov_base = seg[i].l2 + hlen;
		iov[i].iov_len = plen;
	}
	return n;
}

/**
 * stream_seg_commit() - queue a frame built in place
 * @c:		execution context
 * @seg:	frame from stream_seg_reserve()
 * @iov:	unused: the payload is in the frame already
 * @len:	its length, from the Ethernet header on
 * @csum_start:	unused, 0: we compute every checksum
 * @csum_off:	unused, 0
 * @gso_size:	unused, 0: frames never carry more than the MSS
 * @family:	unused
 *
 * Return: 0, or -EINVAL if frames weren't sent in order
 */
int stream_seg_commit(struct ctx *c, struct tap_seg *seg,
		      const struct iovec *iov, size_t len,
		      uint16_t csum_start, uint16_t csum_off,
		      uint16_t gso_size, int family)
{
	uint8_t *tail = out.resv_ptr + (out.tail - out.resv_pos);
	uint32_t prefix;

	(void)iov;
	(void)csum_start;
	(void)csum_off;
	(void)gso_size;
	(void)family;
	if (out.fd < 0)
		return -ENOTCONN;
	if (out.tail < out.resv_pos || seg->l2 < tail + 4)
		return -EINVAL;
	if (seg->l2 != tail + 4)	/* after a short frame */
		memmove(tail + 4, seg->l2, len);
	if (len < FRAME_MIN_LEN) {
		memset(tail + 4 + len, 0, FRAME_MIN_LEN - len);
		len = FRAME_MIN_LEN;
	}
	prefix = htonl((uint32_t)len);
	memcpy(tail, &prefix, 4);
	if (c->pcap_file[0])
		pcap_frame(tail + 4, len);
	out.tail += 4 + len;
	return 0;
}

/**
 * stream_room() - how much more can be queued without dropping
 * @c:		execution context
 *
 * Return: free bytes in the output buffer, 0 without a client
 */
size_t stream_room(const struct ctx *c)
{
	(void)c;
	if (out.fd < 0)
		return 0;
	if (stream_out_room() < STREAM_OUT_SIZE / 2)
		stream_reclaim();
	return stream_out_room();
}

/* Arm or disarm EPOLLOUT on the front-end socket */
static void stream_out_wait(struct ctx *c, bool want_out)
{
	out.waiting = want_out;
	stream_epoll_update(c);
}

/* @n bytes queued from position @at were copied into the socket, which
 * now has everything before @at + @n: they're free at once, unless bytes
 * before them are still held by reference (sent with sendfile() before a
 * failed one turned us to copying): stream_reclaim() frees those and these
 * together, once the front-end has read them
 */
static void stream_copied(size_t at, size_t n)
{
	if (out.free == at)
		out.free += n;
	out.sock = at + n;
}

/**
 * stream_push_copy() - copy what's queued into the socket with send()
 *
 * Return: false on an error, true otherwise
 */
static bool stream_push_copy(void)
{
	while (out.sock < out.tail) {
		ssize_t n = send(out.fd, OUT_AT(out.sock),
				 out.tail - out.sock,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				debug("Front-end write: %s", strerror(errno));
			return errno == EAGAIN;
		}
		stream_copied(out.sock, (size_t)n);
	}
	return true;
}

/* sendfile() from the ring's file; the test build's hook
 * (PASST_TEST_SENDFILE_OK=N) fails it with EINVAL after N calls, as a
 * kernel refusing it after the start-up probe would
 */
static ssize_t stream_sendfile(int fd, off_t *off, size_t len)
{
#ifdef PASST_TEST_HOOKS
	if (hook_sendfile_ok >= 0 && !hook_sendfile_ok--) {
		errno = EINVAL;
		return -1;
	}
#endif
	return sendfile(fd, out.file, off, len);
}

/**
 * stream_push_zc() - hand what's queued to the socket by reference
 *
 * sendfile() gives it the file's pages, and the front-end's recv() copies from
 * them: they're reused only once stream_reclaim() knows it has. In at most two
 * calls, as the file ends where the first mapping does.
 *
 * Return: false on an error, true otherwise
 */
static bool stream_push_zc(void)
{
	while (out.sock < out.tail) {
		off_t off = (off_t)OUT_OFF(out.sock);
		size_t len = MIN(out.tail - out.sock,
				 STREAM_OUT_SIZE - (size_t)off);
		ssize_t n = stream_sendfile(out.fd, &off, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return true;
			if (errno == EINVAL || errno == ENOSYS ||
			    errno == EPERM) {
				warn("stream: sendfile(): %s, copying with "
				     "send() from now on", strerror(errno));
				out.zc = false;
				return stream_push_copy();
			}
			debug("Front-end write: %s", strerror(errno));
			return false;
		}
		out.sock += (size_t)n;
		if ((size_t)n < len)		/* the socket is full */
			return true;
	}
	return true;
}

/**
 * stream_flush() - write queued frames; arm EPOLLOUT for what's left
 * @c:		execution context
 *
 * Also while the ring is low on room with nothing queued (bytes the
 * front-end hasn't read yet), so that we learn when it has.
 */
void stream_flush(struct ctx *c)
{
	/* A send() on the io_uring goes first: its completion flushes */
	if (out.fd < 0 || out.uring_busy)
		return;

	if (!out.zc || out.tail - out.sock < STREAM_ZC_MIN)
		stream_push_copy();
	else
		stream_push_zc();

	stream_reclaim();
	stream_out_wait(c, out.sock != out.tail ||
			   stream_out_room() < STREAM_OUT_SIZE / 4);
}

/* The queued send() completed: what the socket took was copied
 * (stream_copied()), what it didn't take is queued again, where it was,
 * and EPOLLOUT armed. Errors also surface as EPOLLHUP/ERR.
 */
static void stream_uring_sent(struct ctx *c, uint64_t gen, int res)
{
	size_t sent = res > 0 ? (size_t)res : 0;

	if (out.fd < 0 || gen != out.gen || !out.uring_busy)
		return;
	out.uring_busy = false;
	if (res < 0 && res != -EAGAIN)
		debug("Front-end write: %s", strerror(-res));
	stream_copied(out.uring_start, sent);
	if (out.sock < out.tail)
		stream_flush(c);
}

/**
 * stream_flush_end() - end of a loop round: write queued frames, with the
 *			loop's wait where it waits in the io_uring
 * @c:		execution context
 *
 * The queued send() copies, so it isn't used to splice. Until it
 * completes, what it sends stays in the ring.
 */
void stream_flush_end(struct ctx *c)
{
	size_t len = out.tail - out.sock;

	if (out.fd < 0 || !len || out.waiting || out.zc || out.uring_busy ||
	    uring_send(out.fd, OUT_AT(out.sock), (uint32_t)len,
		       stream_uring_sent, out.gen)) {
		stream_flush(c);
		return;
	}
	out.uring_start = out.sock;
	out.uring_busy = true;
	out.sock = out.tail;
}
