#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_coalesce.sh - migrate_basic.sh with a slow guest sending in bulk
# (vu-front -d 300, a stream from the guest at full speed), so that the
# source daemon polls the guest's TX ring with kicks off (input
# coalescing, tap/coalesce.c) when the migration stops it. Without
# EVENT_IDX, kicks off is NO_NOTIFY in the used ring's flags, which go to
# the target with the guest's memory: vu-front fails the migration if the
# source left it there (a target that doesn't write the flags, as
# upstream passt may not, would never be kicked). Every byte arrives, as
# in migrate_basic.sh. The daemon's sockets start with a send buffer of
# 1 MiB: with the kernel's first one (tcp_wmem's default, about 69 KB
# once connected) a guest sending 64 KiB frames waits for our window
# after each, and such a guest is never polled (coalesce.sh says more).
MIG_VU_OPTS="${MIG_VU_OPTS:-} -d 300" MIG_RATE=${MIG_RATE:-1000000} \
	MIG_STREAMS=${MIG_STREAMS:-up4} \
	MIG_TCP_WMEM=${MIG_TCP_WMEM:-4096 1048576 4194304} \
	exec "$(dirname "$0")/migrate_basic.sh"
