#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# demo.sh - passt with a real guest, from start to finish, by itself:
# builds the guest image if needed, sets up a router namespace (the remote
# peer 203.0.113.7 / 2001:db8:2::7, serving a file over HTTP) and a host
# namespace where passt runs, boots a Linux guest in QEMU through passt,
# and shows it online: its DHCP lease, its SLAAC address, ping and ping6 to
# the peer, and a download over IPv4 and IPv6 checked by SHA-256. Then it
# powers the guest off, stops passt and removes everything.
#
# Usage: test/demo.sh [--vhost-user]   (default: the qemu stream socket)
# Needs root, QEMU and the build (make demo does it all). PASST, TOOLS,
# QEMU, E2E_ACCEL as in test/e2e/lib.sh.
set -eu

E2E_MODE=stream
case "${1:-}" in
--vhost-user) E2E_MODE=vhost-user ;;
--stream|"") ;;
*) echo "usage: $0 [--vhost-user]" >&2; exit 64 ;;
esac
export E2E_MODE
PT_ID=demo$$
DEMO_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e/lib.sh
. "$DEMO_DIR/e2e/lib.sh"

say() {
	printf '%s\n' "$*"
}

# show CMD: run CMD in the guest, show it and its output, indented
show() {
	say "  guest# $1"
	g_ok -t 30 "$1" | sed 's/^/    /'
}

DEMO_T0=$(now_ms)
say "== passt demo ($E2E_MODE front-end)"
need busybox sha256sum
have_guest || {
	say "== building the guest image (test/guest/build.sh)"
	"$TOP/test/guest/build.sh"
}
need_guest

say "== namespaces: router $ROUTER (peer $PEER4, $PEER6)," \
	"host $HOST ($ADDR4, $ADDR6)"
setup_ns
need_mode

# The peer serves a file over HTTP, on both its addresses
mkdir -p "$T/www"
head -c 4M /dev/urandom >"$T/www/demo.bin"
sum=$(sha "$T/www/demo.bin")
for a in "$PEER4" "[$PEER6]"; do
	ip netns exec "$ROUTER" busybox httpd -f -p "$a:80" -h "$T/www" \
		>/dev/null 2>>"$T/httpd.err" &
	track $!
done
wait_for "ns $ROUTER ss -Htln | grep -q '$PEER4:80'" 10 ||
	fail "httpd did not start: $(cat "$T/httpd.err")"

if [ "$E2E_MODE" = vhost-user ]; then
	say "== passt, in $HOST: $PASST --vhost-user -f -s $SOCK"
else
	say "== passt, in $HOST: $PASST -f -s $SOCK"
fi
passt_up
say "   pid $PASST_PID, listening on $SOCK"

say "== booting the guest: $QEMU $(accel_args) -kernel" \
	"vmlinuz-$(cat "$GUEST_OUT/kernel.version" 2>/dev/null) ..."
if [ "$E2E_MODE" = vhost-user ]; then
	say "   -chardev socket,path=$SOCK -netdev vhost-user" \
		"-device virtio-net-pci (memfd guest memory)"
else
	say "   -netdev stream,addr.type=unix,addr.path=$SOCK" \
		"-device virtio-net-pci"
fi
qemu_start
guest_wait 2>"$T/wait.log" || { cat "$T/wait.log" >&2; exit 1; }
say "   guest online after $(( ($(now_ms) - QEMU_T0) / 1000 )) s:" \
	"$(sed -n 's/^guest ready after [^:]*: //p' "$T/wait.log")"

say "== its DHCP lease (from passt)"
g_ok 'cat /run/lease' | sed -n \
	-e "s/^ip='\(.*\)'/    address  \1/p" \
	-e "s/^mask='\(.*\)'/    prefix   \/\1/p" \
	-e "s/^router='\(.*\)'/    router   \1/p" \
	-e "s/^dns='\(.*\)'/    DNS      \1/p" \
	-e "s/^search='\(.*\)'/    search   \1/p" \
	-e "s/^mtu='\(.*\)'/    MTU      \1/p"
say "== its addresses and routes (DHCP, and SLAAC from passt's RA)"
show "ip addr show dev eth0"
show "ip route; ip -6 route show default"

say "== ping the peer"
show "ping -c 3 $PEER4 | tail -n 2"
show "ping6 -c 3 $PEER6 | tail -n 2"

say "== download 4 MiB from the peer's HTTP server"
for url in "http://$PEER4/demo.bin" "http://[$PEER6]/demo.bin"; do
	t0=$(now_ms)
	got=$(g_ok -t 60 "wget -q -O - '$url' | sha256sum | cut -d' ' -f1")
	ms=$(($(now_ms) - t0))
	expect "SHA-256 of $url" "$got" "$sum"
	say "  guest# wget $url: 4 MiB in $ms ms, SHA-256 matches"
done
passt_check_alive

say "== shutting down"
qemu_stop
say "   guest powered off"
passt_stop
say "   passt exited cleanly"
say "== demo done in $(( ($(now_ms) - DEMO_T0) / 1000 )) s" \
	"(namespaces removed on exit)"
