#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# udp.sh - UDP echo through a real guest, IPv4 and IPv6:
#   outbound  the guest pings an echo server on the peer in ROUTER
#   inbound   the peer pings the host's address, port 5003, which the
#             daemon forwards (-u 5003) to an echo server in the guest
# Every datagram has its own payload and must come back equal.
set -eu
. "$(dirname "$0")/../lib.sh"
need_sockio

PORT=5003
COUNT=${E2E_UDP_COUNT:-20}

setup_ns
need_mode
need_guest
passt_up -u "$PORT"
qemu_start
guest_wait
[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
[ "$G_IP6" != none ] || fail "guest has no IPv6 address"
g_ok '[ -x /bin/sockio ]' >/dev/null || fail "no sockio in the guest image"

# outbound NAME PEER_ADDR PEER_PORT
outbound() {
	local n=$1 out
	rm -f "$T/ready"
	bg "$ROUTER" "$n-peer" /dev/null /dev/null \
		"$SOCKIO" --ready "$T/ready" udp-echo "$2" "$3"
	wait_ready "$T/ready"
	out=$(g_ok -t 40 "sockio -t 30 udp-ping $2 $3 $COUNT 2>&1")
	log "$n: ${out:-$COUNT datagrams echoed}"
	passt_check_alive
	log "$n: OK"
}

# inbound NAME LISTEN_ADDR HOST_ADDR
inbound() {
	local n=$1 st=0
	g_bg "$n" "sockio --ready /tmp/$n.ready -t 60 udp-echo $2 $PORT"
	g_wait_file "/tmp/$n.ready"
	ns "$ROUTER" "$SOCKIO" -t 30 udp-ping "$3" "$PORT" "$COUNT" \
		>/dev/null 2>"$T/$n-peer.err" || st=$?
	expect "$n: peer udp-ping exit status ($(cat "$T/$n-peer.err"))" \
		"$st" 0
	g_run "killall sockio" >/dev/null || :
	passt_check_alive
	log "$n: OK"
}

outbound out-v4 "$PEER4" 7001
outbound out-v6 "$PEER6" 7002
inbound in-v4 "$(guest_addr4)" "$ADDR4"
# The guest has spoken from its SLAAC address (outbound above)
inbound in-v6 "$(guest_addr6)" "$ADDR6"

qemu_stop
passt_stop
