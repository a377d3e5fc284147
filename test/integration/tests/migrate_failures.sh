#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_failures.sh - migrations that go wrong part of the way, and
# nothing reaches a peer that contradicts what the side that goes on does
# (migrate-lib.sh topology; the daemons forward TCP port 7970 to the
# guest; SRC has a second address, 192.0.2.9, that DST lacks).
#
# Streams: "k4" (peer -> guest, IPv4), "k6" (guest -> peer, IPv6), and
# "x9" (the peer connects to 192.0.2.9:7970, forwarded to the guest, and
# sends to it).
#
#  1. The front-end drops its connection to SRC in the middle of the state
#     transfer, connects again and starts the device where it was
#     (vu-front "reconnect"): the source takes its connections back, every
#     stream goes on, no RST leaves SRC.
#  2. SRC -> DST: DST can't restore x9 (its local address isn't there):
#     the guest sees x9 reset, the other streams go on; neither pod sends
#     a FIN on x9 (a truncated stream would look complete); SRC holds it
#     silently, and when its linger ends the peer's next segment finds no
#     socket: the peer sees a reset too.
#  3. DST -> SRC: DST's repair helper dies once the state is saved (the
#     held sockets stay in repair mode without it): the migration goes
#     through, k4 and k6 go on, DST ends its linger silently (no RST).
#  4. SRC, cancelled: SRC's helper dies once the state is saved, and the
#     migration is cancelled: the held connections can't leave repair
#     mode; they stay held, silent, waiting for a helper (which
#     migrate_helper_gone.sh brings): no FIN and no RST to anyone.
#
# Through 1 to 3, k4 and k6 never get nothing for more than MIG_STALL_MS
# (3 s) outside a cut-over: the test fails at once, with where they
# stopped (mig_watch).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tcpdump
[ "$MIG_DIRECT" = 0 ] || skip "the test kills the repair helpers"

ADDR9=192.0.2.9
fwd="-t 7970"

# ended NAME SIDE: the end of side SIDE of stream NAME is known, not running
ended() {
	case $(mig_prog "$1" "$2" end) in
	running | none) return 1 ;;
	esac
}

mig_setup
ip -n "$SRC" addr add "$ADDR9/32" dev eth0
ip -n "$FABRIC" route add "$ADDR9/32" dev fs
# shellcheck disable=SC2086
mig_guest_start --migrate-linger-timeout 600 $fwd
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG
src_helper=$MIG_RPID

mig_stream k4 down4 7981 --rate 256
mig_stream k6 up6 7982 --rate 256
bg "$GUEST" x9.l /dev/null /dev/null "$SOCKIO" -t 120 --report \
	--ready "$T/x9.ready" --progress "$T/x9.l.prog" \
	pattern-listen 0.0.0.0 7970
x9_l=$BG_PID
wait_ready "$T/x9.ready"
bg "$FABRIC" x9.c /dev/null /dev/null "$SOCKIO" -t 120 --report --send \
	--rate 128 --progress "$T/x9.c.prog" pattern-connect "$ADDR9" 7970
x9_c=$BG_PID
mig_all_flowing 32768 20 k4 k6 || fail "not flowing: $MIG_LAGGING"
mig_stream_wait_rx x9 l 32768 20 || fail "x9 not flowing"
# k4 and k6 never stop for long until the helper is gone (4.)
mig_guest_daemon "$src_pid" "$src_log"
mig_watch k4 k6

# 1. The front-end goes away in the middle of the transfer
rst0=$(mig_rsts "$SRC")
mig_reconnect || fail "1: $MIG_RESULT"
grep -q "the guest runs here again: 3 connection(s) resumed" "$src_log" ||
	fail "1: source: $(grep Migration "$src_log" | tr '\n' ' ')"
mig_all_flowing 32768 20 k4 k6 || fail "1: not flowing: $MIG_LAGGING"
x9_rx=$(mig_prog x9 l rx)
mig_stream_wait_rx x9 l $((x9_rx + 32768)) 20 || fail "1: x9 stopped"
expect "1: RSTs from SRC" $(($(mig_rsts "$SRC") - rst0)) 0
log "1: the front-end went away during the transfer; 3 connections resumed"

# 2. DST can't restore x9
# shellcheck disable=SC2086
mig_pod_daemon dst target --migrate-linger-timeout 600 $fwd
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG dst_helper=$MIG_RPID
mig_repair_ready src "$src_sock"
mig_cap_start "$FABRIC" fs c2s in
cap_s=$CAP_PID
mig_cap_start "$FABRIC" fd c2d in
cap_d=$CAP_PID
mig_migrate_switch "$dst_sock" dst 500 || fail "2: $MIG_RESULT"
mig_guest_daemon "$dst_pid" "$dst_log"
grep -q "can't be restored (Cannot assign requested address)" "$dst_log" ||
	fail "2: target: $(grep Migration "$dst_log" | tr '\n' ' ')"
wait_for "ended x9 l" 20 || fail "2: x9: the guest's end is still open"
expect "2: x9: the guest's end" "$(mig_prog x9 l end)" rst
mig_all_flowing 32768 20 k4 k6 || { mig_diag k4 k6; log "peer: $(ns $FABRIC nstat -az | grep -E 'PAWS|Skipped|Timeouts|Unsent|TCPACK')"; fail "2: not flowing: $MIG_LAGGING"; }
expect "2: x9: the peer's end while SRC holds it" "$(mig_prog x9 c end)" running
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "2: the source ignores SIGUSR2"
expect "2: the source's exit status" "$MIG_EXIT_ST" 0
wait_for "ended x9 c" 30 || fail "2: x9: the peer's end is still open"
expect "2: x9: the peer's end" "$(mig_prog x9 c end)" rst
mig_cap_stop "$cap_s"
mig_cap_stop "$cap_d"
for cn in c2s c2d; do
	n=$(mig_cap_text "$cn" | grep -cE "\.7970: Flags \[[^]]*F" || :)
	expect "2: FINs on x9 from the pod in capture $cn" "$n" 0
done
bg_wait "$x9_l" 5 || :
bg_wait "$x9_c" 5 || :
log "2: x9 reset on both ends, no FIN; k4 and k6 go on"

# 3. DST's helper dies once the state is saved; the migration completes
# shellcheck disable=SC2086
mig_pod_daemon src target --migrate-linger-timeout 600 $fwd
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG src_helper=$MIG_RPID
mig_repair_ready dst "$dst_sock"
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = saved ] || exit 0
kill -KILL $dst_helper
until_ok "! ip netns exec $DST ss -xH state established | grep -qF '$dst_sock.repair'"
EOF
rst0=$(mig_rsts "$DST")
mig_migrate_switch "$src_sock" src 500 || fail "3: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
mig_guest_daemon "$src_pid" "$src_log"
grep -q "target, 2 of 2 connection(s) restored" "$src_log" ||
	fail "3: target: $(grep Migration "$src_log" | tr '\n' ' ')"
mig_all_flowing 32768 20 k4 k6 || fail "3: not flowing: $MIG_LAGGING"
kill -USR2 "$dst_pid"
mig_exit_wait "$dst_pid" 10 || fail "3: the source ignores SIGUSR2"
expect "3: the source's exit status" "$MIG_EXIT_ST" 0
mig_all_flowing 32768 20 k4 k6 || fail "3: not flowing: $MIG_LAGGING"
expect "3: RSTs from DST" $(($(mig_rsts "$DST") - rst0)) 0
log "3: DST's helper died during the hold; the migration went through"
mig_watch_stop
log "k4's and k6's longest pauses:$(mig_pauses k4 k6)"

# 4. SRC's helper dies once the state is saved; the migration is cancelled
mig_repair_ready src "$src_sock"
src_helper=$MIG_RPID
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = saved ] || exit 0
kill -KILL $src_helper
until_ok "! ip netns exec $SRC ss -xH state established | grep -qF '$src_sock.repair'"
EOF
mig_cap_start "$FABRIC" fs c4 in
cap_s=$CAP_PID
mig_cancel || fail "4: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
log "4: source: $(grep 'TCP_REPAIR\|resumed\|repair mode' "$src_log" | tail -n 3 | tr '\n' ' ')"
grep -q "2 connection(s) can't leave repair mode without the passt-repair helper" "$src_log" ||
	fail "4: $(grep Migration "$src_log" | tail -n 3 | tr '\n' ' ')"
! wait_for "ended k4 c || ended k4 l || ended k6 c || ended k6 l" 2 2>/dev/null ||
	fail "4: ended: k4 guest $(mig_prog k4 c end), peer $(mig_prog k4 l end); k6 guest $(mig_prog k6 c end), peer $(mig_prog k6 l end)"
mig_cap_stop "$cap_s"
n=$(mig_cap_text c4 | grep -cE "\.(7981|7982): Flags \[[^]]*[FR]" || :)
expect "4: FINs or RSTs from SRC to k4's and k6's peers" "$n" 0
log "4: no helper to leave repair mode: both connections held, silent"
mig_stop "$src_pid"
sanitizer_check "$T"/*/passt.socket.err
