#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# domain.sh - a domain whose interface has the passt back-end, in
# $E2E_MODE (stream: <interface type='user'>, vhost-user: <interface
# type='vhostuser'> with shared memfd memory, two vCPUs and two queue
# pairs), started by real libvirt, with TCP port 5001 and UDP port 5003
# forwarded (<portForward>):
#
#   1. virsh start: libvirt runs our passt (its argv goes to the log), the
#      guest gets its DHCP lease and SLAAC address, pings the peer (IPv4,
#      IPv6), the peer downloads a file from the guest through the
#      forwarded TCP port (SHA-256 checked) and pings the guest's UDP echo
#      server through the forwarded UDP port
#   2. virsh destroy: no passt process, no pid or socket file left
#   3. virsh start again, virsh shutdown (ACPI: the guest powers off at
#      its power button's event): again nothing left
set -eu
. "$(dirname "$0")/../lib.sh"
need_sockio
need sha256sum

MIB=${LV_DL_MIB:-4}
NAME=$PT_ID

lv_up
lv_define "$E2E_MODE" "$NAME"

# 1. Start, lease, ping, download, UDP
lv_start "$NAME"
echo "argv $E2E_MODE: $LV_PASST_ARGV" >&2
case "$E2E_MODE" in
vhost-user) expect_in "argv" "$LV_PASST_ARGV" --vhost-user ;;
*) case " $LV_PASST_ARGV " in
   *" --vhost-user "*) fail "--vhost-user in stream mode" ;;
   esac ;;
esac
guest_wait
[ "$G_IP4" != none ] || fail "guest has no IPv4 lease"
[ "$G_IP6" != none ] || fail "guest has no IPv6 address"
expect "guest address (the host's)" "$(guest_addr4)" "$ADDR4"
if [ "$E2E_MODE" = vhost-user ]; then
	# <driver queues='2'/>: QEMU asked us for two queue pairs, and the
	# guest uses both
	expect "the guest's queues" \
		"$(g_ok 'ls /sys/class/net/eth0/queues' | tr '\n' ' ')" \
		"rx-0 rx-1 tx-0 tx-1 "
fi

g_ok "ping -c 2 -W 10 $PEER4" >&2
g_ok "ping -6 -c 2 -W 10 $PEER6" >&2
log "guest pinged $PEER4 and $PEER6"

sum=$(g_ok "head -c ${MIB}m /dev/urandom >/tmp/dl &&
	sha256sum /tmp/dl | cut -d' ' -f1")
g_bg dl "sockio -t 100 --report --ready /tmp/dl.ready \
	tcp-listen $(guest_addr4) $LV_TCP </tmp/dl >/dev/null"
g_wait_file /tmp/dl.ready
t0=$(now_ms)
st=0
ns "$ROUTER" "$SOCKIO" -t 100 --report tcp-connect "$ADDR4" "$LV_TCP" \
	</dev/null >"$T/dl" 2>"$T/dl-peer.err" || st=$?
expect "peer download exit status ($(cat "$T/dl-peer.err"))" "$st" 0
g_bg_wait dl 30
expect "guest sender exit status" "$BG_ST" 0
expect "bytes downloaded" "$(stat -c %s "$T/dl")" "$((MIB * 1048576))"
expect "SHA-256 of the download" "$(sha "$T/dl")" "$sum"
log "downloaded $MIB MiB through $ADDR4:$LV_TCP in $(($(now_ms) - t0)) ms"

g_bg ue "sockio --ready /tmp/ue.ready -t 60 udp-echo $(guest_addr4) $LV_UDP"
g_wait_file /tmp/ue.ready
st=0
ns "$ROUTER" "$SOCKIO" -t 30 udp-ping "$ADDR4" "$LV_UDP" 10 \
	>/dev/null 2>"$T/ue-peer.err" || st=$?
expect "UDP ping through $ADDR4:$LV_UDP ($(cat "$T/ue-peer.err"))" "$st" 0
g_run "killall sockio" >/dev/null || :
log "10 datagrams echoed through $ADDR4:$LV_UDP"

# 2. virsh destroy
V destroy "$NAME" >/dev/null || fail "virsh destroy failed"
lv_gone "$NAME" "destroy"

# 3. Start again, ACPI shutdown
lv_start "$NAME"
guest_wait
[ "$G_IP4" != none ] || fail "second boot: no IPv4 lease"
lv_acpi_arm
V shutdown "$NAME" >/dev/null || fail "virsh shutdown failed"
lv_gone "$NAME" "shutdown"
