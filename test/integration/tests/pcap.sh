#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# pcap.sh - -p FILE captures the guest's traffic in a file tcpdump reads:
# the DHCP exchange and the echo requests and replies are in it
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox tcpdump

setup_ns
passt_start -p "$T/capture.pcap"
bridge_start
dhcp4
dhcp4_apply
ns "$GUEST" ping -c 2 -W 2 "$PEER4" >"$T/ping4.log" 2>&1 ||
	fail "ping $PEER4: $(tail -n 3 "$T/ping4.log")"
passt_stop

tcpdump -r "$T/capture.pcap" -nn >"$T/tcpdump.log" 2>"$T/tcpdump.err" ||
	fail "tcpdump can't read the capture: $(cat "$T/tcpdump.err")"
grep -q 'BOOTP/DHCP, Request' "$T/tcpdump.log" || fail "no DHCP request"
grep -q 'BOOTP/DHCP, Reply' "$T/tcpdump.log" || fail "no DHCP reply"
grep -q "$ADDR4 > $PEER4: ICMP echo request" "$T/tcpdump.log" ||
	fail "no echo request"
grep -q "$PEER4 > $ADDR4: ICMP echo reply" "$T/tcpdump.log" ||
	fail "no echo reply"
