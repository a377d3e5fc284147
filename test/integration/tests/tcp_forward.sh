#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_forward.sh - inbound TCP on forwarded ports: -t 8080 reaches the
# guest's listener on 8080 and -t 8081:80 the one on 80, for IPv4 and IPv6,
# from a client in ROUTER connecting to the host's address. Data flows
# both ways at once, checked by SHA-256.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox sha256sum
need_sockio

setup_ns
passt_start -t 8080,8081:80
guest_up

head -c 4M /dev/urandom >"$T/to_guest"
head -c 3M /dev/urandom >"$T/to_peer"
sum_to_guest=$(sha "$T/to_guest")
sum_to_peer=$(sha "$T/to_peer")

# The guest has spoken from its IPv6 address before anything comes in
ns "$GUEST" ping -6 -c 1 -W 2 "$PEER6" >/dev/null 2>&1 || :

# inbound NAME LISTEN_ADDR GUEST_PORT HOST_ADDR HOST_PORT
inbound() {
	local n=$1 lpid st=0
	rm -f "$T/ready" "$T/got_guest" "$T/got_peer"
	bg "$GUEST" "$n-guest" "$T/to_peer" "$T/got_guest" \
		"$SOCKIO" "${STALL[@]}" -t 30 --report --ready "$T/ready" \
		tcp-listen "$2" "$3"
	lpid=$BG_PID
	wait_ready "$T/ready"
	ns "$ROUTER" "$SOCKIO" "${STALL[@]}" -t 30 --report \
		tcp-connect "$4" "$5" \
		<"$T/to_guest" >"$T/got_peer" 2>"$T/$n-peer.err" || st=$?
	bg_wait "$lpid" 20 || :
	log "$n: guest: $(tr '\n' ' ' <"$T/$n-guest.err")"
	log "$n: peer: $(tr '\n' ' ' <"$T/$n-peer.err")"
	expect "$n: client exit status" "$st" 0
	expect "$n: guest listener exit status" "$BG_ST" 0
	expect "$n: bytes to the guest" "$(stat -c %s "$T/got_guest")" \
		"$(stat -c %s "$T/to_guest")"
	expect "$n: SHA-256 to the guest" "$(sha "$T/got_guest")" \
		"$sum_to_guest"
	expect "$n: bytes to the peer" "$(stat -c %s "$T/got_peer")" \
		"$(stat -c %s "$T/to_peer")"
	expect "$n: SHA-256 to the peer" "$(sha "$T/got_peer")" "$sum_to_peer"
	passt_check_alive
	log "$n: OK"
}

inbound v4-8080 "$ADDR4" 8080 "$ADDR4" 8080
inbound v4-8081-to-80 "$ADDR4" 80 "$ADDR4" 8081
inbound v6-8080 :: 8080 "$ADDR6" 8080
inbound v6-8081-to-80 :: 80 "$ADDR6" 8081

# A port that isn't forwarded stays closed
ns "$GUEST" "$SOCKIO" --ready "$T/ready9" -t 20 tcp-listen "$ADDR4" 8082 \
	</dev/null >/dev/null 2>"$T/unfwd-guest.err" &
track $!
wait_ready "$T/ready9"
ns "$ROUTER" "$SOCKIO" -t 10 tcp-refused "$ADDR4" 8082 2>"$T/unfwd.err" ||
	fail "port 8082 (not forwarded): $(cat "$T/unfwd.err")"
passt_check_alive
passt_stop
