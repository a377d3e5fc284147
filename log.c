// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * log.c - where log messages go, and the per-call-site rate limiter.
 *
 * Three sinks: stderr (foreground, or before daemonizing), a log file
 * opened once at start-up (libvirt pre-creates it and passes -l), and
 * syslog for a daemon without a log file. A line is written with a single
 * write() so concurrent writers never interleave mid-line.
 */
#include <errno.h>
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

/* Best effort: a log line that can't be written has nowhere else to go */
static void log_write(int fd, const char *buf, size_t len)
{
	ssize_t rc = write(fd, buf, len);

	(void)rc;
}

__attribute__((format(printf, 3, 0)))
static void log_vmsg(enum log_level lvl, const char *suffix, const char *fmt,
		     va_list ap)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	int n = 0, m, s;

	if (lvl > log_level)
		return;

	/* line: an RFC 3339 UTC timestamp with milliseconds (log file only,
	 * "2026-11-30T16:30:05.123Z"), then the message
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	s = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	s += snprintf(line + s, sizeof(line) - s, ".%03ldZ ",
		      ts.tv_nsec / 1000000);
	n = s;
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

	if (log_stderr)
		log_write(STDERR_FILENO, line + s, n - s);
	if (log_file_fd >= 0)
		log_write(log_file_fd, line, n);
	if (log_syslog) {
		line[n - 1] = '\0';
		syslog(lvl_syslog[lvl], "%s", line + s);
	}
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
	/* "passt[PID]" as LOG_PID would write it, without a getpid() per
	 * message (not in the seccomp allow-list); connected now, before
	 * the sandbox hides /dev/log
	 */
	static char ident[32];

	if (on && !log_syslog) {
		snprintf(ident, sizeof(ident), "passt[%i]", (int)getpid());
		openlog(ident, LOG_NDELAY, LOG_DAEMON);
	}
	log_syslog = on;
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
