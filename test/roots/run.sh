#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# run.sh - make check's part in the newer Debian userlands: the daemon
# built and run inside Debian 13 (trixie: glibc 2.41, GCC 14) and sid
# (glibc 2.43, GCC 16, QEMU 11.1, libvirt 12.8), the roots .ci/roots.sh
# builds, entered with test/roots/enter.sh (pivot_root, not chroot).
#
# Usage: test/roots/run.sh [ROOT...]     (default: trixie sid)
#
# In each root, with the root's own compiler, C library and tools:
#   build        passt, passt-repair, the test tools, the test-hooks
#                daemon, the unit tests: -Werror stays (build-ROOT/)
#   unit         the cmocka unit tests
#   integration  the namespace tests that start the daemon: stream,
#                vhost-user (vu-front), migration with the repair helper,
#                the sandbox (a denied call's log line included)
# and in sid only (its QEMU 11.1 and libvirt 12.8):
#   e2e          a real guest: -netdev stream and -netdev vhost-user
#                (basic), -netdev passt in both modes, QEMU starting the
#                daemon (netdev_passt: 8 MiB each way, nothing left
#                behind), a live migration between two QEMUs with
#                streams both ways, every byte checked (migrate)
#   libvirt      libvirt 12.8 starts and stops the installed daemon in
#                both modes (lease, data, nothing left after destroy)
# The guest image is built on this machine first (make guest): the same
# image serves every QEMU.
#
# Cost, measured on the 2-core machine while other test runs loaded it:
# 19 minutes (trixie: build 95 s, unit 1 s, integration 134 s; sid: build,
# unit, integration 137 s, e2e 315 s, migration 56 s, libvirt 392 s).
#
# Each part prints its own results; the last line is "roots: N passed, N
# failed", counting parts, and the exit status is non-zero if one failed.
set -eu -o pipefail

DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$DIR/../.." && pwd)
ENTER=$DIR/enter.sh
[ $# -gt 0 ] || set -- trixie sid
VERSION=${VERSION:-$(git -C "$TOP" describe --always --dirty 2>/dev/null ||
		     echo 0.1)}

INTEGRATION="tcp_transfer dhcp4 ping udp_echo pid_file one_off pcap
	second_client freebind vu_basic vu_reconnect vu_event_idx migrate_basic
	migrate_resume migrate_failures repair_helper repair_peer
	sandbox_seccomp sandbox_status sandbox_fail_closed"
E2E_BOTH="basic netdev_passt"
E2E_VU="migrate"
LIBVIRT="caps stream vhost-user"

pass=0
fail=0
failed=
t0=$(date +%s)

# part ROOT NAME CMD...: run CMD inside ROOT, count it
part() {
	local root=$1 name=$2 st=0 start
	shift 2
	start=$(date +%s)
	echo "roots: $root: $name"
	"$ENTER" "$root" "$@" 2>&1 | sed 's/^/    /' || st=$?
	PART_ST=$st
	if [ "$st" -eq 0 ]; then
		pass=$((pass + 1))
		echo "PASS: $root $name ($(($(date +%s) - start)) s)"
	else
		fail=$((fail + 1))
		failed="$failed $root/$name"
		echo "FAIL: $root $name ($(($(date +%s) - start)) s, status $st)"
	fi
}

for root in "$@"; do
	if ! "$ENTER" "$root" true 2>/dev/null; then
		echo "FAIL: no $root root (sh .ci/setup builds it: .ci/roots.sh)"
		fail=$((fail + 1))
		failed="$failed $root"
		continue
	fi
	b=build-$root
	echo "roots: $root: $("$ENTER" "$root" sh -c \
		'ldd --version | head -n 1; cc --version | head -n 1' |
		tr '\n' ' ')"
	part "$root" build make -C "$TOP" -j2 -s BUILD="$b" VERSION="$VERSION" \
		"$b/passt" "$b/passt-repair" tools "$b/test/passt-hooks" \
		"$b/test/passt-repair-hooks" \
		unit-bins
	[ "$PART_ST" -eq 0 ] || continue
	part "$root" unit make -C "$TOP" -s BUILD="$b" VERSION="$VERSION" unit
	# shellcheck disable=SC2086
	part "$root" integration env PASST="$TOP/$b/passt" \
		TOOLS="$TOP/$b/test/tools" "$TOP/test/integration/run.sh" \
		$INTEGRATION
	[ "$root" = sid ] || continue

	if ! make -s -C "$TOP" guest >/tmp/passt-roots-guest.$$.log 2>&1; then
		sed 's/^/    /' /tmp/passt-roots-guest.$$.log
		echo "FAIL: guest image (make guest)"
		fail=$((fail + 1))
		failed="$failed guest"
	else
		# shellcheck disable=SC2086
		part "$root" e2e env PASST="$TOP/$b/passt" \
			TOOLS="$TOP/$b/test/tools" E2E_GUEST_BUILT=1 \
			"$TOP/test/e2e/run.sh" $E2E_BOTH
		# shellcheck disable=SC2086
		part "$root" e2e-migrate env PASST="$TOP/$b/passt" \
			TOOLS="$TOP/$b/test/tools" E2E_GUEST_BUILT=1 \
			"$TOP/test/e2e/run.sh" --vhost-user $E2E_VU
		# shellcheck disable=SC2086
		# Two boots per mode, and libvirtd probing QEMU 11.1 first
		part "$root" libvirt env BUILD="$b" E2E_GUEST_BUILT=1 LV_TIMEOUT=400 \
			VERSION="$VERSION" "$TOP/test/libvirt/run.sh" $LIBVIRT
	fi
	rm -f /tmp/passt-roots-guest.$$.log
done

echo "roots: $(($(date +%s) - t0)) s${failed:+, failed:$failed}"
echo "roots: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
