/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * arp_check.h - the assertion the ARP tests share on the frames they are
 * given: the fixed head of an Ethernet/IPv4 ARP packet. Included by the
 * test's .c file, after cmocka.h.
 */
#ifndef TEST_UNIT_ARP_CHECK_H
#define TEST_UNIT_ARP_CHECK_H

/* check_arp_head() - at @a: hardware 1, IPv4, lengths 6 and 4, opcode @op */
static void check_arp_head(const uint8_t *a, uint16_t op)
{
	assert_int_equal(a[0], 0);
	assert_int_equal(a[1], 1);
	assert_int_equal(a[2], 0x08);
	assert_int_equal(a[3], 0x00);
	assert_int_equal(a[4], 6);
	assert_int_equal(a[5], 4);
	assert_int_equal(a[6] << 8 | a[7], op);
}

#endif /* TEST_UNIT_ARP_CHECK_H */
