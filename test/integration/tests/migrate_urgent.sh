#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_urgent.sh - urgent data from a peer, in the receive queue when
# the state is taken (migrate-lib.sh topology).
#
# The peer streams the pattern to the guest, byte 65536 of it sent alone
# as urgent data (MSG_OOB); the guest doesn't read (sockio --pause-rx, a
# small receive buffer), so the source's socket still holds the urgent
# byte and much after it at the migration. Without SO_OOBINLINE the kernel
# keeps the urgent byte out of line: SIOCINQ stops at its mark, the dump
# took the queue up to it, and the guest lost everything between the mark
# and what the peer sent after the migration. Checked: the guest reads,
# once migrated, every byte in order, the urgent one inline where the
# peer sent it (we don't carry urgency to the guest: a byte of the stream
# like the others).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

OOB=65536

mig_setup
ns "$GUEST" sysctl -qw net.ipv4.tcp_rmem="4096 8192 16384"
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID

mig_stream u down4 7601 --rate 512 --pause-rx --oob-at "$OOB"
wait_for "[ \$(mig_prog u l tx) -gt $((OOB + 32768)) ]" 20 ||
	fail "the peer sent only $(mig_prog u l tx) bytes"
# The source's socket holds the urgent byte: the guest took little
inq=$(ns "$SRC" ss -tnH state established '( dport = :7601 )' | awk '{ print $1 }')
log "the source's receive queue: $inq bytes; the peer sent $(mig_prog u l tx)"

mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK
mig_repair_ready src "$a_sock"
mig_migrate_switch "$b_sock" dst 0 || fail "$MIG_RESULT"
mig_streams_verify u
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
sanitizer_check "$T"/*/passt.socket.err
