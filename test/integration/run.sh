#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - run the network namespace integration tests, one after another.
#
# Usage: run.sh [TEST...]   (names of scripts in tests/, default: all)
#
# Each test script builds its own namespaces (lib.sh), named after this
# runner's pid and the test, and removes them on exit. A script exits 0
# (PASS), 77 (SKIP) or anything else (FAIL); one that runs longer than
# $PT_TIMEOUT seconds (default 180; more if the script has a line
# "# PT_TIMEOUT: SECONDS"; PT_TEST_LIMIT, if set, instead of both) is
# killed, its whole process group, and fails (status 124). Stopped
# (SIGTERM, SIGINT, SIGHUP), the runner stops the test that runs with it.
# Its output goes to a log, shown on failure (or always with -v /
# PT_VERBOSE=1).
#
# Environment: PASST and TOOLS as in lib.sh. The last line is always
# "integration: N passed, N failed" (skips are listed, not counted), and
# the exit status is non-zero if any test failed.
set -eu

DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$DIR/../.." && pwd)
export PASST=${PASST:-$TOP/build/passt}
export TOOLS=${TOOLS:-$TOP/build/test/tools}
PT_TIMEOUT=${PT_TIMEOUT:-180}
VERBOSE=${PT_VERBOSE:-0}
if [ "${1:-}" = -v ]; then
	VERBOSE=1
	shift
fi

if [ $# -eq 0 ]; then
	for f in "$DIR"/tests/*.sh; do
		f=${f##*/}
		set -- "$@" "${f%.sh}"
	done
fi

# shellcheck source=../leftovers.sh
. "$TOP/test/leftovers.sh"

LOGDIR=$(mktemp -d "/tmp/passt-integration.$$.XXXXXX")
cur=
trap 'limited_stop; [ -z "$cur" ] || leftovers "$cur"; exit 143' TERM HUP
trap 'limited_stop; [ -z "$cur" ] || leftovers "$cur"; exit 130' INT
pass=0
fail=0
skipped=
failed=

echo "integration: daemon $PASST"
for t in "$@"; do
	script=$DIR/tests/$t.sh
	log=$LOGDIR/$t.log
	start=$(date +%s)
	st=0
	# A script may ask for more time with a "# PT_TIMEOUT: SECONDS" line
	tmo=$(sed -n 's/^# PT_TIMEOUT: *\([0-9][0-9]*\)$/\1/p' "$script" |
	      head -n 1)
	[ -n "$tmo" ] && [ "$tmo" -gt "$PT_TIMEOUT" ] || tmo=$PT_TIMEOUT
	tmo=${PT_TEST_LIMIT:-$tmo}
	cur=pt$$-$t
	PT_ID=$cur limited "$tmo" bash "$script" >"$log" 2>&1 </dev/null ||
		st=$?
	secs=$(($(date +%s) - start))
	leftovers "$cur"
	cur=

	case $st in
	0)
		echo "PASS: $t (${secs}s)"
		pass=$((pass + 1))
		;;
	77)
		echo "SKIP: $t ($(sed -n 's/^SKIP: //p' "$log" | tail -n 1))"
		skipped="$skipped $t"
		;;
	*)
		[ "$st" -eq 124 ] && echo "(timed out after ${tmo}s)" >>"$log"
		echo "FAIL: $t (${secs}s, status $st)"
		sed 's/^/    /' "$log"
		fail=$((fail + 1))
		failed="$failed $t"
		continue
		;;
	esac
	[ "$VERBOSE" = 1 ] && sed 's/^/    /' "$log"
done

[ -z "$skipped" ] || echo "skipped:$skipped"
[ -z "$failed" ] || echo "failed:$failed (logs in $LOGDIR)"
[ -n "$failed" ] || rm -rf "$LOGDIR"
echo "integration: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
