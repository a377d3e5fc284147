/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vu_req.h - vhost-user front-end requests and message header flags, as
 * numbered by the vhost-user specification: what the programs that play
 * the front-end (vu-front, the vhost-user fuzz harness) send. Only the
 * requests they use.
 */
#ifndef TEST_COMMON_VU_REQ_H
#define TEST_COMMON_VU_REQ_H

enum {
	GET_FEATURES = 1, SET_FEATURES, SET_OWNER, RESET_OWNER, SET_MEM_TABLE,
	SET_LOG_BASE, SET_LOG_FD, SET_VRING_NUM, SET_VRING_ADDR,
	SET_VRING_BASE, GET_VRING_BASE, SET_VRING_KICK, SET_VRING_CALL,
	SET_VRING_ERR, GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES,
	GET_QUEUE_NUM, SET_VRING_ENABLE, SEND_RARP,
	SET_DEVICE_STATE_FD = 42, CHECK_DEVICE_STATE,
};

/* Message header flags: version 1, a reply, a reply wanted (REPLY_ACK) */
#define F_VERSION    0x1
#define F_REPLY	     0x4
#define F_NEED_REPLY 0x8

#endif /* TEST_COMMON_VU_REQ_H */
