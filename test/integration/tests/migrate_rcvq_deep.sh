#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_rcvq_deep.sh - a receive queue deeper than a new socket's buffer
# (migrate-lib.sh topology, Debian's 212992 limits).
#
# The peer sends RCVQ bytes (default 360000) to the guest, which doesn't
# read them (sockio --pause-rx, a small receive buffer), and then stays
# idle: the source's socket holds almost all of them at the SAVE, nearly
# three times the buffer a new socket starts with (tcp_rmem's default,
# 131072). Writing them into the target's socket in repair mode goes
# through the checks data from the network goes through
# (tcp_try_rmem_schedule()): the kernel raises the buffer to what is
# queued (tcp_clamp_window()), and no further (doc/migration.md, section
# 11).
#
# Checked: the target restores the connection (no "can't be restored",
# the guest's end not reset), with the window the source advertised: its
# rcv_ssthresh, which caps every window a socket advertises and grows
# only as data arrives, at least 256 KiB (the source's: about 800 KiB; a
# new socket's, which the restored one kept before, 64 KiB: the peer got
# a window of 64 KiB once it had filled the old one, growing back a few
# segments per segment it sent); once the guest reads again, every byte
# arrives, in order, never stopping for more than MIG_STALL_MS (3 s,
# mig_watch); then the peer's FIN, and the guest's, and both ends
# exit cleanly; no RST from the target pod. Logged: both sockets' buffers
# and windows (ss -tinm).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

RCVQ=${RCVQ:-360000}

mig_setup
ns "$GUEST" sysctl -qw net.ipv4.tcp_rmem="4096 8192 8192"
# Room for the queue at the source; Debian's defaults at the target
ns "$SRC" sysctl -qw net.ipv4.tcp_rmem="4096 $((RCVQ * 3)) 6291456"
ns "$DST" sysctl -qw net.ipv4.tcp_rmem="4096 131072 6291456"
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID

mig_stream d down4 7611 --pause-rx --rx-file "$T/d.rx" --bytes "$RCVQ" \
	--fin-file "$T/d.fin"
wait_for "[ \$(mig_prog d l tx) -ge $RCVQ ]" 30 ||
	fail "the peer sent only $(mig_prog d l tx) of $RCVQ bytes"
wait_for "[ \$(ns $SRC ss -tnH state established '( dport = :7611 )' |
	  awk '{ print \$1 }') -ge $((RCVQ - 65536)) ]" 10 ||
	fail "the source's receive queue holds only $(ns "$SRC" ss -tnH state established '( dport = :7611 )' | awk '{ print $1 }') bytes"
log "source: $(mig_ss_info "$SRC" -m state established '( dport = :7611 )')"

mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK b_log=$D_LOG
mig_repair_ready src "$a_sock"
rst0=$(mig_rsts "$DST")
mig_migrate_switch "$b_sock" dst 0 || fail "$MIG_RESULT"
log "target: $(grep 'Migration' "$b_log" | tr '\n' ' ')"
! grep -q "can't be restored" "$b_log" ||
	fail "the target couldn't restore the receive queue: $(grep "can't be restored" "$b_log")"
log "target, restored: $(mig_ss_info "$DST" -m state established '( dport = :7611 )')"
# The window's growth came along: a new socket's rcv_ssthresh, which caps
# every window it advertises, is its initial window (64 KiB)
ssth=$(mig_ss_field "$DST" rcv_ssthresh state established '( dport = :7611 )')
[ "${ssth:-0}" -ge 262144 ] ||
	fail "the restored socket's rcv_ssthresh is ${ssth:-unknown}, the source's was $(mig_ss_field "$SRC" rcv_ssthresh state established '( dport = :7611 )')"
[ "$(mig_prog d c end)" = running ] ||
	fail "the guest's end is $(mig_prog d c end) after the migration"

touch "$T/d.rx"
# Nothing moved while the guest didn't read; now it all flows, in one go
mig_watch d
mig_stream_wait_rx d c "$RCVQ" 20 ||
	fail "the guest got $(mig_prog d c rx) of $RCVQ bytes: $(mig_ss_info "$DST" -m '( dport = :7611 )')"
mig_watch_stop
log "d's longest pause once the guest read:$(mig_pauses d)"
touch "$T/d.fin"
MIG_VERIFY_TIMEOUT=30 mig_streams_verify d
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst0)) 0
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
sanitizer_check "$T"/*/passt.socket.err
