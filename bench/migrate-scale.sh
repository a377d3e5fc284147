#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate-scale.sh - how live migration times grow with the number of TCP
# connections (not part of make check). Run as root after building the
# daemon, passt-repair and the test tools:
#
#   sudo bench/migrate-scale.sh
#   PASST=build-x/passt TOOLS=build-x/test/tools CONNS="1 10" REPS=1 \
#	sudo -E bench/migrate-scale.sh
#
# It uses the migration harness of test/integration (migrate-lib.sh: the
# GUEST namespace's kernel is the guest behind vu-front, SRC and DST pods
# with the same addresses, a FABRIC router with the peer). For each N in
# CONNS (default "1 10 100"), REPS times (default 3): N pattern streams
# peer -> guest (IPv4, RATE KiB/s each, default 64), then vu-front
# migrates the guest to a fresh daemon in the other pod, as QEMU does, and
# the fabric switches to that pod W ms (default 0: at once) after the
# target runs the guest. Measured, per migration:
#
#   downtime_ms, total_ms, state_bytes: as vu-front reports them (its
#     "migrate: result=..." line: from stopping the rings to the started
#     target; from the trigger, including the target's connection set-up)
#   resume_ms: from the fabric switch until the stream moves again: the
#     first segment from the new pod, after the switch, that acknowledges
#     a byte neither pod acknowledged before the switch (a new byte taken
#     in by the target's socket; captured on the FABRIC's link to each
#     pod), per connection; the median and the largest over the N
#     connections
#
# Then every stream is stopped and checked byte for byte, and the old
# source ends on SIGUSR2. The table shows medians over the REPS
# migrations, and "broken": streams that failed (reset, or not byte-exact)
# in all REPS migrations together, with the daemons' "Migration:" lines
# in the log. PT_KEEP=1 keeps the captures and logs.
set -eu

BENCH_TOP=$(cd "$(dirname "$0")/.." && pwd)
export PASST=${PASST:-$BENCH_TOP/build/passt}
export TOOLS=${TOOLS:-$BENCH_TOP/build/test/tools}
PT_ID=${PT_ID:-mb$$}
LIB=$BENCH_TOP/test/integration
# shellcheck source=../test/integration/lib.sh
. "$LIB/lib.sh"
# shellcheck source=../test/integration/vu.sh
. "$LIB/vu.sh"
# shellcheck source=../test/integration/migrate-lib.sh
. "$LIB/migrate-lib.sh"
need busybox tcpdump

CONNS=${CONNS:-1 10 100}
REPS=${REPS:-3}
RATE=${RATE:-64}
W=${W:-0}

# median: of the numbers on stdin, one a line
median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		if (NR % 2) print v[(NR + 1) / 2]
		else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

down4() {
	echo down4
}

# pod_if POD: FABRIC's link to that pod
pod_if() {
	case $1 in
	src) echo fs ;;
	dst) echo fd ;;
	esac
}

mig_setup
mig_pod_daemon src source --migrate-linger-timeout 600
cur=src cur_sock=$D_SOCK cur_pid=$D_PID
mig_probe "$cur_sock"
MIG_SOCK=$cur_sock
guest_up

round=0
: >"$T/results"
for n in $CONNS; do
	r=0
	while [ "$r" -lt "$REPS" ]; do
		r=$((r + 1))
		round=$((round + 1))
		port0=$((10000 + round * 128))
		mig_streams_start down4 "$port0" "$n" --rate "$RATE" -t 600
		names=$MIG_NAMES
		# shellcheck disable=SC2086
		mig_all_flowing 8192 60 $names ||
			fail "N=$n: streams not flowing: $MIG_LAGGING"

		case $cur in
		src) to=dst ;;
		dst) to=src ;;
		esac
		mig_pod_daemon "$to" target --migrate-linger-timeout 600
		to_sock=$D_SOCK to_pid=$D_PID
		mig_repair_ready "$cur" "$cur_sock"
		mig_cap_start "$FABRIC" "$(pod_if "$cur")" old$round in
		cap_old=$CAP_PID
		mig_cap_start "$FABRIC" "$(pod_if "$to")" new$round in
		cap_new=$CAP_PID

		mig_migrate_switch "$to_sock" "$to" "$W" ||
			fail "N=$n: migration: $MIG_RESULT"
		if [ "$W" -eq 0 ]; then
			sw=$(mig_field at_ms)
		else
			sw=$(($(cat "$T/migrate.switched") / 1000000))
		fi
		# shellcheck disable=SC2086
		stuck=0
		if ! mig_all_flowing 16384 60 $names; then
			log "N=$n: streams not moving after the switch: $MIG_LAGGING"
			# shellcheck disable=SC2046
			mig_diag $(printf '%s\n' $MIG_LAGGING | cut -d: -f1)
			# shellcheck disable=SC2086
			stuck=$(printf '%s\n' $MIG_LAGGING | wc -l)
			grep -h 'Migration:' "$T"/*/passt.socket.err | sort | uniq -c >&2
		fi
		mig_cap_stop "$cap_old"
		mig_cap_stop "$cap_new"

		# Per connection (the peer's port): the old pod's highest ACK,
		# then the new pod's first segment beyond it
		{
			mig_cap_text "old$round" | sed 's/^/old /'
			mig_cap_text "new$round" | sed 's/^/new /'
		} | awk -v sw="$sw" -v p0="$port0" -v n="$n" '
			function port(a) { sub(/:$/, "", a); sub(/.*\./, "", a); return a + 0 }
			{
				p = port($6)
				if (p < p0 || p >= p0 + n || !match($0, /ack [0-9]+/))
					next
				ack = substr($0, RSTART + 4, RLENGTH - 4) + 0
				if ($1 == "old") {
					if (ack > max[p]) max[p] = ack
					next
				}
				# The new pod acknowledged these at the restore
				# (bytes the old one took, not acknowledged yet)
				if ($2 * 1000 < sw) {
					if (ack > max[p]) max[p] = ack
					next
				}
				if (!(p in first) && p in max && ack > max[p])
					first[p] = int($2 * 1000 - sw)
			}
			END {
				for (p in first) print first[p]
				for (i = 0; i < n; i++)
					if (!((p0 + i) in first)) miss++
				if (miss) print "missing", miss > "/dev/stderr"
			}' >"$T/resume$round" 2>"$T/resume$round.err"
		res_med=$(median <"$T/resume$round")
		res_max=$(sort -n "$T/resume$round" | tail -n 1)
		got=$(wc -l <"$T/resume$round")
		log "N=$n #$r: $MIG_RESULT; resume_ms median $res_med max ${res_max:--} ($got of $n connections seen moving) $(cat "$T/resume$round.err")"
		# shellcheck disable=SC2086
		MIG_VERIFY_NOFAIL=1 mig_streams_verify $names \
			>"$T/verify$round.log" 2>&1 || :
		bad=$(printf '%s\n' $MIG_VERIFY_BAD | grep -c . || :)
		[ "$bad" -eq 0 ] ||
			log "N=$n #$r: $bad stream(s) broken:$MIG_VERIFY_BAD"
		printf '%s %s %s %s %s %s %s %s\n' "$n" "$(mig_field downtime_ms)" \
			"$(mig_field total_ms)" "$(mig_field state_bytes)" \
			"$res_med" "${res_max:--}" "$got" "$bad" >>"$T/results"
		kill -USR2 "$cur_pid" 2>/dev/null || :
		mig_exit_wait "$cur_pid" 10 || fail "old source ignored SIGUSR2"
		cur=$to cur_sock=$to_sock cur_pid=$to_pid
	done
done

printf '\nmigrate-scale: %s, %s KiB/s per connection (peer -> guest), W=%s ms, medians of %s\n' \
	"$PASST" "$RATE" "$W" "$REPS"
printf '%6s %12s %10s %12s %16s %14s %8s\n' connections downtime_ms total_ms \
	state_bytes resume_ms_median resume_ms_max broken
for n in $CONNS; do
	col() {
		awk -v n="$n" -v c="$1" '$1 == n && $c != "-" { print $c }' \
			"$T/results" | median
	}
	printf '%6s %12s %10s %12s %16s %14s %8s\n' "$n" "$(col 2)" "$(col 3)" \
		"$(col 4)" "$(col 5)" "$(col 6)" \
		"$(awk -v n="$n" '$1 == n { b += $8 } END { print b + 0 }' "$T/results")"
done
mig_stop "$cur_pid"
