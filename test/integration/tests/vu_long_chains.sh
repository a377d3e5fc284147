#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_long_chains.sh - a guest that does almost nothing must not pin the
# daemon: vu-front's "long-chains" lays out a TX ring of 32768 entries,
# every one the head of a chain of 32768 zero-length descriptors (a loop
# in the end), and moves avail->idx to a full ring every 50 ms, for
# LC_SECS (5) seconds, while control messages go back and forth. The
# daemon's CPU time per ring entry it used must stay under LC_MAX_US
# (20 us): per entry it walks at most a chain's worth of descriptors
# (VQ_CHAIN_MAX), and per round at most VU_TX_WALK_BUDGET, so what it
# costs is proportional to what the guest publishes. The control round
# trip times are printed. Before, every entry cost a walk of 32768
# descriptors: 4.8 s of CPU in 5 s, ~137 us per entry, control messages
# waiting ~52 ms. CPU time, not wall-clock time: a loaded machine gives
# the daemon less of it, never more.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

SECS=${LC_SECS:-5}
MAX_US=${LC_MAX_US:-20}

# cpu_ticks PID: utime + stime, in clock ticks
cpu_ticks() {
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

setup_ns
vu_passt_start
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks "$PASST_PID")
ip netns exec "$GUEST" "$VUFRONT" -t 5000 --attack-secs "$SECS" "$SOCK" \
	long-chains >"$T/lc.out" 2>"$T/lc.err" ||
	fail "vu-front long-chains: $(tail -n 3 "$T/lc.err")"
c1=$(cpu_ticks "$PASST_PID")
passt_check_alive
line=$(grep '^long-chains:' "$T/lc.out") || fail "no result from vu-front"
used=$(echo "$line" | sed 's/.* used=\([0-9]*\).*/\1/')
cpu_ms=$(((c1 - c0) * 1000 / hz))
[ "$used" -gt 0 ] || fail "the daemon used no entry: $line"
per_us=$((cpu_ms * 1000 / used))
log "$line"
log "daemon CPU: ${cpu_ms} ms in ${SECS} s for $used entries: ${per_us} us each"
[ "$per_us" -lt "$MAX_US" ] ||
	fail "the daemon spent ${per_us} us of CPU per entry (at most $MAX_US)"
passt_stop
