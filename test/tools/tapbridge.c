// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tapbridge.c - make the kernel of a network namespace the daemon's guest.
 *
 * Creates a tap device (IFF_TAP | IFF_NO_PI) in the current namespace,
 * brings it up with the given MTU, connects to the daemon's UNIX stream
 * socket and relays Ethernet frames both ways, using the qemu stream
 * framing: a 4-byte big-endian length, then the frame.
 *
 * Direction socket -> tap: bytes are read into a buffer and every complete
 * frame is written to the tap in one write(). A read may end anywhere, even
 * inside a length prefix: the incomplete tail is kept for the next read.
 *
 * Direction tap -> socket: a frame read from the tap is appended, with its
 * prefix, to an output buffer flushed with non-blocking writes. While the
 * buffer can't take a maximum-sized frame we stop reading the tap, so the
 * kernel queue (not us) drops frames when the daemon is slow, and we never
 * send half a frame. With -d USEC, a slow guest: at most one frame every
 * USEC microseconds, the rest waits in the tap's queue (the other
 * direction goes on meanwhile).
 *
 * With -F N, a guest that keeps at most N frames in flight: frames
 * written to the socket and not yet read by the daemon, as QEMU's socket
 * buffer and the guest's ring together hold them (a small ring, byte
 * queue limits). Each frame goes in a send() of its own, and the next
 * one is read from the tap only while fewer than N are unread. Unread
 * is what the socket still charges us for (SIOCOUTQ: the memory of the
 * buffers the daemon hasn't consumed, their "truesize"): the newest
 * frames whose buffers' sizes add up to it. A frame's size there is
 * learnt per frame length, as the largest growth of SIOCOUTQ one send()
 * of that length caused (the daemon reading at the same time can only
 * make one smaller). While N are unread we wait for POLLOUT, which the
 * kernel gives a UNIX socket once a quarter of its send buffer or less
 * is in use: the send buffer is sized so that this is N - 1/2 frames of
 * the largest length seen.
 *
 * Exit status: 0 when the daemon closes the connection or on SIGTERM or
 * SIGINT; 1 on any other error. It must never be used outside tests: it
 * trusts nothing it reads but it also has no privilege separation at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_tun.h>

#define TAP_QLEN 10000	/* frames the tap queues before dropping */

#define PREFIX_LEN 4
#define FRAME_MAX 65535
#define SOCK_BUF_SIZE (1 << 20)

static volatile sig_atomic_t stop;

/* Socket -> tap reassembly, tap -> socket output */
static uint8_t rx_buf[SOCK_BUF_SIZE];
static size_t rx_len;
static uint8_t tx_buf[SOCK_BUF_SIZE];
static size_t tx_off, tx_len;

/* -d: nanoseconds between frames to the daemon, 0: as fast as they come */
static long long pace_ns;
static long long pace_next;		/* CLOCK_MONOTONIC ns of the next */

/* -F: at most flight_n frames unread by the daemon, 0: no limit */
#define FLIGHT_MAX 4096
#define FRAME_LEN_MAX (PREFIX_LEN + FRAME_MAX)
static unsigned flight_n;
static uint32_t flight_len[FLIGHT_MAX];	/* lengths of the last frames sent */
static unsigned flight_head;		/* next entry of flight_len */
static unsigned flight_sent;		/* entries filled, at most FLIGHT_MAX */
static uint32_t truesize[FRAME_LEN_MAX + 1];	/* learnt, per length */
static uint32_t flight_len_max;		/* largest length sent */
static int flight_sndbuf_set;		/* what SO_SNDBUF was set to */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(const char *name)
{
	fprintf(stderr,
		"Usage: %s [-n TAPNAME] [-m MTU] [-r SECONDS] [-d USEC] "
		"[-F N] SOCKPATH\n"
		"  -n TAPNAME  tap device to create (default tap0)\n"
		"  -m MTU      MTU of the tap device (default 65520)\n"
		"  -r SECONDS  retry connecting for up to SECONDS\n"
		"  -d USEC     at most one frame to the daemon every USEC "
		"microseconds\n"
		"  -F N        at most N frames unread by the daemon\n",
		name);
	exit(1);
}

/* tap_open() - create the tap device, set its MTU and bring it up */
static int tap_open(const char *name, int mtu)
{
	struct ifreq ifr;
	int fd, s;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror("tapbridge: /dev/net/tun");
		return -1;
	}

	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("tapbridge: TUNSETIFF");
		goto fail;
	}

	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		perror("tapbridge: socket");
		goto fail;
	}

	ifr.ifr_mtu = mtu;
	if (ioctl(s, SIOCSIFMTU, &ifr) < 0) {
		perror("tapbridge: SIOCSIFMTU");
		goto fail_s;
	}

	/* A virtio queue gives the guest back-pressure; a tap device drops
	 * when its queue is full and we are momentarily slower. A long
	 * queue keeps such drops, which QEMU wouldn't have, out of the tests.
	 */
	ifr.ifr_qlen = TAP_QLEN;
	if (ioctl(s, SIOCSIFTXQLEN, &ifr) < 0) {
		perror("tapbridge: SIOCSIFTXQLEN");
		goto fail_s;
	}

	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		perror("tapbridge: SIOCGIFFLAGS");
		goto fail_s;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		perror("tapbridge: SIOCSIFFLAGS");
		goto fail_s;
	}

	close(s);
	return fd;

fail_s:
	close(s);
fail:
	close(fd);
	return -1;
}

/* sock_connect() - connect to the daemon, retrying for up to @retry_s */
static int sock_connect(const char *path, int retry_s)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timespec start, now, pause = { 0, 50 * 1000 * 1000 };
	int fd, bufsize = SOCK_BUF_SIZE;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "tapbridge: socket path too long\n");
		return -1;
	}
	strcpy(addr.sun_path, path);

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			perror("tapbridge: socket");
			return -1;
		}
		if (!connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
			break;

		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (stop || now.tv_sec - start.tv_sec >= retry_s) {
			fprintf(stderr, "tapbridge: connect %s: %s\n", path,
				strerror(errno));
			return -1;
		}
		nanosleep(&pause, NULL);
	}

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	fcntl(fd, F_SETFL, O_NONBLOCK);

	return fd;
}

/* sock_to_tap() - read from the socket, write complete frames to the tap
 *
 * Return: 1 to go on, 0 on end of connection, -1 on error
 */
static int sock_to_tap(int s, int tap)
{
	size_t off = 0;
	ssize_t n;

	n = read(s, rx_buf + rx_len, sizeof(rx_buf) - rx_len);
	if (n == 0)
		return 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 1;
		if (errno == ECONNRESET)
			return 0;
		perror("tapbridge: read socket");
		return -1;
	}
	rx_len += n;

	while (rx_len - off >= PREFIX_LEN) {
		const uint8_t *p = rx_buf + off;
		uint32_t len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
			       (uint32_t)p[2] << 8 | p[3];

		if (len > FRAME_MAX) {
			fprintf(stderr, "tapbridge: bad frame length %u\n",
				len);
			return -1;
		}
		if (rx_len - off < PREFIX_LEN + len)
			break;

		/* Zero-length frames are legal on the wire, meaningless here;
		 * the tap queue may be full: drop the frame, like a wire would
		 */
		if (len && write(tap, p + PREFIX_LEN, len) < 0 &&
		    errno != EAGAIN && errno != EINVAL && errno != EIO) {
			perror("tapbridge: write tap");
			return -1;
		}
		off += PREFIX_LEN + len;
	}

	memmove(rx_buf, rx_buf + off, rx_len - off);
	rx_len -= off;
	return 1;
}

/* Nanoseconds on CLOCK_MONOTONIC (-d) */
static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* flight_truesize() - what the socket charges for a frame of @len bytes
 * (with its prefix), as learnt: its length until we saw one sent
 */
static uint32_t flight_truesize(uint32_t len)
{
	return truesize[len] ? truesize[len] : len;
}

/* flight_unread() - frames the daemon hasn't read yet (-F): the newest
 * frames whose sizes add up to what the socket still charges us for
 */
static unsigned flight_unread(int s)
{
	uint64_t sum = 0;
	unsigned n = 0;
	int outq = 0;

	if (ioctl(s, SIOCOUTQ, &outq) < 0 || outq <= 0)
		return 0;
	while (n < flight_sent && sum < (uint64_t)outq) {
		n++;
		sum += flight_truesize(flight_len[(flight_head + FLIGHT_MAX - n) %
						   FLIGHT_MAX]);
	}
	return n;
}

/* flight_sndbuf() - size the send buffer so that POLLOUT (a quarter of it
 * in use, or less) comes when fewer than N of the largest frames are
 * unread; only ever grown. SO_SNDBUFFORCE (root) isn't capped by
 * net.core.wmem_max; the kernel doubles what it's given
 */
static void flight_sndbuf(int s)
{
	uint64_t want = (2ULL * flight_n - 1) *
			flight_truesize(flight_len_max);
	int v = want > INT32_MAX / 2 ? INT32_MAX / 2 : (int)want;

	if (v <= flight_sndbuf_set)
		return;
	if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) &&
	    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)))
		perror("tapbridge: SO_SNDBUF");
	flight_sndbuf_set = v;
}

/* flight_learn() - one send() of a whole frame of @len bytes made the
 * socket charge @grew more: learn the largest such growth per length
 */
static void flight_learn(int s, uint32_t len, int grew)
{
	if (len > FRAME_LEN_MAX || grew <= 0 || (uint32_t)grew <= truesize[len])
		return;
	truesize[len] = (uint32_t)grew;
	if (len >= flight_len_max) {
		flight_len_max = len;
		flight_sndbuf(s);
	}
}

/* tap_to_buf() - read frames from the tap into the output buffer
 *
 * Return: 0 on success, -1 on error
 */
static int tap_to_buf(int tap)
{
	while (sizeof(tx_buf) - tx_len >= PREFIX_LEN + FRAME_MAX) {
		uint8_t *p = tx_buf + tx_len;
		ssize_t n = read(tap, p + PREFIX_LEN, FRAME_MAX);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			perror("tapbridge: read tap");
			return -1;
		}
		p[0] = (uint32_t)n >> 24;
		p[1] = (uint32_t)n >> 16;
		p[2] = (uint32_t)n >> 8;
		p[3] = (uint32_t)n;
		tx_len += PREFIX_LEN + n;
		if (flight_n) {
			flight_len[flight_head] = PREFIX_LEN + (uint32_t)n;
			flight_head = (flight_head + 1) % FLIGHT_MAX;
			if (flight_sent < FLIGHT_MAX)
				flight_sent++;
		}
		if (pace_ns)
			pace_next = now_ns() + pace_ns;
		if (pace_ns || flight_n)
			break;
	}
	return 0;
}

/* buf_to_sock() - flush as much of the output buffer as the socket takes
 *
 * Return: 1 to go on, 0 on end of connection, -1 on error
 */
static int buf_to_sock(int s)
{
	while (tx_off < tx_len) {
		int q0 = 0, q1 = 0;
		ssize_t n;

		if (flight_n && !tx_off)
			ioctl(s, SIOCOUTQ, &q0);
		n = send(s, tx_buf + tx_off, tx_len - tx_off, MSG_NOSIGNAL);
		/* -F: the buffer holds one frame; sent whole, learn its size */
		if (flight_n && !tx_off && n == (ssize_t)tx_len &&
		    !ioctl(s, SIOCOUTQ, &q1))
			flight_learn(s, (uint32_t)tx_len, q1 - q0);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			if (errno == EPIPE || errno == ECONNRESET)
				return 0;
			perror("tapbridge: write socket");
			return -1;
		}
		tx_off += n;
	}

	if (tx_off == tx_len) {
		tx_off = tx_len = 0;
	} else if (tx_off) {
		memmove(tx_buf, tx_buf + tx_off, tx_len - tx_off);
		tx_len -= tx_off;
		tx_off = 0;
	}
	return 1;
}

/* relay() - move frames both ways until the connection ends or a signal
 * @s:		connected socket
 * @tap:	tap file descriptor
 * @unblocked:	signal mask for ppoll(): SIGTERM and SIGINT are blocked
 *		otherwise, so that they can't slip in between test and wait
 */
static int relay(int s, int tap, const sigset_t *unblocked)
{
	bool spun = false;	/* -F: POLLOUT came, all N still unread */

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = s, .events = POLLIN },
			{ .fd = tap, .events = 0 },
		};
		struct timespec ts, *timeout = NULL;
		long long wait = pace_next - now_ns();
		bool room = sizeof(tx_buf) - tx_len >= PREFIX_LEN + FRAME_MAX;
		bool full = false;
		int rc;

		/* -F: the next frame once this one is out and fewer than N
		 * are unread; POLLOUT says when the daemon read some, unless
		 * our sizes were off and it says so at once: then look again
		 * in 100 us
		 */
		if (flight_n) {
			full = !tx_len && flight_unread(s) >= flight_n;
			room = !tx_len && !full;
			if (!full)
				spun = false;
		}
		if (tx_len || (full && !spun))
			pfd[0].events |= POLLOUT;
		if (full && spun) {
			ts.tv_sec = 0;
			ts.tv_nsec = 100000;
			timeout = &ts;
		}
		if (room) {
			if (pace_ns && wait > 0) {
				ts.tv_sec = wait / 1000000000LL;
				ts.tv_nsec = wait % 1000000000LL;
				timeout = &ts;
			} else {
				pfd[1].events = POLLIN;
			}
		}

		if (stop)
			return 0;
		if (ppoll(pfd, 2, timeout, unblocked) < 0) {
			if (errno == EINTR)
				continue;
			perror("tapbridge: poll");
			return -1;
		}

		if (full && pfd[0].revents & POLLOUT)
			spun = true;
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			rc = sock_to_tap(s, tap);
			if (rc <= 0)
				return rc;
		}
		if (pfd[1].revents & POLLIN && tap_to_buf(tap))
			return -1;
		if (tx_len) {
			rc = buf_to_sock(s);
			if (rc <= 0)
				return rc;
		}
	}
}

int main(int argc, char **argv)
{
	const char *tapname = "tap0";
	int mtu = 65520, retry_s = 0;
	sigset_t blocked, unblocked;
	struct sigaction sa;
	int opt, tap, s, rc;

	while ((opt = getopt(argc, argv, "n:m:r:d:F:h")) != -1) {
		switch (opt) {
		case 'd':
			pace_ns = atoll(optarg) * 1000;
			if (pace_ns <= 0)
				usage(argv[0]);
			break;
		case 'F':
			flight_n = (unsigned)atoi(optarg);
			if (flight_n < 1 || flight_n >= FLIGHT_MAX)
				usage(argv[0]);
			break;
		case 'n':
			tapname = optarg;
			break;
		case 'm':
			mtu = atoi(optarg);
			if (mtu < 68 || mtu > 65535 - 14)
				usage(argv[0]);
			break;
		case 'r':
			retry_s = atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		usage(argv[0]);

	/* No SA_RESTART: connect() and ppoll() must return on SIGTERM */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	tap = tap_open(tapname, mtu);
	if (tap < 0)
		return 1;

	s = sock_connect(argv[optind], retry_s);
	if (s < 0)
		return 1;
	if (flight_n) {
		/* Until we learn better: a frame of the MTU and 1 KiB */
		flight_len_max = PREFIX_LEN + 14 + (uint32_t)mtu;
		truesize[flight_len_max] = flight_len_max + 1024;
		flight_sndbuf(s);
	}
	fprintf(stderr, "tapbridge: connected\n");

	sigemptyset(&blocked);
	sigaddset(&blocked, SIGTERM);
	sigaddset(&blocked, SIGINT);
	sigprocmask(SIG_BLOCK, &blocked, &unblocked);
	rc = relay(s, tap, &unblocked);
	fprintf(stderr, "tapbridge: %s\n",
		stop ? "terminated" : rc ? "failed" : "connection closed");

	close(s);
	close(tap);
	return rc ? 1 : 0;
}
