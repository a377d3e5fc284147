#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_helper_gone.sh - the repair helper gone when a migration needs
# it (migrate-lib.sh topology; streams "k4", peer -> guest over IPv4, and
# "k6", guest -> peer over IPv6). KubeVirt's virt-handler gives each
# passt-repair 60 s, which a long pre-copy outlasts:
#
#  1. The source's helper, connected before, is gone at the SAVE: the
#     source refuses the SAVE (nothing would move: every connection would
#     be lost), the migration fails, the guest goes on here with both
#     streams intact, no RST, and the log says why.
#  2. The source's helper dies once the state is saved, and the migration
#     fails (cancelled): the held connections can't leave repair mode.
#     They stay held, silent (no RST, no FIN), and a helper that connects
#     takes them back: both streams go on.
#  3. The target's helper dies between the two halves of a poke (repair
#     mode on applied, off never: repairstub -q): the connection it left
#     in repair mode waits out of the loop, and a helper that connects
#     takes it back: it goes on.
# At the end every byte of both streams is checked.
# PT_TIMEOUT: 240
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox
[ "$MIG_DIRECT" = 0 ] || skip "the test kills the repair helpers"
STUB=$TOOLS/repairstub
[ -x "$STUB" ] || fail "no repairstub in $TOOLS"

# helper_gone NS SOCK PID: kill the helper PID of the daemon at SOCK in
# pod NS, and wait until the daemon's end of its connection is gone
helper_gone() {
	kill -KILL "$3" 2>/dev/null || :
	wait_for "! mig_repair_connected $1 $2" 10 ||
		fail "the helper of $2 is still connected"
}

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG
a_helper=$MIG_RPID
mig_stream k4 down4 7401 --rate 256
mig_stream k6 up6 7402 --rate 256
mig_all_flowing 32768 20 k4 k6 || fail "not flowing: $MIG_LAGGING"

# 1. The helper is gone at the SAVE
mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK b_pid=$D_PID
helper_gone "$SRC" "$a_sock" "$a_helper"
rst0=$(mig_rsts "$SRC")
if mig_migrate "$b_sock"; then
	fail "1: the migration went through without moving the connections: $(grep Migration "$a_log" | tr '\n' ' ')"
fi
grep -q 'Migration: refusing to save the state: the passt-repair helper that was connected is gone, and the 2 connection' "$a_log" ||
	fail "1: $(grep Migration "$a_log" | tr '\n' ' ')"
mig_all_flowing 32768 20 k4 k6 || fail "1: not flowing: $MIG_LAGGING"
expect "1: RSTs from the source pod" $(($(mig_rsts "$SRC") - rst0)) 0
mig_stop "$b_pid"
log "1: helper gone at the SAVE: migration refused, both streams go on"

# 2. The helper dies once the state is saved; the migration fails
mig_repair_ready src "$a_sock"
a_helper=$MIG_RPID
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = saved ] || exit 0
kill -KILL $a_helper
until_ok "! ip netns exec $SRC ss -xH state established | grep -qF '$a_sock.repair'"
EOF
rst0=$(mig_rsts "$SRC")
mig_cancel || fail "2: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
grep -q "2 connection(s) can't leave repair mode without the passt-repair helper" "$a_log" ||
	fail "2: $(grep Migration "$a_log" | tail -n 3 | tr '\n' ' ')"
# Held, silent: nothing ends either stream while no helper is there
! wait_for "[ \$(mig_prog k4 c end) != running ] || [ \$(mig_prog k6 c end) != running ] || [ \$(mig_prog k4 l end) != running ] || [ \$(mig_prog k6 l end) != running ]" 2 2>/dev/null ||
	fail "2: a stream ended while held: k4 $(mig_prog k4 c end)/$(mig_prog k4 l end), k6 $(mig_prog k6 c end)/$(mig_prog k6 l end)"
expect "2: RSTs from the source pod while held" $(($(mig_rsts "$SRC") - rst0)) 0
mig_repair_ready src "$a_sock"
wait_for "grep -q 'a repair helper connected or answered: 2 connection(s) held by the failed migration resumed' '$a_log'" 10 ||
	fail "2: $(grep Migration "$a_log" | tail -n 3 | tr '\n' ' ')"
mig_all_flowing 32768 20 k4 k6 || fail "2: not flowing: $MIG_LAGGING"
expect "2: RSTs from the source pod" $(($(mig_rsts "$SRC") - rst0)) 0
log "2: helper gone after the SAVE, migration failed: held until a helper came, both streams go on"

# 3. The target's helper dies between a poke's "on" and its "off": its
# requests are the LOAD's on (1), the release's off (2), then the pokes'
# on (3) and off (4)
mig_pod_daemon dst source --migrate-linger-timeout 600
b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
ip netns exec "$DST" "$STUB" -q 4 "$b_sock.repair" 2>"$T/stub.err" &
track $!
wait_for "mig_repair_connected $DST $b_sock" 10 || fail "3: repairstub: $(cat "$T/stub.err")"
mig_repair_ready src "$a_sock"
rst0=$(mig_rsts "$DST")
mig_migrate_switch "$b_sock" dst 3000 || fail "3: $MIG_RESULT"
grep -q 'quitting at request 4' "$T/stub.err" ||
	fail "3: repairstub: $(tr '\n' ' ' <"$T/stub.err")"
wait_for "grep -q 'a poke left 1 connection(s) in repair mode' '$b_log'" 10 ||
	fail "3: $(grep -E 'Migration|Repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "3: the old source ignores SIGUSR2"
mig_repair_ready dst "$b_sock"
wait_for "grep -q 'left in repair mode by a gone helper taken back' '$b_log'" 10 ||
	fail "3: $(grep -E 'Migration|Repair' "$b_log" | tail -n 4 | tr '\n' ' ')"
mig_all_flowing 32768 20 k4 k6 || fail "3: not flowing: $MIG_LAGGING"
expect "3: RSTs from the DST pod" $(($(mig_rsts "$DST") - rst0)) 0
log "3: the target's helper died in a poke: the connection waited, a new helper took it back"

mig_streams_verify k4 k6
sanitizer_check "$T"/*/passt.socket.err
