#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# flood_icmp.sh - the guest sends ICMP echo requests to the peer with every
# identifier, 0 to 65535, over and over for 8 s: each identifier is an
# echo flow with a ping socket, four times the UDP and ICMP share of the
# flow table (FLOW_DGRAM_MAX, 16384). Meanwhile an 8 MiB TCP stream from
# the guest must complete. Flows, descriptors, RSS and log stay bounded;
# once the flood has been idle for a second, a new echo flow (the guest's
# own ping) gets in and is answered: it takes the place of the least
# recently used flow (flow.c, Reclaim).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=flood-lib.sh disable=SC1091
. "$(dirname "$0")/../flood-lib.sh"

flood_start
bg "$GUEST" flood /dev/null "$T/flood.out" "$FLOODER" -t 8 icmp "$PEER4"
FLOOD_PID=$BG_PID
wait_for "[ \$(passt_flows) -ge $((FLOOD_DGRAM_MAX / 2)) ] || ! alive $FLOOD_PID" 20 || :
flood_stream
flood_watch "$FLOOD_PID" "$STREAM_PID"
bg_wait "$FLOOD_PID" 5 || :
log "$(cat "$T/flood.out")"
flood_stream_check
grep -q "ICMP: $FLOOD_DGRAM_MAX UDP and ICMP flows" "$PASST_LOG" ||
	fail "the flood never filled the ICMP share"
flood_bounds $((FLOOD_DGRAM_MAX + 16))

# Reclaim: a new identifier gets a flow (a few tries: the first request
# may only make room for the next)
wait_for "ns $GUEST ping -c 1 -W 1 $PEER4" 15 ||
	fail "no new echo flow once the table was full and idle"
log "after reclaim: $(passt_flows) flows"
flood_stop
