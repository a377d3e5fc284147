# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2034
#
# memcg-lib.sh - shared part of the tests that run the daemon in a memory
# cgroup limiting its TCP socket memory (tests/tcp_memcg*.sh): the kernel
# then refuses part of what the daemon writes, as in a pod under memory
# pressure.
#
# Sourced after lib.sh (or migrate-lib.sh); skips the test without a
# cgroup v1 memory controller with TCP accounting. Each test removes the
# cgroup at exit with memcg_release, before its own clean-up.

CGROOT=/sys/fs/cgroup/memory
[ -w "$CGROOT/memory.kmem.tcp.limit_in_bytes" ] ||
	skip "no cgroup v1 memory controller with TCP accounting at $CGROOT"
CG=$CGROOT/$PT_ID-passt
LIMIT=${MEMCG_TCP_LIMIT:-131072}

# memcg_enter PID: PID, and every socket it opens from now on, charged to
# the limited cgroup (the limit set once: it can't be set again while
# sockets are charged)
memcg_enter() {
	if [ ! -d "$CG" ]; then
		mkdir "$CG"
		echo "$LIMIT" >"$CG/memory.kmem.tcp.limit_in_bytes"
	fi
	echo "$1" >"$CG/cgroup.procs"
}

# memcg_release: the processes out of the cgroup (to the parent), the
# cgroup gone
memcg_release() {
	[ -d "$CG" ] || return 0
	while read -r _p; do
		echo "$_p" >"$CGROOT/cgroup.procs" 2>/dev/null || :
	done <"$CG/cgroup.procs"
	rmdir "$CG" 2>/dev/null || log "cgroup $CG not removed"
}
