#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ns.sh - the kernel-as-guest benchmark: our daemon against upstream passt
# with the Linux kernel of a network namespace as the guest, so no
# emulated CPU limits the rate (the closer picture of a KVM guest).
#
# Usage: bench/ns.sh          (as root, after make; make bench runs it)
#
# Topology: test/integration/lib.sh's ROUTER (the peer 203.0.113.7, with
# the iperf3 and sockperf servers) and HOST (both daemons, side by side),
# plus one guest namespace per back-end (GUEST for ours, GUEST-up for
# upstream). In stream mode tapbridge connects the guest's tap0 to the
# daemon's UNIX socket; in vhost-user mode vu-front (our vhost-user
# front-end, bridge case) does, through virtqueues in shared memory,
# laying the guest's frames out as Linux does (-P: large ones in pieces
# where checksum offload was negotiated).
#
# For each mode and MTU, both back-ends are brought up at once and their
# runs alternate (ours first in odd runs, upstream first in even ones),
# so a change in the machine's load hits both alike. Per back-end:
#   idle  VmRSS once the guest has its lease, before any traffic
#   g2p   guest -> peer, iperf3 client in the guest; BENCH_RUNS runs
#   p2g   peer -> guest, the same with -R
#         (throughput, and the daemon's CPU seconds per GiB received)
#   g2p, p2g again, BENCH_SC_RUNS runs with the system call counter
#         attached: system calls per GiB only
#   rr    sockperf ping-pong, TCP, 64 bytes, one in flight; BENCH_RUNS
#   UDP bulk and RR, TCP CRR, many connections, RR beside a bulk flow:
#         bench/dims.sh, BENCH_DIMS_RUNS
#   peak  VmHWM at the end
# Before all that, BENCH_RUNS runs per direction of the bare socket
# figure (bare(), BENCH_BARE=0 leaves it out): what a process that only
# moves the bytes through its socket spends, the floor under every
# back-end's CPU per GiB (bench/report.sh's second table).
# The TCP metrics cache is off in every namespace (the back-ends share
# the peer and the source address).
#
# BENCH_PACE_US=N makes the guest a slow sender: the bridge hands the
# daemon at most one frame every N microseconds (tapbridge and vu-front
# -d), as a guest with an emulated CPU does (about 300 with 64 KiB frames
# under TCG), without QEMU's noise.
#
# BENCH_SHAPE="QDISC..." puts a qdisc on the host's link to the peer
# (tc qdisc add dev h0 root QDISC...), a slower link than the guest:
# "tbf rate 3gbit burst 64kb latency 200us" is the one that caught input
# coalescing polling a guest that waited for our window
# (doc/bench-history.md).
#
# BENCH_PIN=1 puts the daemons on the last CPU and everything else the
# harness starts (bridges, iperf3, sockperf) on the others, with taskset:
# where the scheduler places the daemon next to its guest's bridge or the
# peer in one run and apart in the next, a back-end's throughput can come
# out at 6 Gbit/s in one run and 10 in the next (softirq work still goes
# where the packets go). Needs two CPUs or more; off by default, so the
# figures stay comparable with earlier runs.
#
# Environment: see bench/lib.sh (BENCH_*, UPSTREAM); PASST (our daemon,
# default build/passt), TOOLS as in test/integration/lib.sh; PT_KEEP=1
# keeps the temporary directory (iperf3 JSON, daemon logs).
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
BENCH_OURS=$PASST

# lib.sh derives TOP from $0 for its defaults only: PASST and TOOLS are set
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=test/integration/lib.sh
. "$ROOT/test/integration/lib.sh"
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
# shellcheck source=bench/dims.sh
. "$BENCH/dims.sh"
BENCH_HARNESS=ns

need iperf3 jq busybox ss awk
[ "$(id -u)" -eq 0 ] || skip "not root"
[ -x "$BENCH_OURS" ] || fail "no daemon at $BENCH_OURS (make)"
[ -x "$TOOLS/tapbridge" ] && [ -x "$TOOLS/vu-front" ] &&
	[ -x "$TOOLS/connload" ] ||
	fail "no tapbridge, vu-front or connload in $TOOLS (make tools)"
bench_upstream
sc_probe
SOCKPERF=1
command -v sockperf >/dev/null || {
	log "warning: no sockperf (apt-get install sockperf): no latency"
	SOCKPERF=0
}

# PIN_D, PIN_H: command prefixes for the daemons and for the rest
PIN_D="" PIN_H=""
if [ "${BENCH_PIN:-0}" = 1 ]; then
	b_last=$(($(nproc) - 1))
	if [ "$b_last" -ge 1 ]; then
		PIN_D="taskset -c $b_last"
		PIN_H="taskset -c 0-$((b_last - 1))"
		log "pinned: daemons on CPU $b_last," \
			"the harness on 0-$((b_last - 1))"
	else
		log "warning: BENCH_PIN=1 needs two CPUs: not pinned"
	fi
fi

# BENCH_PACE_US: a slow guest, the bridges hand the daemon at most one
# frame every that many microseconds (as an emulated guest does)
PACE=
if [ -n "${BENCH_PACE_US:-}" ]; then
	PACE="-d $BENCH_PACE_US"
	log "slow guest: at most one frame every $BENCH_PACE_US us" \
		"to the daemon"
fi

GUEST_UP=$PT_ID-guest-up
declare -A GNS DPID BPID DERR UP
GNS[ours]=$GUEST
GNS[upstream]=$GUEST_UP

# The second guest namespace goes with lib.sh's clean-up
bench_cleanup() {
	_brc=$?
	set +e
	for _pid in $(ip netns pids "$GUEST_UP" 2>/dev/null); do
		kill -KILL "$_pid" 2>/dev/null
	done
	ip netns del "$GUEST_UP" 2>/dev/null
	(exit "$_brc")
	cleanup
}
trap bench_cleanup EXIT

# guest_ns_add NS: an empty guest namespace, like lib.sh's GUEST
guest_ns_add() {
	ip netns add "$1"
	ip -n "$1" link set lo up
	ns "$1" sysctl -qw net.ipv6.conf.all.forwarding=0
	ns "$1" sysctl -qw net.ipv6.conf.default.accept_ra=1
}

# server_start: one-off iperf3 server on the peer, waits until it listens
server_start() {
	# shellcheck disable=SC2086
	ip netns exec "$ROUTER" $PIN_H iperf3 -s -1 -B "$PEER4" \
		-p "$BENCH_PORT" >"$T/iperf3-server.log" 2>&1 &
	SERVER_PID=$!
	track "$SERVER_PID"
	wait_for "ns $ROUTER ss -Hltn 'sport = :$BENCH_PORT' | grep -q ." 10 ||
		fail "iperf3 server did not start"
}

server_stop() {
	if alive "$SERVER_PID"; then
		kill -KILL "$SERVER_PID" 2>/dev/null || :
	fi
	wait "$SERVER_PID" 2>/dev/null || :
}

# up BACKEND MODE MTU: daemon, bridge, lease, MTU, route; returns 1 (with
# a log line) if any of it fails
up() {
	local u_b=$1 u_mode=$2 u_mtu=$3 u_g=${GNS[$1]} u_sock u_bin u_lmtu
	u_sock=$T/$u_b.socket
	u_bin=$(bench_bin "$u_b")
	DERR[$u_b]=$T/$u_b-$u_mode-$u_mtu.err
	rm -f "$u_sock" "$T/$u_b.pid"
	# shellcheck disable=SC2046,SC2086
	ip netns exec "$HOST" $PIN_D env $(bench_env "$u_b") "$u_bin" -f \
		-s "$u_sock" \
		-P "$T/$u_b.pid" \
		$(bench_args "$u_b" "$u_mode" "$u_mtu") \
		>"$T/$u_b.out" 2>"${DERR[$u_b]}" &
	DPID[$u_b]=$!
	track "${DPID[$u_b]}"
	if ! wait_for "[ -S '$u_sock' ] || ! alive ${DPID[$u_b]}" 10 ||
	   ! alive "${DPID[$u_b]}"; then
		log "  $u_b: daemon did not start: $(tail -n 3 "${DERR[$u_b]}")"
		return 1
	fi
	if [ "$u_mode" = stream ]; then
		# shellcheck disable=SC2086
		ip netns exec "$u_g" $PIN_H "$TOOLS/tapbridge" -r 5 $PACE \
			"$u_sock" 2>"$T/$u_b-bridge.err" &
	else
		# shellcheck disable=SC2086
		ip netns exec "$u_g" $PIN_H "$TOOLS/vu-front" -r 5 -O -P -e \
			$PACE -m "$u_mtu" "$u_sock" bridge \
			2>"$T/$u_b-bridge.err" &
	fi
	BPID[$u_b]=$!
	track "${BPID[$u_b]}"
	if ! wait_for "grep -q -e 'tapbridge: connected' \
		-e 'bridge: connected' '$T/$u_b-bridge.err'" 10; then
		log "  $u_b: bridge did not connect: $(cat "$T/$u_b-bridge.err")"
		return 1
	fi
	# lib.sh's DHCP client, on this back-end's guest (a subshell: its
	# fail ends only this)
	if ! (GUEST=$u_g && dhcp4 "$T/lease-$u_b"); then
		log "  $u_b: no DHCP lease"
		return 1
	fi
	u_lmtu=$(lease_get "$T/lease-$u_b" mtu)
	[ "$u_lmtu" = "$u_mtu" ] ||
		log "  warning: $u_b: DHCP MTU '$u_lmtu', expected $u_mtu"
	ip -n "$u_g" link set tap0 mtu "$u_mtu"
	(GUEST=$u_g && dhcp4_apply "$T/lease-$u_b") || return 1
	ns "$u_g" sysctl -qw net.ipv4.tcp_no_metrics_save=1
	if ! wait_for "ns $u_g ping -c1 -W1 $PEER4" 10; then
		log "  $u_b: the guest can't ping $PEER4"
		return 1
	fi
	log "  $u_b: daemon pid ${DPID[$u_b]} ($(cat "/proc/${DPID[$u_b]}/comm")," \
		"$(ls "/proc/${DPID[$u_b]}/task" | wc -l) thread(s))"
}

# down BACKEND: stop the bridge and the daemon (upstream leaves its socket
# and pid file behind: removed)
down() {
	local d_p
	for d_p in "${BPID[$1]:-}" "${DPID[$1]:-}"; do
		[ -n "$d_p" ] || continue
		kill -TERM "$d_p" 2>/dev/null || :
		wait_for "! alive $d_p" 10 || kill -KILL "$d_p" 2>/dev/null || :
		wait "$d_p" 2>/dev/null || :
	done
	BPID[$1]=
	DPID[$1]=
	rm -f "$T/$1.socket" "$T/$1.pid"
}

# alive_or_down BACKEND MODE MTU: false (and the back-end marked down) if
# its daemon died
alive_or_down() {
	alive "${DPID[$1]}" && return 0
	log "  $1 $2 $3: DAEMON DIED: $(tail -n 3 "${DERR[$1]}")"
	UP[$1]=0
	return 1
}

# tp BACKEND MODE MTU DIR RUN cpu|sc: one iperf3 run, records its figures
tp() {
	local t_b=$1 t_mode=$2 t_mtu=$3 t_d=$4 t_r=$5 t_kind=$6 t_json t_rc=0
	local t_c0=0 t_c1=0 t_w0=0 t_w1=0 t_wg t_n=FAIL t_bytes t_err t_gbps
	local t_rev=
	t_json=$T/$t_b-$t_mode-$t_mtu-$t_d-$t_kind-$t_r.json
	[ "$t_d" = p2g ] && t_rev=-R
	server_start
	if [ "$t_kind" = sc ]; then
		sc_start "${DPID[$t_b]}" || log "  $t_b: can't count system calls"
	elif [ "$t_kind" = prof ]; then
		prof_start "${DPID[$t_b]}"
	else
		t_c0=$(cpu_ticks "${DPID[$t_b]}")
		t_w0=$(ctx_switches "${DPID[$t_b]}")
	fi
	# shellcheck disable=SC2086
	timeout $((BENCH_SECS + 30)) ip netns exec "${GNS[$t_b]}" \
		$PIN_H iperf3 -c "$PEER4" -p "$BENCH_PORT" -t "$BENCH_SECS" \
		$t_rev -P "${BENCH_PARALLEL:-1}" \
		--connect-timeout 5000 -J >"$t_json" 2>"$T/iperf3-client.err" ||
		t_rc=$?
	if [ "$t_kind" = sc ]; then
		t_n=$(sc_stop)
	elif [ "$t_kind" = prof ]; then
		prof_stop "$t_b-$t_mode-$t_mtu-$t_d"
		server_stop
		return 0
	elif alive "${DPID[$t_b]}"; then
		t_c1=$(cpu_ticks "${DPID[$t_b]}")
		t_w1=$(ctx_switches "${DPID[$t_b]}")
	fi
	server_stop
	if ! alive_or_down "$t_b" "$t_mode" "$t_mtu"; then
		rec "$t_mode" "$t_mtu" "$t_d" "$t_kind" "$t_b" FAIL
		return 0
	fi
	t_bytes=$(jq -r '.end.sum_received.bytes // 0' "$t_json" 2>/dev/null) ||
		t_bytes=0
	t_err=$(jq -r '.error // empty' "$t_json" 2>/dev/null) ||
		t_err="no valid JSON (iperf3 status $t_rc)"
	if [ "$t_rc" -ne 0 ] || [ -n "$t_err" ] || [ "$t_bytes" = 0 ]; then
		log "  $t_b $t_d #$t_r ($t_kind): FAILED (status $t_rc):" \
			"${t_err:-no data} $(head -c 300 "$T/iperf3-client.err")"
		if [ "$t_kind" = sc ]; then
			rec "$t_mode" "$t_mtu" "$t_d" sc "$t_b" FAIL
		else
			rec "$t_mode" "$t_mtu" "$t_d" gbps "$t_b" FAIL
			rec "$t_mode" "$t_mtu" "$t_d" cpu "$t_b" FAIL
			rec "$t_mode" "$t_mtu" "$t_d" wake "$t_b" FAIL
		fi
		return 0
	fi
	t_gbps=$(jq -r '.end.sum_received.bits_per_second / 1e9' "$t_json")
	if [ "$t_kind" = sc ]; then
		[ "$t_n" = FAIL ] || t_n=$(per_gib "$t_n" "$t_bytes")
		rec "$t_mode" "$t_mtu" "$t_d" sc "$t_b" "$t_n"
		log "  $t_b $t_d #$t_r: $t_n system calls/GiB ($BENCH_SC_TOOL)"
		t_err=$(sc_calls "$t_bytes")
		[ -z "$t_err" ] || log "    by call, per GiB: $t_err"
		return 0
	fi
	rec "$t_mode" "$t_mtu" "$t_d" gbps "$t_b" "$t_gbps"
	rec "$t_mode" "$t_mtu" "$t_d" cpu "$t_b" \
		"$(per_gib "$(ticks_s $((t_c1 - t_c0)))" "$t_bytes")"
	t_wg=$(per_gib $((t_w1 - t_w0)) "$t_bytes")
	rec "$t_mode" "$t_mtu" "$t_d" wake "$t_b" "$t_wg"
	log "  $t_b $t_d #$t_r: $t_gbps Gbit/s," \
		"$(awk -v b="$t_bytes" 'BEGIN { printf "%.2f", b / 1073741824 }')" \
		"GiB, daemon CPU $(ticks_s $((t_c1 - t_c0))) s," \
		"wake-ups/GiB ${t_wg%.*}," \
		"retransmits $(jq -r '.end.sum_sent.retransmits // "-"' "$t_json")"
}

# rr BACKEND MODE MTU RUN: one sockperf ping-pong run, records the RTT
rr() {
	local r_b=$1 r_mode=$2 r_mtu=$3 r_r=$4 r_out r_rc=0 r_p50
	r_out=$T/$r_b-$r_mode-$r_mtu-rr-$r_r.out
	# shellcheck disable=SC2086
	timeout $((BENCH_LAT_SECS + 30)) ip netns exec "${GNS[$r_b]}" \
		$PIN_H sockperf pp --tcp -i "$PEER4" -p "$BENCH_SP_PORT" \
		-t "$BENCH_LAT_SECS" -m 64 >"$r_out" 2>&1 || r_rc=$?
	alive_or_down "$r_b" "$r_mode" "$r_mtu" || r_rc=1
	sed -i 's/\x1b\[[0-9;]*m//g' "$r_out"
	# sockperf's latency is half the round trip
	r_p50=$(sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' "$r_out")
	if [ "$r_rc" -ne 0 ] || [ -z "$r_p50" ]; then
		log "  $r_b rr #$r_r: FAILED (status $r_rc):" \
			"$(grep -i -m 2 -e error -e fail "$r_out" | tr '\n' ' ')"
		rec "$r_mode" "$r_mtu" rr rtt "$r_b" FAIL
		return 0
	fi
	r_p50=$(awk -v p="$r_p50" 'BEGIN { printf "%.1f\n", 2 * p }')
	rec "$r_mode" "$r_mtu" rr rtt "$r_b" "$r_p50"
	log "  $r_b rr #$r_r: RTT p50 $r_p50 us"
}

# bare DIR RUN: one run of the bare socket figure (test/tools/bulk): a
# process in HOST, placed as the daemons are, that only receives (p2g)
# or sends (g2p) BENCH_SECS of bulk data from or to the peer, over the
# path the daemons' sockets take, 1 MiB per call; records its CPU per GiB
# and throughput as back-end "bare", mode and MTU "-"
bare() {
	local b_d=$1 b_r=$2 b_peer=send b_host=recv b_pid b_out b_rc=0
	local b_bytes b_secs b_cpu b_gbps
	[ "$b_d" = g2p ] && b_peer=recv b_host=send
	rm -f "$T/bulk.ready"
	# shellcheck disable=SC2086
	timeout $((BENCH_SECS + 30)) ip netns exec "$ROUTER" $PIN_H \
		"$TOOLS/bulk" -t "$BENCH_SECS" -r "$T/bulk.ready" \
		listen "$PEER4" "$BENCH_PORT" "$b_peer" >"$T/bulk-peer.out" \
		2>&1 &
	b_pid=$!
	track "$b_pid"
	wait_for "[ -e '$T/bulk.ready' ] || ! alive $b_pid" 10 || :
	# shellcheck disable=SC2086
	b_out=$(timeout $((BENCH_SECS + 30)) ip netns exec "$HOST" $PIN_D \
		"$TOOLS/bulk" -t "$BENCH_SECS" connect "$PEER4" \
		"$BENCH_PORT" "$b_host" 2>&1) || b_rc=$?
	wait "$b_pid" || b_rc=$((b_rc ? b_rc : $?))
	b_bytes=$(echo "$b_out" | sed -n 's/^bytes=\([0-9]*\) .*/\1/p')
	b_secs=$(echo "$b_out" | sed -n 's/.* secs=\([0-9.]*\) .*/\1/p')
	b_cpu=$(echo "$b_out" | sed -n 's/.* cpu=\([0-9.]*\)$/\1/p')
	if [ "$b_rc" -ne 0 ] || [ -z "$b_bytes" ] || [ "$b_bytes" = 0 ]; then
		log "  bare socket $b_d #$b_r: FAILED (status $b_rc):" \
			"$(echo "$b_out" | head -c 300)" \
			"$(head -c 300 "$T/bulk-peer.out")"
		rec - - "$b_d" gbps bare FAIL
		rec - - "$b_d" cpu bare FAIL
		return 0
	fi
	b_gbps=$(awk -v b="$b_bytes" -v s="$b_secs" \
		'BEGIN { printf "%.4f\n", b * 8 / s / 1e9 }')
	b_cpu=$(per_gib "$b_cpu" "$b_bytes")
	rec - - "$b_d" gbps bare "$b_gbps"
	rec - - "$b_d" cpu bare "$b_cpu"
	log "  bare socket $b_d #$b_r: $b_cpu s/GiB, $b_gbps Gbit/s"
}

# order RUN: the back-ends in this run's order (alternating)
order() {
	local o_b o_l=
	for o_b in $BENCH_BACKENDS; do
		[ "${UP[$o_b]}" = 1 ] || continue
		if [ $(($1 % 2)) = 1 ]; then o_l="$o_l $o_b"; else o_l="$o_b $o_l"; fi
	done
	echo "$o_l"
}

# config MODE MTU: both back-ends up, all the runs, both down
config() {
	local c_mode=$1 c_mtu=$2 c_b c_r c_d c_sp=0
	for c_b in $BENCH_BACKENDS; do
		UP[$c_b]=1
		if ! up "$c_b" "$c_mode" "$c_mtu"; then
			UP[$c_b]=0
			down "$c_b"
			continue
		fi
		rec "$c_mode" "$c_mtu" idle rss "$c_b" \
			"$(status_mib "${DPID[$c_b]}" VmRSS)"
	done
	for c_r in $(seq 1 "$BENCH_RUNS"); do
		for c_b in $(order "$c_r"); do
			for c_d in g2p p2g; do
				[ "${UP[$c_b]}" = 1 ] || continue
				tp "$c_b" "$c_mode" "$c_mtu" "$c_d" "$c_r" cpu
			done
		done
	done
	if [ "$BENCH_SC_TOOL" != none ]; then
		for c_r in $(seq 1 "$BENCH_SC_RUNS"); do
			for c_b in $(order "$c_r"); do
				for c_d in g2p p2g; do
					[ "${UP[$c_b]}" = 1 ] || continue
					tp "$c_b" "$c_mode" "$c_mtu" "$c_d" "$c_r" sc
				done
			done
		done
	fi
	if [ "${BENCH_PROFILE:-0}" = 1 ]; then
		for c_b in $(order 1); do
			for c_d in g2p p2g; do
				[ "${UP[$c_b]}" = 1 ] || continue
				tp "$c_b" "$c_mode" "$c_mtu" "$c_d" 1 prof
			done
		done
	fi
	if [ "$SOCKPERF" = 1 ]; then
		# shellcheck disable=SC2086
		ip netns exec "$ROUTER" $PIN_H sockperf sr --tcp -i "$PEER4" \
			-p "$BENCH_SP_PORT" >"$T/sockperf-server.out" 2>&1 &
		c_sp=$!
		track "$c_sp"
		wait_for "ns $ROUTER ss -Hltn 'sport = :$BENCH_SP_PORT' |
			  grep -q ." 10 || fail "sockperf server did not start"
		for c_r in $(seq 1 "$BENCH_RUNS"); do
			for c_b in $(order "$c_r"); do
				rr "$c_b" "$c_mode" "$c_mtu" "$c_r"
			done
		done
		kill -KILL "$c_sp" 2>/dev/null || :
		wait "$c_sp" 2>/dev/null || :
	fi
	# The peak of the throughput and latency runs: before the many
	# connections of bench/dims.sh
	for c_b in $BENCH_BACKENDS; do
		[ "${UP[$c_b]}" = 1 ] &&
			rec "$c_mode" "$c_mtu" peak hwm "$c_b" \
				"$(status_mib "${DPID[$c_b]}" VmHWM)"
	done
	dims "$c_mode" "$c_mtu"
	for c_b in $BENCH_BACKENDS; do
		down "$c_b"
	done
}

setup_ns
guest_ns_add "$GUEST_UP"
for _n in "$ROUTER" "$HOST"; do
	ns "$_n" sysctl -qw net.ipv4.tcp_no_metrics_save=1
done
if [ -n "${BENCH_SHAPE:-}" ]; then
	# shellcheck disable=SC2086
	ns "$HOST" tc qdisc add dev h0 root $BENCH_SHAPE ||
		fail "BENCH_SHAPE: tc refused '$BENCH_SHAPE'"
	log "the host's link to the peer: $BENCH_SHAPE"
fi
START=$(date +%s)
if [ "${BENCH_BARE:-1}" = 1 ]; then
	log "bare socket: what a process that only moves the bytes spends"
	for _r in $(seq 1 "$BENCH_RUNS"); do
		bare p2g "$_r"
		bare g2p "$_r"
	done
fi
for _mode in $BENCH_MODES; do
	case $_mode in stream | vhost-user) ;; *) fail "unknown mode $_mode" ;; esac
	for _m in $BENCH_MTUS; do
		log "kernel-as-guest, $_mode, MTU $_m: $BENCH_BACKENDS"
		config "$_mode" "$_m"
		for _b in $BENCH_BACKENDS; do
			rec_missing "$_mode" "$_m" "$_b"
		done
	done
done
log "kernel-as-guest: $(($(date +%s) - START)) s"
bench_report
