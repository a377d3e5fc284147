#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_drain.sh - the end of an upload waits in the daemon's socket after
# both FINs: the peer shuts down its side at once (it sends nothing), the
# guest uploads DRAIN_MB (default 8) MiB, shuts down and exits, and the
# peer reads slowly through a small receive buffer, so the socket still
# holds the end of the upload when the guest is done, and the guest's
# socket is gone (it answers any late segment of ours, such as a window
# update as the socket drains, with a RST). The peer must get every byte
# and the EOF, no reset. Before the fix, that RST reset the peer's
# connection with the end of the upload missing (4 runs in 5 failed so:
# "connection reset after 7872600 bytes in").
#
# And nothing the guest sent inside the windows we offered waits for its
# retransmission: behind such a small receive buffer the kernel's segments
# are small, their overhead large, and a window from the buffer's free
# memory less a fixed margin had the socket refuse part of what the guest
# sent; each retransmission after the guest's RTO was refused again, and
# the RTO doubled until a transfer stalled for a minute (CI: "sockio:
# timeout bytes_in=0 bytes_out=4653056"). The window now follows the
# queue's overhead, and what the socket refuses of it anyway is kept
# (tcp/kept.c; a window of one guest segment at least, which a small
# buffer may not take all of, is kept so): the daemon traces each refusal
# and what it kept, and none may be left to the guest. No transfer may
# stall for PT_STALL_MS either (STALL).
#
# Environment: DRAIN_MB, DRAIN_PEER_BYTES (what the peer sends before its
# FIN, 0), DRAIN_RCVBUF (the peer's SO_RCVBUF, 4096).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_sockio

setup_ns
passt_start --trace
guest_up

bytes=$((${DRAIN_MB:-8} * 1024 * 1024))
peer_bytes=${DRAIN_PEER_BYTES:-0}
rcvbuf=${DRAIN_RCVBUF:-4096}
port=6100
for peer in "$PEER4" "$PEER6" "$PEER4" "$PEER6"; do
	port=$((port + 1))
	n="drain-$peer-$port"
	rm -f "$T/ready"
	# The peer: its FIN right away (--send, nothing to send), then it
	# reads to the EOF through a small receive buffer
	bg "$ROUTER" "$n-peer" /dev/null /dev/null "$SOCKIO" "${STALL[@]}" \
		-t 60 \
		--send --bytes "$peer_bytes" --rcvbuf "$rcvbuf" --ready "$T/ready" \
		--progress "$T/$n.progress" \
		pattern-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	st=0
	ns "$GUEST" "$SOCKIO" "${STALL[@]}" -t 60 --send --bytes "$bytes" \
		pattern-connect "$peer" "$port" 2>"$T/$n-guest.err" || st=$?
	expect "$n: guest exit status ($(cat "$T/$n-guest.err"))" "$st" 0
	bg_wait "$lpid" 60 || fail "$n: peer end still running"
	[ "$BG_ST" = 0 ] || fail "$n: peer end: $(cat "$T/$n-peer.err")"
	expect "$n: the peer's end" "$(cat "$T/$n.progress")" \
		"rx=$bytes tx=$peer_bytes end=eof"
	passt_check_alive
	log "$n: $bytes bytes to the peer, then its EOF"
done
log "guest's TCP: $(tcp_counters "$GUEST")"
# "socket took N of M bytes, K kept": N + K < M left M - N - K bytes to
# the guest's retransmission (the stall took many such)
left=$(awk '/TCP flow [0-9]+: socket took/ {
		for (i = 1; i < NF; i++) if ($i == "took") break
		if ($(i + 1) + $(i + 5) < $(i + 3)) print
	}' "$PASST_ERR")
log "refused and kept: $(grep -c 'socket took' "$PASST_ERR") times"
expect "refused data not kept (left to the guest's retransmission)" \
	"${left:-none}" none
