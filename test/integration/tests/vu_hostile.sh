#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_hostile.sh - a hostile vhost-user guest: vu-front's "hostile" case
# bridges tap0 (the kernel of GUEST is the guest, its TCP runs through the
# daemon) while it lays the rings out as a broken or malicious driver
# would (chains of 1 to 64 descriptors of any size, indirect tables,
# misaligned ones too, the same head in several entries, heads reused
# before they came back, descriptors rewritten after they were published,
# jumping indexes, a thread racing on the rings, garbage chains, rings
# stopped and restarted anywhere, blocking interrupt fds; MRG_RXBUF,
# EVENT_IDX and the offloads negotiated or not).
#
# First the layout of issue 42: no MRG_RXBUF, every RX chain 64
# descriptors (66 bytes, then 63 of 24), head 0 in every available entry,
# and a peer that sends: before the fix, the daemon wrote past a stack
# array (stack smashing, or an ASan report). Then fixed seeds. Each run
# lasts HOSTILE_SECS (4) seconds of traffic both ways (TCP, ping, UDP);
# after each, the daemon must be alive, without a sanitizer report, and
# answer a fresh, well-behaved front-end; at the end a well-behaved guest
# gets its lease, pings, and receives 8 MiB intact, and the daemon exits
# cleanly on SIGTERM.
#
# Environment: HOSTILE_SEEDS (the seeds, "1 2 3 4 5 6"), HOSTILE_SECS,
# HOSTILE_LONG_SECS: instead, random seeds for that many seconds (make
# fuzz-long), each printed, so that a failure names its seed; reproduce
# with HOSTILE_SEEDS=SEED test/integration/run.sh vu_hostile. After each
# seed there, the attacks of vu-front's sibling cases too, against the
# same daemon (make check runs each in a test of its own, vu_*.sh):
# GET_VRING_BASE racing new descriptors (close-race), guest memory and
# the dirty log shrinking (shrink-mem, shrink-log), messages read whole
# (msg-rounds), a ring of endless zero-length chains (long-chains) and a
# flooded LOAD pipe (load-flood), a second each.
# HOSTILE_OPTS: more vu-front options for the hostile runs (-v: why it
# mended rings or reconnected); HOSTILE_PASST_OPTS: more daemon options
# (--trace: what it did with each frame and message).
# PT_TIMEOUT: 300
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need busybox sha256sum ping
need_vufront
need_sockio

SEEDS=${HOSTILE_SEEDS:-1 2 3 4 5 6}
SECS=${HOSTILE_SECS:-4}
LONG=${HOSTILE_LONG_SECS:-0}
runs=0
port=6000

setup_ns
# -t: a forwarded port, for close-race's clients (long mode)
# shellcheck disable=SC2086 # options, split
vu_passt_start -t 6999 ${HOSTILE_PASST_OPTS:-}
head -c 32M /dev/urandom >"$T/data"
ns "$ROUTER" "$SOCKIO" --ready "$T/udp-ready" udp-echo "$PEER4" 7 \
	2>"$T/udp-echo.err" &
track $!
ns "$ROUTER" "$SOCKIO" --ready "$T/tcp-ready" tcp-echo "$PEER4" 7 \
	2>"$T/tcp-echo.err" &
track $!
wait_ready "$T/udp-ready"
wait_ready "$T/tcp-ready"

# again NAME SECS CMD...: CMD (a sockio client, options first) in GUEST,
# with -t what's left of SECS, again after each end, until SECS are up;
# stdin from $T/data. The last words go to $T/NAME.err
again() {
	local _name=$1 _end=$(($(date +%s) + $2)) _left
	shift 2
	while _left=$((_end - $(date +%s))) && [ "$_left" -gt 0 ]; do
		ip netns exec "$GUEST" "$1" -t "$_left" "${@:2}" \
			<"$T/data" >/dev/null 2>"$T/$_name.err" && continue
		# Refused, or no route yet (ARP): pace the next try
		sleep 0.2
	done
}

# hostile NAME VU-FRONT-OPTION...: one hostile guest with traffic
hostile() {
	_n=$1
	shift
	runs=$((runs + 1))
	rm -f "$T/$_n.err"
	# shellcheck disable=SC2086 # HOSTILE_OPTS: options, split
	ip netns exec "$GUEST" "$VUFRONT" -r 5 ${HOSTILE_OPTS:-} "$@" \
		"$SOCK" hostile 2>"$T/$_n.err" &
	_vf=$!
	track "$_vf"
	wait_for "grep -q 'hostile: connected' '$T/$_n.err' ||
		  ! alive $_vf" 10 || :
	passt_check_alive
	alive "$_vf" || fail "$_n: vu-front: $(tail -n 3 "$T/$_n.err")"
	log "$(grep 'hostile: connected' "$T/$_n.err")"

	# The guest: the host's address, the gateway as its router, and
	# quick retransmissions (frames get lost here, a lot)
	ip -n "$GUEST" addr add "$ADDR4/24" dev tap0
	ip -n "$GUEST" route add default via "$GW4" dev tap0 rto_min 10ms

	# Traffic for SECS seconds: a download (what issue 42 needs: a
	# peer that sends, to a guest that opened a large window), echoes
	# both ways, ping, UDP; any of them may well fail
	port=$((port + 1))
	rm -f "$T/ready"
	bg "$ROUTER" "$_n-down-l" "$T/data" /dev/null "$SOCKIO" \
		-t $((SECS + 3)) --ready "$T/ready" tcp-listen "$PEER4" "$port"
	_p1=$BG_PID
	wait_ready "$T/ready"
	bg "$GUEST" "$_n-down" /dev/null /dev/null "$SOCKIO" -t "$SECS" \
		--report tcp-connect "$PEER4" "$port"
	_p2=$BG_PID
	again "$_n-echo1" "$SECS" "$SOCKIO" --report tcp-connect "$PEER4" 7 &
	_p3=$!
	again "$_n-echo2" "$SECS" "$SOCKIO" --report tcp-connect "$PEER4" 7 &
	_p4=$!
	bg "$GUEST" "$_n-ping" /dev/null /dev/null timeout "$SECS" \
		ping -i 0.05 -W 1 "$PEER4"
	_p5=$BG_PID
	again "$_n-udp" "$SECS" "$SOCKIO" udp-ping "$PEER4" 7 100000 &
	_p6=$!

	# The clients end by themselves (-t, timeout): the run's length
	for _p in $_p2 $_p3 $_p4 $_p5 $_p6 $_p1; do
		bg_wait "$_p" $((SECS + 10)) ||
			fail "$_n: a traffic process outlived its timeout"
		passt_check_alive
	done
	log "$_n: download: $(tail -n 1 "$T/$_n-down.err"); echo:" \
		"$(tail -n 1 "$T/$_n-echo1.err")"
	kill -TERM "$_vf" 2>/dev/null || :
	wait_for "! alive $_vf" 10 || fail "$_n: vu-front ignores SIGTERM"
	_vst=0
	wait "$_vf" || _vst=$?
	passt_check_alive
	sanitizer_check "$PASST_ERR"
	log "$(grep 'hostile: seed' "$T/$_n.err" || tail -n 2 "$T/$_n.err")"
	[ "$_vst" -eq 0 ] ||
		fail "$_n: vu-front status $_vst: $(tail -n 3 "$T/$_n.err")"

	# A fresh, well-behaved front-end is served
	vu "$_n-after" connect arp-probe dhcp-probe close
	passt_check_alive
}

# attacks NAME: vu-front's sibling cases against the same daemon, each
# followed by a well-behaved front-end that is served
attacks() {
	vu "$1-race" close-race --freeze "$PASST_PID" \
		--race-netns "/run/netns/$ROUTER" --race-connect "$ADDR4:6999"
	vu "$1-shrink" connect arp-probe shrink-mem connect arp-probe \
		shrink-log connect arp-probe msg-rounds --freeze "$PASST_PID"
	vu "$1-chains" --attack-secs 1 long-chains connect arp-probe
	vu "$1-flood" --attack-secs 1 load-flood connect arp-probe dhcp-probe
	passt_check_alive
	sanitizer_check "$PASST_ERR"
	log "$1: attacks survived, the next front-end served"
}

start=$(date +%s)
if [ "$LONG" -gt 0 ]; then
	n=0
	while [ $(($(date +%s) - start)) -lt "$LONG" ]; do
		seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
		log "hostile: seed $seed (reproduce: HOSTILE_SEEDS=$seed" \
			"test/integration/run.sh vu_hostile)"
		hostile "seed-$seed" --hostile "$seed"
		attacks "seed-$seed"
		n=$((n + 1))
	done
	log "hostile: $n random seeds in $(($(date +%s) - start)) s, daemon" \
		"alive and serving after each"
else
	# Issue 42's layout: 64-descriptor RX chains, head 0 everywhere
	hostile issue42 -m 1500 --no-mrg --rx-chain 66,24x63 --rx-same-head
	for seed in $SEEDS; do
		hostile "seed-$seed" --hostile "$seed"
	done
fi

# A well-behaved guest at the end: lease, ping, 8 MiB intact to it
guest_up
ns "$GUEST" ping -c 2 -W 2 "$PEER4" >"$T/ping.log" 2>&1 ||
	fail "ping $PEER4 after the hostile runs: $(tail -n 3 "$T/ping.log")"
head -c 8M /dev/urandom >"$T/down"
rm -f "$T/ready"
bg "$ROUTER" final-l "$T/down" /dev/null "$SOCKIO" -t 30 \
	--ready "$T/ready" tcp-listen "$PEER4" 5999
lpid=$BG_PID
wait_ready "$T/ready"
st=0
ns "$GUEST" "$SOCKIO" -t 30 --hold tcp-connect "$PEER4" 5999 \
	</dev/null >"$T/recv" 2>"$T/final.err" || st=$?
bg_wait "$lpid" 20 || :
expect "after the hostile runs: client exit status" "$st" 0
expect "after the hostile runs: SHA-256" "$(sha "$T/recv")" "$(sha "$T/down")"
bridge_stop
log "hostile: $runs runs in $(($(date +%s) - start)) s"
passt_stop
