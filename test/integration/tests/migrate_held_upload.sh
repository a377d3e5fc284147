#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_held_upload.sh - uploads held by a failed migration, while the
# guest runs here again and the repair helper is late, move again at once
# when the helper comes back (issue 51; migrate-lib.sh topology; four
# streams guest -> peer at 8 MiB/s each, IPv4 and IPv6):
#
#  1. The source's helper (repairstub) stalls at the SAVE's first request
#     (repair on for all four sockets): the SAVE fails after 1 s, the
#     migration with it, and vu-front resumes the source. The four
#     connections stay held (deaf, out of the loop, maybe in repair mode)
#     while the guest runs here and keeps sending.
#  2. The helper goes on, and the daemon takes the sockets back, right
#     after the guest's fourth retransmission timeout of an upload (its
#     socket's backoff at 4: the next one is 16 RTOs, 3.2 s or more,
#     away), or MIG_HOLD_MS after the trigger (default 8000: a helper silent
#     for 10 s is dropped) if that comes first. Each receiver must get
#     1 MiB more within MIG_MOVE_MS (2000) of that: more than our queues could
#     hold, so some of it the guest sent after the hold. A held connection that
#     dropped what the guest sent leaves the guest's retransmission timer
#     backed off for as long as the hold lasted, and the next
#     retransmission, seconds later, is the first thing the peer gets
#     (rto:6528 backoff:5 was seen in migrate_helper_late.sh). One that
#     kept and ACKed it (tcp/kept.c) writes it at once.
#  3. Every stream then moves on, every byte arrives (sockio verifies the
#     pattern), and no RST leaves the pod.
#  4. Two more uploads, held the same way, but the helper sets repair mode
#     before it stalls, and never answers: 30 s later they are reset
#     (towards the guest; closed in repair mode, the peer hears nothing),
#     and what they kept goes with them; the daemon then exits, and a
#     sanitizer build's leak check finds nothing.
# PT_TIMEOUT: 300
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

NAMES="u0 u1 u2 u3"

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG
a_helper=$MIG_RPID
mig_stream u0 up4 7601 --rate 8192
mig_stream u1 up4 7602 --rate 8192
mig_stream u2 up6 7603 --rate 8192
mig_stream u3 up6 7604 --rate 8192
# shellcheck disable=SC2086
mig_all_flowing 1048576 30 $NAMES || fail "not flowing: $MIG_LAGGING"
rst0=$(mig_rsts "$SRC")

# stall STEP HELPER_PID N [OPTION]: the helper HELPER_PID goes, a
# repairstub that stalls at the first request until $T/STEP.go exists
# (with OPTION: -a, it applies it first) takes its place; a migration
# fails at the SAVE, N connections stay held. Sets STUB_PID, t0
stall() {
	kill -KILL "$2" 2>/dev/null || :
	wait_for "! mig_repair_connected $SRC $a_sock" 10 ||
		fail "$1: the helper of $a_sock is still connected"
	rm -f "$T/$1.go"
	# shellcheck disable=SC2086
	ip netns exec "$SRC" "$STUB" -s 1 -g "$T/$1.go" ${4:-} \
		"$a_sock.repair" 2>"$T/$1.err" &
	STUB_PID=$!
	track "$STUB_PID"
	wait_for "mig_repair_connected $SRC $a_sock" 10 ||
		fail "$1: repairstub: $(cat "$T/$1.err")"
	mig_pod_daemon dst target --migrate-linger-timeout 600
	t0=$(now_ms)
	if mig_migrate "$D_SOCK" 30; then
		fail "$1: the migration went through: $(grep Migration "$a_log" | tail -n 3 | tr '\n' ' ')"
	fi
	[ "$(mig_field stage)" = save ] || fail "$1: $MIG_RESULT"
	grep -q 'stalling at request 1' "$T/$1.err" ||
		fail "$1: repairstub: $(tr '\n' ' ' <"$T/$1.err")"
	_held=$(sed -n 's/.*refusing to save the state; \([0-9]*\) connection(s) the helper may have put in repair mode stay held.*/\1/p' "$a_log" | tail -n 1)
	expect "$1: connections held" "${_held:-none}" "$3"
	mig_stop "$D_PID"
	log "$1: the SAVE failed after $(($(now_ms) - t0)) ms, $3 uploads held"
}

# 1. The helper stalls at the SAVE's first request
stall 1 "$a_helper" 4

# 2. The hold: the peers get nothing (the sockets are deaf and out of the
# loop), until the guest's fourth timeout, or MIG_HOLD_MS; then the helper
# goes on
# shellcheck disable=SC2086
mig_held_release 2 "$T/1.go" "$t0" 7601 7604 $NAMES
grep -q 'a repair helper connected or answered: 4 connection(s) held by the failed migration resumed' "$a_log" ||
	wait_for "grep -q 'a repair helper connected or answered: 4 connection(s) held by the failed migration resumed' '$a_log'" 10 ||
	fail "2: $(grep -E 'Migration|passt-repair' "$a_log" | tail -n 4 | tr '\n' ' ')"
mig_held_check 2

# 3. They go on; every byte arrives; no RST
# shellcheck disable=SC2086
mig_all_flowing 1048576 30 $NAMES ||
	fail "3: not flowing after the helper came back: $MIG_LAGGING"
# shellcheck disable=SC2086
mig_streams_verify $NAMES
expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst0)) 0
log "3: every byte arrived, no RST"

# 4. The helper never answers: reset after 30 s, what was kept freed
mig_stream d0 up4 7605 --rate 8192
mig_stream d1 up6 7606 --rate 8192
mig_all_flowing 1048576 30 d0 d1 || fail "4: not flowing: $MIG_LAGGING"
stall 4 "$STUB_PID" 2 -a
wait_for "grep -q 'no passt-repair helper in 30 s: 2 connection(s) held by the failed migration reset' '$a_log'" 60 ||
	fail "4: $(grep -E 'Migration|passt-repair' "$a_log" | tail -n 4 | tr '\n' ' ')"
alive "$a_pid" || fail "4: the daemon is gone"
mig_stop "$a_pid"
log "4: the helper never answered: 2 held uploads reset, the daemon exited"
sanitizer_check "$T"/*/passt.socket.err
