# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate-lib.sh - live migration of a real guest between two QEMUs, for
# test/e2e/tests/migrate.sh, test/demo-migrate.sh and bench/qemu-migrate.sh.
#
# Sourced after test/e2e/lib.sh. It takes the topology of the namespace
# migration tests (test/integration/migrate-lib.sh): pods SRC and DST with
# the same addresses, a FABRIC router that sends the pod address to one of
# them (mig_fabric_to src|dst), the peer on FABRIC's loopback. A daemon
# runs in each pod in vhost-user mode (started as root, it may become
# nobody), with passt-repair as its TCP_REPAIR helper (qm_daemon,
# qm_repair_src). QEMU runs in the root namespace (it only needs the
# daemons' UNIX sockets):
#
#   qm_start src|dst   the source QEMU, or the target (-incoming unix:),
#                      each with its own FIFOs (pipe chardevs):
#                        $T/cmd-ROLE    the guest's command channel (ttyS1)
#                        $T/tel-ROLE    telemetry from the guest (ttyS2)
#                        $T/qmp-ROLE    QMP (the monitor, JSON; what it
#                                       says, time-stamped: qmp-ROLE.log)
#   qmp ROLE JSON      one QMP command, its answer on stdout
#   qm_migrate         "migrate" on the source, polled to its end; sets
#                      QM_STATUS, QM_DOWNTIME, QM_TOTAL, QM_SETUP (ms),
#                      QM_T_START, QM_T_END, QM_T_RUN (host ms); g_run & co.
#                      talk to the guest on the target
#
# The guest's command channel of lib.sh (g_run, g_ok, g_bg ...) follows
# the guest: before the migration it is the source's cmd FIFOs, after it
# the target's (qm_follow). Don't call g_run while a migration runs.
#
# Telemetry: tel_start FILE... makes the guest print, every 50 ms, one
# line per progress FILE (sockio --progress) on ttyS2; each QEMU's line
# reader stamps it with the host time: "MS NAME rx=N tx=N end=..." lines
# in $T/timeline.guest (bash's EPOCHREALTIME, no fork per line).
#
# The guest kernel skips its timer check (no_timer_check): on a loaded
# machine, TCG's timer is late enough for it to panic ("IO-APIC + timer
# doesn't work").
#
# Environment: QM_MEM (guest memory in MiB, default 128), PASST_MIG (the
# daemon, default $PASST), QM_ARGS_SRC and QM_ARGS_DST (more QEMU
# arguments for the source or the target, after the network device).

# The repair helper: next to the daemon, else the one of the plain build
# (e2e-asan runs a sanitizer daemon with the plain tools)
if [ -z "${PASST_REPAIR:-}" ]; then
	for _c in "$(dirname "$PASST")/passt-repair" \
		  "$TOOLS/../../passt-repair"; do
		[ -x "$_c" ] && PASST_REPAIR=$(cd "$(dirname "$_c")" &&
					      pwd)/passt-repair && break
	done
fi
# shellcheck source=../integration/vu.sh
. "$TOP/test/integration/vu.sh"
# shellcheck source=../integration/migrate-lib.sh
. "$TOP/test/integration/migrate-lib.sh"

QM_MEM=${QM_MEM:-128}
QM_MIG_SOCK=$T/migration.socket
QSRC_PID=
QDST_PID=

# ms_now: host wall clock in ms, without a fork
ms_now() {
	_e=${EPOCHREALTIME/./}
	echo $((_e / 1000))
}

# qm_reader ROLE NAME LOG: stamp each line from FIFO $T/NAME-ROLE.out with
# the host time (ms), append to LOG (background; tracked)
qm_reader() {
	(
		while IFS= read -r _l; do
			_e=${EPOCHREALTIME/./}
			printf '%s %s\n' "$((_e / 1000))" "${_l%$'\r'}"
		done <"$T/$2-$1.out" >>"$3"
	) &
	track $!
}

# qm_start src|dst: start that QEMU. The source uses $SOCK_SRC and boots
# the guest; the target uses $SOCK_DST and waits for the migration
qm_start() {
	_r=$1
	_sock=$SOCK_SRC
	_inc=${QM_ARGS_SRC:-}
	if [ "$_r" = dst ]; then
		_sock=$SOCK_DST
		_inc="${QM_ARGS_DST:-} -incoming unix:$QM_MIG_SOCK"
		rm -f "$QM_MIG_SOCK"
	fi
	for _f in cmd tel qmp; do
		rm -f "$T/$_f-$_r.in" "$T/$_f-$_r.out"
		mkfifo "$T/$_f-$_r.in" "$T/$_f-$_r.out"
	done
	touch "$T/cmd.log" "$T/tel.log" "$T/qmp-$_r.log"
	# The command channel goes to cmd.log unstamped (lib.sh's g_run)
	cat "$T/cmd-$_r.out" >>"$T/cmd.log" &
	track $!
	# Telemetry from both into one log; QMP, one log each
	qm_reader "$_r" tel "$T/tel.log"
	qm_reader "$_r" qmp "$T/qmp-$_r.log"
	if [ "$_r" = src ]; then
		exec 7<>"$T/cmd-src.in"
		exec 5<>"$T/qmp-src.in"
	else
		exec 6<>"$T/qmp-dst.in"
	fi
	# shellcheck disable=SC2046,SC2086
	"$QEMU" $(accel_args) -m "$QM_MEM" -smp 1 -nodefaults \
		-display none -no-reboot -no-user-config \
		-kernel "$GUEST_OUT/vmlinuz" -initrd "$GUEST_OUT/initramfs.gz" \
		-append "console=ttyS0 panic=-1 quiet no_timer_check guest.noslaac" \
		-serial "file:$T/console-$_r.log" \
		-chardev "pipe,id=cmd,path=$T/cmd-$_r" -serial chardev:cmd \
		-chardev "pipe,id=tel,path=$T/tel-$_r" -serial chardev:tel \
		-chardev "pipe,id=qmp,path=$T/qmp-$_r" \
		-mon chardev=qmp,mode=control \
		-object "memory-backend-memfd,id=m,share=on,size=${QM_MEM}M" \
		-numa node,memdev=m \
		-chardev "socket,id=c,path=$_sock" \
		-netdev vhost-user,id=n0,chardev=c \
		-device "virtio-net-pci,netdev=n0,mac=$GUEST_MAC,romfile=" \
		$_inc >"$T/qemu-$_r.out" 2>"$T/qemu-$_r.err" </dev/null &
	if [ "$_r" = src ]; then
		QSRC_PID=$!
		QEMU_PID=$QSRC_PID
		QEMU_T0=$(now_ms)
		# lib.sh's guest_wait reads console.log, qemu_check_alive
		# qemu.err
		ln -sf "console-src.log" "$T/console.log"
		ln -sf "qemu-src.err" "$T/qemu.err"
	else
		QDST_PID=$!
	fi
	track "$!"
	qmp "$_r" '{"execute": "qmp_capabilities"}' 30 >/dev/null ||
		fail "QEMU ($_r): no QMP: $(tail -n 5 "$T/qemu-$_r.err")"
}

# qmp ROLE JSON [TIMEOUT]: send one command (JSON without "id") to that
# QEMU's monitor; print the answer line (JSON). Returns 1 on an error
# answer or none in TIMEOUT s (default 10)
qmp() {
	# The counter lives in a file: qmp often runs in a $(subshell)
	QM_QID=$(($(cat "$T/qmp.id" 2>/dev/null || echo 0) + 1))
	echo "$QM_QID" >"$T/qmp.id"
	_id=q$QM_QID
	_fd=5
	[ "$1" = dst ] && _fd=6
	printf '%s\n' "${2%\}}, \"id\": \"$_id\"}" >&$_fd
	wait_for "grep -qF '\"id\": \"$_id\"' '$T/qmp-$1.log'" "${3:-10}" ||
		return 1
	_ans=$(grep -F "\"id\": \"$_id\"" "$T/qmp-$1.log" | head -n 1 |
	       cut -d' ' -f2-)
	printf '%s\n' "$_ans"
	printf '%s\n' "$_ans" | jq -e 'has("return")' >/dev/null
}

# qm_follow: the guest runs on the target now: g_run & co. go there
qm_follow() {
	exec 7>&-
	exec 7<>"$T/cmd-dst.in"
	QEMU_PID=$QDST_PID
	ln -sf "qemu-dst.err" "$T/qemu.err"
}

# qm_migrate [TIMEOUT]: migrate the guest from the source QEMU to the
# target, poll query-migrate (every 50 ms) to a final state. Sets
# QM_STATUS (completed, failed, ...), QM_DOWNTIME, QM_TOTAL, QM_SETUP (ms,
# as QEMU reports them), QM_T_START (host ms when we asked), QM_T_END
# (when it completed: the source's MIGRATION event) and QM_T_RUN (host ms when the target
# ran the guest: its RESUME event). On success, qm_follow. Returns 0 iff
# completed
qm_migrate() {
	# MIGRATION events say when it ends: cheaper than polling, and
	# stamped by QEMU, not by a loaded shell
	qmp src '{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "events", "state": true}]}}' \
		>/dev/null || fail "QEMU refuses the migration events capability"
	_n=$(wc -l <"$T/qmp-src.log")
	QM_T_START=$(ms_now)
	qmp src "{\"execute\": \"migrate\", \"arguments\": {\"uri\": \"unix:$QM_MIG_SOCK\"}}" \
		>"$T/migrate.ans" || fail "migrate: $(cat "$T/migrate.ans")"
	_pat='"event": "MIGRATION", "data": {"status": "(completed|failed|cancelled)"'
	wait_for "tail -n +$((_n + 1)) '$T/qmp-src.log' | grep -qE '$_pat'" \
		"${1:-120}" || :
	_ev=$(tail -n +$((_n + 1)) "$T/qmp-src.log" | grep -E "$_pat" |
	      head -n 1 | cut -d' ' -f2-)
	_q=$(qmp src '{"execute": "query-migrate"}') || _q='{}'
	printf '%s\n' "$_q" >"$T/query-migrate.json"
	QM_STATUS=$(printf '%s\n' "$_q" | jq -r '.return.status // "unknown"')
	QM_DOWNTIME=$(printf '%s\n' "$_q" | jq -r '.return.downtime // "?"')
	QM_TOTAL=$(printf '%s\n' "$_q" | jq -r '.return["total-time"] // "?"')
	QM_SETUP=$(printf '%s\n' "$_q" | jq -r '.return["setup-time"] // "?"')
	QM_T_END=$(ms_now)
	[ -z "$_ev" ] || QM_T_END=$(printf '%s\n' "$_ev" | qm_ev_ms)
	log "migration: $QM_STATUS, downtime $QM_DOWNTIME ms, total" \
		"$QM_TOTAL ms, setup $QM_SETUP ms (QEMU's numbers)"
	if [ "$QM_STATUS" != completed ]; then
		_e=$(printf '%s\n' "$_q" | jq -r '.return["error-desc"] // ""')
		log "migration $QM_STATUS: $_e"
		return 1
	fi
	# The target runs the guest: its RESUME event, and when
	wait_for "grep -q '\"event\": \"RESUME\"' '$T/qmp-dst.log'" 30 ||
		fail "the target does not run the guest"
	QM_T_RUN=$(qm_qmp_event dst RESUME)
	qm_follow
}

# qm_quit ROLE [--nowait]: "quit" that QEMU, wait for it (SIGKILL after
# 20 s); --nowait: only ask (qm_quit again later to wait)
qm_quit() {
	_p=$QSRC_PID
	[ "$1" = dst ] && _p=$QDST_PID
	alive "$_p" || { wait "$_p" 2>/dev/null || :; return 0; }
	if [ ! -e "$T/quit-$1" ]; then
		touch "$T/quit-$1"
		# No answer awaited: QEMU may be gone before it's read
		_fd=5
		[ "$1" = dst ] && _fd=6
		printf '%s\n' '{"execute": "quit"}' >&$_fd
	fi
	[ "${2:-}" != --nowait ] || return 0
	wait_for "! alive $_p" 20 || kill -KILL "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null || :
}

# tel_start NAME=FILE...: the guest prints the progress file FILE (guest
# path) as "NAME rx=... tx=... end=..." every 50 ms on ttyS2, until
# /tmp/tel.stop exists
tel_start() {
	_loop=
	for _a in "$@"; do
		_loop="$_loop read -r l <${_a#*=} 2>/dev/null || l=none; echo \"${_a%%=*} \$l\";"
	done
	g_bg tel "stty -F /dev/ttyS2 raw -echo 2>/dev/null
while [ ! -e /tmp/tel.stop ]; do $_loop usleep 50000; done >/dev/ttyS2"
}

# tel_get NAME KEY: the series "MS VALUE" of KEY for NAME from the
# guest's telemetry
tel_get() {
	awk -v n="$1" -v k="$2" '$2 == n {
		for (i = 3; i <= NF; i++) if (index($i, k "=") == 1) {
			print $1, substr($i, length(k) + 2); next } }' \
		"$T/tel.log"
}

# tel_last NAME KEY: the last value of KEY for NAME (0 if none yet)
tel_last() {
	_v=$(tel_get "$1" "$2" | tail -n 1 | cut -d' ' -f2)
	echo "${_v:-0}"
}

# qm_pods: the four namespaces (test/integration/migrate-lib.sh), a
# directory per pod, SOCK_SRC and SOCK_DST
qm_pods() {
	[ -x "${PASST_REPAIR:-}" ] ||
		fail "no passt-repair next to $PASST (make passt-repair)"
	mig_setup
	# Started as root, the daemon becomes nobody, and removes its files
	# through their directory: nobody's, as libvirt's and KubeVirt's
	# belong to the daemon's user (and passt-repair, in directory mode,
	# takes only sockets of root or of the directory's owner)
	mig_pod_dir "$T/src"
	mig_pod_dir "$T/dst"
	SOCK_SRC=$T/src/passt.socket
	SOCK_DST=$T/dst/passt.socket
}

# qm_daemon src|dst [OPTION...]: the daemon in that pod; SRC_PID/DST_PID,
# its log in $T/ROLE/passt.socket.err. TCP_REPAIR through passt-repair,
# as KubeVirt does it: on the target, the helper watches the directory
# from before the daemon starts; on the source, qm_repair_src connects one
# before the migration
qm_daemon() {
	_r=$1
	shift
	if [ "$_r" = src ]; then
		mig_daemon_start "$SRC" "$SOCK_SRC" "$@"
		SRC_PID=$MIG_DPID
	else
		mig_repair_start "$DST" "$T/dst"
		mig_daemon_start "$DST" "$SOCK_DST" "$@"
		DST_PID=$MIG_DPID
		wait_for "mig_repair_connected $DST $SOCK_DST" 20 ||
			fail "target's passt-repair (directory mode) not connected"
	fi
}

# qm_boot [OPTION...]: the pods, the source daemon with OPTIONs (checked
# that it can migrate) and the target's, both QEMUs, and the guest booted
# on the source with an IPv4 address
qm_boot() {
	need_guest
	qm_pods
	qm_daemon src "$@"
	mig_probe "$SOCK_SRC"
	qm_daemon dst
	qm_start src
	qm_start dst
	guest_wait 200
	[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
}

# qm_linger_end: the source daemon still lingers; SIGUSR2 ends it, with
# exit status 0, and it removes its socket
qm_linger_end() {
	local st=0
	alive "$SRC_PID" || fail "the source daemon didn't linger"
	kill -USR2 "$SRC_PID"
	wait_for "! alive $SRC_PID" 10 ||
		fail "the source daemon ignores SIGUSR2"
	wait "$SRC_PID" || st=$?
	expect "the source daemon's exit status after SIGUSR2" "$st" 0
	[ ! -e "$SOCK_SRC" ] || fail "source socket left behind"
}

# qm_repair_src: passt-repair connected to the source daemon's helper
# socket (SOCK.repair)
qm_repair_src() {
	mig_repair_connected "$SRC" "$SOCK_SRC" && return 0
	mig_repair_start "$SRC" "$SOCK_SRC.repair"
	wait_for "mig_repair_connected $SRC $SOCK_SRC" 20 ||
		fail "source's passt-repair not connected to $SOCK_SRC.repair"
}

# ---- pattern streams between the peer and the guest (sockio pattern-*) ----

# qm_stream_start NAME PORT RATE: one connection, the guest connects to
# the peer ($PEER4 PORT); both ends send the pattern at RATE KiB/s and
# verify what they receive. The peer's progress is in $T/NAME.prog, the
# guest's in /tmp/NAME.prog; the peer's pid in QS_PID_NAME. Stopped by
# qm_stream_stop
qm_stream_start() {
	rm -f "$T/$1.ready" "$T/$1.stop" "$T/$1.prog"
	bg "$FABRIC" "$1.peer" /dev/null /dev/null "$SOCKIO" -t 0 --report \
		--ready "$T/$1.ready" --progress "$T/$1.prog" \
		--stop-file "$T/$1.stop" --send --rate "$3" \
		pattern-listen "$PEER4" "$2"
	eval "QS_PID_$1=$BG_PID"
	wait_ready "$T/$1.ready"
	g_bg "$1" "sockio -t 0 --report --progress /tmp/$1.prog \
		--stop-file /tmp/$1.stop --send --rate $3 \
		pattern-connect $PEER4 $2"
}

# peer_prog NAME KEY: rx, tx or end of the peer's side of stream NAME
peer_prog() {
	_v=$(tr ' ' '\n' <"$T/$1.prog" 2>/dev/null | sed -n "s/^$2=//p")
	echo "${_v:-0}"
}

# qm_streams_flowing BYTES NAME...: follow each stream NAME (started with
# qm_stream_start) in the guest's telemetry (tel_start NAME=/tmp/NAME.prog)
# and wait until the guest and the peer each received BYTES of it (30 s)
qm_streams_flowing() {
	local bytes=$1 n tel=()
	shift
	for n in "$@"; do
		tel+=("$n=/tmp/$n.prog")
	done
	tel_start "${tel[@]}"
	for n in "$@"; do
		wait_for "[ \$(tel_last $n rx) -ge $bytes ]" 30 ||
			fail "no stream $n to the guest: $(g_run "cat /tmp/$n.err")"
		wait_for "[ \$(peer_prog $n rx) -ge $bytes ]" 30 ||
			fail "no stream $n from the guest: $(cat "$T/$n.peer.err")"
	done
}

# qm_stream_stop NAME [TIMEOUT]: both ends stop sending, and end at the
# other's EOF. Sets QS_GUEST (the guest's last progress line), QS_ST_PEER
# and QS_ST_GUEST (exit statuses), QS_CHECK ("ok", or what is wrong:
# a status, an end that isn't eof, or bytes received != bytes sent)
qm_stream_stop() {
	touch "$T/$1.stop"
	g_run -t 10 "touch /tmp/$1.stop" >/dev/null || :
	eval "_pp=\$QS_PID_$1"
	bg_wait "$_pp" "${2:-30}" || :
	QS_ST_PEER=$BG_ST
	# A peer that failed leaves the guest waiting for the end of stream
	[ "$QS_ST_PEER" = 0 ] || g_run -t 10 "killall sockio" >/dev/null || :
	g_bg_wait "$1" "${2:-30}"
	QS_ST_GUEST=$BG_ST
	QS_GUEST=$(g_run -t 10 "cat /tmp/$1.prog") || QS_GUEST=
	_g() {
		printf '%s\n' "$QS_GUEST" | tr ' ' '\n' | sed -n "s/^$1=//p"
	}
	QS_G_RX=$(_g rx) QS_G_TX=$(_g tx) QS_G_END=$(_g end)
	QS_CHECK=
	[ "$QS_ST_PEER" = 0 ] || QS_CHECK="$QS_CHECK peer exit $QS_ST_PEER,"
	[ "$QS_ST_GUEST" = 0 ] || QS_CHECK="$QS_CHECK guest exit $QS_ST_GUEST,"
	[ "$(peer_prog "$1" end)" = eof ] ||
		QS_CHECK="$QS_CHECK peer end $(peer_prog "$1" end),"
	[ "$QS_G_END" = eof ] || QS_CHECK="$QS_CHECK guest end $QS_G_END,"
	[ "$QS_G_RX" = "$(peer_prog "$1" tx)" ] ||
		QS_CHECK="$QS_CHECK guest got $QS_G_RX of $(peer_prog "$1" tx),"
	[ "$(peer_prog "$1" rx)" = "$QS_G_TX" ] ||
		QS_CHECK="$QS_CHECK peer got $(peer_prog "$1" rx) of $QS_G_TX,"
	QS_CHECK=${QS_CHECK%,}
	QS_CHECK=${QS_CHECK# }
	[ -n "$QS_CHECK" ] || QS_CHECK=ok
}

# qm_switch_arm W: before qm_migrate: the fabric will route the pod
# address to DST W s after the target runs the guest. A background watcher
# sees the target's RESUME event as it is logged (no fork per poll: a
# loaded machine must not stretch W), sleeps W s, switches
qm_switch_arm() {
	rm -f "$T/switched"
	(
		exec 3<"$T/qmp-dst.log"
		while :; do
			if IFS= read -r -u 3 _l; then
				case "$_l" in
				*'"event": "RESUME"'*) break ;;
				esac
			else
				sleep 0.02
			fi
		done
		# W from the event's own time stamp (QEMU's clock), however
		# late we read it
		_re='"seconds": ([0-9]+), "microseconds": ([0-9]+)'
		_t=$(ms_now)
		[[ $_l =~ $_re ]] &&
			_t=$((BASH_REMATCH[1] * 1000 + 10#${BASH_REMATCH[2]} / 1000))
		_left=$((_t + $1 * 1000 - $(ms_now)))
		echo "RESUME at $_t, read at $(ms_now), sleeping $_left ms" \
			>"$T/switch.log"
		[ "$_left" -le 0 ] ||
			sleep "$((_left / 1000)).$(printf %03d $((_left % 1000)))"
		mig_fabric_to dst
		ms_now >"$T/switched.tmp"
		mv "$T/switched.tmp" "$T/switched"
	) &
	QM_SW_PID=$!
	track "$QM_SW_PID"
}

# qm_switch_wait: wait for the armed switch; sets QM_T_SWITCH (host ms)
qm_switch_wait() {
	wait_for "[ -s '$T/switched' ]" 60 || fail "the fabric did not switch"
	wait "$QM_SW_PID" 2>/dev/null || :
	QM_T_SWITCH=$(cat "$T/switched")
	MIG_FABRIC=dst
}

# qm_switch_after W: switch W s after the target ran the guest (QM_T_RUN),
# or at once if that's past. Sets QM_T_SWITCH
qm_switch_after() {
	_left=$((QM_T_RUN + $1 * 1000 - $(ms_now)))
	[ "$_left" -le 0 ] ||
		sleep "$((_left / 1000)).$(printf %03d $((_left % 1000)))"
	mig_fabric_to dst
	QM_T_SWITCH=$(ms_now)
}

# qm_moved NAME BYTES TIMEOUT: wait until the guest received BYTES more
# on stream NAME than at the fabric switch (telemetry); QM_MOVED_MS: ms
# from the switch to the first sample that grew (empty if none). Returns
# 1 on timeout
qm_moved() {
	_r0=$(tel_get "$1" rx | awk -v t="$QM_T_SWITCH" '$1 <= t { r = $2 }
		END { print r + 0 }')
	_st=0
	wait_for "[ \$(tel_last $1 rx) -ge $((_r0 + $2)) ]" "$3" || _st=1
	QM_MOVED_MS=$(tel_get "$1" rx | awk -v t="$QM_T_SWITCH" -v r="$_r0" \
		'$1 >= t && $2 > r { print $1 - t; exit }')
	return "$_st"
}

# qm_ev_ms: the time stamp (ms) of the QMP event on stdin, QEMU's clock
qm_ev_ms() {
	jq -r '.timestamp.seconds * 1000 +
		(.timestamp.microseconds / 1000 | floor)'
}

# qm_qmp_event ROLE NAME: the time stamp (ms) of that QEMU's last QMP
# event NAME; empty if none
qm_qmp_event() {
	grep -F "\"event\": \"$2\"" "$T/qmp-$1.log" | tail -n 1 |
		cut -d' ' -f2- | qm_ev_ms
}
