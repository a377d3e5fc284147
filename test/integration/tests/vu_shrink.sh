#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_shrink.sh - guest memory that shrinks under the daemon: vu-front
# truncates the file of a memory region (one region, then two), or of the
# dirty log, after handing it over, and makes the daemon touch it. The
# daemon must drop that front-end (a SIGBUS in a guest access), say so,
# and serve the next one: a fresh connection gets ARP and DHCP answers.
# Before, the SIGBUS killed it (ASan: BUS in vq_store16 <- vq_kicks <-
# vu_net_tx). QEMU's memory-backend-memfd seals its memfds against
# shrinking, but memory-backend-file and -shm files can't be sealed: the
# daemon takes either (vhost/mem.c, "Memory that shrinks").
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

setup_ns
vu_passt_start

# shrink NAME CASE: CASE, then a fresh connection is served
shrink() {
	vu "$1" connect arp-probe "$2" connect arp-probe dhcp-probe
	passt_check_alive
	log "$1: front-end dropped, the next one served"
}

shrink mem shrink-mem
VU_FRONT_OPTS=-2 shrink mem2 shrink-mem
shrink log shrink-log
expect "drops for memory that shrank" \
	"$(grep -c 'guest memory .* shrank' "$PASST_ERR")" 3
passt_stop
