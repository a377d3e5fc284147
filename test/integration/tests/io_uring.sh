#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# io_uring.sh - the paths of the system calls that end a loop round
# (uring.c), in both modes:
#   ring     the default: the daemon holds an io_uring descriptor, logs
#            that it batches, and is sandboxed with it
#   sysctl   kernel.io_uring_disabled=2 (as a hardened host may set it;
#            restored at exit): the daemon logs that io_uring is
#            unavailable, holds no ring, and makes the plain calls
#   env      PASST_NO_IO_URING=1: the same, by choice
#   wait     PASST_IO_URING_WAIT=1 (opt-in): on the ring, and the loop
#            waits in it too, with the stream front-end's writes (where
#            the kernel has IORING_OP_EPOLL_WAIT, Linux 6.15: else the
#            daemon says it doesn't, and this is the ring case again)
# Each time 16 MiB of a verified pattern go each way, guest -> peer and
# peer -> guest, at once, while the guest ACKs and the round's discards
# and (vhost-user) call eventfd writes go through the path under test.
# The whole integration suite runs on the ring, with the plain build and
# under ASan (make integration-asan), the QEMU suite under ASan on the
# plain calls (make e2e-asan); this test makes sure that each daemon
# really is on the path it says.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_sockio

unset PASST_NO_IO_URING PASST_IO_URING_WAIT	# this test chooses
SYSCTL=/proc/sys/kernel/io_uring_disabled
[ -e "$SYSCTL" ] || skip "kernel without io_uring (no $SYSCTL)"
OLD=$(cat "$SYSCTL")
restore() {
	echo "$OLD" >"$SYSCTL"
}
trap '_rc=$?; restore; (exit $_rc); cleanup' EXIT
echo 0 >"$SYSCTL"

setup_ns
BYTES=$((16 * 1024 * 1024))

# ring_fds PID: io_uring descriptors the daemon holds
ring_fds() {
	ls -l "/proc/$1/fd" 2>/dev/null | grep -c 'anon_inode:\[io_uring\]' || :
}

# case_run NAME yes|no [OPTION...]: start the daemon, check that it is on
# the ring (yes) or on the plain calls (no), transfer, stop
case_run() {
	local _cr_name=$1 _cr_ring=$2
	shift 2
	passt_start "$@"
	if [ "$_cr_ring" = yes ]; then
		wait_for "grep -q 'io_uring: end-of-round' '$PASST_ERR'" 5 ||
			fail "$_cr_name: no io_uring: $(grep io_uring "$PASST_ERR")"
		[ "$(ring_fds "$PASST_PID")" -ge 1 ] ||
			fail "$_cr_name: no io_uring descriptor in /proc/$PASST_PID/fd"
	else
		wait_for "grep -q 'io_uring: \(unavailable\|not used\)' \
			'$PASST_ERR'" 5 ||
			fail "$_cr_name: no fallback: $(grep io_uring "$PASST_ERR")"
		[ "$(ring_fds "$PASST_PID")" = 0 ] ||
			fail "$_cr_name: an io_uring descriptor after all"
	fi
	if [ -n "${PASST_IO_URING_WAIT:-}" ] && [ "$_cr_ring" = yes ]; then
		grep -q 'io_uring: .*the loop waits in the ring' "$PASST_ERR" ||
			[ "$WAIT_OP" = 0 ] ||
			fail "$_cr_name: not waiting in the ring:" \
				"$(grep io_uring "$PASST_ERR")"
	fi
	log "$_cr_name: $(grep -m1 'io_uring: ' "$PASST_ERR")"
	guest_up
	pattern_both "$_cr_name" 7300 "$BYTES" 60
	passt_check_alive
	bridge_stop
	passt_stop
}

# all_paths MODE [OPTION...]: the ring, the sysctl, the environment, the wait
all_paths() {
	echo 0 >"$SYSCTL"
	case_run "$1-ring" yes "${@:2}"
	echo 2 >"$SYSCTL"
	case_run "$1-sysctl" no "${@:2}"
	echo 0 >"$SYSCTL"
	PASST_NO_IO_URING=1 case_run "$1-env" no "${@:2}"
	PASST_IO_URING_WAIT=1 case_run "$1-wait" yes "${@:2}"
}

# The kernel's release: IORING_OP_EPOLL_WAIT came with Linux 6.15
WAIT_OP=$(uname -r | awk -F. '{ print ($1 > 6 || ($1 == 6 && $2 >= 15)) }')

all_paths stream
# vu.sh's bridge_start (vu-front) from here on
# shellcheck source=../vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront
all_paths vhost-user --vhost-user
