#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_halfclose.sh - half-closed connections through the daemon, IPv4 and
# IPv6: the guest shuts down its sending side first and still receives
# everything the peer sends after seeing that EOF; and the reverse, the
# peer closes first and still receives what the guest sends afterwards.
# The data sent after the other side's FIN is HALFCLOSE_MB (default 32) MiB.
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

port=6000
for peer in "$PEER4" "$PEER6"; do
	# Guest first: it sends a and shuts down; the peer reads a to EOF,
	# only then sends b (--wait-eof) and closes
	port=$((port + 1))
	n="guest-first-$peer"
	rm -f "$T/ready" "$T/got_a" "$T/got_b"
	bg "$ROUTER" peer1 "$T/b" "$T/got_a" "$SOCKIO" -t 30 --report \
		--wait-eof --ready "$T/ready" tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	st=0
	ns "$GUEST" "$SOCKIO" -t 30 --report tcp-connect "$peer" "$port" \
		<"$T/a" >"$T/got_b" 2>"$T/guest1.err" || st=$?
	bg_wait "$lpid" 20 || :
	log "$n: guest: $(cat "$T/guest1.err"); peer: $(tr '\n' ' ' <"$T/peer1.err")"
	expect "$n: guest exit status" "$st" 0
	expect "$n: peer exit status" "$BG_ST" 0
	check "$n: to peer:a" "$T/got_a" "$sum_a"
	check "$n: to guest:b" "$T/got_b" "$sum_b"
	passt_check_alive
	log "$n: OK"

	# Peer first: it sends a and shuts down; the guest reads a to EOF,
	# then sends b
	port=$((port + 1))
	n="peer-first-$peer"
	rm -f "$T/ready" "$T/got_a" "$T/got_b"
	bg "$ROUTER" peer2 "$T/a" "$T/got_b" "$SOCKIO" -t 30 --report \
		--ready "$T/ready" tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	st=0
	ns "$GUEST" "$SOCKIO" -t 30 --report --wait-eof tcp-connect "$peer" \
		"$port" <"$T/b" >"$T/got_a" 2>"$T/guest2.err" || st=$?
	bg_wait "$lpid" 20 || :
	log "$n: guest: $(cat "$T/guest2.err"); peer: $(tr '\n' ' ' <"$T/peer2.err")"
	expect "$n: guest exit status" "$st" 0
	expect "$n: peer exit status" "$BG_ST" 0
	check "$n: to guest:a" "$T/got_a" "$sum_a"
	check "$n: to peer:b" "$T/got_b" "$sum_b"
	passt_check_alive
	log "$n: OK"

	# Early FIN: the peer shuts down its side right after accepting,
	# while the guest is sending b (a stall seen here: the guest's
	# retransmissions never acknowledged once the peer's FIN was in)
	port=$((port + 1))
	n="early-fin-$peer"
	rm -f "$T/ready" "$T/got_b"
	bg "$ROUTER" peer3 /dev/null "$T/got_b" "$SOCKIO" -t 30 --report \
		--ready "$T/ready" tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	st=0
	ns "$GUEST" "$SOCKIO" -t 30 --report tcp-connect "$peer" "$port" \
		<"$T/b" >/dev/null 2>"$T/guest3.err" || st=$?
	[ "$st" -eq 0 ] || ss_dump "$n"
	bg_wait "$lpid" 20 || :
	log "$n: guest: $(cat "$T/guest3.err"); peer: $(tr '\n' ' ' <"$T/peer3.err")"
	expect "$n: guest exit status" "$st" 0
	expect "$n: peer exit status" "$BG_ST" 0
	check "$n: to peer:b" "$T/got_b" "$sum_b"
	passt_check_alive
	log "$n: OK"
done
passt_stop
