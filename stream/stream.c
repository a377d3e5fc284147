// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * stream.c - the qemu stream front-end: Ethernet frames, each prefixed by
 * a 4-byte big-endian length, over a connected UNIX stream socket
 * (QEMU's -netdev stream and -netdev socket back-ends; see passt(1)).
 *
 * Theory of operation
 *
 * Listening: tap/listen.c binds the UNIX socket given with -s (or the
 * first free /tmp/passt_N.socket) before daemonizing, so that whoever
 * started us can launch QEMU as soon as we return. One client at a time:
 * an extra client is accepted and closed at once. When the client goes,
 * -1 (--one-off) ends the process; otherwise we wait for the next one
 * (QEMU's reconnect).
 * --fd N skips all that and uses an inherited, connected socket (one-off).
 *
 * Input: bytes are read into a buffer that holds at least one maximum
 * frame plus its prefix, as much as the socket has, in as few recv()
 * calls as we can; complete frames are handed to demux_input() in place, a
 * partial one is completed by later reads, behind it, and moved to the
 * front only when that's cheap or the room behind runs short. A loop
 * round takes at most STREAM_ROUND_FRAMES frames (the bound on what a
 * flood can open and close in a round, see flow.c): whole frames read
 * beyond that are left in the buffer, and the loop, seeing that
 * (stream_backlog()), doesn't sleep before the next round, which starts
 * with them (stream_resume()).
 * A length below 14 or above 65535 cannot be resynchronised (the stream
 * has no markers), so the connection is reset, as QEMU itself does for
 * oversized frames.
 * Coalescing (tap/coalesce.c): a pass that drains the socket asks
 * coalesce_pass() whether the guest sends a trickle of bulk frames; if so
 * EPOLLIN is taken off the socket and the loop polls it at the time it
 * says (stream_poll(), from the deadline of loop_wait()), until a pass
 * says otherwise: one epoll_ctl() each way, none per poll. The frames
 * wait in the socket meanwhile, and QEMU stops reading the guest's queue
 * if its socket buffer fills, which the socket's smaller target keeps
 * rare.
 *
 * Output: stream/stream_out.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "demux.h"
#include "log.h"
#include "loop.h"
#include "tap/coalesce.h"
#include "tap/listen.h"
#include "stream/stream.h"
#include "stream/stream_internal.h"
#include "tap/tap.h"
#include "uring.h"
#include "util.h"

/* Room for one read, at least: a sender's default socket buffer holds
 * about 210 KiB, so that's what one recv() can take, at most
 */
#define STREAM_READ_ROOM (256 * 1024)
#define STREAM_IN_SIZE (4 + STREAM_FRAME_MAX + 4 * STREAM_READ_ROOM)
#define STREAM_SOCKBUF (4 * 1024 * 1024)

/**
 * struct stream_conn - the stream front-end's connection and its input
 * @fd:		connected front-end socket, -1 if none
 * @gen:	generation of the connection (loop_gen_next()), in its epoll
 *		reference and its queued send()s
 * @ep_events:	what epoll watches now
 * @in_buf:	bytes read from the socket
 * @in_start:	start of the unparsed bytes: [@in_start, @in_end)
 * @in_end:	end of them
 * @round_frames: frames parsed in this loop round
 * @pass_bytes:	read in this pass over the input
 * @pass_frames: parsed in this pass
 * @in_co:	input coalescing (tap/coalesce.c)
 * @in_poll_at:	EPOLLIN off, poll then; or 0
 */
static struct stream_conn {
	int fd;
	uint32_t gen;
	uint32_t ep_events;
	uint8_t in_buf[STREAM_IN_SIZE];
	size_t in_start, in_end;
	unsigned round_frames;
	size_t pass_bytes;
	unsigned pass_frames;
	struct coalesce in_co;
	uint64_t in_poll_at;
} sc = { .fd = -1 };

/* Frames taken from the front-end in one loop round, at most: this bounds
 * the flows a flood of small frames can open, and close, in one round,
 * while entries closed in it are not free yet (see flow.c, Reclaim)
 */
#define STREAM_ROUND_FRAMES 2048

static bool stream_backlog(const struct ctx *c);

static void stream_reset_buffers(void)
{
	sc.in_start = sc.in_end = 0;
	stream_out_reset(sc.fd, sc.gen);
	sc.in_poll_at = 0;
	coalesce_reset(&sc.in_co, COALESCE_TARGET_SOCKET);
}

static int stream_listen(struct ctx *c)
{
	tap_listen(c);
	info("You can now start qemu (>= 7.2) with:");
	info("    qemu-system-x86_64 ... -netdev stream,id=n0,server=off,"
	     "addr.type=unix,addr.path=%s -device virtio-net-pci,netdev=n0",
	     c->sock_path);
	return 0;
}

/**
 * stream_attach() - take a new front-end connection as ours
 * @c:		execution context
 * @fd:		connected socket of the front-end
 */
static void stream_attach(struct ctx *c, int fd)
{
	/* The kernel doubles it: the socket holds at most half the ring */
	int snd = STREAM_OUT_SIZE / 4, rcv = STREAM_SOCKBUF;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));

	sc.fd = fd;
	sc.gen = loop_gen_next();
	stream_reset_buffers();
	sc.ep_events = EPOLLIN | EPOLLRDHUP;
	if (loop_add(c, fd, sc.ep_events, loop_ref(REF_FE_CONN, 0, sc.gen)))
		die_perror("epoll_ctl");
	demux_guest_appeared(c);
}

/**
 * stream_init() - set up the front-end: inherited fd or listening socket
 * @c:		execution context
 *
 * Return: 0; dies on failures, which are configuration errors here
 */
static int stream_init(struct ctx *c)
{
	stream_out_init();
	if (c->fd_inherited >= 0) {
		stream_attach(c, tap_inherited(c));
		return 0;
	}
	return stream_listen(c);
}

/**
 * stream_listen_handler() - accept a client, or turn away an extra one
 * @c:		execution context
 */
static void stream_listen_handler(struct ctx *c)
{
	int fd = tap_accept(c);

	if (fd < 0)
		return;
	if (sc.fd >= 0) {
		info_rl("Another client is already connected, refusing one");
		close(fd);
		return;
	}
	info("Client connected");
	stream_attach(c, fd);
}

static void stream_disconnect(struct ctx *c)
{
	loop_del(c, sc.fd);
	uring_close(sc.fd);		/* a send() may name it */
	sc.fd = -1;
	stream_reset_buffers();

	if (c->one_off) {
		info("Client closed connection, exiting (one-off)");
		c->quit = true;
	} else {
		info("Client closed connection, waiting for the next one");
	}
}

/* The next frame in the input buffer: 1 if it's all there (its length in
 * @flen), 0 if not (or no prefix yet), -1 if its length prefix is one we
 * can't resynchronise after
 */
static int stream_next(uint32_t *flen)
{
	if (sc.in_end - sc.in_start < 4)
		return 0;
	memcpy(flen, sc.in_buf + sc.in_start, 4);
	*flen = ntohl(*flen);
	if (*flen < STREAM_FRAME_MIN || *flen > STREAM_FRAME_MAX)
		return -1;
	return sc.in_end - sc.in_start - 4 >= *flen;
}

/**
 * stream_parse() - hand complete frames from the input buffer to demux_input()
 * @c:		execution context
 *
 * Until the round's frame budget is spent.
 *
 * Return: 0, or -1 on a bad length prefix
 */
static int stream_parse(struct ctx *c)
{
	uint32_t flen;
	int rc = 0;

	while (sc.round_frames < STREAM_ROUND_FRAMES &&
	       (rc = stream_next(&flen)) == 1) {
		demux_input(c, sc.in_buf + sc.in_start + 4, flen);
		sc.in_start += 4 + flen;
		sc.round_frames++;
		sc.pass_frames++;
	}
	demux_input_end(c);
	if (rc < 0) {
		warn_rl("Bad frame length %u from front-end, "
			"resetting connection", flen);
		return -1;
	}
	if (sc.in_start == sc.in_end)
		sc.in_start = sc.in_end = 0;
	return 0;
}

/* Bytes read from the front-end in one loop round, at most, so that other
 * sockets have their turn while the guest sends large frames
 */
#define STREAM_READ_BUDGET (1024 * 1024)

/**
 * stream_read() - read and hand over what the socket has
 * @c:		execution context
 *
 * Return: true if it's drained, false if disconnected or frames are left for
 *	the next round
 */
static bool stream_read(struct ctx *c)
{
	size_t budget = STREAM_READ_BUDGET;
	bool drained = false;

	/* Ends: every read but a short (last) one fills its room, which is
	 * at least STREAM_READ_ROOM, or the rest of the budget
	 */
	for (;;) {
		size_t want;
		ssize_t n;

		if (stream_parse(c)) {
			stream_disconnect(c);
			return false;
		}
		/* Everything parsed must be flushed before the guest sends
		 * the next batch, or replies pile up during a flood.
		 */
		stream_flush(c);
		/* A short read emptied the socket: asking again would only
		 * return EAGAIN (epoll, level-triggered, tells us if more
		 * came meanwhile). Frames left over once the round's frame
		 * budget is spent wait for the next round: stream_backlog()
		 * keeps the loop from sleeping meanwhile.
		 */
		if (drained || sc.round_frames >= STREAM_ROUND_FRAMES ||
		    !budget)
			return drained && !stream_backlog(c);

		/* Only a partial frame is left: move it to the front if
		 * that's cheap, or if the room behind it is short
		 */
		if (sc.in_start &&
		    (sc.in_end - sc.in_start <= 4096 ||
		     sizeof(sc.in_buf) - sc.in_end < STREAM_READ_ROOM)) {
			memmove(sc.in_buf, sc.in_buf + sc.in_start,
				sc.in_end - sc.in_start);
			sc.in_end -= sc.in_start;
			sc.in_start = 0;
		}
		want = MIN(sizeof(sc.in_buf) - sc.in_end, budget);
		n = recv(sc.fd, sc.in_buf + sc.in_end, want, MSG_DONTWAIT);
		if (n == 0) {
			stream_disconnect(c);
			return false;
		}
		if (n < 0) {
			if (errno == EAGAIN)
				return !stream_backlog(c);
			if (errno == EINTR)
				return false;
			warn_perror("Front-end read");
			stream_disconnect(c);
			return false;
		}
		sc.in_end += (size_t)n;
		sc.pass_bytes += (size_t)n;
		budget -= (size_t)n;
		drained = (size_t)n < want;
	}
}

/**
 * stream_epoll_update() - what epoll should watch: EPOLLIN unless we poll
 *			   (coalescing), EPOLLOUT while we wait for the
 *			   front-end to read
 * @c:		execution context
 */
void stream_epoll_update(struct ctx *c)
{
	uint32_t ev = (sc.in_poll_at ? 0 : EPOLLIN) | EPOLLRDHUP |
		      (stream_out_waiting() ? EPOLLOUT : 0);

	if (sc.fd < 0 || ev == sc.ep_events)
		return;
	if (loop_mod(c, sc.fd, ev, loop_ref(REF_FE_CONN, 0, sc.gen)))
		debug("stream: epoll_ctl: %s", strerror(errno));
	sc.ep_events = ev;
}

/* A pass over the input: read, then decide whether the next one waits for
 * EPOLLIN or for a poll (tap/coalesce.c). One that leaves frames or bytes
 * behind is followed by the next round's at once, whatever it says.
 * While polling, sc.in_poll_at keeps its (past) time during the read, so
 * the flushes on the way leave EPOLLIN off: no epoll_ctl() pair per poll.
 */
static void stream_input(struct ctx *c)
{
	bool drained;

	sc.pass_bytes = 0;
	sc.pass_frames = 0;
	drained = stream_read(c);
	if (sc.fd < 0)
		return;
	sc.in_poll_at = 0;
	if (drained)
		sc.in_poll_at = coalesce_pass(&sc.in_co, now_ns(),
					      sc.pass_bytes, sc.pass_frames);
	stream_epoll_update(c);
}

/**
 * stream_poll_at() - when the input is to be polled (coalescing)
 *
 * Return: time (ns, CLOCK_MONOTONIC), 0 if EPOLLIN tells us
 */
static uint64_t stream_poll_at(void)
{
	return sc.in_poll_at;
}

/**
 * stream_poll() - read the input if its poll is due
 * @c:		execution context
 * @now:	current time (ns, CLOCK_MONOTONIC)
 */
static void stream_poll(struct ctx *c, uint64_t now)
{
	if (sc.fd >= 0 && sc.in_poll_at && sc.in_poll_at <= now)
		stream_input(c);
}

/**
 * stream_backlog() - are frames already read waiting for the next round?
 * @c:		execution context
 *
 * Return: true if so: the loop must not sleep, and calls stream_resume()
 */
static bool stream_backlog(const struct ctx *c)
{
	uint32_t flen;

	(void)c;
	/* A bad prefix counts: the next round resets the connection */
	return sc.fd >= 0 && stream_next(&flen);
}

/**
 * stream_resume() - parse frames left from the last round, and read on
 * @c:		execution context
 */
static void stream_resume(struct ctx *c)
{
	if (stream_backlog(c))
		stream_input(c);
}

/**
 * stream_handler() - events on the connected front-end socket
 * @c:		execution context
 * @ref:	epoll reference: generation of the connection
 * @events:	epoll events
 *
 * An event queued for a connection that has since been closed (and
 * perhaps replaced by a new client with the same fd) is dropped.
 */
static void stream_handler(struct ctx *c, union epoll_ref ref,
			   uint32_t events)
{
	bool hup = events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP);
	/* While we poll, EPOLLIN isn't asked for: a hang-up is read up to
	 * its end first all the same
	 */
	bool in = (events & EPOLLIN) || (hup && sc.in_poll_at);

	if (sc.fd < 0 || ref.gen != sc.gen)
		return;
	if (events & EPOLLOUT)
		stream_flush(c);
	if (sc.fd >= 0 && in)
		stream_input(c);
	if (sc.fd >= 0 && hup && !in)
		stream_disconnect(c);
}

/**
 * stream_round_end() - end of a loop round: the next round takes a new
 *			frame budget; queued frames are written
 *			(stream_flush_end())
 * @c:		execution context
 */
static void stream_round_end(struct ctx *c)
{
	sc.round_frames = 0;
	stream_flush_end(c);
}

/**
 * stream_cleanup() - remove the socket file we created, at exit
 * @c:		execution context
 */
static void stream_cleanup(struct ctx *c)
{
	tap_listen_cleanup(c);
}

static int stream_connected(const struct ctx *c)
{
	(void)c;
	return sc.fd >= 0;
}

/* The stream front-end, for tap.c */
const struct tap_frontend stream_frontend = {
	.name		= "stream",
	.init		= stream_init,
	.accept		= stream_listen_handler,
	.handler	= stream_handler,
	.cleanup	= stream_cleanup,
	.connected	= stream_connected,
	.send		= stream_queue,
	.reserve	= stream_seg_reserve,
	.commit		= stream_seg_commit,
	.room		= stream_room,
	.backlog	= stream_backlog,
	.resume		= stream_resume,
	.poll_at	= stream_poll_at,
	.poll		= stream_poll,
	.flush		= stream_round_end,
};
