#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate.sh - live migration of a real guest between two QEMUs (vhost-user,
# memfd guest memory, migration over a UNIX socket), with a TCP connection
# streaming both ways through it (migrate-lib.sh):
#
#   - the guest boots in pod SRC; the target QEMU (-incoming) waits in
#     pod DST, which has the same addresses; a daemon runs in each pod
#   - the guest connects to the peer on FABRIC; both ends stream a
#     position-encoded pattern (sockio pattern-*: every byte is verified
#     against its offset) at QM_RATE KiB/s each way
#   - "migrate" on the source's QMP monitor, polled to completion; the
#     source QEMU quits (as libvirt tears the source domain down); the
#     fabric keeps routing the pod address to SRC for QM_W s, then switches
#     to DST
#
# Checked: the migration completes; the stream to the guest moves again
# after the switch; no RST leaves SRC (nstat TcpOutRsts); when both ends
# stop sending, each received exactly what the other sent, in order, and
# saw a clean end of stream; SIGUSR2 ends the source daemon's linger, with
# its log line, exit status 0, and no socket or pid file left behind.
# Logged: QEMU's downtime and total time, and how long after the switch
# the stream to the guest moved again.
#
# vhost-user only (stream mode can't migrate the daemon's state): SKIP in
# stream mode. Environment: QM_W (s, default 3), QM_RATE (KiB/s, default
# 1024), QM_MEM (MiB, default 128), QM_SRC_OPTS (more options for the source
# daemon: --migrate-no-linger makes this test fail, as it should).
# e2e-timeout: 420
set -eu
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../migrate-lib.sh"

[ "$E2E_MODE" = vhost-user ] ||
	skip "migration needs the vhost-user front-end"
need jq nstat
QM_W=${QM_W:-3}
QM_RATE=${QM_RATE:-1024}
PORT=5001

# The source lingers until SIGUSR2, not until its default timeout
# shellcheck disable=SC2086
qm_boot --migrate-linger-timeout 300 ${QM_SRC_OPTS:-}
g_ok '[ -x /bin/sockio ]' >/dev/null || fail "no sockio in the guest image"

# The stream, both ways on one connection; the guest connects
qm_stream_start s "$PORT" "$QM_RATE"
qm_streams_flowing 262144 s

qm_repair_src
rst0=$(mig_rsts "$SRC")
log "before: guest rx $(tel_last s rx), peer rx $(peer_prog s rx)"
qm_switch_arm "$QM_W"
qm_migrate 120 || fail "migration failed: $(tail -n 3 "$T/qemu-src.err")"
# libvirt tears the source domain down: the daemon lingers by itself
qm_quit src --nowait
log "after: guest rx $(tel_last s rx), peer rx $(peer_prog s rx)"

# The fabric still routes to the source for QM_W s after the target ran
# the guest (the scenario itself, not a wait for something)
qm_switch_wait
qm_quit src
grep -q 'completed as source' "$T/src/passt.socket.err" ||
	fail "source daemon: no 'completed as source' line"
log "fabric switched to DST $((QM_T_SWITCH - QM_T_RUN)) ms after the" \
	"target ran the guest; guest rx $(tel_last s rx)"
qm_moved s 131072 30 ||
	fail "the stream to the guest doesn't move after the switch" \
	     "(rx $(tel_last s rx), guest: $(g_run 'cat /tmp/s.err' | tr '\n' ' '))"
log "the stream to the guest moved again $QM_MOVED_MS ms after the switch"
peer_rx=$(peer_prog s rx)
wait_for "[ \$(peer_prog s rx) -ge $((peer_rx + 131072)) ]" 30 ||
	fail "the stream from the guest doesn't move after the switch"

# Both ends stop sending: each must get the other's EOF, every byte checked
qm_stream_stop s 60
g_run "touch /tmp/tel.stop" >/dev/null || :
log "guest: $QS_GUEST; peer: $(cat "$T/s.prog")"
expect "the stream, at its end" "$QS_CHECK" ok
rsts=$(($(mig_rsts "$SRC") - rst0))
expect "RSTs from the source pod" "$rsts" 0
log "stream: $QS_G_RX bytes to the guest, $QS_G_TX to the peer, in order;" \
	"0 RSTs from SRC"

# The lifetime-end signal
qm_linger_end
grep 'Linger: ended (SIGUSR2' "$T/src/passt.socket.err" >&2 ||
	fail "no 'Linger: ended (SIGUSR2' line: $(tail -n 3 "$T/src/passt.socket.err")"
[ ! -e "$SOCK_SRC.pid" ] || fail "source pid file left behind"
sanitizer_check "$T/src/passt.socket.err"

log "QEMU: downtime $QM_DOWNTIME ms, total $QM_TOTAL ms; stream moved" \
	"$QM_MOVED_MS ms after the fabric switch (W=${QM_W} s)"
alive "$DST_PID" || fail "the target daemon died"
qm_quit dst
mig_daemon_stop "$DST_PID"
sanitizer_check "$T/dst/passt.socket.err"
