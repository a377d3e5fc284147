#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_close_race.sh - no descriptor is closed while a queued io_uring
# operation names it (uring.c, uring_close()). vu-front's "close-race":
# with the daemon stopped (SIGSTOP), a frame on TX and a kick, so that the
# daemon's round has interrupts to send; GET_VRING_BASE on both rings,
# which sends the last interrupts and closes the kick and call eventfds;
# then, in the same round, new descriptors that take the numbers just
# freed: eventfds (SET_VRING_ERR), and a migration state pipe (SAVE) or
# TCP clients of a forwarded port (from ROUTER). The daemon goes on: the
# state stream must begin with its magic number and be complete
# (CHECK_DEVICE_STATE 0), and the clients must receive nothing. Before
# uring_close(), the interrupt queued for a closed eventfd was written to
# whatever took its number: "01 00 00 00 00 00 00 00" in a client's
# connection, or in front of the state ("bad magic" on the target).
#
# The state variant takes the numbers in a chosen order first (see
# close_race_one() in vu-front.c), so that the pipe gets the call fd's.
# With io_uring (the test unsets PASST_NO_IO_URING), the loop waiting in
# the ring (PASST_IO_URING_WAIT=1, where the kernel can), and without
# io_uring as the control case. RACE_PASST_OPTS: more daemon options
# (--trace).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

unset PASST_NO_IO_URING PASST_IO_URING_WAIT
setup_ns
PORT=7000

# race NAME RING: the daemon, on the io_uring (RING yes) or not, and the
# close-race case against it
race() {
	local _name=$1 _ring=$2
	PASST_ERR=$T/passt-$_name.err
	# shellcheck disable=SC2086 # options, split
	vu_passt_start -t "$PORT" ${RACE_PASST_OPTS:-}
	if [ "$_ring" = yes ]; then
		grep -q 'io_uring: end-of-round' "$PASST_ERR" ||
			skip "$_name: no io_uring here: $(grep io_uring \
				"$PASST_ERR")"
	fi
	vu "$_name" close-race --freeze "$PASST_PID" \
		--race-netns "/run/netns/$ROUTER" --race-connect "$ADDR4:$PORT"
	passt_check_alive
	log "$_name: $(grep -c 'close-race' "$T/$_name.err" || :) lines;" \
		"state streams and clients clean"
	passt_stop
}

race ring yes
PASST_IO_URING_WAIT=1 race ring-wait yes
PASST_NO_IO_URING=1 race plain no
