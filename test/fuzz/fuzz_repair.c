// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_repair.c - repair_msg_check(), passt-repair's check of a request,
 * on arbitrary control data.
 *
 * Input: byte 0 is the command byte, byte 1 says whether the kernel set
 * MSG_CTRUNC (bit 0) and whether msg_control is NULL (bit 1), the rest is
 * the control data exactly as recvmsg() would have left it (copied to an
 * 8-byte aligned buffer of exactly its size, so ASan sees any access past
 * it). The seeds (gen_corpus) are the requests passt-repair accepts and
 * the ones its test refuses: no descriptors, an unknown command, a foreign
 * control message, two SCM_RIGHTS messages, truncated control data.
 *
 * Checks: the result is 0 or -EBADMSG; on -EBADMSG the reason is one
 * non-empty line; on success the command is one of the three, there are
 * 1 to REPAIR_MAX_FDS descriptors, and they are exactly the ones the one
 * SCM_RIGHTS message of the input carries.
 */
#include <stdbool.h>

#include "fuzz_common.h"
#include "repair_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fds[REPAIR_MAX_FDS], nfds = -1, rc;
	struct msghdr mh = { 0 };
	char why[128];
	uint8_t *ctl = NULL;
	size_t clen;
	int8_t cmd;

	if (size < 2 || size > 2 + CMSG_SPACE(sizeof(int) * REPAIR_MAX_FDS) + 64)
		return 0;
	cmd = (int8_t)data[0];
	clen = size - 2;
	if (clen) {
		/* malloc() is aligned at least as much as struct cmsghdr */
		ctl = malloc(clen);
		FZ_CHECK(ctl);
		memcpy(ctl, data + 2, clen);
	}
	mh.msg_control = (data[1] & 2) ? NULL : ctl;
	mh.msg_controllen = clen;
	mh.msg_flags = (data[1] & 1) ? MSG_CTRUNC : 0;

	memset(why, 0x55, sizeof(why));
	rc = repair_msg_check(&mh, cmd, fds, &nfds, why, sizeof(why));
	FZ_CHECK(rc == 0 || rc == -EBADMSG);
	FZ_CHECK(nfds >= 0 && nfds <= REPAIR_MAX_FDS);

	if (rc) {
		FZ_CHECK(memchr(why, '\0', sizeof(why)));
		FZ_CHECK(why[0] && !strchr(why, '\n'));
	} else {
		const struct cmsghdr *cm;

		FZ_CHECK(why[0] == '\0');
		FZ_CHECK(cmd == TCP_REPAIR_ON || cmd == TCP_REPAIR_OFF ||
			 cmd == TCP_REPAIR_OFF_NO_WP);
		FZ_CHECK(nfds >= 1);
		FZ_CHECK(!(mh.msg_flags & MSG_CTRUNC));
		FZ_CHECK(mh.msg_control && clen >= CMSG_LEN(sizeof(int)));
		cm = (const struct cmsghdr *)ctl;
		FZ_CHECK(cm->cmsg_level == SOL_SOCKET &&
			 cm->cmsg_type == SCM_RIGHTS);
		FZ_CHECK(cm->cmsg_len == CMSG_LEN(sizeof(int) * nfds));
		FZ_CHECK(!memcmp(fds, ctl + CMSG_LEN(0), sizeof(int) * nfds));
	}

	free(ctl);
	return 0;
}
