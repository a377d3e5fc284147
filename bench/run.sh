#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - make bench: our daemon against upstream passt (the newest at
# hand, from bench/upstream.sh), one table of medians and ratios.
#
# Runs the kernel-as-guest benchmark (bench/ns.sh: stream mode through
# tapbridge, vhost-user mode through vu-front) and the QEMU one
# (bench/qemu.sh, both modes), which append records to one file (format
# in bench/lib.sh); bench/report.sh makes the table. It goes to stdout
# and, with a header saying what ran where and the notes, to
# bench/results/latest.md; the records to bench/results/latest-runs.txt,
# the scripts' logs to bench/results/latest.log, and the table as a
# picture to bench/results/latest.png (bench/plot.sh: ours against
# upstream per cell, with the spread). bench/README.md explains every
# column.
#
# Environment: BENCH_HARNESSES ("ns qemu"), and everything bench/lib.sh
# takes (BENCH_RUNS, BENCH_SECS, BENCH_QUICK=1, BENCH_MODES, BENCH_MTUS,
# BENCH_BACKENDS, UPSTREAM, ...); PASST and TOOLS (make sets them).
set -eu -o pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
export PASST=${PASST:-$ROOT/build/passt}
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
HARNESSES=${BENCH_HARNESSES:-ns qemu}
OUT=$BENCH/results

log() {
	printf 'bench: %s\n' "$*" >&2
}

[ "$(id -u)" -eq 0 ] || { log "run as root (namespaces)"; exit 1; }
[ -x "$PASST" ] || { log "no daemon at $PASST (make)"; exit 1; }

if [ -z "${UPSTREAM:-}" ]; then
	_st=0
	_dir=$("$BENCH/upstream.sh") || _st=$?
	if [ "$_st" -ne 0 ]; then
		log "bench/upstream.sh failed (status $_st): no upstream" \
			"passt to compare with"
		exit 1
	fi
	UPSTREAM=$_dir/passt
fi
export UPSTREAM

mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export BENCH_RECORDS=$WORK/records BENCH_NOTES=$WORK/notes
: >"$BENCH_RECORDS"
: >"$BENCH_NOTES"
: >"$OUT/latest.log"

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	RUNS=${BENCH_RUNS:-1} SECS=${BENCH_SECS:-2} LSECS=${BENCH_LAT_SECS:-2}
else
	RUNS=${BENCH_RUNS:-5} SECS=${BENCH_SECS:-8} LSECS=${BENCH_LAT_SECS:-5}
fi
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T0=$(date +%s)

for _h in $HARNESSES; do
	case $_h in
	ns | qemu) ;;
	*) log "unknown harness $_h (ns, qemu)"; exit 1 ;;
	esac
	log "$_h: bench/$_h.sh (log: $OUT/latest.log)"
	_st=0
	"$BENCH/$_h.sh" 2>&1 >>"$OUT/latest.log" |
		tee -a "$OUT/latest.log" "$WORK/$_h.log" >&2 || _st=$?
	[ "$_st" -eq 0 ] ||
		echo "bench/$_h.sh exited with status $_st: see latest.log" \
			>>"$BENCH_NOTES"
	# bench/ns.sh's failures (bench/qemu.sh notes its own)
	[ "$_h" = qemu ] || grep -E 'FAIL|DIED|did not|no DHCP|can.t ping' \
		"$WORK/$_h.log" | sed "s/^ */$_h: /" >>"$BENCH_NOTES" || :
done

SC_TOOL=perf
grep -q 'system calls counted with: strace' "$OUT/latest.log" &&
	SC_TOOL="strace -c -f (separate runs; it slows the daemon)"
grep -q 'system calls counted with: none' "$OUT/latest.log" &&
	SC_TOOL="nothing (neither perf nor strace)"

{
	echo "# make bench: ours : upstream passt"
	echo
	if [ "$QUICK" = 1 ]; then
		echo "**Smoke run (BENCH_QUICK=1): one short run per cell;" \
			"the figures are not a measurement.**"
		echo
	fi
	echo "- $(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) CPUs," \
		"load average $LOAD0 before, $(cut -d' ' -f1-3 /proc/loadavg)" \
		"after, $(($(date +%s) - T0)) s in all"
	echo "- ours: $PASST ($(git -C "$ROOT" describe --always --dirty \
		2>/dev/null || echo unknown))"
	echo "- upstream: $UPSTREAM ($(stdbuf -oL "$UPSTREAM" --version 2>&1 |
		head -n 1))"
	echo "- $RUNS run(s) per cell of $SECS s (iperf3) or $LSECS s" \
		"(sockperf); ${BENCH_SC_RUNS:-1} more run(s) per throughput" \
		"cell with the system call counter attached:" \
		"$SC_TOOL; medians; harnesses: $HARNESSES"
	if [ "${BENCH_PIN:-0}" = 1 ]; then
		echo "- BENCH_PIN=1: in the kernel-guest harness, the daemons" \
			"on the last CPU, the rest of the harness on the others"
	fi
	if [ -n "${BENCH_PACE_US:-}" ]; then
		echo "- BENCH_PACE_US=$BENCH_PACE_US: in the kernel-guest" \
			"harness, a slow guest: one frame every" \
			"$BENCH_PACE_US us at most to the daemon"
	fi
	if [ -n "${BENCH_SHAPE:-}" ]; then
		echo "- BENCH_SHAPE: in the kernel-guest harness, the host's" \
			"link to the peer is shaped: $BENCH_SHAPE"
	fi
	echo "- ratio: ours : upstream, medians; ratio range: lowest and" \
		"highest ratio between any run of ours and any of upstream's;" \
		"spread: (max - min) / median of a back-end's runs"
	echo
	"$BENCH/report.sh" "$BENCH_RECORDS"
	if [ -s "$BENCH_NOTES" ]; then
		echo
		echo '```'
		# without the blank lines the scripts put between their parts
		sed '/^$/d' "$BENCH_NOTES"
		echo '```'
	fi
} >"$OUT/latest.md"
cp "$BENCH_RECORDS" "$OUT/latest-runs.txt"
cat "$OUT/latest.md"
# The same as a picture: ours against upstream per cell, with the spread
"$BENCH/plot.sh" "$BENCH_RECORDS" "$OUT/latest.png" ||
	log "no picture (bench/plot.sh failed)"
