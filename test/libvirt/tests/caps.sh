#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# caps.sh - what "make install" put into $LV_PREFIX (run.sh), as QEMU's
# vhost-user back-end discovery uses it: the descriptor in
# share/qemu/vhost-user/ follows QEMU's schema (docs/interop/
# vhost-user.json: description, type "net", binary, optional tags) and
# names the installed binary; that binary, run with --print-capabilities
# alone (no --vhost-user; even in a namespace with no network), exits 0
# with one JSON object saying type "net" on stdout and nothing on stderr.
# The installation with PREFIX=/usr and a DESTDIR has everything where it
# belongs (run.sh checks that uninstall leaves nothing in either).
set -eu
. "$(dirname "$0")/../../e2e/lib.sh"
need jq

BUILD=${BUILD:-build}
P=$LV_PREFIX
[ -n "$P" ] || fail "LV_PREFIX not set (run run.sh)"

files="bin/passt share/man/man1/passt.1 share/qemu/vhost-user/50-passt.json"
# passt-repair and its page, as soon as the tree has them
[ -x "$TOP/$BUILD/passt-repair" ] && files="$files bin/passt-repair"
[ -f "$TOP/doc/passt-repair.1" ] &&
	files="$files share/man/man1/passt-repair.1"
for f in $files; do
	[ -f "$P/$f" ] || fail "make install: no $P/$f"
done
log "installed: $files"

desc=$P/share/qemu/vhost-user/50-passt.json
jq -e 'type == "object"' "$desc" >/dev/null || fail "$desc: not a JSON object"
extra=$(jq -r 'keys - ["description", "type", "binary", "tags"] | .[]' \
	"$desc")
[ -z "$extra" ] || fail "$desc: members QEMU's schema lacks: $extra"
expect "descriptor type" "$(jq -r .type "$desc")" net
expect "descriptor description is a string" \
	"$(jq -r '.description | type' "$desc")" string
bin=$(jq -r .binary "$desc")
expect "descriptor binary" "$bin" "$P/bin/passt"
[ -x "$bin" ] || fail "descriptor binary $bin is not executable"

# caps OPTION...: BINARY OPTION... must print only the capabilities
caps() {
	local st=0
	"${NS[@]}" "$bin" "$@" >"$T/caps.out" 2>"$T/caps.err" </dev/null ||
		st=$?
	expect "'passt $*' exit status ($(cat "$T/caps.err"))" "$st" 0
	[ ! -s "$T/caps.err" ] || fail "'passt $*' wrote to stderr:" \
		"$(cat "$T/caps.err")"
	expect "'passt $*': JSON values on stdout" \
		"$(jq -s length "$T/caps.out" 2>&1)" 1
	expect "'passt $*': type" "$(jq -r .type "$T/caps.out")" net
	log "passt $*: $(tr -d '\n' <"$T/caps.out")"
}
NS=()
caps --print-capabilities
caps --vhost-user --print-capabilities
# Where the daemon itself couldn't run: no route, no address (the
# clean-up removes the namespace)
ip netns add "$GUEST" || fail "can't create a namespace"
NS=(ip netns exec "$GUEST")
caps --print-capabilities

# DESTDIR (run.sh installed with PREFIX=/usr there): files under it, the
# descriptor names the final path
R=$LV_DESTDIR
[ -n "$R" ] || fail "LV_DESTDIR not set (run run.sh)"
for f in $files; do
	[ -f "$R/usr/$f" ] || fail "make install DESTDIR: no $R/usr/$f"
done
expect "descriptor binary with DESTDIR" \
	"$(jq -r .binary "$R/usr/share/qemu/vhost-user/50-passt.json")" \
	/usr/bin/passt
log "install with DESTDIR: OK"
