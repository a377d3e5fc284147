#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_memcg_migrate.sh - what the daemon kept of what its socket refused
# travels with a live migration (migrate-lib.sh topology, vhost-user). The
# source's daemon runs in a memory cgroup (v1) whose TCP memory is limited
# to MEMCG_TCP_LIMIT (default 128 KiB), as in tcp_memcg.sh, behind a slow
# uplink (tc tbf, 4 Mbit/s): the guest uploads faster than that, so the
# socket refuses part of what the guest sends all along, and the daemon
# keeps it (tcp/kept.c: with vhost-user, as the connection's migration
# tail, which the state carries) while the link drains the socket. Once
# the source has kept data MEMCG_KEPT (default 20) times, the guest
# migrates to the other pod, whose daemon is not limited (a target under
# such a limit can't restore a send queue in flight, and resets the
# connection: that's migrate_dst.c's, and not this test's). Checked: the
# migration succeeds with the connection restored; the upload moves
# again; no RST from either pod; every byte reaches the peer, in order.
#
# Needs the cgroup v1 memory controller with TCP accounting
# (memory.kmem.tcp.limit_in_bytes): skips without it.
# PT_TIMEOUT: 240
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tc

# shellcheck source=memcg-lib.sh
. "$(dirname "$0")/../memcg-lib.sh"
MIG_W=${MIG_W:-500}
# (mig_cleanup takes the exit status from $?: give it back)
trap '_rc=$?; memcg_release; (exit $_rc); mig_cleanup' EXIT

mig_setup
ns "$SRC" tc qdisc replace dev eth0 root tbf rate 4mbit burst 32k latency 2s
mig_pod_daemon src source --trace --migrate-linger-timeout 600
src_pid=$D_PID src_sock=$D_SOCK src_log=$D_LOG
memcg_enter "$src_pid"
mig_probe "$src_sock"
# shellcheck disable=SC2034 # bridge_start (migrate-lib.sh) reads it
MIG_SOCK=$src_sock
guest_up
mig_repair_ready src "$src_sock"

mig_stream u4 up4 7501 --rate 2048
mig_all_flowing 65536 20 u4 || fail "upload not flowing: $MIG_LAGGING"

mig_pod_daemon dst target --trace --migrate-linger-timeout 600
dst_sock=$D_SOCK dst_log=$D_LOG
mig_repair_ready src "$src_sock"
want=${MEMCG_KEPT:-20}
wait_for "[ \$(grep -c ' kept\$' '$src_log') -ge $want ]" 60 ||
	fail "the source kept data only $(grep -c ' kept$' "$src_log") times"
kept=$(grep -c ' kept$' "$src_log")
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")

mig_migrate_switch "$dst_sock" dst "$MIG_W" ||
	fail "migration src -> dst: $MIG_RESULT"
grep -q "target, 1 of 1 connection(s) restored" "$dst_log" ||
	fail "target: $(grep 'Migration:' "$dst_log" | tr '\n' ' ')"
mig_flowing u4 1048576 30 || {
	mig_diag u4
	fail "upload u4 doesn't move after the switch"
}
expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src0)) 0
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst_dst0)) 0
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignores SIGUSR2"
expect "the source's exit status" "$MIG_EXIT_ST" 0

MIG_VERIFY_TIMEOUT=90 mig_streams_verify u4
expect "upload u4: the receiver's end" "$(mig_prog u4 l end)" eof
log "the source kept refused data $kept times before the switch;" \
	"state_bytes=$(mig_field state_bytes);" \
	"$(grep -c 'migrated data is all in the socket' "$dst_log") tail(s)" \
	"written by the target"
mig_stop "$(cat "$dst_sock.pid")"
sanitizer_check "$T"/*/passt.socket.err
