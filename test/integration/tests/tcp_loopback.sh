#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_loopback.sh - the host's loopback through the gateway address
# (default --map-host-loopback): the guest reaches a server bound to
# 127.0.0.1 in the daemon's namespace at 192.0.2.1, and a connection from
# the host's 127.0.0.1 to a forwarded port comes to the guest from
# 192.0.2.1. Then the same for IPv6 (::1 and the gateway 2001:db8:1::1).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox sha256sum
need_sockio

setup_ns
passt_start -t 8080
guest_up
ns "$GUEST" ping -6 -c 1 -W 2 "$PEER6" >/dev/null 2>&1 || :

head -c 1M /dev/urandom >"$T/x"
head -c 1M /dev/urandom >"$T/y"
sum_x=$(sha "$T/x")
sum_y=$(sha "$T/y")

# xfer NAME SRV_NS SRV_ADDR PORT CLI_NS CLI_ADDR: server SRV_NS sends y,
# client CLI_NS sends x to CLI_ADDR PORT; both checked; the server's view
# of the peer is left in $T/NAME-srv.err
xfer() {
	local lpid st=0
	rm -f "$T/ready" "$T/got_x" "$T/got_y"
	bg "$2" "$1-srv" "$T/y" "$T/got_x" "$SOCKIO" "${STALL[@]}" -t 20 \
		--report \
		--ready "$T/ready" tcp-listen "$3" "$4"
	lpid=$BG_PID
	wait_ready "$T/ready"
	ns "$5" "$SOCKIO" "${STALL[@]}" -t 20 --report tcp-connect "$6" "$4" \
		<"$T/x" >"$T/got_y" 2>"$T/$1-cli.err" || st=$?
	bg_wait "$lpid" 10 || :
	log "$1: server: $(tr '\n' ' ' <"$T/$1-srv.err"); client: $(cat "$T/$1-cli.err")"
	expect "$1: client exit status" "$st" 0
	expect "$1: server exit status" "$BG_ST" 0
	expect "$1: SHA-256 to the server" "$(sha "$T/got_x")" "$sum_x"
	expect "$1: SHA-256 to the client" "$(sha "$T/got_y")" "$sum_y"
	passt_check_alive
}

# guest -> host loopback
xfer guest-to-lo4 "$HOST" 127.0.0.1 6200 "$GUEST" "$GW4"
grep -q '^peer=127\.0\.0\.1 ' "$T/guest-to-lo4-srv.err" ||
	fail "guest-to-lo4: server saw $(head -n 1 "$T/guest-to-lo4-srv.err"), expected 127.0.0.1"

# host loopback -> forwarded port -> guest, seen from the gateway address
xfer lo4-to-guest "$GUEST" "$ADDR4" 8080 "$HOST" 127.0.0.1
grep -q "^peer=$GW4 " "$T/lo4-to-guest-srv.err" ||
	fail "lo4-to-guest: guest saw $(head -n 1 "$T/lo4-to-guest-srv.err"), expected $GW4"

xfer guest-to-lo6 "$HOST" ::1 6201 "$GUEST" "$GW6"
grep -q '^peer=::1 ' "$T/guest-to-lo6-srv.err" ||
	fail "guest-to-lo6: server saw $(head -n 1 "$T/guest-to-lo6-srv.err"), expected ::1"

xfer lo6-to-guest "$GUEST" :: 8080 "$HOST" ::1
grep -q "^peer=$GW6 " "$T/lo6-to-guest-srv.err" ||
	fail "lo6-to-guest: guest saw $(head -n 1 "$T/lo6-to-guest-srv.err"), expected $GW6"
passt_stop
