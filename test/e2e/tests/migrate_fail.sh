#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_fail.sh - a real QEMU migration that fails after the target
# loaded the network device's state: the source resumes the guest, and the
# target, which restored the connections, sends nothing to their peers
# (migrate-lib.sh).
#
# The source QEMU has one device more than the target, after virtio-net
# (a virtio-rng-pci): the target loads the network device, with our
# LOAD, then finds a section it doesn't know, fails and exits; with the
# return-path capability on both, the source learns it and runs the guest
# again. A TCP connection streams both ways through it (sockio pattern-*,
# every byte checked).
#
# Checked: QEMU reports the migration failed; the target daemon restored
# the connection and then closed it silently when its front-end went away
# ("closed silently"); nothing from DST reaches the peer on the stream's
# connection, before the target daemon is stopped or after (tcpdump on the
# fabric's link to DST, TcpOutRsts); the source daemon resumed its
# connection, the stream moves again, and both ends get every byte and
# the other's end of stream.
#
# vhost-user only (stream mode can't migrate the daemon's state).
# e2e-timeout: 360
set -eu
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../migrate-lib.sh"

[ "$E2E_MODE" = vhost-user ] ||
	skip "migration needs the vhost-user front-end"
need jq nstat tcpdump
QM_RATE=${QM_RATE:-256}
PORT=5001
QM_ARGS_SRC="-device virtio-rng-pci"

qm_boot --migrate-linger-timeout 300
g_ok '[ -x /bin/sockio ]' >/dev/null || fail "no sockio in the guest image"

qm_stream_start s "$PORT" "$QM_RATE"
qm_streams_flowing 131072 s

for r in src dst; do
	qmp "$r" '{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "return-path", "state": true}]}}' \
		>/dev/null || fail "QEMU ($r) refuses the return-path capability"
done
qm_repair_src
rst0=$(mig_rsts "$DST")
mig_cap_start "$FABRIC" fd dst in
cap=$CAP_PID

! qm_migrate 120 || fail "the migration went through, with a device less"
log "migration: $QM_STATUS (expected: failed)"
expect "QEMU's migration status" "$QM_STATUS" failed
wait_for "! alive $QDST_PID" 30 || fail "the target QEMU doesn't exit"
wait "$QDST_PID" 2>/dev/null || :
log "target QEMU: $(tail -n 2 "$T/qemu-dst.err" | tr '\n' ' ')"
# The failed target goes away (the management layer stops it)
mig_daemon_stop "$DST_PID"
grep 'Migration' "$T/dst/passt.socket.err" >&2 || :

# The source runs the guest again; the stream goes on
wait_for "grep -q 'the guest runs here again: 1 connection(s) resumed' '$T/src/passt.socket.err'" 30 ||
	fail "source daemon: $(grep Migration "$T/src/passt.socket.err" | tr '\n' ' ')"
g_rx=$(tel_last s rx)
p_rx=$(peer_prog s rx)
wait_for "[ \$(tel_last s rx) -ge $((g_rx + 131072)) ]" 60 ||
	fail "the stream to the guest doesn't move again (rx $(tel_last s rx))"
wait_for "[ \$(peer_prog s rx) -ge $((p_rx + 131072)) ]" 60 ||
	fail "the stream from the guest doesn't move again"
mig_cap_stop "$cap"
mig_cap_text dst | grep -E "\.$PORT[: ]" >"$T/dst.txt" || :
if [ -s "$T/dst.txt" ]; then
	head -n 10 "$T/dst.txt" >&2
	fail "$(wc -l <"$T/dst.txt") segment(s) from DST on the stream's connection"
fi
expect "RSTs from DST" $(($(mig_rsts "$DST") - rst0)) 0
grep -q 'closed silently' "$T/dst/passt.socket.err" ||
	fail "target daemon: $(grep Migration "$T/dst/passt.socket.err" | tr '\n' ' ')"

qm_stream_stop s 60
g_run "touch /tmp/tel.stop" >/dev/null || :
log "guest: $QS_GUEST; peer: $(cat "$T/s.prog")"
expect "the stream, at its end" "$QS_CHECK" ok
qm_quit src
mig_daemon_stop "$SRC_PID"
sanitizer_check "$T/src/passt.socket.err" "$T/dst/passt.socket.err"
