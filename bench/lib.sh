# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2034
#
# lib.sh - what the benchmark scripts (bench/ns.sh, bench/qemu.sh) share:
# run counts, the daemon's CPU time, memory and system call counts, the
# upstream binary, and the result records that bench/report.sh turns
# into the table.
#
# Sourced after test/integration/lib.sh (or test/e2e/lib.sh, which
# sources it): uses its log, fail, alive, wait_for, track and $T.
#
# Records: one line per measurement, appended to $BENCH_RECORDS:
#   HARNESS MODE MTU TEST METRIC BACKEND VALUE
# HARNESS ns or qemu; TEST g2p, p2g, rr, idle or peak; METRIC gbps,
# cpu (daemon CPU seconds per GiB), sc (system calls per GiB), rtt (us),
# rss or hwm (MiB); BACKEND ours, upstream, or bare (bench/ns.sh's bare
# socket figure, with MODE and MTU "-"); VALUE a number or FAIL. The CPU
# and throughput figures come from runs without any tracer attached; the
# system call counts from separate runs with perf (or strace) attached.
#
# Environment (all optional):
#   BENCH_RUNS      runs per throughput and latency cell (default 5)
#   BENCH_SECS      seconds per throughput run (default 8)
#   BENCH_LAT_SECS  seconds per latency run (default 5)
#   BENCH_SC_RUNS   traced runs per cell for the system call count (1)
#   BENCH_PARALLEL  iperf3 streams per throughput run (ns.sh; default 1)
#   BENCH_PIN=1     daemons on the last CPU, the rest elsewhere (ns.sh)
#   BENCH_PACE_US=N a slow guest: one frame every N us at most (ns.sh)
#   BENCH_NO_IO_URING=1 our daemon without io_uring (PASST_NO_IO_URING)
#   BENCH_IO_URING_WAIT=1 our daemon waiting in the ring (PASST_IO_URING_WAIT)
#   BENCH_PROFILE=1 one more run per throughput cell (ns.sh), and per
#                   many-connection test (dims.sh), under perf
#                   record: the top symbols by self time, per back-end,
#                   in bench/results/profile-*.txt (BENCH_PROFILE_TOP: 15);
#                   BENCH_PROFILE_KEEP=1 records call graphs too and keeps
#                   them in bench/results/perf-*.data
#   BENCH_BARE=0    no bare socket figure (ns.sh)
#   BENCH_QUICK=1   smoke test: 1 run of 2 s each
#   BENCH_MODES     "stream vhost-user", BENCH_BACKENDS "ours upstream",
#   BENCH_MTUS      "65520 1500"
#   UPSTREAM        upstream passt (default: bench/upstream.sh's, the newest)
#   BENCH_RECORDS   where the records go (default $T/records, and the
#                   script prints its own table at the end)

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_ROOT=$(cd "$BENCH_DIR/.." && pwd)

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	BENCH_RUNS=${BENCH_RUNS:-1}
	BENCH_SECS=${BENCH_SECS:-2}
	BENCH_LAT_SECS=${BENCH_LAT_SECS:-2}
fi
BENCH_RUNS=${BENCH_RUNS:-5}
BENCH_SECS=${BENCH_SECS:-8}
BENCH_LAT_SECS=${BENCH_LAT_SECS:-5}
BENCH_SC_RUNS=${BENCH_SC_RUNS:-1}
BENCH_MODES=${BENCH_MODES:-stream vhost-user}
BENCH_BACKENDS=${BENCH_BACKENDS:-ours upstream}
BENCH_MTUS=${BENCH_MTUS:-65520 1500}
BENCH_STANDALONE=0
if [ -z "${BENCH_RECORDS:-}" ]; then
	BENCH_RECORDS=$T/records
	BENCH_STANDALONE=1
fi
BENCH_TCK=$(getconf CLK_TCK)
BENCH_PORT=5201
BENCH_SP_PORT=11111

# bench_upstream: set UPSTREAM to the newest upstream passt at hand
# (bench/upstream.sh) unless given
bench_upstream() {
	case " $BENCH_BACKENDS " in *" upstream "*) ;; *) return 0 ;; esac
	if [ -z "${UPSTREAM:-}" ]; then
		_bu=$("$BENCH_DIR/upstream.sh") ||
			fail "bench/upstream.sh failed: no upstream passt"
		UPSTREAM=$_bu/passt
	fi
	[ -x "$UPSTREAM" ] || fail "no upstream passt at $UPSTREAM"
	# It execs passt.avx2 from its own directory on AVX2 machines (not
	# so a wrapper such as bench/ours-as-upstream.sh)
	[ "${UPSTREAM##*/}" != passt ] ||
		[ -x "$(dirname "$UPSTREAM")/passt.avx2" ] ||
		log "warning: no passt.avx2 next to $UPSTREAM"
}

# bench_bin BACKEND: the binary of that back-end
bench_bin() {
	case $1 in
	ours) echo "$BENCH_OURS" ;;
	upstream) echo "$UPSTREAM" ;;
	*) fail "unknown back-end $1" ;;
	esac
}

# bench_env BACKEND: environment for the daemon (BENCH_NO_IO_URING=1: ours
# with plain system calls instead of io_uring, BENCH_IO_URING_WAIT=1: ours
# waiting in the ring, for the comparison)
bench_env() {
	[ "$1" = ours ] && [ "${BENCH_NO_IO_URING:-0}" = 1 ] &&
		echo PASST_NO_IO_URING=1
	[ "$1" = ours ] && [ "${BENCH_IO_URING_WAIT:-0}" = 1 ] &&
		echo PASST_IO_URING_WAIT=1
	:
}

# bench_args BACKEND MODE MTU: the daemon's options for a benchmark run
bench_args() {
	_ba="-m $3"
	[ "$2" = vhost-user ] && _ba="$_ba --vhost-user"
	# Both daemons start as root and drop to nobody, as they would under
	# libvirt. (Upstream used to get --runas 0 here; passt of 2026 maps
	# that uid into its user namespace, which needs CAP_SETFCAP, and
	# exits: "Couldn't write to /proc/PID/uid_map")
	echo "$_ba"
}

# rec MODE MTU TEST METRIC BACKEND VALUE: one record
rec() {
	echo "$BENCH_HARNESS $*" >>"$BENCH_RECORDS"
}

# rec_missing MODE MTU BACKEND: a FAIL record for every cell of that
# configuration without any record (a configuration that failed early),
# so the table shows it
rec_missing() {
	local m_c
	for m_c in g2p:gbps g2p:cpu g2p:wake g2p:sc p2g:gbps p2g:cpu \
		p2g:wake p2g:sc rr:rtt idle:rss peak:hwm; do
		[ "${m_c#*:}" = sc ] && [ "$BENCH_SC_TOOL" = none ] && continue
		[ "$m_c" = rr:rtt ] && ! command -v sockperf >/dev/null &&
			continue
		grep -q "^$BENCH_HARNESS $1 $2 ${m_c%:*} ${m_c#*:} $3 " \
			"$BENCH_RECORDS" 2>/dev/null ||
			rec "$1" "$2" "${m_c%:*}" "${m_c#*:}" "$3" FAIL
	done
}

# ptree PID: PID and all its descendants
ptree() {
	local p_c
	echo "$1"
	for p_c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		ptree "$p_c"
	done
}

# cpu_ticks PID: utime + stime of PID's process tree (all threads), in
# clock ticks
cpu_ticks() {
	local c_p c_s=0 c_t
	for c_p in $(ptree "$1"); do
		# After "(comm) ": state is field 1, utime 12, stime 13
		c_t=$(sed 's/^.*) //' "/proc/$c_p/stat" 2>/dev/null |
			awk '{ print $12 + $13 }') || c_t=0
		c_s=$((c_s + ${c_t:-0}))
	done
	echo "$c_s"
}

# ctx_switches PID: voluntary context switches (sleeps that ended in a
# wake-up) of PID's process tree, all threads
ctx_switches() {
	local x_p x_s=0 x_t
	for x_p in $(ptree "$1"); do
		x_t=$(cat /proc/"$x_p"/task/*/status 2>/dev/null |
			awk '$1 == "voluntary_ctxt_switches:" { s += $2 }
			     END { print s + 0 }') || x_t=0
		x_s=$((x_s + ${x_t:-0}))
	done
	echo "$x_s"
}

# status_mib PID FIELD: a /proc/PID/status field (VmRSS, VmHWM) in MiB
status_mib() {
	awk -v f="$2:" '$1 == f { printf "%.2f\n", $2 / 1024; found = 1 }
		END { if (!found) print "FAIL" }' "/proc/$1/status" 2>/dev/null ||
		echo FAIL
}

# per_gib VALUE BYTES: VALUE per GiB moved
per_gib() {
	awk -v v="$1" -v b="$2" 'BEGIN { printf "%.4f\n", v / (b / 1073741824) }'
}

# ticks_s TICKS: clock ticks as seconds
ticks_s() {
	awk -v c="$1" -v t="$BENCH_TCK" 'BEGIN { printf "%.4f\n", c / t }'
}

# ---- system call counting ----
#
# perf stat counts the raw_syscalls:sys_enter tracepoint for the daemon's
# process tree, started disabled and switched on and off through its
# control FIFO (each command is acknowledged), so the window is exactly
# the transfer. Without perf or tracepoints, strace -c -f counts instead
# (slower, and it makes the daemon slower: those runs are never used for
# CPU or throughput figures anyway). With perf, the syscalls:sys_enter_NAME
# tracepoints count each call of BENCH_SC_CALLS apart as well: sc_calls
# prints the top ones. Only those: opening all ~360 of them takes perf
# 13 s on some kernels (6.18 here), longer than the control FIFO waits.
BENCH_SC_CALLS=${BENCH_SC_CALLS:-read write readv writev recvfrom recvmsg \
recvmmsg sendto sendmsg sendmmsg splice epoll_wait epoll_pwait epoll_ctl \
io_uring_enter timerfd_settime ioctl getsockopt setsockopt accept4 close}

BENCH_SC_TOOL=
SC_EVENTS=()
# sc_probe: pick the counting tool (BENCH_SC_TOOL: perf, strace or none);
# with perf, SC_EVENTS: the BENCH_SC_CALLS this kernel has tracepoints for
sc_probe() {
	local s_call s_dir
	if command -v perf >/dev/null &&
	   perf stat -e raw_syscalls:sys_enter -x, -- true 2>&1 |
	   grep -qE '^[0-9]+,.*raw_syscalls:sys_enter'; then
		BENCH_SC_TOOL=perf
		for s_call in $BENCH_SC_CALLS; do
			for s_dir in /sys/kernel/tracing \
				     /sys/kernel/debug/tracing; do
				[ -d "$s_dir/events/syscalls/sys_enter_$s_call" ] ||
					continue
				SC_EVENTS+=(-e "syscalls:sys_enter_$s_call")
				break
			done
		done
	elif command -v strace >/dev/null; then
		BENCH_SC_TOOL=strace
		log "warning: perf can't count raw_syscalls:sys_enter here:" \
			"counting system calls with strace"
	else
		BENCH_SC_TOOL=none
		log "warning: neither perf nor strace: no system call counts"
	fi
	log "system calls counted with: $BENCH_SC_TOOL"
}

SC_PID=
# sc_start PID: start counting the system calls of PID's process tree
sc_start() {
	local s_pids
	s_pids=$(ptree "$1" | paste -sd, -)
	rm -f "$T/sc.out" "$T/sc.ctl" "$T/sc.ack"
	case $BENCH_SC_TOOL in
	perf)
		mkfifo "$T/sc.ctl" "$T/sc.ack"
		perf stat -e raw_syscalls:sys_enter "${SC_EVENTS[@]}" \
			-x, -o "$T/sc.out" -D -1 \
			--control "fifo:$T/sc.ctl,$T/sc.ack" -p "$s_pids" \
			</dev/null >/dev/null 2>"$T/sc.err" &
		SC_PID=$!
		track "$SC_PID"
		exec 5<>"$T/sc.ctl" 6<>"$T/sc.ack"
		echo enable >&5
		timeout 10 head -c 4 <&6 >/dev/null ||
			{ log "  perf: no ack: $(cat "$T/sc.err")"; return 1; }
		;;
	strace)
		strace -c -f -q -o "$T/sc.out" -p "$1" </dev/null \
			>/dev/null 2>"$T/sc.err" &
		SC_PID=$!
		track "$SC_PID"
		wait_for "grep -q 'TracerPid:[[:space:]]*[1-9]' /proc/$1/status" \
			10 || return 1
		;;
	*) return 1 ;;
	esac
}

# sc_stop: stop counting, print the number of system calls (FAIL if none)
sc_stop() {
	local s_n=
	case $BENCH_SC_TOOL in
	perf)
		echo disable >&5
		timeout 10 head -c 4 <&6 >/dev/null || :
		exec 5>&- 6>&-
		;;
	esac
	kill -INT "$SC_PID" 2>/dev/null || :
	wait_for "! alive $SC_PID" 10 || kill -KILL "$SC_PID" 2>/dev/null
	wait "$SC_PID" 2>/dev/null || :
	case $BENCH_SC_TOOL in
	perf)
		s_n=$(awk -F, '$3 == "raw_syscalls:sys_enter" &&
			$1 ~ /^[0-9]+$/ { print $1 }' "$T/sc.out" 2>/dev/null)
		;;
	strace)
		s_n=$(awk '$NF == "total" { print $4 }' \
			"$T/sc.out" 2>/dev/null)
		;;
	esac
	echo "${s_n:-FAIL}"
}

# sc_calls BYTES: the most frequent system calls of the last count, per GiB
# of BYTES ("recvfrom 41.2k, sendto 30.1k, ..."; empty without perf)
sc_calls() {
	[ "$BENCH_SC_TOOL" = perf ] || return 0
	awk -F, -v b="$1" '$3 ~ /^syscalls:sys_enter_/ && $1 ~ /^[0-9]+$/ &&
		$1 > 0 { sub(/^syscalls:sys_enter_/, "", $3);
			 printf "%d %s\n", $1, $3 }' "$T/sc.out" 2>/dev/null |
		sort -rn | head -n "${BENCH_SC_TOP:-6}" |
		awk -v b="$1" '{ printf "%s%s %.1fk", (NR > 1 ? ", " : ""), $2,
			$1 / (b / 1073741824) / 1000 } END { if (NR) print "" }'
}

# prof_start PID: sample PID's process tree with perf record (BENCH_PROFILE
# runs: a sampler attached costs the daemon CPU, so no figure comes from
# such a run)
PROF_PID=
prof_start() {
	rm -f "$T/perf.data"
	# shellcheck disable=SC2046
	perf record -q -F 1999 $([ -n "${BENCH_PROFILE_KEEP:-}" ] && echo -g) \
		-o "$T/perf.data" \
		-p "$(ptree "$1" | paste -sd, -)" </dev/null >/dev/null \
		2>"$T/perf-record.err" &
	PROF_PID=$!
	track "$PROF_PID"
}

# prof_stop NAME: stop sampling; the top of the flat profile (self time,
# by symbol) goes to bench/results/profile-NAME.txt and the log
prof_stop() {
	local p_out=$BENCH_DIR/results/profile-$1.txt
	kill -INT "$PROF_PID" 2>/dev/null || :
	wait_for "! alive $PROF_PID" 20 || kill -KILL "$PROF_PID" 2>/dev/null
	wait "$PROF_PID" 2>/dev/null || :
	mkdir -p "$BENCH_DIR/results"
	perf report -q -i "$T/perf.data" --stdio --no-children -g none \
		--sort dso,sym 2>/dev/null | grep -v '^$' |
		head -n "${BENCH_PROFILE_TOP:-15}" >"$p_out" || :
	log "  profile $1 (self, top ${BENCH_PROFILE_TOP:-15}):"
	sed 's/^/    /' "$p_out" >&2
	if [ -n "${BENCH_PROFILE_KEEP:-}" ]; then
		cp "$T/perf.data" "$BENCH_DIR/results/perf-$1.data"
		log "  call graphs: perf report -i bench/results/perf-$1.data"
	fi
}

# bench_report: the table of this script's own records (standalone runs)
bench_report() {
	[ "$BENCH_STANDALONE" = 1 ] || return 0
	echo
	"$BENCH_DIR/report.sh" "$BENCH_RECORDS"
}
