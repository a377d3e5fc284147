#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_rst.sh - resets cross the daemon, IPv4 and IPv6: a peer that aborts
# (SO_LINGER 0) makes the guest's connection end with ECONNRESET, and a
# guest that aborts makes the peer's end with ECONNRESET, not with an EOF.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox nstat
need_sockio

setup_ns
passt_start
guest_up
head -c 1024 /dev/urandom >"$T/kib"

port=6100
for peer in "$PEER4" "$PEER6"; do
	# Peer -> guest: the guest sends 1 KiB and shuts down; only then
	# (--wait-eof, so the connection is surely established on both
	# sides) the peer sends 64 KiB and resets. The guest must see the
	# reset
	port=$((port + 1))
	n="peer-rst-$peer"
	rm -f "$T/ready"
	bg "$ROUTER" peer1 /dev/zero /dev/null "$SOCKIO" -t 30 --report \
		--wait-eof --rst-after 65536 --ready "$T/ready" tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	rst0=$(nstat_get "$ROUTER" TcpOutRsts)
	st=0
	ns "$GUEST" "$SOCKIO" -t 20 --report --expect-rst \
		tcp-connect "$peer" "$port" <"$T/kib" >/dev/null \
		2>"$T/guest1.err" || st=$?
	bg_wait "$lpid" 10 || :
	rst1=$(nstat_get "$ROUTER" TcpOutRsts)
	log "$n: guest: $(cat "$T/guest1.err"); peer: $(tr '\n' ' ' <"$T/peer1.err"); peer TcpOutRsts +$((rst1 - rst0))"
	expect "$n: peer exit status" "$BG_ST" 0
	[ $((rst1 - rst0)) -ge 1 ] || fail "$n: the peer sent no RST"
	expect "$n: guest sees the reset (exit status)" "$st" 0
	passt_check_alive
	log "$n: OK"

	# Guest -> peer: the guest sends 64 KiB, then resets; the peer keeps
	# its side open and must see the reset
	port=$((port + 1))
	n="guest-rst-$peer"
	rm -f "$T/ready"
	bg "$ROUTER" peer2 /dev/null /dev/null "$SOCKIO" -t 20 --report \
		--hold --expect-rst --ready "$T/ready" tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	rst0=$(nstat_get "$GUEST" TcpOutRsts)
	st=0
	ns "$GUEST" "$SOCKIO" -t 20 --report --rst-after 65536 \
		tcp-connect "$peer" "$port" </dev/zero >/dev/null \
		2>"$T/guest2.err" || st=$?
	rst1=$(nstat_get "$GUEST" TcpOutRsts)
	bg_wait "$lpid" 10 || :
	log "$n: guest: $(cat "$T/guest2.err"); peer: $(tr '\n' ' ' <"$T/peer2.err"); guest TcpOutRsts +$((rst1 - rst0))"
	expect "$n: guest exit status" "$st" 0
	[ $((rst1 - rst0)) -ge 1 ] || fail "$n: the guest sent no RST"
	expect "$n: peer sees the reset (exit status)" "$BG_ST" 0
	passt_check_alive
	log "$n: OK"
done
passt_stop
