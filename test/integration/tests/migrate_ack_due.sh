#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_ack_due.sh - a source whose records look like connections in
# their handshake (migrate-lib.sh topology).
#
# Upstream's passt sets ACK_FROM_TAP_DUE (0x10 in a flow record's flags)
# whenever it waits for an ACK from the guest, and right after it rewinds
# (a retransmission to the guest) its seq_to_tap equals seq_ack_from_tap.
# A download's guest never sends a byte, so its seq_from_tap is its SYN's
# plus one. That is just what our source writes for a connection whose
# SYN-ACK the guest hasn't acknowledged, and our target restored it as one
# in its handshake: the SYN-ACK again, and nothing else until the guest's
# ACK of it. The guest, established long before and ahead of what the
# source knew it had, answered with an ACK past the SYN-ACK, which the
# target dropped: the download stopped for good (migrate_interop, upstream
# as the source, about one run in twenty).
#
# Here our own source's records get the flag on their way to the target
# (vu-front --state-flags-or 0x10): every download looks like that. Two
# downloads and an upload over each of IPv4 and IPv6. Before the
# migration the guest's segments to the downloads' ports are held back (a
# tc class that sends nothing: mig_slow_class), so that each guest has
# data the source doesn't know it got; they go when the migration is
# done. Every stream must move again after it (the fabric switched at
# once), every byte verified, no RST from either pod.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
MIG_VU_OPTS="--state-flags-or 0x10"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"

mig_setup
mig_guest_start --migrate-linger-timeout 600
src_sock=$D_SOCK src_pid=$D_PID

mig_stream a down4 7501 --rate 2048 -t 300
mig_stream b down4 7502 --rate 2048 -t 300
mig_stream c up4 7503 --rate 256 -t 300
mig_stream d down6 7504 --rate 2048 -t 300
mig_stream e down6 7505 --rate 2048 -t 300
mig_stream f up6 7506 --rate 256 -t 300
mig_all_flowing 16384 15 a b c d e f || fail "not flowing: $MIG_LAGGING"

# The downloads' ACKs held from now on (mig_slow_class, UDP port 7599)
need tc
mig_slow_class 7599
q() {
	ns "$GUEST" tc filter add dev tap0 parent 1: "$@" flowid 1:4
}
for p in 7501 7502; do
	q protocol ip prio 2 u32 match ip protocol 6 0xff match ip dport $p 0xffff
done
for p in 7504 7505; do
	q protocol ipv6 prio 3 u32 match ip6 dport $p 0xffff
done
# Each guest now gets what the source won't see it ACK. How much depends on
# the window the guest last showed and on whether the source still reads
# its sockets with that much in flight (tcp/to_guest.c, tcp_quiet()): on
# a busy machine, sometimes less than asked here, and the test goes on
# (what it checks is what follows the migration)
mig_all_flowing 8192 10 a b d e ||
	log "not all ahead by 8 KiB before the migration: $MIG_LAGGING"

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
mig_migrate_switch "$dst_sock" dst 0 || fail "migration: $MIG_RESULT"
grep -q 'flags 0x10 added to 6 flow record' "$T/vu-front.err" ||
	fail "vu-front didn't flag the 6 records: $(grep 'state:' "$T/vu-front.err")"
grep -q 'target, 6 of 6 connection(s) restored' "$dst_log" ||
	fail "target: $(grep Migration "$dst_log" | tr '\n' ' ')"
ns "$GUEST" tc qdisc del dev tap0 root
mig_all_flowing 16384 15 a b c d e f ||
	fail "not flowing after the migration: $MIG_LAGGING"
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignored SIGUSR2"
mig_streams_verify a b c d e f
rst_src=$(($(mig_rsts "$SRC") - rst_src0))
rst_dst=$(($(mig_rsts "$DST") - rst_dst0))
[ "$rst_src" -eq 0 ] || fail "SRC sent $rst_src RSTs"
[ "$rst_dst" -eq 0 ] || fail "DST sent $rst_dst RSTs"
mig_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
