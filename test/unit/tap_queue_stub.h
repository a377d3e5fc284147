/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tap_queue_stub.h - tap_queue_in() and tap_queue_out() for unit tests
 * that stand in for the tap layer: one queue pair, pair 0. Included once,
 * by the test's .c file, after cmocka.h.
 */
#ifndef TEST_UNIT_TAP_QUEUE_STUB_H
#define TEST_UNIT_TAP_QUEUE_STUB_H

uint8_t tap_queue_in(void)
{
	return 0;
}

void tap_queue_out(uint8_t pair)
{
	assert_int_equal(pair, 0);
}

#endif /* TEST_UNIT_TAP_QUEUE_STUB_H */
