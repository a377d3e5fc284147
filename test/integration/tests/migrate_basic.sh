#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_basic.sh - live migration of TCP connections in vhost-user mode,
# without QEMU (migrate-lib.sh): the guest kernel behind vu-front gets its
# address by DHCP from the daemon in the SRC pod, then opens pattern
# streams to the peer on the FABRIC (peer -> guest and guest -> peer, IPv4
# and IPv6: MIG_STREAMS, default "down4 up4 down6 up6"). vu-front then
# migrates it back and forth between the SRC and DST pods, once per value
# in MIG_W (default "0 500"): the fabric keeps routing the pod address to
# the old pod for W ms after the migration, as OVN does, then switches;
# the old daemon is then torn down (SIGTERM) and a fresh one started in
# its pod for the next round.
#
# First (MIG_CANCEL=1, default: as MIG_EXPECT_LOSSLESS) a migration is
# cancelled after the source saved its state: the source must run the
# guest again with every stream going on.
#
# Checked, with MIG_EXPECT_LOSSLESS=1 (the default, for our daemon):
# every migration succeeds, every stream carries on after each one (more
# bytes arrive), no RST leaves the old pod (TcpOutRsts), and at the end
# each receiver got exactly the bytes its sender sent, in order (every
# byte verified against its offset). MIG_EXPECT_LOSSLESS=0 only reports
# (for upstream passt, which loses connections when traffic still reaches
# the source after the migration).
#
# Environment: PASST_MIG (daemon, default $PASST), PASST_REPAIR (repair
# helper, default next to PASST_MIG), MIG_RATE (KiB/s per stream, default
# 1024), MIG_STATE_SAVE (vu-front --state-save argument, to record the
# streams), MIG_SILENCE_OLD=1 (cut the old pod off at each trigger, so it
# drops what still reaches it: emulates a silent lingering source, for
# daemons that leave no socket behind, see mig_pod_link).
#
# Upstream passt (Debian 13's, from test/upstream/fetch.sh) as the daemon:
#   PASST_MIG=$(test/upstream/fetch.sh)/passt MIG_EXPECT_LOSSLESS=0
# reports what it does; it passes with MIG_SILENCE_OLD=1 MIG_RATE=128
# MIG_CANCEL=0 (it exits after a migration as source, and can't restore a
# large unsent queue). A daemon without DEVICE_STATE: SKIP.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

MIG_W=${MIG_W:-0 500}
MIG_STREAMS=${MIG_STREAMS:-down4 up4 down6 up6}
MIG_EXPECT_LOSSLESS=${MIG_EXPECT_LOSSLESS:-1}
MIG_RATE=${MIG_RATE:-1024}
MIG_CANCEL=${MIG_CANCEL:-$MIG_EXPECT_LOSSLESS}
[ -z "${MIG_STATE_SAVE:-}" ] ||
	MIG_VU_OPTS="${MIG_VU_OPTS:-} --state-save $MIG_STATE_SAVE"

# problem MSG: a failure if we expect lossless migration, else a note
problems=
problem() {
	[ "$MIG_EXPECT_LOSSLESS" != 1 ] || fail "$*"
	log "NOTE (not asserted): $*"
	problems="$problems; $*"
}

# pod_daemon POD ROLE: a fresh daemon in pod POD (src or dst) in its own
# directory, with its repair helper: as a migration source the helper
# connects to its socket, as a target it watches the directory first
# (as KubeVirt does). Sets D_SOCK, D_PID
gen=0
pod_daemon() {
	gen=$((gen + 1))
	_d=$T/$1$gen
	mig_pod_dir "$_d"
	D_SOCK=$_d/passt.socket
	if [ "$2" = target ]; then
		mig_repair_start "$(mig_ns "$1")" "$_d"
		mig_daemon_start "$(mig_ns "$1")" "$D_SOCK"
	else
		mig_daemon_start "$(mig_ns "$1")" "$D_SOCK"
	fi
	D_PID=$MIG_DPID
}

# repair_ready POD SOCK: a helper connected to the daemon (start one if
# none is, e.g. on a former target whose helper left after the load)
repair_ready() {
	mig_repair_connected "$(mig_ns "$1")" "$2" && return 0
	mig_repair_start "$(mig_ns "$1")" "$2.repair"
	wait_for "mig_repair_connected $(mig_ns "$1") $2" 10 ||
		fail "repair helper not connected to $2.repair"
}

# stream_start NAME: down* peer -> guest, up* guest -> peer; 4/6 family
port=5000
stream_start() {
	port=$((port + 1))
	case $1 in
	*4) _a=$PEER4 ;;
	*6) _a=$PEER6 ;;
	esac
	case $1 in
	down*) _s=listen ;;
	up*) _s=connect ;;
	esac
	mig_stream_start "$1" "$FABRIC" "$GUEST" "$_a" "$port" "$_s" \
		--rate "$MIG_RATE"
	eval "SL_$1=$MIG_SL SC_$1=$MIG_SC"
}

# rx_side NAME: the receiving end of a stream (c: guest, l: peer)
rx_side() {
	case $1 in
	down*) echo c ;;
	up*) echo l ;;
	esac
}

# carry_on LABEL: every stream carries on: 128 KiB more than now, and
# both ends still running; "NAME:ok|broken ..." in cont
carry_on() {
	cont=
	for s in $MIG_STREAMS; do
		side=$(rx_side "$s")
		want=$(($(mig_prog "$s" "$side" rx) + 131072))
		eval "pids=\"\$SL_$s \$SC_$s\""
		if wait_for "[ \$(mig_prog $s $side rx) -ge $want ] ||
			     ! alive ${pids% *} || ! alive ${pids#* }" 15 &&
		   [ "$(mig_prog "$s" "$side" rx)" -ge "$want" ] &&
		   alive "${pids% *}" && alive "${pids#* }"; then
			cont="$cont $s:ok"
		else
			cont="$cont $s:broken"
			ends="peer $(mig_prog "$s" l end), guest $(mig_prog "$s" c end)"
			problem "$1: stream $s stops" \
				"($(mig_prog "$s" "$side" rx) bytes, ends: $ends)"
		fi
	done
}

mig_setup
pod_daemon src source
src_sock=$D_SOCK src_pid=$D_PID
mig_probe "$src_sock"
MIG_SOCK=$src_sock
guest_up
repair_ready src "$src_sock"

for s in $MIG_STREAMS; do
	stream_start "$s"
done
for s in $MIG_STREAMS; do
	mig_stream_wait_rx "$s" "$(rx_side "$s")" 65536 10 ||
		fail "stream $s does not flow: $(cat "$T/$s".*.err)"
done

cur=src cur_sock=$src_sock cur_pid=$src_pid
summary=

# A migration cancelled after the source saved its state: the source
# runs the guest again and keeps every connection
if [ "$MIG_CANCEL" = 1 ]; then
	rst0=$(mig_rsts "$SRC")
	mig_cancel || problem "cancelled migration: $MIG_RESULT"
	carry_on "cancel"
	rsts=$(($(mig_rsts "$SRC") - rst0))
	[ "$rsts" -eq 0 ] || problem "cancel: $rsts RSTs from $SRC"
	summary="$summary
cancel: result=$(mig_field result) state_bytes=$(mig_field state_bytes) rsts=$rsts streams:$cont"
	alive "$src_pid" || fail "the source died on a cancelled migration"
fi
for w in $MIG_W; do
	case $cur in
	src) to=dst ;;
	dst) to=src ;;
	esac
	old_ns=$(mig_ns "$cur")
	pod_daemon "$to" target
	to_sock=$D_SOCK to_pid=$D_PID
	wait_for "mig_repair_connected $(mig_ns "$to") $to_sock" 10 ||
		fail "target's repair helper (directory mode) not connected"
	repair_ready "$cur" "$cur_sock"

	new_ns=$(mig_ns "$to")
	rst0=$(mig_rsts "$old_ns")
	nrst0=$(mig_rsts "$new_ns")
	ss_dump "before migration $((MIG_N + 1)) (W=$w)"

	# The fabric keeps routing to the old pod for W ms after the target
	# runs the guest
	[ "${MIG_SILENCE_OLD:-0}" = 0 ] || mig_pod_link "$cur" down
	mig_migrate_switch "$to_sock" "$to" "$w" ||
		fail "migration $cur -> $to: $MIG_RESULT"
	downtime=$(mig_field downtime_ms)
	state=$(mig_field state_bytes)

	carry_on "W=$w"
	rsts=$(($(mig_rsts "$old_ns") - rst0))
	nrsts=$(($(mig_rsts "$new_ns") - nrst0))
	ss_dump "after migration $MIG_N (W=$w)"
	[ "$rsts" -eq 0 ] || problem "W=$w: $rsts RSTs from the old pod $old_ns"
	[ "$nrsts" -eq 0 ] || problem "W=$w: $nrsts RSTs from the new pod $new_ns"

	# The old pod is torn down (its daemon may have exited by itself)
	mig_daemon_stop "$cur_pid"
	[ "${MIG_SILENCE_OLD:-0}" = 0 ] || mig_pod_link "$cur" up
	summary="$summary
W=$w $cur->$to: result=$(mig_field result) state_bytes=$state downtime_ms=$downtime switch=$MIG_SWITCH_MS rsts_old=$rsts rsts_new=$nrsts streams:$cont"
	cur=$to cur_sock=$to_sock cur_pid=$to_pid
done

# Stop all senders: each receiver must have everything, verified
for s in $MIG_STREAMS; do
	eval "MIG_SL=\$SL_$s MIG_SC=\$SC_$s"
	# One end gone already (reset): don't wait long for the other
	if alive "$MIG_SL" && alive "$MIG_SC"; then
		mig_stream_stop "$s" 20
	else
		mig_stream_stop "$s" 2
	fi
	side=$(rx_side "$s")
	case $side in
	c) tx=$(mig_prog "$s" l tx) ;;
	l) tx=$(mig_prog "$s" c tx) ;;
	esac
	rx=$(mig_prog "$s" "$side" rx)
	end=$(mig_prog "$s" "$side" end)
	summary="$summary
stream $s: sent=$tx received=$rx end=$end status=$MIG_ST_L/$MIG_ST_C"
	if [ "$MIG_ST_L" != 0 ] || [ "$MIG_ST_C" != 0 ]; then
		problem "stream $s: exit status $MIG_ST_L (peer) / $MIG_ST_C (guest): $(cat "$T/$s".*.err)"
	elif [ "$tx" != "$rx" ]; then
		problem "stream $s: sent $tx bytes, received $rx"
	fi
done

log "daemon: $PASST_MIG$summary"
[ -z "$problems" ] || log "problems (not asserted):$problems"
alive "$cur_pid" || fail "the daemon now running the guest died"
