#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# reconnect.sh - the daemon goes away under a running guest and comes back:
# QEMU reconnects by itself (stream: -netdev stream reconnect-ms;
# vhost-user: -chardev socket reconnect-ms), and the guest, which keeps its
# addresses, reaches the peer again (ping, ping6, a TCP transfer checked by
# SHA-256). Twice, so the second connection isn't a lucky first one.
set -eu
. "$(dirname "$0")/../lib.sh"
need_sockio

setup_ns
need_mode
need_guest
passt_up
qemu_start --reconnect
guest_wait
[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
g_ok -t 20 "ping -c 1 -W 5 $PEER4" >/dev/null || fail "no ping before restart"

head -c 1M /dev/urandom >"$T/to_guest"
sum=$(sha "$T/to_guest")

for round in 1 2; do
	passt_stop
	mv "$PASST_ERR" "$T/passt-$round.err"
	# A few frames while the daemon is away: they're lost, harmlessly
	g_run -t 10 "ping -c 1 -W 1 $PEER4" >/dev/null || :
	t0=$(now_ms)
	passt_up
	g_ok -t 40 "until ping -c 1 -W 1 $PEER4 >/dev/null; do :; done" \
		>/dev/null || fail "round $round: no ping after restart"
	log "round $round: ping again after $(($(now_ms) - t0)) ms"
	g_ok -t 20 "ping6 -c 1 -W 5 $PEER6" >/dev/null ||
		fail "round $round: no ping6 after restart"

	rm -f "$T/ready"
	bg "$ROUTER" "peer-$round" "$T/to_guest" /dev/null \
		"$SOCKIO" -t 60 --ready "$T/ready" tcp-listen "$PEER4" 6001
	ppid=$BG_PID
	wait_ready "$T/ready"
	got=$(g_ok -t 60 "sockio -t 50 tcp-connect $PEER4 6001 </dev/null |
		sha256sum | cut -d' ' -f1")
	bg_wait "$ppid" 20 || :
	expect "round $round: peer exit status" "$BG_ST" 0
	expect "round $round: SHA-256 to the guest" "$got" "$sum"
	passt_check_alive
	qemu_check_alive
	log "round $round: OK"
done

qemu_stop
passt_stop
