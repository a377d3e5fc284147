#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_many.sh - many concurrent connections through one migration
# (migrate-lib.sh topology): MIG_CONNS (default 64) pattern streams
# between the peer on the FABRIC and the guest, cycling through the four
# kinds (peer -> guest and guest -> peer, IPv4 and IPv6), each at
# MIG_RATE KiB/s (default 32). The guest migrates from SRC to DST, the
# fabric keeps routing to SRC for W=MIG_W ms (default 500), then
# switches.
#
# Checked: the migration succeeds with every connection in the state
# (the source's log says how many it moved), every stream moves again
# after the switch, no RST leaves either pod (nstat TcpOutRsts), the
# source ends on SIGUSR2 with status 0 and logs the number of
# connections it held, and at the end each receiver has exactly what
# its sender sent, every byte verified.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

# More than 61: with that many flows glibc's qsort() asked the kernel for
# the memory size, and the sandboxed target died (repair/format.c)
MIG_CONNS=${MIG_CONNS:-64}
MIG_RATE=${MIG_RATE:-32}
MIG_W=${MIG_W:-500}

t_start=$(now_ms)
# phase WHAT: how long the test has run, for the log
phase() {
	log "[$(($(now_ms) - t_start)) ms] $*"
}

mig_setup
# A long linger: on a loaded machine the checks take a while, and the
# source must still be holding when it gets SIGUSR2
mig_guest_start --migrate-linger-timeout 600
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG

phase "guest up"
# kind I: the four kinds in turn
kind() {
	case $(($1 % 4)) in
	0) echo down4 ;;
	1) echo up4 ;;
	2) echo down6 ;;
	3) echo up6 ;;
	esac
}
mig_streams_start kind 8000 "$MIG_CONNS" --rate "$MIG_RATE" -t 300
names=$MIG_NAMES
phase "$MIG_CONNS streams started"
# Every connection carries data before the migration
# shellcheck disable=SC2086
mig_all_flowing 4096 30 $names ||
	fail "streams not flowing before the migration: $MIG_LAGGING"
est=$(ns "$SRC" ss -tnH state established "( dport >= :8000 and dport < :$((8000 + MIG_CONNS)) )" | wc -l)
[ "$est" -eq "$MIG_CONNS" ] ||
	fail "$est connections established in SRC, expected $MIG_CONNS"

phase "all flowing"
mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID
mig_repair_ready src "$src_sock"

rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
mig_migrate_switch "$dst_sock" dst "$MIG_W" ||
	fail "migration: $MIG_RESULT"
grep -q "completed as source, $MIG_CONNS connection(s) moved" "$src_log" ||
	fail "the source did not move $MIG_CONNS connections: $(grep 'Migration:' "$src_log" | tail -n 3)"

phase "migrated"
# Every stream moves again
t0=$(now_ms)
# shellcheck disable=SC2086
if ! mig_all_flowing 8192 30 $names; then
	log "streams not moving after the switch: $MIG_LAGGING"
	# shellcheck disable=SC2046
	mig_diag $(printf '%s\n' $MIG_LAGGING | cut -d: -f1)
	fail "streams not moving after the switch"
fi
log "all $MIG_CONNS streams moved 8 KiB more within $(($(now_ms) - t0)) ms"

phase "all moving again"
# The source ends its linger, every byte checked
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignored SIGUSR2"
[ "$MIG_EXIT_ST" = 0 ] || fail "the source exited with status $MIG_EXIT_ST"
grep -E "Linger: ended .*: $MIG_CONNS connection\(s\) held" "$src_log" >&2 ||
	fail "no 'Linger: ended' line with $MIG_CONNS connections: $(grep Linger "$src_log")"
phase "source ended"
# shellcheck disable=SC2086
mig_streams_verify $names
phase "verified"
rst_src=$(($(mig_rsts "$SRC") - rst_src0))
rst_dst=$(($(mig_rsts "$DST") - rst_dst0))
log "RSTs: SRC $rst_src, DST $rst_dst; $MIG_RESULT"
[ "$rst_src" -eq 0 ] || fail "SRC sent $rst_src RSTs"
[ "$rst_dst" -eq 0 ] || fail "DST sent $rst_dst RSTs"
alive "$dst_pid" || fail "the target died"
mig_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
