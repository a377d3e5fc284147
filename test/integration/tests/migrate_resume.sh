#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_resume.sh - after the fabric switch, the target pokes its peers
# (migrate-lib.sh topology; doc/migration.md, "Resuming after the fabric
# switch"). Two pattern streams: "down" (peer -> guest, port 7201) and
# "up" (guest -> peer, port 7202). The guest migrates from SRC to DST and
# the fabric keeps routing the pod address to SRC for MIG_HOLD_MS
# (default 3000) after the target started the guest; right after the
# switch the target gets SIGUSR2 ("the fabric has switched"), from the
# same hook that switches the routes.
#
# Checked:
#   - the target logs that it poked its restored connection(s);
#   - the peer's segments on the "up" connection reach the target after
#     the switch (tcpdump on the fabric's link to DST, --immediate-mode:
#     a capture that stops before its ring is read loses the last second);
#   - the target was poking: a window probe (an ACK without data) on that
#     connection in the second before the switch or after it, up to the
#     peer's first segment;
#   - both streams move again, every byte arrives in order, no RST from
#     either pod.
# How long each stream took is logged, not checked (the machine is shared):
# bench/migrate-resume.sh measures it, with and without the pokes. "down"
# waits for the peer's own retransmission timer (see the doc).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need tcpdump

MIG_HOLD_MS=${MIG_HOLD_MS:-3000}
DPORT=7201
UPORT=7202

mig_setup
mig_guest_start
src_sock=$D_SOCK src_pid=$D_PID

mig_stream down down4 "$DPORT" --rate 2048
mig_stream up up4 "$UPORT" --rate 2048
for s in down up; do
	mig_flowing "$s" 65536 15 ||
		fail "stream $s does not flow: $(cat "$T/$s".*.err)"
done

mig_pod_daemon dst target
dst_sock=$D_SOCK dst_pid=$D_PID dst_log=$D_LOG
mig_repair_ready src "$src_sock"
rst_src0=$(mig_rsts "$SRC")
rst_dst0=$(mig_rsts "$DST")
# Both ways on the fabric's link to DST
mig_cap_start "$FABRIC" fd todst inout
cap=$CAP_PID

# The hook vu-front runs when the target starts the guest: wait, switch,
# tell the target
rm -f "$T/migrate.switched"
cat >"$MIG_HOOK" <<EOH
sleep $(awk "BEGIN { print $MIG_HOLD_MS / 1000 }")
printf '%s\n' 'route replace $ADDR4/32 dev fd' 'route replace $ADDR6/128 dev fd' |
	ip -n '$FABRIC' -batch -
date +%s%N >'$T/migrate.switched.tmp'
kill -USR2 $dst_pid
mv '$T/migrate.switched.tmp' '$T/migrate.switched'
EOH
mig_migrate "$dst_sock" || fail "migration: $MIG_RESULT"
wait_for "[ -e '$T/migrate.switched' ]" $((15 + MIG_HOLD_MS / 1000)) ||
	fail "the fabric did not switch"
rm -f "$MIG_HOOK"
sw=$(($(cat "$T/migrate.switched") / 1000000))
log "switch $((sw - $(mig_field at_ms))) ms after the target started the guest"

for s in down up; do
	mig_flowing "$s" 65536 20 ||
		fail "stream $s does not resume after the switch"
done
mig_cap_stop "$cap"
mig_cap_text todst >"$T/todst.txt"
# The source's linger may have timed out already on a slow machine
kill -USR2 "$src_pid" 2>/dev/null || :
mig_exit_wait "$src_pid" 10 || fail "the source ignored SIGUSR2"
[ "$MIG_EXIT_ST" = 0 ] || fail "the source exited with status $MIG_EXIT_ST"

grep -q "SIGUSR2: the fabric switched, poking [1-9]" "$dst_log" ||
	fail "the target did not poke: $(grep SIGUSR2 "$dst_log")"

# first_from PORT DATA: ms from the switch to the peer's first segment
# from PORT to the target (DATA 1: with payload), "none" if none
first_from() {
	awk -v sw="$sw" -v p="$1" -v data="$2" '
	{
		t = $1 * 1000
		if (t < sw || $3 !~ ("\\." p "$"))
			next
		if (data && !match($0, /length [1-9]/))
			next
		printf "%d\n", t - sw; found = 1; exit
	}
	END { if (!found) print "none" }' "$T/todst.txt"
}
up_ms=$(first_from "$UPORT" 0)
down_ms=$(first_from "$DPORT" 1)
log "resume after the switch: up (the peer's first ACK at the target)" \
	"$up_ms ms, down (the peer's first data) $down_ms ms"
[ "$up_ms" != none ] || fail "no segment from the peer on the up connection"

# The pokes: on the up connection the peer sends no data, so the target
# never has to acknowledge anything there: a segment without data from
# the target to the peer's port is a window probe. The target pokes every
# 600 ms: one must be in the second before the switch, or after it, up
# to the peer's first ACK
awk -v sw="$sw" -v up="$up_ms" -v p="$UPORT" '
	$5 ~ ("\\." p ":$") && / length 0/ && $0 ~ /Flags \[\.\]/ &&
	$1 * 1000 >= sw - 1000 && $1 * 1000 <= sw + up + 1 { found = 1; exit }
	END { exit !found }' "$T/todst.txt" ||
	fail "no window probe from the target on the up connection around the switch"

mig_streams_verify down up
rst_src=$(($(mig_rsts "$SRC") - rst_src0))
rst_dst=$(($(mig_rsts "$DST") - rst_dst0))
[ "$rst_src" -eq 0 ] || fail "SRC sent $rst_src RSTs"
[ "$rst_dst" -eq 0 ] || fail "DST sent $rst_dst RSTs"
alive "$dst_pid" || fail "the target died"
mig_daemon_stop "$dst_pid"
sanitizer_check "$T"/*/passt.socket.err
