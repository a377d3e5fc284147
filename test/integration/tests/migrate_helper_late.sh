#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_helper_late.sh - a repair helper that stops answering in the
# middle of a migration step (D2, D4; migrate-lib.sh topology). 300
# streams (half peer -> guest, half guest -> peer, IPv4, two sockio
# processes) make three helper requests per step (128 sockets each). Each
# step waits 1 s for the helper in all, then goes on without it, and the
# helper that comes back finishes the job:
#
#  save:    the source's helper (repairstub) answers the first request of
#           the SAVE (repair on for 128 sockets) and stalls at the second.
#           The SAVE fails (the migration with it: vu-front resumes the
#           source) and the 256 connections of the two requests stay held,
#           silent; the others go on at once, and so does a new stream.
#           When the helper goes on, they all come back.
#  load:    the target's helper (passt-repair) is stopped (SIGSTOP) once
#           the source saved its state: the LOAD fails as a whole, the
#           source takes every connection back; SIGCONT, and the target's
#           helper answers, late, and is kept.
#  release: the target's helper (repairstub) answers the LOAD and the
#           release's first request (repair off for 128 sockets), and
#           stalls at the second: 128 connections go live, the others wait,
#           parked; a new stream moves through the target meanwhile. When
#           the helper goes on, they go live too.
#  kill:    the source's helper (repairstub) dies at the SAVE's second
#           request, unanswered: the SAVE fails, the first request's 128
#           connections, in repair mode, stay held, silent, and a new
#           helper takes them back.
#
# Each step: no RST leaves either pod, nothing ends any stream while it
# waits, the daemon's log names passt-repair and its socket, and, at the
# end, every byte of every stream is checked. MIG_LATE_STEPS (default
# "save load release kill") picks the steps.
# PT_TIMEOUT: 360
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox
[ "$MIG_DIRECT" = 0 ] || skip "the test needs the repair helper"
STUB=$TOOLS/repairstub
[ -x "$STUB" ] || fail "no repairstub in $TOOLS"

N=300
STEPS=${MIG_LATE_STEPS:-save load release kill}

# helper_gone NS SOCK PID: kill the helper PID of the daemon at SOCK in
# pod NS, and wait until the daemon's end of its connection is gone
helper_gone() {
	kill -KILL "$3" 2>/dev/null || :
	wait_for "! mig_repair_connected $1 $2" 10 ||
		fail "the helper of $2 is still connected"
}

# stub NS SOCK NAME STALL: repairstub for the daemon at SOCK in pod NS,
# stalling at request STALL until $T/NAME.go exists; its messages in
# $T/NAME.err
stub() {
	rm -f "$T/$3.go"
	ip netns exec "$1" "$STUB" -s "$4" -g "$T/$3.go" "$2.repair" \
		2>"$T/$3.err" &
	track $!
	wait_for "mig_repair_connected $1 $2" 10 ||
		fail "repairstub: $(cat "$T/$3.err")"
}

# no_end: no stream ended (a RST to the guest or the peer would end one)
no_end() {
	_ne=$(many_rx 1 | awk '$5 != "end=running" { k++ } END { print k + 0 }')
	[ "$_ne" = 0 ] || fail "$1: $_ne stream end(s) ended: $(many_rx 1 | grep -v end=running | head -n 3 | tr '\n' ' ')"
}

# rsts WHAT: no RST from either pod since rst_src0/rst_dst0
rsts() {
	expect "$1: RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src0)) 0
	expect "$1: RSTs from the target pod" $(($(mig_rsts "$DST") - rst_dst0)) 0
}

in_steps() {
	case " $STEPS " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG
a_helper=$MIG_RPID
many_start 1 9000 "$N" 4
many_flowing 1 "$N" 4096 90 || fail "streams not flowing: $MIG_LAGGING"
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
port=9900

if in_steps save; then
	# The source's helper answers the SAVE's first request, stalls at
	# its second
	helper_gone "$SRC" "$a_sock" "$a_helper"
	stub "$SRC" "$a_sock" save 2
	mig_pod_daemon dst target --migrate-linger-timeout 600
	b_pid=$D_PID
	t0=$(now_ms)
	if mig_migrate "$D_SOCK" 30; then
		fail "save: the migration went through: $(grep Migration "$a_log" | tail -n 3 | tr '\n' ' ')"
	fi
	log "save: the migration failed in $(($(now_ms) - t0)) ms: $MIG_RESULT"
	[ "$(mig_field stage)" = save ] || fail "save: $MIG_RESULT"
	grep -q 'stalling at request 2' "$T/save.err" ||
		fail "save: repairstub: $(tr '\n' ' ' <"$T/save.err")"
	# The guest's data path: a new stream, and the connections that were
	# never asked for repair mode
	# -t 600: the new streams live until the end, which a loaded machine
	# may put past sockio's 120 s
	mig_stream b1 up4 $port --rate 4096 -t 600
	mig_all_flowing 1048576 30 b1 ||
		fail "save: a new stream doesn't move while the helper stalls: $MIG_LAGGING"
	many_moving 1 "$N" 4096 30 $((N - 256)) ||
		fail "save: only $MANY_MOVED of the $((N - 256)) streams not held move"
	no_end save
	rsts "save, held"
	grep -q "Migration: passt-repair on $a_sock.repair hasn't answered in 1000 ms" "$a_log" ||
		fail "save: no line naming passt-repair: $(grep -E 'Migration|Repair' "$a_log" | tail -n 4 | tr '\n' ' ')"
	held=$(sed -n 's/.*refusing to save the state; \([0-9]*\) connection(s) the helper may have put in repair mode stay held.*/\1/p' "$a_log" | tail -n 1)
	expect "save: connections held (two requests)" "${held:-none}" 256
	mig_repair_connected "$SRC" "$a_sock" ||
		fail "save: the daemon dropped the late helper"
	log "save: 256 held, $MANY_MOVED streams and a new one move"

	# The helper goes on: everything comes back
	touch "$T/save.go"
	wait_for "grep -q 'a repair helper connected or answered: 256 connection(s) held by the failed migration resumed' '$a_log'" 20 ||
		fail "save: $(grep -E 'Migration|passt-repair' "$a_log" | tail -n 4 | tr '\n' ' ')"
	grep -q "passt-repair on $a_sock.repair answered, late" "$a_log" ||
		fail "save: $(grep -E 'Migration|passt-repair' "$a_log" | tail -n 4 | tr '\n' ' ')"
	many_flowing 1 "$N" 4096 60 ||
		fail "save: streams not flowing after the helper came back: $MIG_LAGGING"
	no_end save
	rsts save
	mig_stop "$b_pid"
	log "save: the helper came back: every stream moves, no RST"
	port=$((port + 1))
fi

if in_steps load; then
	# The target's helper stops once the source saved its state
	mig_repair_ready src "$a_sock"
	mig_pod_daemon dst target --migrate-linger-timeout 600
	b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
	b_helper=$MIG_RPID
	mig_hook_until >"$MIG_PHASE_HOOK"
	cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = saved ] || exit 0
kill -STOP $b_helper
EOF
	t0=$(now_ms)
	if mig_migrate "$b_sock" 30; then
		kill -CONT "$b_helper"
		fail "load: the migration went through: $(grep Migration "$b_log" | tail -n 3 | tr '\n' ' ')"
	fi
	rm -f "$MIG_PHASE_HOOK"
	log "load: the migration failed in $(($(now_ms) - t0)) ms: $MIG_RESULT"
	[ "$(mig_field stage)" = load ] || { kill -CONT "$b_helper"; fail "load: $MIG_RESULT"; }
	mig_stream b2 up4 $port --rate 4096 -t 600
	mig_all_flowing 1048576 30 b2 ||
		fail "load: a new stream doesn't move: $MIG_LAGGING"
	many_flowing 1 "$N" 4096 60 ||
		fail "load: streams not flowing after the failed LOAD: $MIG_LAGGING"
	no_end load
	rsts "load, helper stopped"
	grep -q "Migration: passt-repair on $b_sock.repair hasn't answered in 1000 ms" "$b_log" ||
		fail "load: no line naming passt-repair: $(grep -E 'Migration|Repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
	grep -q "refusing the state (the source keeps the connections)" "$b_log" ||
		fail "load: $(grep -E 'Migration|Repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
	# The helper comes back: it answers, late, and stays
	kill -CONT "$b_helper"
	wait_for "grep -q 'passt-repair on $b_sock.repair answered, late' '$b_log'" 10 ||
		fail "load: $(grep -E 'Migration|Repair|passt-repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
	mig_repair_connected "$DST" "$b_sock" ||
		fail "load: the target dropped its helper"
	rsts load
	mig_stop "$b_pid"
	log "load: the LOAD failed, the source kept every connection; the helper answered late and was kept"
	port=$((port + 1))
fi

if in_steps release; then
	# The target's helper answers the LOAD (requests 1 to 3) and the
	# release's first request (4), stalls at the second (5)
	mig_repair_ready src "$a_sock"
	mig_pod_daemon dst source --migrate-linger-timeout 600
	b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
	stub "$DST" "$b_sock" release 5
	mig_migrate_switch "$b_sock" dst 0 || fail "release: $MIG_RESULT"
	wait_for "grep -q 'stalling at request 5' '$T/release.err'" 20 ||
		fail "release: repairstub: $(tr '\n' ' ' <"$T/release.err")"
	wait_for "grep -q 'Migration: the guest runs here' '$b_log'" 10 ||
		fail "release: $(grep -E 'Migration|passt-repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
	# The new streams of the earlier steps move too: they may be among the
	# first request's 128
	extra=0
	[ -z "${SL_b1:-}" ] || extra=$((extra + 1))
	[ -z "${SL_b2:-}" ] || extra=$((extra + 1))
	mig_stream b3 up4 $port --rate 4096 -t 600
	mig_all_flowing 1048576 30 b3 ||
		fail "release: a new stream doesn't move while the helper stalls: $MIG_LAGGING"
	many_moving 1 "$N" 4096 30 $((128 - extra)) ||
		fail "release: only $MANY_MOVED of the $((128 - extra)) released streams move"
	no_end release
	rsts "release, waiting"
	grep -q "Migration: passt-repair on $b_sock.repair hasn't answered in 1000 ms" "$b_log" ||
		fail "release: no line naming passt-repair: $(grep -E 'Migration|Repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
	# All but the first request's 128 wait
	total=$(sed -n 's/.*Migration: target, \([0-9]*\) of .*/\1/p' "$b_log" | tail -n 1)
	expect "release: connections restored" "${total:-none}" $((N + extra))
	wait_n=$(sed -n "s/.*Migration: \([0-9]*\) restored connection(s) can't leave repair mode without passt-repair on .*/\1/p" "$b_log" | tail -n 1)
	expect "release: connections waiting" "${wait_n:-none}" $((${total:-0} - 128))
	log "release: 128 live, $wait_n wait, $MANY_MOVED streams and a new one move"

	touch "$T/release.go"
	wait_for "grep -q 'answers again: $wait_n of $wait_n restored connection(s) that waited for it resumed, 0 reset' '$b_log'" 20 ||
		fail "release: $(grep -E 'Migration|passt-repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
	many_flowing 1 "$N" 4096 60 ||
		fail "release: streams not flowing after the helper came back: $MIG_LAGGING"
	kill -USR2 "$a_pid"
	mig_exit_wait "$a_pid" 10 || fail "release: the old source ignores SIGUSR2"
	no_end release
	rsts release
	log "release: the helper came back: every stream moves, no RST"
fi

if in_steps kill; then
	# The current pod's helper dies at the SAVE's second request
	cur=src cur_ns=$SRC cur_sock=$a_sock cur_log=$a_log
	if in_steps release; then
		cur=dst cur_ns=$DST cur_sock=$b_sock cur_log=$b_log
	fi
	# Whichever helper serves that daemon now: repairstub or passt-repair
	for _p in $(pgrep -f "$cur_sock.repair"); do
		case $(cat "/proc/$_p/comm" 2>/dev/null) in
		repairstub | passt-repair) helper_gone "$cur_ns" "$cur_sock" "$_p" ;;
		esac
	done
	! mig_repair_connected "$cur_ns" "$cur_sock" ||
		fail "kill: the helper of $cur_sock is still connected"
	ip netns exec "$cur_ns" "$STUB" -q 2 "$cur_sock.repair" 2>"$T/kill.err" &
	track $!
	wait_for "mig_repair_connected $cur_ns $cur_sock" 10 ||
		fail "kill: repairstub: $(cat "$T/kill.err")"
	[ "$cur" = src ] && to=dst || to=src
	mig_pod_daemon "$to" target --migrate-linger-timeout 600
	c_pid=$D_PID
	if mig_migrate "$D_SOCK" 30; then
		fail "kill: the migration went through: $(grep Migration "$cur_log" | tail -n 3 | tr '\n' ' ')"
	fi
	[ "$(mig_field stage)" = save ] || fail "kill: $MIG_RESULT"
	grep -q 'quitting at request 2' "$T/kill.err" ||
		fail "kill: repairstub: $(tr '\n' ' ' <"$T/kill.err")"
	mig_stop "$c_pid"
	many_moving 1 "$N" 4096 30 $((N - 128)) ||
		fail "kill: only $MANY_MOVED of the $((N - 128)) streams not held move"
	no_end kill
	rsts "kill, held"
	grep -q "can't leave repair mode without the passt-repair helper" "$cur_log" ||
		fail "kill: $(grep -E 'Migration|Repair' "$cur_log" | tail -n 4 | tr '\n' ' ')"
	mig_repair_ready "$cur" "$cur_sock"
	wait_for "grep -q 'a repair helper connected or answered: 128 connection(s) held by the failed migration resumed' '$cur_log'" 20 ||
		fail "kill: $(grep -E 'Migration|Repair' "$cur_log" | tail -n 4 | tr '\n' ' ')"
	many_flowing 1 "$N" 4096 60 ||
		fail "kill: streams not flowing after a new helper came: $MIG_LAGGING"
	no_end kill
	rsts kill
	log "kill: the helper died at the SAVE: 128 held until a new one came, every stream moves, no RST"
fi

many_verify 1 300 "$N"
expect "streams broken" "$MANY_BAD" 0
names=
for _s in b1 b2 b3; do
	[ -n "$(eval "echo \${SL_$_s:-}")" ] && names="$names $_s"
done
# The new streams went through every hold above, uploads all. A held
# connection drops what its guest sends (tcp/tcp.c: the guest runs
# elsewhere, or will), and the guest sends it again on its own
# retransmission timer, backed off for as long as the hold lasted (up to
# the 30 s a helper may take, and a loaded machine stretches every step
# here): the ACK we send when it comes back doesn't hurry a sender that
# timed out. So the verify gives them more than the default 60 s, and the
# guest's side of each is logged first (rto, backoff, unacked): a CI run
# under ASan once found b2 2 MB short after 60 s, and nothing said why
if [ -n "$names" ]; then
	for _s in $names; do
		eval "_p=\$PORT_$_s"
		log "$_s, the guest's socket before the verify: $(ns "$GUEST" ss -tinH "( dport = :$_p )" | tr -s ' \n' ' ')"
	done
	# shellcheck disable=SC2086
	MIG_VERIFY_TIMEOUT=150 mig_streams_verify $names
fi
rsts end
sanitizer_check "$T"/*/passt.socket.err
