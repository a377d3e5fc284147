#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# qemu.sh - throughput, latency and the daemon's CPU cost with a real guest:
# QEMU 10 boots test/guest/out (test/guest/build.sh) through the daemon,
# with the end-to-end harness of test/e2e/lib.sh (daemon in HOST, iperf3
# and sockperf servers on the peer 203.0.113.7 in ROUTER, commands to the
# guest over its second serial port).
#
# Usage: bench/qemu.sh          (as root, after make and .ci/setup)
#
# For each mode (vhost-user, stream), back-end (ours; upstream only in
# stream mode: Debian's 2023 passt has no vhost-user) and MTU (65520,
# 1500: the daemon gets -m MTU, the guest takes it from DHCP), one guest
# boot, then $REPS times:
#   g2p  guest -> peer   iperf3 client in the guest, server on the peer
#   p2g  peer -> guest   the same with -R
#   rr   TCP request/response, 64 bytes, one in flight: sockperf
#        ping-pong from the guest to a sockperf server on the peer
# The tables show medians. CPU: the daemon's utime+stime (its whole
# process tree, /proc/PID/stat) over the run, per GiB received for g2p
# and p2g, per request/response for rr. Under TCG the guest's CPU caps
# the throughput, so CPU per GiB is the number to compare.
#
# Environment:
#   PASST         our daemon (default build/passt)
#   UPSTREAM      upstream passt (default /usr/bin/passt; installed with
#                 apt-get if missing)
#   MODES         "vhost-user stream" (default)
#   BACKENDS      "ours upstream" (default)
#   MTUS          "65520 1500" (default)
#   DURATION      seconds per iperf3 run (default 10)
#   LAT_DURATION  seconds per sockperf run (default 5)
#   REPS          runs of each test per boot (default 3)
#   QEMU, E2E_ACCEL, E2E_MEM, GUEST_OUT as in test/e2e/lib.sh
#   PT_KEEP=1     keep the temporary directory (daemon logs, consoles)
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
OURS=$PASST
UPSTREAM=${UPSTREAM:-/usr/bin/passt}
MODES=${MODES:-vhost-user stream}
BACKENDS=${BACKENDS:-ours upstream}
MTUS=${MTUS:-65520 1500}
DURATION=${DURATION:-10}
LAT_DURATION=${LAT_DURATION:-5}
REPS=${REPS:-3}
PORT=5201
SP_PORT=11111

# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=test/e2e/lib.sh
. "$ROOT/test/e2e/lib.sh"

need iperf3 jq awk ss
[ "$(id -u)" -eq 0 ] || skip "not root"
[ -x "$OURS" ] || fail "no daemon at $OURS (make)"

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

TCK=$(getconf CLK_TCK)
RES=$T/results
FEAT=$T/features
NOTES=$T/notes
: >"$RES"
: >"$FEAT"
: >"$NOTES"

# note TEXT: log it now and repeat it after the tables
note() {
	log "  $*"
	echo "$*" >>"$NOTES"
}

# tree PID: PID and all its descendants
tree() {
	local t_c
	echo "$1"
	for t_c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		tree "$t_c"
	done
}

# cpu_ticks PID: utime + stime of PID's process tree, in clock ticks
cpu_ticks() {
	local c_p c_s=0 c_t
	for c_p in $(tree "$1"); do
		# fields after "(comm) ": state is 1, utime 12, stime 13
		c_t=$(sed 's/^.*) //' "/proc/$c_p/stat" 2>/dev/null |
			awk '{ print $12 + $13 }') || c_t=0
		c_s=$((c_s + ${c_t:-0}))
	done
	echo "$c_s"
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

# tp KEY DIR REP: one iperf3 run from the guest, appends to $RES
#   KEY DIR Gbit/s CPU-s/GiB retransmits     ("FAIL" fields if it failed)
tp() {
	local t_k=$1 t_d=$2 t_r=$3 t_rev="" t_c0 t_c1 t_rc=0 t_json t_bytes t_err
	local t_gbps t_retr t_line
	t_json=$T/$(echo "$t_k" | tr ' ' -)-$t_d-$t_r.json
	[ "$t_d" = p2g ] && t_rev=-R
	server_start
	t_c0=$(cpu_ticks "$DPID")
	g_run -t $((DURATION + 30)) "iperf3 -c $PEER4 -p $PORT -t $DURATION \
		$t_rev -J --connect-timeout 5000 >/tmp/iperf3.json 2>/tmp/iperf3.err
		rc=\$?
		cat /tmp/iperf3.json
		[ \$rc -eq 0 ] || cat /tmp/iperf3.err
		exit \$rc" >"$t_json" 2>&1 || t_rc=$?
	if ! alive "$DPID"; then
		server_stop
		note "$t_k $t_d #$t_r: DAEMON DIED: $(tail -n 3 "$PASST_ERR")"
		echo "$t_k $t_d FAIL FAIL FAIL" >>"$RES"
		return 1
	fi
	t_c1=$(cpu_ticks "$DPID")
	server_stop
	t_bytes=$(jq -r '.end.sum_received.bytes // 0' "$t_json" 2>/dev/null) ||
		t_bytes=0
	t_err=$(jq -r '.error // empty' "$t_json" 2>/dev/null) ||
		t_err="no valid JSON: $(head -c 300 "$t_json")"
	if [ "$t_rc" -ne 0 ] || [ -n "$t_err" ] || [ "$t_bytes" = 0 ]; then
		note "$t_k $t_d #$t_r: FAILED (status $t_rc): ${t_err:-no data}"
		echo "$t_k $t_d FAIL FAIL FAIL" >>"$RES"
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
	t_retr=$(jq -r '.end.sum_sent.retransmits // "-"' "$t_json")
	t_line=$(awk -v b="$t_bytes" -v c=$((t_c1 - t_c0)) -v t="$TCK" \
		-v g="$t_gbps" 'BEGIN {
			printf "%.3f %.3f", g, (c / t) / (b / 1073741824) }')
	log "  $t_k $t_d #$t_r: $t_line (Gbit/s, CPU s/GiB)," \
		"$(awk -v b="$t_bytes" 'BEGIN { printf "%.2f", b / 1073741824 }')" \
		"GiB, daemon CPU $(awk -v c=$((t_c1 - t_c0)) -v t="$TCK" \
			'BEGIN { printf "%.2f", c / t }') s, retransmits $t_retr"
	echo "$t_k $t_d $t_line $t_retr" >>"$RES"
}

# rr KEY REP: one sockperf ping-pong run from the guest, appends to $RES
#   KEY rr RTT-p50-us RTT-avg-us CPU-us-per-RR RR/s
rr() {
	local r_k=$1 r_r=$2 r_c0 r_c1 r_rc=0 r_out r_p50 r_vt r_vn r_tn r_line
	r_out=$T/$(echo "$r_k" | tr ' ' -)-rr-$r_r.out
	r_c0=$(cpu_ticks "$DPID")
	g_run -t $((LAT_DURATION + 30)) "sockperf pp --tcp -i $PEER4 \
		-p $SP_PORT -t $LAT_DURATION -m 64" >"$r_out" 2>&1 || r_rc=$?
	r_c1=$(cpu_ticks "$DPID")
	sed -i 's/\x1b\[[0-9;]*m//g' "$r_out"
	# sockperf's latency is half the round trip
	r_p50=$(sed -n 's/.*percentile 50\.000 = *\([0-9.]*\).*/\1/p' "$r_out")
	r_vt=$(sed -n 's/.*Valid Duration\] RunTime=\([0-9.]*\) sec.*/\1/p' \
		"$r_out")
	r_vn=$(sed -n 's/.*Valid Duration\].*ReceivedMessages=\([0-9]*\).*/\1/p' \
		"$r_out")
	r_tn=$(sed -n 's/.*Total Run\].*ReceivedMessages=\([0-9]*\).*/\1/p' \
		"$r_out")
	if [ "$r_rc" -ne 0 ] || [ -z "$r_p50" ] || [ -z "$r_vn" ] ||
	   [ "${r_vn:-0}" = 0 ] || [ -z "$r_tn" ]; then
		note "$r_k rr #$r_r: FAILED (status $r_rc):" \
			"$(grep -i -m 2 -e error -e fail "$r_out" | tr '\n' ' ')"
		echo "$r_k rr FAIL FAIL FAIL FAIL" >>"$RES"
		return 0
	fi
	r_line=$(awk -v p="$r_p50" -v vt="$r_vt" -v vn="$r_vn" -v tn="$r_tn" \
		-v c=$((r_c1 - r_c0)) -v t="$TCK" 'BEGIN {
			printf "%.1f %.1f %.1f %.0f", 2 * p, vt / vn * 1e6,
				(c / t) / tn * 1e6, vn / vt }')
	log "  $r_k rr #$r_r: $r_line (RTT p50 us, RTT avg us, CPU us/RR," \
		"RR/s), daemon CPU $(awk -v c=$((r_c1 - r_c0)) -v t="$TCK" \
			'BEGIN { printf "%.2f", c / t }') s"
	echo "$r_k rr $r_line" >>"$RES"
}

# config MODE BACKEND BINARY MTU: daemon, guest boot, all the runs
config() {
	local c_mode=$1 c_b=$2 c_bin=$3 c_mtu=$4 c_k c_args c_f c_sp c_r c_n
	c_k="$c_mode $c_b $c_mtu"
	c_args=(-m "$c_mtu")
	# Upstream passt drops to nobody when run as root, and then can't write
	# the pid file in our 0700 directory: keep root (it still sandboxes)
	[ "$c_b" = upstream ] && c_args+=(--runas 0)
	# Our debug log has the negotiated vhost-user features
	[ "$c_b" = ours ] && [ "$c_mode" = vhost-user ] && c_args+=(-d)
	E2E_MODE=$c_mode
	PASST=$c_bin
	PASST_ERR=$T/$c_mode-$c_b-$c_mtu.err
	rm -f "$SOCK" "$PIDFILE"
	passt_up "${c_args[@]}"
	DPID=$PASST_PID
	# ip netns exec execs the daemon: $! is it, unless it forked; the
	# CPU figures cover its whole process tree anyway
	log "  daemon pid $DPID ($(cat "/proc/$DPID/comm")," \
		"$(ls "/proc/$DPID/task" | wc -l) thread(s), tree:" \
		"$(tree "$DPID" | tr '\n' ' '))"
	qemu_start
	guest_wait 120
	[ "$G_IP4" != none ] || fail "$c_k: guest has no IPv4 address"
	[ "$G_MTU" = "$c_mtu" ] ||
		note "$c_k: the guest's MTU is '$G_MTU', expected $c_mtu"
	c_f=$(g_run 'cat /sys/class/net/eth0/device/features' | tr -d '\r') ||
		c_f=
	[ -n "$c_f" ] && echo "$c_k guest $(bits_hex "$c_f")" >>"$FEAT"
	if [ "$c_mode" = vhost-user ] && [ "$c_b" = ours ]; then
		c_f=$(sed -n 's/.*vhost-user: features \(0x[0-9a-f]*\).*/\1/p' \
			"$PASST_ERR" | tail -n 1)
		[ -n "$c_f" ] && echo "$c_k daemon $c_f" >>"$FEAT"
	fi

	c_sp=0
	if [ "$SOCKPERF" = 1 ]; then
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

	for c_r in $(seq 1 "$REPS"); do
		tp "$c_k" g2p "$c_r" || return 1
		tp "$c_k" p2g "$c_r" || return 1
		if [ "$c_sp" != 0 ]; then
			rr "$c_k" "$c_r"
		fi
	done

	if [ "$c_sp" != 0 ]; then
		kill -KILL "$c_sp" 2>/dev/null || :
		wait "$c_sp" 2>/dev/null || :
	fi
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
	log "  $c_k: daemon log $(wc -l <"$PASST_ERR") lines"
}

# killall_tracked: what a failed configuration left running
killall_tracked() {
	local k_p
	[ -f "$T/pids" ] || return 0
	while read -r k_p; do
		alive "$k_p" && kill -KILL "$k_p" 2>/dev/null
	done <"$T/pids"
	: >"$T/pids"
	rm -f "$SOCK" "$PIDFILE"
}

# median KEY DIR FIELD: median of the successful runs, FAIL if none
median() {
	awk -v k="$1 $2" -v f="$3" '{ key = $1 " " $2 " " $3 " " $4 }
		key == k && $f != "FAIL" && $f != "-" { print $f }' "$RES" |
		sort -g | awk '{ v[NR] = $1 } END {
			if (!NR) { print "FAIL"; exit }
			if (NR % 2) print v[(NR + 1) / 2]
			else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

runs_ok() {
	awk -v k="$1 $2" '{ key = $1 " " $2 " " $3 " " $4 }
		key == k { n++; if ($5 != "FAIL") ok++ }
		END { printf "%d/%d", ok, n }' "$RES"
}

# ratio A B: A/B with two decimals, n/a if either is missing
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "FAIL" || b == "FAIL" || a == "" || b == "" || b + 0 == 0)
			print "n/a"
		else
			printf "%.2f\n", a / b }'
}

setup_ns
START=$(date +%s)
CONFIGS=
for _mode in $MODES; do
	case $_mode in stream | vhost-user) ;; *) fail "unknown mode $_mode" ;; esac
	for _b in $BACKENDS; do
		case $_b in
		ours) _bin=$OURS ;;
		upstream)
			_bin=$UPSTREAM
			[ "$_mode" = stream ] || continue
			;;
		*) fail "unknown back-end $_b" ;;
		esac
		for _m in $MTUS; do
			log "$_mode, $_b ($_bin), MTU $_m"
			CONFIGS="$CONFIGS $_mode:$_b:$_m"
			_t0=$(date +%s)
			# A subshell: a failure ends this configuration only
			set +e
			(
				set -e
				config "$_mode" "$_b" "$_bin" "$_m"
			)
			_st=$?
			set -e
			if [ "$_st" -ne 0 ]; then
				note "$_mode $_b $_m: configuration failed" \
					"(status $_st)"
				killall_tracked
			fi
			log "  ($(($(date +%s) - _t0)) s)"
		done
	done
done

printf '\nThroughput (iperf3, %s s per run, medians of %s)\n' \
	"$DURATION" "$REPS"
printf '%-10s | %-8s | %5s | %-3s | %7s | %9s | %5s | %s\n' \
	mode back-end MTU dir Gbit/s "CPU s/GiB" retr runs
printf '%s\n' \
	"-----------+----------+-------+-----+---------+-----------+-------+-----"
for _c in $CONFIGS; do
	IFS=: read -r _mode _b _m <<<"$_c"
	for _d in g2p p2g; do
		printf '%-10s | %-8s | %5s | %-3s | %7s | %9s | %5s | %s\n' \
			"$_mode" "$_b" "$_m" "$_d" \
			"$(median "$_mode $_b $_m" "$_d" 5)" \
			"$(median "$_mode $_b $_m" "$_d" 6)" \
			"$(median "$_mode $_b $_m" "$_d" 7)" \
			"$(runs_ok "$_mode $_b $_m" "$_d")"
	done
done
echo "(g2p guest->peer, p2g peer->guest with iperf3 -R; retr: sender's" \
	"TCP retransmits; CPU: the daemon's utime+stime per GiB received)"

if grep -q ' rr ' "$RES"; then
	printf '\nLatency (sockperf ping-pong, TCP, 64 bytes, %s s per run,' \
		"$LAT_DURATION"
	printf ' medians of %s)\n' "$REPS"
	printf '%-10s | %-8s | %5s | %8s | %8s | %7s | %9s | %s\n' \
		mode back-end MTU "RTT p50" "RTT avg" "RR/s" "CPU us/RR" runs
	printf '%s\n' \
		"-----------+----------+-------+----------+----------+---------+-----------+-----"
	for _c in $CONFIGS; do
		IFS=: read -r _mode _b _m <<<"$_c"
		printf '%-10s | %-8s | %5s | %8s | %8s | %7s | %9s | %s\n' \
			"$_mode" "$_b" "$_m" \
			"$(median "$_mode $_b $_m" rr 5)" \
			"$(median "$_mode $_b $_m" rr 6)" \
			"$(median "$_mode $_b $_m" rr 8)" \
			"$(median "$_mode $_b $_m" rr 7)" \
			"$(runs_ok "$_mode $_b $_m" rr)"
	done
	echo "(RTT in us: twice sockperf's one-way figure; RR/s: round trips" \
		"per second; CPU: the daemon's utime+stime per round trip)"
fi

# ratio_lines NAME A-KEY B-KEY: A/B for every test
ratio_lines() {
	local l_d
	for l_d in g2p p2g; do
		echo "$1 $l_d MTU ${2##* }: throughput" \
			"$(ratio "$(median "$2" "$l_d" 5)" "$(median "$3" "$l_d" 5)")," \
			"CPU/GiB $(ratio "$(median "$2" "$l_d" 6)" \
				"$(median "$3" "$l_d" 6)")"
	done
	grep -q "^$2 rr " "$RES" && grep -q "^$3 rr " "$RES" &&
		echo "$1 rr  MTU ${2##* }: RTT p50" \
			"$(ratio "$(median "$2" rr 5)" "$(median "$3" rr 5)")," \
			"CPU/RR $(ratio "$(median "$2" rr 7)" \
				"$(median "$3" rr 7)")"
	return 0
}
# has MODE:BACKEND:MTU: true if that configuration ran
has() {
	case " $CONFIGS " in *" $1 "*) return 0 ;; esac
	return 1
}
echo
for _m in $MTUS; do
	if has "stream:ours:$_m" && has "stream:upstream:$_m"; then
		ratio_lines "ours/upstream (stream)" "stream ours $_m" \
			"stream upstream $_m"
	fi
	if has "vhost-user:ours:$_m" && has "stream:ours:$_m"; then
		ratio_lines "vhost-user/stream (ours)" "vhost-user ours $_m" \
			"stream ours $_m"
	fi
done

if [ -s "$FEAT" ]; then
	echo
	echo "virtio-net features (guest: /sys/class/net/eth0/device/features;" \
		"daemon: its last SET_FEATURES)"
	while read -r _mode _b _m _who _hex; do
		printf '%-10s %-8s %5s %-6s %-12s %s\n' "$_mode" "$_b" "$_m" \
			"$_who" "$_hex" "$(feat_names "$_hex")"
	done <"$FEAT"
fi
if [ -s "$NOTES" ]; then
	echo
	echo "Notes:"
	sed 's/^/  /' "$NOTES"
fi
log "total time: $(($(date +%s) - START)) s"
