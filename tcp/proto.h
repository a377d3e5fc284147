/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proto.h - what every file of tcp/ speaks: the header's flags, the
 * window scale we offer, and sequence numbers compared modulo 2^32.
 */
#ifndef TCP_PROTO_H
#define TCP_PROTO_H

#include <stdint.h>

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

#define TCP_WS_OURS 8			/* our window scale when offered */

#define SEQ_LT(a, b) ((int32_t)((a) - (b)) < 0)
#define SEQ_LE(a, b) ((int32_t)((a) - (b)) <= 0)
#define SEQ_GT(a, b) ((int32_t)((a) - (b)) > 0)
#define SEQ_GE(a, b) ((int32_t)((a) - (b)) >= 0)

#endif /* TCP_PROTO_H */
