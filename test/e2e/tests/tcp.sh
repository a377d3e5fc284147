#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp.sh - TCP through a real guest, IPv4 and IPv6, data both ways at once
# on every connection, checked by SHA-256:
#   outbound  the guest connects to the peer in ROUTER
#   inbound   the peer connects to the host's address, port 5001, which
#             the daemon forwards (-t 5001) to the guest's listener
set -eu
. "$(dirname "$0")/../lib.sh"
need sha256sum
need_sockio

# E2E_TCP_MIB: MiB each way, per connection (TCG moves some 10-50 MiB/s)
MIB=${E2E_TCP_MIB:-8}
PORT=5001

setup_ns
need_mode
need_guest
passt_up -t "$PORT"
qemu_start
guest_wait
[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
[ "$G_IP6" != none ] || fail "guest has no IPv6 address"
g_ok '[ -x /bin/sockio ]' >/dev/null || fail "no sockio in the guest image"

head -c "${MIB}M" /dev/urandom >"$T/to_guest"
sum_to_guest=$(sha "$T/to_guest")
sum_to_peer=$(g_ok "head -c ${MIB}m /dev/urandom >/tmp/to_peer &&
	sha256sum /tmp/to_peer | cut -d' ' -f1")

# check NAME WHERE: compare what both ends got, after a transfer. The guest
# side's report is in /tmp/NAME.err, its data in /tmp/got
check() {
	local n=$1 got
	log "$n: guest: $(g_run "cat /tmp/$n.err" | tr '\n' ' ')"
	log "$n: peer: $(tr '\n' ' ' <"$T/$n-peer.err")"
	got=$(g_ok "sha256sum /tmp/got | cut -d' ' -f1; rm -f /tmp/got")
	expect "$n: SHA-256 to the guest" "$got" "$sum_to_guest"
	expect "$n: bytes to the peer" "$(stat -c %s "$T/got_peer")" \
		"$((MIB * 1048576))"
	expect "$n: SHA-256 to the peer" "$(sha "$T/got_peer")" "$sum_to_peer"
	passt_check_alive
	qemu_check_alive
}

# outbound NAME PEER_ADDR PEER_PORT
outbound() {
	local n=$1 t0 ppid
	rm -f "$T/ready" "$T/got_peer"
	bg "$ROUTER" "$n-peer" "$T/to_guest" "$T/got_peer" \
		"$SOCKIO" -t 120 --report --ready "$T/ready" tcp-listen "$2" "$3"
	ppid=$BG_PID
	wait_ready "$T/ready"
	t0=$(now_ms)
	g_ok -t 120 "sockio -t 110 --report tcp-connect $2 $3 \
		</tmp/to_peer >/tmp/got 2>/tmp/$n.err" >/dev/null
	bg_wait "$ppid" 20 || :
	expect "$n: peer exit status" "$BG_ST" 0
	log "$n: $((MIB * 2)) MiB in $(($(now_ms) - t0)) ms"
	check "$n"
	log "$n: OK"
}

# inbound NAME LISTEN_ADDR HOST_ADDR
inbound() {
	local n=$1 t0 st=0
	rm -f "$T/got_peer"
	g_bg "$n" "sockio -t 110 --report --ready /tmp/$n.ready \
		tcp-listen $2 $PORT </tmp/to_peer >/tmp/got 2>/tmp/$n.err"
	g_wait_file "/tmp/$n.ready"
	t0=$(now_ms)
	ns "$ROUTER" "$SOCKIO" -t 120 --report tcp-connect "$3" "$PORT" \
		<"$T/to_guest" >"$T/got_peer" 2>"$T/$n-peer.err" || st=$?
	expect "$n: peer exit status" "$st" 0
	g_bg_wait "$n" 20
	expect "$n: guest listener exit status" "$BG_ST" 0
	log "$n: $((MIB * 2)) MiB in $(($(now_ms) - t0)) ms"
	check "$n"
	log "$n: OK"
}

outbound out-v4 "$PEER4" 6001
outbound out-v6 "$PEER6" 6002
inbound in-v4 "$(guest_addr4)" "$ADDR4"
# The guest has spoken from its SLAAC address (outbound above): the
# daemon knows where to send what comes in for the host's IPv6 address
inbound in-v6 "$(guest_addr6)" "$ADDR6"

qemu_stop
passt_stop
