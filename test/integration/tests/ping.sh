#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ping.sh - ICMP and ICMPv6 echo from the guest reach a remote peer through
# the daemon's ping sockets, and the replies come back
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox

setup_ns
passt_start
bridge_start
dhcp4
dhcp4_apply
slaac_wait

ns "$GUEST" ping -c 3 -W 2 "$PEER4" >"$T/ping4.log" 2>&1 ||
	fail "ping $PEER4: $(tail -n 3 "$T/ping4.log")"
ns "$GUEST" ping -6 -c 3 -W 2 "$PEER6" >"$T/ping6.log" 2>&1 ||
	fail "ping -6 $PEER6: $(tail -n 3 "$T/ping6.log")"
passt_check_alive
passt_stop
