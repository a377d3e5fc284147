#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_storm.sh - a cut-over storm: MIG_ROUNDS (default 6) migrations,
# back and forth between SRC and DST (a fresh target daemon each time, the
# fabric switching W=500 ms after the target runs the guest), each while
# connections end in every way around it (migrate-lib.sh topology, at
# Debian's default socket buffer limits).
#
# All the time: two uploads from the guest ("u4", "u6", 1 MiB/s each)
# through the pods' 4 Mbit/s uplinks (tc tbf, 2 s of queue): the daemon's
# sockets hold deep send queues at every SAVE.
#
# In each round, started just before the migration, MIG_EACH (default 3)
# connections of each kind, timed to end over the next 1.5 s (before,
# during and after the switch-over):
#   fin:   the peer sends some bytes, then its FIN (peer -> guest);
#   rst:   the peer sends some bytes, then resets the connection;
#   half:  the guest sends 32 KiB and its FIN, the peer goes on sending,
#          then its FIN;
#   open:  the guest opens it after a delay (some during the switch-over,
#          its SYN is then sent again to the target), and both ends send
#          some bytes and their FIN. (The source may have connected to the
#          peer for a SYN it got just before the switch-over; it resets
#          that connection once the migration went through, and the peer
#          takes the next one, sockio --again; so do the others.)
#
# Checked: every migration succeeds; every connection ends in its true
# state on the guest's side: fin, half and open byte-exact with both ends'
# FIN delivered (both ends exit 0), rst with the reset delivered (end=rst)
# and nothing but the pattern before it; the old source ends its linger
# with status 0; at the end both uploads arrive byte-exact. The
# connections that crossed a migration, and what the targets restored
# and reset, are logged.
#
# And the uploads never stop: the uplink is their bottleneck, so the peer
# gets more of each every moment, but for the pause of a migration (about
# a second). One that gets nothing for MIG_STALL_MS (default 3 s) fails
# the test at once, with where it stopped: its guest socket's RTO, backoff
# and send window in the message, every namespace's sockets and the
# daemon's flows in stall.log. (Such stalls were a guest left on its
# persist timer or its RTO, backed off to many seconds.) Each upload's
# longest pause is logged.
# PT_TIMEOUT: 300
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tc

MIG_ROUNDS=${MIG_ROUNDS:-6}
MIG_EACH=${MIG_EACH:-3}
MIG_W=${MIG_W:-500}
t_start=$MIG_T0
phase() {
	log "[$(($(now_ms) - t_start)) ms] $*"
}

# ended NAME SIDE: the end of side SIDE of stream NAME is known, not running
ended() {
	case $(mig_prog "$1" "$2" end) in
	running) return 1 ;;
	# No progress: not started yet, or failed first (connect() refused)
	none) grep -qs '^sockio: ' "$T/$1.$2.err" || return 1 ;;
	esac
}

# last_words NAME: what each end of stream NAME said last (its error)
last_words() {
	printf '; guest said: %s; peer said: %s' \
		"$(tail -n 1 "$T/$1.c.err" 2>/dev/null)" \
		"$(tail -n 1 "$T/$1.l.err" 2>/dev/null)"
}

# batch R: the short connections of round R; their names in BATCH
batch() {
	_r=$1 BATCH=
	_p=$((20000 + _r * 100))
	_k=0
	while [ "$_k" -lt "$MIG_EACH" ]; do
		# 256 KiB/s: they end 0.3 s, 0.8 s, 1.3 s... from now
		_b=$(((3 + _k * 5) * 256 * 1024 / 10))
		_a=$PEER4 _f=4
		[ $((_k % 2)) = 1 ] && _a=$PEER6 _f=6
		mig_stream_start "f$_r$_k" "$FABRIC" "$GUEST" "$_a" $((_p + _k)) \
			listen --rate 256 --bytes "$_b" -t 60 --again
		mig_stream_start "r$_r$_k" "$FABRIC" "$GUEST" "$_a" \
			$((_p + 10 + _k)) listen --rate 256 --rst-after "$_b" -t 60 \
			--again
		# half: the guest's 32 KiB and FIN first, the peer's bytes after
		rm -f "$T/h$_r$_k.ready"
		bg "$FABRIC" "h$_r$_k.l" /dev/null /dev/null "$SOCKIO" -t 60 \
			--report --ready "$T/h$_r$_k.ready" \
			--progress "$T/h$_r$_k.l.prog" --send --rate 256 \
			--bytes "$_b" --again pattern-listen "$_a" $((_p + 20 + _k))
		wait_ready "$T/h$_r$_k.ready"
		bg "$GUEST" "h$_r$_k.c" /dev/null /dev/null "$SOCKIO" -t 60 \
			--report --progress "$T/h$_r$_k.c.prog" --send \
			--bytes 32768 pattern-connect "$_a" $((_p + 20 + _k))
		# open: the guest connects 0.2 s, 0.5 s, 0.8 s... from now
		rm -f "$T/o$_r$_k.ready"
		bg "$FABRIC" "o$_r$_k.l" /dev/null /dev/null "$SOCKIO" -t 60 \
			--report --ready "$T/o$_r$_k.ready" \
			--progress "$T/o$_r$_k.l.prog" --send --bytes 65536 \
			--again pattern-listen "$_a" $((_p + 30 + _k))
		wait_ready "$T/o$_r$_k.ready"
		bg "$GUEST" "o$_r$_k.c" /dev/null /dev/null sh -c \
			"sleep 0.$((2 + _k * 3)); exec '$SOCKIO' -t 60 --report \
			 --progress '$T/o$_r$_k.c.prog' --send --bytes 65536 \
			 pattern-connect $_a $((_p + 30 + _k))"
		BATCH="$BATCH f$_r$_k r$_r$_k h$_r$_k o$_r$_k"
		eval "BYTES_f$_r$_k=$_b BYTES_r$_r$_k=$_b BYTES_h$_r$_k=$_b"
		_k=$((_k + 1))
	done
}

# pauses: each upload's longest pause so far
pauses() {
	mig_pauses u4 u6
}

# check_batch R: every connection of round R in its true state
check_batch() {
	for _n in $BATCH; do
		wait_for "ended $_n c && ended $_n l" 40 ||
			fail "round $1: $_n still open: guest $(cat "$T/$_n.c.prog" 2>/dev/null), peer $(cat "$T/$_n.l.prog" 2>/dev/null)$(last_words "$_n")"
		eval "_b=\${BYTES_$_n:-65536}"
		_ge=$(mig_prog "$_n" c end) _pe=$(mig_prog "$_n" l end)
		_gr=$(mig_prog "$_n" c rx) _pr=$(mig_prog "$_n" l rx)
		case $_n in
		f*)
			[ "$_ge" = eof ] && [ "$_gr" = "$_b" ] ||
				fail "round $1: $_n (peer's FIN): guest end=$_ge rx=$_gr of $_b$(last_words "$_n")"
			;;
		r*)
			[ "$_ge" = rst ] && [ "$_pe" = rst-sent ] ||
				fail "round $1: $_n (peer's RST): guest end=$_ge rx=$_gr, peer end=$_pe$(last_words "$_n")"
			;;
		h*)
			[ "$_ge" = eof ] && [ "$_gr" = "$_b" ] && [ "$_pe" = eof ] &&
			[ "$_pr" = 32768 ] ||
				fail "round $1: $_n (guest's FIN first): guest end=$_ge rx=$_gr of $_b, peer end=$_pe rx=$_pr of 32768$(last_words "$_n")"
			;;
		o*)
			[ "$_ge" = eof ] && [ "$_gr" = 65536 ] && [ "$_pe" = eof ] &&
			[ "$_pr" = 65536 ] ||
				fail "round $1: $_n (opened at the switch-over): guest end=$_ge rx=$_gr, peer end=$_pe rx=$_pr$(last_words "$_n")"
			;;
		esac
	done
}

mig_setup
for p in "$SRC" "$DST"; do
	ns "$p" tc qdisc replace dev eth0 root tbf rate 4mbit burst 32k \
		latency 2s
done
mig_guest_start --migrate-linger-timeout 600
cur=src cur_sock=$D_SOCK cur_pid=$D_PID cur_log=$D_LOG
mig_guest_daemon "$cur_pid" "$cur_log"
# They run all along: their timeout grows with the rounds
mig_stream u4 up4 7501 --rate 1024 -t $((120 + MIG_ROUNDS * 30))
mig_stream u6 up6 7502 --rate 1024 -t $((120 + MIG_ROUNDS * 30))
mig_all_flowing 65536 20 u4 u6 || fail "uploads not flowing: $MIG_LAGGING"
phase "uploads flowing"
mig_watch u4 u6

summary=
round=1
while [ "$round" -le "$MIG_ROUNDS" ]; do
	case $cur in
	src) to=dst ;;
	dst) to=src ;;
	esac
	mig_pod_daemon "$to" target --migrate-linger-timeout 600
	to_sock=$D_SOCK to_pid=$D_PID to_log=$D_LOG
	mig_repair_ready "$cur" "$cur_sock"

	batch "$round"
	# The first of them end about now: migrate
	wait_for "ended f${round}0 l" 10 || :
	mig_migrate_switch "$to_sock" "$to" "$MIG_W" ||
		fail "round $round: migration $cur -> $to: $MIG_RESULT"
	mig_guest_daemon "$to_pid" "$to_log"
	check_batch "$round"
	mig_all_flowing 16384 30 u4 u6 || {
		mig_stalled "round $round"
		fail "round $round: uploads stopped: $MIG_LAGGING"
	}
	moved=$(grep -o 'target, [0-9]* of [0-9]* connection(s) restored' "$to_log" | tail -n 1)
	live=$(grep -o 'the guest runs here: .*' "$to_log" | tail -n 1)
	phase "round $round $cur -> $to: $(mig_field state_bytes) bytes of state; $moved; $live; longest pauses:$(pauses)"
	summary="$summary
round $round $cur -> $to: state_bytes=$(mig_field state_bytes) downtime_ms=$(mig_field downtime_ms); $moved; $live"

	kill -USR2 "$cur_pid"
	mig_exit_wait "$cur_pid" 10 ||
		fail "round $round: the old source ignores SIGUSR2"
	expect "round $round: the old source's exit status" "$MIG_EXIT_ST" 0
	cur=$to cur_sock=$to_sock cur_pid=$to_pid cur_log=$to_log
	round=$((round + 1))
done

MIG_VERIFY_TIMEOUT=120 mig_streams_verify u4 u6
log "storm: $MIG_ROUNDS rounds, $((MIG_EACH * 4)) short connections each$summary
longest pauses of the uploads:$(pauses)"
alive "$cur_pid" || fail "the daemon running the guest died"
mig_stop "$cur_pid"
sanitizer_check "$T"/*/passt.socket.err
