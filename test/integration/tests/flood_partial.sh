#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck disable=SC2034 # maxima, SINK_PID: read by flood-lib.sh
#
# flood_partial.sh - a front-end connects to the daemon's stream socket,
# writes the length and the first bytes of a frame, and then neither
# writes nor reads for 8 s, while peers send datagrams to a forwarded port
# as fast as they can (the daemon has frames for the guest and nowhere to
# put them) and a second front-end keeps knocking. The daemon must not
# spin (CPU under a third of the wall time), must drop rather than queue
# (RSS and descriptors bounded), must log within the rate bound, and
# once the front-end finishes its frame a byte at a time must answer the
# ARP request in it. Then the front-end leaves, tapbridge connects, and an
# 8 MiB stream from the guest completes.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=flood-lib.sh disable=SC1091
. "$(dirname "$0")/../flood-lib.sh"

[ -x "$FLOODER" ] || fail "no flooder in $TOOLS"
need_sockio
setup_ns
passt_start -l "$PASST_LOG" -u 7300
rss0=$(passt_rss)
fds0=$(passt_fds)
flows0=$(passt_flows) || fail "no 'flows:' line after SIGUSR1"
max_fds=$fds0 max_flows=$flows0 max_rss=$rss0

bg "$ROUTER" front /dev/null "$T/front.out" "$FLOODER" -t 8 partial "$SOCK"
FRONT_PID=$BG_PID
wait_for "grep -q stalled '$T/front.out'" 10 || fail "front-end did not connect"
bg "$ROUTER" udpflood /dev/null "$T/udp.out" "$FLOODER" -t 7 -n 1 \
	udp "$ADDR4" 7300
UDP_PID=$BG_PID
# A second front-end, refused over and over
(
	for _i in $(seq 1 50); do
		ip netns exec "$GUEST" "$TOOLS/tapbridge" "$SOCK" \
			>/dev/null 2>&1 </dev/null &
		_p=$!
		sleep 0.1
		kill "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
) &
KNOCK_PID=$!
track "$KNOCK_PID"

sleep 1
c0=$(passt_cpu_ticks) t0=$(now_ms)
flood_watch "$UDP_PID"
c1=$(passt_cpu_ticks) t1=$(now_ms)
hz=$(getconf CLK_TCK)
busy=$(((c1 - c0) * 1000 * 100 / hz / (t1 - t0)))
log "daemon CPU with a stalled front-end and a datagram flood: ${busy}%"
log "$(cat "$T/udp.out")"
[ "$busy" -le 33 ] || fail "the daemon spins: ${busy}% CPU"

bg_wait "$FRONT_PID" 30 || fail "the stalled front-end did not finish"
log "$(cat "$T/front.out")"
[ "$BG_ST" = 0 ] || fail "the daemon did not answer the front-end's frame"
wait "$KNOCK_PID" 2>/dev/null || :
flood_bounds $((flows0 + 16))

# The next front-end, and a stream through it
guest_up
bg "$ROUTER" sink /dev/null /dev/null "$SOCKIO" -t 0 --ready "$T/sink" \
	pattern-listen "$PEER4" 7100
SINK_PID=$BG_PID
wait_ready "$T/sink"
flood_stream
flood_stream_check
flood_stop
