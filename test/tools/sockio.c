// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sockio.c - small socket test tool for the namespace tests (socat-like).
 *
 * sockio [OPTION...] MODE ARG...
 *
 *   tcp-listen ADDR PORT     accept one connection, then copy (see below)
 *   tcp-connect ADDR PORT    connect, then copy
 *       stdin goes to the socket and the socket to stdout, concurrently.
 *       On stdin EOF: shutdown(SHUT_WR), keep reading until the peer's
 *       EOF, exit 0.
 *   tcp-echo ADDR PORT       multi-connection echo server, until killed
 *   tcp-many ADDR PORT N BYTES
 *                            N concurrent connections to an echo server,
 *                            BYTES of a pattern on each, echo verified
 *   tcp-refused ADDR PORT    exit 0 iff connect() fails with ECONNREFUSED
 *   churn ADDR PORT SECS     connect / small transfer / close (graceful or
 *                            RST) against an echo server for SECS seconds
 *   udp-echo ADDR PORT       echo datagrams, until killed
 *   udp-ping ADDR PORT [COUNT]
 *                            COUNT datagrams with distinct payloads, each
 *                            must come back equal
 *   udp-dns ADDR             DNS query (example.test A) to ADDR:53, exit 0
 *                            iff a reply with our ID comes from ADDR:53
 *   dns-server ADDR          answer every DNS query on ADDR:53 with one A
 *                            record (192.0.2.123), until killed
 *   pattern-listen ADDR PORT accept one connection, then pattern streams
 *   pattern-connect ADDR PORT
 *                            connect, then pattern streams: with --send,
 *                            send a position-encoded byte stream (byte N
 *                            is a hash of N) until --stop-file exists or
 *                            --bytes are sent, then shutdown(SHUT_WR);
 *                            everything received is verified against the
 *                            same pattern (a hole, duplicate or reordering
 *                            fails at once, with its offset). Ends at the
 *                            peer's EOF (a side that doesn't send shuts
 *                            down only then)
 *   pattern-many-listen ADDR PORT0 N
 *   pattern-many-connect ADDR PORT0 N
 *                            N pattern streams in one process, stream I
 *                            on port PORT0 + I (--send, --send-parity,
 *                            --rate, --stop-file, --progress only; the
 *                            progress file has a line a stream)
 *
 * Options:
 *   -4, -6            address family (default: from the address)
 *   -t SECS           give up (exit 2) after SECS seconds; 0: never.
 *                     Default 60, 0 for servers
 *   --ready FILE      create FILE once listening / bound
 *   --rst-after N     after sending N bytes, close with SO_LINGER 0 (RST);
 *                     pattern modes too (end=rst-sent, exit 0)
 *   --expect-rst      exit 0 only if the connection ends with a reset
 *   --expect-refused  udp-ping: exit 0 iff recv reports ECONNREFUSED
 *   --report          print "bytes_in=N bytes_out=M end=eof|rst|rst-sent"
 *                     on stderr; tcp-listen also "peer=ADDR port=PORT"
 *   --hold            on stdin EOF don't shut down: wait for the peer's EOF
 *                     (pattern modes: the same once done sending)
 *   --wait-eof        read stdin only after the peer's EOF
 *   --send            pattern modes: send the pattern
 *   --rate KIB        pattern modes: send at most KIB KiB/s
 *   --bytes N         pattern modes: send N bytes, then stop
 *   --stop-file FILE  pattern modes: stop sending once FILE exists
 *   --fin-file FILE   pattern modes: once done sending, shut down only
 *                     when FILE exists (send some, stay idle, then FIN),
 *                     even if the peer's EOF came first
 *   --again           pattern-listen: a connection reset before anything
 *                     came in on it doesn't count: accept the next one
 *                     (a peer that connected from where the client was
 *                     before a migration, and was reset there)
 *   --progress FILE   pattern modes: keep "rx=N tx=M end=running|eof|rst|
 *                     mismatch" in FILE (replaced every 50 ms and at exit)
 *   --pause-rx        pattern modes: don't read the socket until the
 *                     --stop-file exists (data stays queued)
 *   --rx-file FILE    with --pause-rx: read once FILE exists, instead of
 *                     the stop file (the sender may go on meanwhile)
 *   --oob-at N        pattern modes, sending: byte N of the pattern goes
 *                     alone, as urgent data (MSG_OOB); a receiver that
 *                     keeps urgent data inline sees the pattern unbroken
 *   --send-parity P   pattern-many: send on the streams I with I % 2 == P
 *   --rcvbuf N, --sndbuf N
 *                     SO_RCVBUF / SO_SNDBUF before listen() or connect()
 *   --stall MS        tcp-listen, tcp-connect, pattern-listen,
 *                     pattern-connect, tcp-many: fail (exit 3) when a
 *                     transfer makes no progress for MS milliseconds (see
 *                     "Stalls" below)
 *   --stall-cmd CMD   run CMD (sh -c) when a stall is found, before
 *                     exiting: a test's hook to record the sockets' and
 *                     the daemon's state at that moment
 *
 * Stalls (--stall): a transfer stalls when, for MS ms, neither data comes
 * in nor does the other end acknowledge any of ours, while data of ours
 * waits for its acknowledgement (SIOCOUTQ, our FIN included), or while a
 * stream that started coming in hasn't ended (every transfer of these
 * tests is sent in one go). So a stall shows at the sender, or at the
 * receiver once the sender is gone (a sender may close with data still
 * queued: its kernel sends it on). tcp-many counts, per connection, a wait
 * for its echo too. The message says which connection (addresses), how
 * far it got and the kernel's view of it (TCP_INFO: state, RTO, backoff,
 * retransmissions, unacknowledged segments, congestion window).
 *
 * Exit status: 0 success, 1 failure (message on stderr), 2 timeout,
 * 3 stall (--stall), 64 usage.
 *
 * Every loop is bounded in count and time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ		(1 << 16)
#define MAX_CONNS	4096

static int opt_family = AF_UNSPEC;
static long opt_timeout = -1;
static const char *opt_ready;
static long long opt_rst_after = -1;
static int opt_expect_rst;
static int opt_expect_refused;
static int opt_report;
static int opt_hold;
static int opt_wait_eof;
static long opt_rcvbuf = -1, opt_sndbuf = -1;
static long opt_stall = -1;
static const char *opt_stall_cmd;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("sockio: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Progress of copy(), for the timeout message */
static volatile long long prog_in = -1, prog_out = -1;

/* fmt_num() - async-signal-safe decimal formatting, returns end of string */
static char *fmt_num(char *p, long long v)
{
	char tmp[24];
	int n = 0;

	if (v < 0) {
		*p++ = '-';
		v = -v;
	}
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < (int)sizeof(tmp));
	while (n)
		*p++ = tmp[--n];
	return p;
}

static void on_alarm(int sig)
{
	char msg[128], *p = msg;

	(void)sig;
	memcpy(p, "sockio: timeout", 15);
	p += 15;
	if (prog_in >= 0) {
		memcpy(p, " bytes_in=", 10);
		p = fmt_num(p + 10, prog_in);
		memcpy(p, " bytes_out=", 11);
		p = fmt_num(p + 11, prog_out);
	}
	*p++ = '\n';
	if (write(2, msg, (size_t)(p - msg)) < 0)
		_exit(2);
	_exit(2);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* parse_addr() - numeric ADDR and PORT into @ss, returns its length */
static socklen_t parse_addr(const char *addr, const char *port,
			    struct sockaddr_storage *ss)
{
	struct addrinfo hints = { 0 }, *res;
	socklen_t len;
	int rc;

	hints.ai_family = opt_family;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(addr, port, &hints, &res);
	if (rc)
		die("bad address %s port %s: %s", addr, port, gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	len = res->ai_addrlen;
	freeaddrinfo(res);
	return len;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
}

static void ready(void)
{
	int fd;

	if (!opt_ready)
		return;
	fd = open(opt_ready, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("%s: %s", opt_ready, strerror(errno));
	close(fd);
}

/* bufsizes() - --rcvbuf and --sndbuf, if given, on @s */
static void bufsizes(int s)
{
	int v;

	if (opt_rcvbuf >= 0) {
		v = (int)opt_rcvbuf;
		if (setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)))
			die("SO_RCVBUF: %s", strerror(errno));
	}
	if (opt_sndbuf >= 0) {
		v = (int)opt_sndbuf;
		if (setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)))
			die("SO_SNDBUF: %s", strerror(errno));
	}
}

static int sock_listen(const char *addr, const char *port, int type)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(addr, port, &ss);
	int one = 1, s;

	s = socket(ss.ss_family, type, 0);
	if (s < 0)
		die("socket: %s", strerror(errno));
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bufsizes(s);
	if (ss.ss_family == AF_INET6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&ss, len))
		die("bind %s %s: %s", addr, port, strerror(errno));
	if (type == SOCK_STREAM && listen(s, 1024))
		die("listen: %s", strerror(errno));
	return s;
}

/* tcp_connect() - blocking connect, returns socket or -errno */
static int tcp_connect(const char *addr, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(addr, port, &ss);
	int s, err;

	s = socket(ss.ss_family, SOCK_STREAM, 0);
	if (s < 0)
		die("socket: %s", strerror(errno));
	bufsizes(s);
	if (connect(s, (struct sockaddr *)&ss, len)) {
		err = errno;
		close(s);
		return -err;
	}
	return s;
}

static void rst_close(int s)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)))
		die("SO_LINGER: %s", strerror(errno));
	close(s);
}

static int is_reset(int err)
{
	return err == ECONNRESET || err == EPIPE;
}

/* write_all() - blocking write of a whole buffer to stdout */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write: %s", strerror(errno));
		}
		buf += n;
		len -= (size_t)n;
	}
}

/*
 * Progress watchdog (--stall): see "Stalls" at the top. Progress is data
 * in, or the other end acknowledging data of ours: bytes sent less those
 * still queued unacknowledged (SIOCOUTQ).
 */
struct stall {
	long long mark;		/* progress counter when last seen */
	long long since;	/* when it last moved, or nothing was owed */
};

/* stall_outq() - bytes (our FIN: one) the other end hasn't acknowledged;
 * 0 once the connection is closed or reset, or if the kernel can't say
 */
static int stall_outq(int s)
{
	struct tcp_info ti;
	socklen_t sl = sizeof(ti);
	int outq = 0;

	if (s < 0 || getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl) ||
	    ti.tcpi_state == TCP_CLOSE || ioctl(s, SIOCOUTQ, &outq))
		return 0;
	return outq;
}

/* stall_name() - "ADDR PORT" of the local (@peer 0) or remote end of @s */
static void stall_name(int s, int peer, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[INET6_ADDRSTRLEN] = "?", p[16] = "?";

	if (!(peer ? getpeername(s, (struct sockaddr *)&ss, &sl)
		   : getsockname(s, (struct sockaddr *)&ss, &sl)))
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p,
			    sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(buf, len, "%s %s", h, p);
}

/* stall_fail() - say where the transfer on @s stopped and the kernel's view
 * of it, run --stall-cmd, exit 3
 */
static void stall_fail(int s, const char *what, long long in, long long out,
		       long long ms)
{
	char l[INET6_ADDRSTRLEN + 24], r[INET6_ADDRSTRLEN + 24];
	struct tcp_info ti = { 0 };
	socklen_t sl = sizeof(ti);

	stall_name(s, 0, l, sizeof(l));
	stall_name(s, 1, r, sizeof(r));
	getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &sl);
	fprintf(stderr, "sockio: stall: %s %s -> %s: no progress for %lld ms: "
		"bytes_in=%lld bytes_out=%lld unacknowledged=%d; tcp_info: "
		"state=%u rto=%uus backoff=%u retransmits=%u total_retrans=%u "
		"unacked=%u snd_cwnd=%u rtt=%uus last_data_sent=%ums "
		"last_ack_recv=%ums last_data_recv=%ums\n", what, l, r, ms,
		in, out, stall_outq(s), ti.tcpi_state, ti.tcpi_rto,
		ti.tcpi_backoff, ti.tcpi_retransmits, ti.tcpi_total_retrans,
		ti.tcpi_unacked, ti.tcpi_snd_cwnd, ti.tcpi_rtt,
		ti.tcpi_last_data_sent, ti.tcpi_last_ack_recv,
		ti.tcpi_last_data_recv);
	fflush(stderr);
	if (opt_stall_cmd) {
		int st = system(opt_stall_cmd);

		if (st)
			fprintf(stderr, "sockio: --stall-cmd: status %d\n",
				WIFEXITED(st) ? WEXITSTATUS(st) : st);
	}
	exit(3);
}

/* stall_tick() - with --stall, note progress on @s (@in bytes in, @out
 * sent), fail if none came for too long while something was owed: data
 * of ours unacknowledged, or data in if @expect
 */
static void stall_tick(struct stall *st, int s, const char *what,
		       long long in, long long out, int expect)
{
	long long now = now_ms(), outq, mark;

	if (opt_stall < 0)
		return;
	outq = stall_outq(s);
	mark = in + out - outq;
	if ((!outq && !expect) || mark != st->mark || !st->since) {
		st->mark = mark;
		st->since = now;
	} else if (now - st->since > opt_stall) {
		stall_fail(s, what, in, out, now - st->since);
	}
}

/* copy() - pump stdin -> @s and @s -> stdout until both directions end */
static int copy(int s)
{
	static char tx[BUFSZ], rx[BUFSZ];
	long long bytes_in = 0, bytes_out = 0;
	size_t tx_len = 0, tx_off = 0;
	int in_eof = 0, sk_eof = 0, shut = 0, reset = 0, rst_sent = 0;
	struct stall st = { 0 };
	int rc;

	set_nonblock(s);
	prog_in = prog_out = 0;
	for (;;) {
		struct pollfd pfd[2];
		int want_in, n = 0, i_in = -1, i_sk;
		short ev = 0;

		if (in_eof && !tx_len && !shut && !opt_hold) {
			shutdown(s, SHUT_WR);
			shut = 1;
		}
		if (sk_eof && in_eof && !tx_len)
			break;

		want_in = !in_eof && !tx_len && (!opt_wait_eof || sk_eof);
		if (want_in) {
			pfd[n].fd = 0;
			pfd[n].events = POLLIN;
			i_in = n++;
		}
		if (!sk_eof)
			ev |= POLLIN;
		if (tx_len)
			ev |= POLLOUT;
		pfd[n].fd = s;
		pfd[n].events = ev;
		i_sk = n++;

		if (poll(pfd, n, opt_stall < 0 ? -1 : 50) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}

		if (i_in >= 0 && pfd[i_in].revents) {
			size_t max = sizeof(tx);
			ssize_t r;

			if (opt_rst_after >= 0 &&
			    (long long)max > opt_rst_after - bytes_out)
				max = (size_t)(opt_rst_after - bytes_out);
			r = max ? read(0, tx, max) : 0;
			if (r < 0 && errno != EINTR && errno != EAGAIN)
				die("read stdin: %s", strerror(errno));
			if (r == 0)
				in_eof = 1;
			if (r > 0) {
				tx_len = (size_t)r;
				tx_off = 0;
			}
		}

		if (pfd[i_sk].revents & (POLLIN | POLLERR | POLLHUP)) {
			ssize_t r = recv(s, rx, sizeof(rx), 0);

			if (r < 0 && is_reset(errno)) {
				reset = 1;
				break;
			}
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				die("recv: %s", strerror(errno));
			if (r == 0) {
				sk_eof = 1;
				if (opt_hold && in_eof && !tx_len && !shut) {
					shutdown(s, SHUT_WR);
					shut = 1;
				}
			}
			if (r > 0) {
				write_all(1, rx, (size_t)r);
				bytes_in += r;
				prog_in = bytes_in;
			}
		}

		if (tx_len && (pfd[i_sk].revents & (POLLOUT | POLLERR))) {
			ssize_t w = send(s, tx + tx_off, tx_len, MSG_NOSIGNAL);

			if (w < 0 && is_reset(errno)) {
				reset = 1;
				break;
			}
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				die("send: %s", strerror(errno));
			if (w > 0) {
				tx_off += (size_t)w;
				tx_len -= (size_t)w;
				bytes_out += w;
				prog_out = bytes_out;
			}
		}

		if (opt_rst_after >= 0 && bytes_out >= opt_rst_after &&
		    !tx_len) {
			rst_close(s);
			rst_sent = 1;
			s = -1;
			break;
		}
		/* After the I/O: what came meanwhile counts, however long
		 * we waited to be scheduled
		 */
		stall_tick(&st, s, "tcp", bytes_in, bytes_out,
			   bytes_in && !sk_eof);
	}

	if (s >= 0)
		close(s);
	if (opt_report)
		fprintf(stderr, "bytes_in=%lld bytes_out=%lld end=%s\n",
			bytes_in, bytes_out,
			reset ? "rst" : rst_sent ? "rst-sent" : "eof");
	if (rst_sent)
		rc = 0;
	else if (opt_expect_rst)
		rc = reset ? 0 : 1;
	else
		rc = reset ? 1 : 0;
	if (rc && !opt_report)
		fprintf(stderr, "sockio: connection ended with %s\n",
			reset ? "a reset" : "EOF, no reset");
	return rc;
}

static int do_tcp_listen(const char *addr, const char *port)
{
	int l = sock_listen(addr, port, SOCK_STREAM), s;

	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);

	ready();
	s = accept(l, (struct sockaddr *)&peer, &pl);
	if (s < 0)
		die("accept: %s", strerror(errno));
	close(l);
	if (opt_report) {
		char h[INET6_ADDRSTRLEN] = "?", p[16] = "?";

		getnameinfo((struct sockaddr *)&peer, pl, h, sizeof(h), p,
			    sizeof(p), NI_NUMERICHOST | NI_NUMERICSERV);
		fprintf(stderr, "peer=%s port=%s\n", h, p);
	}
	return copy(s);
}

static int do_tcp_connect(const char *addr, const char *port)
{
	int s = tcp_connect(addr, port);

	if (s < 0)
		die("connect %s %s: %s", addr, port, strerror(-s));
	return copy(s);
}

/*
 * Position-encoded streams (pattern-listen, pattern-connect): byte N of a
 * stream is pat_byte(N), a hash of its offset, so the receiver detects a
 * hole, a duplicate or reordering at the first wrong byte (to 1 in 256
 * per byte, within a few bytes). Either side may send (--send), each
 * direction has its own offsets; whatever arrives is verified.
 */

static int opt_send, opt_pause_rx;
static long long opt_oob_at = -1;
static long long opt_rate = -1, opt_bytes = -1;
static const char *opt_stop_file, *opt_progress, *opt_fin_file;
static const char *opt_rx_file;
static int opt_again;
static long long pattern_in;	/* bytes the last pattern() got */
static int pattern_reset;	/* and whether it ended with a reset */

static unsigned char pat_byte(unsigned long long off)
{
	unsigned long long x = (off + 1) * 0x9E3779B97F4A7C15ULL;

	return (unsigned char)((x >> 56) ^ (x >> 23) ^ off);
}

static void pat_fill(char *buf, size_t len, unsigned long long off)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)pat_byte(off + i);
}

/* progress_write() - "rx=N tx=M end=..." into --progress FILE, atomically */
static void progress_write(long long rx, long long tx, const char *end)
{
	char tmp[4096], line[128];
	int fd, n;

	if (!opt_progress)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", opt_progress);
	n = snprintf(line, sizeof(line), "rx=%lld tx=%lld end=%s\n", rx, tx,
		     end);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("%s: %s", tmp, strerror(errno));
	write_all(fd, line, (size_t)n);
	close(fd);
	if (rename(tmp, opt_progress))
		die("rename %s: %s", tmp, strerror(errno));
}

/* pattern() - send (--send) and verify pattern streams on @s until done */
static int pattern(int s)
{
	static char tx[BUFSZ], rx[BUFSZ];
	long long bytes_in = 0, bytes_out = 0, t0 = now_ms(), t_prog = 0;
	long long t_stop = 0, t_fin = 0;
	size_t tx_len = 0, tx_off = 0;
	int tx_done = !opt_send, sk_eof = 0, shut = 0, reset = 0;
	int fin_ok = !opt_fin_file, rst_sent = 0;
	struct stall st = { 0 };
	const char *end;

	set_nonblock(s);
	prog_in = prog_out = 0;
	for (;;) {
		struct pollfd pfd = { s, 0, 0 };
		long long now = now_ms();
		int wait = 50;

		if (!tx_done && opt_stop_file && now - t_stop >= 20) {
			t_stop = now;
			if (!access(opt_stop_file, F_OK))
				tx_done = 1;
		}
		if (!tx_done && opt_bytes >= 0 && bytes_out >= opt_bytes)
			tx_done = 1;
		if (tx_done && !fin_ok && now - t_fin >= 20) {
			t_fin = now;
			fin_ok = !access(opt_fin_file, F_OK);
		}
		/* Stop sending at a buffer boundary: drop the unsent rest.
		 * With --fin-file, not before the file exists, even after the
		 * peer's EOF (a half-closed connection that stays so)
		 */
		if (tx_done && !shut && fin_ok &&
		    (sk_eof || (opt_send && !opt_hold))) {
			shutdown(s, SHUT_WR);
			shut = 1;
		}
		if (shut && sk_eof)
			break;

		if (!tx_done && !tx_len && opt_oob_at >= 0 &&
		    bytes_out == opt_oob_at) {
			char b = (char)pat_byte((unsigned long long)bytes_out);

			if (send(s, &b, 1, MSG_OOB | MSG_NOSIGNAL |
				 MSG_DONTWAIT) == 1) {
				bytes_out++;
				prog_out = bytes_out;
				opt_oob_at = -1;
			} else {
				wait = 10;	/* no room yet: again soon */
			}
		}
		if (!tx_done && !tx_len) {
			long long want = BUFSZ;

			if (opt_bytes >= 0 && want > opt_bytes - bytes_out)
				want = opt_bytes - bytes_out;
			if (opt_rst_after >= 0 &&
			    want > opt_rst_after - bytes_out)
				want = opt_rst_after - bytes_out;
			if (opt_oob_at >= 0 && want > opt_oob_at - bytes_out)
				want = opt_oob_at - bytes_out;
			if (opt_rate > 0) {
				long long allow = opt_rate * 1024 *
						  (now - t0) / 1000 -
						  bytes_out;

				if (want > allow)
					want = allow;
				if (want < 1)
					wait = 10;
			}
			if (want > 0) {
				pat_fill(tx, (size_t)want,
					 (unsigned long long)bytes_out);
				tx_len = (size_t)want;
				tx_off = 0;
			}
		}

		/* --pause-rx: leave everything queued until the stop file
		 * (or the --rx-file)
		 */
		if (opt_pause_rx && (opt_rx_file || opt_stop_file) &&
		    now - t_stop >= 20) {
			t_stop = now;
			if (!access(opt_rx_file ? opt_rx_file : opt_stop_file,
				    F_OK))
				opt_pause_rx = 0;
		}
		if (!sk_eof && !opt_pause_rx)
			pfd.events |= POLLIN;
		if (tx_len && !tx_done)
			pfd.events |= POLLOUT;
		if (opt_progress && now - t_prog >= 50) {
			t_prog = now;
			progress_write(bytes_in, bytes_out, "running");
		}
		if (poll(&pfd, 1, wait) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}

		if (!opt_pause_rx &&
		    (pfd.revents & (POLLIN | POLLERR | POLLHUP))) {
			ssize_t r = recv(s, rx, sizeof(rx), 0), i;

			if (r < 0 && is_reset(errno)) {
				reset = 1;
				break;
			}
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				die("recv: %s", strerror(errno));
			if (r == 0)
				sk_eof = 1;
			for (i = 0; i < r; i++) {
				unsigned long long off = bytes_in + i;

				if ((unsigned char)rx[i] == pat_byte(off))
					continue;
				progress_write(bytes_in + i, bytes_out,
					       "mismatch");
				die("pattern mismatch at offset %llu: got "
				    "0x%02x, expected 0x%02x (bytes_out=%lld)",
				    off, (unsigned char)rx[i], pat_byte(off),
				    bytes_out);
			}
			if (r > 0) {
				bytes_in += r;
				prog_in = bytes_in;
			}
		}

		if (tx_len && !tx_done && (pfd.revents & (POLLOUT | POLLERR))) {
			ssize_t w = send(s, tx + tx_off, tx_len, MSG_NOSIGNAL);

			if (w < 0 && is_reset(errno)) {
				reset = 1;
				break;
			}
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				die("send: %s", strerror(errno));
			if (w > 0) {
				tx_off += (size_t)w;
				tx_len -= (size_t)w;
				bytes_out += w;
				prog_out = bytes_out;
			}
		}
		/* The pattern restarts at bytes_out: drop a partial buffer */
		if (tx_done)
			tx_len = 0;
		if (opt_rst_after >= 0 && bytes_out >= opt_rst_after &&
		    !tx_len) {
			rst_close(s);
			rst_sent = 1;
			s = -1;
			break;
		}
		stall_tick(&st, s, "pattern", bytes_in, bytes_out,
			   bytes_in && !sk_eof);
	}

	if (s >= 0)
		close(s);
	pattern_in = bytes_in;
	pattern_reset = reset;
	end = reset ? "rst" : rst_sent ? "rst-sent" : "eof";
	progress_write(bytes_in, bytes_out, end);
	if (opt_report)
		fprintf(stderr, "bytes_in=%lld bytes_out=%lld end=%s\n",
			bytes_in, bytes_out, end);
	if (rst_sent)
		return 0;
	if (opt_expect_rst)
		return reset ? 0 : 1;
	if (reset)
		fprintf(stderr, "sockio: connection reset after %lld bytes "
			"in, %lld out\n", bytes_in, bytes_out);
	return reset;
}

static int do_pattern_listen(const char *addr, const char *port)
{
	int l = sock_listen(addr, port, SOCK_STREAM), s, rc;

	ready();
	do {
		s = accept(l, NULL, NULL);
		if (s < 0)
			die("accept: %s", strerror(errno));
		rc = pattern(s);
	} while (opt_again && pattern_reset && !pattern_in);
	close(l);
	return rc;
}

static int do_pattern_connect(const char *addr, const char *port)
{
	int s = tcp_connect(addr, port);

	if (s < 0)
		die("connect %s %s: %s", addr, port, strerror(-s));
	return pattern(s);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

struct echo_conn {
	int fd;
	int eof;
	size_t len, off;
	char buf[16384];
};

static int do_tcp_echo(const char *addr, const char *port)
{
	static struct echo_conn *conns[MAX_CONNS];
	static struct pollfd pfd[MAX_CONNS + 1];
	int l, nconn = 0, i;

	raise_nofile();
	l = sock_listen(addr, port, SOCK_STREAM);
	set_nonblock(l);
	ready();

	for (;;) {
		int n = 0;

		pfd[n].fd = l;
		pfd[n++].events = nconn < MAX_CONNS ? POLLIN : 0;
		for (i = 0; i < nconn; i++) {
			struct echo_conn *c = conns[i];

			pfd[n].fd = c->fd;
			pfd[n].events = 0;
			if (c->len)
				pfd[n].events |= POLLOUT;
			else if (!c->eof)
				pfd[n].events |= POLLIN;
			n++;
		}
		if (poll(pfd, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}

		for (i = 0; i < nconn; i++) {
			struct echo_conn *c = conns[i];
			short re = pfd[i + 1].revents;
			int done = 0;

			if (!re)
				continue;
			if (!c->len && !c->eof) {
				ssize_t r = recv(c->fd, c->buf, sizeof(c->buf),
						 0);

				if (r > 0) {
					c->len = (size_t)r;
					c->off = 0;
				} else if (r == 0) {
					c->eof = 1;
				} else if (errno != EAGAIN && errno != EINTR) {
					done = 1;
				}
			}
			if (c->len && !done) {
				ssize_t w = send(c->fd, c->buf + c->off,
						 c->len, MSG_NOSIGNAL);

				if (w > 0) {
					c->off += (size_t)w;
					c->len -= (size_t)w;
				} else if (w < 0 && errno != EAGAIN &&
					   errno != EINTR) {
					done = 1;
				}
			}
			if (c->eof && !c->len)
				done = 1;
			if (done) {
				close(c->fd);
				free(c);
				conns[i] = NULL;
			}
		}
		/* compact, keeping pfd[] indices in step for the next round */
		for (i = 0; i < nconn;) {
			if (!conns[i]) {
				conns[i] = conns[--nconn];
				conns[nconn] = NULL;
			} else {
				i++;
			}
		}

		if (pfd[0].revents & POLLIN) {
			int k;

			for (k = 0; k < 64 && nconn < MAX_CONNS; k++) {
				int s = accept(l, NULL, NULL);
				struct echo_conn *c;

				if (s < 0)
					break;
				set_nonblock(s);
				c = calloc(1, sizeof(*c));
				if (!c)
					die("out of memory");
				c->fd = s;
				conns[nconn++] = c;
			}
		}
	}
	return 0;
}

/* Byte at offset @off of connection @id's pattern */
static unsigned char pat(unsigned id, unsigned long long off)
{
	return (unsigned char)((off * 131 + (off >> 8) * 7 + id * 29) & 0xff);
}

struct many_conn {
	int fd;
	int connected, shut, done, failed;
	unsigned long long sent, rcvd;
};

static int do_tcp_many(const char *addr, const char *port, long n,
		       long long bytes)
{
	static struct many_conn mc[MAX_CONNS];
	static struct pollfd pfd[MAX_CONNS];
	static struct stall mst[MAX_CONNS];
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(addr, port, &ss);
	static char buf[BUFSZ];
	int left, failures = 0;
	long i;

	if (n < 1 || n > MAX_CONNS || bytes < 0)
		die("tcp-many: N must be 1..%d, BYTES >= 0", MAX_CONNS);
	raise_nofile();

	for (i = 0; i < n; i++) {
		int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (s < 0)
			die("socket %ld: %s", i, strerror(errno));
		if (connect(s, (struct sockaddr *)&ss, len) &&
		    errno != EINPROGRESS)
			die("connect %ld: %s", i, strerror(errno));
		mc[i].fd = s;
	}

	left = (int)n;
	while (left) {
		for (i = 0; i < n; i++) {
			struct many_conn *c = &mc[i];

			pfd[i].fd = c->done ? -1 : c->fd;
			pfd[i].events = POLLIN;
			if (!c->connected || (!c->shut && c->sent < (unsigned long long)bytes))
				pfd[i].events |= POLLOUT;
		}
		if (poll(pfd, (nfds_t)n, opt_stall < 0 ? -1 : 100) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			struct many_conn *c = &mc[i];
			short re = pfd[i].revents;
			int err = 0;
			socklen_t el = sizeof(err);

			if (c->done || !re)
				continue;
			if (!c->connected) {
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err,
					   &el);
				if (err) {
					fprintf(stderr, "conn %ld: connect: %s\n",
						i, strerror(err));
					c->failed = c->done = 1;
					left--;
					continue;
				}
				if (!(re & POLLOUT))
					continue;
				c->connected = 1;
			}
			if ((re & POLLOUT) && c->sent < (unsigned long long)bytes) {
				size_t chunk = sizeof(buf), k;
				ssize_t w;

				if (chunk > bytes - c->sent)
					chunk = (size_t)(bytes - c->sent);
				for (k = 0; k < chunk; k++)
					buf[k] = (char)pat((unsigned)i, c->sent + k);
				w = send(c->fd, buf, chunk, MSG_NOSIGNAL);
				if (w > 0)
					c->sent += (unsigned long long)w;
				else if (w < 0 && errno != EAGAIN) {
					fprintf(stderr, "conn %ld: send after %llu: %s\n",
						i, c->sent, strerror(errno));
					c->failed = c->done = 1;
					left--;
					continue;
				}
			}
			if (!c->shut && c->sent == (unsigned long long)bytes) {
				shutdown(c->fd, SHUT_WR);
				c->shut = 1;
			}
			if (re & (POLLIN | POLLHUP | POLLERR)) {
				ssize_t r = recv(c->fd, buf, sizeof(buf), 0), k;

				if (r < 0 && errno == EAGAIN)
					continue;
				if (r < 0) {
					fprintf(stderr, "conn %ld: recv after %llu: %s\n",
						i, c->rcvd, strerror(errno));
					c->failed = 1;
				} else if (r == 0) {
					if (c->rcvd != (unsigned long long)bytes) {
						fprintf(stderr, "conn %ld: EOF after %llu of %lld bytes\n",
							i, c->rcvd, bytes);
						c->failed = 1;
					}
				} else {
					for (k = 0; k < r; k++) {
						if ((unsigned char)buf[k] !=
						    pat((unsigned)i, c->rcvd + (unsigned long long)k))
							break;
					}
					if (k < r || c->rcvd + (unsigned long long)r > (unsigned long long)bytes) {
						fprintf(stderr, "conn %ld: wrong data at offset %llu\n",
							i, c->rcvd + (unsigned long long)k);
						c->failed = 1;
					} else {
						c->rcvd += (unsigned long long)r;
						continue;
					}
				}
				c->done = 1;
				left--;
			}
		}
		/* Connected, not done: its data goes out, or its echo comes */
		for (i = 0; i < n; i++) {
			if (mc[i].connected && !mc[i].done)
				stall_tick(&mst[i], mc[i].fd, "tcp-many",
					   (long long)mc[i].rcvd,
					   (long long)mc[i].sent, 1);
		}
	}

	for (i = 0; i < n; i++) {
		failures += mc[i].failed;
		close(mc[i].fd);
	}
	fprintf(stderr, "tcp-many: %ld connections, %ld verified, %d failed\n",
		n, n - failures, failures);
	return failures ? 1 : 0;
}

/*
 * Many pattern streams in one process: pattern-many-listen ADDR PORT0 N
 * accepts one connection on each of the ports PORT0 .. PORT0 + N - 1,
 * pattern-many-connect ADDR PORT0 N makes them. Each stream follows the
 * rules of pattern() (--stop-file, --rate per stream, the FIN once done
 * sending, or once the peer's FIN came; every byte received verified),
 * and this side sends on stream I with --send, or with --send-parity P
 * where I % 2 == P. --progress FILE holds one line a stream,
 * "I rx=N tx=M end=running|eof|rst|mismatch|failed", replaced every
 * 200 ms and at the end. Exit 0 iff every stream ended with both FINs.
 * A thousand streams take one process, not two thousand.
 */

static int opt_send_parity = -1;

static long num(const char *s);

/**
 * struct pmany - one stream of pattern-many
 * @s:		its socket, -1 once ended (or before it's connected)
 * @l:		listening socket (pattern-many-listen), -1 once accepted
 * @send:	this side sends on it
 * @conn:	connected (connect() done, or accepted)
 * @shut:	shutdown(SHUT_WR) done
 * @eof:	the peer's FIN came
 * @t0:		when it was connected, for --rate
 * @in:		bytes received (verified)
 * @out:	bytes sent
 * @end:	how it ended, NULL while running
 */
struct pmany {
	int s, l;
	int send, conn, shut, eof;
	long long t0, in, out;
	const char *end;
};

/* pmany_progress() - every stream's line into --progress FILE */
static void pmany_progress(const struct pmany *p, long n)
{
	static char buf[MAX_CONNS * 64];
	char tmp[4096];
	size_t len = 0;
	long i;
	int fd;

	if (!opt_progress)
		return;
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
					"%ld rx=%lld tx=%lld end=%s\n", i,
					p[i].in, p[i].out,
					p[i].end ? p[i].end : "running");
	snprintf(tmp, sizeof(tmp), "%s.tmp", opt_progress);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("%s: %s", tmp, strerror(errno));
	write_all(fd, buf, len);
	close(fd);
	if (rename(tmp, opt_progress))
		die("rename %s: %s", tmp, strerror(errno));
}

/* pmany_end() - stream @i ended (@how), close its socket */
static void pmany_end(struct pmany *c, long i, const char *how)
{
	if (strcmp(how, "eof"))
		fprintf(stderr, "stream %ld: %s after %lld bytes in, %lld out\n",
			i, how, c->in, c->out);
	c->end = how;
	if (c->s >= 0)
		close(c->s);
	c->s = -1;
}

/* pmany_rx() - read and verify what stream @i has */
static void pmany_rx(struct pmany *c, long i)
{
	static char rx[BUFSZ];
	ssize_t r = recv(c->s, rx, sizeof(rx), 0), k;

	if (r < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		pmany_end(c, i, is_reset(errno) ? "rst" : "failed");
		return;
	}
	if (!r) {
		c->eof = 1;
		return;
	}
	for (k = 0; k < r; k++) {
		unsigned long long off = (unsigned long long)(c->in + k);

		if ((unsigned char)rx[k] != pat_byte(off)) {
			fprintf(stderr, "stream %ld: mismatch at offset %llu\n",
				i, off);
			c->in += k;
			pmany_end(c, i, "mismatch");
			return;
		}
	}
	c->in += r;
}

/* pmany_tx() - send what --rate allows on stream @i, at least @chunk */
static void pmany_tx(struct pmany *c, long i, long long now, long long chunk)
{
	static char tx[BUFSZ];
	long long want = BUFSZ;
	ssize_t w;

	if (opt_rate > 0) {
		want = opt_rate * 1024 * (now - c->t0) / 1000 - c->out;
		if (want < chunk)
			return;
		if (want > BUFSZ)
			want = BUFSZ;
	}
	pat_fill(tx, (size_t)want, (unsigned long long)c->out);
	w = send(c->s, tx, (size_t)want, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0) {
		if (errno != EAGAIN && errno != EINTR)
			pmany_end(c, i, is_reset(errno) ? "rst" : "failed");
		return;
	}
	c->out += w;
}

static int do_pattern_many(const char *addr, const char *port0, long n,
			   int listening)
{
	static struct pmany p[MAX_CONNS];
	static struct pollfd pfd[MAX_CONNS];
	static long idx[MAX_CONNS];
	long long chunk = BUFSZ, t_prog = 0, t_stop = 0, p0 = num(port0);
	long i, left = n, connecting = 0, next = 0, bad = 0;
	int tx_done = 0;

	if (n < 1 || n > MAX_CONNS || p0 + n > 65536)
		die("pattern-many: N must be 1..%d, ports within 65535",
		    MAX_CONNS);
	raise_nofile();
	/* At most 20 sends a second a stream when --rate limits it */
	if (opt_rate > 0 && opt_rate * 1024 / 20 < chunk)
		chunk = opt_rate * 1024 / 20 ? opt_rate * 1024 / 20 : 1;
	for (i = 0; i < n; i++) {
		char pb[24];

		p[i].s = p[i].l = -1;
		p[i].send = opt_send || (opt_send_parity >= 0 &&
					 i % 2 == opt_send_parity);
		if (!listening)
			continue;
		snprintf(pb, sizeof(pb), "%lld", p0 + i);
		p[i].l = sock_listen(addr, pb, SOCK_STREAM);
		set_nonblock(p[i].l);
	}
	ready();

	while (left) {
		long long now = now_ms();
		nfds_t k = 0;
		int wait = 200;

		/* Connect in batches of 64, so as not to drop SYNs */
		while (!listening && next < n && connecting < 64) {
			struct sockaddr_storage ss;
			socklen_t len;
			char pb[24];
			int s;

			snprintf(pb, sizeof(pb), "%lld", p0 + next);
			len = parse_addr(addr, pb, &ss);
			s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK,
				   0);
			if (s < 0)
				die("socket: %s", strerror(errno));
			bufsizes(s);
			p[next].s = s;
			if (connect(s, (struct sockaddr *)&ss, len) &&
			    errno != EINPROGRESS) {
				fprintf(stderr, "stream %ld: connect: %s\n",
					next, strerror(errno));
				pmany_end(&p[next], next, "failed");
				left--;
			} else {
				connecting++;
			}
			next++;
		}
		if (!tx_done && opt_stop_file && now - t_stop >= 20) {
			t_stop = now;
			tx_done = !access(opt_stop_file, F_OK);
		}
		if (now - t_prog >= 200) {
			t_prog = now;
			pmany_progress(p, n);
		}

		for (i = 0; i < n; i++) {
			struct pmany *c = &p[i];
			short ev = 0;

			if (c->end)
				continue;
			if (c->l >= 0) {
				pfd[k].fd = c->l;
				pfd[k].events = POLLIN;
				idx[k++] = i;
				continue;
			}
			if (c->s < 0)
				continue;
			if (!c->conn) {
				ev = POLLOUT;
			} else {
				int sending = c->send && !tx_done;

				/* The FIN once done sending, or after the
				 * peer's for a side that doesn't send */
				if (!sending && !c->shut &&
				    (c->eof || c->send)) {
					shutdown(c->s, SHUT_WR);
					c->shut = 1;
				}
				if (c->shut && c->eof) {
					pmany_end(c, i, "eof");
					left--;
					continue;
				}
				if (!c->eof)
					ev |= POLLIN;
				if (sending) {
					long long a = opt_rate * 1024 *
						      (now - c->t0) / 1000 -
						      c->out;

					if (opt_rate <= 0 || a >= chunk)
						ev |= POLLOUT;
					else
						wait = 10;
				}
			}
			pfd[k].fd = c->s;
			pfd[k].events = ev;
			idx[k++] = i;
		}
		if (!left)
			break;
		if (poll(pfd, k, wait) < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		now = now_ms();

		for (i = 0; i < (long)k; i++) {
			struct pmany *c = &p[idx[i]];
			short re = pfd[i].revents;

			if (!re)
				continue;
			if (c->l >= 0) {
				c->s = accept(c->l, NULL, NULL);
				if (c->s < 0)
					continue;
				close(c->l);
				c->l = -1;
				set_nonblock(c->s);
				c->conn = 1;
				c->t0 = now;
				continue;
			}
			if (!c->conn) {
				int err = 0;
				socklen_t el = sizeof(err);

				getsockopt(c->s, SOL_SOCKET, SO_ERROR, &err,
					   &el);
				connecting--;
				if (err) {
					fprintf(stderr, "stream %ld: connect: "
						"%s\n", idx[i], strerror(err));
					pmany_end(c, idx[i], "failed");
					left--;
					continue;
				}
				c->conn = 1;
				c->t0 = now;
				continue;
			}
			if (re & (POLLIN | POLLERR | POLLHUP))
				pmany_rx(c, idx[i]);
			if (!c->end && (re & POLLOUT))
				pmany_tx(c, idx[i], now, chunk);
			if (c->end)
				left--;
		}
	}

	pmany_progress(p, n);
	for (i = 0; i < n; i++)
		bad += strcmp(p[i].end, "eof") != 0;
	if (opt_report)
		fprintf(stderr, "pattern-many: %ld streams, %ld ended with "
			"both FINs, %ld did not\n", n, n - bad, bad);
	return bad ? 1 : 0;
}

static int do_tcp_refused(const char *addr, const char *port)
{
	long long t0 = now_ms();
	int s = tcp_connect(addr, port);

	if (s >= 0) {
		close(s);
		fprintf(stderr, "sockio: connect %s %s succeeded\n", addr, port);
		return 1;
	}
	if (s != -ECONNREFUSED) {
		fprintf(stderr, "sockio: connect %s %s: %s (after %lld ms)\n",
			addr, port, strerror(-s), now_ms() - t0);
		return 1;
	}
	fprintf(stderr, "sockio: connection refused after %lld ms\n",
		now_ms() - t0);
	return 0;
}

static void set_timeouts(int s, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* churn_one() - one connection of churn, returns 0 or -1 on error */
static int churn_one(const struct sockaddr_storage *ss, socklen_t len,
		     unsigned i, int *rst)
{
	static char buf[8192], back[8192];
	size_t size = 1 + (i * 2654435761u >> 7) % 4096, got = 0, k;
	int s, kind = (int)(i % 4);
	ssize_t r;

	s = socket(ss->ss_family, SOCK_STREAM, 0);
	if (s < 0)
		die("socket: %s", strerror(errno));
	set_timeouts(s, 5);
	if (connect(s, (const struct sockaddr *)ss, len)) {
		fprintf(stderr, "churn %u: connect: %s\n", i, strerror(errno));
		close(s);
		return -1;
	}
	for (k = 0; k < size; k++)
		buf[k] = (char)pat(i, k);
	if (send(s, buf, size, MSG_NOSIGNAL) != (ssize_t)size) {
		fprintf(stderr, "churn %u: send: %s\n", i, strerror(errno));
		close(s);
		return -1;
	}
	if (kind == 3) {
		/* reset with the echo possibly still in flight */
		rst_close(s);
		*rst = 1;
		return 0;
	}
	while (got < size) {
		r = recv(s, back + got, size - got, 0);
		if (r <= 0) {
			fprintf(stderr, "churn %u: recv after %zu of %zu: %s\n",
				i, got, size, r ? strerror(errno) : "EOF");
			close(s);
			return -1;
		}
		got += (size_t)r;
	}
	if (memcmp(buf, back, size)) {
		fprintf(stderr, "churn %u: echoed data differs\n", i);
		close(s);
		return -1;
	}
	if (kind == 2) {
		rst_close(s);
		*rst = 1;
		return 0;
	}
	shutdown(s, SHUT_WR);
	r = recv(s, back, sizeof(back), 0);
	if (r != 0) {
		fprintf(stderr, "churn %u: expected EOF, got %zd (%s)\n", i, r,
			r < 0 ? strerror(errno) : "data");
		close(s);
		return -1;
	}
	close(s);
	*rst = 0;
	return 0;
}

static int do_churn(const char *addr, const char *port, long secs)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(addr, port, &ss);
	long long t0 = now_ms(), end = t0 + secs * 1000;
	unsigned i, graceful = 0, rsts = 0, errors = 0;
	const unsigned rate = 200; /* per second */

	for (i = 0; now_ms() < end && errors < 20; i++) {
		long long due = t0 + (long long)i * 1000 / rate;
		int rst = 0;

		/* bounded rate: TIME_WAIT must not exhaust ephemeral ports */
		while (now_ms() < due)
			usleep(1000);
		if (churn_one(&ss, len, i, &rst))
			errors++;
		else if (rst)
			rsts++;
		else
			graceful++;
	}
	fprintf(stderr, "churn: connections=%u graceful=%u rst=%u errors=%u "
		"seconds=%lld\n", i, graceful, rsts, errors,
		(now_ms() - t0) / 1000);
	return errors ? 1 : 0;
}

static int do_udp_echo(const char *addr, const char *port)
{
	static char buf[BUFSZ];
	int s = sock_listen(addr, port, SOCK_DGRAM);

	ready();
	for (;;) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(s, buf, sizeof(buf), 0,
				     (struct sockaddr *)&from, &fl);

		if (r < 0) {
			if (errno == EINTR || errno == ECONNREFUSED)
				continue;
			die("recvfrom: %s", strerror(errno));
		}
		sendto(s, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
	}
	return 0;
}

/* wait_readable() - poll @s for input up to @ms, returns poll() result */
static int wait_readable(int s, int ms)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	int rc;

	do
		rc = poll(&p, 1, ms);
	while (rc < 0 && errno == EINTR);
	return rc;
}

static int do_udp_ping(const char *addr, const char *port, long count)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(addr, port, &ss);
	char msg[128], buf[256];
	unsigned tag = (unsigned)getpid() ^ (unsigned)now_ms();
	long i, ok = 0;
	int s;

	if (count < 1 || count > 100000)
		die("udp-ping: COUNT must be 1..100000");
	s = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&ss, len))
		die("connect: %s", strerror(errno));

	for (i = 0; i < count; i++) {
		int tries, got = 0;
		int mlen = snprintf(msg, sizeof(msg),
				    "sockio udp-ping %08x seq %ld", tag, i);

		for (tries = 0; tries < 5 && !got; tries++) {
			long long end = now_ms() + 1000;

			if (send(s, msg, (size_t)mlen, 0) < 0) {
				if (errno == ECONNREFUSED) {
					if (opt_expect_refused) {
						fprintf(stderr, "sockio: refused\n");
						return 0;
					}
					die("send: connection refused");
				}
				die("send: %s", strerror(errno));
			}
			while (!got && now_ms() < end) {
				ssize_t r;

				if (wait_readable(s, (int)(end - now_ms())) <= 0)
					break;
				r = recv(s, buf, sizeof(buf), 0);
				if (r < 0 && errno == ECONNREFUSED) {
					if (opt_expect_refused) {
						fprintf(stderr, "sockio: refused\n");
						return 0;
					}
					die("recv: connection refused (seq %ld)", i);
				}
				if (r < 0)
					die("recv: %s", strerror(errno));
				if (r == mlen && !memcmp(buf, msg, (size_t)mlen))
					got = 1;
				/* else: a late echo of an earlier try */
			}
		}
		if (!got) {
			if (opt_expect_refused)
				die("no ECONNREFUSED (and no reply)");
			die("seq %ld: no echo after 5 tries (%ld of %ld echoed)",
			    i, ok, count);
		}
		if (opt_expect_refused)
			die("got an echo, expected ECONNREFUSED");
		ok++;
	}
	fprintf(stderr, "udp-ping: %ld of %ld echoed\n", ok, count);
	return 0;
}

/* DNS name "example.test" in wire format */
static const unsigned char qname[] = "\7example\4test";

static int do_udp_dns(const char *addr)
{
	struct sockaddr_storage ss, from;
	socklen_t len = parse_addr(addr, "53", &ss), fl;
	unsigned char q[64], buf[512];
	uint16_t id = (uint16_t)(getpid() ^ now_ms());
	size_t ql = 0;
	int s, tries;

	q[ql++] = (unsigned char)(id >> 8);
	q[ql++] = (unsigned char)id;
	q[ql++] = 0x01;		/* RD */
	q[ql++] = 0x00;
	q[ql++] = 0; q[ql++] = 1;	/* QDCOUNT */
	memset(q + ql, 0, 6);
	ql += 6;
	memcpy(q + ql, qname, sizeof(qname));	/* with the root label */
	ql += sizeof(qname);
	q[ql++] = 0; q[ql++] = 1;	/* A */
	q[ql++] = 0; q[ql++] = 1;	/* IN */

	s = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket: %s", strerror(errno));
	for (tries = 0; tries < 5; tries++) {
		long long end = now_ms() + 1000;

		if (sendto(s, q, ql, 0, (struct sockaddr *)&ss, len) < 0)
			die("sendto: %s", strerror(errno));
		while (now_ms() < end) {
			ssize_t r;

			if (wait_readable(s, (int)(end - now_ms())) <= 0)
				break;
			fl = sizeof(from);
			r = recvfrom(s, buf, sizeof(buf), 0,
				     (struct sockaddr *)&from, &fl);
			if (r < 12)
				continue;
			if (fl != len || memcmp(&from, &ss, len)) {
				char h[INET6_ADDRSTRLEN] = "?";

				getnameinfo((struct sockaddr *)&from, fl, h,
					    sizeof(h), NULL, 0, NI_NUMERICHOST);
				fprintf(stderr, "sockio: reply from %s, not %s\n",
					h, addr);
				continue;
			}
			if (buf[0] != q[0] || buf[1] != q[1] ||
			    !(buf[2] & 0x80))
				continue;
			fprintf(stderr, "udp-dns: answer from %s, rcode %d, "
				"%d answers\n", addr, buf[3] & 0xf,
				buf[6] << 8 | buf[7]);
			return 0;
		}
	}
	fprintf(stderr, "sockio: no DNS answer from %s\n", addr);
	return 1;
}

static int do_dns_server(const char *addr)
{
	unsigned char buf[512];
	int s = sock_listen(addr, "53", SOCK_DGRAM);

	ready();
	for (;;) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(s, buf, sizeof(buf), 0,
				     (struct sockaddr *)&from, &fl);
		size_t p = 12;

		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("recvfrom: %s", strerror(errno));
		}
		if (r < 17 || (buf[2] & 0x80) || buf[4] || buf[5] != 1)
			continue;
		/* skip the question's name, then its type and class */
		while (p < (size_t)r && buf[p] && buf[p] < 64)
			p += buf[p] + 1u;
		p += 5;
		if (p > (size_t)r || p + 16 > sizeof(buf))
			continue;
		buf[2] = 0x80 | (buf[2] & 0x01);	/* QR, RD copied */
		buf[3] = 0x80;				/* RA, NOERROR */
		buf[6] = 0; buf[7] = 1;			/* ANCOUNT */
		memset(buf + 8, 0, 4);			/* NS, AR */
		buf[p++] = 0xc0; buf[p++] = 12;		/* name: question */
		buf[p++] = 0; buf[p++] = 1;		/* A */
		buf[p++] = 0; buf[p++] = 1;		/* IN */
		buf[p++] = 0; buf[p++] = 0; buf[p++] = 0; buf[p++] = 60;
		buf[p++] = 0; buf[p++] = 4;
		buf[p++] = 192; buf[p++] = 0; buf[p++] = 2; buf[p++] = 123;
		sendto(s, buf, p, 0, (struct sockaddr *)&from, fl);
	}
	return 0;
}

static void usage(void)
{
	fputs("Usage: sockio [-4|-6] [-t SECS] [--ready FILE] [--report]\n"
	      "              [--rst-after N] [--expect-rst] [--hold]\n"
	      "              [--wait-eof] [--expect-refused] [--send]\n"
	      "              [--rate KIB] [--bytes N] [--stop-file FILE]\n"
	      "              [--fin-file FILE] [--again]\n"
	      "              [--progress FILE] [--pause-rx] [--rx-file FILE]\n"
	      "              [--oob-at N]\n"
	      "              [--rcvbuf N] [--sndbuf N] [--send-parity 0|1]\n"
	      "              [--stall MS] [--stall-cmd CMD] MODE ARG...\n"
	      "MODE: tcp-listen ADDR PORT | tcp-connect ADDR PORT |\n"
	      "      tcp-echo ADDR PORT | tcp-many ADDR PORT N BYTES |\n"
	      "      tcp-refused ADDR PORT | churn ADDR PORT SECS |\n"
	      "      udp-echo ADDR PORT | udp-ping ADDR PORT [COUNT] |\n"
	      "      udp-dns ADDR | dns-server ADDR |\n"
	      "      pattern-listen ADDR PORT | pattern-connect ADDR PORT |\n"
	      "      pattern-many-listen ADDR PORT0 N |\n"
	      "      pattern-many-connect ADDR PORT0 N\n",
	      stderr);
	exit(64);
}

static long num(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > 1LL << 40)
		usage();
	return (long)v;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "ready",		required_argument, NULL, 'r' },
		{ "rst-after",		required_argument, NULL, 'R' },
		{ "expect-rst",		no_argument, NULL, 'E' },
		{ "expect-refused",	no_argument, NULL, 'F' },
		{ "report",		no_argument, NULL, 'p' },
		{ "hold",		no_argument, NULL, 'H' },
		{ "wait-eof",		no_argument, NULL, 'W' },
		{ "send",		no_argument, NULL, 'S' },
		{ "rate",		required_argument, NULL, 'K' },
		{ "bytes",		required_argument, NULL, 'B' },
		{ "stop-file",		required_argument, NULL, 'X' },
		{ "fin-file",		required_argument, NULL, 'I' },
		{ "again",		no_argument, NULL, 'A' },
		{ "progress",		required_argument, NULL, 'P' },
		{ "pause-rx",		no_argument, NULL, 'Q' },
		{ "rx-file",		required_argument, NULL, 'G' },
		{ "oob-at",		required_argument, NULL, 'O' },
		{ "rcvbuf",		required_argument, NULL, 'V' },
		{ "sndbuf",		required_argument, NULL, 'Y' },
		{ "send-parity",	required_argument, NULL, 'Z' },
		{ "stall",		required_argument, NULL, 'T' },
		{ "stall-cmd",		required_argument, NULL, 'C' },
		{ "help",		no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *mode;
	int o, server, rc = 64;
	char **a;

	while ((o = getopt_long(argc, argv, "46t:h", lopts, NULL)) != -1) {
		switch (o) {
		case '4': opt_family = AF_INET; break;
		case '6': opt_family = AF_INET6; break;
		case 't': opt_timeout = num(optarg); break;
		case 'r': opt_ready = optarg; break;
		case 'R': opt_rst_after = num(optarg); break;
		case 'E': opt_expect_rst = 1; break;
		case 'F': opt_expect_refused = 1; break;
		case 'p': opt_report = 1; break;
		case 'H': opt_hold = 1; break;
		case 'W': opt_wait_eof = 1; break;
		case 'S': opt_send = 1; break;
		case 'K': opt_rate = num(optarg); break;
		case 'B': opt_bytes = num(optarg); break;
		case 'X': opt_stop_file = optarg; break;
		case 'I': opt_fin_file = optarg; break;
		case 'A': opt_again = 1; break;
		case 'P': opt_progress = optarg; break;
		case 'Q': opt_pause_rx = 1; break;
		case 'G': opt_rx_file = optarg; break;
		case 'O': opt_oob_at = num(optarg); break;
		case 'V': opt_rcvbuf = num(optarg); break;
		case 'Y': opt_sndbuf = num(optarg); break;
		case 'T': opt_stall = num(optarg); break;
		case 'C': opt_stall_cmd = optarg; break;
		case 'Z':
			opt_send_parity = (int)num(optarg);
			if (opt_send_parity > 1)
				usage();
			break;
		default: usage();
		}
	}
	if (optind >= argc)
		usage();
	mode = argv[optind];
	a = argv + optind + 1;
	argc -= optind + 1;

	signal(SIGPIPE, SIG_IGN);
	server = !strcmp(mode, "tcp-echo") || !strcmp(mode, "udp-echo") ||
		 !strcmp(mode, "dns-server");
	if (opt_timeout < 0)
		opt_timeout = server ? 0 : 60;
	if (!strcmp(mode, "churn") && argc == 3 && opt_timeout &&
	    opt_timeout < num(a[2]) + 30)
		opt_timeout = num(a[2]) + 30;
	if (opt_timeout) {
		signal(SIGALRM, on_alarm);
		alarm((unsigned)opt_timeout);
	}

	if (!strcmp(mode, "tcp-listen") && argc == 2)
		rc = do_tcp_listen(a[0], a[1]);
	else if (!strcmp(mode, "tcp-connect") && argc == 2)
		rc = do_tcp_connect(a[0], a[1]);
	else if (!strcmp(mode, "pattern-listen") && argc == 2)
		rc = do_pattern_listen(a[0], a[1]);
	else if (!strcmp(mode, "pattern-connect") && argc == 2)
		rc = do_pattern_connect(a[0], a[1]);
	else if (!strcmp(mode, "pattern-many-listen") && argc == 3)
		rc = do_pattern_many(a[0], a[1], num(a[2]), 1);
	else if (!strcmp(mode, "pattern-many-connect") && argc == 3)
		rc = do_pattern_many(a[0], a[1], num(a[2]), 0);
	else if (!strcmp(mode, "tcp-echo") && argc == 2)
		rc = do_tcp_echo(a[0], a[1]);
	else if (!strcmp(mode, "tcp-many") && argc == 4)
		rc = do_tcp_many(a[0], a[1], num(a[2]), num(a[3]));
	else if (!strcmp(mode, "tcp-refused") && argc == 2)
		rc = do_tcp_refused(a[0], a[1]);
	else if (!strcmp(mode, "churn") && argc == 3)
		rc = do_churn(a[0], a[1], num(a[2]));
	else if (!strcmp(mode, "udp-echo") && argc == 2)
		rc = do_udp_echo(a[0], a[1]);
	else if (!strcmp(mode, "udp-ping") && (argc == 2 || argc == 3))
		rc = do_udp_ping(a[0], a[1], argc == 3 ? num(a[2]) : 1);
	else if (!strcmp(mode, "udp-dns") && argc == 1)
		rc = do_udp_dns(a[0]);
	else if (!strcmp(mode, "dns-server") && argc == 1)
		rc = do_dns_server(a[0]);
	else
		usage();
	return rc;
}
