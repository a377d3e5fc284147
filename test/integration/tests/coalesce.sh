#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# coalesce.sh - input coalescing (tap/coalesce.c) in both modes, with a
# slow guest: the bridge (tapbridge, or vu-front with offloads and
# EVENT_IDX, as a Linux guest behind QEMU) hands the daemon at most one
# frame every 300 us (-d), as an emulated guest does with 64 KiB frames:
#   slow   16 MiB of a verified pattern guest -> peer: the daemon's
#          counters (SIGUSR1) say it polled for the guest's frames, and
#          took more than one frame per poll (with a send buffer that
#          has room for several frames: see tcp_wmem below)
#   rr     64-byte messages to the peer and back, one at a time (the
#          latency test's pattern), then a transfer to the guest: the
#          daemon never starts polling
#   off    PASST_COALESCE_US=0: the daemon says so, and the slow transfer
#          arrives without a poll
#   bad    PASST_COALESCE_US=abc, 100001: refused at start, with a message
#          naming the variable, non-zero exit
# Nothing here times anything: whether a poll merges frames depends on the
# daemon finding them spaced as the bridge sends them, which -d makes so
# on any machine.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_sockio
need sockperf

unset PASST_COALESCE_US
setup_ns
# The daemon's sockets start with a send buffer of 1 MiB, not the
# kernel's first ~69 KB: a peer behind a veth ACKs within our own
# sendmsg(), so the buffer wouldn't grow during the transfer, and the
# window it allows holds one 64 KiB frame. A guest held to a frame per
# ACK is never polled (it waits for our window: tcp_window_check()); this
# is the guest of a connection whose buffer has grown.
ns "$HOST" sysctl -qw net.ipv4.tcp_wmem="4096 1048576 4194304"
BYTES=$((16 * 1024 * 1024))
PACE=300

# stats: SIGUSR1, then the daemon's newest "coalescing:" line, or nothing
stats() {
	local _before
	_before=$(grep -c 'Frames from guest' "$PASST_ERR" || :)
	kill -USR1 "$PASST_PID"
	wait_for "[ \$(grep -c 'Frames from guest' '$PASST_ERR') \
		  -gt $_before ]" 5 || fail "no counters after SIGUSR1"
	grep 'coalescing: polled' "$PASST_ERR" | tail -n 1
}

# one_way NAME PORT g2p|p2g: BYTES of the pattern guest -> peer or peer ->
# guest, over a connection from the guest, verified by the receiver
one_way() {
	local _l _gs='' _ps=''
	if [ "$3" = g2p ]; then
		_gs="--send --bytes $BYTES"
	else
		_ps="--send --bytes $BYTES"
	fi
	rm -f "$T/ready"
	# shellcheck disable=SC2086
	bg "$ROUTER" "$1-peer" /dev/null /dev/null "$SOCKIO" "${STALL[@]}" \
		-t 60 $_ps \
		--ready "$T/ready" pattern-listen "$PEER4" "$2"
	_l=$BG_PID
	wait_ready "$T/ready"
	# shellcheck disable=SC2086
	bg "$GUEST" "$1-guest" /dev/null /dev/null "$SOCKIO" "${STALL[@]}" \
		-t 60 $_gs \
		pattern-connect "$PEER4" "$2"
	bg_wait "$BG_PID" 70 || fail "$1: guest end still running"
	[ "$BG_ST" = 0 ] || fail "$1: guest end: $(cat "$T/$1-guest.err")"
	bg_wait "$_l" 10 || fail "$1: peer end still running"
	[ "$BG_ST" = 0 ] || fail "$1: peer end: $(cat "$T/$1-peer.err")"
	log "$1: $BYTES bytes $3, verified"
}

# rr NAME PORT: sockperf ping-pong, 64 bytes, one in flight, for 2 s
rr() {
	ip netns exec "$ROUTER" sockperf sr --tcp -i "$PEER4" -p "$2" \
		>"$T/$1-sr.out" 2>&1 &
	local _sr=$!
	track "$_sr"
	wait_for "ns $ROUTER ss -Hltn 'sport = :$2' | grep -q ." 10 ||
		fail "$1: sockperf server did not start"
	ns "$GUEST" sockperf pp --tcp -i "$PEER4" -p "$2" -t 2 -m 64 \
		>"$T/$1-pp.out" 2>&1 ||
		fail "$1: sockperf: $(tail -n 5 "$T/$1-pp.out")"
	kill -KILL "$_sr" 2>/dev/null || :
	wait "$_sr" 2>/dev/null || :
	grep -q 'Summary: Latency' "$T/$1-pp.out" ||
		fail "$1: no latency summary: $(tail -n 5 "$T/$1-pp.out")"
	log "$1: $(grep -m1 'Summary: Latency' "$T/$1-pp.out")"
}

# cases MODE [OPTION...]: slow, rr and off against the daemon in MODE
cases() {
	local _m=$1 _s _polls _frames
	shift

	passt_start "$@"
	guest_up
	one_way "$_m-slow" 7400 g2p
	_s=$(stats)
	[ -n "$_s" ] || fail "$_m-slow: the daemon never polled: $(
		grep -i -e 'Frames from' "$PASST_ERR" | tail -n 1)"
	_polls=$(echo "$_s" | sed -n 's/.*polled \([0-9]*\) times.*/\1/p')
	_frames=$(echo "$_s" | sed -n 's/.* for \([0-9]*\) frames.*/\1/p')
	[ "$_polls" -gt 0 ] && [ "$_frames" -gt "$_polls" ] ||
		fail "$_m-slow: polls merged nothing: $_s"
	log "$_m-slow: $_s"
	passt_check_alive
	bridge_stop
	passt_stop

	passt_start "$@"
	guest_up
	rr "$_m-rr" 7401
	one_way "$_m-rr" 7402 p2g
	_s=$(stats)
	[ -z "$_s" ] || fail "$_m-rr: the daemon polled: $_s"
	passt_check_alive
	bridge_stop
	passt_stop

	PASST_COALESCE_US=0 passt_start "$@"
	grep -q 'Input coalescing: off' "$PASST_ERR" ||
		fail "$_m-off: not said: $(head -n 20 "$PASST_ERR")"
	guest_up
	one_way "$_m-off" 7403 g2p
	_s=$(stats)
	[ -z "$_s" ] || fail "$_m-off: the daemon polled: $_s"
	passt_check_alive
	bridge_stop
	passt_stop
}

# refused VALUE: the daemon doesn't start with PASST_COALESCE_US=VALUE
refused() {
	local _st=0
	PASST_COALESCE_US=$1 timeout 10 ip netns exec "$HOST" "$PASST" -f \
		-s "$SOCK" >"$T/bad.out" 2>"$T/bad.err" || _st=$?
	[ "$_st" -ne 0 ] && [ "$_st" -ne 124 ] ||
		fail "PASST_COALESCE_US=$1: status $_st"
	grep -q "PASST_COALESCE_US: '$1'" "$T/bad.err" ||
		fail "PASST_COALESCE_US=$1: $(cat "$T/bad.err")"
	[ ! -e "$SOCK" ] || fail "PASST_COALESCE_US=$1: socket created"
	log "bad: $(grep PASST_COALESCE_US "$T/bad.err")"
}

refused abc
refused 100001

TAPBRIDGE_OPTS="-d $PACE" cases stream
# vu.sh's bridge_start (vu-front) from here on
# shellcheck source=../vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront
VU_FRONT_OPTS="-O -P -e -d $PACE" cases vhost-user --vhost-user
