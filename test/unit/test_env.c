// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_env.c - env.c's one rule for "set": a variable is set when present
 * and not empty; a switch is on when set to anything but "0"; a value is
 * passed on as it is; what env_init() read stays until it reads again;
 * the test hooks' variables mean nothing to a build without the hooks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "env.h"

static const char *const switches[] = {
	"PASST_NO_IO_URING", "PASST_IO_URING_WAIT", "PASST_NO_HUGEFILE",
	"PASST_NO_SPLICE",
};

/* Every switch set to @v (NULL: unset), then read */
static const struct env_vars *switches_set(const char *v)
{
	unsigned i;

	for (i = 0; i < sizeof(switches) / sizeof(switches[0]); i++) {
		if (v)
			setenv(switches[i], v, 1);
		else
			unsetenv(switches[i]);
	}
	env_init();
	return env_get();
}

static void assert_switches(const struct env_vars *e, bool on)
{
	assert_int_equal(e->no_io_uring, on);
	assert_int_equal(e->io_uring_wait, on);
	assert_int_equal(e->no_hugefile, on);
	assert_int_equal(e->no_splice, on);
}

static void test_a_switch_is_on_unless_unset_empty_or_0(void **state)
{
	(void)state;
	assert_switches(switches_set(NULL), false);
	assert_switches(switches_set(""), false);
	assert_switches(switches_set("0"), false);
	assert_switches(switches_set("1"), true);
	assert_switches(switches_set("yes"), true);
	assert_switches(switches_set("00"), true);	/* not "0" */
	switches_set(NULL);
}

static void test_a_value_is_set_when_not_empty_passed_on(void **state)
{
	(void)state;
	unsetenv("PASST_COALESCE_US");
	env_init();
	assert_null(env_get()->coalesce_us);

	setenv("PASST_COALESCE_US", "", 1);
	env_init();
	assert_null(env_get()->coalesce_us);

	setenv("PASST_COALESCE_US", "0", 1);
	env_init();
	assert_string_equal(env_get()->coalesce_us, "0");

	setenv("PASST_COALESCE_US", "abc", 1);
	env_init();
	assert_string_equal(env_get()->coalesce_us, "abc");
	unsetenv("PASST_COALESCE_US");
	env_init();
}

static void test_read_once_until_read_again(void **state)
{
	(void)state;
	setenv("PASST_NO_SPLICE", "1", 1);
	env_init();
	unsetenv("PASST_NO_SPLICE");
	assert_true(env_get()->no_splice);
	env_init();
	assert_false(env_get()->no_splice);
}

static void test_hooks_variables_ignored_without_hooks(void **state)
{
	(void)state;
	setenv("PASST_TEST_FORBIDDEN_SYSCALL", "getcwd", 1);
	setenv("PASST_TEST_SENDFILE_OK", "30", 1);
	env_init();
	assert_null(env_get()->test_forbidden_syscall);
	assert_null(env_get()->test_sendfile_ok);
	unsetenv("PASST_TEST_FORBIDDEN_SYSCALL");
	unsetenv("PASST_TEST_SENDFILE_OK");
	env_init();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_switch_is_on_unless_unset_empty_or_0),
		cmocka_unit_test(test_a_value_is_set_when_not_empty_passed_on),
		cmocka_unit_test(test_read_once_until_read_again),
		cmocka_unit_test(test_hooks_variables_ignored_without_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
