#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_window_grow.sh - many uploads to a peer that takes everything at
# once (ROUTER, a namespace on the same machine, as a pod on the same
# node is) get windows that grow: with WINDOW_CONNS (1,000) connections
# writing (connload, as bench/dims.sh's conn1k), the median of the
# windows the guest's kernel has from us (`ss -ti`: snd_wnd, bytes) must
# reach WINDOW_MIN (100,000 bytes: twice what the first buffer gives;
# a Linux guest sends segments of half the largest window it saw at most,
# so 128 KiB lets it send 64 KiB ones).
#
# Each socket's share is small and its peer ACKs at once, so its send
# queue is empty whenever the daemon measures its room: the kernel never
# finds it full, so never grows it (autotuning grows a send buffer only
# after a write found no room), and the window stayed a fraction of the
# first buffer: about 50 kB, and segments of 25 kB. The daemon doubles
# such a buffer itself (tcp/window.c: tcp_sock_grow()), once the guest
# used half the window between two of our measurements: it sends as
# much as the window lets it.
#
# The writes are 64 KiB (connload -w), as a bulk sender's are (iperf3's
# 128 KiB): each makes more than half a 51 kB window wait in the guest.
# With connload's 16 KiB, a daemon quick enough to answer every write
# on its own sees the guest use less than half of that window each time:
# such a guest isn't held back by the window, and nothing grows it (a
# clean run on an idle machine: 12 GB moved, the median stayed at 51,712
# bytes, where a busier machine, fewer writes answered alone, grows it
# within 300 ms).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

N=${WINDOW_CONNS:-1000}
WINDOW_MIN=${WINDOW_MIN:-100000}
CONNLOAD=$TOOLS/connload
[ -x "$CONNLOAD" ] || fail "no connload in $TOOLS"

setup_ns
passt_start
guest_up

# median: the median window of the guest's connections to the peer
median() {
	ns "$GUEST" ss -Htin dst "$PEER4" 2>/dev/null |
		grep -o 'snd_wnd:[0-9]*' | cut -d: -f2 | sort -n |
		awk '{ w[NR] = $1 } END { print NR ? w[int((NR + 1) / 2)] : 0 }'
}

rm -f "$T/cl.ready" "$T/cl.done" "$T/cl.stop"
bg "$ROUTER" sink /dev/null /dev/null \
	"$CONNLOAD" serve "$PEER4" 7600 8 sink
spid=$BG_PID
wait_for "[ \$(ns $ROUTER ss -Hltn 'sport >= :7600 and sport <= :7607' | wc -l) -eq 8 ]" 10 ||
	fail "connload's server isn't listening: $(cat "$T/sink.err")"
# Writes for 20 s: the windows are read meanwhile
bg "$GUEST" load /dev/null "$T/load.out" \
	"$CONNLOAD" -t 20 -w 65536 -r "$T/cl.ready" -d "$T/cl.done" -s "$T/cl.stop" \
	conns "$PEER4" 7600 8 "$N"
cpid=$BG_PID
wait_for "[ -e '$T/cl.ready' ] || ! alive $cpid" 60 ||
	fail "connload didn't open its connections: $(cat "$T/load.err")"
alive "$cpid" || fail "connload: $(cat "$T/load.out" "$T/load.err")"
m0=$(median)
t0=$(now_ms)
st=0
wait_for "[ \$(median) -ge $WINDOW_MIN ]" 18 || st=1
t1=$(now_ms)
m1=$(median)
[ "$st" = 0 ] || ss_dump "median window $m1:"
touch "$T/cl.stop"
bg_wait "$cpid" 60 || :
kill_own TERM "$spid"
log "median window: $m0 at the start, $m1 after $((t1 - t0)) ms; connload: $(cat "$T/load.out")"
[ "$st" = 0 ] ||
	fail "the median window stayed below $WINDOW_MIN bytes ($m1): see ss.log"
expect "connload exit status" "$BG_ST" 0
grep -q "^open=$N failed=0 " "$T/load.out" ||
	fail "connload: $(cat "$T/load.out")"
passt_check_alive
passt_stop
