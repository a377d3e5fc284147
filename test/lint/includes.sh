#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# includes.sh - the daemon's structure, counted from its #include lines:
# the units (a folder, or a top-level file with its own headers), the
# files, the includes between units, the includes that run from a lower
# layer up to a higher one, and the cycles between units.
#
# The layer order is written once, in test/lint/layers: one layer a line,
# lowest first; a folder is named "tcp/", a top-level file by its name
# without suffix ("flow" covers flow.c, flow.h and flow_common.h: a
# top-level file whose name isn't listed belongs to the unit named by the
# part before its first "_"). A unit may include units of its own layer
# and of lower ones; an include of a higher layer's unit is "upward".
# Two units are in a cycle when each reaches the other through includes
# (a strongly connected set of more than one unit).
#
# The same file holds the limits: "limit upward N" and "limit cycles N".
# The counts may not exceed them, so a cycle gone stays gone once its
# limit is lowered.
#
# Usage: test/lint/includes.sh [-v] [ROOT [LAYERS]]
#   -v	list every upward include and the units of every cycle
#
# Exit status: 0 if the counts are within the limits and every unit is in
# the layer file, 1 otherwise (the reason on standard error)

set -u

verbose=0
[ "${1:-}" = -v ] && { verbose=1; shift; }
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:-$top}
layers=${2:-$top/test/lint/layers}
cd "$root" || exit 1
[ -r "$layers" ] || { echo "includes: no layer file $layers" >&2; exit 1; }

# The daemon's sources: everything but test/, bench/ and contrib/
files=$(git ls-files -- '*.c' '*.h' 2>/dev/null) ||
	files=$(find . -name '*.[ch]' | sed 's|^\./||')
files=$(echo "$files" | grep -Ev '^(test|bench|contrib)/' | sort)

# One line per project include: "file target", the target resolved as
# the compiler does (the including file's folder first, then the top)
edges=$(for f in $files; do
	d=$(dirname "$f")
	sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
	while read -r i; do
		if [ "$d" != . ] && [ -e "$d/$i" ]; then
			echo "$f $d/$i"
		elif [ -e "$i" ]; then
			echo "$f $i"
		fi
	done
done)

{
	sed 's/#.*//' "$layers" | awk 'NF { print "L", $0 }'
	for f in $files; do echo "F $f"; done
	echo "$edges" | awk 'NF { print "E", $0 }'
} | awk -v verbose=$verbose '
# unit() - the unit a file belongs to, "" if the layer file lacks it
function unit(f,	u, s) {
	if (f ~ /\//) {
		u = f
		sub(/\/.*/, "/", u)
		return (u in layer) ? u : ""
	}
	s = f
	sub(/\.[ch]$/, "", s)
	if (s in layer)
		return s
	sub(/_.*/, "", s)
	return (s in layer) ? s : ""
}

$1 == "L" && $2 == "limit" {
	limit[$3] = $4
	next
}
$1 == "L" {
	for (i = 2; i <= NF; i++) {
		if ($i in layer) {
			printf "includes: %s is in two layers\n", $i > "/dev/stderr"
			fail = 1
		}
		layer[$i] = nl
		units[++nu] = $i
	}
	nl++
	next
}
$1 == "F" {
	u = unit($2)
	if (u == "") {
		printf "includes: %s is in no unit of the layer file\n", \
		       $2 > "/dev/stderr"
		fail = 1
		next
	}
	nf++
	used[u] = 1
	next
}
$1 == "E" {
	ni++
	a = unit($2)
	b = unit($3)
	if (a == "" || b == "" || a == b)
		next
	nx++
	reach[a, b] = 1
	if (layer[a] < layer[b]) {
		nup++
		up[nup] = $2 " -> " $3 " (" a " below " b ")"
	}
}

END {
	for (i = 1; i <= nu; i++) {
		if (!(units[i] in used)) {
			printf "includes: the layer file names %s, which has " \
			       "no file\n", units[i] > "/dev/stderr"
			fail = 1
		}
	}
	# Reachability (Floyd-Warshall over a few dozen units), then each
	# unit with the others it reaches and is reached by: one cycle
	for (k = 1; k <= nu; k++)
		for (i = 1; i <= nu; i++) {
			if (!((units[i], units[k]) in reach))
				continue
			for (j = 1; j <= nu; j++)
				if ((units[k], units[j]) in reach)
					reach[units[i], units[j]] = 1
		}
	ncyc = 0
	for (i = 1; i <= nu; i++) {
		if (units[i] in done)
			continue
		set = units[i]
		n = 1
		for (j = i + 1; j <= nu; j++) {
			if ((units[i], units[j]) in reach &&
			    (units[j], units[i]) in reach) {
				set = set " " units[j]
				done[units[j]] = 1
				n++
			}
		}
		if (n > 1)
			cyc[++ncyc] = set
	}

	for (i = 1; i <= nu; i++)
		if (units[i] ~ /\/$/)
			nd++
	printf "includes: %d units (%d folders, %d top-level) in %d " \
	       "layers, %d files, %d project includes, %d between units, " \
	       "%d upward, %d cycles between units\n", nu, nd, nu - nd, nl, \
	       nf, ni, nx, nup, ncyc
	if (verbose || nup > limit["upward"])
		for (i = 1; i <= nup; i++)
			printf "includes: upward: %s\n", up[i]
	if (verbose || ncyc > limit["cycles"])
		for (i = 1; i <= ncyc; i++)
			printf "includes: cycle: %s\n", cyc[i]
	if (!("upward" in limit) || !("cycles" in limit)) {
		print "includes: the layer file lacks a limit" > "/dev/stderr"
		fail = 1
	}
	if (nup > limit["upward"]) {
		printf "includes: %d upward includes, more than the limit " \
		       "of %d\n", nup, limit["upward"] > "/dev/stderr"
		fail = 1
	}
	if (ncyc > limit["cycles"]) {
		printf "includes: %d cycles between units, more than the " \
		       "limit of %d\n", ncyc, limit["cycles"] > "/dev/stderr"
		fail = 1
	}
	exit fail
}'
