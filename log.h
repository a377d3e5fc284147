/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.h - levelled logging: die(), err(), warn(), info(), debug(), trace().
 *
 * Messages go to stderr while we run in the foreground, to the log file
 * (-l) if one was given, and to syslog once daemonized without a log file.
 * Anything a guest can trigger must use the _rl (rate-limited) variants.
 */
#ifndef LOG_H
#define LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

enum log_level {
	LOG_LVL_ERR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
	LOG_LVL_TRACE,
};

extern enum log_level log_level;

void log_msg(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void log_perror(enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void die_perror(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
int log_open_file(const char *path);
void log_to_stderr(bool on);
void log_to_syslog(bool on);
void log_close(void);
void log_sigsafe(const char *line, size_t len);

/* log_rl_ok() - rate limiter: true if a message may be printed now */
bool log_rl_ok(uint64_t *last, unsigned *suppressed);

#define err(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define debug(...)                                                     \
	do {                                                           \
		if (log_level >= LOG_LVL_DEBUG)                        \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);           \
	} while (0)
#define trace(...)                                                     \
	do {                                                           \
		if (log_level >= LOG_LVL_TRACE)                        \
			log_msg(LOG_LVL_TRACE, __VA_ARGS__);           \
	} while (0)
#define err_perror(...) log_perror(LOG_LVL_ERR, __VA_ARGS__)
#define warn_perror(...) log_perror(LOG_LVL_WARN, __VA_ARGS__)

/* At most one message per second per call site; the count of suppressed
 * messages is reported with the next one that gets through.
 */
#define log_rl(lvl, fmt, ...)                                          \
	do {                                                           \
		static uint64_t rl_last_;                              \
		static unsigned rl_supp_;                              \
		unsigned rl_n_ = rl_supp_;                             \
		if (log_level >= (lvl) && log_rl_ok(&rl_last_, &rl_supp_)) { \
			if (rl_n_)                                     \
				log_msg(lvl, fmt " (%u similar suppressed)", \
					##__VA_ARGS__, rl_n_);         \
			else                                           \
				log_msg(lvl, fmt, ##__VA_ARGS__);      \
		}                                                      \
	} while (0)
#define warn_rl(...) log_rl(LOG_LVL_WARN, __VA_ARGS__)
#define info_rl(...) log_rl(LOG_LVL_INFO, __VA_ARGS__)
#define debug_rl(...) log_rl(LOG_LVL_DEBUG, __VA_ARGS__)

#endif /* LOG_H */
