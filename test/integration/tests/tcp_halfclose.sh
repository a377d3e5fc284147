#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_halfclose.sh - half-closed connections through the daemon, IPv4 and
# IPv6: the guest shuts down its sending side first and still receives
# everything the peer sends after seeing that EOF; and the reverse, the
# peer closes first and still receives what the guest sends afterwards.
# The data sent after the other side's FIN is HALFCLOSE_MB (default 32) MiB;
# HALFCLOSE_ROUNDS (default 1) repeats them all, HALFCLOSE_CASES (default
# "guest-first peer-first early-fin") picks some. Every transfer fails if
# it stalls (STALL in lib.sh), saying where.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox sha256sum
need_sockio

setup_ns
passt_start
guest_up

head -c 1M /dev/urandom >"$T/a"
head -c "${HALFCLOSE_MB:-32}M" /dev/urandom >"$T/b"
sum_a=$(sha "$T/a")
sum_b=$(sha "$T/b")

# check NAME FILE SUM: FILE holds the data with SUM
check() {
	expect "$1: bytes" "$(stat -c %s "$2")" "$(stat -c %s "$T/${1##*:}")"
	expect "$1: SHA-256" "$(sha "$2")" "$3"
}

# peer_listen NAME IN OUT OPTION...: the peer's sockio in ROUTER, listening
# on $peer $port, reading IN and writing OUT; its pid in lpid
peer_listen() {
	local _n=$1 _in=$2 _out=$3
	shift 3
	rm -f "$T/ready"
	bg "$ROUTER" "$_n" "$_in" "$_out" "$SOCKIO" "${STALL[@]}" -t 30 \
		--report --ready "$T/ready" "$@" tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
}

# guest_connect NAME IN OUT OPTION...: the guest's sockio, to $peer $port;
# its exit status in st, and the peer's (waited for) in BG_ST
guest_connect() {
	local _n=$1 _in=$2 _out=$3
	shift 3
	st=0
	ns "$GUEST" "$SOCKIO" "${STALL[@]}" -t 30 --report "$@" \
		tcp-connect "$peer" "$port" <"$_in" >"$_out" \
		2>"$T/$_n.err" || st=$?
	[ "$st" -eq 0 ] || ss_dump "$n"
	bg_wait "$lpid" 20 || :
}

# Guest first: it sends a and shuts down; the peer reads a to EOF, only
# then sends b (--wait-eof) and closes
guest_first() {
	rm -f "$T/got_a" "$T/got_b"
	peer_listen peer1 "$T/b" "$T/got_a" --wait-eof
	guest_connect guest1 "$T/a" "$T/got_b"
	log "$n: guest: $(cat "$T/guest1.err"); peer: $(tr '\n' ' ' <"$T/peer1.err")"
	expect "$n: guest exit status" "$st" 0
	expect "$n: peer exit status" "$BG_ST" 0
	check "$n: to peer:a" "$T/got_a" "$sum_a"
	check "$n: to guest:b" "$T/got_b" "$sum_b"
}

# Peer first: it sends a and shuts down; the guest reads a to EOF, then
# sends b
peer_first() {
	rm -f "$T/got_a" "$T/got_b"
	peer_listen peer2 "$T/a" "$T/got_b"
	guest_connect guest2 "$T/b" "$T/got_a" --wait-eof
	log "$n: guest: $(cat "$T/guest2.err"); peer: $(tr '\n' ' ' <"$T/peer2.err")"
	expect "$n: guest exit status" "$st" 0
	expect "$n: peer exit status" "$BG_ST" 0
	check "$n: to guest:a" "$T/got_a" "$sum_a"
	check "$n: to peer:b" "$T/got_b" "$sum_b"
}

# Early FIN: the peer shuts down its side right after accepting, while the
# guest is sending b (a stall seen here: the guest's retransmissions never
# acknowledged once the peer's FIN was in)
early_fin() {
	rm -f "$T/got_b"
	peer_listen peer3 /dev/null "$T/got_b"
	guest_connect guest3 "$T/b" /dev/null
	log "$n: guest: $(cat "$T/guest3.err"); peer: $(tr '\n' ' ' <"$T/peer3.err")"
	expect "$n: guest exit status" "$st" 0
	expect "$n: peer exit status" "$BG_ST" 0
	check "$n: to peer:b" "$T/got_b" "$sum_b"
}

port=6000
for round in $(seq "${HALFCLOSE_ROUNDS:-1}"); do
	for peer in "$PEER4" "$PEER6"; do
		for case in ${HALFCLOSE_CASES:-guest-first peer-first \
			     early-fin}; do
			port=$((port + 1))
			n="$case-$peer"
			[ "$round" = 1 ] || n="$n-round$round"
			"${case//-/_}"
			passt_check_alive
			log "$n: OK"
		done
	done
done
log "guest's TCP: $(tcp_counters "$GUEST")"
log "peer's TCP: $(tcp_counters "$ROUTER")"
passt_stop
