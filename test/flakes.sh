#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# flakes.sh - the flake budget: run test suites N times and count, for each
# test, how often it failed. A test that fails one run in ten is a defect
# (in the daemon or the test), and one run of the suite doesn't show it.
#
# Usage: flakes.sh [-n N] [-l LOAD] [-b "LIMIT..."] [-t SECS]
#                  [SUITE[:TEST,...]...]
#
#   SUITE      a make target that runs a suite: integration (default),
#              integration-asan, e2e, e2e-asan; ":TEST,..." runs only those
#              tests of it (make's TESTS variable)
#   -n N       rounds (default 10)
#   -l LOAD    LOAD CPU-bound processes (busy loops) run all along, as a
#              second workload on the machine would (default 0)
#   -b LIMITS  each round runs once for every value in LIMITS, with
#              net.core.wmem_max and rmem_max set to it (212992 is
#              Debian's default, the machine's 4194304). The migration
#              tests set these limits themselves (212992 unless told
#              otherwise): they are told LIMIT (MIG_WMEM_MAX and
#              MIG_RMEM_MAX). We are one of the users of the machine's
#              values (test/sysctl-share.sh) from the start: saved first,
#              if no test did, and put back when the last user leaves, we
#              or a test that still runs (a test that starts meanwhile
#              doesn't take our limit for the machine's)
#   -t SECS    each test's time limit (PT_TEST_LIMIT; default: the
#              runner's, for each test): at the limit, the test's whole
#              process group is killed, and the test fails, "limit" in
#              the table
#
# Every round's output goes to a directory (printed first), with the logs
# the runners keep for failed tests. The last lines are a table: each test
# that ran, how many times, how many of those failed (with the rounds, and
# "limit" where it was killed at its time limit), and how often it was
# skipped; then the machine's load at the start and the end (others' work
# counts: the machine may be shared). Stopped (SIGINT, SIGTERM), we stop
# the suite, and the suite's runner the test it runs.
#
# The tests take these from the environment, useful here: PT_STALL_MS (the
# TCP transfers' progress watchdog, test/integration/lib.sh: 1000 to catch
# any stall over a second), PT_PASST_OPTS=--trace (the daemon's trace in
# its log), PT_KEEP=fail (keep a failed test's directory: the daemon's
# whole log, stall.log). The migration tests' (migrate-lib.sh):
# MIG_DAEMON_OPTS=--debug (every daemon's log at debug level),
# MIG_CAPTURE_ALL=1 (every TCP segment on the guest's and the fabric's
# side, in pcap files), MIG_SS_EVERY=MS (every namespace's sockets, ss
# -tin, every MS ms).
#
# Not in make check: N rounds take N times as long (make flakes N=10).
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
N=10
LOAD=0
LIMITS=
TLIMIT=
while getopts n:l:b:t: o; do
	case $o in
	n) N=$OPTARG ;;
	l) LOAD=$OPTARG ;;
	b) LIMITS=$OPTARG ;;
	t) TLIMIT=$OPTARG ;;
	*) sed -n '8,10s/^# //p' "$0" >&2; exit 64 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- integration
case "$N$LOAD$TLIMIT" in
*[!0-9]*) echo "flakes: -n, -l and -t take numbers" >&2; exit 64 ;;
esac
if [ -n "$TLIMIT" ]; then
	export PT_TEST_LIMIT=$TLIMIT
fi
for l in $LIMITS; do
	case $l in
	*[!0-9]*|'') echo "flakes: bad limit '$l'" >&2; exit 64 ;;
	esac
done
[ -n "$LIMITS" ] || LIMITS=-

OUT=$(mktemp -d /tmp/passt-flakes.XXXXXX)
echo "flakes: $N rounds of $*, load $LOAD, limits $LIMITS," \
	"test time limit ${TLIMIT:-default}; output in $OUT"

# shellcheck source=sysctl-share.sh
. "$TOP/test/sysctl-share.sh"
hogs=
run=
shared=0
finish() {
	# The suite runs in a process group of its own (set -m): all of it;
	# its runner stops the test it runs, in a group of the test's own
	# (test/leftovers.sh), and waits for it
	if [ -n "$run" ]; then
		kill -TERM -- "-$run" 2>/dev/null
		wait "$run" 2>/dev/null
	fi
	for p in $hogs; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ "$shared" = 0 ] || sysctl_share_leave "$$"
}
trap finish EXIT
trap 'exit 130' INT TERM
if [ "$LIMITS" != - ]; then
	sysctl_share_join "$$" ||
		{ echo "flakes: can't save net.core.wmem_max/rmem_max" >&2; exit 1; }
	shared=1
fi

# Busy loops that also end when we're gone, however that happens
for _ in $(seq "$LOAD"); do
	( while kill -0 $$ 2>/dev/null; do :; done ) &
	hogs="$hogs $!"
done

load0=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$N"); do
	for lim in $LIMITS; do
		if [ "$lim" != - ]; then
			sysctl_share_set "$lim" "$lim"
		fi
		for s in "$@"; do
			suite=${s%%:*}
			tests=
			[ "$suite" = "$s" ] ||
				tests=$(echo "${s#*:}" | tr , ' ')
			out=$OUT/$r-$lim-$suite.out
			mig=
			[ "$lim" = - ] ||
				mig="MIG_WMEM_MAX=$lim MIG_RMEM_MAX=$lim"
			set -m
			# shellcheck disable=SC2086 # the assignments, if any
			env $mig make -s -C "$TOP" --no-print-directory \
				"$suite" TESTS="$tests" >"$out" 2>&1 </dev/null &
			run=$!
			set +m
			wait "$run" || :
			run=
			# "PASS: name (...)" (integration), "PASS name (...)"
			# (e2e): the round, the limit and the result a line;
			# "LIMIT" for a failure at the test's time limit
			# (status 124, or 137: SIGKILL after SIGTERM)
			sed -n -e 's/^FAIL:\{0,1\} \([^ :]*\) .*, status 1\(24\|37\))$/LIMIT \1/p' \
				-e t \
				-e 's/^\(PASS\|FAIL\|SKIP\):\{0,1\} \([^ :]*\).*/\1 \2/p' \
				"$out" | sed "s/^/$r $lim $suite /" \
				>>"$OUT/results"
			echo "round $r, limit $lim, $suite:" \
				"$(grep -c ' PASS ' <(grep "^$r $lim $suite " \
				"$OUT/results")) passed," \
				"$(grep -cE ' (FAIL|LIMIT) ' <(grep "^$r $lim $suite " \
				"$OUT/results")) failed" \
				"($(grep -c ' LIMIT ' <(grep "^$r $lim $suite " \
				"$OUT/results")) at the time limit;" \
				"load $(cut -d' ' -f1-3 /proc/loadavg))"
		done
	done
done

echo
echo "flakes: $N rounds, load $LOAD, limits $LIMITS, test time limit" \
	"${TLIMIT:-default}"
printf '%-40s %5s %6s %5s  %s\n' test runs failed skip "failed in (round/limit)"
touch "$OUT/results"
awk '{
	t = $3 "/" $5; r = $1 "/" $2
	if ($4 == "SKIP") { skip[t]++; seen[t] = 1; next }
	runs[t]++; seen[t] = 1
	if ($4 == "FAIL") { fail[t]++; where[t] = where[t] " " r }
	if ($4 == "LIMIT") { fail[t]++; where[t] = where[t] " " r "(limit)" }
}
END {
	for (t in seen)
		printf "%-40s %5d %6d %5d %s\n", t, runs[t], fail[t], skip[t],
		       where[t]
}' "$OUT/results" | sort -k3,3nr -k1,1
echo "load average at the start: $load0, at the end:" \
	"$(cut -d' ' -f1-3 /proc/loadavg); output in $OUT"
