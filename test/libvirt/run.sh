#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - the daemon as libvirt and QEMU's back-end discovery see it, and
# as a Debian package. Installs our build with "make install" into a
# temporary PREFIX, and with PREFIX=/usr into a temporary DESTDIR, first
# ("make uninstall" at the end must leave no file in either), then runs,
# each with its own namespaces and temporary files:
#
#   caps         tests/caps.sh: the installed files, QEMU's vhost-user
#                descriptor, "passt --print-capabilities" without
#                --vhost-user (JSON only, on stdout), make uninstall
#   deb          tests/deb.sh: dpkg-buildpackage of contrib/debian in a
#                copy of the tree, dpkg -x, the binaries run from there
#   stream       tests/domain.sh with <interface type='user'> (passt)
#   vhost-user   tests/domain.sh with <interface type='vhostuser'> (passt)
#
# Usage: run.sh [-v] [TEST...]       (default: all of the above)
#
# Environment: BUILD (the build directory "make install" takes, default
# build), TOOLS (sockio), LV_TIMEOUT (seconds per test, default 200). No
# libvirt, no QEMU: the tests fail (CI installs them: .ci/setup). The last
# line is always "libvirt: N passed, N failed"; the exit status is
# non-zero if a test failed.
set -eu

DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$DIR/../.." && pwd)
BUILD=${BUILD:-build}
export TOOLS=${TOOLS:-$TOP/$BUILD/test/tools}
LV_TIMEOUT=${LV_TIMEOUT:-200}
VERBOSE=${PT_VERBOSE:-0}

while [ $# -gt 0 ]; do
	case "$1" in
	-v) VERBOSE=1 ;;
	--) shift; break ;;
	-*) echo "usage: $0 [-v] [TEST...]" >&2; exit 64 ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || set -- caps deb stream vhost-user

# shellcheck source=../leftovers.sh
. "$TOP/test/leftovers.sh"

t_start=$(date +%s)
LOGDIR=$(mktemp -d "/tmp/passt-libvirt.$$.XXXXXX")
# libvirt-qemu runs the installed passt: the prefix must be reachable
export LV_PREFIX=$LOGDIR/prefix
# and the same with PREFIX=/usr under a DESTDIR
export LV_DESTDIR=$LOGDIR/destdir
chmod 0755 "$LOGDIR"
pass=0
fail=0
failed=

# result NAME STATUS SECS LOG
result() {
	if [ "$2" -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS $1 ($3 s)"
	else
		fail=$((fail + 1))
		failed="$failed $1"
		[ "$2" -eq 124 ] && echo "timed out after $LV_TIMEOUT s" >>"$4"
		[ "$2" -eq 77 ] && echo "(skipped: a skip is a failure here)" >>"$4"
		echo "FAIL $1 ($3 s, status $2)"
	fi
	if [ "$VERBOSE" = 1 ] || [ "$2" -ne 0 ]; then
		sed 's/^/    /' "$4"
	fi
}

echo "libvirt: installing $BUILD into $LV_PREFIX"
st=0
{ make -s -C "$TOP" BUILD="$BUILD" install PREFIX="$LV_PREFIX" &&
  make -s -C "$TOP" BUILD="$BUILD" install PREFIX=/usr DESTDIR="$LV_DESTDIR" &&
  { [ "${E2E_GUEST_BUILT:-0}" = 1 ] || "$TOP/test/guest/build.sh"; }; } \
	>"$LOGDIR/setup.log" 2>&1 || st=$?
result setup "$st" $(($(date +%s) - t_start)) "$LOGDIR/setup.log"
if [ "$st" -ne 0 ]; then
	echo "libvirt: $pass passed, $fail failed"
	exit 1
fi

for t in "$@"; do
	case "$t" in
	stream|vhost-user) script=$DIR/tests/domain.sh; mode=$t ;;
	*) script=$DIR/tests/$t.sh; mode= ;;
	esac
	log=$LOGDIR/$t.log
	id=lv$$-${t%%-*}
	start=$(date +%s)
	st=0
	if [ ! -f "$script" ]; then
		echo "no such test: $t" >"$log"
		st=1
	else
		E2E_MODE=$mode PT_ID=$id BUILD=$BUILD \
			timeout -k 10 "$LV_TIMEOUT" bash "$script" \
			>"$log" 2>&1 </dev/null || st=$?
	fi
	[ "$st" -ne 124 ] && [ "$st" -ne 137 ] || leftovers "$id"
	# The argv libvirt used, in this log too
	sed -n 's/^argv /libvirt: passt argv, /p' "$log"
	result "$t" "$st" $(($(date +%s) - start)) "$log"
done

st=0
{ make -s -C "$TOP" BUILD="$BUILD" uninstall PREFIX="$LV_PREFIX" &&
  make -s -C "$TOP" BUILD="$BUILD" uninstall PREFIX=/usr \
	DESTDIR="$LV_DESTDIR"; } >"$LOGDIR/uninstall.log" 2>&1 || st=$?
left=$(find "$LV_PREFIX" "$LV_DESTDIR" -type f 2>/dev/null)
if [ "$st" -eq 0 ] && [ -n "$left" ]; then
	echo "make uninstall left: $left" >>"$LOGDIR/uninstall.log"
	st=1
fi
result uninstall "$st" 0 "$LOGDIR/uninstall.log"

[ -z "$failed" ] || echo "libvirt: failed:$failed (logs in $LOGDIR)"
[ -n "$failed" ] || rm -rf "$LOGDIR"
echo "libvirt: total $(($(date +%s) - t_start)) s"
echo "libvirt: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
