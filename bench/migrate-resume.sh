#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate-resume.sh - how long TCP streams take to move again after the
# fabric switches to the migration target (doc/migration.md, "Resuming
# after the fabric switch"). As root, on the migrate-lib.sh topology of
# the integration tests (no QEMU: vu-front migrates a namespace's kernel).
#
# Two pattern streams run through every migration: "down" (peer -> guest,
# port 7101) and "up" (guest -> peer, port 7102). The guest migrates back
# and forth between the two pods; the fabric keeps routing the pod address
# to the source for W ms after the target started the guest (a hook run
# by vu-front at that moment, so W is exact). The figure is the time from
# the switch until the first of the peer's segments reaches the target
# (tcpdump on the fabric's link to the target): for "down" the peer's
# first data segment (its retransmission; the guest sees new bytes right
# after), for "up" the peer's first ACK (our sender goes on with it).
#
# Three modes, all with the same source:
#   before  the target built with -DTCP_MIGRATE_NO_POKE (PASST_NOPOKE):
#           only the window probe at the restore
#   poke    our target: periodic pokes after the restore
#   signal  our target, and SIGUSR2 to it right after the switch (what
#           the launcher does: "the fabric has switched")
# Environment: PASST (our daemon), PASST_NOPOKE (the no-poke build; mode
# "before" is left out without it), TOOLS, RESUME_WS (ms, default
# "0 500 1000 3000"), RESUME_RUNS (default 3), RESUME_MODES (default
# "before poke signal"). Prints one table of medians (ms), the raw figures
# on stderr.
set -eu
BENCH_TOP=$(cd "$(dirname "$0")/.." && pwd)
export PASST=${PASST:-$BENCH_TOP/build/passt}
export TOOLS=${TOOLS:-$BENCH_TOP/build/test/tools}
PT_ID=${PT_ID:-br$$}
# shellcheck source=../test/integration/lib.sh
. "$BENCH_TOP/test/integration/lib.sh"
# shellcheck source=../test/integration/vu.sh
. "$BENCH_TOP/test/integration/vu.sh"
# shellcheck source=../test/integration/migrate-lib.sh
. "$BENCH_TOP/test/integration/migrate-lib.sh"
need tcpdump

RESUME_WS=${RESUME_WS:-0 500 1000 3000}
RESUME_RUNS=${RESUME_RUNS:-3}
RESUME_MODES=${RESUME_MODES:-before poke signal}
if [ -z "${PASST_NOPOKE:-}" ]; then
	RESUME_MODES=$(printf '%s\n' $RESUME_MODES | grep -vx before | tr '\n' ' ')
fi
DPORT=7101
UPORT=7102

# resume_switch SOCK POD W SIGPID: migrate to the daemon at SOCK in POD;
# W ms after the target started the guest, the fabric routes to POD, and
# (SIGPID not empty) SIGPID gets SIGUSR2. RESUME_SW: the switch, epoch ms
resume_switch() {
	case $2 in
	src) _rif=fs ;;
	dst) _rif=fd ;;
	esac
	rm -f "$T/migrate.switched"
	{
		[ "$3" -eq 0 ] || echo "sleep $(awk "BEGIN { print $3 / 1000 }")"
		echo "printf '%s\n' 'route replace $ADDR4/32 dev $_rif' 'route replace $ADDR6/128 dev $_rif' | ip -n '$FABRIC' -batch -"
		echo "date +%s%N >'$T/migrate.switched.tmp'"
		[ -z "$4" ] || echo "kill -USR2 $4"
		echo "mv '$T/migrate.switched.tmp' '$T/migrate.switched'"
	} >"$MIG_HOOK"
	mig_migrate "$1" || fail "migration: $MIG_RESULT"
	wait_for "[ -e '$T/migrate.switched' ]" $((15 + $3 / 1000)) ||
		fail "the fabric did not switch"
	rm -f "$MIG_HOOK"
	RESUME_SW=$(($(cat "$T/migrate.switched") / 1000000))
	MIG_FABRIC=$2
}

mig_setup
mig_guest_start
cur_pod=src cur_sock=$D_SOCK cur_pid=$D_PID

for l in fs fd; do
	mig_cap_start "$FABRIC" "$l" "resume-$l" out
	eval "cap_$l=$CAP_PID"
done

mig_stream down down4 "$DPORT" --rate 2048 -t 3600
mig_stream up up4 "$UPORT" --rate 2048 -t 3600

: >"$T/runs"
for mode in $RESUME_MODES; do
	bin=$PASST
	[ "$mode" != before ] || bin=$PASST_NOPOKE
	for w in $RESUME_WS; do
		r=0
		while [ "$r" -lt "$RESUME_RUNS" ]; do
			r=$((r + 1))
			for s in down up; do
				mig_flowing "$s" 65536 30 ||
					fail "stream $s does not flow before run $mode/$w/$r"
			done
			[ "$cur_pod" = src ] && to=dst || to=src
			PASST_SRC=$bin PASST_DST=$bin mig_pod_daemon "$to" target
			to_sock=$D_SOCK to_pid=$D_PID
			mig_repair_ready "$cur_pod" "$cur_sock"
			sig=
			[ "$mode" != signal ] || sig=$to_pid
			resume_switch "$to_sock" "$to" "$w" "$sig"
			for s in down up; do
				mig_flowing "$s" 65536 30 ||
					fail "stream $s does not resume ($mode, W=$w)"
			done
			kill -USR2 "$cur_pid"
			mig_exit_wait "$cur_pid" 10 ||
				fail "the source ignored SIGUSR2"
			[ "$to" = src ] && link=fs || link=fd
			echo "$mode $w $r $link $RESUME_SW" >>"$T/runs"
			log "run $mode W=$w #$r: to $to, $(mig_field downtime_ms) ms downtime"
			cur_pod=$to cur_sock=$to_sock cur_pid=$to_pid
		done
	done
done
mig_streams_verify down up
mig_daemon_stop "$cur_pid"
for l in fs fd; do
	eval "mig_cap_stop \$cap_$l"
	mig_cap_text "resume-$l" >"$T/resume-$l.txt"
done

# For each run: the first segment from the peer's port to the target
# after the switch (data for down, anything for up), in ms
while read -r mode w r link sw; do
	for p in "$DPORT" "$UPORT"; do
		awk -v sw="$sw" -v p="$p" -v data=$([ "$p" = "$DPORT" ] && echo 1 || echo 0) '
		{
			t = $1 * 1000
			if (t < sw || index($3, "." p) != length($3) - length(p))
				next
			if (data && !match($0, /length [1-9]/))
				next
			printf "%d\n", t - sw; found = 1; exit
		}
		END { if (!found) print "none" }' "$T/resume-$link.txt" |
			sed "s/^/$mode $w $([ "$p" = "$DPORT" ] && echo down || echo up) /"
	done
done <"$T/runs" >"$T/figures"
log "raw figures (mode W direction ms):"
cat "$T/figures" >&2

median() {
	sort -n | awk '$1 ~ /^[0-9]+$/ { v[++n] = $1 } END {
		if (!n) { print "-"; exit }
		print v[int((n + 1) / 2)] }'
}
printf '\nResume after the fabric switch: median of %s run(s), ms\n\n' "$RESUME_RUNS"
printf '| W (ms) |'
for mode in $RESUME_MODES; do printf ' %s down | %s up |' "$mode" "$mode"; done
printf '\n|-------:|'
for mode in $RESUME_MODES; do printf -- '-----:|-----:|'; done
printf '\n'
for w in $RESUME_WS; do
	printf '| %s |' "$w"
	for mode in $RESUME_MODES; do
		for d in down up; do
			printf ' %s |' "$(awk -v m="$mode" -v w="$w" -v d="$d" \
				'$1 == m && $2 == w && $3 == d { print $4 }' \
				"$T/figures" | median)"
		done
	done
	printf '\n'
done
