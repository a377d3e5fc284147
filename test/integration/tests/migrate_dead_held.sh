#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_dead_held.sh - a connection that dies while the source holds it
# neither fails the migration nor breaks the next one (migrate-lib.sh
# topology).
#
# Four pattern streams: "r4" (guest -> peer, IPv4), "r6" (peer -> guest,
# IPv6), both reset by the peer at the switch-over, and "k4" (peer ->
# guest, IPv4) and "k6" (guest -> peer, IPv6), which go on. As in
# migrate_fin_save.sh, the source's repair helper is stopped once the
# rings are, so the daemon holds the connections at the SAVE request and
# waits for the helper; meanwhile the peer resets r4 and r6 (ss -K: an
# RST each), the source's kernel takes the RSTs, and then the helper goes
# on. The dead sockets are held and dumped like the others (and their
# error events, already queued, reach the daemon after the SAVE). The
# peer sends with a TTL of 255, as migrate_fin_save.sh says why.
#
# Checked: the migration succeeds (a dead socket once made the source
# write a record its own reader refused: the whole stream was refused);
# on the target the guest's ends of r4 and r6 see a reset (the truth: the
# peer reset them), and k4 and k6 go on; then a second migration, back
# to a fresh daemon in SRC, succeeds too (an error event handled after
# the SAVE once freed a held connection without counting it, and every
# later SAVE wrote a wrong number of connections); at the end k4 and k6
# arrive byte-exact, and no RST leaves either pod for them.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox
[ "$MIG_DIRECT" = 0 ] || skip "the test stops the repair helper"

mig_setup
mig_peer_ttl 255
mig_pod_daemon src source --migrate-linger-timeout 600
src_sock=$D_SOCK src_pid=$D_PID
mig_probe "$src_sock"
MIG_SOCK=$src_sock
guest_up

mig_stream r4 up4 7701 --rate 128
mig_stream r6 down6 7702 --rate 128
mig_stream k4 down4 7703 --rate 256
mig_stream k6 up6 7704 --rate 256
mig_all_flowing 32768 20 r4 r6 k4 k6 || fail "streams not flowing: $MIG_LAGGING"

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
helper_pid=$MIG_RPID

# The peer resets r4 and r6 while the daemon holds them
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
case \$MIG_PHASE in
stopped)
	kill -STOP $helper_pid
	until_ok "grep -q '^State:.*T' /proc/$helper_pid/status"
	;;
save-sent)
	ip netns exec $FABRIC ss -K '( sport = :7701 or sport = :7702 )' >/dev/null
	until_ok "[ \\\$(ip netns exec $SRC ss -tnH state established '( dport = :7701 or dport = :7702 )' | wc -l) -eq 0 ]"
	kill -CONT $helper_pid
	;;
esac
EOF
mig_migrate_switch "$dst_sock" dst 500 || fail "migration 1: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
log "target: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"

# The guest learns that r4 and r6 were reset
for s in r4 r6; do
	wait_for "[ \"\$(mig_prog $s c end)\" = rst ]" 20 ||
		fail "$s: the guest's end is $(mig_prog "$s" c end), not a reset"
done
mig_all_flowing 32768 20 k4 k6 || fail "k4, k6 stopped: $MIG_LAGGING"

# A second migration, back to SRC
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the first source ignores SIGUSR2"
expect "the first source's exit status" "$MIG_EXIT_ST" 0
mig_pod_daemon src target
src2_sock=$D_SOCK src2_pid=$D_PID src2_log=$D_LOG
mig_repair_ready dst "$dst_sock"
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
mig_migrate_switch "$src2_sock" src 500 || fail "migration 2: $MIG_RESULT"
grep -q "target, 2 of 2 connection(s) restored" "$src2_log" ||
	fail "migration 2, target: $(grep 'Migration' "$src2_log" | tr '\n' ' ')"
mig_all_flowing 32768 20 k4 k6 || fail "k4, k6 stopped: $MIG_LAGGING"

MIG_VERIFY_TIMEOUT=30 mig_streams_verify k4 k6
expect "RSTs from SRC" $(($(mig_rsts "$SRC") - rst_src0)) 0
expect "RSTs from DST" $(($(mig_rsts "$DST") - rst_dst0)) 0
kill -USR2 "$dst_pid"
mig_exit_wait "$dst_pid" 10 || fail "the second source ignores SIGUSR2"
expect "the second source's exit status" "$MIG_EXIT_ST" 0
mig_stop "$src2_pid"
sanitizer_check "$T"/*/passt.socket.err
