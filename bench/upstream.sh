#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# upstream.sh - the newest upstream passt at hand, for make bench: prints
# the directory holding its binaries (test/upstream/fetch.sh's last line).
#
# Tries the Debian suites of BENCH_UPSTREAM_SUITES in order (default "sid
# trixie": unstable's passt, 0.0~git20261002 when this was written, then
# Debian 13's 0.0~git20250503, which the interoperability tests use), each
# cached in its own directory (trixie's in fetch.sh's default one, which
# .ci/setup fills). The first that fetch.sh gets wins; the table's header
# says which version ran. Exit status: fetch.sh's of the last suite tried.
set -u

TOP=$(cd "$(dirname "$0")/.." && pwd)
st=1
for s in ${BENCH_UPSTREAM_SUITES:-sid trixie}; do
	if [ "$s" = trixie ]; then
		dir=${PASST_UPSTREAM_DIR:-/var/cache/passt-test/upstream}
	else
		dir=/var/cache/passt-test/upstream-$s
	fi
	out=$(PASST_UPSTREAM_SUITE=$s "$TOP/test/upstream/fetch.sh" "$dir") &&
		{ printf '%s\n' "$out" | tail -n 1; exit 0; }
	st=$?
	printf 'upstream.sh: no passt from %s (fetch.sh status %s)\n' \
		"$s" "$st" >&2
done
exit "$st"
