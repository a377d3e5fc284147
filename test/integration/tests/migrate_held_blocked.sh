#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_held_blocked.sh - connections that waited for room to the guest
# when the migration held them, held until a late repair helper takes them
# back, must still end (migrate-lib.sh topology; two streams, peer ->
# guest, IPv4, slow enough that the daemon reads every arrival):
#
#  1. QEMU stops the rings for the SAVE; data from the peers comes before
#     the SAVE: no room to the guest, both connections wait for room
#     (TCP_F_BLOCKED, seen in the daemon's SIGUSR1 dump of its
#     connections).
#  2. The source's helper dies once the state is saved, the migration is
#     cancelled: the connections stay held (repair mode) while the guest
#     runs here again, for loop rounds with room to spare. The peer of
#     one ("k5") sends its last data and its FIN meanwhile, to a deaf
#     socket: it sends them again until they get through.
#  3. A new helper takes them back; they move; "k5" ends, then the peer of
#     the other ("k4") stops and closes: each receiver in the guest must
#     get every byte and the FIN (sockio exits 0). A connection that came
#     back still marked as waiting for room, with nothing listing it for a
#     retry any more, sent its data (a send doesn't look at the mark) but
#     never the FIN, which waits until the mark is gone.
# PT_TIMEOUT: 180
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox
[ "$MIG_DIRECT" = 0 ] || skip "the test kills the repair helper"

# flags N: the flags of the last N connections the daemon's log shows
# (its SIGUSR1 dump)
flags() {
	grep -o 'flags 0x[0-9a-f]*' "$a_log" | tail -n "$1" | cut -c9-
}

# ended NAME: stream NAME ends (mig_streams_verify); if it doesn't, fail
# with where the daemon's ends stand (a flow is gone once it ended)
ended() {
	MIG_VERIFY_TIMEOUT=20 MIG_VERIFY_NOFAIL=1 mig_streams_verify "$1" &&
		return 0
	_sz=$(stat -c %s "$a_log")
	kill -USR1 "$a_pid"
	wait_for "[ \$(stat -c %s '$a_log') -gt $_sz ]" 10 || :
	fail "3: $1 didn't end: $(tail -c +$((_sz + 1)) "$a_log" | grep 'flags 0x' | tr '\n' ' ')"
}

mig_setup
mig_guest_start --migrate-linger-timeout 600 --debug
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG
a_helper=$MIG_RPID
# 16 KiB/s, at most 20 sends a second: less than a frame each, so the
# guest never has enough in flight for input events to go off
# (TCP_F_QUIET): each arrival is read at once
mig_stream k4 down4 7411 --rate 16
mig_stream k5 down4 7412 --rate 16
mig_all_flowing 8192 20 k4 k5 || fail "not flowing: $MIG_LAGGING"

# 1., 2. Blocked at the stop, held past the SAVE, the helper gone
mig_pod_daemon dst target --migrate-linger-timeout 600
b_pid=$D_PID
mig_hook_until >"$MIG_PHASE_HOOK"
cat >>"$MIG_PHASE_HOOK" <<EOF
# Both connections of the daemon's last SIGUSR1 dump wait for room
blocked() {
	_n=0
	for _f in \$(grep -o 'flags 0x[0-9a-f]*' '$a_log' | tail -n 2 | cut -c9-); do
		[ \$((0x\$_f & 0x40)) -eq 0 ] || _n=\$((_n + 1))
	done
	[ \$_n -eq 2 ]
}
case \$MIG_PHASE in
stopped)
	until_ok "kill -USR1 $a_pid && blocked" || exit 1
	;;
saved)
	kill -KILL $a_helper
	until_ok "! ip netns exec $SRC ss -xH state established | grep -qF '$a_sock.repair'"
	;;
esac
EOF
rst0=$(mig_rsts "$SRC")
mig_cancel || fail "2: $MIG_RESULT"
rm -f "$MIG_PHASE_HOOK"
[ -n "$(flags 2)" ] || fail "1: no connection dump in the log"
for f in $(flags 2); do
	[ $((0x$f & 0x40)) -ne 0 ] ||
		fail "1: a connection didn't wait for room at the SAVE: flags $(flags 2 | tr '\n' ' ')"
done
grep -q "2 connection(s) can't leave repair mode without the passt-repair helper" "$a_log" ||
	fail "2: $(grep Migration "$a_log" | tail -n 3 | tr '\n' ' ')"
mig_stop "$b_pid"
# A loop round ends after the guest runs here again (the signal's), with
# room: the daemon retries what waited for room then
sz=$(stat -c %s "$a_log")
kill -USR1 "$a_pid"
wait_for "[ \$(stat -c %s '$a_log') -gt $sz ]" 10 ||
	fail "2: the daemon doesn't answer SIGUSR1"
# k5's peer stops and closes while held: its FIN is out (FIN-WAIT-1)
touch "$T/k5.stop"
wait_for "ns $FABRIC ss -tH state fin-wait-1 '( sport = :7412 )' | grep -q ." 10 ||
	fail "2: k5's peer didn't close: $(ns "$FABRIC" ss -tH '( sport = :7412 )')"
log "1, 2: blocked at the stop, held by a cancelled migration, helper gone; k5's peer closed"

# 3. A new helper takes them back; the streams go on, and end
mig_repair_ready src "$a_sock"
wait_for "grep -q 'a repair helper connected or answered: 2 connection(s) held by the failed migration resumed' '$a_log'" 10 ||
	fail "3: $(grep Migration "$a_log" | tail -n 3 | tr '\n' ' ')"
mig_all_flowing 8192 20 k4 || fail "3: not flowing: $MIG_LAGGING"
expect "3: RSTs from the source pod" $(($(mig_rsts "$SRC") - rst0)) 0
ended k5
ended k4
log "3: taken back by a new helper, both streams moved and ended: every byte and the FIN"
sanitizer_check "$T"/*/passt.socket.err
