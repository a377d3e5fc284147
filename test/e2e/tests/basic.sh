#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# basic.sh - a real guest (QEMU, virtio-net) boots against the daemon: its
# DHCP lease (address, router, MTU, resolver), its SLAAC address and IPv6
# default route, and ping/ping6 to the remote peer.
set -eu
. "$(dirname "$0")/../lib.sh"

setup_ns
need_mode
need_guest
passt_up
qemu_start
guest_wait

expect "DHCP address" "$G_IP4" "$ADDR4/24"
expect "DHCP router" "$G_ROUTER" "$GW4"
expect "DHCP MTU" "$G_MTU" 65520
lease=$(g_ok 'cat /run/lease')
log "lease: $(echo "$lease" | tr '\n' ' ')"
dns=$(g_ok 'sed -n "s/^nameserver //p" /etc/resolv.conf')
[ -n "$dns" ] || fail "no nameserver from DHCP"
expect "search domain" "$(g_ok 'sed -n "s/^search //p" /etc/resolv.conf')" \
	"$SEARCH"
g_ok "ip -4 route show default" | grep -q "via $GW4 dev eth0" ||
	fail "no IPv4 default route via $GW4"

case "$G_IP6" in
2001:db8:1:*/64) ;;
*) fail "SLAAC address: got '$G_IP6', expected one in 2001:db8:1::/64" ;;
esac
# SLAAC from the MAC (EUI-64), as the kernel does without privacy
# extensions (busybox ip doesn't compress the zeros)
case "$G_IP6" in
*:5054:ff:fe12:3456/64) ;;
*) fail "SLAAC address $G_IP6 is not EUI-64 from $GUEST_MAC" ;;
esac
g_ok "ip -6 route show default" | grep -q 'via fe80::.* dev eth0' ||
	fail "no IPv6 default route via a link-local router"

out=$(g_ok -t 20 "ping -c 3 -W 5 $PEER4")
echo "$out" | grep -q ' 0% packet loss' || fail "ping $PEER4: $out"
log "ping $PEER4: $(echo "$out" | tail -n 1)"
out=$(g_ok -t 20 "ping6 -c 3 -W 5 $PEER6")
echo "$out" | grep -q ' 0% packet loss' || fail "ping6 $PEER6: $out"
log "ping6 $PEER6: $(echo "$out" | tail -n 1)"

passt_check_alive
qemu_stop
passt_stop
