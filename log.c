// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * log.c - where log messages go, and the per-call-site rate limiter.
 *
 * Three sinks: stderr (foreground, or before daemonizing), a log file
 * opened once at start-up (libvirt pre-creates it and passes -l), and
 * syslog for a daemon without a log file. A line is written with a single
 * write() so concurrent writers never interleave mid-line.
 *
 * Syslog is our own datagram socket, connected to /dev/log before the
 * sandbox hides it, not syslog(3): one send() per line, never blocking,
 * never reconnecting (the sandbox has no /dev/log to reconnect to), and
 * usable from a signal handler. That is what log_sigsafe() needs: the
 * line of a system call the seccomp filter denied (sigsys.c) goes to
 * every sink from the SIGSYS handler, with nothing but write(), send()
 * and the vDSO's clock_gettime().
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

enum log_level log_level = LOG_LVL_INFO;

static int log_file_fd = -1;
static bool log_stderr = true;
static bool log_syslog;
/* Our syslog socket, connected to /dev/log, and "passt[PID]: " */
static int log_syslog_fd = -1;
static char log_ident[32];

/**
 * now_ms() - monotonic time in milliseconds, for timers and rate limits
 *
 * Return: CLOCK_MONOTONIC, ms: never goes back, unaffected by changes to
 *	   the wall clock, and not comparable across boots or hosts
 */
uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

/**
 * now_ns() - monotonic time in nanoseconds
 *
 * Return: CLOCK_MONOTONIC, ns, as now_ms()
 */
uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *const lvl_name[] = { "ERROR", "WARNING", "info",
					"debug", "trace" };
static const int lvl_syslog[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG,
				  LOG_DEBUG };

/* Decimal @v into @buf, no NUL; returns its length. Async-signal-safe */
static int log_uint(char *buf, unsigned v)
{
	char d[12];
	int i = 0, n = 0;

	do
		d[i++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (i)
		buf[n++] = d[--i];
	return n;
}

/* Best effort: a log line that can't be written has nowhere else to go */
static void log_write(int fd, const char *buf, size_t len)
{
	ssize_t rc = write(fd, buf, len);

	(void)rc;
}

#define LOG_STAMP_LEN	25

/**
 * log_stamp() - RFC 3339 UTC timestamp with milliseconds and a space
 * @buf:	output, LOG_STAMP_LEN bytes and a NUL
 *
 * "2026-11-30T16:30:05.123Z ", into @buf: by hand (days to a civil date, as in
 * Howard Hinnant's algorithm), so that a signal handler may call it.
 *
 * Return: length of the timestamp
 */
static size_t log_stamp(char *buf)
{
	struct timespec ts = { 0 };
	long long days, secs, era, doe, yoe, doy, mp, y, m, d;
	unsigned v[7];
	const char *sep = "--T::.";
	size_t n = 0;
	int i, k;

	clock_gettime(CLOCK_REALTIME, &ts);
	days = ts.tv_sec / 86400;
	secs = ts.tv_sec % 86400;
	days += 719468;
	era = days / 146097;
	doe = days - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = yoe + era * 400 + (m <= 2);

	v[0] = (unsigned)y;
	v[1] = (unsigned)m;
	v[2] = (unsigned)d;
	v[3] = (unsigned)(secs / 3600);
	v[4] = (unsigned)(secs / 60 % 60);
	v[5] = (unsigned)(secs % 60);
	v[6] = (unsigned)(ts.tv_nsec / 1000000);
	for (i = 0; i < 7; i++) {
		int w = i == 0 ? 4 : i == 6 ? 3 : 2;

		for (k = w - 1; k >= 0; k--) {
			buf[n + k] = (char)('0' + v[i] % 10);
			v[i] /= 10;
		}
		n += w;
		buf[n++] = i < 6 ? sep[i] : 'Z';
	}
	buf[n++] = ' ';
	buf[n] = '\0';
	return n;
}

/**
 * log_syslog_send() - one line to syslog, never waiting
 * @lvl:	log level
 * @msg:	the message, no newline
 * @len:	length of @msg in bytes
 *
 * "<PRIORITY>passt[PID]: " and @msg in one datagram, never waiting for a slow
 * syslog daemon (the line is dropped then, as a full socket would drop it).
 */
static void log_syslog_send(enum log_level lvl, const char *msg, size_t len)
{
	char buf[1200];
	ssize_t rc;
	int n;

	if (log_syslog_fd < 0)
		return;
	n = 0;
	buf[n++] = '<';
	n += log_uint(buf + n, (unsigned)(LOG_DAEMON | lvl_syslog[lvl]));
	buf[n++] = '>';
	len = MIN(len, sizeof(buf) - (size_t)n - sizeof(log_ident));
	memcpy(buf + n, log_ident, strlen(log_ident));
	n += (int)strlen(log_ident);
	memcpy(buf + n, msg, len);
	n += (int)len;
	rc = send(log_syslog_fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)rc;
}

/*
 * @line (@n bytes, newline-terminated, a timestamp in its first @s) to
 * every sink: stderr and syslog without the timestamp, the log file with
 * it. Async-signal-safe.
 */
static void log_sinks(enum log_level lvl, const char *line, int s, int n)
{
	if (log_stderr)
		log_write(STDERR_FILENO, line + s, n - s);
	if (log_file_fd >= 0)
		log_write(log_file_fd, line, n);
	if (log_syslog)
		log_syslog_send(lvl, line + s, n - s - 1);
}

/**
 * log_vmsg() - format and log one message at a level
 * @lvl:	log level
 * @suffix:	appended after ": ", NULL for nothing
 * @fmt:	format string
 * @ap:		arguments for @fmt
 */
__attribute__((format(printf, 3, 0)))
static void log_vmsg(enum log_level lvl, const char *suffix, const char *fmt,
		     va_list ap)
{
	char line[1024];
	int n = 0, m, s;

	if (lvl > log_level)
		return;

	/* line: a timestamp (log file only), then the message */
	s = n = (int)log_stamp(line);
	if (lvl != LOG_LVL_INFO || log_level >= LOG_LVL_DEBUG)
		n += snprintf(line + n, sizeof(line) - n, "%s: ",
			      lvl_name[lvl]);
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (m < 0)
		return;
	n = MIN((size_t)(n + m), sizeof(line) - 2);
	if (suffix)
		n += snprintf(line + n, sizeof(line) - 1 - n, ": %s", suffix);
	n = MIN((size_t)n, sizeof(line) - 2);
	line[n++] = '\n';

	log_sinks(lvl, line, s, n);
}

/**
 * log_msg() - log a message if @lvl is enabled: what err(), warn(),
 *	       info(), debug() and trace() expand to
 * @lvl:	level; nothing is written above the global log_level
 * @fmt:	printf() format, without the trailing newline
 * @...:	its arguments
 *
 * The line goes to every active sink (stderr, log file, syslog) in a
 * single write() each; only the log file's copy is timestamped. Lines
 * over about 1 KiB are cut. Not rate-limited: guest-triggered messages go
 * through log_rl() and its _rl wrappers.
 */
void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(lvl, NULL, fmt, ap);
	va_end(ap);
}

/**
 * log_perror() - log_msg() with ": strerror(errno)" appended
 * @lvl:	level, as log_msg()
 * @fmt:	printf() format, without the trailing newline
 * @...:	its arguments
 *
 * errno is read first and restored on return, so the caller can still
 * act on it.
 */
void log_perror(enum log_level lvl, const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(lvl, strerror(e), fmt, ap);
	va_end(ap);
	errno = e;
}

/**
 * die() - log an error and exit with EXIT_FAILURE
 * @fmt:	printf() format, without the trailing newline
 * @...:	its arguments
 *
 * For configuration and start-up errors only: the message should name the
 * option or resource at fault. Never for anything a guest can cause.
 */
void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_ERR, NULL, fmt, ap);
	va_end(ap);
	exit(EXIT_FAILURE);
}

/**
 * die_perror() - die() with ": strerror(errno)" appended
 * @fmt:	printf() format, without the trailing newline
 * @...:	its arguments
 */
void die_perror(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_ERR, strerror(e), fmt, ap);
	va_end(ap);
	exit(EXIT_FAILURE);
}

/**
 * log_open_file() - send messages to a log file too (option -l), from now
 * @path:	file, created (mode 0600) if missing, appended to if not
 *
 * The descriptor is kept for the process's lifetime: call this before the
 * sandbox hides the file system. A file opened by an earlier call is
 * closed.
 *
 * Return: 0 or -errno from open(); the previous file, if any, stays then
 */
int log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (log_file_fd >= 0)
		close(log_file_fd);
	log_file_fd = fd;
	return 0;
}

/**
 * log_to_stderr() - start or stop writing messages to stderr
 * @on:		false once a daemon is ready: stderr is the pipe to the
 *		parent waiting for start-up errors, which stops reading then
 */
void log_to_stderr(bool on)
{
	log_stderr = on;
}

/**
 * log_to_syslog() - start or stop sending messages to syslog
 * @on:		true for a daemon without a log file
 *
 * Turning it on connects to /dev/log at once (LOG_NDELAY), as
 * "passt[PID]" with the PID of the calling process: call it after the
 * fork to background, and before the sandbox.
 */
void log_to_syslog(bool on)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX,
				 .sun_path = "/dev/log" };

	/* "passt[PID]: " as LOG_PID would write it, without a getpid() per
	 * message (not in the seccomp allow-list); connected now, before
	 * the sandbox hides /dev/log
	 */
	if (on && log_syslog_fd < 0) {
		snprintf(log_ident, sizeof(log_ident), "passt[%i]: ",
			 (int)getpid());
		log_syslog_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (log_syslog_fd >= 0 &&
		    connect(log_syslog_fd, (struct sockaddr *)&a, sizeof(a))) {
			close(log_syslog_fd);
			log_syslog_fd = -1;
		}
	}
	log_syslog = on;
}

/**
 * log_sigsafe() - an error line, from a signal handler
 * @line:	the message, ending with a newline
 * @len:	its length, newline included
 *
 * Goes to every active sink, as log_msg() would send it at the error
 * level, with nothing but async-signal-safe calls that every seccomp
 * profile allows (write(), send(), clock_gettime()): for sigsys.c.
 */
void log_sigsafe(const char *line, size_t len)
{
	char buf[LOG_STAMP_LEN + 1 + 512];
	size_t n;
	int s;

	if (!len || line[len - 1] != '\n')
		return;

	s = (int)log_stamp(buf);
	n = (size_t)s + sizeof("ERROR: ") - 1;
	memcpy(buf + s, "ERROR: ", n - (size_t)s);
	len = MIN(len, sizeof(buf) - n);
	memcpy(buf + n, line, len);
	buf[n + len - 1] = '\n';
	log_sinks(LOG_LVL_ERR, buf, s, (int)(n + len));
}

/**
 * log_close() - close the log file, if any: later messages skip it
 */
void log_close(void)
{
	if (log_file_fd >= 0)
		close(log_file_fd);
	log_file_fd = -1;
}

/**
 * log_rl_ok() - rate limiter behind log_rl(): one message a second per
 *		 call site
 * @last:	the call site's time of its last message, ms (now_ms()),
 *		0 for none yet; updated when the message may go
 * @suppressed:	the call site's count of messages held back since then:
 *		incremented if not, reset to 0 if so
 *
 * Return: true if a message may be logged now (the caller reports the
 *	   count of suppressed ones it read before the call), false if one
 *	   went less than a second ago
 */
bool log_rl_ok(uint64_t *last, unsigned *suppressed)
{
	uint64_t now = now_ms();

	if (*last && now - *last < 1000) {
		(*suppressed)++;
		return false;
	}
	*last = now ? now : 1;
	*suppressed = 0;
	return true;
}
