#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# qemu.sh - the real-guest benchmark: QEMU 10 boots test/guest/out
# (test/guest/build.sh) through the daemon, with the end-to-end harness
# of test/e2e/lib.sh (daemon in HOST, iperf3 and sockperf servers on the
# peer 203.0.113.7 in ROUTER, commands to the guest over its second
# serial port). The guest's CPU is emulated (TCG unless KVM is real), so
# it caps the throughput: CPU per GiB is the figure to compare.
#
# Usage: bench/qemu.sh          (as root, after make; make bench runs it)
#
# For each mode (stream, vhost-user), MTU (65520, 1500: the daemon gets
# -m MTU, the guest takes it from DHCP) and back-end (ours and Debian 13's
# upstream passt), guest boots in the order ours, upstream, ours: ours
# runs the first half of the runs, upstream all of them, ours the rest
# (see part() below). In each boot, as in bench/ns.sh (* only in a
# back-end's first boot):
#   idle* VmRSS once the guest is up, before any traffic
#   g2p   guest -> peer, iperf3 client in the guest; the boot's runs
#   p2g   peer -> guest, the same with -R
#   g2p, p2g again*, BENCH_SC_RUNS runs with the system call counter on
#   g2p, p2g once more* with perf record if BENCH_PROFILE=1 (bench/ns.sh)
#   rr    TCP request/response, 64 bytes, one in flight: sockperf
#         ping-pong from the guest to a sockperf server on the peer; the
#         boot's runs
#   peak* VmHWM at the end
# CPU: the daemon's utime+stime (its whole process tree, /proc/PID/stat)
# over the run, per GiB received. Records go to BENCH_RECORDS (see
# bench/lib.sh); run alone, the script prints the table of bench/report.sh,
# then the virtio-net features each guest negotiated and notes (failures,
# stalls, warnings in the daemon's log, our daemon's frame counters).
#
# Environment: see bench/lib.sh (BENCH_*, UPSTREAM); BENCH_DIRS ("g2p
# p2g": the throughput runs' directions), BENCH_RR=0 (no round trips);
# PASST (our daemon, default build/passt), TOOLS; QEMU, E2E_ACCEL,
# E2E_MEM, GUEST_OUT as in
# test/e2e/lib.sh; PT_KEEP=1 keeps the temporary directory (daemon logs,
# consoles, iperf3 JSON).
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
BENCH_OURS=$PASST

# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=test/e2e/lib.sh
. "$ROOT/test/e2e/lib.sh"
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
BENCH_HARNESS=qemu
PORT=$BENCH_PORT
SP_PORT=$BENCH_SP_PORT
BENCH_DIRS=${BENCH_DIRS:-g2p p2g}
DURATION=$BENCH_SECS
LAT_DURATION=$BENCH_LAT_SECS

need iperf3 jq awk ss
[ "$(id -u)" -eq 0 ] || skip "not root"
[ -x "$BENCH_OURS" ] || fail "no daemon at $BENCH_OURS (make)"

bench_upstream
sc_probe

# The guest image (nothing to do when it's up to date)
TOOLS=$TOOLS "$ROOT/test/guest/build.sh" ||
	fail "test/guest/build.sh failed"
need_guest
SOCKPERF=1
if ! command -v sockperf >/dev/null; then
	log "warning: no sockperf on the host (apt-get install sockperf):" \
		"no latency figures"
	SOCKPERF=0
fi

FEAT=$T/features
NOTES=$T/notes
: >"$FEAT"
: >"$NOTES"

# note TEXT: log it now and repeat it after the tables
note() {
	log "  $*"
	echo "$*" >>"$NOTES"
}

# feat_names HEX: the virtio-net feature bits set in HEX, by name
feat_names() {
	local f_v=$(($1)) f_b f_n f_out=
	for f_b in 0:CSUM 1:GUEST_CSUM 2:CTRL_GUEST_OFFLOADS 3:MTU 5:MAC 7:GUEST_TSO4 8:GUEST_TSO6 \
		9:GUEST_ECN 10:GUEST_UFO 11:HOST_TSO4 12:HOST_TSO6 \
		13:HOST_ECN 14:HOST_UFO 15:MRG_RXBUF 16:STATUS 17:CTRL_VQ \
		18:CTRL_RX 19:CTRL_VLAN 21:GUEST_ANNOUNCE 22:MQ \
		23:CTRL_MAC_ADDR 28:INDIRECT_DESC 29:EVENT_IDX \
		30:PROTOCOL_FEATURES/LOG_ALL 32:VERSION_1 \
		33:ACCESS_PLATFORM 34:RING_PACKED 35:IN_ORDER; do
		f_n=${f_b#*:}
		if (((f_v >> ${f_b%%:*}) & 1)); then
			f_out="$f_out $f_n"
		fi
	done
	echo "${f_out# }"
}

# bits_hex BITSTRING: sysfs virtio "features" (char i = bit i) as hex
bits_hex() {
	local b_s=$1 b_i b_v=0
	for ((b_i = 0; b_i < ${#b_s} && b_i < 64; b_i++)); do
		[ "${b_s:b_i:1}" = 1 ] && b_v=$((b_v | (1 << b_i)))
	done
	printf '0x%x\n' "$b_v"
}

# server_start: one-off iperf3 server on the peer, waits until it listens
server_start() {
	bg "$ROUTER" iperf3-server /dev/null "$T/iperf3-server.out" \
		iperf3 -s -1 -B "$PEER4" -p "$PORT"
	SERVER_PID=$BG_PID
	wait_for "ns $ROUTER ss -Hltn 'sport = :$PORT' | grep -q ." 10 ||
		fail "iperf3 server did not start"
}

server_stop() {
	if alive "$SERVER_PID"; then
		kill -KILL "$SERVER_PID" 2>/dev/null || :
	fi
	wait "$SERVER_PID" 2>/dev/null || :
}

# coal_snap BACKEND: our daemon's coalescing counters, on SIGUSR1 (polls,
# frames, tries, given up, ended by the window, ended as starving the
# guest, bulk passes on wake-ups, held off), for the back-ends in BENCH_STATS_BACKENDS (default ours:
# upstream's passt would die of the signal; name upstream too when
# bench/ours-as-upstream.sh stands in for it); nothing if not ours or no
# counters came
coal_snap() {
	local s_n
	case " ${BENCH_STATS_BACKENDS:-ours} " in
	*" $1 "*) ;;
	*) return 0 ;;
	esac
	s_n=$(grep -c 'Frames from guest' "$PASST_ERR" || :)
	kill -USR1 "$DPID" 2>/dev/null || return 0
	# The frames' line comes after the coalescing line (tap_log_stats())
	wait_for "[ \$(grep -c 'Frames from guest' '$PASST_ERR') -gt $s_n ]" \
		5 || return 0
	grep 'coalescing: polled' "$PASST_ERR" | tail -n 1 |
		sed 's/.*polled//; s/[^0-9]\{1,\}/ /g'
}

# tp MODE BACKEND MTU DIR RUN cpu|sc: one iperf3 run from the guest,
# records its figures; returns 1 if the daemon died
tp() {
	local t_mode=$1 t_b=$2 t_mtu=$3 t_d=$4 t_r=$5 t_kind=$6 t_k t_rev=""
	local t_c0=0 t_c1=0 t_w0=0 t_w1=0 t_n=FAIL t_rc=0 t_json t_bytes t_err
	local t_gbps t_retr t_wg t_s0="" t_s1=""
	t_k="$t_mode $t_b $t_mtu"
	t_json=$T/$t_mode-$t_b-$t_mtu-$t_d-$t_kind-$t_r.json
	[ "$t_d" = p2g ] && t_rev=-R
	server_start
	if [ "$t_kind" = sc ]; then
		sc_start "$DPID" || note "$t_k: can't count system calls"
	elif [ "$t_kind" = prof ]; then
		prof_start "$DPID"
	else
		t_s0=$(coal_snap "$t_b")
		t_c0=$(cpu_ticks "$DPID")
		t_w0=$(ctx_switches "$DPID")
	fi
	g_run -t $((DURATION + 30)) "iperf3 -c $PEER4 -p $PORT -t $DURATION \
		$t_rev -J --connect-timeout 5000 >/tmp/iperf3.json 2>/tmp/iperf3.err
		rc=\$?
		cat /tmp/iperf3.json
		[ \$rc -eq 0 ] || cat /tmp/iperf3.err
		exit \$rc" >"$t_json" 2>&1 || t_rc=$?
	if [ "$t_kind" = sc ]; then
		t_n=$(sc_stop)
	elif [ "$t_kind" = prof ]; then
		prof_stop "qemu-$t_b-$t_mode-$t_mtu-$t_d"
		server_stop
		return 0
	elif alive "$DPID"; then
		t_c1=$(cpu_ticks "$DPID")
		t_w1=$(ctx_switches "$DPID")
		t_s1=$(coal_snap "$t_b")
	fi
	server_stop
	if ! alive "$DPID"; then
		note "$t_k $t_d #$t_r: DAEMON DIED: $(tail -n 3 "$PASST_ERR")"
		return 1
	fi
	t_bytes=$(jq -r '.end.sum_received.bytes // 0' "$t_json" 2>/dev/null) ||
		t_bytes=0
	t_err=$(jq -r '.error // empty' "$t_json" 2>/dev/null) ||
		t_err="no valid JSON: $(head -c 300 "$t_json")"
	if [ "$t_rc" -ne 0 ] || [ -n "$t_err" ] || [ "$t_bytes" = 0 ]; then
		note "$t_k $t_d #$t_r ($t_kind): FAILED (status $t_rc):" \
			"${t_err:-no data}"
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
	# Stalls: one-second intervals under a tenth of the mean
	t_err=$(jq -r '.end.sum_received.bits_per_second as $m |
		[.intervals[].sum | select(.seconds > 0.5) |
		 .bits_per_second] | [length, (map(select(. < $m / 10)) |
		 length), (min // 0) / 1e9] | @tsv' "$t_json" 2>/dev/null) ||
		t_err=
	if [ -n "$t_err" ] && [ "$(echo "$t_err" | cut -f2)" != 0 ]; then
		note "$t_k $t_d #$t_r: stall: $(echo "$t_err" | cut -f2) of" \
			"$(echo "$t_err" | cut -f1) intervals under a tenth of" \
			"the mean (slowest $(echo "$t_err" | cut -f3) Gbit/s)"
	fi
	if [ "$t_kind" = sc ]; then
		[ "$t_n" = FAIL ] || t_n=$(per_gib "$t_n" "$t_bytes")
		rec "$t_mode" "$t_mtu" "$t_d" sc "$t_b" "$t_n"
		log "  $t_k $t_d #$t_r: $t_n system calls/GiB ($BENCH_SC_TOOL)"
		t_err=$(sc_calls "$t_bytes")
		[ -z "$t_err" ] || log "    by call, per GiB: $t_err"
		return 0
	fi
	t_retr=$(jq -r '.end.sum_sent.retransmits // "-"' "$t_json")
	rec "$t_mode" "$t_mtu" "$t_d" gbps "$t_b" "$t_gbps"
	rec "$t_mode" "$t_mtu" "$t_d" cpu "$t_b" \
		"$(per_gib "$(ticks_s $((t_c1 - t_c0)))" "$t_bytes")"
	t_wg=$(per_gib $((t_w1 - t_w0)) "$t_bytes")
	rec "$t_mode" "$t_mtu" "$t_d" wake "$t_b" "$t_wg"
	log "  $t_k $t_d #$t_r: $t_gbps Gbit/s," \
		"$(awk -v b="$t_bytes" 'BEGIN { printf "%.2f", b / 1073741824 }')" \
		"GiB, daemon CPU $(ticks_s $((t_c1 - t_c0))) s," \
		"wake-ups/GiB ${t_wg%.*}," \
		"retransmits $t_retr"
	[ -z "$t_s1" ] ||
		log "    coalescing, per GiB: $(awk -v b="$t_bytes" \
		-v s0="${t_s0:-0 0 0 0 0 0 0 0 0}" -v s1="$t_s1" 'BEGIN {
		split(s0, a, " "); split(s1, z, " "); g = b / 1073741824
		for (i = 1; i <= 9; i++) d[i] = z[i] - (i in a ? a[i] : 0)
		printf "%.0f polls (%.1f frames each), %.0f bulk passes on " \
		       "wake-ups (%.0f held off); %d tries, %d given up, " \
		       "%d ended by the window, %d as starving the guest (%d confirmed)",
		       d[1] / g, d[1] ? d[2] / d[1] : 0, d[8] / g, d[9] / g,
		       d[3], d[4], d[5], d[6], d[7] }')"
}

# rr MODE BACKEND MTU RUN: one sockperf ping-pong run from the guest,
# records the round trip's median
rr() {
	local r_mode=$1 r_b=$2 r_mtu=$3 r_r=$4 r_k r_rc=0 r_out r_p50
	r_k="$r_mode $r_b $r_mtu"
	r_out=$T/$r_mode-$r_b-$r_mtu-rr-$r_r.out
	g_run -t $((LAT_DURATION + 30)) "sockperf pp --tcp -i $PEER4 \
		-p $SP_PORT -t $LAT_DURATION -m 64" >"$r_out" 2>&1 || r_rc=$?
	sed -i 's/\x1b\[[0-9;]*m//g' "$r_out"
	# sockperf's latency is half the round trip
	r_p50=$(sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' "$r_out")
	if [ "$r_rc" -ne 0 ] || [ -z "$r_p50" ]; then
		note "$r_k rr #$r_r: FAILED (status $r_rc):" \
			"$(grep -i -m 2 -e error -e fail "$r_out" | tr '\n' ' ')"
		rec "$r_mode" "$r_mtu" rr rtt "$r_b" FAIL
		return 0
	fi
	r_p50=$(awk -v p="$r_p50" 'BEGIN { printf "%.1f\n", 2 * p }')
	rec "$r_mode" "$r_mtu" rr rtt "$r_b" "$r_p50"
	log "  $r_k rr #$r_r: RTT p50 $r_p50 us"
}

# config MODE BACKEND MTU FIRST LAST ONCE: daemon, guest boot, throughput
# and latency runs FIRST to LAST; if ONCE is 1, also the figures taken
# once per back-end (idle RSS, system call counts, profiles, peak HWM)
config() {
	local c_mode=$1 c_b=$2 c_mtu=$3 c_first=$4 c_last=$5 c_once=$6
	local c_k c_f c_sp c_r c_d c_n
	c_k="$c_mode $c_b $c_mtu"
	E2E_MODE=$c_mode
	PASST=$(bench_bin "$c_b")
	PASST_ERR=$T/$c_mode-$c_b-$c_mtu.err
	rm -f "$SOCK" "$PIDFILE"
	# shellcheck disable=SC2046
	passt_start $(bench_args "$c_b" "$c_mode" "$c_mtu")
	DPID=$PASST_PID
	# ip netns exec execs the daemon: $! is it (upstream execs
	# passt.avx2 in place); the CPU figures cover its process tree
	log "  daemon pid $DPID ($(cat "/proc/$DPID/comm")," \
		"$(ls "/proc/$DPID/task" | wc -l) thread(s), tree:" \
		"$(ptree "$DPID" | tr '\n' ' '))"
	qemu_start
	guest_wait 300
	[ "$G_IP4" != none ] || fail "$c_k: guest has no IPv4 address"
	[ "$G_MTU" = "$c_mtu" ] ||
		note "$c_k: the guest's MTU is '$G_MTU', expected $c_mtu"
	c_f=$(g_run 'cat /sys/class/net/eth0/device/features' | tr -d '\r') ||
		c_f=
	if [ "$c_once" = 1 ]; then
		[ -n "$c_f" ] && echo "$c_k guest $(bits_hex "$c_f")" >>"$FEAT"
		rec "$c_mode" "$c_mtu" idle rss "$c_b" \
			"$(status_mib "$DPID" VmRSS)"
	fi

	for c_r in $(seq "$c_first" "$c_last"); do
		for c_d in $BENCH_DIRS; do
			tp "$c_mode" "$c_b" "$c_mtu" "$c_d" "$c_r" cpu || return 1
		done
	done
	if [ "$c_once" = 1 ] && [ "$BENCH_SC_TOOL" != none ]; then
		for c_r in $(seq 1 "$BENCH_SC_RUNS"); do
			for c_d in g2p p2g; do
				tp "$c_mode" "$c_b" "$c_mtu" "$c_d" "$c_r" sc ||
					return 1
			done
		done
	fi
	if [ "$c_once" = 1 ] && [ "${BENCH_PROFILE:-0}" = 1 ]; then
		for c_d in g2p p2g; do
			tp "$c_mode" "$c_b" "$c_mtu" "$c_d" 1 prof || return 1
		done
	fi

	c_sp=0
	if [ "$SOCKPERF" = 1 ] && [ "${BENCH_RR:-1}" = 1 ]; then
		if ! g_run '[ -x /bin/sockperf ]' >/dev/null; then
			note "no sockperf in the guest image: no latency"
		else
			bg "$ROUTER" sockperf-server /dev/null \
				"$T/sockperf-server.out" sockperf sr --tcp \
				-i "$PEER4" -p "$SP_PORT"
			c_sp=$BG_PID
			wait_for "ns $ROUTER ss -Hltn 'sport = :$SP_PORT' |
				  grep -q ." 10 || fail "sockperf server did not start"
		fi
	fi
	if [ "$c_sp" != 0 ]; then
		for c_r in $(seq "$c_first" "$c_last"); do
			rr "$c_mode" "$c_b" "$c_mtu" "$c_r"
		done
		kill -KILL "$c_sp" 2>/dev/null || :
		wait "$c_sp" 2>/dev/null || :
	fi
	alive "$DPID" || { note "$c_k: DAEMON DIED"; return 1; }
	[ "$c_once" = 1 ] &&
		rec "$c_mode" "$c_mtu" peak hwm "$c_b" \
			"$(status_mib "$DPID" VmHWM)"

	qemu_stop
	kill -TERM "$DPID" 2>/dev/null || :
	wait_for "! alive $DPID" 10 || kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null || :
	rm -f "$SOCK" "$PIDFILE"
	# What the daemon complained about (upstream in the foreground also
	# tries syslog, which isn't there: not worth a note)
	c_n=$(grep -c -i 'to syslog' "$PASST_ERR" || :)
	[ "$c_n" = 0 ] ||
		log "  $c_k: $c_n 'Failed to send ... to syslog' lines"
	grep -i -e warn -e error -e fail "$PASST_ERR" |
		grep -v -i -e '^debug' -e 'to syslog' | sed 's/[0-9][0-9]*/N/g' |
		sort | uniq -c | sort -rn | head -n 5 | while read -r c_f; do
		note "$c_k daemon log: $c_f"
	done
	# Our daemon's totals at exit
	c_f=$(grep 'Frames from guest' "$PASST_ERR" | tail -n 1) || :
	[ -z "$c_f" ] || note "$c_k daemon: ${c_f#info: }"
	c_f=$(grep 'interrupts to the guest' "$PASST_ERR" | tail -n 1) || :
	[ -z "$c_f" ] || note "$c_k daemon: ${c_f#info: }"
	c_f=$(grep 'coalescing: polled' "$PASST_ERR" | tail -n 1) || :
	[ -z "$c_f" ] || note "$c_k daemon: ${c_f#info: }"
	log "  $c_k: daemon log $(wc -l <"$PASST_ERR") lines"
}

# killall_tracked: what a failed configuration left running
killall_tracked() {
	kill_tracked
	rm -f "$SOCK" "$PIDFILE"
}

# part MODE BACKEND MTU FIRST LAST ONCE: one config() in a subshell (a
# failure ends that part only), logged and timed
part() {
	local p_t0 p_st
	log "QEMU, $1, $2 ($(bench_bin "$2")), MTU $3, runs $4 to $5"
	p_t0=$(date +%s)
	set +e
	(
		set -e
		config "$@"
	)
	p_st=$?
	set -e
	if [ "$p_st" -ne 0 ]; then
		note "$1 $2 $3 runs $4-$5: configuration failed (status $p_st)"
		killall_tracked
	fi
	log "  ($(($(date +%s) - p_t0)) s)"
}

# The order of the boots, with two back-ends A and B: A takes the first
# half of the runs, B all of them, A the second half (A-B-A), so that a
# load that rises or falls steadily over the minutes of a configuration
# weighs on both alike; each back-end's once-only figures come from its
# first boot
setup_ns
START=$(date +%s)
read -r _a _b _rest <<<"$BENCH_BACKENDS"
_half=$(((BENCH_RUNS + 1) / 2))
for _mode in $BENCH_MODES; do
	case $_mode in stream | vhost-user) ;; *) fail "unknown mode $_mode" ;; esac
	for _m in $BENCH_MTUS; do
		if [ -n "$_b" ] && [ -z "$_rest" ]; then
			part "$_mode" "$_a" "$_m" 1 "$_half" 1
			part "$_mode" "$_b" "$_m" 1 "$BENCH_RUNS" 1
			[ "$_half" -ge "$BENCH_RUNS" ] ||
				part "$_mode" "$_a" "$_m" $((_half + 1)) \
					"$BENCH_RUNS" 0
		else
			for _k in $BENCH_BACKENDS; do
				part "$_mode" "$_k" "$_m" 1 "$BENCH_RUNS" 1
			done
		fi
		for _k in $BENCH_BACKENDS; do
			rec_missing "$_mode" "$_m" "$_k"
		done
	done
done
log "QEMU: $(($(date +%s) - START)) s"

bench_report
# The features and notes: after the table when run alone, else to
# BENCH_NOTES (bench/run.sh puts them under its table)
{
	if [ -s "$FEAT" ]; then
		echo
		echo "virtio-net features the QEMU guest negotiated" \
			"(/sys/class/net/eth0/device/features):"
		while read -r _mode _b _m _who _hex; do
			printf '  %-10s %-8s %5s %-12s %s\n' "$_mode" "$_b" "$_m" \
				"$_hex" "$(feat_names "$_hex")"
		done <"$FEAT"
	fi
	if [ -s "$NOTES" ]; then
		echo
		echo "Notes (QEMU):"
		sed 's/^/  /' "$NOTES"
	fi
} >>"${BENCH_NOTES:-/dev/stdout}"
