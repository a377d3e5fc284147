#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_reuse.sh - a flow slot freed and reused within one batch of guest
# frames (issue 7): tcpguest opens connection A, then writes in ONE
# write(), so that the daemon handles them in one loop round: data on A,
# an RST for A (which frees A's flow) and a SYN for a new connection B
# (which may get A's slot). B's peer must receive B's bytes and nothing
# else; A's peer may or may not get A's data (it came before the RST), but
# only A's, and must see the reset. Many rounds, IPv4 and IPv6 alternating
# (each round starts with the other family on the second pass). Then the
# daemon's flows and file descriptors must be back to their baseline.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

ROUNDS=${REUSE_ROUNDS:-200}

tcpguest_start

t0=$(now_ms)
st=0
ns "$ROUTER" "$TCPGUEST" -t 15 -n "$ROUNDS" ${TCPGUEST_SEED:+-s "$TCPGUEST_SEED"} \
	"$SOCK" reuse >"$T/reuse.log" 2>"$T/reuse.err" || st=$?
log "reuse: $(tr '\n' ' ' <"$T/reuse.log")($(($(now_ms) - t0)) ms)"
if [ "$st" -ne 0 ]; then
	cat "$T/reuse.err" >&2
	passt_check_alive
	fail "reuse: tcpguest exit status $st (guest bytes crossed connections?)"
fi
passt_check_alive
settle reuse
passt_stop
