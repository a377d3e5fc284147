#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck disable=SC2034 # maxima, SINK_PID: read by flood-lib.sh
#
# flood_syn.sh - the guest sends TCP SYNs from random ports, through a raw
# socket (its kernel keeps no state for them), for 8 s to 30000 ports of
# the peer (closed: the daemon's connect() is refused at once) and then
# for 8 s to 30000 ports of an address the router drops silently (the
# daemon's connect() would wait for a minute). Meanwhile an 8 MiB stream
# from the guest to the peer must complete. Half-open connections stay at
# most TCP_HALF_OPEN_MAX (4096): a SYN beyond that resets the oldest
# (flow.c, Reclaim); descriptors, RSS and log stay bounded; after the
# flood the half-open ones are all reset or timed out without the daemon
# falling over, and a new connection still gets through.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=flood-lib.sh disable=SC1091
. "$(dirname "$0")/../flood-lib.sh"

BLACKHOLE=198.51.100.77

flood_start
ip -n "$ROUTER" route add blackhole "$BLACKHOLE/32"

for dst in "$PEER4" "$BLACKHOLE"; do
	bg "$GUEST" flood /dev/null "$T/flood.out" "$FLOODER" -t 8 -n 30000 \
		syn "$ADDR4" "$dst" 10000
	FLOOD_PID=$BG_PID
	wait_for "[ \$(passt_flows) -ge 100 ] || ! alive $FLOOD_PID" 10 || :
	flood_stream
	flood_watch "$FLOOD_PID" "$STREAM_PID"
	bg_wait "$FLOOD_PID" 5 || :
	log "to $dst: $(cat "$T/flood.out")"
	flood_stream_check
	# The next stream goes to a fresh receiver
	bg "$ROUTER" sink /dev/null /dev/null "$SOCKIO" -t 0 \
		--ready "$T/sink2" pattern-listen "$PEER4" 7100
	SINK_PID=$BG_PID
	wait_ready "$T/sink2"
	rm -f "$T/sink2"
done

# The bound was reached, and the oldest made way (the samples may miss
# the peak: the daemon answers SIGUSR1 late under a flood)
grep -q 'half-open connections from the guest, resetting the oldest' \
	"$PASST_LOG" || fail "the flood never filled the half-open share"
flood_bounds $((FLOOD_HALF_OPEN + FLOOD_ROUND)) $((FLOOD_HALF_OPEN + 16))

# A new connection once the flood is over
flood_stream
flood_stream_check
flood_stop
