#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_handshake.sh - connections the guest opened, migrated between
# our SYN-ACK and the guest's ACK (migrate-lib.sh topology).
#
# The guest's egress towards ports 7601 (IPv4) and 7602 (IPv6), but its
# SYNs, is held back (tc on its tap): the source connects to the peer and
# sends the SYN-ACK, and the guest's ACK, with its first data, stays in
# the guest's queue. The migration happens then, the connection still in
# its handshake at the source (as when the guest's ACK is in the TX ring
# the switch-over stopped). The guest's socket is established, though:
# it will not send its SYN again, and its ACK and data reach the target.
# A third connection (port 7603, IPv4) loses the SYN-ACK instead: the
# guest's ingress drops what comes from that port until the migration.
# The guest, still in SYN-SENT, sends its SYN again to the target, which
# must answer with the SYN-ACK: a bare ACK is dropped by a socket in
# SYN-SENT, and the guest's connect() would hang.
#
# Checked: the source moves the three connections (a target that didn't
# know them answered the guest's ACK with a RST, and the source reset the
# peer's end), the target restores them, and the streams, uploads over
# IPv4 and a download over IPv6 (the guest's window, unknown before its
# ACK, mustn't keep the target from sending), arrive byte-exact, with
# both FINs.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need tc

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG

# The two ports' segments but SYNs into a class that sends 1 byte a
# second, already in debt (mig_slow_class): the guests' ACKs and what
# follows wait there for 20 minutes (the tree is removed, with them,
# after the migration: the guest sends it all again to the target)
q() {
	ns "$GUEST" tc "$@" 2>/dev/null
}
mig_slow_class 7601
q filter add dev tap0 parent 1: protocol ip prio 2 u32 \
	match ip protocol 6 0xff match ip dport 7601 0xffff \
	match u8 0 0x02 at 33 flowid 1:4
q filter add dev tap0 parent 1: protocol ipv6 prio 3 u32 \
	match ip6 dport 7602 0xffff match u8 0 0x02 at 53 flowid 1:4

# Port 7603: the SYN-ACKs never reach the guest's socket (a routing rule
# before the local table's blackholes them: no tc action or netfilter is
# needed)
ns "$GUEST" ip rule add pref 10 iif tap0 ipproto tcp sport 7603 blackhole ||
	fail "the guest's blackhole rule"
ns "$GUEST" ip rule add pref 100 lookup local
ns "$GUEST" ip rule del pref 0

mig_stream h4 up4 7601 --rate 256
mig_stream h6 down6 7602 --rate 256
mig_stream s4 up4 7603 --rate 256
# The source connected to the peer for all three: the SYN-ACKs are out,
# the guest's ACKs held back (or its SYN sent again, and again)
wait_for "[ \$(ns $SRC ss -tnH state established '( dport = :7601 or dport = :7602 or dport = :7603 )' | wc -l) -eq 3 ]" 10 ||
	fail "the source didn't connect: $(ns "$SRC" ss -tnH)"
expect "bytes the peer got before the migration" \
	$(($(mig_prog h4 l rx) + $(mig_prog h6 l rx) + $(mig_prog s4 l rx))) 0

mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK b_log=$D_LOG b_pid=$D_PID
mig_repair_ready src "$a_sock"
mig_migrate_switch "$b_sock" dst 0 || fail "migration: $MIG_RESULT"
grep -q 'completed as source, 3 connection(s) moved' "$a_log" ||
	fail "source: $(grep Migration "$a_log" | tr '\n' ' ')"
grep -q 'target, 3 of 3 connection(s) restored' "$b_log" ||
	fail "target: $(grep Migration "$b_log" | tr '\n' ' ')"
q qdisc del dev tap0 root
ns "$GUEST" ip rule del pref 10
# The guest's SYN retransmissions come 1, 3, 7 s after the first: 20 s
# covers them; with a bare ACK for an answer, none would connect
mig_all_flowing 16384 20 h4 h6 s4 || fail "not flowing: $MIG_LAGGING"
mig_streams_verify h4 h6 s4
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
expect "the source's exit status" "$MIG_EXIT_ST" 0
mig_stop "$b_pid"
sanitizer_check "$T"/*/passt.socket.err
