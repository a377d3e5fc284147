#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate-activation.sh - how soon the fabric switches to a migration
# target, and the streams move again, when the target announces the guest
# (RARP on the pod's interface) to a fabric that behaves like OVN with
# activation-strategy=rarp, against a fabric that switches a fixed W after
# the target runs the guest. As root, on the migrate-lib.sh topology of
# the integration tests (no QEMU: vu-front migrates a namespace's kernel,
# and sends SEND_RARP after each migration as QEMU does), with the fabric
# of test/integration/activation-lib.sh.
#
# Two pattern streams run through every migration: "down" (peer -> guest)
# and "up" (guest -> peer), 2 MiB/s each. The guest migrates back and
# forth; per run, the target is our daemon either with CAP_NET_RAW (it
# announces: mode "rarp", the fabric's W only a fallback, 10 s) or with
# --no-announce (mode "W=N": the fabric switches N ms after the target ran
# the guest). Figures, all in ms: "switch", from the target running the
# guest (vu-front's at_ms: its device start on the target) to the fabric's
# route change; "down" and "up", from the switch to the peer's first
# segment reaching the target (its first data segment for down, its first
# ACK for up: tcpdump on the fabric's link to the target); "total", from
# the target running the guest to the later of the two.
#
# Environment: PASST (our daemon), TOOLS, ACT_RUNS (default 5), ACT_WS
# (ms, default "1000 3000"). Prints one table of medians, the raw figures
# on stderr.
set -eu
BENCH_TOP=$(cd "$(dirname "$0")/.." && pwd)
export PASST=${PASST:-$BENCH_TOP/build/passt}
export TOOLS=${TOOLS:-$BENCH_TOP/build/test/tools}
PT_ID=${PT_ID:-ba$$}
# shellcheck source=../test/integration/lib.sh
. "$BENCH_TOP/test/integration/lib.sh"
# shellcheck source=../test/integration/vu.sh
. "$BENCH_TOP/test/integration/vu.sh"
# shellcheck source=../test/integration/migrate-lib.sh
. "$BENCH_TOP/test/integration/migrate-lib.sh"
# shellcheck source=../test/integration/activation-lib.sh
. "$BENCH_TOP/test/integration/activation-lib.sh"
need tcpdump

ACT_RUNS=${ACT_RUNS:-5}
ACT_WS=${ACT_WS:-1000 3000}
MIG_VU_OPTS="--send-rarp"
DPORT=7201
UPORT=7202

mig_setup
act_cap_start
mig_guest_start
cur_pod=src cur_sock=$D_SOCK cur_pid=$D_PID
mig_stream down down4 "$DPORT" --rate 2048 -t 3600
mig_stream up up4 "$UPORT" --rate 2048 -t 3600

: >"$T/runs"
for mode in rarp $(printf 'W=%s ' $ACT_WS); do
	r=0
	while [ "$r" -lt "$ACT_RUNS" ]; do
		r=$((r + 1))
		for s in down up; do
			mig_flowing "$s" 65536 30 ||
				fail "stream $s does not flow before run $mode/$r"
		done
		[ "$cur_pod" = src ] && to=dst || to=src
		if [ "$mode" = rarp ]; then
			w=10000
			mig_pod_daemon "$to" target
		else
			w=${mode#W=}
			mig_pod_daemon "$to" target --no-announce
		fi
		to_sock=$D_SOCK to_pid=$D_PID
		mig_repair_ready "$cur_pod" "$cur_sock"
		act_migrate "$to_sock" "$to" "$w" || fail "migration: $MIG_RESULT"
		[ "$mode" != rarp ] || [ "$ACT_HOW" = rarp ] ||
			fail "run $mode/$r: the fabric switched on $ACT_HOW"
		for s in down up; do
			mig_flowing "$s" 65536 30 ||
				fail "stream $s does not resume ($mode, run $r)"
		done
		kill -USR2 "$cur_pid"
		mig_exit_wait "$cur_pid" 10 || fail "the source ignored SIGUSR2"
		echo "$mode $r $(act_if "$to") $ACT_RUN $ACT_SWITCH" >>"$T/runs"
		log "run $mode #$r: to $to, switched on $ACT_HOW" \
			"$((ACT_SWITCH - ACT_RUN)) ms after the target ran the guest"
		cur_pod=$to cur_sock=$to_sock cur_pid=$to_pid
	done
done
mig_streams_verify down up
mig_daemon_stop "$cur_pid"
act_cap_stop

while read -r mode r link run sw; do
	d=$(act_resume "$DPORT" 1 "$link" "$sw")
	u=$(act_resume "$UPORT" 0 "$link" "$sw")
	tot=none
	[ "$d" = none ] || [ "$u" = none ] ||
		tot=$((sw - run + (d > u ? d : u)))
	echo "$mode $((sw - run)) $d $u $tot"
done <"$T/runs" >"$T/figures"
log "raw figures (mode switch down up total, ms):"
cat "$T/figures" >&2

median() {
	sort -n | awk '$1 ~ /^-?[0-9]+$/ { v[++n] = $1 } END {
		if (!n) { print "-"; exit }
		print v[int((n + 1) / 2)] }'
}
printf '\nFabric switch and resume after a migration: median of %s run(s), ms\n\n' \
	"$ACT_RUNS"
printf '| fabric | switch | down resumes | up resumes | both moving |\n'
printf '|---|---:|---:|---:|---:|\n'
for mode in rarp $(printf 'W=%s ' $ACT_WS); do
	printf '| %s |' "$mode"
	for col in 2 3 4 5; do
		printf ' %s |' "$(awk -v m="$mode" -v c="$col" \
			'$1 == m { print $c }' "$T/figures" | median)"
	done
	printf '\n'
done
