#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# repair_peer.sh - the daemon takes a repair helper (which gets its TCP
# sockets) only if SO_PEERCRED says it runs as root or as the daemon's
# own user. The helpers here are our passt-repair, started as the user
# each case needs; the daemon's log says "Repair helper connected" or
# "Repair helper refused: it runs as user N, neither root nor ours".
#
#   started as root (the daemon becomes nobody, 65534; the repair socket
#   stays writable for root's group, so these helpers run with group 0):
#     uid 4242: refused; nobody: refused (ours, but any process may run
#     as nobody: started as root without --runas, only root is taken);
#     root: taken
#   started as root with --runas 4243 (a user of its own):
#     uid 4242: refused; uid 4243: taken; root: taken
#   started as uid 1000, in a directory of its own (umask 0: anybody may
#   connect to its sockets):
#     root: taken (KubeVirt: the launcher's user and virt-handler's root);
#     uid 4242: refused; uid 1000: taken
#
# Inside the daemon's user namespace every user but its own reads as the
# overflow uid 65534: nobody, root and 4242 alike. Only the peer
# credential checker, outside it, tells them apart (isolation_peer.c).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

REPAIR=${REPAIR:-$(dirname "$PASST")/passt-repair}
[ -x "$REPAIR" ] || REPAIR=$TOP/build/passt-repair
[ -x "$REPAIR" ] || fail "no passt-repair next to $PASST or in build/ (make)"
setup_ns
need setpriv

# daemon NAME [WRAPPER...]: the daemon in HOST, vhost-user, foreground,
# with DAEMON_OPTS
daemon() {
	_name=$1
	shift
	rm -f "$SOCK" "$SOCK.repair" "$PIDFILE"
	DLOG=$T/$_name.err
	# shellcheck disable=SC2086 # options, split
	ip netns exec "$HOST" "$@" sh -c 'umask 0; exec "$@"' sh "$PASST" \
		-f --vhost-user -s "$SOCK" -P "$PIDFILE" ${DAEMON_OPTS:-} \
		>"$T/$_name.out" 2>"$DLOG" &
	PASST_PID=$!
	PASST_ERR=$DLOG
	track "$PASST_PID"
	wait_for "grep -q 'Sandboxed' '$DLOG' || ! alive $PASST_PID" 10 ||
		fail "$_name: daemon not sandboxed"
	passt_check_alive
	[ -S "$SOCK.repair" ] || fail "$_name: no repair socket"
}

# helper NAME taken|refused [SETPRIV OPTION...]: a helper as that user
helper() {
	_name=$1 _want=$2
	shift 2
	_conn=$(grep -c 'Repair helper connected' "$DLOG" || :)
	_ref=$(grep -c 'Repair helper refused' "$DLOG" || :)
	if [ $# -gt 0 ]; then
		setpriv "$@" --clear-groups "$REPAIR" "$SOCK.repair" \
			2>"$T/$_name.helper.err" &
	else
		"$REPAIR" "$SOCK.repair" 2>"$T/$_name.helper.err" &
	fi
	_hpid=$!
	track "$_hpid"
	if [ "$_want" = taken ]; then
		wait_for "[ \$(grep -c 'Repair helper connected' '$DLOG') -gt $_conn ]" 10 ||
			fail "$_name: helper not taken: $(grep 'Repair helper' "$DLOG" | tail -n 2)"
		[ "$(grep -c 'Repair helper refused' "$DLOG" || :)" = "$_ref" ] ||
			fail "$_name: refused too"
		kill -TERM "$_hpid"
		wait_for "[ \$(grep -c 'Repair helper disconnected' '$DLOG') -gt $_conn ]" 10 ||
			fail "$_name: the daemon didn't see the helper go"
		wait "$_hpid" 2>/dev/null || :
	else
		wait_for "[ \$(grep -c 'Repair helper refused' '$DLOG') -gt $_ref ]" 10 ||
			fail "$_name: helper not refused: $(grep 'Repair helper' "$DLOG" | tail -n 2)"
		grep 'Repair helper refused' "$DLOG" | tail -n 1 |
			grep -q "it runs as user ${1#--reuid=}," ||
			fail "$_name: $(grep 'Repair helper refused' "$DLOG" | tail -n 1)"
		[ "$(grep -c 'Repair helper connected' "$DLOG" || :)" = "$_conn" ] ||
			fail "$_name: taken all the same"
		# It sees the connection closed: end of file, status 0
		bg_wait "$_hpid" 10 || fail "$_name: refused helper still running"
	fi
	passt_check_alive
	log "$_name: $_want"
}

# ---- started as root: the daemon runs as nobody
daemon root
helper root-4242 refused --reuid=4242 --regid=0
helper root-nobody refused --reuid=65534 --regid=0
grep 'Repair helper refused' "$DLOG" | tail -n 1 | grep -q 'not root' ||
	fail "root-nobody: $(grep 'Repair helper refused' "$DLOG" | tail -n 1)"
helper root-root taken
passt_stop

# ---- started as root with --runas: that user's helper is taken
DAEMON_OPTS="--runas 4243" daemon runas
helper runas-4242 refused --reuid=4242 --regid=0
helper runas-4243 taken --reuid=4243 --regid=0
helper runas-root taken
passt_stop

# ---- started as uid 1000, as libvirt or KubeVirt's launcher start it, in
# a directory of its own (passt-repair takes a socket of uid 1000's only
# in uid 1000's directory)
mkdir -m 0755 "$T/u"
chown 1000:1000 "$T/u"
SOCK=$T/u/passt.socket PIDFILE=$T/u/passt.pid
daemon user setpriv --reuid=1000 --regid=1000 --clear-groups
grep -q 'Sandboxed' "$DLOG" || fail "user: not sandboxed"
helper user-root taken
helper user-4242 refused --reuid=4242 --regid=4242
helper user-1000 taken --reuid=1000 --regid=1000
passt_stop
log "all cases passed"
