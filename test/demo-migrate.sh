#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# demo-migrate.sh - a live migration a person can watch: a real guest in
# QEMU (TCG, vhost-user, memfd memory) behind passt in pod SRC receives a
# stream from a peer, and is migrated to a second QEMU behind passt in pod
# DST, which has the same IP address. The network fabric (a router
# namespace) keeps delivering the peer's packets to SRC for W seconds
# after the migration, as OVN does, then switches to DST. The launcher's
# lifetime-end signal (SIGUSR2) then ends the source's linger.
#
# It prints its progress, then a summary: bytes sent and bytes received in
# order (both directions: the guest streams back to the peer), RSTs seen by
# the peer (a capture on the fabric), QEMU's downtime and total time, and
# how long after the fabric switch the stream moved again. It writes a
# timeline picture (gnuplot, PNG): the bytes the guest received over time,
# with the migration, the switch and the signal marked; README.md, section
# "Migration demo", explains how to read it.
#
# Usage: test/demo-migrate.sh (make demo-migrate does it all)
# Environment:
#   DEMO_LINGER=no   the source runs with --migrate-no-linger (deprecated):
#                    it closes the migrated sockets at once, and the peer's
#                    packets that still reach it are answered with RSTs
#   DEMO_W           seconds the fabric keeps routing to SRC (default 3)
#   DEMO_RATE        KiB/s each way (default 512)
#   DEMO_OUT         directory for the picture (default: the current one):
#                    demo-migrate.png, or demo-migrate-nolinger.png
# and PASST, TOOLS, QEMU, E2E_ACCEL as in test/e2e/lib.sh. Needs root,
# QEMU 10 and gnuplot (.ci/setup).
#
# Exit status: 0 when the demo ran and, with the linger, showed what it
# should (every byte in order, no RST, the stream moving again); with
# DEMO_LINGER=no the broken stream is the expected outcome.
set -eu

E2E_MODE=vhost-user
export E2E_MODE
PT_ID=dmig$$
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/lib.sh
. "$HERE/e2e/lib.sh"
# shellcheck source=e2e/migrate-lib.sh
. "$HERE/e2e/migrate-lib.sh"

DEMO_LINGER=${DEMO_LINGER:-yes}
DEMO_W=${DEMO_W:-3}
DEMO_RATE=${DEMO_RATE:-512}
DEMO_OUT=${DEMO_OUT:-$PWD}
PORT=5001
case "$DEMO_LINGER" in
yes) PNG=$DEMO_OUT/demo-migrate.png; SRC_OPTS= ;;
no) PNG=$DEMO_OUT/demo-migrate-nolinger.png
    SRC_OPTS=--migrate-no-linger ;;
*) echo "DEMO_LINGER: yes or no, not '$DEMO_LINGER'" >&2; exit 64 ;;
esac

DEMO_T0=$(ms_now)
# The helpers' chatter goes to $T/demo.log; lib.sh's fail() still shows
# a failure on the terminal from inside a redirected call (PT_KEEP=1 keeps
# $T to look at)
# say MSG: a progress line, with the time since the start
say() {
	_ms=$(($(ms_now) - DEMO_T0))
	printf '[%3d.%d s] %s\n' $((_ms / 1000)) $((_ms % 1000 / 100)) "$*"
}
# note MSG: a continuation line
note() {
	printf '           %s\n' "$*"
}
# mib BYTES: BYTES in MiB, one decimal
mib() {
	awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'
}

need jq nstat tcpdump gnuplot
have_guest || {
	say "building the guest image (test/guest/build.sh)"
	"$TOP/test/guest/build.sh"
}
need_guest
mkdir -p "$DEMO_OUT"

say "live migration demo, linger: $DEMO_LINGER" \
	"(DEMO_LINGER=no: the deprecated --migrate-no-linger)"
qm_pods 2>>"$T/demo.log"
note "pods $SRC and $DST, both $ADDR4; fabric $FABRIC with the peer" \
	"$PEER4, routing $ADDR4 to $SRC"
# shellcheck disable=SC2086
qm_daemon src --migrate-linger-timeout 120 $SRC_OPTS 2>>"$T/demo.log"
qm_daemon dst 2>>"$T/demo.log"
note "passt --vhost-user in each pod${SRC_OPTS:+ (in $SRC with $SRC_OPTS)};" \
	"passt-repair watches $DST's directory"

# What reaches the peer with RST set, on the fabric
ip netns exec "$FABRIC" tcpdump -Z root -U -n -i any -w "$T/rst.pcap" \
	"tcp[tcpflags] & tcp-rst != 0 and dst host $PEER4" \
	>/dev/null 2>"$T/tcpdump.err" &
DUMP_PID=$!
track "$DUMP_PID"
wait_for "grep -q 'listening on' '$T/tcpdump.err'" 20 2>>"$T/demo.log" ||
	fail "tcpdump: $(cat "$T/tcpdump.err")"

say "booting the guest: QEMU $(accel_args), ${QM_MEM} MiB memfd memory," \
	"vhost-user to passt in $SRC"
qm_start src
qm_start dst
note "target QEMU started with -incoming unix:$QM_MIG_SOCK, vhost-user" \
	"to passt in $DST"
# (its failure, if any, on stderr: a loaded machine boots TCG slowly)
guest_wait 240 2>>"$T/demo.log"
note "guest online after $(( ($(now_ms) - QEMU_T0) / 1000 )) s:" \
	"ip=$G_IP4 router=$G_ROUTER mtu=$G_MTU"

say "the guest connects to the peer; both stream a position-encoded" \
	"pattern at $DEMO_RATE KiB/s, every byte checked"
qm_stream_start s "$PORT" "$DEMO_RATE"
tel_start s=/tmp/s.prog
# The peer's side, sampled every 50 ms
(
	while :; do
		_e=${EPOCHREALTIME/./}
		read -r _l <"$T/s.prog" 2>/dev/null || _l=
		printf '%s %s\n' "$((_e / 1000))" "$_l"
		sleep 0.05
	done >"$T/peer.tl"
) &
track $!
wait_for "[ \$(tel_last s rx) -ge $((DEMO_RATE * 1024 * 3)) ]" 60 \
	2>>"$T/demo.log" || fail "the stream doesn't flow"
note "guest received $(mib "$(tel_last s rx)") so far"

say "passt-repair connects to passt in $SRC (TCP_REPAIR for the migration)"
say "migrating: QMP \"migrate\" to unix:$QM_MIG_SOCK on the source QEMU"
qm_repair_src 2>>"$T/demo.log"
rst_src0=$(mig_rsts "$SRC")
qm_switch_arm "$DEMO_W"
qm_migrate 120 2>>"$T/demo.log" ||
	fail "migration $QM_STATUS: $(tail -n 3 "$T/qemu-src.err")"
say "migration completed: downtime $QM_DOWNTIME ms, total $QM_TOTAL ms" \
	"(QEMU's numbers); the guest runs in $DST"
qm_quit src --nowait
note "source QEMU quits (the source domain's teardown);" \
	"$(grep -m1 -o 'Migration: completed as source.*' \
	   "$T/src/passt.socket.err" || echo 'passt in SRC: no completion')"
if [ "$DEMO_LINGER" = yes ]; then
	note "passt in $SRC: $(grep -m1 -o 'Linger: holding.*' \
		"$T/src/passt.socket.err" || echo 'no linger line')"
else
	note "passt in $SRC closed the migrated sockets (--migrate-no-linger)"
fi
say "the fabric still delivers $ADDR4 to $SRC for $DEMO_W s"
qm_switch_wait
qm_quit src
say "fabric switched: $ADDR4 goes to $DST now," \
	"$((QM_T_SWITCH - QM_T_RUN)) ms after the guest ran there"
# Without the linger, a stream that isn't back in 10 s won't be
moved_wait=20 usr2_wait=10
[ "$DEMO_LINGER" = yes ] || moved_wait=10 usr2_wait=2
moved=yes
qm_moved s 65536 "$moved_wait" 2>>"$T/demo.log" || moved=no
# What the guest takes after the switch may still be what the target's
# socket had queued: with the peer's end reset, nothing new can come
if [ "$(peer_prog s end)" = rst ]; then
	moved=no
	say "the peer's end of the connection was reset"
fi
if [ -n "$QM_MOVED_MS" ] && [ "$moved" = yes ]; then
	say "the stream to the guest moved again $QM_MOVED_MS ms after the switch"
else
	moved=no
	say "the stream to the guest did not move again ($moved_wait s)"
fi
# More of the stream for the picture, then the lifetime-end signal
sleep 2
say "lifetime end: SIGUSR2 to passt in $SRC (\"the fabric has switched\")"
T_USR2=$(ms_now)
kill -USR2 "$SRC_PID" 2>/dev/null || :
src_end="still running"
if wait_for "! alive $SRC_PID" "$usr2_wait" 2>>"$T/demo.log"; then
	st=0
	wait "$SRC_PID" || st=$?
	src_end="exited with status $st"
fi
note "passt in $SRC $src_end"
if grep -q 'Linger: ended' "$T/src/passt.socket.err"; then
	note "$(grep -m1 -o 'Linger: ended.*' "$T/src/passt.socket.err")"
else
	note "(it has no linger to end: SIGUSR2 is ignored; SIGTERM now)"
fi
[ "$src_end" = "still running" ] && mig_daemon_stop "$SRC_PID"
sleep 2

say "stopping the stream: both ends stop sending and wait for the other's end"
T_STOP=$(ms_now)
qm_stream_stop s 20 2>>"$T/demo.log"
g_run -t 10 "touch /tmp/tel.stop" >/dev/null || :
rst_src=$(($(mig_rsts "$SRC") - rst_src0))
kill -INT "$DUMP_PID" 2>/dev/null || :
wait "$DUMP_PID" 2>/dev/null || :
rst_peer=$(tcpdump -r "$T/rst.pcap" -n 2>/dev/null | wc -l)
qm_quit dst
mig_daemon_stop "$DST_PID"

# ---- the picture ----
T_PAUSE=$(qm_qmp_event src STOP)
T_RESUME=$(qm_qmp_event dst RESUME)
T_END=$QM_T_RUN
s_rel() {
	awk -v t="$1" -v z="$QM_T_START" 'BEGIN { printf "%.3f", (t - z) / 1000 }'
}
tel_get s rx | awk -v z="$QM_T_START" \
	'{ printf "%.3f %.4f\n", ($1 - z) / 1000, $2 / 1048576 }' >"$T/guest.dat"
awk -v z="$QM_T_START" '{ for (i = 2; i <= NF; i++) if ($i ~ /^tx=/) {
	printf "%.3f %.4f\n", ($1 - z) / 1000, substr($i, 4) / 1048576 } }' \
	"$T/peer.tl" >"$T/peer.dat"
x_pause=$(s_rel "${T_PAUSE:-$T_END}")
x_resume=$(s_rel "${T_RESUME:-$T_END}")
x_end=$(s_rel "$T_END")
x_switch=$(s_rel "$QM_T_SWITCH")
x_usr2=$(s_rel "$T_USR2")
x_stop=$(s_rel "$((T_STOP + 1500))")
if [ "$DEMO_LINGER" = yes ]; then
	title="passt live migration, source lingers (default): W=$DEMO_W s"
else
	title="passt live migration, --migrate-no-linger: W=$DEMO_W s"
fi
cat >"$T/plot.gp" <<EOF
set terminal pngcairo size 1100,620 font "sans,11"
set output "$PNG"
set title "$title\\nQEMU downtime $QM_DOWNTIME ms, total $QM_TOTAL ms; RSTs seen by the peer: $rst_peer"
set xlabel "seconds since the migration started"
set ylabel "MiB"
set key top left box opaque
set grid
set xrange [:$x_stop]
set object 1 rect from $x_end, graph 0 to $x_switch, graph 1 \
	fc rgb "#fff0c0" fs solid 1.0 noborder behind
set object 2 rect from $x_pause, graph 0 to $x_resume, graph 1 \
	fc rgb "#ffc8c8" fs solid 1.0 noborder behind
set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb "#1f77b4" lw 2 dt 2
set arrow 2 from $x_end, graph 0 to $x_end, graph 1 nohead lc rgb "#2ca02c" lw 2 dt 2
set arrow 3 from $x_switch, graph 0 to $x_switch, graph 1 nohead lc rgb "#d62728" lw 2 dt 2
set arrow 4 from $x_usr2, graph 0 to $x_usr2, graph 1 nohead lc rgb "#9467bd" lw 2 dt 2
set label 1 "migration start" at 0, graph 0.03 rotate by 90 left offset -1.3,0 tc rgb "#1f77b4"
set label 2 "migration end" at $x_end, graph 0.03 rotate by 90 left offset -1.3,0 tc rgb "#2ca02c"
set label 3 "fabric switch" at $x_switch, graph 0.03 rotate by 90 left offset -1.3,0 tc rgb "#d62728"
set label 4 "SIGUSR2 (lifetime end)" at $x_usr2, graph 0.03 rotate by 90 left offset -1.3,0 tc rgb "#9467bd"
set label 5 "guest paused" at $x_pause, graph 0.97 right offset -0.5,0 tc rgb "#b03030"
set label 6 "fabric still\\nroutes to SRC" at $x_end, graph 0.90 left offset 0.5,0 tc rgb "#806000"
plot "$T/guest.dat" using 1:2 with lines lw 3 lc rgb "#000000" \
	title "received by the guest, in order", \
     "$T/peer.dat" using 1:2 with lines lw 1.5 dt 3 lc rgb "#ff7f0e" \
	title "sent by the peer (into its socket)"
EOF
gnuplot "$T/plot.gp" 2>"$T/gnuplot.err" ||
	fail "gnuplot: $(cat "$T/gnuplot.err")"

# ---- the summary ----
ok=yes
[ "$QS_CHECK" = ok ] || ok=no
[ "$rst_peer" -eq 0 ] || ok=no
[ "$moved" = yes ] || ok=no
say "summary (linger: $DEMO_LINGER)"
note "peer -> guest: $(peer_prog s tx) bytes sent," \
	"${QS_G_RX:-?} received in order by the guest"
note "guest -> peer: ${QS_G_TX:-?} bytes sent," \
	"$(peer_prog s rx) received in order by the peer"
note "ends of the stream: peer $(peer_prog s end), guest ${QS_G_END:-?}" \
	"($QS_CHECK)"
note "RSTs seen by the peer: $rst_peer (TcpOutRsts in $SRC: $rst_src)"
note "QEMU: downtime $QM_DOWNTIME ms, total time $QM_TOTAL ms," \
	"setup $QM_SETUP ms"
if [ "$moved" = yes ]; then
	note "the stream moved again $QM_MOVED_MS ms after the fabric switch" \
		"(which came $((QM_T_SWITCH - QM_T_RUN)) ms after the guest ran" \
		"in $DST; W = $DEMO_W s)"
else
	note "the stream did not move again after the fabric switch"
fi
note "timeline: $PNG"
if [ "$ok" = yes ]; then
	note "=> every byte arrived in order, no RST, the stream carried on"
else
	note "=> the stream broke"
fi
say "done (namespaces removed on exit)"
[ "$ok" = yes ] || [ "$DEMO_LINGER" = no ]
