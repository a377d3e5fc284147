/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sigsys.h - what happens when a seccomp filter of ours denies a call:
 * one line that names it, then the process exits (sigsys.c)
 */
#ifndef SIGSYS_H
#define SIGSYS_H

#include <stddef.h>
#include <stdint.h>

/* sigsys_emit_fn - where the line goes: called from the signal handler,
 * so it may only make async-signal-safe calls the filter allows
 */
typedef void (*sigsys_emit_fn)(const char *line, size_t len);

uint32_t sigsys_action(void);
int sigsys_arm(const char *prefix, const char *profile, sigsys_emit_fn emit,
	       int status);

#endif /* SIGSYS_H */
