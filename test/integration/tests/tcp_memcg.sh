#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_memcg.sh - uploads through a daemon whose sockets' memory is limited,
# as a pod's is: the daemon runs in a memory cgroup (v1) with a TCP memory
# limit of MEMCG_TCP_LIMIT (default 128 KiB), so the kernel refuses part
# of what the window we offered let the guest send (it shrinks the send
# buffer to half of what is queued as it runs into the limit). Nothing of
# it may be left to the guest's retransmission timer: without SACK or
# timestamps, that one doubles at each timeout and stays doubled, and each
# retransmission refused again stalled such an upload for a minute ("60 s
# timeout after 13835232 bytes" of 32 MiB, the guest's RTO at 848 ms and
# backing off). The daemon keeps what its socket refused (tcp/kept.c), in
# a static pool with the stream front-end and as a migration's tail with
# vhost-user: both run here, MEMCG_ROUNDS (default 3) uploads of MEMCG_MB
# (default 16) MiB each, IPv4 and IPv6, with the stall watchdog (STALL),
# every byte checked. And the daemon's trace says, for each refusal, what
# it kept: all of it.
#
# Needs the cgroup v1 memory controller with TCP accounting
# (memory.kmem.tcp.limit_in_bytes): skips without it.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need sha256sum
need_sockio
[ -x "$TOOLS/vu-front" ] || fail "no vu-front in $TOOLS"

# shellcheck source=memcg-lib.sh
. "$(dirname "$0")/../memcg-lib.sh"
MB=${MEMCG_MB:-16}
# (cleanup takes the exit status from $?: give it back)
trap '_rc=$?; memcg_release; (exit $_rc); cleanup "$BASH_COMMAND"' EXIT

setup_ns
head -c "${MB}M" /dev/urandom >"$T/up"
sum=$(sha "$T/up")

# uploads MODE: MEMCG_ROUNDS uploads to each peer address, checked
uploads() {
	local port=7100 r peer st lpid
	for r in $(seq "${MEMCG_ROUNDS:-3}"); do
		for peer in "$PEER4" "$PEER6"; do
			port=$((port + 1))
			n="$1-$peer-$r"
			rm -f "$T/ready" "$T/recv"
			bg "$ROUTER" "$n-peer" /dev/null "$T/recv" "$SOCKIO" \
				"${STALL[@]}" -t 60 --report --hold \
				--ready "$T/ready" tcp-listen "$peer" "$port"
			lpid=$BG_PID
			wait_ready "$T/ready"
			st=0
			ns "$GUEST" "$SOCKIO" "${STALL[@]}" -t 60 --report \
				tcp-connect "$peer" "$port" <"$T/up" >/dev/null \
				2>"$T/$n-guest.err" || st=$?
			bg_wait "$lpid" 20 || :
			log "$n: guest: $(cat "$T/$n-guest.err");" \
				"peer: $(tail -n 1 "$T/$n-peer.err")"
			expect "$n: guest exit status" "$st" 0
			expect "$n: peer exit status" "$BG_ST" 0
			expect "$n: bytes" "$(stat -c %s "$T/recv")" \
				$((MB * 1048576))
			expect "$n: SHA-256" "$(sha "$T/recv")" "$sum"
			passt_check_alive
		done
	done
}

# refusals MODE: the daemon refused data, and kept all of it
refusals() {
	local all left
	all=$(grep -c 'socket took' "$PASST_ERR" || :)
	# "socket took N of M bytes, K kept": N + K < M left some
	left=$(awk '/TCP flow [0-9]+: socket took/ {
			for (i = 1; i < NF; i++) if ($i == "took") break
			if ($(i + 1) + $(i + 5) < $(i + 3)) print
		}' "$PASST_ERR")
	log "$1: the socket refused data $all times; guest's TCP:" \
		"$(tcp_counters "$GUEST")"
	[ "$all" -gt 0 ] ||
		fail "$1: the socket never refused anything: the limit didn't bite"
	expect "$1: refused data not kept (left to the guest's retransmission)" \
		"${left:-none}" none
}

# The stream front-end: tapbridge, kept data in the static pool
passt_start --trace
memcg_enter "$PASST_PID"
guest_up
uploads stream
refusals stream
passt_stop
bridge_stop

# vhost-user: vu-front, kept data as a migration's tail
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
passt_start --vhost-user --trace
memcg_enter "$PASST_PID"
guest_up
uploads vhost-user
refusals vhost-user
passt_stop
