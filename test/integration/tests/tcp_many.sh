#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_many.sh - 200 concurrent connections from the guest to an echo
# server on the peer, each carrying 64 KiB of its own pattern that must
# come back exactly, IPv4 and IPv6. Then the daemon's flows go away.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox
need_sockio

N=${MANY_CONNS:-200}

setup_ns
passt_start
guest_up

for peer in "$PEER4" "$PEER6"; do
	rm -f "$T/ready"
	bg "$ROUTER" "echo-$peer" /dev/null /dev/null \
		"$SOCKIO" --ready "$T/ready" tcp-echo "$peer" 7000
	wait_ready "$T/ready"
	t0=$(now_ms)
	st=0
	ns "$GUEST" "$SOCKIO" "${STALL[@]}" -t 60 \
		tcp-many "$peer" 7000 "$N" 65536 \
		2>"$T/many.err" || st=$?
	log "$peer: $(tail -n 1 "$T/many.err") in $(($(now_ms) - t0)) ms"
	[ "$st" -eq 0 ] || {
		head -n 20 "$T/many.err" >&2
		fail "$peer: tcp-many exit status $st"
	}
	passt_check_alive
done
passt_stop
