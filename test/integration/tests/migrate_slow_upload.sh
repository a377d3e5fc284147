#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_slow_upload.sh - uploads through a slow uplink survive the
# migration, with a deep send queue at SAVE (migrate-lib.sh topology, at
# Debian's default net.core.wmem_max/rmem_max of 212992, or MIG_WMEM_MAX
# and MIG_RMEM_MAX: migrate_slow_upload_4m.sh runs it at 4 MiB), and the
# same for downloads (MIG_SLOW_DIR=down: migrate_slow_download.sh).
#
# Each pod's uplink is limited to 4 Mbit/s (tc tbf, 2 s of queue), and the
# guest uploads to the peer over IPv4 and IPv6 at MIG_UP_RATE KiB/s each
# (default 2048): the daemon's sockets fill up far beyond what the link
# carries, and their send buffers grow by autotuning (tcp_wmem), not by
# SO_SNDBUF. Once the source's two sockets hold MIG_QUEUE bytes (default
# 900000) not yet acknowledged by the peer, the guest migrates to the
# other pod, and the fabric switches as the target runs the guest
# (MIG_W1, default 0: at once, as OVN does on the target's RARP); then
# back again, the same way, once they hold MIG_QUEUE2 (default 450000:
# more than SO_SNDBUF can give at Debian's limits; a restored socket's
# buffer grows by autotuning from a new socket's, not from the source's,
# and what it couldn't take yet may still wait in the daemon), with the
# fabric switching MIG_W2 ms (default 3000) after the target ran the
# guest: the peer's ACKs went to the source meanwhile.
#
# Checked, for each migration: it succeeds with both connections
# restored; the state carries the queues; each restored socket has the
# MSS of the one it replaces (ss -ti; a send queue written before the
# options were set took the kernel's 536-byte default for good); every
# restored socket's sender moves again within 1 s of the fabric switch
# (its bytes_acked grows: ss -ti in the new pod every 100 ms), and both
# uploads deliver 64 KiB more; no RST from either pod. At the end both
# senders stop: every byte reaches the peer, in order, and the peer sees
# the guest's FIN (a truncated upload that ends with a FIN looks
# complete). Logged: how long each socket took to move again, how long
# each upload took to deliver 64 KiB more, and what the kernel counted on
# the peer and in the new pod meanwhile (PAWS drops, unanswered probes,
# timeouts, segments the TTL limit dropped).
#
# MIG_SLOW_DIR=down: the peer sends to the guest instead, and the
# FABRIC's links to the pods are limited to 4 Mbit/s too (the pods'
# downlinks). The deep queue is then the peer's (its two sockets hold
# MIG_QUEUE, default 500000 here, then MIG_QUEUE2 bytes not acknowledged
# at the switch); the
# state needn't carry much, and everything else is checked the same way:
# both downloads restored with their MSS, moving again, no RST from either
# pod, byte-exact to the guest, and the peer's FIN reaches the guest. When
# each restored socket received data again (bytes_received) is logged,
# not checked: that is the peer's retransmission timer (its back-off
# grows with the cut-over), which nothing the target sends can hurry
# (doc/migration.md, section 10).
# PT_TIMEOUT: 240
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tc

MIG_UP_RATE=${MIG_UP_RATE:-2048}
MIG_SLOW_DIR=${MIG_SLOW_DIR:-up}
# Downloads: the peer's queue is what the FABRIC's tbf holds (about 1 MB
# for both flows: 2 s at 4 Mbit/s) plus what is in flight, and TCP's
# congestion control keeps it below that: here it settles between 850
# and 1100 kB, and was seen at 636 kB. Half the tbf's queue is deep
# enough, and reached every time.
if [ "$MIG_SLOW_DIR" = down ]; then
	MIG_QUEUE=${MIG_QUEUE:-500000}
else
	MIG_QUEUE=${MIG_QUEUE:-900000}
fi
MIG_QUEUE2=${MIG_QUEUE2:-450000}
MIG_W1=${MIG_W1:-0}
MIG_W2=${MIG_W2:-3000}
# A restored sender moves again within this (ms) of the switch
MIG_RESUME_MS=${MIG_RESUME_MS:-1000}
names="u4 u6"
case $MIG_SLOW_DIR in
up|down) ;;
*) fail "MIG_SLOW_DIR: up or down, not $MIG_SLOW_DIR" ;;
esac

t_start=$(now_ms)
phase() {
	log "[$(($(now_ms) - t_start)) ms] $*"
}

# queued NS: bytes in the send queues of the sending sockets (ss
# Send-Q), summed: for uploads the daemon's sockets to the peer's ports in
# pod NS, for downloads the peer's own
queued() {
	if [ "$MIG_SLOW_DIR" = up ]; then
		ns "$1" ss -tnH state established \
			'( dport = :7501 or dport = :7502 )'
	else
		ns "$FABRIC" ss -tnH state established \
			'( sport = :7501 or sport = :7502 )'
	fi | awk '{ q += $2 } END { print q + 0 }'
}

# mss_of NS PORT: the MSS of the daemon's socket to the peer's PORT in NS
mss_of() {
	ns "$1" ss -tinH state established "( dport = :$2 )" | tr ' ' '\n' |
		sed -n 's/^mss:\([0-9]*\)$/\1/p' | head -n 1
}

mig_setup
for p in "$SRC" "$DST"; do
	ns "$p" tc qdisc replace dev eth0 root tbf rate 4mbit burst 32k \
		latency 2s
done
if [ "$MIG_SLOW_DIR" = down ]; then
	for i in fs fd; do
		ns "$FABRIC" tc qdisc replace dev "$i" root tbf rate 4mbit \
			burst 32k latency 2s
	done
fi
mig_guest_start --migrate-linger-timeout 600
cur=src cur_sock=$D_SOCK cur_pid=$D_PID

mig_stream u4 "${MIG_SLOW_DIR}4" 7501 --rate "$MIG_UP_RATE"
mig_stream u6 "${MIG_SLOW_DIR}6" 7502 --rate "$MIG_UP_RATE"
# shellcheck disable=SC2086
mig_all_flowing 65536 20 $names ||
	fail "${MIG_SLOW_DIR}loads not flowing: $MIG_LAGGING"
phase "${MIG_SLOW_DIR}loads flowing"

summary=
for round in 1 2; do
	case $cur in
	src) to=dst ;;
	dst) to=src ;;
	esac
	old_ns=$(mig_ns "$cur")
	mig_pod_daemon "$to" target --migrate-linger-timeout 600
	to_sock=$D_SOCK to_pid=$D_PID to_log=$D_LOG
	mig_repair_ready "$cur" "$cur_sock"
	new_ns=$(mig_ns "$to")

	want=$MIG_QUEUE secs=30
	[ "$round" = 1 ] || want=$MIG_QUEUE2 secs=60
	# What matters is more than SO_SNDBUF gives at Debian's limits
	# (MIG_QUEUE2): MIG_QUEUE is deeper if the senders get there (how
	# deep depends on the congestion control and the machine's load).
	# Restored sockets grow their buffers by autotuning, as their
	# congestion window grows: a clean run once had 414,923 bytes after
	# 30 s in round 2. A queue of MIG_QUEUE_MIN (300000) is still a deep
	# one to migrate: below MIG_QUEUE2 after 60 s (round 2; 30 s for
	# round 1's deeper MIG_QUEUE), the round goes on with what there is,
	# and says so
	wait_for "[ \$(queued $old_ns) -ge $want ]" "$secs" ||
		[ "$(queued "$old_ns")" -ge "$MIG_QUEUE2" ] ||
		[ "$(queued "$old_ns")" -ge "${MIG_QUEUE_MIN:-300000}" ] ||
		fail "round $round: the senders hold only $(queued "$old_ns") bytes"
	q=$(queued "$old_ns")
	[ "$q" -ge "$MIG_QUEUE2" ] ||
		phase "round $round: only $q bytes queued after $secs s, less than $MIG_QUEUE2: going on"

	mss4=$(mss_of "$old_ns" 7501) mss6=$(mss_of "$old_ns" 7502)
	phase "round $round: $q bytes queued at the senders ($MIG_SLOW_DIR), MSS $mss4 (IPv4), $mss6 (IPv6) in $old_ns"
	ns "$old_ns" ss -tinmH state established \
		'( dport = :7501 or dport = :7502 )' >>"$T/ss.log"
	rst_old0=$(mig_rsts "$old_ns")
	rst_new0=$(mig_rsts "$new_ns")
	tr=$T/trace$round.log
	# MIG_CAPTURE=1: the fabric's side of the switch, for a look
	[ "${MIG_CAPTURE:-0}" = 0 ] || mig_cap_start "$FABRIC" any "round$round"
	mig_trace_start "$new_ns" "$tr" '( dport = :7501 or dport = :7502 )'
	nst_peer0=$(mig_nstat "$FABRIC") nst_new0=$(mig_nstat "$new_ns")

	w=$MIG_W1
	[ "$round" = 1 ] || w=$MIG_W2
	mig_migrate_switch "$to_sock" "$to" "$w" ||
		fail "round $round: migration $cur -> $to: $MIG_RESULT"
	sw=$(now_ms)
	state=$(mig_field state_bytes)
	[ "$MIG_SLOW_DIR" = down ] || [ "$state" -ge $((q / 2)) ] ||
		fail "round $round: $state bytes of state for $q bytes queued"
	grep -q "target, 2 of 2 connection(s) restored" "$to_log" ||
		fail "round $round: target: $(grep 'Migration:' "$to_log" | tr '\n' ' ')"

	# Both uploads move again; when, for the log
	moved=
	for s in $names; do
		if ! mig_flowing "$s" 65536 30; then
			mig_diag "$s"
			for p in "$SRC" "$DST"; do
				log "$p: $(ns "$p" tc -s qdisc show dev eth0 | tr '\n' ' ')"
			done
			ns "$new_ns" ss -tinmH state established >>"$T/ss.log"
			fail "round $round: ${MIG_SLOW_DIR}load $s doesn't move after the switch ($(mig_prog "$s" "$(mig_rx "$s")" rx) bytes received)"
		fi
		moved="$moved $s:$(($(now_ms) - sw))ms"
	done
	ns "$new_ns" ss -tinmH state established \
		'( dport = :7501 or dport = :7502 )' >>"$T/ss.log"
	key=bytes_acked
	[ "$MIG_SLOW_DIR" = up ] || key=bytes_received
	mig_trace_wait "$tr" "$key" "$MIG_SWITCH_AT" 2 10 || :
	mig_trace_stop "$tr"
	[ "${MIG_CAPTURE:-0}" = 0 ] || mig_cap_stop "$CAP_PID"
	log "round $round: peer: $(mig_nstat_diff "$nst_peer0" "$(mig_nstat "$FABRIC")")"
	log "round $round: target: $(mig_nstat_diff "$nst_new0" "$(mig_nstat "$new_ns")")"
	mig_trace_moved "$tr" "$key" "$MIG_SWITCH_AT" >"$T/moved$round"
	log "round $round (W=$w): $key of the restored sockets grows, ms after the switch: $(awk '{ printf "%s %s: %s; ", $1, $2, $3 }' "$T/moved$round")"
	[ "$(wc -l <"$T/moved$round")" -eq 2 ] ||
		fail "round $round: the new pod's sockets: $(cat "$T/moved$round")"
	if [ "$MIG_SLOW_DIR" = up ]; then
		late=$(awk -v m="$MIG_RESUME_MS" '$3 < 0 || $3 > m' "$T/moved$round")
		[ -z "$late" ] ||
			fail "round $round (W=$w): restored sender(s) not moving within $MIG_RESUME_MS ms of the switch: $late"
	fi
	nmss4=$(mss_of "$new_ns" 7501) nmss6=$(mss_of "$new_ns" 7502)
	expect "round $round: MSS of the restored IPv4 socket" "$nmss4" "$mss4"
	expect "round $round: MSS of the restored IPv6 socket" "$nmss6" "$mss6"
	expect "round $round: RSTs from the old pod" \
		$(($(mig_rsts "$old_ns") - rst_old0)) 0
	expect "round $round: RSTs from the new pod" \
		$(($(mig_rsts "$new_ns") - rst_new0)) 0
	summary="$summary
round $round $cur -> $to: W=$w queued=$q state_bytes=$state downtime_ms=$(mig_field downtime_ms) $key grows (ms after the switch): $(awk '{ printf "%s ", $3 }' "$T/moved$round")moved (64 KiB more, from the switch):$moved"

	kill -USR2 "$cur_pid"
	mig_exit_wait "$cur_pid" 10 || fail "round $round: the old source ignores SIGUSR2"
	expect "round $round: the old source's exit status" "$MIG_EXIT_ST" 0
	cur=$to cur_sock=$to_sock cur_pid=$to_pid
done

# The queues drain at 4 Mbit/s: give the senders' ends time
# shellcheck disable=SC2086
MIG_VERIFY_TIMEOUT=90 mig_streams_verify $names
for s in $names; do
	expect "${MIG_SLOW_DIR}load $s: the receiver's end" \
		"$(mig_prog "$s" "$(mig_rx "$s")" end)" eof
done
log "net.core.wmem_max=$(sysctl -n net.core.wmem_max)$summary"
alive "$cur_pid" || fail "the daemon running the guest died"
mig_stop "$cur_pid"
sanitizer_check "$T"/*/passt.socket.err
