#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_abort_load.sh - a target that restored the connections but never
# ran the guest stays silent towards the peer (migrate-lib.sh topology).
#
# Three pattern streams run between the peer and the guest: "a4" (guest ->
# peer, IPv4), "a6" (peer -> guest, IPv6) and "b4" (guest -> peer, IPv4;
# its peer reads nothing until the end, so that the source's socket holds
# data never sent, and the restored one does too). The
# migration to DST fails after the target loaded the state (vu-front's
# "abort": the target's front-end goes away before its device starts, as
# a target QEMU that fails after loading the devices and exits); the
# source resumes the guest. The target daemon is then stopped (SIGTERM),
# as the management layer does with a failed target.
#
# Checked: the source runs the guest again with every stream moving;
# nothing at all leaves DST on the streams' connections, from the load to
# well after the target daemon is gone (tcpdump on the fabric's link to
# DST, and TcpOutRsts): no window probe, no data, and above all no FIN or
# RST, which would tear down, with exact sequence numbers, the
# connections the source just resumed; then a second migration to a fresh
# daemon in DST succeeds, and every byte of every stream arrives, in
# order.
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
mig_guest_start --migrate-linger-timeout 600
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG

mig_stream a4 up4 7801 --rate 256
mig_stream a6 down6 7802 --rate 256
mig_stream b4 up4 7803 --rate 1024 --pause-rx
mig_all_flowing 32768 20 a4 a6 || fail "streams not flowing: $MIG_LAGGING"
wait_for "[ \$(mig_prog b4 c tx) -ge 262144 ]" 20 || fail "b4 sends nothing"

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
rst_dst0=$(mig_rsts "$DST")
mig_cap_start "$FABRIC" fd dst in
cap=$CAP_PID

mig_abort "$dst_sock" || fail "the aborted migration: $MIG_RESULT"
grep -q "failed or cancelled, the guest runs here again: 3 connection(s) resumed" "$src_log" ||
	fail "source: $(grep 'Migration' "$src_log" | tr '\n' ' ')"
log "target: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"
mig_all_flowing 65536 20 a4 a6 || fail "streams stopped: $MIG_LAGGING"

# The failed target goes away; the source goes on
mig_exit_wait "$dst_pid" 0 || :
kill -TERM "$dst_pid"
mig_exit_wait "$dst_pid" 10 || fail "the target ignores SIGTERM"
log "target exited ($MIG_EXIT_ST): $(tail -n 2 "$dst_log" | tr '\n' ' ')"
mig_all_flowing 65536 20 a4 a6 ||
	fail "streams stopped after the target exited: $MIG_LAGGING"
mig_cap_stop "$cap"
mig_cap_text dst | grep -E '\.(7801|7802|7803)[: ]' >"$T/dst.txt" || :
if [ -s "$T/dst.txt" ]; then
	head -n 20 "$T/dst.txt" >&2
	fail "$(wc -l <"$T/dst.txt") segment(s) from DST on the streams' connections ($(grep -cE 'Flags \[[^]]*[FR]' "$T/dst.txt" || :) with FIN or RST)"
fi
expect "RSTs from DST" $(($(mig_rsts "$DST") - rst_dst0)) 0

# And then a migration that works
mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
mig_migrate_switch "$dst_sock" dst 0 || fail "migration 2: $MIG_RESULT"
grep -q "target, 3 of 3 connection(s) restored" "$dst_log" ||
	fail "migration 2, target: $(grep 'Migration' "$dst_log" | tr '\n' ' ')"
if ! mig_all_flowing 32768 20 a4 a6; then
	mig_diag a4 a6
	log "peer: $(mig_nstat "$FABRIC"); target: $(mig_nstat "$DST")"
	fail "streams stopped: $MIG_LAGGING"
fi
MIG_VERIFY_TIMEOUT=40 mig_streams_verify a4 a6 b4
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignores SIGUSR2"
expect "the source's exit status" "$MIG_EXIT_ST" 0
mig_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
