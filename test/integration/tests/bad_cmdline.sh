#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bad_cmdline.sh - configuration errors exit 1 with a message naming the
# option; --version exits 0. Every run gets -f and a socket path of ours,
# so that a daemon wrongly accepting the option can't escape to the
# background, and is killed by timeout.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_root

# run_bad PATTERN OPTION...: expect exit 1 and PATTERN on stderr
run_bad() {
	_pat=$1
	shift
	_st=0
	timeout 10 "$PASST" -f -s "$SOCK" "$@" >"$T/out" 2>"$T/err" || _st=$?
	sanitizer_check "$T/err"
	[ "$_st" -eq 1 ] || fail "passt $*: exit status $_st, expected 1"
	grep -q -i -e "$_pat" "$T/err" ||
		fail "passt $*: stderr doesn't match '$_pat': $(cat "$T/err")"
	log "passt $*: $(head -n 1 "$T/err")"
}

run_bad 'mtu' --mtu 70000

run_bad 'mtu' --mtu x
run_bad 'bogus' --bogus
run_bad 'requires --vhost-user' --migrate-exit
run_bad 'migrate-linger-timeout' --vhost-user --migrate-linger-timeout 0

st=0
timeout 10 "$PASST" --version >"$T/out" 2>"$T/err" || st=$?
expect "--version exit status" "$st" 0
grep -q . "$T/out" "$T/err" || fail "--version printed nothing"
[ ! -e "$SOCK" ] || fail "a bad command line left a socket behind"
