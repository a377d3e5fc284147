// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * filterprobe.c - can this process attach a classic BPF socket filter
 * (SO_ATTACH_FILTER) to a TCP socket? Exit 0 if so, 1 if not (the error
 * on stderr). The migration tests run it without capabilities: some
 * kernels want CAP_NET_ADMIN for it, and then a sandboxed daemon can only
 * hold connections for a migration with direct TCP_REPAIR (see
 * test/integration/migrate-lib.sh).
 */
#include <errno.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	struct sock_filter drop = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = { .len = 1, .filter = &drop };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0) {
		fprintf(stderr, "filterprobe: socket: %s\n", strerror(errno));
		return 1;
	}
	if (setsockopt(s, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog))) {
		fprintf(stderr, "filterprobe: SO_ATTACH_FILTER: %s\n",
			strerror(errno));
		close(s);
		return 1;
	}
	close(s);
	return 0;
}
