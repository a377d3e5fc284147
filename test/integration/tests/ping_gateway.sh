#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ping_gateway.sh - the guest's pings to its gateway address are answered
# by the host itself (the gateway maps to the host's loopback), even when
# the real gateway ignores them; with --no-map-gw they go to the real one
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox

setup_ns
ns "$ROUTER" sysctl -qw net.ipv4.icmp_echo_ignore_all=1
ns "$ROUTER" sysctl -qw net.ipv6.icmp.echo_ignore_all=1

passt_start
guest_up
ns "$GUEST" ping -c 2 -W 2 "$GW4" >"$T/ping4.log" 2>&1 ||
	fail "ping $GW4: $(tail -n 3 "$T/ping4.log")"
ns "$GUEST" ping -6 -c 2 -W 2 "$GW6" >"$T/ping6.log" 2>&1 ||
	fail "ping -6 $GW6: $(tail -n 3 "$T/ping6.log")"
passt_check_alive
passt_stop
bridge_stop

# Not mapped: the request reaches the router, which stays silent
passt_start --no-map-gw
guest_up
if ns "$GUEST" ping -c 1 -W 1 "$GW4" >"$T/nomap.log" 2>&1; then
	fail "ping $GW4 answered with --no-map-gw"
fi
passt_check_alive
passt_stop
