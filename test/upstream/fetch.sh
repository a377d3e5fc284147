#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fetch.sh [DIR] - Debian 13 (trixie)'s passt, runnable here, for
# interoperability and comparison tests. Nothing is installed system-wide.
#
# How: a throw-away apt configuration (in DIR/apt) whose only source is
# "deb URI trixie main", where URI is the Debian archive this machine's own
# apt sources already use (.ci/mirror.sh reads it at run time; no host name
# is written anywhere), signed by the keyring that bookworm's
# debian-archive-keyring package ships. "apt-get download passt libc6",
# "dpkg -x" both into DIR, then copies of passt, passt.avx2 and passt-repair
# in DIR/bin are patched (patchelf) to use trixie's loader and libraries
# from DIR. Running them through the loader instead doesn't work: passt
# re-executes itself by its own name.
#
# DIR defaults to $PASST_UPSTREAM_DIR or /var/cache/passt-test/upstream.
# If DIR/bin/passt already runs, nothing is done (cached). On success the
# last line on stdout is the directory holding the binaries (DIR/bin).
#
# Exit status: 0 ready, 77 the archive is unreachable or has no trixie
# passt (tests should skip), 1 anything else.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
DIR=${1:-${PASST_UPSTREAM_DIR:-/var/cache/passt-test/upstream}}
SUITE=${PASST_UPSTREAM_SUITE:-trixie}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
LIB=$DIR/usr/lib/x86_64-linux-gnu

msg() {
	printf 'fetch.sh: %s\n' "$*" >&2
}

unreachable() {
	msg "SKIP: $*"
	exit 77
}

# version: what the patched passt --version says (it leaves stdout
# unflushed when that isn't a terminal: stdbuf makes it line-buffered)
version() {
	stdbuf -oL "$DIR/bin/passt" --version 2>&1 | head -n 1
}

# ready: the patched binaries exist and passt --version runs and answers
ready() {
	[ -x "$DIR/bin/passt" ] && [ -x "$DIR/bin/passt-repair" ] &&
		"$DIR/bin/passt" --version >/dev/null 2>&1 &&
		version | grep -q '^passt '
}

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if ready; then
	msg "cached: $(version)"
	echo "$DIR/bin"
	exit 0
fi

command -v apt-get >/dev/null || { msg "no apt-get"; exit 1; }
command -v dpkg >/dev/null || { msg "no dpkg"; exit 1; }
command -v patchelf >/dev/null ||
	{ msg "no patchelf (apt-get install patchelf)"; exit 1; }
[ -r "$KEYRING" ] || { msg "no $KEYRING (debian-archive-keyring)"; exit 1; }

URI=$(sh "$TOP/.ci/mirror.sh") ||
	unreachable "no Debian archive named in this machine's apt sources"

# The throw-away apt configuration: one source, own lists and cache
A=$DIR/apt
rm -rf "$A"
mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/debs" \
	"$A/etc/preferences.d" "$A/etc/apt.conf.d"
echo "deb [signed-by=$KEYRING] $URI $SUITE main" >"$A/sources.list"
: >"$A/status"
set -- -q -o Dir::Etc::sourcelist="$A/sources.list" \
	-o Dir::Etc::sourceparts=/dev/null \
	-o Dir::Etc::preferencesparts="$A/etc/preferences.d" \
	-o Dir::Etc::parts="$A/etc/apt.conf.d" \
	-o Dir::State::Lists="$A/lists" \
	-o Dir::State::status="$A/status" \
	-o Dir::Cache="$A/cache" \
	-o APT::Architecture=amd64 \
	-o Debug::NoLocking=1 \
	-o Acquire::Languages=none \
	-o Acquire::Retries=2 \
	-o Acquire::http::Timeout=30

msg "apt-get update ($SUITE main)"
if ! apt-get "$@" update >"$A/update.log" 2>&1 ||
	grep -qE '^(W|E): (Failed|Some index|The repository)' "$A/update.log"; then
	cat "$A/update.log" >&2
	unreachable "the archive's $SUITE suite is unreachable"
fi

msg "apt-get download passt libc6"
if ! (cd "$A/debs" && apt-get "$@" download passt libc6) \
	>"$A/download.log" 2>&1; then
	cat "$A/download.log" >&2
	unreachable "could not download passt and libc6 from $SUITE"
fi

for deb in "$A"/debs/*.deb; do
	msg "dpkg -x ${deb##*/}"
	dpkg -x "$deb" "$DIR"
done

[ -x "$LIB/ld-linux-x86-64.so.2" ] ||
	{ msg "no loader at $LIB/ld-linux-x86-64.so.2"; exit 1; }
mkdir -p "$DIR/bin"
for b in passt passt.avx2 passt-repair; do
	[ -f "$DIR/usr/bin/$b" ] || { msg "package lacks $b"; exit 1; }
	cp "$DIR/usr/bin/$b" "$DIR/bin/$b.tmp"
	patchelf --set-interpreter "$LIB/ld-linux-x86-64.so.2" \
		--set-rpath "$LIB" "$DIR/bin/$b.tmp"
	mv "$DIR/bin/$b.tmp" "$DIR/bin/$b"
done

if ! ready; then
	"$DIR/bin/passt" --version >&2 || :
	msg "the patched passt does not run"
	exit 1
fi
msg "ready: $(version) in $DIR/bin"
echo "$DIR/bin"
