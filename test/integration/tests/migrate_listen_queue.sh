#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_listen_queue.sh - connections the kernel completed on a
# forwarded port that the daemon hasn't accepted yet when the SAVE comes
# (migrate-lib.sh topology; TCP port 7990 forwarded to an echo server in
# the guest).
#
# While vu-front stops the rings, the source daemon is stopped (SIGSTOP)
# and 120 peers connect to the forwarded port and send 1000 bytes each: the
# kernel completes the handshakes and takes the data into the listener's
# queue. The daemon goes on once vu-front's SAVE waits for it: it takes at
# most 32 connections a round, then the SAVE, so some are still queued
# when the listener stops taking connections. Those can't move (the guest
# never saw them), nor are they deaf or held: they would take, and
# acknowledge, whatever their peers send through the whole linger, and be
# reset only when it ends. Checked: once the migration completed, with
# the source still lingering, no peer connection to the port is left
# open (each was reset at once: its peer tries again, and its SYNs reach
# the target once the fabric has switched).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

N=120

# queued_est: the peers' connections to the forwarded port (established,
# or half-closed: each peer shuts its side down once its bytes are sent;
# not those in TIME_WAIT)
queued_est() {
	ns "$FABRIC" ss -tnH state established state fin-wait-1 state fin-wait-2 '( dport = :7990 )' | wc -l
}

mig_setup
mig_guest_start --migrate-linger-timeout 600 -t 7990
a_pid=$D_PID a_log=$D_LOG a_sock=$D_SOCK
bg "$GUEST" echo /dev/null /dev/null "$SOCKIO" --ready "$T/echo.ready" \
	tcp-echo 0.0.0.0 7990
wait_ready "$T/echo.ready"
ns "$FABRIC" "$SOCKIO" -t 10 tcp-many "$ADDR4" 7990 2 1000 ||
	fail "the forwarded port doesn't echo"

mig_pod_daemon dst target --migrate-linger-timeout 600 -t 7990
b_sock=$D_SOCK
mig_repair_ready src "$a_sock"
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = stopped ] || exit 0
kill -STOP $a_pid
ip netns exec $FABRIC $SOCKIO -t 60 tcp-many $ADDR4 7990 $N 1000 \
	>/dev/null 2>"$T/many.err" &
until_ok "[ \\\$(ip netns exec $FABRIC ss -tnH state established state fin-wait-1 state fin-wait-2 '( dport = :7990 )' | wc -l) -ge $N ]"
# The daemon goes on once vu-front's SAVE is in its socket
# (the daemon's end of a UNIX connection lives in the client's namespace)
(
	until_ok "ip netns exec $GUEST ss -xH state established |
		  grep -F '$a_sock ' | awk '\\\$2 > 0 { f = 1 } END { exit !f }'"
	kill -CONT $a_pid
) >/dev/null 2>&1 &
EOF
mig_migrate_switch "$b_sock" dst 3000 || fail "$MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
alive "$a_pid" || fail "the source is gone"
grep -q 'Linger: holding' "$a_log" || fail "the source doesn't linger"
log "source: $(grep -E 'queue reset|handshake reset' "$a_log" | tr '\n' ' ')"
left=$(queued_est)
expect "peer connections to the forwarded port still open while the source lingers" "$left" 0
grep -q "connection(s) waiting in a forwarded port's queue reset" "$a_log" ||
	fail "none was left in the queue at the SAVE: $(grep Migration "$a_log" | tr '\n' ' ')"
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
sanitizer_check "$T"/*/passt.socket.err
