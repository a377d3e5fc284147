#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - end-to-end tests: a real Linux guest in QEMU (TCG unless KVM is
# really there), virtio-net, against the daemon, in each front-end mode.
#
# Usage: run.sh [-v] [--stream | --vhost-user] [TEST...]
#
#   TEST        names of scripts in tests/ (default: basic tcp udp reconnect
#               migrate migrate_fail migrate_mq multiqueue
#               migrate_upstream migrate_from_upstream)
#   --stream    only the qemu stream front-end (-netdev stream)
#   --vhost-user
#               only vhost-user (-netdev vhost-user, memfd guest memory)
#   -v          show every test's log, not only the failures'
#
# Without a mode option both run (E2E_MODES overrides: "stream vhost-user").
# A vhost-user test skips, with the daemon's message, while the daemon
# refuses --vhost-user. Builds the guest image first (test/guest/build.sh:
# nothing to do when it's up to date). Each test boots its own guest, gets
# its own namespaces (named after our pid, the test and the mode) and is
# killed, its whole process group, after $E2E_TIMEOUT seconds (default
# 150), or what the test says in a "# e2e-timeout: SECS" line, if that is
# more (PT_TEST_LIMIT, if set, instead of both). Stopped (SIGTERM, SIGINT,
# SIGHUP), the runner stops the test that runs with it.
#
# Environment: PASST, TOOLS, QEMU, E2E_ACCEL as in lib.sh. The last line is
# always "e2e: N passed, N failed" (skips are listed, not counted); the
# exit status is non-zero if a test failed.
set -eu

DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$DIR/../.." && pwd)
export PASST=${PASST:-$TOP/build/passt}
export TOOLS=${TOOLS:-$TOP/build/test/tools}
E2E_TIMEOUT=${E2E_TIMEOUT:-150}
MODES=${E2E_MODES:-stream vhost-user}
VERBOSE=${PT_VERBOSE:-0}

while [ $# -gt 0 ]; do
	case "$1" in
	-v) VERBOSE=1 ;;
	--stream) MODES=stream ;;
	--vhost-user) MODES=vhost-user ;;
	--) shift; break ;;
	-*) echo "usage: $0 [-v] [--stream | --vhost-user] [TEST...]" >&2
	    exit 64 ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || set -- basic tcp udp reconnect migrate migrate_fail migrate_mq \
	multiqueue migrate_upstream migrate_from_upstream

# shellcheck source=../leftovers.sh
. "$TOP/test/leftovers.sh"

t_start=$(date +%s)
echo "e2e: daemon $PASST, modes: $MODES"
# E2E_GUEST_BUILT=1: the image was built outside, as for a run inside a
# Debian root (test/roots/run.sh builds it on the machine first)
if [ "${E2E_GUEST_BUILT:-0}" != 1 ] && ! "$TOP/test/guest/build.sh"; then
	echo "e2e: guest image build failed"
	echo "e2e: 0 passed, 1 failed"
	exit 1
fi

LOGDIR=$(mktemp -d "/tmp/passt-e2e.$$.XXXXXX")
# Stopped, the runner stops the test that runs with it (leftovers.sh)
id=
trap 'limited_stop; [ -z "$id" ] || leftovers "$id"; exit 143' TERM HUP
trap 'limited_stop; [ -z "$id" ] || leftovers "$id"; exit 130' INT
pass=0
fail=0
skipped=
failed=
for mode in $MODES; do
	for t in "$@"; do
		script=$DIR/tests/$t.sh
		name=$t/$mode
		log=$LOGDIR/$t-$mode.log
		id=e2e$$-$t-${mode%%-*}
		start=$(date +%s)
		st=0
		if [ ! -f "$script" ]; then
			echo "no such test: $script" >"$log"
			st=1
		else
			# A test may need more: "# e2e-timeout: SECS" in it
			to=$(sed -n 's/^# e2e-timeout: \([0-9]*\)$/\1/p' \
				"$script" | head -n 1)
			[ -n "$to" ] && [ "$to" -gt "$E2E_TIMEOUT" ] ||
				to=$E2E_TIMEOUT
			to=${PT_TEST_LIMIT:-$to}
			E2E_MODE=$mode PT_ID=$id limited "$to" bash "$script" \
				>"$log" 2>&1 </dev/null || st=$?
		fi
		# A test killed by timeout leaves its namespaces and QEMU
		if [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
			leftovers "$id"
		fi
		id=
		secs=$(($(date +%s) - start))
		case "$st" in
		0)
			pass=$((pass + 1))
			echo "PASS $name (${secs} s)"
			;;
		77)
			skipped="$skipped $name"
			echo "SKIP $name: $(sed -n 's/^SKIP: //p' "$log" |
				tail -n 1)"
			;;
		*)
			fail=$((fail + 1))
			failed="$failed $name"
			[ "$st" -eq 124 ] && echo "timed out after $to s" >>"$log"
			echo "FAIL $name (${secs} s, status $st)"
			;;
		esac
		if [ "$VERBOSE" = 1 ] || { [ "$st" -ne 0 ] && [ "$st" -ne 77 ]; }; then
			sed 's/^/    /' "$log"
		fi
	done
done

[ -z "$skipped" ] || echo "e2e: skipped:$skipped"
[ -z "$failed" ] || echo "e2e: failed:$failed (logs in $LOGDIR)"
[ -n "$failed" ] || rm -rf "$LOGDIR"
echo "e2e: total $(($(date +%s) - t_start)) s"
echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
