#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_held_release.sh - uploads restored by a migration and parked at
# the release, while the guest runs on the target and the target's repair
# helper is late, move again at once when the helper comes back (issue 51;
# migrate-lib.sh topology; two streams guest -> peer at 8 MiB/s each, IPv4
# and IPv6):
#
#  1. The target's helper (repairstub) answers the LOAD (repair on) and
#     stalls at the release (repair off): the guest runs on the target,
#     the fabric switched, and both connections wait, parked, their
#     sockets in repair mode. The source lingers, silent.
#  2. The helper goes on right after the guest's fourth retransmission
#     timeout of an upload, or MIG_HOLD_MS (default 8000) after the stall,
#     whichever comes first (a helper silent for 10 s is dropped): each
#     receiver must get 1 MiB more within MIG_MOVE_MS (2000). What the guest
#     sent meanwhile was kept and ACKed (tcp/kept.c), and goes to the
#     socket after the migration's never-sent data; dropped, the guest's
#     backed-off retransmission timer would have the uploads wait.
#  3. Every byte arrives, no RST from the target pod.
# PT_TIMEOUT: 180
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

NAMES="u0 u1"

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_pid=$D_PID
mig_stream u0 up4 7611 --rate 8192
mig_stream u1 up6 7612 --rate 8192
# shellcheck disable=SC2086
mig_all_flowing 1048576 30 $NAMES || fail "not flowing: $MIG_LAGGING"

# 1. The target's helper answers the LOAD, stalls at the release
mig_pod_daemon dst source --migrate-linger-timeout 600
b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
rm -f "$T/rel.go"
ip netns exec "$DST" "$STUB" -s 2 -g "$T/rel.go" "$b_sock.repair" \
	2>"$T/rel.err" &
track $!
wait_for "mig_repair_connected $DST $b_sock" 10 ||
	fail "repairstub: $(cat "$T/rel.err")"
rst0=$(mig_rsts "$DST")
mig_migrate_switch "$b_sock" dst 0 || fail "1: $MIG_RESULT"
wait_for "grep -q 'stalling at request 2' '$T/rel.err'" 20 ||
	fail "1: repairstub: $(tr '\n' ' ' <"$T/rel.err")"
t0=$(now_ms)
wait_for "grep -q \"Migration: 2 restored connection(s) can't leave repair mode\" '$b_log'" 10 ||
	fail "1: $(grep -E 'Migration|passt-repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
log "1: the guest runs on the target, 2 uploads parked"

# 2. Until the guest's fourth timeout, or MIG_HOLD_MS: the peers get
# nothing; then the helper goes on
# shellcheck disable=SC2086
mig_held_release 2 "$T/rel.go" "$t0" 7611 7612 $NAMES
wait_for "grep -q 'answers again: 2 of 2 restored connection(s) that waited for it resumed, 0 reset' '$b_log'" 10 ||
	fail "2: $(grep -E 'Migration|passt-repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
mig_held_check 2

# 3. Every byte; no RST from the target
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "3: the old source ignores SIGUSR2"
# shellcheck disable=SC2086
mig_all_flowing 1048576 30 $NAMES ||
	fail "3: not flowing after the helper came back: $MIG_LAGGING"
# shellcheck disable=SC2086
mig_streams_verify $NAMES
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst0)) 0
mig_stop "$b_pid"
log "3: every byte arrived, no RST"
sanitizer_check "$T"/*/passt.socket.err
