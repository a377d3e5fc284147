#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_refused.sh - the guest connecting to a closed port on the peer gets
# ECONNREFUSED (the daemon resets the guest's SYN), quickly: well before
# any SYN retransmission timeout, IPv4 and IPv6.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox
need_sockio

setup_ns
passt_start
guest_up

for peer in "$PEER4" "$PEER6"; do
	t0=$(now_ms)
	st=0
	ns "$GUEST" "$SOCKIO" -t 10 tcp-refused "$peer" 6999 \
		2>"$T/refused.err" || st=$?
	ms=$(($(now_ms) - t0))
	log "$peer: $(cat "$T/refused.err") (${ms} ms in all)"
	expect "$peer: refused (exit status)" "$st" 0
	[ "$ms" -lt 2000 ] || fail "$peer: refusal took $ms ms"
	passt_check_alive
done
passt_stop
