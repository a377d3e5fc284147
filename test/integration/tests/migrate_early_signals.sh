#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_early_signals.sh - the linger's signals when they come before
# the migration is confirmed: between the source's SAVE (its connections
# held, its state written) and CHECK_DEVICE_STATE (migrate-lib.sh
# topology; a stream each way at 256 KiB/s):
#
#  1. SIGTERM: the source doesn't exit at once (its peers' next segments
#     would meet no socket and draw RSTs while the fabric still routes to
#     it): it ends as a lingering source does on SIGTERM, within 2 s,
#     status 0, having held the connections silently. The fabric switches
#     500 ms after the target runs the guest: no RST from the source pod,
#     and both streams go on through the target.
#  2. SIGUSR2 ("the fabric switched"): not forgotten, it ends the linger
#     as soon as the migration completes. The signal must tell the truth:
#     the fabric stops delivering to the source pod first (its link goes
#     down: what still comes is dropped, as a fabric that switched away
#     from it does; routing to the target before it runs would draw the
#     target pod's RSTs), then routes to the target as it runs the guest.
# At the end every byte of both streams is checked.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

# early_hook LOG SIGNAL PID [CMD]: at save-sent, once LOG says the state
# is sent, CMD, then SIGNAL to PID (before vu-front asks
# CHECK_DEVICE_STATE)
early_hook() {
	mig_hook_until >"$MIG_PHASE_HOOK"
	cat >>"$MIG_PHASE_HOOK" <<-EOF
		[ "\$MIG_PHASE" = save-sent ] || exit 0
		until_ok "grep -q 'Migration: state sent' '$1'"
		${4:-}
		kill -$2 $3
		date +%s%N >"$T/signal.at"
	EOF
}

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_pid=$D_PID a_log=$D_LOG a_sock=$D_SOCK
mig_stream dn down4 7301 --rate 256
mig_stream up up6 7302 --rate 256
mig_all_flowing 32768 20 dn up || fail "not flowing: $MIG_LAGGING"

# 1. SIGTERM before CHECK
mig_pod_daemon dst target --migrate-linger-timeout 600
b_pid=$D_PID b_log=$D_LOG b_sock=$D_SOCK
mig_repair_ready src "$a_sock"
early_hook "$a_log" TERM "$a_pid"
rst0=$(mig_rsts "$SRC")
mig_migrate_switch "$b_sock" dst 500 || fail "1: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
mig_exit_wait "$a_pid" 10 || fail "1: the source doesn't end after SIGTERM"
held_ms=$(($(now_ms) - $(cat "$T/signal.at") / 1000000))
expect "1: the source's exit status" "$MIG_EXIT_ST" 0
grep -q 'Linger: ended (SIGTERM): 2 connection(s) held' "$a_log" ||
	fail "1: $(grep -E 'Linger|Migration|Signal' "$a_log" | tr '\n' ' ')"
[ "$held_ms" -ge 1500 ] ||
	fail "1: the source ended $held_ms ms after SIGTERM, holding its connections less than the 2 s it promises"
mig_all_flowing 32768 20 dn up || fail "1: not flowing: $MIG_LAGGING"
expect "1: RSTs from the source pod" $(($(mig_rsts "$SRC") - rst0)) 0
log "1: SIGTERM before CHECK: the source held its connections ~$held_ms ms, no RST"

# 2. SIGUSR2 before CHECK
mig_pod_daemon src target --migrate-linger-timeout 600
c_sock=$D_SOCK
mig_repair_ready dst "$b_sock"
early_hook "$b_log" USR2 "$b_pid" "ip -n $DST link set eth0 down"
rst0=$(mig_rsts "$DST")
mig_migrate_switch "$c_sock" src 0 || fail "2: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
mig_exit_wait "$b_pid" 5 ||
	fail "2: a SIGUSR2 before CHECK was lost: the source lingers on ($(grep -E 'Linger|SIGUSR2' "$b_log" | tr '\n' ' '))"
expect "2: the source's exit status" "$MIG_EXIT_ST" 0
grep -q 'Linger: ended (SIGUSR2, before the migration completed' "$b_log" ||
	fail "2: $(grep -E 'Linger|SIGUSR2' "$b_log" | tr '\n' ' ')"
mig_all_flowing 32768 20 dn up || fail "2: not flowing: $MIG_LAGGING"
expect "2: RSTs from the DST pod" $(($(mig_rsts "$DST") - rst0)) 0
mig_pod_link dst up
log "2: SIGUSR2 before CHECK ended the linger as it started"

mig_streams_verify dn up
sanitizer_check "$T"/*/passt.socket.err
