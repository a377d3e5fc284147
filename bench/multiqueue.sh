#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# multiqueue.sh - does a 2-vCPU guest gain from a second vhost-user queue
# pair? QEMU boots test/guest/out with -smp 2 through our daemon in
# vhost-user mode, with queues=1 and with queues=2 (mq=on), in turns
# (1, 2, 1, 2: a load that drifts weighs on both). In each boot, for each
# run:
#   one   one iperf3 client in the guest
#   two   two iperf3 clients at once, to two servers on the peer
# each guest->peer (g2p) and peer->guest (p2g), with the clients pinned to
# vCPU 0 (one) and vCPUs 0 and 1 (two) by default, or left to the guest's
# scheduler with BENCH_MQ_PIN=0. Prints the medians per cell (Gbit/s, the
# sum of both clients for "two") and the daemon's CPU seconds per GiB.
#
# The guest's iperf3 (3.12) is single-threaded: parallel streams need two
# processes. A Linux guest sends on the queue of the CPU it sends from
# (XPS), and we send a flow's frames on the pair they came from (see
# vhost/net.c), so with two pairs each client's receive work stays on its
# own vCPU.
#
# Usage: bench/multiqueue.sh   (as root, after make)
# Environment: BENCH_RUNS (runs per cell, default 5, half of them in each
# boot), BENCH_SECS (8), BENCH_MQ_PIN (1), PASST, TOOLS, QEMU, GUEST_OUT as
# in test/e2e/lib.sh.
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}

# shellcheck source=test/e2e/lib.sh
. "$ROOT/test/e2e/lib.sh"
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

need iperf3 jq awk ss
[ "$(id -u)" -eq 0 ] || skip "not root"
[ -x "$PASST" ] || fail "no daemon at $PASST (make)"
TOOLS=$TOOLS "$ROOT/test/guest/build.sh" || fail "test/guest/build.sh failed"
need_guest

# shellcheck disable=SC2034 # read by qemu_start
E2E_MODE=vhost-user
E2E_SMP=2
RUNS=$(((BENCH_RUNS + 1) / 2))
SECS=$BENCH_SECS
PIN=${BENCH_MQ_PIN:-1}
P1=5201
P2=5202
REC=$T/mq-records
: >"$REC"

# run QUEUES KIND DIR: one run; records "QUEUES KIND DIR gbps|cpu VALUE"
run() {
	local q=$1 k=$2 d=$3 rev='' s1 s2 c0 c1 b1 b2 g t1='' t2=''
	[ "$d" = p2g ] && rev=-R
	if [ "$PIN" = 1 ]; then
		t1="taskset 1"
		t2="taskset 2"
	fi
	bg "$ROUTER" s1 /dev/null "$T/s1.out" iperf3 -s -1 -B "$PEER4" -p $P1
	s1=$BG_PID
	bg "$ROUTER" s2 /dev/null "$T/s2.out" iperf3 -s -1 -B "$PEER4" -p $P2
	s2=$BG_PID
	wait_for "ns $ROUTER ss -Hltn 'sport = :$P1' | grep -q . &&
		  ns $ROUTER ss -Hltn 'sport = :$P2' | grep -q ." 10 ||
		fail "iperf3 servers did not start"
	c0=$(cpu_ticks "$PASST_PID")
	if [ "$k" = one ]; then
		g_run -t $((SECS + 30)) "rm -f /tmp/b.json
			$t1 iperf3 -c $PEER4 -p $P1 -t $SECS $rev -J >/tmp/a.json" \
			>/dev/null || :
	else
		g_run -t $((SECS + 30)) "$t1 iperf3 -c $PEER4 -p $P1 -t $SECS \
			$rev -J >/tmp/a.json &
			$t2 iperf3 -c $PEER4 -p $P2 -t $SECS $rev -J >/tmp/b.json
			wait" >/dev/null || :
	fi
	c1=$(cpu_ticks "$PASST_PID")
	for s in $s1 $s2; do
		kill -KILL "$s" 2>/dev/null || :
		wait "$s" 2>/dev/null || :
	done
	b1=$(g_run 'cat /tmp/a.json' | jq -r '.end.sum_received.bytes // 0') ||
		b1=0
	b2=0
	if [ "$k" = two ]; then
		b2=$(g_run 'cat /tmp/b.json' |
		     jq -r '.end.sum_received.bytes // 0') || b2=0
		if [ "$b2" = 0 ]; then
			b1=0
		fi
	fi
	if [ "${b1:-0}" = 0 ]; then
		log "  queues=$q $k $d: FAILED"
		return 0
	fi
	g=$(awk -v a="$b1" -v b="$b2" -v s="$SECS" \
		'BEGIN { printf "%.3f", (a + b) * 8 / s / 1e9 }')
	echo "$q $k $d gbps $g" >>"$REC"
	awk -v t="$(ticks_s $((c1 - c0)))" -v a="$b1" -v b="$b2" \
		-v key="$q $k $d cpu" \
		'BEGIN { printf "%s %.3f\n", key, t / ((a + b) / 2^30) }' >>"$REC"
	log "  queues=$q $k $d: $g Gbit/s ($((b1 / 1048576)) +" \
		"$((b2 / 1048576)) MiB)"
}

# boot QUEUES: one guest, all the runs
boot() {
	local k d
	E2E_QUEUES=$1
	rm -f "$SOCK" "$PIDFILE"
	passt_start --vhost-user
	qemu_start
	guest_wait 300
	[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
	log "queues=$1: guest queues $(g_run 'ls /sys/class/net/eth0/queues' |
		tr -d '\r' | tr '\n' ' ')"
	for _ in $(seq 1 "$RUNS"); do
		for k in one two; do
			for d in g2p p2g; do
				run "$1" "$k" "$d"
			done
		done
	done
	qemu_stop
	passt_stop
	grep 'per queue pair' "$PASST_ERR" | tail -n 1 | sed 's/^/  /' >&2 ||
		:
}

setup_ns
for q in 1 2 1 2; do
	boot "$q"
done

echo
echo "2 vCPUs (TCG), vhost-user, MTU 65520, $((RUNS * 2)) runs of ${SECS} s" \
	"per cell, clients $([ "$PIN" = 1 ] && echo pinned || echo unpinned)"
printf '%-5s %-4s %12s %12s %8s %12s %12s %8s\n' streams dir \
	"Gbit/s q=1" "q=2" ratio "CPU s/GiB 1" "2" ratio
for k in one two; do
	for d in g2p p2g; do
		line="$k $d"
		for m in gbps cpu; do
			for q in 1 2; do
				v=$(awk -v q="$q" -v k="$k" -v d="$d" -v m="$m" \
				    '$1 == q && $2 == k && $3 == d && $4 == m {
					print $5 }' "$REC" | sort -g |
				    awk '{ v[NR] = $1 } END {
					if (!NR) { print "FAIL"; exit }
					if (NR % 2) print v[(NR + 1) / 2]
					else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
				line="$line $v"
			done
		done
		echo "$line" | awk '{
			r1 = ($3 + 0 && $4 != "FAIL") ? sprintf("%.2f", $4 / $3) : "-"
			r2 = ($5 + 0 && $6 != "FAIL") ? sprintf("%.2f", $6 / $5) : "-"
			printf "%-7s %-4s %12s %12s %8s %12s %12s %8s\n",
				$1, $2, $3, $4, r1, $5, $6, r2 }'
	done
done
