#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_synack_lost.sh - connections the guest opened, moved in their
# handshake with our SYN-ACK lost at the source: the guest is still in
# SYN-SENT when it runs on the target (migrate-lib.sh topology). So it is
# when the source's connect() completes once the switch-over has stopped
# the guest's RX ring, before the SAVE: the SYN-ACK goes nowhere, and the
# connection moves (migrate_handshake.sh moves one whose SYN-ACK the
# guest has). migrate_storm's "r11": the target waited for the guest's
# SYN to come again (1, 3, 7 s... after the first) to answer it, a RST
# from the peer meanwhile refused the guest's connect(), and whatever the
# peer sent waited.
#
# The guest's ingress drops what comes from ports 7611 to 7613 (a routing
# rule blackholes it, as in migrate_handshake.sh): the source connects to
# the peer at the guest's first SYN, and the guest never gets its
# SYN-ACK. Once the source has connected, the guest's SYNs to those ports
# are held back too (tc on its tap, in a class that sends a byte a
# second): its own retransmissions can't get it a SYN-ACK any more. The
# rule goes when the target has loaded the state, before the guest runs
# there (vu-front's "loaded" phase):
#   d4  7611, IPv4: the peer sends (256 KiB/s), the guest receives;
#   u6  7612, IPv6: the guest sends (256 KiB/s), the peer receives;
#   r4  7613, IPv4: the peer sends 2 MiB as fast as it can, then resets:
#       more than the sockets hold before the guest reads on the target.
#
# Checked: the source moves the three connections, the target restores
# them; with the guest's SYNs still held back, its three connections
# complete, d4 and u6 flow, byte-exact, with both FINs, and r4 ends with
# the peer's reset after data (the guest's connect() never refused); no
# RST from either pod or from the guest.
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

q() {
	ns "$GUEST" tc "$@" 2>/dev/null
}
# The slow class first, in debt (mig_slow_class)
mig_slow_class 7611

# The SYN-ACKs never reach the guest's sockets: rules before the local
# table's blackhole them
for f in -4 -6; do
	ns "$GUEST" ip "$f" rule add pref 10 iif tap0 ipproto tcp \
		sport 7611-7613 blackhole ||
		fail "the guest's blackhole rule ($f)"
	ns "$GUEST" ip "$f" rule add pref 100 lookup local
	ns "$GUEST" ip "$f" rule del pref 0
done

rst_guest0=$(mig_rsts "$GUEST") rst_src0=$(mig_rsts "$SRC")
refused0=$(nstat_get "$GUEST" TcpAttemptFails)
mig_stream d4 down4 7611 --rate 256
mig_stream u6 up6 7612 --rate 256
mig_stream_start r4 "$FABRIC" "$GUEST" "$PEER4" 7613 listen \
	--rst-after $((2 * 1024 * 1024))
ports="( dport = :7611 or dport = :7612 or dport = :7613 )"
wait_for "[ \$(ns $SRC ss -tnH state established '$ports' | wc -l) -eq 3 ]" 10 ||
	fail "the source didn't connect: $(ns "$SRC" ss -tnH)"
# From now on the guest's SYNs wait in the slow class
q filter add dev tap0 parent 1: protocol ip prio 2 u32 \
	match ip protocol 6 0xff match ip dport 7611 0xffff \
	match u8 0x02 0x02 at 33 flowid 1:4
q filter add dev tap0 parent 1: protocol ip prio 3 u32 \
	match ip protocol 6 0xff match ip dport 7613 0xffff \
	match u8 0x02 0x02 at 33 flowid 1:4
q filter add dev tap0 parent 1: protocol ipv6 prio 4 u32 \
	match ip6 dport 7612 0xffff match u8 0x02 0x02 at 53 flowid 1:4
expect "the guest's connections in SYN-SENT" \
	"$(ns "$GUEST" ss -tnH state syn-sent "$ports" | wc -l)" 3
expect "bytes the guest got before the migration" \
	$(($(mig_prog d4 c rx) + $(mig_prog r4 c rx))) 0

mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK b_log=$D_LOG b_pid=$D_PID
rst_dst0=$(mig_rsts "$DST")
mig_repair_ready src "$a_sock"
# The guest hears the target's SYN-ACKs, not the source's
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
[ "\$MIG_PHASE" = loaded ] || exit 0
ip -4 rule del pref 10 && ip -6 rule del pref 10
EOF
mig_migrate_switch "$b_sock" dst 0 || fail "migration: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
grep -q 'completed as source, 3 connection(s) moved' "$a_log" ||
	fail "source: $(grep Migration "$a_log" | tr '\n' ' ')"
grep -q 'target, 3 of 3 connection(s) restored' "$b_log" ||
	fail "target: $(grep Migration "$b_log" | tr '\n' ' ')"
expect "the guest's blackhole rules after the LOAD" \
	"$(ns "$GUEST" ip rule list pref 10; ns "$GUEST" ip -6 rule list pref 10)" ""

# The guest's SYNs are still held back: only the target's SYN-ACK can
# complete its connections
mig_all_flowing 16384 10 d4 u6 || {
	mig_diag d4 u6
	fail "not flowing with the guest's SYNs held back: $MIG_LAGGING; the guest's sockets: $(ns "$GUEST" ss -tnH "$ports" | tr -s ' \n' ' '); the target: $(grep -h 'Migration\|restored\|reset' "$b_log" | tr '\n' ' ')"
}
wait_for "[ \$(mig_prog r4 c end) != running ] && [ \$(mig_prog r4 l end) != running ]" 20 ||
	fail "r4 still open: guest $(cat "$T/r4.c.prog"), peer $(cat "$T/r4.l.prog")"
expect "r4: the peer's end" "$(mig_prog r4 l end)" rst-sent
expect "r4: the guest's end" "$(mig_prog r4 c end)" rst
[ "$(mig_prog r4 c rx)" -gt 0 ] ||
	fail "r4: the guest got nothing before the reset: $(cat "$T/r4.c.err")"
log "r4: the guest got $(mig_prog r4 c rx) bytes, then the reset"
q qdisc del dev tap0 root
mig_streams_verify d4 u6
expect "the guest's refused connections" \
	$(($(nstat_get "$GUEST" TcpAttemptFails) - refused0)) 0
expect "RSTs from the guest" $(($(mig_rsts "$GUEST") - rst_guest0)) 0
expect "RSTs from SRC" $(($(mig_rsts "$SRC") - rst_src0)) 0
expect "RSTs from DST" $(($(mig_rsts "$DST") - rst_dst0)) 0
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
expect "the source's exit status" "$MIG_EXIT_ST" 0
mig_stop "$b_pid"
sanitizer_check "$T"/*/passt.socket.err
