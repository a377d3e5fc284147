#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_replay.sh - interoperability with recorded migration streams:
# every test/data/migrate/upstream-v2-*.bin (recorded from upstream passt,
# see its README) is loaded into a fresh target daemon (PASST_MIG,
# default $PASST, with its repair helper) by vu-front as a migration
# target gets it (SET_DEVICE_STATE_FD LOAD, CHECK_DEVICE_STATE must be 0);
# the device then starts and answers ARP. Streams broken on purpose (bad
# magic, truncated in the header, in the flow records and in the queue
# data) must be refused (CHECK_DEVICE_STATE non-zero), and the daemon must
# survive all of it. A daemon without DEVICE_STATE: SKIP.
#
# The target holds the stream in memory until it's complete, and no more
# of it than the stream announces for the flows it carries: a stream of
# no flows followed by 64 MiB of trailing bytes (ignored, as upstream
# does) is accepted, and the daemon's peak resident memory (VmHWM) grows
# by less than 8 MiB loading it (it used to take all of it in, up to
# 1 GiB, whatever the stream announced).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"

DATA=$TOP/test/data/migrate
mig_setup
mig_pod_dir "$T/probe"
mig_daemon_start "$DST" "$T/probe/passt.socket"
mig_probe "$T/probe/passt.socket"
mig_daemon_stop "$MIG_DPID"

n=0
# target: a fresh daemon in DST with its helper (directory mode)
target() {
	n=$((n + 1))
	mig_pod_dir "$T/d$n"
	TSOCK=$T/d$n/passt.socket
	mig_repair_start "$DST" "$T/d$n"
	mig_daemon_start "$DST" "$TSOCK"
	TPID=$MIG_DPID
	wait_for "mig_repair_connected $DST $TSOCK" 10 ||
		fail "repair helper not connected to $TSOCK.repair"
}

# load FILE [--expect-load-fail]: vu-front loads FILE into the target
load() {
	_f=$1
	shift
	_st=0
	ip netns exec "$GUEST" "$VUFRONT" -t 10000 --state-load "$_f" "$@" \
		"$TSOCK" state-load ${LOAD_CASES:-} close \
		2>"$T/load.err" || _st=$?
	[ "$_st" -ne 3 ] ||
		skip "$PASST_MIG can't migrate: $(grep -m1 DEVICE_STATE "$T/load.err")"
	[ "$_st" -eq 0 ] ||
		fail "load ${_f##*/} $*: $(tail -n 3 "$T/load.err")"
	log "${_f##*/}: $(grep 'state-load:' "$T/load.err")"
	alive "$TPID" || fail "target died loading ${_f##*/}"
}

found=0
for f in "$DATA"/upstream-v2-*.bin; do
	[ -e "$f" ] || continue
	found=$((found + 1))
	target
	LOAD_CASES=arp-probe load "$f"
	mig_daemon_stop "$TPID"
done
[ "$found" -gt 0 ] || fail "no recorded streams in $DATA"

# Broken streams, from the 3-flow recording
src=$DATA/upstream-v2-3flows.bin
size=$(stat -c %s "$src")
printf 'not a migration stream' >"$T/magic.bin"
head -c 30 "$src" >"$T/short-header.bin"
head -c 200 "$src" >"$T/short-flows.bin"
head -c $((size - 100)) "$src" >"$T/short-queue.bin"
for b in magic short-header short-flows short-queue; do
	target
	load "$T/$b.bin" --expect-load-fail
	mig_daemon_stop "$TPID"
done

# The buffer: no flows, then 64 MiB that no flow announces
cp "$DATA/v2-empty.bin" "$T/trailing.bin"
head -c $((64 << 20)) /dev/zero >>"$T/trailing.bin"
hwm() {
	sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$1/status"
}
target
hwm0=$(hwm "$TPID")
load "$T/trailing.bin"
grow=$(($(hwm "$TPID") - hwm0))
log "64 MiB after a stream of no flows: peak memory grew by $grow KiB"
[ "$grow" -lt 8192 ] ||
	fail "the target took in what no flow announced: $grow KiB"
mig_daemon_stop "$TPID"
