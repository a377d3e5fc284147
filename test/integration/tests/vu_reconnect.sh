#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_reconnect.sh - vhost-user front-ends come and go: each new one gets a
# clean device and is served; a second concurrent one is turned away
# without disturbing the first; with --one-off the daemon exits when its
# front-end leaves; the bridge works again after a reconnect
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need busybox
need_vufront

setup_ns
vu_passt_start
vu r1 arp-probe close connect dhcp-probe close connect arp-probe
passt_check_alive
for i in 1 2 3; do
	VU_FRONT_OPTS=-2 vu "loop$i" arp-probe
done
passt_check_alive

# A bridge is connected: a second front-end is refused, the bridge works
bridge_start
ip netns exec "$GUEST" "$VUFRONT" -t 2000 "$SOCK" arp-probe \
	2>"$T/second.err" && fail "second front-end was served"
dhcp4
dhcp4_apply
ns "$GUEST" ping -c 1 -W 2 "$PEER4" >/dev/null || fail "ping after refusal"
bridge_stop

# Reconnect: a new bridge, the guest's stack works again
bridge_start vb2
dhcp4
dhcp4_apply
ns "$GUEST" ping -c 1 -W 2 "$PEER4" >/dev/null || fail "ping after reconnect"
bridge_stop
passt_check_alive
passt_stop

# --one-off: exit when the front-end goes
vu_passt_start -1
vu once arp-probe
wait_for "! alive $PASST_PID" 5 || fail "--one-off: still running"
st=0
wait "$PASST_PID" || st=$?
sanitizer_check "$PASST_ERR"
expect "--one-off exit status" "$st" 0
