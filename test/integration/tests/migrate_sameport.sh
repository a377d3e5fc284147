#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_sameport.sh - connections that share a local port (migrate-lib.sh
# topology). Linux gives two outbound connections the same local port
# when their destinations differ; with 100 connections that happens by
# chance (bench/migrate-scale.sh hit it). Here it is forced: the SRC pod's
# ip_local_port_range is one port, so the daemon's sockets for three
# guest connections to the peer (two peer -> guest over IPv4 and IPv6 on
# ports 7401 and 7403, one guest -> peer over IPv4 on 7402) all use local
# port 40000. The guest migrates from SRC to DST, and the target must
# restore every connection: a socket that leaves repair mode stops
# allowing other binds to its port, so the next one bound to it must not
# lose the forced reuse that repair mode gives it.
#
# Checked: every connection restored ("N of N" in the target's log),
# every stream moves on, no RST from either pod, every byte verified.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

mig_setup
ns "$SRC" sysctl -qw net.ipv4.ip_local_port_range="40000 40000"
# A long linger: on a loaded machine the checks take a while, and the
# source must still be holding when it gets SIGUSR2
mig_guest_start --migrate-linger-timeout 600
src_sock=$D_SOCK src_pid=$D_PID

mig_stream a down4 7401 --rate 256 -t 300
mig_stream b up4 7402 --rate 256 -t 300
mig_stream c down6 7403 --rate 256 -t 300
mig_all_flowing 16384 15 a b c || fail "not flowing: $MIG_LAGGING"
shared=$(ns "$SRC" ss -tnH state established '( sport = :40000 )' | wc -l)
[ "$shared" -eq 3 ] ||
	fail "$shared connections on local port 40000 in SRC, not 3: $(ns "$SRC" ss -tnH)"

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
mig_migrate_switch "$dst_sock" dst 0 || fail "migration: $MIG_RESULT"
grep 'Migration:' "$dst_log" >&2
grep -q 'target, 3 of 3 connection(s) restored' "$dst_log" ||
	fail "the target didn't restore all 3 connections sharing a local port"
mig_all_flowing 16384 20 a b c || fail "not flowing after: $MIG_LAGGING"
kill -USR2 "$src_pid"
mig_exit_wait "$src_pid" 10 || fail "the source ignored SIGUSR2"
mig_streams_verify a b c
rst_src=$(($(mig_rsts "$SRC") - rst_src0))
rst_dst=$(($(mig_rsts "$DST") - rst_dst0))
[ "$rst_src" -eq 0 ] || fail "SRC sent $rst_src RSTs"
[ "$rst_dst" -eq 0 ] || fail "DST sent $rst_dst RSTs"
mig_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
