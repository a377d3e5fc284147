#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# dhcp4.sh - the guest's DHCP client gets the host's address, the host's
# gateway, the host's resolver configuration and the tap MTU
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox

setup_ns
passt_start
bridge_start
dhcp4
L=$T/lease4
log "lease: $(tr '\n' ' ' <"$L")"

expect "address" "$(lease_get "$L" ip)" "$ADDR4"
expect "netmask" "$(lease_get "$L" subnet)" 255.255.255.0
expect "router" "$(lease_get "$L" router)" "$GW4"
expect_in "DNS servers" "$(lease_get "$L" dns)" "$DNS4"
expect_in "domain or search list" \
	"$(lease_get "$L" domain) $(lease_get "$L" search)" "$SEARCH"
expect "MTU" "$(lease_get "$L" mtu)" 65520

dhcp4_apply
ip -n "$GUEST" -4 addr show dev tap0 | grep -q "inet $ADDR4/24" ||
	fail "address not applied"
passt_check_alive
passt_stop
