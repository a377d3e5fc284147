#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# builds.sh - one bench/qemu.sh cell for several builds of our daemon,
# interleaved: which change moved a TCG figure (a bisection by build).
#
# Usage: bench/builds.sh LABEL=PASST...     (as root, after make tools)
#        bench/builds.sh --build DIR COMMIT...
#
# The first form measures: in each of BENCH_ROUNDS rounds, every build
# boots the QEMU guest once per mode (bench/qemu.sh with that daemon alone)
# and runs BENCH_RUNS transfers in each of BENCH_DIRS; the builds' order
# rotates from round to round, so a load that rises or falls over the
# minutes weighs on all alike. Then one table per mode and direction:
# each build's median Gbit/s and CPU s/GiB over all its runs, their
# spreads, and the ratio of its median to the first build's (the
# reference: put the known good one first). Records go to
# bench/results/builds-runs.txt, the table to bench/results/builds.md.
#
# The second form prepares the builds: a git worktree of each COMMIT in
# DIR/COMMIT (detached), its daemon built there (make build/passt), and
# prints the LABEL=PASST arguments for the first form.
#
# The TCG guest's own CPU sets much of its rate, and follows the host's
# load: on a machine other jobs share, figures taken at different times
# say little; the interleaved rounds are what make the ratios robust, and
# a quiet machine is what makes them small.
#
# Environment: BENCH_ROUNDS (5), BENCH_RUNS (1 per boot), BENCH_SECS (8),
# BENCH_MODES ("stream vhost-user"), BENCH_MTUS (65520), BENCH_DIRS (p2g);
# TOOLS, and what bench/qemu.sh takes.
set -eu

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)

if [ "${1:-}" = --build ]; then
	[ $# -ge 3 ] || { echo "usage: $0 --build DIR COMMIT..." >&2; exit 2; }
	_dir=$2
	shift 2
	mkdir -p "$_dir"
	_args=
	for _c in "$@"; do
		_c=$(git -C "$ROOT" rev-parse --short "$_c")
		if [ ! -d "$_dir/$_c" ]; then
			git -C "$ROOT" worktree add --detach "$_dir/$_c" "$_c" \
				>/dev/null
		fi
		make -C "$_dir/$_c" -j"$(nproc)" build/passt \
			>"$_dir/$_c.build.log" 2>&1 ||
			{ echo "$_c: build failed, see $_dir/$_c.build.log" >&2
			  exit 1; }
		_args="$_args $_c=$_dir/$_c/build/passt"
	done
	echo "${_args# }"
	exit 0
fi

[ $# -ge 1 ] || { echo "usage: $0 LABEL=PASST... | --build DIR COMMIT..." \
	>&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
export TOOLS=${TOOLS:-$ROOT/build/test/tools}
ROUNDS=${BENCH_ROUNDS:-5}
export BENCH_RUNS=${BENCH_RUNS:-1} BENCH_SECS=${BENCH_SECS:-8}
export BENCH_MODES=${BENCH_MODES:-stream vhost-user}
export BENCH_MTUS=${BENCH_MTUS:-65520} BENCH_DIRS=${BENCH_DIRS:-p2g}
export BENCH_BACKENDS=ours BENCH_SC_RUNS=0 BENCH_RR=0
# Older builds may not take SIGUSR1 (the coalescing counters) as ours does
export BENCH_STATS_BACKENDS=none
OUT=$BENCH/results
mkdir -p "$OUT"
ALL=$OUT/builds-runs.txt
: >"$ALL"
WORK=$(mktemp -d /tmp/builds.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
LABELS=()
for _a in "$@"; do
	[ -x "${_a#*=}" ] || { echo "no daemon at ${_a#*=}" >&2; exit 1; }
	LABELS+=("${_a%%=*}")
done

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T0=$(date +%s)
for _r in $(seq 1 "$ROUNDS"); do
	# The builds in this round's order: rotated by one each round
	_n=$#
	for _i in $(seq 0 $((_n - 1))); do
		_k=$(((_i + _r - 1) % _n + 1))
		_a=${!_k}
		_l=${_a%%=*}
		echo "builds: round $_r/$ROUNDS, $_l (${_a#*=})" >&2
		_st=0
		BENCH_RECORDS=$WORK/rec BENCH_NOTES=$WORK/notes \
			PASST=${_a#*=} "$BENCH/qemu.sh" \
			>>"$WORK/qemu.log" 2>&1 || _st=$?
		[ "$_st" -eq 0 ] ||
			echo "builds: $_l round $_r: bench/qemu.sh status $_st" \
				"(see $OUT/builds.log)" >&2
		grep -E '^qemu [^ ]+ [0-9]+ [gp]2[gp] (gbps|cpu) ours ' \
			"$WORK/rec" 2>/dev/null |
			awk -v l="$_l" -v r="$_r" '{ $6 = l; print $0, r }' \
			>>"$ALL" || :
		: >"$WORK/rec"
	done
done
cp "$WORK/qemu.log" "$OUT/builds.log"

# The table: per mode, MTU and direction, each build's medians and
# spreads, and the ratio of its median to the first build's
{
	echo "# Builds side by side: bench/builds.sh"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds of" \
		"$BENCH_RUNS run(s) of $BENCH_SECS s per build and mode," \
		"load average $LOAD0 before, $(cut -d' ' -f1-3 /proc/loadavg)" \
		"after, $(($(date +%s) - T0)) s"
	echo
	echo "| mode | MTU | direction | build | Gbit/s | spread | : first |" \
		"CPU s/GiB | spread | : first | runs |"
	echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
	awk -v order="${LABELS[*]}" '
	function median(s,    a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) {
			t = a[i] + 0
			for (j = i - 1; j >= 1 && a[j] + 0 > t; j--)
				a[j + 1] = a[j]
			a[j + 1] = t
		}
		if (!n) return ""
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function spread(s,    a, n, i, lo, hi, m) {
		n = split(s, a, " ")
		if (n < 2) return "-"
		lo = hi = a[1] + 0
		for (i = 2; i <= n; i++) {
			if (a[i] + 0 < lo) lo = a[i] + 0
			if (a[i] + 0 > hi) hi = a[i] + 0
		}
		m = median(s)
		return m > 0 ? sprintf("%.0f%%", 100 * (hi - lo) / m) : "-"
	}
	$7 != "FAIL" {
		k = $2 " " $3 " " $4
		if (!(k in seen)) { seen[k] = 1; cells[++nc] = k }
		v[k, $6, $5] = v[k, $6, $5] " " $7
	}
	END {
		nb = split(order, b, " ")
		for (c = 1; c <= nc; c++) {
			split(cells[c], f, " ")
			g0 = median(v[cells[c], b[1], "gbps"])
			c0 = median(v[cells[c], b[1], "cpu"])
			for (i = 1; i <= nb; i++) {
				gs = v[cells[c], b[i], "gbps"]
				cs = v[cells[c], b[i], "cpu"]
				g = median(gs); cp = median(cs)
				printf "| %s | %s | %s | %s | %s | %s | %s | %s |" \
				       " %s | %s | %d |\n", f[1], f[2], f[3],
				       b[i], g == "" ? "FAIL" : sprintf("%.3f", g),
				       spread(gs),
				       g == "" || g0 + 0 == 0 ? "-" :
					       sprintf("%.2f", g / g0),
				       cp == "" ? "FAIL" : sprintf("%.3f", cp),
				       spread(cs),
				       cp == "" || c0 + 0 == 0 ? "-" :
					       sprintf("%.2f", cp / c0),
				       split(gs, _t, " ")
			}
		}
	}' "$ALL"
} >"$OUT/builds.md"
cat "$OUT/builds.md"
