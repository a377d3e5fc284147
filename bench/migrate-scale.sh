#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate-scale.sh - how live migration times grow with the number of TCP
# connections, for our daemon and upstream passt in the same harness (not
# part of make check). Run as root after building the daemon, passt-repair
# and the test tools:
#
#   sudo bench/migrate-scale.sh
#   CONNS="1 10" REPS=1 DAEMONS=ours sudo -E bench/migrate-scale.sh
#
# DAEMONS (default "ours upstream"): ours is $PASST (build/passt), upstream
# the newest upstream passt at hand (bench/upstream.sh: Debian sid's, else
# Debian 13's, each cached under /var/cache/passt-test), each with its own
# passt-repair. Each is
# measured in the migration harness of test/integration (migrate-lib.sh:
# the GUEST namespace's kernel is the guest behind vu-front, SRC and DST
# pods with the same addresses, a FABRIC router with the peer), at Debian's
# default net.core.wmem_max/rmem_max (212992, as every migration test).
# WS (default "rarp 3000"): the fabric switches W ms after the target
# runs the guest, for each W in turn; "rarp": on the first RARP from the
# target pod, as OVN does with activation-strategy=rarp (activation-lib.sh;
# ours sends it as it starts the guest, before its connections leave
# repair mode; a daemon that sends none, as upstream's, gets the switch
# 3 s after the start instead, and the log says "timeout"); 0: at once,
# as vu-front starts the target (which may come before the target's
# connections can take anything: earlier than any fabric would).
# For each N in CONNS (default "1 100 1000"), REPS times (default 3): N
# pattern streams between the peer and the guest, half of them peer ->
# guest and half guest -> peer (IPv4; at RATE KiB/s each, default 64, but
# no more than RATE_TOTAL KiB/s together, default 8192; one sockio
# pattern-many process at each end for all N), then vu-front
# migrates the guest to a fresh daemon in the other pod, as QEMU does, and
# the fabric switches to that pod W ms (default 0: at once) after the
# target runs the guest. Measured, per migration:
#
#   downtime_ms, total_ms, state_bytes: as vu-front reports them (its
#     "migrate: result=..." line: from stopping the rings to the started
#     target; from the trigger, including the target's connection set-up)
#   CPU ms (SAVE, LOAD): the source's and the target's own CPU time for
#     the transfer, from their logs (ours only): what the downtime costs
#     the daemon, whatever else runs on the machine
#   resume_ms: from the fabric switch (with W=rarp: the RARP's capture
#     time, where OVN's datapath switches) until each stream moves again: the
#     first segment from the new pod, after the switch, that carries data
#     beyond what either pod had sent before it (guest -> peer), or that
#     acknowledges a byte neither pod had acknowledged (peer -> guest),
#     captured on the FABRIC's link to each pod; the median and the
#     largest over the N connections
#
# Then every stream is stopped and checked byte for byte, and the old
# source ends (SIGUSR2; Debian 13's passt exits by itself once migrated).
# The table shows medians over the REPS migrations (resume: the median of
# each migration's median, and the worst single connection of all of
# them), and "broken": streams
# that failed (reset, or not byte-exact) in all REPS migrations together,
# with the daemons' "Migration:" lines in the log. PT_KEEP=1 keeps the
# captures and logs.
set -eu

BENCH_TOP=$(cd "$(dirname "$0")/.." && pwd)
export PASST=${PASST:-$BENCH_TOP/build/passt}
export TOOLS=${TOOLS:-$BENCH_TOP/build/test/tools}
DAEMONS=${DAEMONS:-ours upstream}

# The top level: one run of this script per daemon and W, then one table
if [ -z "${MS_DAEMON:-}" ]; then
	out=$(mktemp -d /tmp/migrate-scale.XXXXXX)
	st=0
	WS=${WS:-${W:-rarp 3000}}
	for d in $DAEMONS; do
		case $d in
		ours)
			bin=$PASST
			;;
		upstream)
			up=$(sh "$BENCH_TOP/bench/upstream.sh" 2>"$out/fetch.err" |
			     tail -n 1) ||
				{ echo "upstream passt unavailable: $(tail -n 1 "$out/fetch.err")" >&2
				  continue; }
			bin=$up/passt
			grep -h 'cached:\|fetched' "$out/fetch.err" >&2 || :
			;;
		*)
			echo "DAEMONS: ours, upstream, not $d" >&2
			exit 2
			;;
		esac
		for w in $WS; do
			echo "migrate-scale: $d ($bin), W=$w" >&2
			MS_DAEMON=$d MS_OUT=$out/$d.$w.results PASST_MIG=$bin \
				W=$w PT_ID=mb$$$d bash "$0" || st=$?
		done
	done
	printf '\nmigrate-scale: %s KiB/s per connection (%s KiB/s in all at most), medians of %s, at net.core.wmem_max=rmem_max=%s\n' \
		"${RATE:-64}" "${RATE_TOTAL:-8192}" "${REPS:-3}" \
		"${MIG_WMEM_MAX:-212992}"
	printf '| daemon | W ms | connections | state bytes | downtime ms | total ms | CPU ms (SAVE, LOAD) | resume ms (median) | resume ms (worst) | peer -> guest (median, worst) | guest -> peer (median, worst) | moved | broken |\n'
	printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
	for d in $DAEMONS; do
	for w in $WS; do
		[ -s "$out/$d.$w.results" ] || continue
		for n in ${CONNS:-1 100 1000}; do
			awk -v d="$d" -v n="$n" -v w="$w" '
				function med(a, k,   i, j, t) {
					for (i = 1; i <= k; i++)
						for (j = i + 1; j <= k; j++)
							if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
					if (!k) return "-"
					return k % 2 ? a[(k + 1) / 2] : int((a[k / 2] + a[k / 2 + 1]) / 2)
				}
				$1 == n {
					k++
					dt[k] = $2; tt[k] = $3; sb[k] = $4
					if ($5 != "-") { m++; rm[m] = $5 }
					if ($6 != "-") { x++; rx[x] = $6; if ($6 + 0 > worst) worst = $6 + 0 }
					if ($9 != "-" && $9 != "") { dm++; dmed[dm] = $9 }
					if ($10 != "-" && $10 != "" && $10 + 0 > dworst) dworst = $10 + 0
					if ($11 != "-" && $11 != "") { um++; umed[um] = $11 }
					if ($12 != "-" && $12 != "" && $12 + 0 > uworst) uworst = $12 + 0
					got += $7; bad += $8
					if ($13 != "-" && $13 != "") { cs++; csv[cs] = $13 }
					if ($14 != "-" && $14 != "") { cl++; clv[cl] = $14 }
				}
				END {
					if (!k) exit
					printf "| %s | %s | %s | %s | %s | %s | %s, %s | %s | %s | %s, %s | %s, %s | %s of %s | %s |\n",
						d, w, n, med(sb, k), med(dt, k), med(tt, k),
						med(csv, cs), med(clv, cl),
						med(rm, m), x ? worst : "-", med(dmed, dm),
						dm ? dworst : "-", med(umed, um),
						um ? uworst : "-", got, n * k, bad + 0
				}' "$out/$d.$w.results"
		done
	done
	done
	[ "${PT_KEEP:-0}" = 1 ] || rm -rf "$out"
	exit "$st"
fi

PT_ID=${PT_ID:-mb$$}
LIB=$BENCH_TOP/test/integration
# shellcheck source=../test/integration/lib.sh
. "$LIB/lib.sh"
# shellcheck source=../test/integration/vu.sh
. "$LIB/vu.sh"
# shellcheck source=../test/integration/migrate-lib.sh
. "$LIB/migrate-lib.sh"
# shellcheck source=../test/integration/activation-lib.sh
. "$LIB/activation-lib.sh"
need busybox tcpdump

CONNS=${CONNS:-1 100 1000}
REPS=${REPS:-3}
RATE=${RATE:-64}
RATE_TOTAL=${RATE_TOTAL:-8192}
W=${W:-0}

# Our daemon lingers until SIGUSR2 (up to its timeout); Debian 13's passt
# has no linger (it exits once migrated) and refuses the option
DOPTS=
"$PASST_MIG" --help 2>&1 | grep -q migrate-linger-timeout &&
	DOPTS="--migrate-linger-timeout 600"

# median: of the numbers on stdin, one a line
median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		if (NR % 2) print v[(NR + 1) / 2]
		else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# cpu_ms LOG TEXT: the CPU time of the last "Migration: ... TEXT ... (X ms
# of CPU)" line in the daemon's LOG, "-" if there is none (upstream)
cpu_ms() {
	_c=$(grep "Migration: .*$2 .* ms of CPU)" "$1" 2>/dev/null | tail -n 1 |
	     sed -n 's/.*(\([0-9.]*\) ms of CPU).*/\1/p')
	echo "${_c:--}"
}

# many_start, many_rx, many_flowing, many_pick, many_verify: the N streams
# of a round (test/integration/migrate-lib.sh)

# pod_if POD: FABRIC's link to that pod
pod_if() {
	case $1 in
	src) echo fs ;;
	dst) echo fd ;;
	esac
}

mig_setup
# shellcheck disable=SC2086
mig_pod_daemon src source $DOPTS
cur=src cur_sock=$D_SOCK cur_pid=$D_PID cur_log=$D_LOG
mig_probe "$cur_sock"
MIG_SOCK=$cur_sock
guest_up

results=${MS_OUT:-$T/results}
: >"$results"
round=0
for n in $CONNS; do
	rate=$((RATE_TOTAL / n))
	[ "$rate" -le "$RATE" ] || rate=$RATE
	[ "$rate" -ge 1 ] || rate=1
	r=0
	while [ "$r" -lt "$REPS" ]; do
		r=$((r + 1))
		round=$((round + 1))
		port0=$((10000 + round * 1024))
		many_start "$round" "$port0" "$n" "$rate"
		many_flowing "$round" "$n" 4096 120 ||
			fail "N=$n: streams not flowing: $MIG_LAGGING"

		case $cur in
		src) to=dst ;;
		dst) to=src ;;
		esac
		# shellcheck disable=SC2086
		mig_pod_daemon "$to" target $DOPTS
		to_sock=$D_SOCK to_pid=$D_PID to_log=$D_LOG
		mig_repair_ready "$cur" "$cur_sock"
		mig_cap_start "$FABRIC" "$(pod_if "$cur")" old$round in
		cap_old=$CAP_PID
		mig_cap_start "$FABRIC" "$(pod_if "$to")" new$round in
		cap_new=$CAP_PID

		if [ "$W" = rarp ]; then
			act_migrate "$to_sock" "$to" 3000 ||
				fail "N=$n: migration: $MIG_RESULT"
			# From the RARP on the wire, as OVN's datapath switches
			# (the route here follows it by the watcher's latency)
			sw=${ACT_RARP:-$ACT_SWITCH}
			log "N=$n #$r: the fabric switched on: $ACT_HOW, $((ACT_SWITCH - ACT_RUN)) ms after the target ran the guest"
		else
			mig_migrate_switch "$to_sock" "$to" "$W" ||
				fail "N=$n: migration: $MIG_RESULT"
			sw=$MIG_SWITCH_AT
		fi
		if ! many_flowing "$round" "$n" 4096 120; then
			log "N=$n: streams not moving after the switch: $MIG_LAGGING"
			grep -h 'Migration:' "$T"/*/passt.socket.err | sort | uniq -c >&2
		fi
		mig_cap_stop "$cap_old"
		mig_cap_stop "$cap_new"

		# Per connection (the peer's port): the highest ACK and the
		# highest data the old pod sent, then the new pod's first
		# segment beyond either
		{
			mig_cap_text "old$round" | sed 's/^/old /'
			mig_cap_text "new$round" | sed 's/^/new /'
		} | awk -v sw="$sw" -v p0="$port0" -v n="$n" '
			function port(a) { sub(/:$/, "", a); sub(/.*\./, "", a); return a + 0 }
			{
				p = port($6)
				if (p < p0 || p >= p0 + n)
					next
				ack = -1; end = -1
				if (match($0, /ack [0-9]+/))
					ack = substr($0, RSTART + 4, RLENGTH - 4) + 0
				if (match($0, /seq [0-9]+:[0-9]+/)) {
					s = substr($0, RSTART + 4, RLENGTH - 4)
					sub(/.*:/, "", s)
					end = s + 0
				}
				# The old pod, and the new one before the switch
				# (what it took over at the restore)
				if ($1 == "old" || $2 * 1000 < sw) {
					if (ack > mack[p]) mack[p] = ack
					if (end > mend[p]) mend[p] = end
					seen[p] = 1
					next
				}
				if ((p in first) || !(p in seen))
					next
				if (ack > mack[p] || end > mend[p])
					first[p] = int($2 * 1000 - sw)
			}
			END {
				# even: peer -> guest, odd: guest -> peer
				for (p in first)
					print first[p], (p - p0) % 2 ? "up" : "down"
				for (i = 0; i < n; i++)
					if (!((p0 + i) in first)) miss++
				if (miss) print "missing", miss > "/dev/stderr"
			}' >"$T/resume$round.dir" 2>"$T/resume$round.err"
		cut -d' ' -f1 "$T/resume$round.dir" >"$T/resume$round"
		res_med=$(median <"$T/resume$round")
		res_max=$(sort -n "$T/resume$round" | tail -n 1)
		for dir in down up; do
			awk -v d="$dir" '$2 == d { print $1 }' \
				"$T/resume$round.dir" >"$T/resume$round.$dir"
			eval "med_$dir=\$(median <\"\$T/resume\$round.\$dir\")"
			eval "max_$dir=\$(sort -n \"\$T/resume\$round.\$dir\" | tail -n 1)"
		done
		log "N=$n #$r: resume ms, peer -> guest: median $med_down max ${max_down:--}; guest -> peer: median $med_up max ${max_up:--}"
		got=$(wc -l <"$T/resume$round")
		log "N=$n #$r: $MIG_RESULT; resume_ms median $res_med max ${res_max:--} ($got of $n connections seen moving) $(cat "$T/resume$round.err")"
		many_verify "$round" $((60 + n / 5)) "$n"
		bad=$MANY_BAD
		[ "$bad" -eq 0 ] ||
			log "N=$n #$r: $bad stream(s) broken: $(grep -h -m 5 '^stream' "$T/many$round".*.err | tr '\n' ' ')"
		# The daemons' own CPU time for the SAVE and the LOAD (ours
		# logs it: "(X ms of CPU)"), whatever else runs on the machine
		cpu_save=$(cpu_ms "$cur_log" 'state sent in')
		cpu_load=$(cpu_ms "$to_log" 'connection(s) restored in')
		printf '%s %s %s %s %s %s %s %s %s %s %s %s %s %s\n' "$n" \
			"$(mig_field downtime_ms)" "$(mig_field total_ms)" \
			"$(mig_field state_bytes)" "$res_med" "${res_max:--}" \
			"$got" "$bad" "$med_down" "${max_down:--}" "$med_up" \
			"${max_up:--}" "$cpu_save" "$cpu_load" >>"$results"
		kill -USR2 "$cur_pid" 2>/dev/null || :
		mig_exit_wait "$cur_pid" 10 || fail "old source ignored SIGUSR2"
		cur=$to cur_sock=$to_sock cur_pid=$to_pid cur_log=$to_log
	done
done

[ -n "${MS_OUT:-}" ] || cat "$results"
mig_stop "$cur_pid"
