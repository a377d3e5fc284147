#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_frames.sh - the daemon's TCP state machine, frame by frame, IPv4 and
# IPv6: tcpguest plays the guest on the daemon's socket (it builds the
# frames and keeps its own sequence numbers) and the peers in ROUTER (one
# listening port per connection). Each case is a separate tcpguest run:
# handshake options, data both ways (one way as a Linux sender cuts its
# segments; the other also to a guest that ACKs only every second
# segment), FIN from either side first, RST from either side, zero window
# and window update, duplicate and overlapping segments, a segment after
# a gap, a SYN to a closed port. After each case the daemon must be back
# to its baseline of flows and file descriptors.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

CASES=${TCP_FRAMES_CASES:-"handshake data-out no-split data-in lazy-ack fin-guest fin-peer
	rst-guest rst-peer zero-window retransmit out-of-order closed-port"}

tcpguest_start

failed=
for c in $CASES; do
	t0=$(now_ms)
	st=0
	ns "$ROUTER" "$TCPGUEST" -t 15 "$SOCK" "$c" >"$T/$c.log" \
		2>"$T/$c.err" || st=$?
	log "$c: $(grep -h ': ok\|seed' "$T/$c.log" | tr '\n' ' ')($(($(now_ms) - t0)) ms)"
	passt_check_alive
	if [ "$st" -ne 0 ]; then
		# Go on with the other cases: report every failing one
		sed 's/^/    /' "$T/$c.err" >&2
		log "$c: FAILED (tcpguest exit status $st)"
		failed="$failed $c"
		# A failed case may leave connections behind: close the
		# daemon's, by restarting it, so the next case starts clean
		passt_stop
		rm -f "$PASST_ERR"
		passt_start
		fds0=$(passt_fds)
		flows0=$(passt_flows) || fail "no 'flows:' line after SIGUSR1"
		continue
	fi
	settle "$c"
done
[ -z "$failed" ] || fail "failed cases:$failed"
passt_stop
