#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_one_off.sh - --one-off around a migration as source
# (migrate-lib.sh topology), the two ways its front-end may go away:
#
#  1. A migration that failed after the source's CHECK_DEVICE_STATE went
#     through (vu-front "cancel": SAVE, CHECK = 0, then the rings start
#     again): the source takes its connections back, and --one-off has
#     its meaning again: when the front-end then goes away, the daemon
#     exits (it turns --one-off off while a completed migration lingers,
#     and must give it back when the guest runs here again).
#  2. The front-end goes away between the SAVE and its CHECK (vu-front
#     killed once the daemon has sent its state): the source can't know
#     whether the guest runs elsewhere now, and holds the connections
#     silently as in a linger, instead of exiting at once: a peer that
#     sends meanwhile (the fabric still routes to the source) gets no RST
#     from the pod. SIGUSR2 then ends it: exit 0, nothing sent.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tcpdump

mig_setup

# 1. Cancelled after CHECK: --one-off back
# (no mig_probe: its connection would end a --one-off daemon)
mig_pod_daemon src source --one-off --migrate-linger-timeout 600
a_pid=$D_PID a_log=$D_LOG
MIG_SOCK=$D_SOCK
guest_up
mig_repair_ready src "$D_SOCK"
mig_stream d1 down4 7201 --rate 256
mig_all_flowing 32768 20 d1 || fail "1: not flowing: $MIG_LAGGING"
mig_cancel || fail "1: $MIG_RESULT"
grep -q 'Migration: completed as source' "$a_log" ||
	fail "1: the source's CHECK didn't go through: $(grep Migration "$a_log" | tr '\n' ' ')"
grep -q 'the guest runs here again: 1 connection(s) resumed' "$a_log" ||
	fail "1: not resumed: $(grep Migration "$a_log" | tr '\n' ' ')"
mig_all_flowing 32768 20 d1 || fail "1: not flowing after the cancel: $MIG_LAGGING"
kill -TERM "$BRIDGE_PID"
mig_exit_wait "$a_pid" 10 ||
	fail "1: --one-off: the daemon outlives its front-end after a cancelled migration"
expect "1: exit status" "$MIG_EXIT_ST" 0
log "1: front-end gone after a cancelled migration: the daemon exited ($MIG_EXIT_MS ms)"
mig_stream_stop d1 5

# 2. The front-end goes away between SAVE and CHECK
mig_pod_daemon src source --one-off --migrate-linger-timeout 600
b_pid=$D_PID b_log=$D_LOG b_sock=$D_SOCK
MIG_SOCK=$b_sock
guest_up
mig_repair_ready src "$b_sock"
mig_stream d2 down4 7202 --rate 256
mig_all_flowing 32768 20 d2 || fail "2: not flowing: $MIG_LAGGING"
mig_pod_daemon dst target --migrate-linger-timeout 600
c_sock=$D_SOCK
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = save-sent ] || exit 0
until_ok "grep -q 'Migration: state sent' '$b_log'"
kill -KILL $BRIDGE_PID
EOF
rst0=$(mig_rsts "$SRC")
mig_trigger "migrate $c_sock"
wait_for "! alive $BRIDGE_PID" 10 || fail "2: vu-front still running"
# The peer keeps sending to the source pod (the fabric never switched):
# the source must stay, silent, for those 2 s
! wait_for "! alive $b_pid" 2 2>/dev/null ||
	fail "2: the source exited when its front-end went away between SAVE and CHECK: $(tail -n 3 "$b_log" | tr '\n' ' ')"
grep -q 'the front-end went away before confirming the state: holding 1 connection' "$b_log" ||
	fail "2: $(grep -E 'Migration|vhost' "$b_log" | tr '\n' ' ')"
d2_rx=$(mig_prog d2 c rx)
expect "2: RSTs from the source pod while it holds" $(($(mig_rsts "$SRC") - rst0)) 0
kill -USR2 "$b_pid"
mig_exit_wait "$b_pid" 10 || fail "2: the source ignores SIGUSR2"
expect "2: exit status" "$MIG_EXIT_ST" 0
grep -q 'Linger: ended (SIGUSR2' "$b_log" || fail "2: $(grep Linger "$b_log")"
log "2: front-end gone between SAVE and CHECK: held 1 connection silently, no RST; the guest had $d2_rx bytes"
sanitizer_check "$T"/*/passt.socket.err
