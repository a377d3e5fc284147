#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# plot.sh RECORDS OUT.png - the benchmark's table as a picture (gnuplot,
# which .ci/setup installs): one row per cell (harness, mode, MTU, test,
# metric), a point at how far ours is ahead of upstream there, on a
# logarithmic axis, with a bar over the ratio's range (the lowest and
# highest ratio between any run of ours and any of upstream's: the
# spread of both). Right of the middle line (1) ours is ahead, whatever
# the metric: for figures where lower is better (CPU, round trips,
# memory, system calls, wake-ups, loss) the ratio is turned over
# (upstream : ours). The axis goes from 1/16 to 16; a cell beyond sits
# at its edge (upstream's stalls put some kernel-guest cells there). Green: ahead by the goal (bench/report.sh's column),
# orange: ahead but short of it, red: behind.
#
# bench/run.sh draws it after the table (bench/results/latest.png).
set -eu

[ $# -eq 2 ] && [ -r "$1" ] || {
	echo "usage: $0 RECORDS OUT.png" >&2
	exit 2
}
command -v gnuplot >/dev/null || {
	echo "plot.sh: no gnuplot (apt-get install gnuplot-nox): no picture" >&2
	exit 1
}
DIR=$(cd "$(dirname "$0")" && pwd)
DATA=$(mktemp /tmp/bench-plot.XXXXXX)
trap 'rm -f "$DATA" "$DATA.gp"' EXIT

# label advantage low high colour, one line per cell with a ratio; the
# cells in bench/report.sh's order, first at the top
"$DIR/report.sh" --tsv "$1" | awk -F '\t' '
BEGIN {
	H["ns"] = "kernel"; H["qemu"] = "QEMU"
	LOWER["cpu"] = 1; LOWER["rtt"] = 1; LOWER["rtt99"] = 1
	LOWER["rss"] = 1; LOWER["hwm"] = 1; LOWER["sc"] = 1
	LOWER["wake"] = 1; LOWER["loss"] = 1; LOWER["cpuus"] = 1
	LOWER["mem"] = 1
	# How far ahead the goal is (bench/report.sh): CPU 0.7 or less
	GOAL["cpu"] = 1 / 0.7; GOAL["cpuus"] = 1 / 0.7
}
$8 != "-" && $8 + 0 > 0 {
	a = $8; lo = $9; hi = $10
	if ($5 in LOWER) {
		a = 1 / $8
		t = lo; lo = (hi != "-" && hi > 0) ? 1 / hi : a
		hi = (t != "-" && t > 0) ? 1 / t : a
	}
	if (lo == "-" || lo <= 0) lo = a
	if (hi == "-" || hi <= 0) hi = a
	# The axis: 1/16 to 16 (a cell beyond sits at the edge)
	a = a < 0.0625 ? 0.0625 : (a > 16 ? 16 : a)
	lo = lo < 0.0625 ? 0.0625 : (lo > 16 ? 16 : lo)
	hi = hi < 0.0625 ? 0.0625 : (hi > 16 ? 16 : hi)
	g = ($5 in GOAL) ? GOAL[$5] : 1
	c = a >= g ? "0x2e8b57" : (a >= 1 ? "0xff8c00" : "0xdc143c")
	m = $3 == "-" ? "" : " " $3
	printf "\"%s %s%s %s %s\" %s %s %s %s\n", H[$1] ? H[$1] : $1, $2, m,
		$4, $5, a, lo, hi, c
}' >"$DATA"

N=$(wc -l <"$DATA")
[ "$N" -gt 0 ] || {
	echo "plot.sh: no cell with both back-ends in $1: no picture" >&2
	exit 1
}
cat >"$DATA.gp" <<EOF
set terminal pngcairo size 1100,$((120 + 16 * N)) font "sans,9"
set output "$2"
set title "ours against upstream passt, per cell: how many times ahead (right of 1) or behind\n(lower-is-better figures turned over; bars: lowest to highest ratio between any two runs)"
set logscale x 2
set xrange [0.055:18]
set yrange [$N:-1]
set ytics nomirror
set grid xtics
set key off
set xlabel "ours ahead of upstream, times"
set arrow from 1, graph 0 to 1, graph 1 nohead lc rgb "black"
plot "$DATA" using 2:0:3:4:5:ytic(1) with xerrorbars pt 7 ps 0.8 \
	lc rgb variable
EOF
gnuplot "$DATA.gp"
echo "plot.sh: $2 ($N cells)" >&2
