#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# no_icmp.sh - with --no-icmp, echo requests from the guest go nowhere
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox

setup_ns
if ! "$PASST" --help 2>&1 | grep -q -e '--no-icmp'; then
	skip "daemon has no --no-icmp"
fi
passt_start --no-icmp
bridge_start
dhcp4
dhcp4_apply

if ns "$GUEST" ping -c 2 -W 1 "$PEER4" >"$T/ping4.log" 2>&1; then
	fail "ping $PEER4 answered despite --no-icmp"
fi
passt_check_alive
passt_stop
