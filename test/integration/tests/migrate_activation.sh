#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_activation.sh - the migration target announces the guest on the
# pod's interface, and a fabric that behaves like OVN with
# activation-strategy=rarp (activation-lib.sh: it moves the pod address
# to the target pod when it sees a RARP from that pod's MAC) switches on
# it. In the migrate-lib.sh topology, with a stream each way (peer ->
# guest "down", guest -> peer "up", every byte checked), and vu-front
# sending SEND_RARP after each migration as QEMU does (--send-rarp):
#
#   1. SRC -> DST, our daemon with CAP_NET_RAW (root here): the fabric
#      sees, on its link to DST, a RARP from DST's eth0 MAC, a gratuitous
#      ARP for the pod's IPv4 address and an unsolicited NA for its IPv6
#      address, and switches on the RARP, not on its W timeout; the
#      daemon logs the announcement;
#   2. DST -> SRC, the target without CAP_NET_RAW (not in its bounding
#      set): one line at start says it can't announce, nothing is sent,
#      the fabric switches at its W timeout, the migration works as ever;
#   3. SRC -> DST, the target with --no-announce: no line, nothing sent,
#      the same.
# Then both streams must have every byte, in order, and no RST may have
# left either pod. Logged: for migration 1, the time from the target
# running the guest to the RARP and to the switch, and from the switch
# to each stream moving again (the peer's first segment reaching the
# target: data for down, its ACK for up); the same for the W timeout
# runs. Timing isn't asserted here: bench/migrate-activation.sh measures
# it.
#
# ACT_W: the fallback timeout, ms (default 2000).
# PT_TIMEOUT: 240
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
# shellcheck source=activation-lib.sh
. "$(dirname "$0")/../activation-lib.sh"
need tcpdump setpriv

W=${ACT_W:-2000}
MIG_VU_OPTS="--send-rarp"
DPORT=5101
UPORT=5102

# The daemon without CAP_NET_RAW: out of its bounding set, so root's exec
# doesn't get it
cat >"$T/passt-noraw" <<EOF
#!/bin/sh
exec setpriv --bounding-set -net_raw "$PASST" "\$@"
EOF
chmod 0755 "$T/passt-noraw"

mig_setup
act_cap_start
mig_guest_start
cur_pod=src cur_sock=$D_SOCK cur_pid=$D_PID
mig_stream down down4 "$DPORT" --rate 1024 -t 600
mig_stream up up4 "$UPORT" --rate 1024 -t 600
rst_src=$(mig_rsts "$SRC") rst_dst=$(mig_rsts "$DST")

# step N TO BIN [OPTION...]: streams flow, a target of BIN in pod TO,
# migrate there, streams flow again, the old source's linger ends.
# Sets T_LOG (the target's log) and the ACT_* figures
step() {
	_sn=$1 _to=$2 _bin=$3
	shift 3
	for s in down up; do
		mig_flowing "$s" 65536 30 ||
			fail "stream $s doesn't flow before migration $_sn"
	done
	PASST_SRC=$_bin PASST_DST=$_bin mig_pod_daemon "$_to" target "$@"
	_ts=$D_SOCK _tp=$D_PID
	T_LOG=$D_LOG
	mig_repair_ready "$cur_pod" "$cur_sock"
	act_migrate "$_ts" "$_to" "$W" || fail "migration $_sn: $MIG_RESULT"
	for s in down up; do
		mig_flowing "$s" 65536 30 ||
			fail "stream $s doesn't move after migration $_sn"
	done
	kill -USR2 "$cur_pid"
	mig_exit_wait "$cur_pid" 10 || fail "the old source ignored SIGUSR2"
	echo "$_sn $_to $ACT_HOW $ACT_RUN ${ACT_RARP:-none} $ACT_SWITCH" \
		>>"$T/steps"
	log "migration $_sn to $_to: switched on $ACT_HOW," \
		"$((ACT_SWITCH - ACT_RUN)) ms after the target ran the guest"
	cur_pod=$_to cur_sock=$_ts cur_pid=$_tp
}

# announced IF MAC [FROM]: what the pod with MAC announced on link IF (from
# FROM, epoch ms, on): "rarp=N garp=N na=N", counting RARPs, gratuitous
# ARPs for ADDR4 and unsolicited NAs (to all nodes) for ADDR6, from MAC
announced() {
	act_frames "$1" | awk -v mac="$2" -v a4="$ADDR4" -v a6="$ADDR6" \
		-v from="${3:-0}" '
		$2 != mac || $1 * 1000 < from { next }
		/Reverse ARP|RARP|0x8035/ { r++; next }
		/ARP/ && index($0, "who-has " a4 " tell " a4) { g++; next }
		/ARP/ && index($0, "Announcement " a4) { g++; next }
		/neighbor advertisement/ && index($0, "> ff02::1:") &&
			index($0, "tgt is " a6) { n++ }
		END { printf "rarp=%d garp=%d na=%d\n", r, g, n }'
}

: >"$T/steps"
mac_dst=$(act_mac dst) mac_src=$(act_mac src)

# 1. With CAP_NET_RAW: announced, switched on the RARP
step 1 dst "$PASST"
grep -q 'Announce: a migrated guest is announced on eth0' "$T_LOG" ||
	fail "the target didn't open its packet socket: $(grep Announce "$T_LOG")"
grep 'Announce (' "$T_LOG" >&2 ||
	fail "the target didn't announce the guest: $(tail -n 5 "$T_LOG")"
expect "what switched the fabric in migration 1" "$ACT_HOW" rarp
log1="$(grep -m1 'Announce (' "$T_LOG")"

# 2. Without CAP_NET_RAW: one line, nothing sent
step 2 src "$T/passt-noraw"
expect "'no CAP_NET_RAW' lines of the target" \
	"$(grep -c 'Announce: no CAP_NET_RAW' "$T_LOG")" 1
! grep 'Announce (' "$T_LOG" ||
	fail "a target without CAP_NET_RAW announced something"
expect "what switched the fabric in migration 2" "$ACT_HOW" timeout

# 3. --no-announce: not a word, nothing sent
step 3 dst "$PASST" --no-announce
! grep 'Announce' "$T_LOG" || fail "--no-announce, and still: $(grep Announce "$T_LOG")"
expect "what switched the fabric in migration 3" "$ACT_HOW" timeout

mig_streams_verify down up
expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src)) 0
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst_dst)) 0
mig_stop "$cur_pid"
act_cap_stop

# What went on the wire: migration 1's target (DST) announced, with its
# MAC; migration 2's (SRC) didn't, nor migration 3's (DST again: only
# migration 1's burst may be in the capture, before migration 3 ran)
a_dst=$(announced fd "$mac_dst")
a_src=$(announced fs "$mac_src")
log "announced on fd by $mac_dst: $a_dst; on fs by $mac_src: $a_src"
case "$a_dst" in
rarp=0*) fail "no RARP from the target pod in migration 1" ;;
esac
case "$a_dst" in
*"garp=0 "*) fail "no gratuitous ARP for $ADDR4 from the target pod" ;;
*na=0) fail "no unsolicited NA for $ADDR6 from the target pod" ;;
esac
expect "announcements from SRC (migration 2, no CAP_NET_RAW)" "$a_src" \
	"rarp=0 garp=0 na=0"
# Migration 3 started after migration 1's switch: nothing from DST's MAC
# after it
s3=$(awk '$1 == 3 { print $4 }' "$T/steps")
expect "announcements from DST in migration 3 (--no-announce)" \
	"$(announced fd "$mac_dst" "$s3")" "rarp=0 garp=0 na=0"

# The figures
while read -r n to how run rarp sw; do
	[ "$to" = dst ] && l=fd || l=fs
	down=$(act_resume "$DPORT" 1 "$l" "$sw")
	up=$(act_resume "$UPORT" 0 "$l" "$sw")
	r=none
	[ "$rarp" = none ] || r="$((rarp - run)) ms"
	log "migration $n ($how): RARP at $r, switch at $((sw - run)) ms" \
		"after the target ran the guest; then down moved after" \
		"$down ms, up after $up ms"
done <"$T/steps"
log "$log1"
