#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# second_client.sh - without -1, the daemon outlives its first client and
# serves the next one, which gets a lease as the first did
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox

setup_ns
passt_start
bridge_start tb1
dhcp4 "$T/lease-1"
bridge_stop
passt_check_alive

bridge_start tb2
dhcp4 "$T/lease-2"
expect "second client's address" "$(lease_get "$T/lease-2" ip)" "$ADDR4"
passt_check_alive
passt_stop
