#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# multiqueue.sh - vhost-user with two queue pairs (QEMU's queues=2, mq=on)
# and two vCPUs. The guest negotiates VIRTIO_NET_F_MQ and uses both pairs;
# a process pinned to each vCPU exchanges data with the peer, both ways at
# once, checked by SHA-256. A Linux guest sends each CPU's frames on that
# CPU's queue (XPS), and the daemon sends a flow's frames back on the pair
# they came from: so both pairs carry frames both ways (the daemon's
# per-pair counters), and the guest takes interrupts on its second RX
# queue (some, not just the one we make when QEMU sets the ring up).
set -eu
. "$(dirname "$0")/../lib.sh"
need sha256sum
need_sockio
[ "$E2E_MODE" = vhost-user ] || skip "queue pairs are a vhost-user feature"

# E2E_TCP_MIB: MiB each way, per connection
MIB=${E2E_TCP_MIB:-8}
# shellcheck disable=SC2034 # read by qemu_start
E2E_SMP=2 E2E_QUEUES=2

setup_ns
need_mode
need_guest
passt_up
qemu_start
guest_wait
[ "$G_IP4" != none ] || fail "guest has no IPv4 address"
g_ok '[ -x /bin/sockio ]' >/dev/null || fail "no sockio in the guest image"

# sysfs "features": character i is feature bit i; 22 is VIRTIO_NET_F_MQ
feat=$(g_ok 'cat /sys/class/net/eth0/device/features')
[ "${feat:22:1}" = 1 ] || fail "VIRTIO_NET_F_MQ not negotiated: $feat"
expect "the guest's queues" \
	"$(g_ok 'ls /sys/class/net/eth0/queues' | tr '\n' ' ')" \
	"rx-0 rx-1 tx-0 tx-1 "

head -c "${MIB}M" /dev/urandom >"$T/to_guest"
sum_to_guest=$(sha "$T/to_guest")
sum_to_peer=$(g_ok "head -c ${MIB}m /dev/urandom >/tmp/to_peer &&
	sha256sum /tmp/to_peer | cut -d' ' -f1")

# xfer CPU PORT: a guest process pinned to CPU connects to the peer on
# PORT; data both ways, compared at both ends
xfer() {
	local cpu=$1 ppid got
	rm -f "$T/ready" "$T/got_peer"
	bg "$ROUTER" "cpu$cpu-peer" "$T/to_guest" "$T/got_peer" \
		"$SOCKIO" -t 120 --report --ready "$T/ready" \
		tcp-listen "$PEER4" "$2"
	ppid=$BG_PID
	wait_ready "$T/ready"
	g_ok -t 120 "taskset $((1 << cpu)) sockio -t 110 --report \
		tcp-connect $PEER4 $2 </tmp/to_peer >/tmp/got \
		2>/tmp/cpu$cpu.err" >/dev/null
	bg_wait "$ppid" 20 || :
	expect "CPU $cpu: peer exit status" "$BG_ST" 0
	got=$(g_ok "sha256sum /tmp/got | cut -d' ' -f1; rm -f /tmp/got")
	expect "CPU $cpu: SHA-256 to the guest" "$got" "$sum_to_guest"
	expect "CPU $cpu: SHA-256 to the peer" "$(sha "$T/got_peer")" \
		"$sum_to_peer"
	log "CPU $cpu: $((MIB * 2)) MiB OK"
}

xfer 0 6001
xfer 1 6002

# The guest's interrupts on its second RX queue (virtio0-input.1)
irq=$(g_ok "grep 'input\.1\$' /proc/interrupts" | tr -s ' ')
log "guest: $irq"
n=0
for w in $(echo "$irq" | cut -d: -f2); do
	case "$w" in *[!0-9]*) break ;; *) n=$((n + w)) ;; esac
done
# More than the one the daemon makes when QEMU sets the call eventfd
[ "$n" -ge 10 ] || fail "few interrupts on the guest's second RX queue: $irq"

qemu_stop
passt_stop

# "frames to/from the guest per queue pair: 0: a/b 1: c/d", at exit
line=$(grep 'per queue pair' "$PASST_ERR" | tail -n 1)
log "daemon: $line"
for p in 0 1; do
	pair=$(echo "$line" | sed -n "s|.* $p: \([0-9]*\)/\([0-9]*\).*|\1 \2|p")
	read -r rx tx <<EOF
$pair
EOF
	[ "${rx:-0}" -gt 0 ] && [ "${tx:-0}" -gt 0 ] ||
		fail "pair $p didn't carry frames both ways: $line"
done
