#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# flood_window.sh - 300 connections from the guest with the smallest
# receive buffer its kernel allows, never read, to a peer that writes to
# each of them as fast as it can, held for 25 s. The daemon must stop
# reading what the guest can't take (the data stays in kernel buffers, not
# with us), must not spin on those sockets (its CPU time while they are
# stuck stays under a third of the wall time), and an 8 MiB stream from
# the guest to the peer must complete alongside. Flows, descriptors, RSS
# and log stay bounded, and once the guest lets go, everything is closed.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=flood-lib.sh disable=SC1091
. "$(dirname "$0")/../flood-lib.sh"

N=300

flood_start
bg "$ROUTER" writer /dev/null /dev/null "$FLOODER" writer "$PEER4" 7200
wait_for "grep -q 'writer listening' '$T/writer.err'" 10 ||
	fail "writer did not start"
bg "$GUEST" flood /dev/null "$T/flood.out" "$FLOODER" -t 25 -n "$N" \
	hold "$PEER4" 7200
FLOOD_PID=$BG_PID
wait_for "grep -q 'connected' '$T/flood.out'" 20 ||
	fail "the guest's connections did not connect"
log "$(cat "$T/flood.out")"
grep -q "hold: $N connected" "$T/flood.out" ||
	fail "not all $N connections connected"

# Every window is full now: the daemon must be idle
wait_for "[ \$(ns $GUEST ss -tnH state established dport = :7200 |
	  awk '\$1 > 0' | wc -l) -ge $N ]" 20 ||
	fail "the guest's receive queues did not fill"
c0=$(passt_cpu_ticks) t0=$(now_ms)
sleep 3
c1=$(passt_cpu_ticks) t1=$(now_ms)
hz=$(getconf CLK_TCK)
busy=$(((c1 - c0) * 1000 * 100 / hz / (t1 - t0)))
log "daemon CPU with $N stuck connections: ${busy}%"
[ "$busy" -le 33 ] || fail "the daemon spins: ${busy}% CPU while idle"

flood_stream
flood_watch "$STREAM_PID"
flood_stream_check
flood_bounds $((N + 16))
bg_wait "$FLOOD_PID" 40 || fail "the holding guest did not finish"
wait_for "[ \"\$(passt_flows)\" = 0 ]" 30 ||
	fail "flows left after the guest closed: $(passt_flows)"
flood_stop
