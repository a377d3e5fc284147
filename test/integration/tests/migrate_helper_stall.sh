#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_helper_stall.sh - a repair helper that is slow to answer doesn't
# freeze the daemon (D4; migrate-lib.sh topology). After a migration the
# target pokes the peers of the restored connections ("k4", peer -> guest
# over IPv4, "k6", guest -> peer over IPv6), through the helper, while
# the guest runs there. The target's helper (repairstub) answers the
# LOAD's "on" (request 1) and the release's "off" (2), then stalls at the
# first poke (3) until the test lets it go on. Meanwhile:
#
#  - a new bulk stream "b", guest -> peer, made through the target after
#    the fabric switched, moves 1 MiB: the loop, and with it the guest's
#    data path, goes on while the helper hasn't answered (on main it sat
#    in poll() for 2 s, then gave up on the helper);
#  - the daemon keeps the helper: no "no answer" in its log, still
#    connected.
#
# Then the helper goes on: the poke completes, the poked connection comes
# back to the loop, and k4 and k6 move again. At the end every byte of
# the three streams is checked, and the target sent no RST.
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

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_pid=$D_PID
mig_stream k4 down4 7501 --rate 256
mig_stream k6 up6 7502 --rate 256
mig_all_flowing 32768 20 k4 k6 || fail "not flowing: $MIG_LAGGING"

# The target, with the stalling helper (the requests: the LOAD's on, the
# release's off, then the first poke's on)
mig_pod_daemon dst source --migrate-linger-timeout 600
b_sock=$D_SOCK b_log=$D_LOG
rm -f "$T/go"
ip netns exec "$DST" "$STUB" -s 3 -g "$T/go" "$b_sock.repair" \
	2>"$T/stub.err" &
stub_pid=$!
track "$stub_pid"
wait_for "mig_repair_connected $DST $b_sock" 10 ||
	fail "repairstub: $(cat "$T/stub.err")"
rst0=$(mig_rsts "$DST")

# Sentinel pokes start 600 ms after the release, the fabric switches 3 s
# after it: the stall comes first
mig_migrate_switch "$b_sock" dst 3000 || fail "migration: $MIG_RESULT"
wait_for "grep -q 'stalling at request 3' '$T/stub.err'" 20 ||
	fail "no poke reached the helper: $(tr '\n' ' ' <"$T/stub.err")"
log "the helper stalls at the first poke"

# The guest's data path, while the helper hasn't answered
mig_stream b up4 7503
mig_all_flowing 1048576 30 b ||
	fail "a new stream doesn't move while the helper stalls: $MIG_LAGGING; $(grep -E 'Repair|poke' "$b_log" | tail -n 3 | tr '\n' ' ')"
! grep -q 'going on' "$T/stub.err" ||
	fail "the helper went on by itself (its 120 s passed?)"
! grep -qE 'Repair helper: no answer in [0-9]+ ms$' "$b_log" ||
	fail "the daemon gave up on the helper: $(grep -E 'Repair|poke' "$b_log" | tr '\n' ' ')"
mig_repair_connected "$DST" "$b_sock" ||
	fail "the daemon dropped the helper: $(grep -E 'Repair|poke' "$b_log" | tr '\n' ' ')"
log "1 MiB moved on a new stream while the helper stalled, the helper kept"

# The helper answers: the poke completes, everything moves
touch "$T/go"
wait_for "grep -q 'request 4' '$T/stub.err'" 20 ||
	fail "the poke's off never came: $(tr '\n' ' ' <"$T/stub.err")"
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the old source ignores SIGUSR2"
mig_all_flowing 32768 30 k4 k6 b ||
	fail "not flowing after the poke: $MIG_LAGGING; $(grep -E 'Migration|Repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
! grep -qE 'Repair helper: no answer in [0-9]+ ms$' "$b_log" ||
	fail "the daemon gave up on the helper: $(grep -E 'Repair|poke' "$b_log" | tr '\n' ' ')"
mig_repair_connected "$DST" "$b_sock" || fail "the daemon dropped the helper"
expect "RSTs from the DST pod" $(($(mig_rsts "$DST") - rst0)) 0
log "the poke completed: every stream moves, the helper kept, no RST"

mig_streams_verify k4 k6 b
sanitizer_check "$T"/*/passt.socket.err
