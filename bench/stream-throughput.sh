#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# stream-throughput.sh - TCP throughput and daemon CPU cost, stream mode,
# our daemon against upstream passt (Debian's package), on the namespace
# harness of test/integration (the kernel of the GUEST namespace is the
# guest, tapbridge connects its tap0 to the daemon's UNIX socket).
#
# Usage: bench/stream-throughput.sh          (as root)
#
# For each back-end and each MTU (65520, then 1500: the daemon gets -m MTU,
# the guest learns it by DHCP option 26 and applies it to tap0):
#   g2p  guest -> peer   iperf3 client in GUEST, server in ROUTER (PEER4)
#   p2g  peer -> guest   the same, with -R
#   fwd  peer -> guest   iperf3 server in GUEST, client in ROUTER connecting
#                        to the host's forwarded port (-t 5201)
# g2p and p2g run $REPS times, fwd $FWD_REPS times; the table shows the
# median. CPU s/GiB: the daemon's utime+stime during the transfer divided
# by the GiB the receiver got; on a small machine the daemon competes with
# iperf3 for the CPUs, so this is the fairer comparison.
#
# Environment:
#   PASST       our daemon (default build/passt), TOOLS as in lib.sh
#   UPSTREAM    upstream passt binary (default /usr/bin/passt; installed
#               with apt-get if missing)
#   BACKENDS    "ours upstream" (default), or just one of them
#   MTUS        "65520 1500" (default)
#   DURATION    seconds per iperf3 run (default 10)
#   REPS        runs of g2p and p2g (default 3), FWD_REPS of fwd (default 1)
#   PT_KEEP=1   keep the temporary directory (iperf3 JSON, daemon logs)
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
OURS=$PASST
UPSTREAM=${UPSTREAM:-/usr/bin/passt}
BACKENDS=${BACKENDS:-ours upstream}
MTUS=${MTUS:-65520 1500}
DURATION=${DURATION:-10}
REPS=${REPS:-3}
FWD_REPS=${FWD_REPS:-1}
PORT=5201

# lib.sh derives TOP from $0 for its defaults only: PASST and TOOLS are set
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=test/integration/lib.sh
. "$ROOT/test/integration/lib.sh"

need iperf3 jq busybox ss awk
[ "$(id -u)" -eq 0 ] || skip "not root"

case " $BACKENDS " in
*" upstream "*)
	if [ ! -x "$UPSTREAM" ] && [ "$UPSTREAM" = /usr/bin/passt ]; then
		log "upstream passt missing: running apt-get install -y passt"
		DEBIAN_FRONTEND=noninteractive apt-get install -y passt \
			>"$T/apt.log" 2>&1 ||
			fail "apt-get install passt failed: $(tail -n 5 "$T/apt.log")"
	fi
	[ -x "$UPSTREAM" ] || fail "no upstream passt at $UPSTREAM"
	;;
esac

TCK=$(getconf CLK_TCK)
RES=$T/results

# cpu_ticks PID: utime + stime of the process (all threads), in ticks
cpu_ticks() {
	# Fields after "comm)" : state is field 3, utime 14, stime 15
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# server_start NS ADDR: one-off iperf3 server, waits until it listens
server_start() {
	ip netns exec "$1" iperf3 -s -1 -B "$2" -p "$PORT" \
		>"$T/iperf3-server.log" 2>&1 &
	SERVER_PID=$!
	track "$SERVER_PID"
	wait_for "ns $1 ss -Hltn 'sport = :$PORT' | grep -q ." 10 ||
		fail "iperf3 server did not start in $1"
}

server_stop() {
	if alive "$SERVER_PID"; then
		kill -KILL "$SERVER_PID" 2>/dev/null || :
	fi
	wait "$SERVER_PID" 2>/dev/null || :
}

# measure BACKEND DIR MTU REP: one iperf3 run, appends a result line
#   BACKEND DIR MTU Gbit/s CPU-s/GiB   (or Gbit/s "FAIL")
measure() {
	local m_b=$1 m_d=$2 m_m=$3 m_r=$4 m_json m_cns m_cargs m_c0 m_c1 m_t0 m_t1 m_rc
	local m_bytes m_err m_gbps m_retr m_line
	m_json=$T/$m_b-$m_d-$m_m-$m_r.json
	case $m_d in
	g2p | p2g)
		server_start "$ROUTER" "$PEER4"
		m_cns=$GUEST
		m_cargs=(-c "$PEER4")
		[ "$m_d" = p2g ] && m_cargs+=(-R)
		;;
	fwd)
		server_start "$GUEST" "$ADDR4"
		m_cns=$ROUTER
		m_cargs=(-c "$ADDR4")
		;;
	esac
	m_c0=$(cpu_ticks "$PASST_PID")
	m_t0=$(date +%s%N)
	m_rc=0
	timeout $((DURATION + 30)) ip netns exec "$m_cns" iperf3 \
		"${m_cargs[@]}" -p "$PORT" -t "$DURATION" --connect-timeout 5000 \
		-J >"$m_json" 2>"$T/iperf3-client.err" || m_rc=$?
	m_t1=$(date +%s%N)
	if ! alive "$PASST_PID"; then
		server_stop
		log "  $m_b $m_d mtu $m_m #$m_r: DAEMON DIED: $(tail -n 3 "$PASST_ERR")"
		echo "$m_b $m_d $m_m FAIL FAIL" >>"$RES"
		return 1
	fi
	m_c1=$(cpu_ticks "$PASST_PID")
	server_stop

	m_bytes=$(jq -r '.end.sum_received.bytes // 0' "$m_json" 2>/dev/null) ||
		m_bytes=0
	m_err=$(jq -r '.error // empty' "$m_json" 2>/dev/null) ||
		m_err="no valid JSON (iperf3 status $m_rc, killed after timeout?)"
	if [ "$m_rc" -ne 0 ] || [ -n "$m_err" ] || [ "$m_bytes" = 0 ]; then
		log "  $m_b $m_d mtu $m_m #$m_r: FAILED (status $m_rc," \
			"$(((m_t1 - m_t0) / 1000000)) ms): ${m_err:-no data}" \
			"$(head -c 300 "$T/iperf3-client.err")"
		echo "$m_b $m_d $m_m FAIL FAIL" >>"$RES"
		return 0
	fi
	m_gbps=$(jq -r '.end.sum_received.bits_per_second / 1e9' "$m_json")
	m_retr=$(jq -r '.end.sum_sent.retransmits // "-"' "$m_json")
	m_line=$(awk -v b="$m_bytes" -v c=$((m_c1 - m_c0)) -v t="$TCK" \
		-v g="$m_gbps" 'BEGIN {
			printf "%.3f %.3f", g, (c / t) / (b / 1073741824) }')
	log "  $m_b $m_d mtu $m_m #$m_r: $m_line (Gbit/s, CPU s/GiB)," \
		"$(awk -v b="$m_bytes" 'BEGIN { printf "%.2f", b / 1073741824 }') GiB," \
		"daemon CPU $(awk -v c=$((m_c1 - m_c0)) -v t="$TCK" \
			'BEGIN { printf "%.2f", c / t }') s," \
		"sender retransmits $m_retr"
	echo "$m_b $m_d $m_m $m_line" >>"$RES"
}

# run_backend NAME BINARY MTU: daemon, bridge, DHCP, then every measurement
run_backend() {
	local rb_name=$1 rb_bin=$2 rb_mtu=$3 rb_args rb_lmtu rb_ok rb_d rb_n rb_r
	rb_args=(-t "$PORT" -m "$rb_mtu")
	# Upstream passt drops to nobody when run as root, and then can't write
	# the pid file in our 0700 directory: keep root (it still sandboxes)
	[ "$rb_name" = upstream ] && rb_args+=(--runas 0)
	PASST=$rb_bin
	PASST_ERR=$T/$rb_name-$rb_mtu.err
	rm -f "$SOCK" "$PIDFILE"
	passt_start "${rb_args[@]}"
	bridge_start "tb-$rb_name-$rb_mtu"
	dhcp4 "$T/lease-$rb_name-$rb_mtu"
	rb_lmtu=$(lease_get "$T/lease-$rb_name-$rb_mtu" mtu)
	if [ "$rb_lmtu" != "$rb_mtu" ]; then
		log "  warning: $rb_name: DHCP MTU '$rb_lmtu', expected $rb_mtu: using $rb_mtu"
		rb_lmtu=$rb_mtu
	fi
	ip -n "$GUEST" link set tap0 mtu "$rb_lmtu"
	dhcp4_apply "$T/lease-$rb_name-$rb_mtu"
	wait_for "ns $GUEST ping -c1 -W1 $PEER4" 10 ||
		log "  warning: $rb_name: guest can't ping $PEER4"

	rb_ok=1
	for rb_d in g2p p2g fwd; do
		rb_n=$REPS
		[ "$rb_d" = fwd ] && rb_n=$FWD_REPS
		for rb_r in $(seq 1 "$rb_n"); do
			measure "$rb_name" "$rb_d" "$rb_mtu" "$rb_r" || { rb_ok=0; break 2; }
		done
	done

	bridge_stop
	if [ "$rb_ok" = 1 ]; then
		kill -TERM "$PASST_PID" 2>/dev/null || :
		wait_for "! alive $PASST_PID" 10 || kill -KILL "$PASST_PID"
		wait "$PASST_PID" 2>/dev/null || :
	fi
	rm -f "$SOCK" "$PIDFILE"
}

# median BACKEND DIR MTU FIELD: median of the successful runs, "FAIL" if
# none; FIELD 4 is Gbit/s, 5 is CPU s/GiB
median() {
	awk -v b="$1" -v d="$2" -v m="$3" -v f="$4" \
		'$1 == b && $2 == d && $3 == m && $f != "FAIL" { print $f }' \
		"$RES" | sort -g | awk '{ v[NR] = $1 } END {
			if (!NR) { print "FAIL"; exit }
			if (NR % 2) print v[(NR + 1) / 2]
			else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

runs_ok() {
	awk -v b="$1" -v d="$2" -v m="$3" '$1 == b && $2 == d && $3 == m {
		n++; if ($4 != "FAIL") ok++ } END { printf "%d/%d", ok, n }' "$RES"
}

: >"$RES"
setup_ns
START=$(date +%s)
for _b in $BACKENDS; do
	case $_b in
	ours) _bin=$OURS ;;
	upstream) _bin=$UPSTREAM ;;
	*) fail "unknown back-end $_b" ;;
	esac
	for _m in $MTUS; do
		log "$_b ($_bin), MTU $_m"
		run_backend "$_b" "$_bin" "$_m"
	done
done

printf '\n%-9s | %-9s | %5s | %8s | %10s | %s\n' \
	back-end direction MTU Gbit/s "CPU s/GiB" runs
printf '%s\n' "----------+-----------+-------+----------+------------+-----"
for _b in $BACKENDS; do
	for _m in $MTUS; do
		for _d in g2p p2g fwd; do
			grep -q "^$_b $_d $_m " "$RES" || continue
			printf '%-9s | %-9s | %5s | %8s | %10s | %s\n' "$_b" "$_d" \
				"$_m" "$(median "$_b" "$_d" "$_m" 4)" \
				"$(median "$_b" "$_d" "$_m" 5)" "$(runs_ok "$_b" "$_d" "$_m")"
		done
	done
done
echo "(g2p guest->peer, p2g peer->guest via iperf3 -R, fwd peer->guest" \
	"through the forwarded port; medians)"

if [[ " $BACKENDS " == *" ours "* && " $BACKENDS " == *" upstream "* ]]; then
	echo
	for _m in $MTUS; do
		for _d in g2p p2g fwd; do
			_to=$(median ours "$_d" "$_m" 4)
			_tu=$(median upstream "$_d" "$_m" 4)
			_co=$(median ours "$_d" "$_m" 5)
			_cu=$(median upstream "$_d" "$_m" 5)
			awk -v d="$_d" -v m="$_m" -v to="$_to" -v tu="$_tu" \
				-v co="$_co" -v cu="$_cu" 'function r(a, b) {
					if (a == "FAIL" || b == "FAIL" || b + 0 == 0)
						return "n/a"
					return sprintf("%.2f", a / b) }
				BEGIN { printf "ours/upstream %s MTU %s: throughput %s," \
					" CPU/GiB %s\n", d, m, r(to, tu), r(co, cu) }'
		done
	done
fi
log "total time: $(($(date +%s) - START)) s"
