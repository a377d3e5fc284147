#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# coalesce.sh - does input coalescing (tap/coalesce.c) ever lower
# throughput? Our daemon with coalescing against the same daemon with
# PASST_COALESCE_US=0, guest -> peer, behind a kernel guest that keeps
# at most N frames in flight: N frames handed to the front-end and not
# yet taken by the daemon, as a guest's small ring, byte queue limits or
# a stream front-end's socket buffer hold it to (tapbridge -F N,
# vu-front -F N).
#
# Usage: bench/coalesce.sh     (as root, after make)
#
# It prints one table: per front-end, MTU and N, the medians of both
# settings, throughput (Gbit/s) and the daemon's CPU seconds per GiB,
# and the ratios coalescing : off. The goal (issue 52): throughput at
# least 0.95 of off's, CPU per GiB no more than off's (within the runs'
# noise: the spread columns say how much that is).
#
# Front-ends (BENCH_COALESCE_FRONTENDS):
#   stream       tapbridge -F N
#   vhost-user   vu-front -O -P -e -F N: offloads, frames in pieces and
#                EVENT_IDX, as a Linux guest behind QEMU takes them (large
#                frames in pieces also run out of the ring's 256
#                descriptors: at most 85 frames of 64 KiB in flight)
#   vu-compat    vu-front -P -F N against --virtio-compat: no offloads,
#                no EVENT_IDX, every frame of MTU size (the case of
#                issue 52: 21 frames in flight at MTU 1500 moved 0.01 of
#                what they moved without coalescing)
#
# Each cell starts a daemon (and a bridge) per run and setting, in the
# order on, off in odd runs and off, on in even ones, so that a change of
# the machine's load weighs on both.
#
# Environment (bench/lib.sh's BENCH_RUNS, default 3 here, BENCH_SECS, 4;
# BENCH_MTUS), and:
#   BENCH_COALESCE_N          "1 2 4 8 21 64 256"
#   BENCH_COALESCE_FRONTENDS  "stream vhost-user vu-compat"
#   BENCH_COALESCE_OUT        the table also goes there (default
#                             bench/results/coalesce.md)
# PASST (default build/passt), TOOLS as in test/integration/lib.sh.
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
BENCH_RUNS=${BENCH_RUNS:-3}
BENCH_SECS=${BENCH_SECS:-4}
BENCH_BACKENDS=ours

# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=test/integration/lib.sh
. "$ROOT/test/integration/lib.sh"
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
BENCH_HARNESS=coalesce

need iperf3 jq busybox ss awk
[ "$(id -u)" -eq 0 ] || skip "not root"
[ -x "$PASST" ] || fail "no daemon at $PASST (make)"
[ -x "$TOOLS/tapbridge" ] && [ -x "$TOOLS/vu-front" ] ||
	fail "no tapbridge or vu-front in $TOOLS (make tools)"

NS_LIST=${BENCH_COALESCE_N:-1 2 4 8 21 64 256}
FRONTENDS=${BENCH_COALESCE_FRONTENDS:-stream vhost-user vu-compat}
OUT=${BENCH_COALESCE_OUT:-$BENCH/results/coalesce.md}
RECS=$T/coalesce.records

# up FRONTEND MTU N SETTING: the daemon (coalescing on, or off) and the
# bridge with N frames in flight, the guest's lease applied; 1 on failure
up() {
	local u_args="-m $2" u_env=''
	case $1 in
	vhost-user) u_args="$u_args --vhost-user" ;;
	vu-compat) u_args="$u_args --vhost-user --virtio-compat" ;;
	esac
	[ "$4" = off ] && u_env=PASST_COALESCE_US=0
	rm -f "$SOCK" "$PIDFILE"
	# shellcheck disable=SC2086
	ip netns exec "$HOST" env $u_env "$PASST" -f -s "$SOCK" -P "$PIDFILE" \
		$u_args >"$T/passt.out" 2>"$PASST_ERR" &
	PASST_PID=$!
	track "$PASST_PID"
	wait_for "[ -S '$SOCK' ] || ! alive $PASST_PID" 10 &&
		alive "$PASST_PID" || {
		log "  daemon did not start: $(tail -n 3 "$PASST_ERR")"
		return 1
	}
	case $1 in
	stream)
		ip netns exec "$GUEST" "$TOOLS/tapbridge" -r 5 -m "$2" -F "$3" \
			"$SOCK" 2>"$T/bridge.err" &
		;;
	vhost-user)
		ip netns exec "$GUEST" "$TOOLS/vu-front" -r 5 -O -P -e \
			-F "$3" -m "$2" "$SOCK" bridge 2>"$T/bridge.err" &
		;;
	vu-compat)
		ip netns exec "$GUEST" "$TOOLS/vu-front" -r 5 -P -F "$3" \
			-m "$2" "$SOCK" bridge 2>"$T/bridge.err" &
		;;
	esac
	BRIDGE_PID=$!
	track "$BRIDGE_PID"
	wait_for "grep -q -e 'tapbridge: connected' -e 'bridge: connected' \
		  '$T/bridge.err'" 10 || {
		log "  bridge did not connect: $(cat "$T/bridge.err")"
		return 1
	}
	wait_for "ip -n $GUEST link show tap0" 10 && alive "$BRIDGE_PID" || {
		log "  no tap0 in the guest: $(cat "$T/bridge.err")"
		return 1
	}
	(dhcp4 "$T/lease" && dhcp4_apply "$T/lease") || return 1
	ip -n "$GUEST" link set tap0 mtu "$2"
	wait_for "ns $GUEST ping -c1 -W1 $PEER4" 10 || {
		log "  the guest can't ping $PEER4"
		return 1
	}
}

# down: the bridge, then the daemon
down() {
	local d_p
	for d_p in "${BRIDGE_PID:-}" "${PASST_PID:-}"; do
		[ -n "$d_p" ] || continue
		kill -TERM "$d_p" 2>/dev/null || :
		wait_for "! alive $d_p" 10 || kill -KILL "$d_p" 2>/dev/null || :
		wait "$d_p" 2>/dev/null || :
	done
	BRIDGE_PID='' PASST_PID=''
	wait_for "! ip -n $GUEST link show tap0" 15 || :
}

# run FRONTEND MTU N SETTING RUN: one transfer guest -> peer, records
# "FRONTEND MTU N SETTING gbps|cpu VALUE"
run() {
	local r_json=$T/iperf3.json r_c0 r_c1 r_rc=0 r_bytes r_gbps r_cpu
	if ! up "$1" "$2" "$3" "$4"; then
		echo "$1 $2 $3 $4 gbps FAIL" >>"$RECS"
		down
		return 0
	fi
	ip netns exec "$ROUTER" iperf3 -s -1 -B "$PEER4" -p "$BENCH_PORT" \
		>"$T/iperf3-server.log" 2>&1 &
	local r_srv=$!
	track "$r_srv"
	wait_for "ns $ROUTER ss -Hltn 'sport = :$BENCH_PORT' | grep -q ." 10 ||
		fail "iperf3 server did not start"
	r_c0=$(cpu_ticks "$PASST_PID")
	timeout $((BENCH_SECS + 30)) ip netns exec "$GUEST" iperf3 \
		-c "$PEER4" -p "$BENCH_PORT" -t "$BENCH_SECS" \
		--connect-timeout 5000 -J >"$r_json" 2>/dev/null || r_rc=$?
	r_c1=$(cpu_ticks "$PASST_PID")
	kill -KILL "$r_srv" 2>/dev/null || :
	wait "$r_srv" 2>/dev/null || :
	r_bytes=$(jq -r '.end.sum_received.bytes // 0' "$r_json" \
		2>/dev/null) || r_bytes=0
	if [ "$r_rc" -ne 0 ] || [ "$r_bytes" = 0 ] || ! alive "$PASST_PID"; then
		log "  $1 $2 N=$3 $4 #$5: FAILED (iperf3 status $r_rc)"
		echo "$1 $2 $3 $4 gbps FAIL" >>"$RECS"
		down
		return 0
	fi
	r_gbps=$(jq -r '.end.sum_received.bits_per_second / 1e9' "$r_json")
	r_cpu=$(per_gib "$(ticks_s $((r_c1 - r_c0)))" "$r_bytes")
	echo "$1 $2 $3 $4 gbps $r_gbps" >>"$RECS"
	echo "$1 $2 $3 $4 cpu $r_cpu" >>"$RECS"
	kill -USR1 "$PASST_PID" 2>/dev/null || :
	wait_for "grep -q 'Frames from guest' '$PASST_ERR'" 5 || :
	log "  $1 $2 N=$3 $4 #$5: $(printf '%.3f' "$r_gbps") Gbit/s," \
		"CPU $r_cpu s/GiB$(grep 'coalescing: polled' "$PASST_ERR" |
		tail -n 1 | sed 's/.*coalescing: /; /')"
	down
}

# table: medians and spreads of the records, ratios on : off
table() {
	awk '
	function median(k,   n, i, j, t, a) {
		n = cnt[k]
		if (!n) return ""
		for (i = 1; i <= n; i++) a[i] = val[k, i]
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function spread(k,   n, i, lo, hi, m) {
		n = cnt[k]
		if (n < 2) return "-"
		lo = hi = val[k, 1]
		for (i = 2; i <= n; i++) {
			if (val[k, i] < lo) lo = val[k, i]
			if (val[k, i] > hi) hi = val[k, i]
		}
		m = median(k)
		return m > 0 ? sprintf("%.0f%%", 100 * (hi - lo) / m) : "-"
	}
	$6 != "FAIL" {
		k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
		val[k, ++cnt[k]] = $6
		if (!seen[$1, $2, $3]++) row[++rows] = $1 SUBSEP $2 SUBSEP $3
	}
	$6 == "FAIL" { fails[$1 " " $2 " " $3 " " $4]++ }
	END {
		printf "| front-end | MTU | N | Gbit/s on | Gbit/s off | " \
		       "throughput on : off | CPU s/GiB on | CPU s/GiB off | " \
		       "CPU on : off | spreads (Gbit/s on, off; CPU on, off) |\n"
		printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
		for (r = 1; r <= rows; r++) {
			split(row[r], p, SUBSEP)
			gon = median(row[r] SUBSEP "on" SUBSEP "gbps")
			gof = median(row[r] SUBSEP "off" SUBSEP "gbps")
			con = median(row[r] SUBSEP "on" SUBSEP "cpu")
			cof = median(row[r] SUBSEP "off" SUBSEP "cpu")
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | " \
			       "%s, %s; %s, %s |\n", p[1], p[2], p[3],
				gon == "" ? "FAIL" : sprintf("%.3f", gon),
				gof == "" ? "FAIL" : sprintf("%.3f", gof),
				gon == "" || gof <= 0 ? "-" :
					sprintf("**%.2f**", gon / gof),
				con == "" ? "FAIL" : sprintf("%.3f", con),
				cof == "" ? "FAIL" : sprintf("%.3f", cof),
				con == "" || cof <= 0 ? "-" :
					sprintf("**%.2f**", con / cof),
				spread(row[r] SUBSEP "on" SUBSEP "gbps"),
				spread(row[r] SUBSEP "off" SUBSEP "gbps"),
				spread(row[r] SUBSEP "on" SUBSEP "cpu"),
				spread(row[r] SUBSEP "off" SUBSEP "cpu")
		}
		for (f in fails) printf "\nfailed runs: %s: %d\n", f, fails[f]
	}' "$RECS"
}

setup_ns
ns "$GUEST" sysctl -qw net.ipv4.tcp_no_metrics_save=1
ns "$ROUTER" sysctl -qw net.ipv4.tcp_no_metrics_save=1
ns "$HOST" sysctl -qw net.ipv4.tcp_no_metrics_save=1
: >"$RECS"
START=$(date +%s)
log "coalescing against PASST_COALESCE_US=0, guest -> peer, $BENCH_RUNS" \
	"runs of $BENCH_SECS s; front-ends: $FRONTENDS; MTUs: $BENCH_MTUS;" \
	"frames in flight: $NS_LIST"
for _f in $FRONTENDS; do
	case $_f in stream | vhost-user | vu-compat) ;;
	*) fail "unknown front-end $_f" ;; esac
	for _m in $BENCH_MTUS; do
		for _n in $NS_LIST; do
			for _r in $(seq 1 "$BENCH_RUNS"); do
				if [ $((_r % 2)) = 1 ]; then
					_o="on off"
				else
					_o="off on"
				fi
				for _s in $_o; do
					run "$_f" "$_m" "$_n" "$_s" "$_r"
				done
			done
		done
	done
done
mkdir -p "$(dirname "$OUT")"
{
	echo "# Input coalescing against PASST_COALESCE_US=0"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$ROOT" describe \
		--always --dirty 2>/dev/null), kernel $(uname -r)," \
		"$BENCH_RUNS runs of $BENCH_SECS s per cell, load average" \
		"$(cut -d' ' -f1-3 /proc/loadavg) at the end," \
		"$(($(date +%s) - START)) s"
	echo
	table
} >"$OUT"
echo
cat "$OUT"
