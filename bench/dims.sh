# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# dims.sh - the kernel-guest harness's other dimensions (issue 52), sourced
# by bench/ns.sh, which calls dims MODE MTU once both back-ends are up for
# a configuration; each test runs BENCH_DIMS_RUNS times per back-end,
# alternating, in the same run as the throughput cells:
#
#   udp-g2p, udp-p2g  UDP bulk: iperf3 -u -b 0, datagrams of the MTU less
#                     the headers (8972 bytes at most): what the receiver
#                     got (gbps), the daemon's CPU per GiB of it (cpu), and
#                     what was lost on the way (loss, %)
#   udp-rr            UDP request/response: sockperf ping-pong, 64 bytes,
#                     one in flight: round trip p50 (rtt) and p99 (rtt99)
#   crr               TCP connection rate: connect, 1 KiB each way, close
#                     (test/tools/connload crr, against an echo server on
#                     the peer): transactions per second (tps), the
#                     daemon's CPU per transaction (cpuus, µs), round trip
#                     of a transaction p50 (rtt) and p99 (rtt99)
#   conn1k, conn10k   1,000 and 10,000 connections open at once, all of
#                     them writing to the peer for BENCH_SECS
#                     (connload conns): how many opened (open), the data
#                     moved (gbps), the daemon's CPU per GiB (cpu) and its
#                     resident memory per open connection over its idle
#                     figure (mem, KiB)
#   connmax           as many connections as the daemon takes, up to
#                     BENCH_CONN_MAX (40,000): how many opened (open)
#   rr-g2p, rr-p2g    TCP request/response beside a bulk flow: sockperf
#                     ping-pong --tcp, 64 bytes, while an iperf3 transfer
#                     runs the other way or the same: round trip p50
#                     (rtt) and p99 (rtt99); what polling, batching and
#                     deep queues cost an interactive flow
#
# The many-connection tests (conn1k, conn10k, connmax) run at the first MTU
# of BENCH_MTUS only: the MTU doesn't change what they measure.
#
# Environment: BENCH_DIMS=0 leaves all of this out; BENCH_DIMS_RUNS (3,
# 1 with BENCH_QUICK=1); BENCH_DIMS_TESTS (all of the above: a subset);
# BENCH_CONN_MAX (40000).

BENCH_DIMS_RUNS=${BENCH_DIMS_RUNS:-$([ "${BENCH_QUICK:-0}" = 1 ] && echo 1 ||
	echo 3)}
BENCH_DIMS_TESTS=${BENCH_DIMS_TESTS:-udp-g2p udp-p2g udp-rr crr conn1k \
conn10k connmax rr-g2p rr-p2g}
BENCH_CONN_MAX=${BENCH_CONN_MAX:-40000}
DIMS_PORT=7600		# connload's servers: DIMS_PORT to DIMS_PORT + 7
DIMS_PORTS=8

# dims_udp BACKEND MODE MTU g2p|p2g RUN: one UDP bulk run
dims_udp() {
	local u_b=$1 u_mode=$2 u_mtu=$3 u_d=$4 u_t=udp-$4 u_json u_rc=0
	local u_c0 u_c1 u_len u_bytes u_rev=''
	u_json=$T/$u_b-$u_mode-$u_mtu-$u_t-$5.json
	u_len=$((u_mtu - 28))
	[ "$u_len" -le 8972 ] || u_len=8972
	[ "$u_d" = p2g ] && u_rev=-R
	server_start
	u_c0=$(cpu_ticks "${DPID[$u_b]}")
	# shellcheck disable=SC2086
	timeout $((BENCH_SECS + 30)) ip netns exec "${GNS[$u_b]}" $PIN_H \
		iperf3 -c "$PEER4" -p "$BENCH_PORT" -u -b 0 -l "$u_len" \
		-t "$BENCH_SECS" $u_rev --connect-timeout 5000 -J \
		>"$u_json" 2>"$T/iperf3-client.err" || u_rc=$?
	u_c1=$(cpu_ticks "${DPID[$u_b]}")
	server_stop
	alive_or_down "$u_b" "$u_mode" "$u_mtu" || u_rc=1
	# iperf3 -u: the receiver's figures are in sum (bytes, lost_percent)
	u_bytes=$(jq -r '(.end.sum.bytes // 0) * (1 - (.end.sum.lost_percent
		// 0) / 100) | floor' "$u_json" 2>/dev/null) || u_bytes=0
	if [ "$u_rc" -ne 0 ] || [ "${u_bytes:-0}" -le 0 ]; then
		log "  $u_b $u_t #$5: FAILED (status $u_rc):" \
			"$(jq -r '.error // empty' "$u_json" 2>/dev/null)" \
			"$(head -c 200 "$T/iperf3-client.err")"
		rec "$u_mode" "$u_mtu" "$u_t" gbps "$u_b" FAIL
		rec "$u_mode" "$u_mtu" "$u_t" cpu "$u_b" FAIL
		return 0
	fi
	rec "$u_mode" "$u_mtu" "$u_t" gbps "$u_b" "$(jq -r \
		'(.end.sum.bits_per_second // 0) * (1 - (.end.sum.lost_percent
		// 0) / 100) / 1e9' "$u_json")"
	rec "$u_mode" "$u_mtu" "$u_t" cpu "$u_b" \
		"$(per_gib "$(ticks_s $((u_c1 - u_c0)))" "$u_bytes")"
	rec "$u_mode" "$u_mtu" "$u_t" loss "$u_b" \
		"$(jq -r '.end.sum.lost_percent // 0' "$u_json")"
	log "  $u_b $u_t #$5: $(jq -r '"\((.end.sum.bits_per_second // 0)
		/ 1e9 * 1000 | floor / 1000) Gbit/s sent, \(.end.sum.lost_percent
		// 0 | . * 10 | floor / 10) % lost"' "$u_json")," \
		"$(per_gib "$(ticks_s $((u_c1 - u_c0)))" "$u_bytes") s/GiB"
}

# dims_pp BACKEND MODE MTU TEST RUN [--tcp]: one sockperf ping-pong run;
# records TEST's rtt and rtt99 (sockperf prints half round trips)
dims_pp() {
	local p_b=$1 p_mode=$2 p_mtu=$3 p_t=$4 p_out p_rc=0 p_50 p_99
	p_out=$T/$p_b-$p_mode-$p_mtu-$p_t-$5.out
	# shellcheck disable=SC2086
	timeout $((BENCH_LAT_SECS + 30)) ip netns exec "${GNS[$p_b]}" \
		$PIN_H sockperf pp ${6:-} -i "$PEER4" -p "$BENCH_SP_PORT" \
		-t "$BENCH_LAT_SECS" -m 64 >"$p_out" 2>&1 || p_rc=$?
	sed -i 's/\x1b\[[0-9;]*m//g' "$p_out"
	p_50=$(sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' "$p_out")
	p_99=$(sed -n 's/.*percentile 99\.000 = *\([0-9.]*\).*/\1/p' "$p_out")
	if [ "$p_rc" -ne 0 ] || [ -z "$p_50" ] || [ -z "$p_99" ]; then
		log "  $p_b $p_t #$5: FAILED (status $p_rc):" \
			"$(grep -i -m 2 -e error -e fail "$p_out" | tr '\n' ' ')"
		rec "$p_mode" "$p_mtu" "$p_t" rtt "$p_b" FAIL
		rec "$p_mode" "$p_mtu" "$p_t" rtt99 "$p_b" FAIL
		return 0
	fi
	p_50=$(awk -v p="$p_50" 'BEGIN { printf "%.1f\n", 2 * p }')
	p_99=$(awk -v p="$p_99" 'BEGIN { printf "%.1f\n", 2 * p }')
	rec "$p_mode" "$p_mtu" "$p_t" rtt "$p_b" "$p_50"
	rec "$p_mode" "$p_mtu" "$p_t" rtt99 "$p_b" "$p_99"
	log "  $p_b $p_t #$5: RTT p50 $p_50 us, p99 $p_99 us"
}

# dims_sp_start [--tcp]: a sockperf server on the peer
dims_sp_start() {
	# shellcheck disable=SC2086
	ip netns exec "$ROUTER" $PIN_H sockperf sr ${1:-} -i "$PEER4" \
		-p "$BENCH_SP_PORT" >"$T/dims-sockperf.out" 2>&1 &
	DIMS_SP=$!
	track "$DIMS_SP"
	if [ "${1:-}" = --tcp ]; then
		wait_for "ns $ROUTER ss -Hltn 'sport = :$BENCH_SP_PORT' |
			  grep -q ." 10 || fail "sockperf server did not start"
	else
		wait_for "ns $ROUTER ss -Hlun 'sport = :$BENCH_SP_PORT' |
			  grep -q ." 10 || fail "sockperf server did not start"
	fi
}

dims_sp_stop() {
	kill -KILL "$DIMS_SP" 2>/dev/null || :
	wait "$DIMS_SP" 2>/dev/null || :
}

# dims_cl_start echo|sink: connload's server on the peer
dims_cl_start() {
	# shellcheck disable=SC2086
	ip netns exec "$ROUTER" $PIN_H "$TOOLS/connload" serve "$PEER4" \
		"$DIMS_PORT" "$DIMS_PORTS" "$1" >"$T/dims-connload.out" 2>&1 &
	DIMS_CL=$!
	track "$DIMS_CL"
	wait_for "ns $ROUTER ss -Hltn 'sport = :$DIMS_PORT' | grep -q ." 10 ||
		fail "connload server did not start"
}

dims_cl_stop() {
	kill -KILL "$DIMS_CL" 2>/dev/null || :
	wait "$DIMS_CL" 2>/dev/null || :
}

# dims_crr BACKEND MODE MTU RUN: one connection-rate run
#
# Each run goes to the next of the echo server's ports. Every transaction
# leaves a socket in TIME_WAIT (60 s) in the namespace the daemons share,
# and connect() searches the ephemeral ports past those with the same
# destination: after one run of 15,000 transactions to one port, each
# connect() there cost 3 ms of system time (measured with two bare
# namespaces, no daemon), so whichever back-end ran second was measured
# on the first one's leftovers. A destination of its own per run (and,
# should the ports come round within the minute, waiting for its
# TIME_WAIT to drain) gives every run the same start.
DIMS_CRR_N=0
dims_crr() {
	local c_b=$1 c_mode=$2 c_mtu=$3 c_out c_rc=0 c_c0 c_c1 c_tx c_s
	local c_port=$((DIMS_PORT + DIMS_CRR_N % DIMS_PORTS))
	DIMS_CRR_N=$((DIMS_CRR_N + 1))
	c_out=$T/$c_b-$c_mode-$c_mtu-crr-$4.out
	wait_for "[ \$(ns $HOST ss -Htn state time-wait \
		'dport = :$c_port' | wc -l) -lt 100 ]" 70 ||
		log "  crr: port $c_port still has sockets in TIME_WAIT"
	c_c0=$(cpu_ticks "${DPID[$c_b]}")
	# shellcheck disable=SC2086
	timeout $((BENCH_SECS + 30)) ip netns exec "${GNS[$c_b]}" $PIN_H \
		"$TOOLS/connload" -t "$BENCH_SECS" crr "$PEER4" "$c_port" \
		>"$c_out" 2>&1 || c_rc=$?
	c_c1=$(cpu_ticks "${DPID[$c_b]}")
	alive_or_down "$c_b" "$c_mode" "$c_mtu" || c_rc=1
	c_tx=$(sed -n 's/^tx=\([0-9]*\) .*/\1/p' "$c_out")
	c_s=$(sed -n 's/.* secs=\([0-9.]*\) .*/\1/p' "$c_out")
	if [ "$c_rc" -ne 0 ] || [ "${c_tx:-0}" = 0 ]; then
		log "  $c_b crr #$4: FAILED (status $c_rc): $(head -c 200 \
			"$c_out")"
		rec "$c_mode" "$c_mtu" crr tps "$c_b" FAIL
		return 0
	fi
	rec "$c_mode" "$c_mtu" crr tps "$c_b" \
		"$(awk -v n="$c_tx" -v s="$c_s" 'BEGIN { printf "%.1f", n / s }')"
	rec "$c_mode" "$c_mtu" crr cpuus "$c_b" "$(awk -v c=$((c_c1 - c_c0)) \
		-v t="$BENCH_TCK" -v n="$c_tx" \
		'BEGIN { printf "%.2f", c / t * 1e6 / n }')"
	rec "$c_mode" "$c_mtu" crr rtt "$c_b" \
		"$(sed -n 's/.* p50_us=\([0-9.]*\) .*/\1/p' "$c_out")"
	rec "$c_mode" "$c_mtu" crr rtt99 "$c_b" \
		"$(sed -n 's/.* p99_us=\([0-9.]*\)$/\1/p' "$c_out")"
	log "  $c_b crr #$4: $(cat "$c_out"), daemon CPU" \
		"$(ticks_s $((c_c1 - c_c0))) s"
}

# dims_conns BACKEND MODE MTU TEST N RUN [prof]: N connections at once, then
# data on all of them (and the daemon's memory while they're open); with
# "prof", the daemon sampled (prof_start) and nothing recorded
dims_conns() {
	local n_b=$1 n_mode=$2 n_mtu=$3 n_t=$4 n_n=$5 n_out n_rc=0 n_pid
	local n_c0 n_c1 n_rss0 n_rss1 n_open n_bytes n_s n_secs=$BENCH_SECS
	n_out=$T/$n_b-$n_mode-$n_mtu-$n_t-$6.out
	[ "$n_t" = connmax ] && n_secs=1
	rm -f "$T/cl.ready" "$T/cl.done" "$T/cl.stop"
	n_rss0=$(status_mib "${DPID[$n_b]}" VmRSS)
	# shellcheck disable=SC2086
	timeout $((n_secs + 400)) ip netns exec "${GNS[$n_b]}" $PIN_H \
		"$TOOLS/connload" -t "$n_secs" -r "$T/cl.ready" \
		-d "$T/cl.done" -s "$T/cl.stop" conns "$PEER4" "$DIMS_PORT" \
		"$DIMS_PORTS" "$n_n" >"$n_out" 2>&1 &
	n_pid=$!
	track "$n_pid"
	wait_for "[ -e '$T/cl.ready' ] || ! alive $n_pid" 60 || :
	[ "${7:-}" != prof ] || prof_start "${DPID[$n_b]}"
	n_c0=$(cpu_ticks "${DPID[$n_b]}")
	wait_for "[ -e '$T/cl.done' ] || ! alive $n_pid" $((n_secs + 30)) || :
	n_c1=$(cpu_ticks "${DPID[$n_b]}")
	[ "${7:-}" != prof ] || prof_stop "$n_b-$n_mode-$n_mtu-$n_t"
	n_rss1=$(status_mib "${DPID[$n_b]}" VmRSS)
	touch "$T/cl.stop"
	wait "$n_pid" || n_rc=$?
	alive_or_down "$n_b" "$n_mode" "$n_mtu" || n_rc=1
	n_open=$(sed -n 's/^open=\([0-9]*\) .*/\1/p' "$n_out")
	n_bytes=$(sed -n 's/.* bytes=\([0-9]*\) .*/\1/p' "$n_out")
	n_s=$(sed -n 's/.* secs=\([0-9.]*\)$/\1/p' "$n_out")
	if [ "$n_rc" -ne 0 ] || [ -z "$n_open" ]; then
		log "  $n_b $n_t #$6: FAILED (status $n_rc): $(tail -c 200 \
			"$n_out")"
		rec "$n_mode" "$n_mtu" "$n_t" open "$n_b" FAIL
		return 0
	fi
	[ "${7:-}" = prof ] || rec "$n_mode" "$n_mtu" "$n_t" open "$n_b" "$n_open"
	log "  $n_b $n_t #$6: $(tail -n 1 "$n_out"), daemon RSS $n_rss0 ->" \
		"$n_rss1 MiB, CPU $(ticks_s $((n_c1 - n_c0))) s"
	[ "$n_t" = connmax ] || [ "${7:-}" = prof ] && return 0
	if [ "$n_open" -gt 0 ] && [ "${n_bytes:-0}" -gt 0 ]; then
		rec "$n_mode" "$n_mtu" "$n_t" gbps "$n_b" "$(awk -v b="$n_bytes" \
			-v s="$n_s" 'BEGIN { printf "%.4f", b * 8 / s / 1e9 }')"
		rec "$n_mode" "$n_mtu" "$n_t" cpu "$n_b" \
			"$(per_gib "$(ticks_s $((n_c1 - n_c0)))" "$n_bytes")"
		rec "$n_mode" "$n_mtu" "$n_t" mem "$n_b" "$(awk -v a="$n_rss0" \
			-v b="$n_rss1" -v n="$n_open" \
			'BEGIN { printf "%.2f", (b - a) * 1024 / n }')"
	fi
}

# dims_rr_bulk BACKEND MODE MTU g2p|p2g RUN: TCP RR while a bulk transfer
# runs in that direction (from the same guest)
dims_rr_bulk() {
	local b_b=$1 b_mode=$2 b_mtu=$3 b_rev='' b_pid
	[ "$4" = p2g ] && b_rev=-R
	server_start
	# shellcheck disable=SC2086
	ip netns exec "${GNS[$b_b]}" $PIN_H iperf3 -c "$PEER4" \
		-p "$BENCH_PORT" -t $((BENCH_LAT_SECS + 4)) $b_rev \
		--connect-timeout 5000 >"$T/dims-bulk.out" 2>&1 &
	b_pid=$!
	track "$b_pid"
	# The transfer under way (its first second: slow start) first
	wait_for "grep -q 'sec' '$T/dims-bulk.out'" 10 || :
	dims_pp "$b_b" "$b_mode" "$b_mtu" "rr-$4" "$5" --tcp
	wait "$b_pid" 2>/dev/null || :
	server_stop
}

# dims_has TEST: is TEST in BENCH_DIMS_TESTS?
dims_has() {
	case " $BENCH_DIMS_TESTS " in *" $1 "*) return 0 ;; esac
	return 1
}

# dims MODE MTU: every test above, on the back-ends that are up
dims() {
	local d_mode=$1 d_mtu=$2 d_r d_b d_d d_t d_first
	[ "${BENCH_DIMS:-1}" = 1 ] || return 0
	d_first=${BENCH_MTUS%% *}
	log "  other dimensions ($BENCH_DIMS_RUNS runs): $BENCH_DIMS_TESTS"
	for d_r in $(seq 1 "$BENCH_DIMS_RUNS"); do
		for d_b in $(order "$d_r"); do
			for d_d in g2p p2g; do
				dims_has "udp-$d_d" || continue
				[ "${UP[$d_b]}" = 1 ] || continue
				dims_udp "$d_b" "$d_mode" "$d_mtu" "$d_d" "$d_r"
			done
		done
	done
	if dims_has udp-rr && [ "$SOCKPERF" = 1 ]; then
		dims_sp_start
		for d_r in $(seq 1 "$BENCH_DIMS_RUNS"); do
			for d_b in $(order "$d_r"); do
				[ "${UP[$d_b]}" = 1 ] || continue
				dims_pp "$d_b" "$d_mode" "$d_mtu" udp-rr "$d_r"
			done
		done
		dims_sp_stop
	fi
	if dims_has crr; then
		dims_cl_start echo
		for d_r in $(seq 1 "$BENCH_DIMS_RUNS"); do
			for d_b in $(order "$d_r"); do
				[ "${UP[$d_b]}" = 1 ] || continue
				dims_crr "$d_b" "$d_mode" "$d_mtu" "$d_r"
			done
		done
		dims_cl_stop
	fi
	if [ "$d_mtu" = "$d_first" ]; then
		dims_cl_start sink
		for d_t in conn1k:1000 conn10k:10000 \
			   "connmax:$BENCH_CONN_MAX"; do
			dims_has "${d_t%%:*}" || continue
			# BENCH_PROFILE=1: one more run each, sampled
			for d_r in $(seq 1 "$BENCH_DIMS_RUNS") \
				   $([ "${BENCH_PROFILE:-0}" = 0 ] || echo prof); do
				for d_b in $(order "${d_r/prof/1}"); do
					[ "${UP[$d_b]}" = 1 ] || continue
					# shellcheck disable=SC2046
					dims_conns "$d_b" "$d_mode" "$d_mtu" \
						"${d_t%%:*}" "${d_t#*:}" "$d_r" \
						$([ "$d_r" != prof ] || echo prof)
					# The last run's connections closed
					# on the peer before the next run
					# (a daemon may leave some behind:
					# the log says how many)
					wait_for "[ \$(ip netns exec $ROUTER ss -Htn \
						state established | wc -l) -lt 10 ]" \
						20 || log "  $(ip netns exec \
						"$ROUTER" ss -Htn state established |
						wc -l) connections still open" \
						"on the peer"
				done
			done
		done
		dims_cl_stop
	fi
	if [ "$SOCKPERF" = 1 ]; then
		dims_sp_start --tcp
		for d_d in g2p p2g; do
			dims_has "rr-$d_d" || continue
			for d_r in $(seq 1 "$BENCH_DIMS_RUNS"); do
				for d_b in $(order "$d_r"); do
					[ "${UP[$d_b]}" = 1 ] || continue
					dims_rr_bulk "$d_b" "$d_mode" "$d_mtu" \
						"$d_d" "$d_r"
				done
			done
		done
		dims_sp_stop
	fi
}
