#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# udp_echo.sh - UDP through the daemon: the guest's datagrams to an echo
# server on the peer come back (IPv4 and IPv6); with -u 5353, datagrams
# from ROUTER to the host's port 5353 reach the guest's echo server and
# the echoes go back; a datagram to a closed port on the peer makes the
# guest's connected socket report ECONNREFUSED (ICMP port unreachable).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox
need_sockio

setup_ns
passt_start -u 5353
guest_up

errors=

# try NAME NS SOCKIO-ARGS...: run sockio in NS, record a failure
try() {
	local name=$1 nsname=$2 st=0
	shift 2
	ns "$nsname" "$SOCKIO" -t 20 "$@" 2>"$T/$name.err" || st=$?
	log "$name: $(tr '\n' ' ' <"$T/$name.err")(status $st)"
	if [ "$st" -ne 0 ]; then
		errors="$errors $name"
		log "FAILED: $name"
	fi
	passt_check_alive
}

# Outbound: echo servers bound to the peer's addresses
for peer in "$PEER4" "$PEER6"; do
	rm -f "$T/ready"
	bg "$ROUTER" "echo-$peer" /dev/null /dev/null \
		"$SOCKIO" --ready "$T/ready" udp-echo "$peer" 7777
	wait_ready "$T/ready"
	try "out-$peer" "$GUEST" udp-ping "$peer" 7777 20
	try "refused-$peer" "$GUEST" --expect-refused udp-ping "$peer" 7778
done

# Inbound on the forwarded port; the guest has spoken from its IPv6
# address first (the daemon learns it from the guest's traffic)
ns "$GUEST" ping -6 -c 1 -W 2 "$PEER6" >/dev/null 2>&1 || :
rm -f "$T/ready4" "$T/ready6"
bg "$GUEST" gecho4 /dev/null /dev/null \
	"$SOCKIO" --ready "$T/ready4" udp-echo "$ADDR4" 5353
bg "$GUEST" gecho6 /dev/null /dev/null \
	"$SOCKIO" --ready "$T/ready6" udp-echo :: 5353
wait_ready "$T/ready4"
wait_ready "$T/ready6"
try in-v4 "$ROUTER" udp-ping "$ADDR4" 5353 20
try in-v6 "$ROUTER" udp-ping "$ADDR6" 5353 20

[ -z "$errors" ] || fail "failed:$errors"
passt_stop
