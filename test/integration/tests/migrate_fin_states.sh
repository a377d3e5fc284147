#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_fin_states.sh - connections in every FIN state the source's
# kernel can hold at the SAVE, restored by our target (migrate-lib.sh
# topology, Debian's 212992 limits). The peer listens, the guest connects:
#
#   cw  CLOSE_WAIT: the peer sent 3000 bytes and its FIN, the guest keeps
#       sending to the peer;
#   la  LAST_ACK: the same, and the guest sent 3000 bytes and its FIN
#       while the source pod was cut off the fabric: our FIN not
#       acknowledged at the SAVE;
#   f1  FIN_WAIT1: the guest sent 3000 bytes and its FIN, cut off the
#       same way, the peer sends nothing yet (its FIN comes later);
#   fq  FIN_WAIT1 with never-sent data: the guest sent 8000 bytes and its
#       FIN to a peer that doesn't read (4 KiB receive buffer);
#   f2  FIN_WAIT2: the guest sent 3000 bytes and its FIN, acknowledged,
#       and the peer is idle (it sends its data and FIN later).
#
# The kernel restores every connection as ESTABLISHED (connect() in repair
# mode); a FIN we had sent is queued again with shutdown(), and one the
# peer had sent stays in the flow (nothing in TCP_REPAIR takes a received
# FIN: tcp_send_rcvq() queues data only), see doc/migration.md, section
# 2.6. The fabric switches on the target's RARP, as OVN's
# activation-strategy=rarp does. Checked: the migration restores all
# five; every byte of both directions arrives, in order, and both ends
# see the other's EOF (no reset), cw's upload never getting nothing for
# more than MIG_STALL_MS (3 s) from the switch on (mig_watch); no RST
# leaves the target pod; f2's socket on the target is back in FIN-WAIT-2
# within 5 s. Logged: the states of the sockets on both sides, and when
# f2's got back to FIN-WAIT-2 (its FIN, queued in repair mode, counts as
# sent and isn't probed: its tail loss probe, a second after the restore,
# brings the peer's acknowledgement; sent after repair mode, as it was
# tried, it went out before the fabric had switched, a few milliseconds
# after the RARP, and came to the same).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
# shellcheck source=activation-lib.sh
. "$(dirname "$0")/../activation-lib.sh"
need busybox tcpdump

RATE=64

# conn NAME PORT LISTENER_OPTIONS CONNECTOR_OPTIONS: a pattern connection,
# the peer listening, the guest connecting (pids in SL_NAME, SC_NAME)
conn() {
	_cn=$1 _cp=$2 _cl=$3 _cc=$4
	rm -f "$T/$_cn.ready" "$T/$_cn.stop"
	# shellcheck disable=SC2086
	bg "$FABRIC" "$_cn.l" /dev/null /dev/null "$SOCKIO" -t 120 --report \
		--ready "$T/$_cn.ready" --progress "$T/$_cn.l.prog" \
		--stop-file "$T/$_cn.stop" $_cl pattern-listen "$PEER4" "$_cp"
	eval "SL_$_cn=$BG_PID"
	wait_ready "$T/$_cn.ready"
	# shellcheck disable=SC2086
	bg "$GUEST" "$_cn.c" /dev/null /dev/null "$SOCKIO" -t 120 --report \
		--progress "$T/$_cn.c.prog" --stop-file "$T/$_cn.stop" \
		$_cc pattern-connect "$PEER4" "$_cp"
	eval "SC_$_cn=$BG_PID"
}

# in_state NS PORT STATE: the pod's socket to the peer's PORT is in STATE
in_state() {
	ns "$1" ss -tnH state "$3" "( dport = :$2 )" | grep -q .
}

# wait_state NAME PORT STATE
wait_state() {
	wait_for "in_state $SRC $2 $3" 15 ||
		fail "$1: no $3 socket in the source pod: $(ns "$SRC" ss -tnH "( dport = :$2 )")"
}

mig_setup
mig_guest_start --migrate-linger-timeout 600
a_sock=$D_SOCK a_pid=$D_PID

conn cw 7621 "--send --bytes 3000" "--send --rate $RATE"
# shellcheck disable=SC2034 # for mig_watch (eval): the guest sends
KIND_cw=up4 PORT_cw=7621
conn la 7622 "--send --bytes 3000" "--send --bytes 3000 --fin-file $T/la.fin"
conn f1 7623 "--send --bytes 3000 --fin-file $T/f1.pfin" \
	"--send --bytes 3000 --fin-file $T/f1.fin"
conn fq 7624 "--pause-rx --rcvbuf 4096" "--send --bytes 8000"
conn f2 7625 "--send --bytes 3000 --fin-file $T/f2.pfin" "--send --bytes 3000"
wait_state cw 7621 close-wait
wait_state fq 7624 fin-wait-1
wait_state f2 7625 fin-wait-2
wait_for "[ \$(mig_prog la c rx) -ge 3000 ] && [ \$(mig_prog la l rx) -ge 3000 ] &&
	  [ \$(mig_prog f1 c rx) -ge 3000 ] && [ \$(mig_prog f1 l rx) -ge 3000 ]" 15 ||
	fail "la, f1: not all data through"
wait_state la 7622 close-wait

# Our FINs of la and f1 don't reach the peer: the source pod is cut off
mig_pod_link src down
touch "$T/la.fin" "$T/f1.fin"
wait_state la 7622 last-ack
wait_state f1 7623 fin-wait-1
log "source: $(ns "$SRC" ss -tnH '( dport >= :7621 and dport <= :7625 )' | tr -s ' \n' ' ')"

mig_pod_daemon dst target --migrate-linger-timeout 600
b_sock=$D_SOCK b_log=$D_LOG b_pid=$D_PID
mig_repair_ready src "$a_sock"
rst0=$(mig_rsts "$DST")
# The fabric switches on the target's RARP (OVN's activation-strategy=rarp:
# our daemon holds CAP_NET_RAW here), which goes before the sockets leave
# repair mode (doc/migration.md, section 10.1)
act_migrate "$b_sock" dst 3000 || fail "$MIG_RESULT"
[ "$ACT_HOW" = rarp ] || fail "the fabric switched on $ACT_HOW, not on a RARP"
# cw's upload goes on from the switch (it waited since the source pod
# was cut off)
mig_guest_daemon "$b_pid" "$b_log"
mig_watch cw
grep -q "target, 5 of 5 connection(s) restored" "$b_log" ||
	fail "target: $(grep 'Migration' "$b_log" | tr '\n' ' ')"
sw=$(now_ms)
wait_for "in_state $DST 7625 fin-wait-2" 5 ||
	fail "f2: the target's socket isn't in FIN-WAIT-2: $(ns "$DST" ss -tinH '( dport = :7625 )' | tr -s ' \n' ' ')"
log "f2: FIN-WAIT-2 on the target $(($(now_ms) - sw)) ms after the switch"
log "target: $(ns "$DST" ss -tnH '( dport >= :7621 and dport <= :7625 )' | tr -s ' \n' ' ')"

mig_all_flowing 16384 20 cw || fail "cw's upload stopped: $MIG_LAGGING"
mig_watch_stop
log "cw's longest pause after the switch:$(mig_pauses cw)"

# The peer's FINs of f1 and f2 now, then everything ends
touch "$T/f1.pfin" "$T/f2.pfin"
bad=
for n in cw la f1 fq f2; do
	touch "$T/$n.stop"
done
for n in cw la f1 fq f2; do
	_l= _c=
	eval "_l=\$SL_$n _c=\$SC_$n"
	bg_wait "$_l" 20 || :
	_sl=$BG_ST
	bg_wait "$_c" 20 || :
	_sc=$BG_ST
	_ltx=$(mig_prog "$n" l tx) _lrx=$(mig_prog "$n" l rx)
	_ctx=$(mig_prog "$n" c tx) _crx=$(mig_prog "$n" c rx)
	log "$n: peer->guest $_ltx/$_crx guest->peer $_ctx/$_lrx end peer=$(mig_prog "$n" l end) guest=$(mig_prog "$n" c end) status=$_sl/$_sc"
	if [ "$_sl" != 0 ] || [ "$_sc" != 0 ] || [ "$_ltx" != "$_crx" ] ||
	   [ "$_ctx" != "$_lrx" ] || [ "$(mig_prog "$n" l end)" != eof ] ||
	   [ "$(mig_prog "$n" c end)" != eof ]; then
		bad="$bad $n"
	fi
done
[ -z "$bad" ] || fail "not byte-exact or not ended by both EOFs:$bad"
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst0)) 0
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "the source ignores SIGUSR2"
sanitizer_check "$T"/*/passt.socket.err
