// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * env.c - the PASST_* environment variables, in one place.
 *
 * Theory of operation
 *
 * A few behaviours have no command-line option: switches for the paths a
 * sanitizer run or a test wants to pin (no io_uring, no huge pages, no
 * sendfile()), a tuning knob (input coalescing), and, in the test hooks
 * build only (-DPASST_TEST_HOOKS, never installed), the hooks that make a
 * test's failure happen. Each is listed in passt(1), ENVIRONMENT.
 *
 * env_init() reads them all once, first thing in main(): before the
 * configuration, the fork and the sandbox. Modules ask env_get(), never
 * getenv(), so that one rule decides what "set" means, for every one:
 *
 *  - a variable is set when it is present and not empty: an empty one is
 *    the same as an absent one;
 *  - a switch (the bool members of struct env_vars) is on when it is set
 *    to anything but "0": PASST_NO_SPLICE=1 turns splicing off,
 *    PASST_NO_SPLICE=0 or PASST_NO_SPLICE= leaves it on;
 *  - a value is handed, unparsed, to the module it belongs to, which says
 *    what it accepts and dies, naming the variable, on anything else.
 *
 * Nothing here logs or fails: the modules that use a variable say so in
 * the log when they do.
 */
#include <stdlib.h>
#include <string.h>

#include "env.h"

static struct env_vars env_vars;

/* The variable @name if set (present and not empty), or NULL */
static const char *env_value(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Is the switch @name on: set, and not to "0"? */
static bool env_switch(const char *name)
{
	const char *v = env_value(name);

	return v && strcmp(v, "0");
}

/**
 * env_init() - read every PASST_* variable the daemon knows, once
 *
 * Called again (the unit tests, after setenv()), it reads them afresh.
 */
void env_init(void)
{
	struct env_vars *e = &env_vars;

	e->no_io_uring = env_switch("PASST_NO_IO_URING");
	e->io_uring_wait = env_switch("PASST_IO_URING_WAIT");
	e->no_hugefile = env_switch("PASST_NO_HUGEFILE");
	e->no_splice = env_switch("PASST_NO_SPLICE");
	e->coalesce_us = env_value("PASST_COALESCE_US");
#ifdef PASST_TEST_HOOKS
	e->test_forbidden_syscall = env_value("PASST_TEST_FORBIDDEN_SYSCALL");
	e->test_sendfile_ok = env_value("PASST_TEST_SENDFILE_OK");
#endif
}

/**
 * env_get() - the variables as env_init() read them
 *
 * Return: all unset (false, NULL) before env_init()
 */
const struct env_vars *env_get(void)
{
	return &env_vars;
}
