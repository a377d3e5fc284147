#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# deb.sh - the Debian package of contrib/debian: in a copy of the tree
# (the files git knows of, as they are in the working tree) with
# contrib/debian copied to debian/, "dpkg-buildpackage -b -us -uc" builds
# passt_*.deb; "dpkg -x" unpacks it into a throw-away root, where the
# binaries, their manual pages and QEMU's descriptor must be, and
# "passt --version" and "passt --help" must work.
set -eu
. "$(dirname "$0")/../../e2e/lib.sh"
need dpkg-buildpackage dpkg dh fakeroot git

# tree_files: the tree's source files, NUL-separated: what git knows of
# (tracked or not ignored), else everything but builds and the guest image
tree_files() {
	if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$TOP" ls-files -z --cached --others --exclude-standard
	else
		(cd "$TOP" && find . -type f -printf '%P\0')
	fi | grep -zv -e '^build' -e '^test/guest/out/' -e '^\.git/' \
		-e '^passt$' -e '\.[od]$'
}

S=$T/src
mkdir -p "$S"
tree_files | (cd "$TOP" && while IFS= read -r -d '' f; do
	[ -e "$f" ] && printf '%s\0' "$f"; done) |
	(cd "$TOP" && cpio -0 -pdm --quiet "$S")
cp -r "$S/contrib/debian" "$S/debian"

st=0
(cd "$S" && env -u BUILD -u TOOLS dpkg-buildpackage -b -us -uc) \
	>"$T/build.log" 2>&1 || st=$?
[ "$st" -eq 0 ] || { tail -n 30 "$T/build.log" >&2
		     fail "dpkg-buildpackage exited $st"; }
deb=$(ls "$T"/passt_*_*.deb 2>/dev/null | head -n 1)
[ -f "$deb" ] || fail "no passt_*.deb in $T: $(ls "$T")"
log "built $(basename "$deb"):"
dpkg-deb -c "$deb" | awk '{ print "  " $6 }' >&2

R=$T/root
dpkg -x "$deb" "$R"
files="usr/bin/passt usr/share/man/man1/passt.1.gz
       usr/share/qemu/vhost-user/50-passt.json"
if grep -q '^$(BUILD)/passt-repair:' "$S/Makefile"; then
	files="$files usr/bin/passt-repair"
fi
if [ -f "$S/doc/passt-repair.1" ]; then
	files="$files usr/share/man/man1/passt-repair.1.gz"
fi
for f in $files; do
	[ -f "$R/$f" ] || fail "the package has no /$f"
done
expect "descriptor binary" \
	"$(jq -r .binary "$R/usr/share/qemu/vhost-user/50-passt.json")" \
	/usr/bin/passt

# run WHAT ARG...: the unpacked binary must exit 0 and say something
run() {
	local st=0
	"$R/usr/bin/$1" "${@:2}" >"$T/out" 2>&1 </dev/null || st=$?
	expect "$* exit status ($(head -n 3 "$T/out"))" "$st" 0
	[ -s "$T/out" ] || fail "$*: no output"
	log "$*: $(head -n 1 "$T/out")"
}
run passt --version
run passt --help
grep -q -- --vhost-user "$T/out" || fail "passt --help doesn't list --vhost-user"
case " $files " in
*" usr/bin/passt-repair "*) run passt-repair --version ;;
esac
