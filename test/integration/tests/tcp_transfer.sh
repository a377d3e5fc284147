#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_transfer.sh - bulk TCP through the daemon, both ways, IPv4 and IPv6:
# TRANSFER_MB (default 64) MiB of random data from the guest to the peer
# and from the peer to the guest, checked by SHA-256 and byte count.
# TRANSFER_FAMILIES (default "4 6") selects the IP versions.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox sha256sum
need_sockio

MB=${TRANSFER_MB:-64}
FAMILIES=${TRANSFER_FAMILIES:-4 6}

setup_ns
passt_start
guest_up

head -c "${MB}M" /dev/urandom >"$T/up"
head -c "${MB}M" /dev/urandom >"$T/down"
sum_up=$(sha "$T/up")
sum_down=$(sha "$T/down")

# rate BYTES MS: MiB/s
rate() {
	echo "$(($1 * 1000 / ($2 + 1) / 1048576)) MiB/s"
}

# client PID: wait for a client in the background; if it takes more than
# 30 s, record the sockets' state while they still exist, then wait for
# its own timeout (40 s)
client() {
	if ! bg_wait "$1" 30; then
		ss_dump "stalled:"
		log "stalled, see ss.log"
		bg_wait "$1" 15 || :
	fi
}

port=5000
for fam in $FAMILIES; do
	if [ "$fam" = 4 ]; then peer=$PEER4; else peer=$PEER6; fi
	# guest -> peer: the listener in ROUTER writes what it gets to a file
	# (--hold: it sends no FIN before the guest's; tcp_halfclose.sh covers
	# data after a FIN)
	port=$((port + 1))
	rm -f "$T/ready" "$T/recv"
	bg "$ROUTER" up-listen /dev/null "$T/recv" \
		"$SOCKIO" "${STALL[@]}" -t 40 --report --hold \
		--ready "$T/ready" \
		tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	t0=$(now_ms)
	bg "$GUEST" up-connect "$T/up" /dev/null \
		"$SOCKIO" "${STALL[@]}" -t 40 --report \
		tcp-connect "$peer" "$port"
	client "$BG_PID"
	st=$BG_ST
	ms=$(($(now_ms) - t0))
	bg_wait "$lpid" 20 || :
	log "guest -> $peer: client: $(tail -n 1 "$T/up-connect.err")," \
		"listener: $(tail -n 1 "$T/up-listen.err"), ${ms} ms"
	expect "guest -> $peer: client exit status" "$st" 0
	expect "guest -> $peer: listener exit status" "$BG_ST" 0
	expect "guest -> $peer: bytes received" "$(stat -c %s "$T/recv")" \
		$((MB * 1048576))
	expect "guest -> $peer: SHA-256" "$(sha "$T/recv")" "$sum_up"
	log "guest -> $peer: ${MB} MiB OK, $(rate $((MB * 1048576)) "$ms")"
	passt_check_alive

	# peer -> guest: the listener in ROUTER sends, the guest only reads
	# (--hold: no FIN from the guest before the peer's)
	port=$((port + 1))
	rm -f "$T/ready" "$T/recv"
	bg "$ROUTER" down-listen "$T/down" /dev/null \
		"$SOCKIO" "${STALL[@]}" -t 40 --report --ready "$T/ready" \
		tcp-listen "$peer" "$port"
	lpid=$BG_PID
	wait_ready "$T/ready"
	t0=$(now_ms)
	bg "$GUEST" down-connect /dev/null "$T/recv" \
		"$SOCKIO" "${STALL[@]}" -t 40 --report --hold \
		tcp-connect "$peer" "$port"
	client "$BG_PID"
	st=$BG_ST
	ms=$(($(now_ms) - t0))
	bg_wait "$lpid" 20 || :
	log "$peer -> guest: client: $(tail -n 1 "$T/down-connect.err")," \
		"listener: $(tail -n 1 "$T/down-listen.err"), ${ms} ms"
	expect "$peer -> guest: client exit status" "$st" 0
	expect "$peer -> guest: listener exit status" "$BG_ST" 0
	expect "$peer -> guest: bytes received" "$(stat -c %s "$T/recv")" \
		$((MB * 1048576))
	expect "$peer -> guest: SHA-256" "$(sha "$T/recv")" "$sum_down"
	log "$peer -> guest: ${MB} MiB OK, $(rate $((MB * 1048576)) "$ms")"
	passt_check_alive
done
passt_stop
