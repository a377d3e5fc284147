#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# record.sh SCENARIO OUT - record a migration stream (the raw bytes of the
# device-state pipe) from a live migration, without QEMU: the topology of
# test/integration/migrate-lib.sh, the guest kernel behind vu-front, a
# daemon in each pod (PASST_MIG, default upstream passt from
# test/upstream/fetch.sh, with its passt-repair), connections set up as
# SCENARIO says, then one migration SRC -> DST whose SAVE stream vu-front
# writes to OUT (--state-save). The target must accept it
# (CHECK_DEVICE_STATE 0). See README for the scenarios.
#
#   1flow   A: guest -> peer 203.0.113.7:5001 (IPv4); both sides send
#           12000 pattern bytes (sockio pattern-*), neither reads, with
#           4 KiB receive buffers: data queued both ways
#   3flows  A as above, plus
#           B: guest -> peer 203.0.113.7:5002 (IPv4); the guest sends
#              3000 bytes then FIN; the peer neither reads nor closes:
#              half-closed by the guest
#           C: guest -> peer [2001:db8:2::7]:5003 (IPv6); the peer sends
#              3000 bytes then FIN, the guest (4 KiB receive buffer)
#              doesn't read: half-closed by the peer
#
# Run as root. Prints the result line of vu-front and the flow count.
set -eu
SCENARIO=${1:?usage: record.sh 1flow|3flows OUT}
OUT=$(realpath -m "${2:?usage: record.sh 1flow|3flows OUT}")
# lib.sh finds the tree three levels up, as from test/integration/tests
# shellcheck source=../../integration/lib.sh
. "$(dirname "$0")/../../integration/lib.sh"
# shellcheck source=../../integration/vu.sh
. "$(dirname "$0")/../../integration/vu.sh"
if [ -z "${PASST_MIG:-}" ]; then
	PASST_MIG=$("$TOP/test/upstream/fetch.sh")/passt || exit $?
fi
# shellcheck source=../../integration/migrate-lib.sh
. "$(dirname "$0")/../../integration/migrate-lib.sh"
need busybox

mig_setup
mig_pod_dir "$T/s"
mig_pod_dir "$T/d"
MIG_SOCK=$T/s/passt.socket
MIG_VU_OPTS="--state-save $OUT"
mig_daemon_start "$SRC" "$MIG_SOCK"
# A fixed MAC for the guest, so that the stream doesn't change with it
guest_up_fixed() {
	mig_bridge_start "$MIG_SOCK"
	ip -n "$GUEST" link set tap0 address 52:54:00:12:34:56
	dhcp4
	dhcp4_apply
	slaac_wait
	wait_for "ip -n $GUEST -6 -o addr show dev tap0 scope global |
		  grep 'inet6 2001:db8:1:' | grep -qv tentative" 10 ||
		fail "SLAAC address stays tentative"
}
guest_up_fixed
mig_repair_start "$SRC" "$MIG_SOCK.repair"
wait_for "mig_repair_connected $SRC $MIG_SOCK" 10 ||
	fail "source repair helper not connected"
mig_repair_start "$DST" "$T/d"
mig_daemon_start "$DST" "$T/d/passt.socket"
wait_for "mig_repair_connected $DST $T/d/passt.socket" 10 ||
	fail "target repair helper not connected"

# flow NAME ADDR PORT PEER_OPTS GUEST_OPTS: the peer listens in FABRIC,
# the guest connects; both stay until the end
flow() {
	rm -f "$T/$1.ready"
	bg "$FABRIC" "$1.l" /dev/null /dev/null "$SOCKIO" -t 120 \
		--ready "$T/$1.ready" --progress "$T/$1.l.prog" \
		--stop-file "$T/stop" $4 pattern-listen "$2" "$3"
	wait_ready "$T/$1.ready"
	bg "$GUEST" "$1.c" /dev/null /dev/null "$SOCKIO" -t 120 \
		--progress "$T/$1.c.prog" --stop-file "$T/stop" $5 \
		pattern-connect "$2" "$3"
}

# settled NAME: both ends sent all they will send (progress file tx)
sent() {
	[ "$(mig_prog "$1" "$2" tx)" -ge "$3" ]
}

flow A "$PEER4" 5001 "--send --bytes 12000 --hold --pause-rx --rcvbuf 4096" \
	"--send --bytes 12000 --hold --pause-rx --rcvbuf 4096"
wait_for "sent A l 12000 && sent A c 12000" 10 || fail "flow A: not sent"
if [ "$SCENARIO" = 3flows ]; then
	flow B "$PEER4" 5002 "--pause-rx" "--send --bytes 3000"
	flow C "$PEER6" 5003 "--send --bytes 3000" "--pause-rx --rcvbuf 4096"
	wait_for "sent B c 3000 && sent C l 3000" 10 || fail "B, C: not sent"
elif [ "$SCENARIO" != 1flow ]; then
	fail "unknown scenario $SCENARIO"
fi
# Let the FINs and ACKs settle: every socket of the source idle
wait_for "[ -z \"\$(ns $SRC ss -tnH state syn-sent state syn-recv)\" ]" 5
ss_dump "before"
ns "$SRC" ss -tinm >&2

mig_migrate_switch "$T/d/passt.socket" dst 0 ||
	fail "migration: $MIG_RESULT"
[ "$(mig_field load_check)" = 0 ] || fail "target refused: $MIG_RESULT"
n=$(od -An -tu1 -j58 -N4 "$OUT" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
log "recorded $(stat -c %s "$OUT") bytes, $n flows, in $OUT"
touch "$T/stop"
