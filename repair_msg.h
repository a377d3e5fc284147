/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * repair_msg.h - validation of one passt-repair request, header-only.
 *
 * passt-repair (passt-repair.c) is a stand-alone program that links nothing
 * from the library, and its input checks must be testable without running
 * it: so the one function that decides whether a received request is
 * acceptable lives here, and is included by passt-repair.c and by the
 * fuzzing harness test/fuzz/fuzz_repair.c. It does no I/O and makes no
 * system call: it only reads the message header, the command byte and the
 * control data, and copies the descriptors out.
 *
 * A request is one data byte, a signed 8-bit command (TCP_REPAIR_ON,
 * TCP_REPAIR_OFF or TCP_REPAIR_OFF_NO_WP), with exactly one SOL_SOCKET /
 * SCM_RIGHTS control message carrying 1 to REPAIR_MAX_FDS descriptors.
 * The kernel hands us well-formed control data; we check it as if it
 * came from anywhere (every length against the buffer it lies in), so a
 * mistake here can't become a read or write outside it.
 */
#ifndef REPAIR_MSG_H
#define REPAIR_MSG_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#ifndef TCP_REPAIR_ON
#define TCP_REPAIR_ON		1
#define TCP_REPAIR_OFF		0
#endif
#ifndef TCP_REPAIR_OFF_NO_WP
#define TCP_REPAIR_OFF_NO_WP	-1
#endif

#define REPAIR_MAX_FDS		253	/* SCM_MAX_FD in the kernel */

/**
 * repair_msg_check() - is a received request acceptable?
 * @mh:		header as recvmsg() left it: msg_control, msg_controllen
 *		(bytes of control data received) and msg_flags are read
 * @cmd:	the command byte received
 * @fds:	the descriptors, REPAIR_MAX_FDS entries at most, on success
 * @nfds:	their count, on success (and whatever was copied before an
 *		error, so the caller may close them)
 * @why:	on failure, what is wrong, as one line
 * @whylen:	size of @why
 *
 * Return: 0 if the request may be applied, -EBADMSG if not
 */
static inline int repair_msg_check(const struct msghdr *mh, int8_t cmd,
				   int fds[REPAIR_MAX_FDS], int *nfds,
				   char *why, size_t whylen)
{
	const uint8_t *base = mh->msg_control;
	size_t clen = mh->msg_control ? mh->msg_controllen : 0;
	size_t off = 0;
	int n = 0;

	*nfds = 0;
	if (whylen)
		why[0] = '\0';

	/* Walk the messages ourselves: every length against the buffer */
	while (clen - off >= sizeof(struct cmsghdr)) {
		struct cmsghdr cm;
		size_t len, step;

		memcpy(&cm, base + off, sizeof(cm));
		if (cm.cmsg_len < CMSG_LEN(0) || cm.cmsg_len > clen - off) {
			snprintf(why, whylen,
				 "malformed control message (length %zu)",
				 (size_t)cm.cmsg_len);
			return -EBADMSG;
		}
		if (cm.cmsg_level != SOL_SOCKET || cm.cmsg_type != SCM_RIGHTS) {
			snprintf(why, whylen,
				 "unexpected control message (level %d, type %d)",
				 cm.cmsg_level, cm.cmsg_type);
			return -EBADMSG;
		}
		if (n) {
			snprintf(why, whylen,
				 "more than one SCM_RIGHTS message");
			return -EBADMSG;
		}

		len = cm.cmsg_len - CMSG_LEN(0);
		if (len % sizeof(int)) {
			snprintf(why, whylen,
				 "SCM_RIGHTS length %zu is not a whole number of descriptors",
				 len);
			return -EBADMSG;
		}
		if (len / sizeof(int) > REPAIR_MAX_FDS) {
			snprintf(why, whylen,
				 "more than %d descriptors", REPAIR_MAX_FDS);
			return -EBADMSG;
		}
		n = (int)(len / sizeof(int));
		memcpy(fds, base + off + CMSG_LEN(0), len);
		*nfds = n;
		if (!n) {
			snprintf(why, whylen, "empty SCM_RIGHTS message");
			return -EBADMSG;
		}

		step = CMSG_ALIGN(cm.cmsg_len);
		if (step > clen - off)
			break;
		off += step;
	}

	if (mh->msg_flags & MSG_CTRUNC) {
		snprintf(why, whylen,
			 "control data truncated: more than %d descriptors?",
			 REPAIR_MAX_FDS);
		return -EBADMSG;
	}
	if (!n) {
		snprintf(why, whylen, "command %d came without sockets", cmd);
		return -EBADMSG;
	}

	switch (cmd) {
	case TCP_REPAIR_ON:
	case TCP_REPAIR_OFF:
	case TCP_REPAIR_OFF_NO_WP:
		return 0;
	}
	snprintf(why, whylen, "unknown command %d", cmd);
	return -EBADMSG;
}

#endif /* REPAIR_MSG_H */
