#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# udp_dns.sh - --dns-forward: a DNS query from the guest to the forwarding
# address 192.0.2.99 goes to the host's first nameserver (192.0.2.53, from
# resolv.conf, here on ROUTER's loopback) and the answer comes back to the
# guest from 192.0.2.99:53. Without --dns-forward a query to 192.0.2.99
# gets no answer.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox
need_sockio

FWD4=192.0.2.99

setup_ns
ip -n "$ROUTER" addr add "$DNS4/32" dev lo
bg "$ROUTER" dns /dev/null /dev/null \
	"$SOCKIO" --ready "$T/dns-ready" dns-server "$DNS4"
wait_ready "$T/dns-ready"
# The resolver answers the host directly
ns "$HOST" "$SOCKIO" -t 10 udp-dns "$DNS4" 2>"$T/direct.err" ||
	fail "set-up: no answer from $DNS4 in HOST: $(cat "$T/direct.err")"

passt_start --dns-forward "$FWD4"
guest_up

st=0
ns "$GUEST" "$SOCKIO" -t 20 udp-dns "$FWD4" 2>"$T/fwd.err" || st=$?
log "guest -> $FWD4: $(tr '\n' ' ' <"$T/fwd.err")(status $st)"
expect "answer from $FWD4 (exit status)" "$st" 0
passt_check_alive
passt_stop
