#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_discard.sh - how long ACKed data may wait in a socket (tcp/to_guest.c,
# "socket -> guest": up to 1 MiB while the socket has more for the guest,
# a quarter of net.ipv4.tcp_rmem's largest buffer if that's less):
#   default  the daemon derives the limit from HOST's tcp_rmem and says so
#   small    tcp_rmem "4096 65536 262144" in HOST: the limit is 64 KiB,
#            and 16 MiB of a verified pattern each way at once still get
#            through (with a limit above the buffer's size, held bytes
#            could fill it, and only a peek that finds the socket dry would
#            free them)
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_sockio

setup_ns
BYTES=$((16 * 1024 * 1024))

# limit_expect NAME: the daemon's log line against HOST's tcp_rmem
limit_expect() {
	local _le_max _le_want
	_le_max=$(ns "$HOST" cat /proc/sys/net/ipv4/tcp_rmem | awk '{ print $3 }')
	_le_want=$((_le_max / 4))
	[ "$_le_want" -le 1048576 ] || _le_want=1048576
	wait_for "grep -q 'TCP: ACKed data discarded from' '$PASST_ERR'" 5 ||
		fail "$1: no discard limit in the log: $(grep 'TCP:' "$PASST_ERR")"
	expect "$1: discard limit (tcp_rmem max $_le_max)" \
		"$(sed -n 's/.*TCP: ACKed data discarded from \([0-9]*\) bytes on.*/\1/p' \
		   "$PASST_ERR" | head -n 1)" "$_le_want"
}

passt_start --debug
limit_expect default
passt_stop

ns "$HOST" sysctl -qw net.ipv4.tcp_rmem="4096 65536 262144"
passt_start --debug
limit_expect small
guest_up
pattern_both small 7400 "$BYTES" 60
passt_check_alive
bridge_stop
passt_stop
