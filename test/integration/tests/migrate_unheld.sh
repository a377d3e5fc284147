#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_unheld.sh - what a migration source doesn't hold ends with a
# reset, and it takes no new connection while it lingers (migrate-lib.sh
# topology; the daemons forward TCP ports 7950 and 7951 to the guest).
#
# Migration 1, SRC -> DST, the fabric switching 2 s after the target runs
# the guest:
#   "ac": a peer connects to the pod's port 7951 at the switch-over, after
#         the source daemon got the SAVE request (vu-front's phase hook
#         stops the daemon, the peer connects, the daemon goes on): the
#         source's kernel has the connection, the migration doesn't. By the
#         time the source's linger ends (at once, if the daemon took it
#         from the kernel before the SAVE: its handshake with the guest
#         isn't done when the migration goes through), the peer must see a
#         reset: a FIN would say the guest closed it.
#   "fw": a peer connects to the pod's port 7950 while the source lingers
#         (from the hook, once the source's state is saved) and sends
#         200000 bytes. The source must not take the connection: the
#         peer's SYN goes unanswered and is sent again, reaches the target
#         once the fabric has switched, and the guest, listening on 7950,
#         gets every byte and the peer's FIN.
# Migration 2, DST -> a fresh daemon in SRC, with no repair helper at the
# source (it is killed before): no connection could move, and since a
# helper was connected to that daemon before (for the LOAD of migration
# 1), it refuses the SAVE rather than lose them all (with "k4") (doc/migration.md,
# 8.1): the migration fails, "n4" and "n6", uploads from the guest, go on
# from DST, no FIN and no RST for them; then, with a helper again, the
# migration goes through and both move. The streams that run across the
# migrations (k4, then n4 and n6) never get nothing for more than
# MIG_STALL_MS (3 s) outside a cut-over (mig_watch).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox
[ "$MIG_DIRECT" = 0 ] || skip "the test runs a source without its helper"

fwd="-t 7950,7951"
mig_setup
# shellcheck disable=SC2086
mig_guest_start --migrate-linger-timeout 600 $fwd
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG

# The guest listens on 7950 (fw); a stream keeps the migration busy
bg "$GUEST" fw.l /dev/null /dev/null "$SOCKIO" -t 120 --report \
	--ready "$T/fw.ready" --progress "$T/fw.l.prog" \
	pattern-listen "$ADDR4" 7950
fw_l=$BG_PID
wait_ready "$T/fw.ready"
mig_stream k4 down4 7960 --rate 256
mig_all_flowing 32768 20 k4 || fail "k4 not flowing: $MIG_LAGGING"
mig_guest_daemon "$src_pid" "$src_log"
mig_watch k4

# shellcheck disable=SC2086
mig_pod_daemon dst target --migrate-linger-timeout 600 $fwd
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG dst_helper=$MIG_RPID
mig_repair_ready src "$src_sock"

mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
case \$MIG_PHASE in
stopped)
	kill -STOP $src_pid
	until_ok "grep -q '^State:.*T' /proc/$src_pid/status"
	;;
save-sent)
	ip netns exec $FABRIC $SOCKIO -t 120 --report \
		--progress '$T/ac.c.prog' pattern-connect $ADDR4 7951 \
		2>'$T/ac.c.err' &
	until_ok "ip netns exec $SRC ss -tnH state established '( sport = :7951 )' | grep -q ."
	kill -CONT $src_pid
	;;
saved)
	ip netns exec $FABRIC $SOCKIO -t 60 --report --send --bytes 200000 \
		--progress '$T/fw.c.prog' pattern-connect $ADDR4 7950 \
		2>'$T/fw.c.err' &
	echo \$! >'$T/fw.c.pid'
	;;
esac
EOF
mig_migrate_switch "$dst_sock" dst 2000 || fail "migration 1: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
mig_guest_daemon "$dst_pid" "$dst_log"
log "source: $(grep 'Migration\|Linger' "$src_log" | tr '\n' ' ')"

# fw: through the target, every byte, both ends clean
# ended: the end of side SIDE of stream NAME is known, and not "running"
ended() {
	case $(mig_prog "$1" "$2" end) in
	running | none) return 1 ;;
	esac
}
wait_for "ended fw l && ended fw c" 40 ||
	fail "fw still running: guest $(cat "$T/fw.l.prog"), peer $(cat "$T/fw.c.prog")"
log "fw: guest $(cat "$T/fw.l.prog"), peer $(cat "$T/fw.c.prog")"
expect "fw: the peer's end" "$(mig_prog fw c end)" eof
expect "fw: the guest's end" "$(mig_prog fw l end)" eof
expect "fw: bytes at the guest" "$(mig_prog fw l rx)" 200000
bg_wait "$fw_l" 10 || :
expect "fw: the guest's listener" "$BG_ST" 0

# ac: reset, at the latest when the source's linger ends
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignores SIGUSR2"
expect "the first source's exit status" "$MIG_EXIT_ST" 0
wait_for "ended ac c" 10 ||
	fail "ac: the peer's connection is still open"
expect "ac: the peer's end" "$(mig_prog ac c end)" rst

# Migration 2: no helper at the source
mig_stream n4 up4 7961 --rate 128
mig_stream n6 up6 7962 --rate 128
mig_all_flowing 16384 20 n4 n6 k4 || fail "not flowing: $MIG_LAGGING"
mig_watch_stop
log "k4's longest pause in migration 1:$(mig_pauses k4)"
mig_watch n4 n6 k4
kill "$dst_helper" 2>/dev/null || :
wait_for "grep -q 'Repair helper disconnected' '$dst_log'" 10 ||
	fail "the target's helper is still connected"
# shellcheck disable=SC2086
mig_pod_daemon src target --migrate-linger-timeout 600 $fwd
src2_pid=$D_PID src2_sock=$D_SOCK src2_log=$D_LOG
rst0=$(mig_rsts "$DST")
if mig_migrate "$src2_sock"; then
	fail "migration 2 went through without a helper: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"
fi
grep -q "refusing to save the state: the passt-repair helper that was connected is gone, and the 3 connection" "$dst_log" ||
	fail "migration 2, source: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"
mig_all_flowing 16384 20 n4 n6 || fail "migration 2 refused: not flowing: $MIG_LAGGING"
for s in n4 n6; do
	expect "$s: the peer's end after the refused migration" "$(mig_prog "$s" l end)" running
done
expect "RSTs from DST after the refused migration" $(($(mig_rsts "$DST") - rst0)) 0
mig_repair_ready dst "$dst_sock"
mig_migrate_switch "$src2_sock" src 0 || fail "migration 2, with a helper: $MIG_RESULT"
mig_guest_daemon "$src2_pid" "$src2_log"
grep -q "completed as source, 3 connection(s) moved" "$dst_log" ||
	fail "migration 2, source: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"
mig_all_flowing 16384 20 n4 n6 || fail "migration 2: not flowing: $MIG_LAGGING"
kill -USR2 "$dst_pid"
mig_exit_wait "$dst_pid" 10 || fail "the second source ignores SIGUSR2"
expect "the second source's exit status" "$MIG_EXIT_ST" 0
mig_watch_stop
log "longest pauses in migration 2:$(mig_pauses n4 n6 k4)"
mig_streams_verify n4 n6
mig_stop "$src2_pid"
sanitizer_check "$T"/*/passt.socket.err
