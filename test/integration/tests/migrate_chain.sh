#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_chain.sh - two migrations in a row, pod A -> pod B -> pod C,
# while pod A still lingers (migrate-lib.sh topology, plus a third pod
# with the same addresses: A is SRC, B is DST, C is THIRD). Four pattern
# streams (both directions, IPv4 and IPv6) run throughout; the fabric
# keeps routing to the old pod for W=MIG_W ms (default 500) after each
# migration.
#
# Checked: both migrations succeed; A is still lingering, holding its
# sockets, when B migrates away, and B lingers too; the streams move
# again after each switch; neither A nor B (nor C) sends a RST; A and B
# then end on SIGUSR2 with status 0, each logging the 4 connections it
# held; every byte arrives, verified.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

MIG_W=${MIG_W:-500}
names="d4 u4 d6 u6"

mig_setup
mig_third_setup
# A long linger: on a loaded machine the checks take a while, and the
# source must still be holding when it gets SIGUSR2
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG

mig_stream d4 down4 7301 --rate 512 -t 300
mig_stream u4 up4 7302 --rate 512 -t 300
mig_stream d6 down6 7303 --rate 512 -t 300
mig_stream u6 up6 7304 --rate 512 -t 300
# shellcheck disable=SC2086
mig_all_flowing 32768 15 $names || fail "streams not flowing: $MIG_LAGGING"
rst0_a=$(mig_rsts "$SRC")
rst0_b=$(mig_rsts "$DST")
rst0_c=$(mig_rsts "$THIRD")

# A -> B
mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
mig_repair_ready src "$a_sock"
mig_migrate_switch "$b_sock" dst "$MIG_W" || fail "A -> B: $MIG_RESULT"
grep -q 'Linger: holding 4 migrated' "$a_log" ||
	fail "A doesn't linger with 4 connections: $(grep -E 'Migration|Linger' "$a_log")"
# shellcheck disable=SC2086
mig_all_flowing 32768 45 $names ||
	fail "streams stop after A -> B: $MIG_LAGGING"

# B -> C, A still lingering
mig_pod_daemon third target
c_sock=$D_SOCK c_pid=$D_PID c_log=$D_LOG
mig_repair_ready dst "$b_sock"
alive "$a_pid" || fail "A is gone before B migrates"
mig_migrate_switch "$c_sock" third "$MIG_W" || fail "B -> C: $MIG_RESULT"
grep -q 'Linger: holding 4 migrated' "$b_log" ||
	fail "B doesn't linger with 4 connections: $(grep -E 'Migration|Linger' "$b_log")"
alive "$a_pid" || fail "A is gone: $(tail -n 3 "$a_log")"
grep -q 'Linger: ended' "$a_log" &&
	fail "A ended its linger early: $(grep 'Linger: ended' "$a_log")"
held_a=$(ns "$SRC" ss -tnH state established \
	'( dport >= :7301 and dport <= :7304 )' | wc -l)
log "A (lingering) still holds $held_a socket(s) after B -> C"
[ "$held_a" -eq 4 ] || fail "A holds $held_a sockets, not 4"
# shellcheck disable=SC2086
mig_all_flowing 32768 45 $names ||
	fail "streams stop after B -> C: $MIG_LAGGING"

# A and B end; everything checked
for p in "a:$a_pid:$a_log" "b:$b_pid:$b_log"; do
	n=${p%%:*} rest=${p#*:}
	pid=${rest%%:*} plog=${rest#*:}
	kill -USR2 "$pid"
	mig_exit_wait "$pid" 10 || fail "$n ignored SIGUSR2"
	[ "$MIG_EXIT_ST" = 0 ] || fail "$n exited with status $MIG_EXIT_ST"
	grep -E 'Linger: ended \(SIGUSR2[^)]*\): 4 connection\(s\)' "$plog" >&2 ||
		fail "$n: no 'Linger: ended' line: $(grep Linger "$plog")"
	sanitizer_check "$plog"
done
# shellcheck disable=SC2086
mig_all_flowing 32768 45 $names ||
	fail "streams stop after A and B ended: $MIG_LAGGING"
# shellcheck disable=SC2086
mig_streams_verify $names
rst_a=$(($(mig_rsts "$SRC") - rst0_a))
rst_b=$(($(mig_rsts "$DST") - rst0_b))
rst_c=$(($(mig_rsts "$THIRD") - rst0_c))
log "RSTs: A $rst_a, B $rst_b, C $rst_c"
[ "$rst_a" -eq 0 ] || fail "A sent $rst_a RSTs"
[ "$rst_b" -eq 0 ] || fail "B sent $rst_b RSTs"
[ "$rst_c" -eq 0 ] || fail "C sent $rst_c RSTs"
alive "$c_pid" || fail "C died"
mig_stop "$c_pid"
sanitizer_check "$T"/*/passt.socket.err
