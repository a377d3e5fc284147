#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_closed.sh - a connection that ended cleanly on the source's
# socket, both FINs exchanged and the peer gone, while the guest hasn't
# read everything yet (migrate-lib.sh topology).
#
# The guest connects to the peer and shuts its side down at once (sockio
# tcp-connect, stdin empty); the peer sends 96 KiB, then its FIN, and
# exits (its socket closes: no socket for that 4-tuple any more). The
# guest doesn't read meanwhile (its output is a FIFO nobody reads, its
# receive buffer small), so the source's socket, in CLOSE, still holds
# the rest. Migrated, the target must deliver that rest and the EOF to the
# guest without ever writing to the peer: a window probe, a FIN sent
# again, or a window update would meet no socket there, and the RST that
# comes back would take the bytes the guest hasn't read. Checked: while
# the guest is slow to read (4 s), nothing from the target pod to the
# peer's port and no RST from the peer; then the guest gets every byte
# and a clean EOF. (Once the guest is done, closing the socket sends the
# peer a FIN, which its kernel may answer with a RST: nobody is left to
# lose anything by then.)
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tcpdump cmp

LEN=98304

mig_setup
ns "$GUEST" sysctl -qw net.ipv4.tcp_rmem="4096 8192 16384"
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID

head -c "$LEN" /dev/urandom >"$T/data"
mkfifo "$T/guest.fifo"
bg "$FABRIC" peer "$T/data" /dev/null "$SOCKIO" -t 60 --report \
	--ready "$T/peer.ready" --wait-eof tcp-listen "$PEER4" 7501
peer_pid=$BG_PID
wait_ready "$T/peer.ready"
# The FIFO's reader opens it and doesn't read, until told to
bg "$GUEST" hold /dev/null /dev/null sh -c \
	"exec 3<'$T/guest.fifo'; while [ ! -e '$T/read' ]; do sleep 0.05; done; cat <&3 >'$T/got'"
hold_pid=$BG_PID
bg "$GUEST" guest /dev/null "$T/guest.fifo" "$SOCKIO" -t 60 --report \
	tcp-connect "$PEER4" 7501
guest_pid=$BG_PID
# The peer sent it all and left; the source's socket is closed cleanly
bg_wait "$peer_pid" 30 || fail "the peer didn't finish: $(cat "$T/peer.err")"
expect "the peer's end" "$BG_ST" 0
wait_for "! ns $FABRIC ss -tnH state connected '( sport = :7501 )' | grep -q ." 20 ||
	fail "the peer's socket is still there: $(ns "$FABRIC" ss -tnH '( sport = :7501 )')"
wait_for "[ -z \"\$(ns $SRC ss -tnH state established state fin-wait-1 state fin-wait-2 state close-wait state last-ack '( dport = :7501 )')\" ]" 10 ||
	fail "the source's socket isn't closed: $(ns "$SRC" ss -tnH '( dport = :7501 )')"
log "peer: $(tr '\n' ' ' <"$T/peer.err")"

mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK
mig_repair_ready src "$a_sock"
mig_cap_start "$FABRIC" fd closed in
cap=$CAP_PID
rst0=$(nstat_get "$FABRIC" TcpOutRsts)
mig_migrate_switch "$b_sock" dst 0 || fail "$MIG_RESULT"
grep -q 'target, 1 of 1 connection(s) restored' "$D_LOG" ||
	fail "target: $(grep Migration "$D_LOG" | tr '\n' ' ')"
# The guest is slow to read: 4 s in which the target must send the peer
# nothing (a FIN sent again comes after 1 to 3 s)
! wait_for "mig_cap_text closed | grep -q '\.7501: '" 4 2>/dev/null ||
	fail "the target pod wrote to the peer's port while the guest hadn't read everything: $(mig_cap_text closed | head -n 3)"
expect "RSTs from the peer" $(($(nstat_get "$FABRIC" TcpOutRsts) - rst0)) 0
touch "$T/read"
bg_wait "$guest_pid" 20 || fail "the guest's end didn't finish"
expect "the guest's end" "$BG_ST" 0
bg_wait "$hold_pid" 5 || :
cmp "$T/data" "$T/got" ||
	fail "the guest got $(wc -c <"$T/got") bytes of $LEN, or other bytes"
log "guest: $(tr '\n' ' ' <"$T/guest.err")"
mig_cap_stop "$cap"
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
sanitizer_check "$T"/*/passt.socket.err
