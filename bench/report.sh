#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# report.sh RECORDS - the benchmark's one table, in Markdown, from the
# records bench/ns.sh and bench/qemu.sh write (bench/lib.sh describes
# them: HARNESS MODE MTU TEST METRIC BACKEND VALUE).
#
# One row per harness, mode, MTU, test and metric: the median of each
# back-end's successful runs, the ratio of the medians (ours : upstream),
# whether that ratio meets issue 10's goal, and the noise: the ratio's
# range over all pairs of runs (lowest ours / highest upstream to highest
# ours / lowest upstream), the runs that succeeded out of those made, and
# each back-end's spread, (max - min) / median. Rows are sorted; a cell
# with no successful run shows FAIL.
#
# Then, where bench/ns.sh recorded it, the bare socket figure: what a
# process that only moves the bytes spends, beside each kernel-guest
# cell's CPU per GiB (the second table, below).
#
# With --tsv, the first table's cells only, tab-separated, for
# bench/plot.sh: harness, mode, MTU, test, metric, the medians of ours and
# upstream, their ratio, and the ratio's range (lowest, highest); "-"
# where there is none.
set -eu

TSV=0
if [ "${1:-}" = --tsv ]; then
	TSV=1
	shift
fi
[ $# -eq 1 ] && [ -r "$1" ] || {
	echo "usage: $0 [--tsv] RECORDS" >&2
	exit 2
}

# The statistics both tables use (awk)
STATS='
# Sorted copy of the values in s (space-separated) into arr; count back
function sorted(s, arr,    n, i, j, t) {
	n = split(s, arr, " ")
	for (i = 2; i <= n; i++) {
		t = arr[i] + 0
		for (j = i - 1; j >= 1 && arr[j] + 0 > t; j--)
			arr[j + 1] = arr[j]
		arr[j + 1] = t
	}
	return n
}
function median(s,    a, n) {
	n = sorted(s, a)
	if (!n)
		return ""
	if (n % 2)
		return a[(n + 1) / 2]
	return (a[n / 2] + a[n / 2 + 1]) / 2
}
function vmin(s,    a, n) { n = sorted(s, a); return n ? a[1] : "" }
function vmax(s,    a, n) { n = sorted(s, a); return n ? a[n] : "" }
function spread(s,    md) {
	md = median(s)
	if (md == "" || split(s, _t, " ") < 2 || md + 0 == 0)
		return "-"
	return sprintf("%.0f%%", 100 * (vmax(s) - vmin(s)) / md)
}
'

awk "$STATS"'
function rank(list, v,    a, n, i) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++)
		if (a[i] == v)
			return sprintf("%02d", i)
	return "99" v
}
function fmt(m, v) {
	if (v == "")
		return "FAIL"
	if (m == "sc" || m == "wake")
		return sprintf("%.1fk", v / 1000)
	if (m == "gbps" || m == "cpu")
		return sprintf("%.3f", v)
	if (m == "rtt" || m == "rtt99" || m == "cpuus")
		return sprintf("%.1f", v)
	if (m == "tps" || m == "open")
		return sprintf("%.0f", v)
	return sprintf("%.2f", v)
}
function ratio(a, b) {
	if (a == "" || b == "" || b + 0 == 0)
		return ""
	return a / b
}
BEGIN {
	HARN["ns"] = "kernel guest"; HARN["qemu"] = "QEMU TCG"
	TEST["g2p"] = "guest→peer"; TEST["p2g"] = "peer→guest"
	TEST["rr"] = "TCP RR"; TEST["idle"] = "idle"; TEST["peak"] = "peak"
	# bench/dims.sh
	TEST["udp-g2p"] = "UDP guest→peer"; TEST["udp-p2g"] = "UDP peer→guest"
	TEST["udp-rr"] = "UDP RR"; TEST["crr"] = "TCP CRR"
	TEST["conn1k"] = "1,000 connections"
	TEST["conn10k"] = "10,000 connections"
	TEST["connmax"] = "most connections"
	TEST["rr-g2p"] = "TCP RR beside guest→peer bulk"
	TEST["rr-p2g"] = "TCP RR beside peer→guest bulk"
	MET["gbps"] = "Gbit/s"; MET["cpu"] = "CPU s/GiB"
	MET["sc"] = "syscalls/GiB"; MET["wake"] = "wake-ups/GiB"
	MET["rtt"] = "RTT p50 µs"; MET["rtt99"] = "RTT p99 µs"
	MET["rss"] = "VmRSS MiB"; MET["hwm"] = "VmHWM MiB"
	MET["loss"] = "lost %"; MET["tps"] = "transactions/s"
	MET["cpuus"] = "CPU µs/transaction"; MET["open"] = "open"
	MET["mem"] = "KiB/connection"
	# The goals of issue 10, on the ratio ours : upstream (and of the
	# dimensions of issue 52: at or above upstream, CPU as issue 10)
	GOAL["gbps"] = ">= 1.0"; GOAL["cpu"] = "<= 0.7"; GOAL["rtt"] = "<= 1.0"
	GOAL["rss"] = "< 1.0"; GOAL["hwm"] = "< 1.0"
	GOAL["rtt99"] = "<= 1.0"; GOAL["tps"] = ">= 1.0"
	GOAL["cpuus"] = "<= 0.7"; GOAL["open"] = ">= 1.0"; GOAL["mem"] = "<= 1.0"
}
NF == 7 && $6 != "bare" {
	k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
	keys[k] = 1
	n[k, $6]++
	if ($7 != "FAIL")
		v[k, $6] = v[k, $6] " " $7
}
END {
	for (k in keys) {
		split(k, f, SUBSEP)
		o = v[k, "ours"]; u = v[k, "upstream"]
		mo = median(o); mu = median(u)
		r = ratio(mo, mu)
		g = ""
		if (r != "" && (f[5] in GOAL)) {
			split(GOAL[f[5]], gg, " ")
			ok = (gg[1] == ">=" && r >= gg[2]) ||
			     (gg[1] == "<=" && r <= gg[2]) ||
			     (gg[1] == "<" && r < gg[2])
			g = (ok ? "ok" : "**MISS**") " (" GOAL[f[5]] ")"
		}
		lo = ratio(vmin(o), vmax(u)); hi = ratio(vmax(o), vmin(u))
		rr = (lo == "" || hi == "") ? "-" : \
			sprintf("%.2f–%.2f", lo, hi)
		sk = rank("ns qemu", f[1]) rank("stream vhost-user", f[2]) \
			sprintf("%06d", 999999 - f[3]) \
			rank("g2p p2g rr idle peak udp-g2p udp-p2g udp-rr " \
			     "crr conn1k conn10k connmax rr-g2p rr-p2g", f[4]) \
			rank("gbps cpu wake sc loss tps cpuus open mem rtt " \
			     "rtt99 rss hwm", f[5])
		if (tsv) {
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				sk, f[1], f[2], f[3], f[4], f[5],
				mo == "" ? "-" : mo, mu == "" ? "-" : mu,
				r == "" ? "-" : r, lo == "" ? "-" : lo,
				hi == "" ? "-" : hi
			continue
		}
		printf "%s\t| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d, %d/%d | %s, %s |\n", sk,
			(f[1] in HARN) ? HARN[f[1]] : f[1], f[2], f[3],
			(f[4] in TEST) ? TEST[f[4]] : f[4],
			(f[5] in MET) ? MET[f[5]] : f[5],
			fmt(f[5], mo), fmt(f[5], mu),
			r == "" ? "n/a" : sprintf("%.2f", r), g, rr,
			split(o, _a, " "), n[k, "ours"],
			split(u, _b, " "), n[k, "upstream"],
			spread(o), spread(u)
	}
}' tsv="$TSV" "$1" | sort -t '	' -k1,1 | cut -f2- | {
	if [ "$TSV" = 1 ]; then
		cat
		exit 0
	fi
	echo "| harness | mode | MTU | test | metric | ours | upstream |" \
		"ours : upstream | goal | ratio range | runs ok (ours, up) |" \
		"spread (ours, up) |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	cat
}

[ "$TSV" = 0 ] || exit 0

# The bare socket figure (bench/ns.sh's bare(), back-end "bare"): what a
# process that only moves the bytes through its socket spends per GiB,
# beside each kernel-guest cell's medians and 0.7 of upstream's. Where
# the bare figure is above that, no back-end on this kernel and path
# can meet the goal in that cell.
grep -q '^ns - - [gp2]* cpu bare ' "$1" || exit 0
awk "$STATS"'
BEGIN { TEST["g2p"] = "guest→peer"; TEST["p2g"] = "peer→guest" }
NF == 7 && $1 == "ns" && $5 == "cpu" && ($4 == "g2p" || $4 == "p2g") {
	if ($6 == "bare") {
		nb[$4]++
		if ($7 != "FAIL")
			bare[$4] = bare[$4] " " $7
		next
	}
	k = $2 " " $3 " " $4
	cells[k] = 1
	if ($7 != "FAIL")
		v[k, $6] = v[k, $6] " " $7
}
NF == 7 && $1 == "ns" && $5 == "gbps" && $6 == "bare" && $7 != "FAIL" {
	bgbps[$4] = bgbps[$4] " " $7
}
END {
	print ""
	print "Bare socket (test/tools/bulk): CPU per GiB of a process that" \
	      " only receives (peer→guest) or sends (guest→peer) the bytes" \
	      " over the daemons'\'' path, 1 MiB per call, beside the" \
	      " kernel-guest cells:"
	print ""
	nd = split("g2p p2g", dirs, " ")
	for (i = 1; i <= nd; i++) {
		d = dirs[i]
		if (!(d in nb))
			continue
		bs = (d in bare) ? bare[d] : ""
		gs = (d in bgbps) ? bgbps[d] : ""
		mb[d] = median(bs)
		mg = median(gs)
		printf "- %s: %s s/GiB at %s Gbit/s, %d/%d runs ok," \
		       " spread %s\n", TEST[d],
		       mb[d] == "" ? "FAIL" : sprintf("%.3f", mb[d]),
		       mg == "" ? "-" : sprintf("%.2f", mg),
		       split(bs, _a, " "), nb[d], spread(bs)
	}
	print ""
	print "| mode | MTU | test | ours | upstream | 0.7 × upstream |" \
	      " bare | bare : upstream |"
	print "|---|---|---|---|---|---|---|---|"
	fflush()
	for (k in cells) {
		split(k, f, " ")
		os = ((k, "ours") in v) ? v[k, "ours"] : ""
		us = ((k, "upstream") in v) ? v[k, "upstream"] : ""
		mo = median(os); mu = median(us)
		b = (f[3] in mb) ? mb[f[3]] : ""
		printf "%s %06d %s\t| %s | %s | %s | %s | %s | %s | %s | %s |\n",
		       f[1], 999999 - f[2], f[3], f[1], f[2], TEST[f[3]],
		       mo == "" ? "FAIL" : sprintf("%.3f", mo),
		       mu == "" ? "FAIL" : sprintf("%.3f", mu),
		       mu == "" ? "-" : sprintf("%.3f", 0.7 * mu),
		       b == "" ? "FAIL" : sprintf("%.3f", b),
		       (b == "" || mu == "" || mu + 0 == 0) ? "n/a" : \
		       sprintf("%.2f", b / mu) | "sort | cut -f2-"
	}
	close("sort | cut -f2-")
}' "$1"
