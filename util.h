/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util.h - tiny helpers shared by every module: array sizes, min/max,
 * branch hints, and the few constants that size our static tables.
 *
 * Nothing here allocates or does I/O.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ROUND_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define UNUSED __attribute__((unused))

/* Largest Ethernet frame we accept from, or send to, the guest */
#define FRAME_MAX_LEN 65535
/* Shortest frame we send: Ethernet minimum without FCS */
#define FRAME_MIN_LEN 60

/* Milliseconds, and nanoseconds, on CLOCK_MONOTONIC */
uint64_t now_ms(void);
uint64_t now_ns(void);

#endif /* UTIL_H */
