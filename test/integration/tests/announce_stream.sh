#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# announce_stream.sh - in stream mode, QEMU announces a migrated guest by
# writing RARP frames into the back-end's socket; the daemon, which holds
# CAP_NET_RAW here (root), then announces the guest on the host's
# interface: a RARP from that interface's MAC, a gratuitous ARP for the
# guest's IPv4 address and an unsolicited NA (to all nodes) for its IPv6
# address, as seen by the router. Frames from the guest side of anything
# but a RARP announce nothing, and --no-announce silences it all.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need tcpdump

FS=$TOOLS/framesend
[ -x "$FS" ] || fail "no framesend in $TOOLS"

setup_ns
mac=$(ip -n "$HOST" link show h0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')

# cap_start NAME: capture what HOST's interface sends, but TCP and UDP
cap_start() {
	ip netns exec "$ROUTER" tcpdump -U --immediate-mode -n -e -i r0 \
		-Q in -w "$T/$1.pcap" 'ether proto 0x8035 or arp or icmp6' \
		>"$T/$1.log" 2>&1 &
	CAP=$!
	track "$CAP"
	wait_for "grep -q 'listening on' '$T/$1.log'" 60 ||
		fail "tcpdump: $(cat "$T/$1.log")"
}

# cap_count NAME: "rarp=N garp=N na=N" from HOST's MAC
cap_count() {
	kill -INT "$CAP"
	wait_for "! alive $CAP" 10 || kill -KILL "$CAP"
	tcpdump -r "$T/$1.pcap" -n -e 2>/dev/null |
		awk -v mac="$mac" -v a4="$ADDR4" -v a6="$ADDR6" '
		$1 != mac && $2 != mac { next }
		/Reverse ARP|RARP|0x8035/ { r++; next }
		/ARP/ && (index($0, "who-has " a4 " tell " a4) ||
			  index($0, "Announcement " a4)) { g++; next }
		/neighbor advertisement/ && index($0, "> ff02::1:") &&
			index($0, "tgt is " a6) { n++ }
		END { printf "rarp=%d garp=%d na=%d\n", r, g, n }'
}

# 1. Default: the RARP from the front-end makes the daemon announce
cap_start on
passt_start
grep -q 'Announce: a migrated guest is announced on h0' "$PASST_ERR" ||
	fail "no packet socket: $(grep Announce "$PASST_ERR")"
"$FS" -t 10 "$SOCK" arp-probe dhcp-probe 2>"$T/fs0.log" ||
	fail "probes: $(tail -n 3 "$T/fs0.log")"
! grep -q 'Announce (' "$PASST_ERR" || fail "announced without a RARP"
"$FS" -t 10 "$SOCK" rarp arp-probe 2>"$T/fs1.log" ||
	fail "after the RARP: $(tail -n 3 "$T/fs1.log")"
wait_for "grep -q 'Announce (RARP from the front-end)' '$PASST_ERR'" 10 ||
	fail "no announcement: $(tail -n 3 "$PASST_ERR")"
passt_stop
got=$(cap_count on)
log "announced by $mac: $got"
expect "what h0 announced" "$got" "rarp=1 garp=1 na=1"

# 2. --no-announce: nothing, not a word
cap_start off
passt_start --no-announce
"$FS" -t 10 "$SOCK" rarp arp-probe 2>"$T/fs2.log" ||
	fail "after the RARP: $(tail -n 3 "$T/fs2.log")"
passt_stop
! grep Announce "$PASST_ERR" || fail "--no-announce, and still a line"
expect "what h0 announced with --no-announce" "$(cap_count off)" \
	"rarp=0 garp=0 na=0"
