#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_upstream_helper.sh - our daemon served by upstream's passt-repair
# (Debian 13's, test/upstream/fetch.sh: what KubeVirt deploys), through
# two migrations, pod A -> pod B -> pod C (migrate-lib.sh topology with a
# third pod). B's helper serves B as the target (the restore, and then
# pokes for the connections whose peers B hasn't heard from: the fabric
# switches the IPv4 route to B first, so that the IPv6 connections alone
# are poked, two sockets a request) and then as the source (the hold sets
# it on every socket in one request).
#
# That helper leaves its control buffer at the length of the last request
# it got, so after one-socket requests the kernel hands it only the first
# two sockets of a larger one, and it echoes the request all the same
# (repair/repair.c). Checked: B holds and dumps all of its connections
# (no "can't dump", "4 of 4 restored" in C), it noticed the helper's
# limit and worked around it, and every byte arrives. And our daemons
# take that helper, which runs as root, while they run as nobody (the
# uid check goes through their peer credential checker, isolation_peer.c).
#
# The connections carry no new data while a migration runs, so that the
# source's hold needs no drop filter: upstream's helper doesn't attach it
# (ours does), and some kernels refuse it to the daemon itself. The sender
# puts its bytes in before the first migration and the receiver reads
# nothing until the end, so they wait in the sockets' queues and move
# with them.
#
# SKIP (77) only if test/upstream/fetch.sh can't get the package.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_upstream passt-repair
PASST_REPAIR=$UP/passt-repair
MIG_DIRECT=0
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"

BYTES=100000
names="d4 u4 d6 u6"

mig_setup
mig_third_setup
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID

# Senders put everything in at once; receivers read only at the end
mig_stream d4 down4 7401 --bytes "$BYTES" --pause-rx --rcvbuf 4096
mig_stream u4 up4 7402 --bytes "$BYTES" --pause-rx --rcvbuf 4096
mig_stream d6 down6 7403 --bytes "$BYTES" --pause-rx --rcvbuf 4096
mig_stream u6 up6 7404 --bytes "$BYTES" --pause-rx --rcvbuf 4096
# sent: every sender is done and nothing is in flight between the peer
# and the pod (for "down", the peer's bytes all acknowledged by A)
sent() {
	for _s in $names; do
		[ "$(mig_prog "$_s" "$(mig_tx "$_s")" tx)" -ge "$BYTES" ] ||
			return 1
	done
	for _p in 7401 7403; do
		[ "$(mig_unacked "$FABRIC" state established "( sport = :$_p )")" = 0 ] ||
			return 1
	done
}
wait_for sent 30 || fail "the senders didn't finish: $(cat "$T"/*.prog)"

mig_pod_daemon dst target --migrate-linger-timeout 600 -d
b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
mig_migrate "$b_sock" || fail "A -> B: $MIG_RESULT"
grep -q "Migration: target, 4 of 4 connection(s) restored" "$b_log" ||
	fail "B: $(grep Migration "$b_log")"
# IPv4 first: B hears from those peers, and pokes the IPv6 ones alone
ip -n "$FABRIC" route replace "$ADDR4/32" dev fd
wait_for "grep -q 'poked 2 restored connection' '$b_log'" 10 ||
	fail "B didn't poke the two IPv6 connections alone: $(grep poked "$b_log")"
mig_fabric_to dst
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "A ignored SIGUSR2"

# B -> C, with the helper that restored B's sockets
mig_pod_daemon third target
c_sock=$D_SOCK c_pid=$D_PID c_log=$D_LOG
mig_repair_connected "$DST" "$b_sock" ||
	fail "B's helper left after the restore"
mig_migrate_switch "$c_sock" third 0 || fail "B -> C: $MIG_RESULT"
! grep "can't dump" "$b_log" || fail "B couldn't dump every connection"
grep -q "Migration: source, 4 connection(s)" "$b_log" ||
	fail "B: $(grep Migration "$b_log")"
grep "Repair helper: set TCP_REPAIR on" "$b_log" >&2 ||
	fail "B didn't notice the helper's limit (a fixed helper?)"
grep -q "Migration: target, 4 of 4 connection(s) restored" "$c_log" ||
	fail "C: $(grep Migration "$c_log")"
kill -USR2 "$b_pid"
mig_exit_wait "$b_pid" 10 || fail "B ignored SIGUSR2"

for l in "$b_log" "$c_log"; do
	grep -q "Repair helper connected" "$l" || fail "helper not taken: $l"
	! grep "Repair helper refused" "$l" || fail "helper refused: $l"
done

# shellcheck disable=SC2086
mig_streams_verify $names
alive "$c_pid" || fail "C died"
mig_stop "$c_pid"
sanitizer_check "$T"/*/passt.socket.err
