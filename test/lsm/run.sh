#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# test/lsm/run.sh - the LSM profiles in contrib/ are valid: each AppArmor
# profile parses (apparmor_parser -Q: parse only, nothing is loaded), and
# a broken copy of one does not (so the check can fail); the SELinux
# module compiles with the reference policy's development Makefile into a
# policy package. Needs apparmor, checkpolicy and selinux-policy-dev
# (.ci/setup installs them).
set -eu

TOP=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/passt-lsm.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

ok() {
	echo "PASS: $*"
	pass=$((pass + 1))
}

ko() {
	echo "FAIL: $*"
	fail=$((fail + 1))
}

for p in "$TOP"/contrib/apparmor/usr.bin.*; do
	if apparmor_parser -Q -K "$p" 2>"$T/aa.err"; then
		ok "apparmor: $(basename "$p") parses"
	else
		ko "apparmor: $(basename "$p"): $(grep -v 'Cache read' "$T/aa.err")"
	fi
done

# Negative control: an unknown rule must be refused
sed 's/^  network unix stream,/  network unix bogus-type,/' \
	"$TOP/contrib/apparmor/usr.bin.passt" >"$T/broken"
if apparmor_parser -Q -K "$T/broken" 2>/dev/null; then
	ko "apparmor: a broken profile parses: the check proves nothing"
else
	ok "apparmor: a broken profile is refused"
fi

cp "$TOP"/contrib/selinux/passt.te "$TOP"/contrib/selinux/passt.fc \
	"$TOP"/contrib/selinux/passt.if "$T/"
if (cd "$T" && make -f /usr/share/selinux/devel/Makefile NAME=default \
	passt.pp) >"$T/se.log" 2>&1 && [ -s "$T/passt.pp" ]; then
	ok "selinux: passt.pp builds ($(wc -c <"$T/passt.pp") bytes)"
else
	ko "selinux: passt.pp: $(tail -n 5 "$T/se.log")"
fi
if grep -q -i 'warning' "$T/se.log"; then
	ko "selinux: warnings: $(grep -i warning "$T/se.log")"
fi

echo "lsm: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
