#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# freebind.sh - --freebind (QEMU's -netdev passt,freebind=on): forwarded
# ports may be bound to addresses the host doesn't have yet. Without it,
# -t 192.0.2.99/8090 (an address HOST lacks) gets no listener; with it,
# the listeners are there for IPv4 and IPv6, and once HOST has the
# address, a connection from ROUTER to it reaches the guest.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_sockio

A4=192.0.2.99
A6=2001:db8:1::99
setup_ns

# listening ADDR PORT: is there a TCP listener on ADDR:PORT in HOST?
listening() {
	ns "$HOST" ss -Hltn "src $1 and sport = :$2" | grep -q LISTEN
}

# Without --freebind: no listener on an address the host lacks
ip netns exec "$HOST" "$PASST" -f -s "$SOCK" -t "$A4/8090" \
	>"$T/plain.out" 2>"$T/plain.err" &
pid=$!
track "$pid"
# Its socket listens, and then its forwarded ports are set up: it says
# it started once they are
wait_for "sock_listening $HOST '$SOCK' && grep -q 'Started: passt' '$T/plain.err' ||
	  ! alive $pid" 10 && alive "$pid" ||
	fail "the daemon without --freebind did not start: $(cat "$T/plain.err")"
listening "$A4" 8090 && fail "a listener on $A4 without --freebind"
kill -TERM "$pid" 2>/dev/null || :
wait "$pid" 2>/dev/null || :
rm -f "$SOCK"
log "without --freebind: $(grep -i "$A4\|bind" "$T/plain.err" | head -n 1)"

passt_start --freebind -t "$A4/8090" -t "$A6/8091"
listening "$A4" 8090 || fail "no listener on $A4:8090 with --freebind"
listening "[$A6]" 8091 || fail "no listener on [$A6]:8091 with --freebind"
guest_up

# The address comes: a connection to it reaches the guest's listener
ns "$HOST" ip addr add "$A4/32" dev h0
ns "$ROUTER" ip route add "$A4/32" via "$ADDR4"
echo hello-freebind >"$T/msg"
bg "$GUEST" guest /dev/null "$T/got" \
	"$SOCKIO" -t 20 --ready "$T/ready" tcp-listen "$ADDR4" 8090
gpid=$BG_PID
wait_ready "$T/ready"
ns "$ROUTER" "$SOCKIO" -t 20 tcp-connect "$A4" 8090 <"$T/msg" >/dev/null
bg_wait "$gpid" 20 || :
expect "guest listener's exit status" "$BG_ST" 0
expect "what the guest got" "$(cat "$T/got")" hello-freebind
passt_check_alive
passt_stop
log "--freebind: $A4:8090 listened before the address came, then forwarded"
