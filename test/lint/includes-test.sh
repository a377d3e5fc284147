#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# includes-test.sh - includes.sh counts a small tree right, and fails on
# each fault it claims to find: an upward include or a cycle over its
# limit, a file in no unit, a unit without files
#
# Usage: test/lint/includes-test.sh

set -u

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
lint="$(cd "$(dirname "$0")" && pwd)/includes.sh"
fail=0

# A tree of three layers: util.h, net/ (two files), top.c; net/b.h is
# included as "b.h" from its own folder
mkdir -p "$dir/t/net"
cd "$dir/t" || exit 1
echo '#include <stdint.h>' > util.h
printf '#include "b.h"\n#include "util.h"\n' > net/a.c
echo '#include "util.h"' > net/b.h
printf '#include "net/b.h"\n#include "util.h"\n' > top.c
cat > layers <<'L'
# comment
limit upward 0
limit cycles 0
util
net/
top
L

# run() - includes.sh on the tree, expecting exit status $1 and a line
# matching $2 (standard output and error together)
run() {
	out=$("$lint" -v "$dir/t" "$dir/t/layers" 2>&1)
	rc=$?
	if [ $rc -ne "$1" ] || ! echo "$out" | grep -q -- "$2"; then
		echo "includes-test: $3: exit status $rc, expected $1, output:"
		echo "$out"
		fail=1
	fi
}

counts='3 units (1 folders, 2 top-level) in 3 layers, 4 files, '
counts+='5 project includes, 4 between units, 0 upward, 0 cycles'
run 0 "$counts" "clean tree"

# util.h includes top.c's unit: upward, and a cycle util -> top -> util
echo '#include "top.h"' >> util.h
echo '' > top.h
run 1 '1 upward includes, more than the limit of 0' "upward"
run 1 'cycle: util net/ top' "cycle"
sed -i "s/^limit upward 0/limit upward 1/" layers
run 1 '1 cycles between units, more than the limit of 0' "cycle alone"
sed -i 's/^limit cycles 0/limit cycles 1/' layers
run 0 '1 upward, 1 cycles between units' "within the limits"
sed -i '$d' util.h
rm top.h

# A file in no unit, a unit with no file
echo '' > stray.c
run 1 'stray.c is in no unit' "stray file"
rm stray.c
echo 'gone/' >> layers
run 1 'names gone/, which has no file' "stale unit"

[ $fail = 0 ] && echo "includes-test: ok"
exit $fail
