#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_fin_save.sh - the peer's FIN that arrives at the switch-over,
# after the source daemon last looked at the socket and before it holds
# it, reaches the guest on the target (migrate-lib.sh topology).
#
# Three pattern streams: "f4" and "f6" (peer -> guest, IPv4 and IPv6: the
# peer sends 200000 bytes, which the guest gets, then stays idle) and "u4"
# (guest -> peer, IPv4). The guest migrates from SRC to DST, and
# vu-front's phase hook makes the FIN arrive at the one moment that
# matters: the source's repair helper is stopped (SIGSTOP) once the rings
# are, so that the daemon, which holds the connections at the SAVE
# request, waits for it with the sockets out of its loop and not yet
# filtered; then the peer closes f4 and f6 (FIN, sockio --fin-file), the
# source's kernel takes both FINs (CLOSE-WAIT, ss), and the helper goes on
# (SIGCONT). The FIN is in the sockets' state (tcpi_state) when they are
# dumped, not in anything the daemon's loop has seen. (The held sockets
# drop whatever comes with a TTL below 255, which is what makes them deaf
# without a filter: the peer's namespace sends with 255 here, as a peer on
# the same link may, so that its FIN still gets in after the daemon's last
# look, as one that arrives just before the hold does.)
#
# Checked: the migration succeeds with the three connections; on the
# target the guest gets every byte of f4 and f6 and then their end of
# stream (a client that reads until the peer closes would hang for good
# otherwise), and both ends of each exit cleanly; u4 carries on and
# arrives byte-exact, never getting nothing for more than MIG_STALL_MS
# (3 s) outside the cut-over (mig_watch); no RST from either pod.
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
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG
mig_probe "$src_sock"
MIG_SOCK=$src_sock
guest_up

mig_stream f4 down4 7601 --bytes 200000 --fin-file "$T/f4.fin"
mig_stream f6 down6 7602 --bytes 200000 --fin-file "$T/f6.fin"
mig_stream u4 up4 7603 --rate 256
mig_all_flowing 32768 20 u4 || fail "u4 not flowing: $MIG_LAGGING"
for s in f4 f6; do
	mig_stream_wait_rx "$s" c 200000 20 ||
		fail "$s: the guest got $(mig_prog "$s" c rx) of 200000 bytes"
done
# u4 goes on all along (f4 and f6 have sent all and wait for their FINs)
mig_guest_daemon "$src_pid" "$src_log"
mig_watch u4

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
helper_pid=$MIG_RPID
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")

# The FINs arrive while the daemon holds the connections and waits for
# its (stopped) repair helper
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
case \$MIG_PHASE in
stopped)
	kill -STOP $helper_pid
	until_ok "grep -q '^State:.*T' /proc/$helper_pid/status"
	;;
save-sent)
	touch '$T/f4.fin' '$T/f6.fin'
	until_ok "[ \\\$(ip netns exec $SRC ss -tnH state close-wait '( dport = :7601 or dport = :7602 )' | wc -l) -eq 2 ]"
	ip netns exec $SRC ss -tinH state close-wait >'$T/hook-ss.log' 2>&1
	kill -CONT $helper_pid
	;;
esac
EOF
mig_migrate_switch "$dst_sock" dst 500 || fail "migration: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
mig_guest_daemon "$dst_pid" "$dst_log"
log "at the SAVE, in SRC: $(tr -s ' \n' ' ' <"$T/hook-ss.log")"
grep -q "target, 3 of 3 connection(s) restored" "$dst_log" ||
	fail "target: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"

# f4 and f6 end (the guest got the FIN); u4 goes on
mig_all_flowing 16384 20 u4 || fail "u4 stopped: $MIG_LAGGING"
mig_watch_stop
log "u4's longest pause:$(mig_pauses u4)"
MIG_VERIFY_TIMEOUT=30 mig_streams_verify f4 f6 u4
for s in f4 f6; do
	expect "$s: the guest's end of stream" "$(mig_prog "$s" c end)" eof
done
expect "RSTs from SRC" $(($(mig_rsts "$SRC") - rst_src0)) 0
expect "RSTs from DST" $(($(mig_rsts "$DST") - rst_dst0)) 0
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignores SIGUSR2"
expect "the source's exit status" "$MIG_EXIT_ST" 0
mig_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
