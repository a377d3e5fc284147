#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# iperf3.sh - not in the default set: iperf3 from the guest to the peer and
# back (-R), IPv4, a few seconds each. Reports the guest's throughput and
# the daemon's CPU time (utime + stime) per GiB moved: under TCG the guest
# CPU is the bottleneck, so the second number is the one to compare.
# Passes if both directions move data.
set -eu
. "$(dirname "$0")/../lib.sh"
need iperf3

SECS=${E2E_IPERF_SECS:-3}

setup_ns
need_mode
need_guest
passt_up
qemu_start
guest_wait
[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
g_ok '[ -x /bin/iperf3 ]' >/dev/null || fail "no iperf3 in the guest image"

# cpu_ticks: the daemon's utime + stime, in clock ticks
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$PASST_PID/stat"
}

for dir in up down; do
	rm -f "$T/ready"
	bg "$ROUTER" "iperf3-$dir" /dev/null "$T/iperf3-$dir.srv" \
		iperf3 -s -1 -B "$PEER4" -p 5201
	wait_for "ns $ROUTER ss -Htln | grep -q '$PEER4:5201'" 10 ||
		fail "iperf3 server did not start"
	r=
	[ "$dir" = down ] && r=-R
	c0=$(cpu_ticks)
	out=$(g_ok -t $((SECS + 30)) "iperf3 -c $PEER4 -p 5201 -t $SECS $r -f m")
	c1=$(cpu_ticks)
	bg_wait "$BG_PID" 10 || :
	line=$(echo "$out" | grep -E 'receiver$' | tail -n 1)
	[ -n "$line" ] || fail "$dir: no iperf3 result: $out"
	mbits=$(echo "$line" | awk '{ for (i = 1; i < NF; i++)
		if ($(i + 1) == "Mbits/sec") print $i }')
	bytes=$(echo "$line" | awk '{ for (i = 1; i < NF; i++) {
		if ($(i + 1) == "GBytes") printf "%d", $i * 1073741824
		if ($(i + 1) == "MBytes") printf "%d", $i * 1048576 } }')
	[ "${bytes:-0}" -gt 0 ] || fail "$dir: nothing moved: $line"
	hz=$(getconf CLK_TCK)
	log "$dir: $mbits Mbit/s; daemon CPU" \
		"$(( (c1 - c0) * 1000 / hz )) ms for $((bytes / 1048576)) MiB:" \
		"$(( (c1 - c0) * 1000 / hz * 1073741824 / bytes )) ms/GiB"
	passt_check_alive
done

qemu_stop
passt_stop
