#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_upstream.sh - live migration of a real guest under QEMU 10
# between our daemon and upstream passt (Debian 13's 0.0~git20250503,
# test/upstream/fetch.sh), in the migrate-lib.sh topology (pods SRC and
# DST with the same addresses, the peer behind the FABRIC), each daemon
# with its own passt-repair (as each node has its own). E2E_UP_CASE:
#
#   to       (default) ours with --virtio-compat boots the guest, which
#            so negotiates upstream's virtio features only (checked in
#            the guest's sysfs); it moves to upstream. The fabric routes
#            to SRC for QM_W s more, where our source holds the sockets
#            silently; SIGUSR2 ends its linger
#   from     upstream boots the guest, which moves to ours. Debian 13's
#            passt exits when the migration completes (no linger in that
#            release), and the peer's segments would find no socket in
#            SRC: the source pod is cut off the fabric when the migration
#            starts (as in migrate_interop.sh), the fabric switches QM_W s
#            after the target runs the guest. Ours, as the target (root
#            here: CAP_NET_RAW), announces the guest on DST's eth0 when
#            its rings start and on QEMU's SEND_RARPs (at most one burst
#            in 50 ms): at least two RARPs from DST's MAC on the fabric
#   refused  ours without --virtio-compat boots the guest (it negotiates
#            our offloads and EVENT_IDX), and the migration to upstream
#            must fail as QEMU fails it: the target's QEMU says
#            "Features 0x... unsupported" after the back-end state was
#            loaded, the source (return-path on, as libvirt asks) resumes
#            the guest, our source takes its connections back
#
# In each, two connections stream a position-encoded pattern both ways
# (sockio pattern-*, every byte checked against its offset) across the
# migration; checked: they move again after it, each end got exactly what
# the other sent, in order, with a clean end of stream; no RST leaves a
# pod that still gets the peer's segments.
#
# vhost-user only: SKIP in stream mode, and if test/upstream/fetch.sh
# can't get the package. Environment: QM_W (s, default 2), QM_RATE (KiB/s
# per direction and stream, default 512).
# e2e-timeout: 420
set -eu
. "$(dirname "$0")/../lib.sh"

[ "$E2E_MODE" = vhost-user ] ||
	skip "migration needs the vhost-user front-end"
need jq nstat
CASE=${E2E_UP_CASE:-to}
QM_W=${QM_W:-2}
QM_RATE=${QM_RATE:-512}

need_upstream passt

# Our helper: next to the daemon, else the plain build's (e2e-asan)
OURS_REPAIR=$(dirname "$PASST")/passt-repair
[ -x "$OURS_REPAIR" ] || OURS_REPAIR=$TOOLS/../../passt-repair
[ -x "$OURS_REPAIR" ] || fail "no passt-repair of ours"
OURS_REPAIR=$(cd "$(dirname "$OURS_REPAIR")" && pwd)/passt-repair
case "$CASE" in
from)
	export PASST_SRC=$UP/passt PASST_REPAIR_SRC=$UP/passt-repair
	export PASST_DST=$PASST PASST_REPAIR_DST=$OURS_REPAIR
	SRC_OPTS=
	;;
to | refused)
	export PASST_SRC=$PASST PASST_REPAIR_SRC=$OURS_REPAIR
	export PASST_DST=$UP/passt PASST_REPAIR_DST=$UP/passt-repair
	SRC_OPTS="--migrate-linger-timeout 300"
	[ "$CASE" = refused ] || SRC_OPTS="$SRC_OPTS --virtio-compat"
	;;
*) fail "E2E_UP_CASE: from, to or refused, not '$CASE'" ;;
esac
export PASST_REPAIR=$OURS_REPAIR
. "$(dirname "$0")/../migrate-lib.sh"
log "case $CASE: $PASST_SRC in SRC ($SRC_OPTS), $PASST_DST in DST"

# shellcheck disable=SC2086
qm_boot $SRC_OPTS

# The virtio features the guest negotiated at boot, from its sysfs (one
# character per bit, bit 0 first)
feat=$(g_ok 'cat /sys/class/net/eth0/device/features')
offl=
for b in 0 1 7 8 11 12 29; do
	[ "${feat:$b:1}" != 1 ] || offl="$offl $b"
done
log "guest's virtio features: $feat (offload and EVENT_IDX bits set:${offl:- none})"
case "$CASE" in
refused) [ -n "$offl" ] || fail "the guest negotiated none of our offloads" ;;
*) [ -z "$offl" ] ||
	fail "the guest negotiated bits$offl, which upstream doesn't offer" ;;
esac

qm_stream_start s 5001 "$QM_RATE"
qm_stream_start t 5002 "$QM_RATE"
qm_streams_flowing 131072 s t

qm_repair_src
rst_src=$(mig_rsts "$SRC") rst_dst=$(mig_rsts "$DST")

# The streams, stopped and checked: every byte, both ways, clean ends
streams_check() {
	for n in s t; do
		qm_stream_stop "$n" 60
		log "stream $n: guest: $QS_GUEST; peer: $(cat "$T/$n.prog")"
		expect "stream $n, at its end" "$QS_CHECK" ok
	done
	g_run "touch /tmp/tel.stop" >/dev/null || :
}

if [ "$CASE" = refused ]; then
	# libvirt turns the return path on: the source learns that the
	# target failed, and runs the guest again
	qmp src '{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "return-path", "state": true}]}}' \
		>/dev/null || fail "QEMU refuses the return-path capability"
	if qm_migrate 120; then
		fail "QEMU migrated a guest with our offloads to upstream"
	fi
	wait_for "grep -q 'Features 0x' '$T/qemu-dst.err' || ! alive $QDST_PID" 30 || :
	msg=$(grep -m1 'Features 0x' "$T/qemu-dst.err") ||
		fail "no 'Features 0x... unsupported' from the target's QEMU: $(tail -n 5 "$T/qemu-dst.err")"
	log "the target's QEMU: $msg; $(grep -m1 'Failed to load' "$T/qemu-dst.err" || :)"
	log "upstream, as the refused target: $(tail -n 4 "$T/dst/passt.socket.err" | tr '\n' ' ')"
	wait_for "qmp src '{\"execute\": \"query-status\"}' | grep -q '\"status\": \"running\"'" 30 ||
		fail "the source doesn't run the guest again: $(qmp src '{"execute": "query-status"}')"
	wait_for "grep -q 'connection(s) resumed' '$T/src/passt.socket.err'" 20 ||
		fail "our source didn't take its connections back: $(tail -n 5 "$T/src/passt.socket.err")"
	grep 'connection(s) resumed' "$T/src/passt.socket.err" >&2
	for n in s t; do
		r0=$(tel_last "$n" rx) p0=$(peer_prog "$n" rx)
		wait_for "[ \$(tel_last $n rx) -ge $((r0 + 131072)) ]" 30 ||
			fail "stream $n to the guest doesn't move on the source"
		wait_for "[ \$(peer_prog $n rx) -ge $((p0 + 131072)) ]" 30 ||
			fail "stream $n from the guest doesn't move on the source"
	done
	streams_check
	expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src)) 0
	qm_quit src
	qm_quit dst
	mig_daemon_stop "$SRC_PID"
	sanitizer_check "$T/src/passt.socket.err"
	exit 0
fi

if [ "$CASE" = from ]; then
	mig_pod_link src down
	# What DST announces
	dmac=$(ip -n "$DST" link show eth0 |
	       sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
	ip netns exec "$FABRIC" tcpdump -U --immediate-mode -n -e -tt -i fd \
		-Q in "ether proto 0x8035 and ether src $dmac" \
		>"$T/rarp.txt" 2>"$T/rarp.log" &
	RARP_CAP=$!
	track "$RARP_CAP"
	wait_for "grep -q 'listening on' '$T/rarp.log'" 60 ||
		fail "tcpdump: $(cat "$T/rarp.log")"
fi
qm_switch_arm "$QM_W"
qm_migrate 120 || fail "migration failed: $(tail -n 3 "$T/qemu-dst.err")"
qm_quit src --nowait
qm_switch_wait
qm_quit src
log "fabric switched to DST $((QM_T_SWITCH - QM_T_RUN)) ms after the" \
	"target ran the guest"
for n in s t; do
	qm_moved "$n" 131072 30 ||
		fail "stream $n to the guest doesn't move after the switch"
	log "stream $n to the guest moved again $QM_MOVED_MS ms after the switch"
	p0=$(peer_prog "$n" rx)
	wait_for "[ \$(peer_prog $n rx) -ge $((p0 + 131072)) ]" 30 ||
		fail "stream $n from the guest doesn't move after the switch"
done
streams_check
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst_dst)) 0

if [ "$CASE" = to ]; then
	expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src)) 0
	qm_linger_end
	[ ! -e "$SOCK_SRC.pid" ] || fail "source pid file left behind"
	sanitizer_check "$T/src/passt.socket.err"
else
	# Debian 13's passt has no linger: it exits with the migration
	wait_for "! alive $SRC_PID" 10 ||
		fail "upstream's source still runs after the migration"
	kill -INT "$RARP_CAP" 2>/dev/null || :
	wait_for "! alive $RARP_CAP" 10 || :
	n=$(grep -c 'Reverse Request' "$T/rarp.txt" || :)
	first=$(awk 'NR == 1 { printf "%d", $1 * 1000 }' "$T/rarp.txt")
	log "DST announced: $n RARP(s) from $dmac, the first" \
		"$((${first:-0} - QM_T_RUN)) ms after the target's RESUME;" \
		"$(grep -m1 'Announce (' "$T/dst/passt.socket.err" || :)"
	[ "${n:-0}" -ge 2 ] ||
		fail "DST sent $n RARP(s): $(cat "$T/rarp.txt")"
	log "RSTs from the source pod (cut off the fabric):" \
		"$(($(mig_rsts "$SRC") - rst_src))"
fi
log "QEMU: downtime $QM_DOWNTIME ms, total $QM_TOTAL ms"
alive "$DST_PID" || fail "the target daemon died"
qm_quit dst
mig_daemon_stop "$DST_PID"
[ "$CASE" != from ] || sanitizer_check "$T/dst/passt.socket.err"
