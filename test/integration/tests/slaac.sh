#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# slaac.sh - the guest's kernel autoconfigures from our router
# advertisement: an address in the host's prefix, a default route via our
# link-local address, and no MTU below the tap's
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

setup_ns
passt_start
bridge_start
slaac_wait

log "$(ip -n "$GUEST" -6 addr show dev tap0)"
log "$(ip -n "$GUEST" -6 route show default)"
mtu=$(ns "$GUEST" sysctl -n net.ipv6.conf.tap0.mtu)
expect "IPv6 MTU of tap0" "$mtu" 65520
passt_check_alive
passt_stop
