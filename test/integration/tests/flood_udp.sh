#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# flood_udp.sh - the guest sends UDP datagrams to 40000 destination ports
# of the peer, round after round, for 8 s: every one a new flow, each with
# a socket, far more than the UDP and ICMP share of the flow table
# (FLOW_DGRAM_MAX, 16384). Meanwhile an 8 MiB TCP stream from the guest to
# the peer must complete. The flows, descriptors and RSS stay within their
# bounds, the log within 20 lines a second; and once the flood has been
# idle for a second, a new UDP flow (an echo through the daemon) gets in:
# it takes the place of the least recently used flow (flow.c, Reclaim).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=flood-lib.sh disable=SC1091
. "$(dirname "$0")/../flood-lib.sh"

flood_start
bg "$ROUTER" echo /dev/null /dev/null "$SOCKIO" -t 0 --ready "$T/echo" \
	udp-echo "$PEER4" 5353
wait_ready "$T/echo"

bg "$GUEST" flood /dev/null "$T/flood.out" "$FLOODER" -t 8 -n 40000 \
	udp "$PEER4" 20000
FLOOD_PID=$BG_PID
# The stream starts into a full table
wait_for "[ \$(passt_flows) -ge $((FLOOD_DGRAM_MAX / 2)) ] || ! alive $FLOOD_PID" 20 || :
flood_stream
flood_watch "$FLOOD_PID" "$STREAM_PID"
bg_wait "$FLOOD_PID" 5 || :
log "$(cat "$T/flood.out")"
flood_stream_check
grep -q "UDP: $FLOOD_DGRAM_MAX UDP and ICMP flows" "$PASST_LOG" ||
	fail "the flood never filled the UDP share"
flood_bounds $((FLOOD_DGRAM_MAX + 16))

# Reclaim: the flood's flows are idle now, a new flow takes one's place
ns "$GUEST" "$SOCKIO" -t 10 udp-ping "$PEER4" 5353 3 ||
	fail "no new UDP flow once the table was full and idle"
f=$(passt_flows)
[ "$f" -le $((FLOOD_DGRAM_MAX + 16)) ] || fail "flows after reclaim: $f"
log "after reclaim: $f flows"
flood_stop
