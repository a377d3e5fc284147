#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_silence.sh - the source's linger is silent (migrate-lib.sh
# topology). Three pattern streams run between the peer on the FABRIC and
# the guest: "down" (peer -> guest, IPv4, port 7001), "up" (guest ->
# peer, IPv4, port 7002), "zw" (guest -> peer, IPv4, port 7003, the
# peer not reading until the end: a zero window, so that the source holds
# unsent data with its persist timer running) and "dz" (peer -> guest,
# IPv4, port 7004, slowly, the guest not reading until the end: the
# source's socket never empties, so the kernel delays its ACKs for the
# peer's small segments, and one is pending when the sockets are frozen
# at about every other migration: the source must not send it later, from
# its delayed ACK timer, as a socket in repair mode would). The guest
# migrates from SRC to DST, and the fabric keeps routing the pod address
# to SRC for MIG_HOLD_MS (default 3000, and at least 2 samples)
# afterwards, while the source daemon holds the migrated sockets.
#
# During the hold:
#   - the peer's bytes_acked on the "down" connection (ss -tin in
#     FABRIC) must not move from 300 ms into the hold on (ACKs sent
#     before it may still be on their way; the capture covers those
#     300 ms): the source acknowledges nothing the peer sends (while the
#     peer keeps sending: its bytes_sent is reported);
#   - the held socket is still there in SRC (ss), and SRC sends no RST
#     (nstat TcpOutRsts, and the capture);
#   - SRC's egress (tcpdump on its eth0, outbound) is captured: what it
#     still transmits is summarised per connection in the log (segments,
#     flags, data bytes, retransmissions), and no segment may carry an
#     acknowledgement number beyond the highest one SRC sent before the
#     hold (no ACK that would advance the peer's snd_una).
# Then the fabric switches to DST: both streams must move again, no RST
# from either pod, and at the end each receiver has exactly what was
# sent, every byte verified. The source ends on SIGUSR2 with status 0.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tcpdump

MIG_HOLD_MS=${MIG_HOLD_MS:-3000}
DPORT=7001
UPORT=7002
ZPORT=7003
DZPORT=7004

mig_setup
# A long linger: on a loaded machine the checks take a while, and the
# source must still be holding when it gets SIGUSR2
mig_guest_start --migrate-linger-timeout 600
src_sock=$D_SOCK src_pid=$D_PID src_log=$D_LOG

mig_stream down down4 "$DPORT" --rate 1024
mig_stream up up4 "$UPORT" --rate 1024
mig_stream zw up4 "$ZPORT" --rate 1024 --pause-rx --rcvbuf 16384
mig_stream dz down4 "$DZPORT" --rate 32 --pause-rx --rcvbuf 16384
for s in down up; do
	mig_flowing "$s" 65536 10 ||
		fail "stream $s does not flow: $(cat "$T/$s".*.err)"
done

# The zero-window stream: the peer's buffer full, the guest's sender
# blocked, the source's socket holding unsent data
wait_for "[ \$(mig_prog zw c tx) -ge 131072 ]" 15 ||
	fail "stream zw does not fill up: $(cat "$T"/zw.*.err)"
# The stream the guest doesn't read: well past the guest's buffer, so that
# the source's socket holds what the guest can't take
wait_for "[ \$(mig_prog dz l tx) -ge 65536 ]" 15 ||
	fail "stream dz does not fill up: $(cat "$T"/dz.*.err)"
log "zw in SRC before: $(mig_ss_info "$SRC" "( dport = :$ZPORT )" |
	grep -o 'snd_wnd:[0-9]*\|notsent:[0-9]*\|unacked:[0-9]*\|backoff:[0-9]*' | tr '\n' ' ')"

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID
mig_repair_ready src "$src_sock"

# peer_acked: bytes_acked of the peer's "down" socket
peer_ss() {
	mig_ss_field "$FABRIC" "$1" state established "( sport = :$DPORT )"
}

rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
mig_cap_start "$SRC" eth0 srcout out
cap=$CAP_PID

t_trig=$(now_ms)
mig_migrate "$dst_sock" || fail "migration: $MIG_RESULT"
t_hold=$(now_ms)

# The hold: the fabric still routes to SRC. An ACK SRC sent before the
# migration froze its socket may still be on its way to the peer (the
# softirq queues of a loaded machine hold segments for milliseconds): the
# peer's bytes_acked is taken as the baseline once the hold is 300 ms
# old. What SRC sends from t_hold on is in the capture, checked below:
# an ACK beyond the last one before the hold fails the test there.
while [ $(($(now_ms) - t_hold)) -lt 300 ]; do sleep 0.05; done
a0=$(peer_ss bytes_acked)
s0=$(peer_ss bytes_sent)
[ -n "$a0" ] || fail "no peer socket on port $DPORT in $FABRIC"
moved=
samples=0
held_seen=0
while [ $(($(now_ms) - t_hold)) -lt "$MIG_HOLD_MS" ] || [ "$samples" -lt 2 ]; do
	a=$(peer_ss bytes_acked)
	samples=$((samples + 1))
	[ "$a" = "$a0" ] || moved="$moved $a"
	if ns "$SRC" ss -tnH state established \
		"( dport = :$DPORT )" | grep -q .; then
		held_seen=$((held_seen + 1))
	fi
	alive "$src_pid" || fail "the source exited during the linger"
	sleep 0.1
done
a1=$(peer_ss bytes_acked)
s1=$(peer_ss bytes_sent)
r1=$(peer_ss bytes_retrans)
rst_hold=$(($(mig_rsts "$SRC") - rst_src0))
t_switch=$(now_ms)
mig_fabric_to dst
log "hold: $((t_switch - t_hold)) ms, $samples samples; peer bytes_acked" \
	"$a0 -> $a1, bytes_sent $s0 -> $s1 (bytes_retrans ${r1:-0});" \
	"held socket seen in SRC in $held_seen samples; SRC RSTs $rst_hold"
[ -z "$moved" ] && [ "$a1" = "$a0" ] ||
	fail "the peer's bytes_acked moved during the hold: $a0 ->$moved $a1"
[ "${s1:-0}" -gt "$s0" ] ||
	log "NOTE: the peer sent nothing during the hold ($s0 -> $s1)"
[ "$held_seen" -eq "$samples" ] ||
	fail "the held socket was missing from SRC in $((samples - held_seen)) of $samples samples"
[ "$rst_hold" -eq 0 ] || fail "SRC sent $rst_hold RSTs during the hold"

# After the switch: both streams move again, once the peer retransmits:
# its backoff grew during the hold (long on a loaded machine)
resume_s=$((30 + 2 * (t_switch - t_hold) / 1000))
for s in down up; do
	mig_flowing "$s" 65536 "$resume_s" ||
		fail "stream $s does not resume after the switch ($(mig_prog "$s" "$(mig_rx "$s")" rx) bytes, ends $(mig_prog "$s" l end)/$(mig_prog "$s" c end))"
done
log "resumed $(($(now_ms) - t_switch)) ms after the switch (both streams)"
mig_cap_stop "$cap"

# What SRC transmitted: before the migration completed (up to t_hold),
# and during the hold (t_hold .. t_switch)
mig_cap_text srcout >"$T/srcout.txt"
awk -v th="$t_hold" -v ts="$t_switch" -v tt="$t_trig" \
    -v dp="$DPORT" -v up="$UPORT" -v zp="$ZPORT" -v dzp="$DZPORT" '
function port(a) { sub(/:$/, "", a); sub(/.*\./, "", a); return a }
{
	t = $1 * 1000; p = port($5)
	if (p != dp && p != up && p != zp && p != dzp)
		next
	f = ""; ack = ""; len = 0; seq = ""
	if (match($0, /Flags \[[^]]*\]/))
		f = substr($0, RSTART + 7, RLENGTH - 8)
	if (match($0, /ack [0-9]+/))
		ack = substr($0, RSTART + 4, RLENGTH - 4) + 0
	if (match($0, /length [0-9]+/))
		len = substr($0, RSTART + 7, RLENGTH - 7) + 0
	if (match($0, /seq [0-9]+/))
		seq = substr($0, RSTART + 4, RLENGTH - 4) + 0
	if (t < th) {
		if (ack != "" && (!(p in maxack) || ack > maxack[p]))
			maxack[p] = ack
		if (len > 0 && (!(p in maxseq) || seq + len > maxseq[p]))
			maxseq[p] = seq + len
		if (t >= tt)
			mig[p]++
		next
	}
	if (t > ts)
		next
	n[p]++; fl[p, f]++; flags[p] = flags[p] " " f
	bytes[p] += len
	if (len > 0 && seq + len <= maxseq[p])
		rexmit[p]++
	else if (len > 0)
		newdata[p] += len
	if (f ~ /R/)
		rst[p]++
	if (f ~ /F/)
		fin[p]++
	# Without an ACK before the hold (the zero-window connection may
	# have sent none) there is nothing to compare with: the peer sends
	# no data there, and its bytes_acked is checked for "down" by ss
	if (ack != "" && (p in maxack) && ack > maxack[p])
		adv[p]++
	if (len == 0 && f == ".")
		pure[p]++
}
END {
	for (i = 0; i < 4; i++) {
		p = i == 0 ? dp : i == 1 ? up : i == 2 ? zp : dzp
		s = ""
		for (k in fl) {
			split(k, kk, SUBSEP)
			if (kk[1] == p)
				s = s " [" kk[2] "]x" fl[k]
		}
		printf "hold: SRC -> peer port %s (%s): %d segment(s)%s, %d data bytes, %d retransmission(s), %d new data bytes, %d pure ACK(s) (window probes), %d RST, %d FIN, %d ACK(s) beyond %s; %d segment(s) between the trigger and the end of the migration\n",
			p, p == dp ? "down: peer sends" : p == up ? "up: guest sends" : p == zp ? "zw: guest sends, zero window" : "dz: peer sends, guest not reading",
			n[p], s, bytes[p], rexmit[p], newdata[p], pure[p], rst[p],
			fin[p], adv[p], (p in maxack) ? sprintf("%.0f", maxack[p]) : "-", mig[p]
		bad += rst[p] + adv[p] + fin[p]
		if (p == dp || p == dzp)
			bad += newdata[p]
	}
	exit bad ? 1 : 0
}' "$T/srcout.txt" >"$T/hold.summary" && cap_ok=1 || cap_ok=0
cat "$T/hold.summary" >&2
if [ -s "$T/srcout.txt" ]; then
	log "SRC egress during the hold (first 10 lines):"
	awk -v th="$t_hold" -v ts="$t_switch" \
		'$1 * 1000 >= th && $1 * 1000 <= ts' "$T/srcout.txt" |
		head -n 10 >&2
fi
[ "$cap_ok" = 1 ] ||
	fail "SRC sent an RST, a FIN, new data or an advancing ACK during the hold (see above)"

# The end of the linger, then every byte
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignored SIGUSR2"
[ "$MIG_EXIT_ST" = 0 ] || fail "the source exited with status $MIG_EXIT_ST"
sanitizer_check "$src_log"
for s in down up; do
	mig_flowing "$s" 32768 15 || fail "stream $s stops after SIGUSR2"
done
mig_streams_verify down up zw dz
rst_src=$(($(mig_rsts "$SRC") - rst_src0))
rst_dst=$(($(mig_rsts "$DST") - rst_dst0))
[ "$rst_src" -eq 0 ] || fail "SRC sent $rst_src RSTs"
[ "$rst_dst" -eq 0 ] || fail "DST sent $rst_dst RSTs"
alive "$dst_pid" || fail "the target died"
mig_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
log "migration: $MIG_RESULT"
