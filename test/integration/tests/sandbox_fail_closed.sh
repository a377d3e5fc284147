#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sandbox_fail_closed.sh - a sandbox that can't be built stops the daemon:
# each part made to fail in turn (test/tools/sysdeny makes the system call
# return EPERM before the daemon runs, as a kernel or a container runtime
# that forbids it would): the user, mount, IPC and UTS namespaces, the
# pivot into the empty root, the capability drop, no_new_privs, the
# seccomp filter (the daemon's and its peer credential checker's). The
# daemon must exit with status 1 and exactly one error line, naming what
# failed, and never say "Sandboxed". Also a real environment without user
# namespaces: user.max_user_namespaces=0, set in a user namespace of the
# test's own (the limit is per user namespace: the machine's stays).
#
# Daemonized as libvirt starts it, the parent must wait for the sandbox:
# it exits 1 with the daemon's error line on its standard error, leaving
# no pid file, socket or process behind; and when all goes well, it
# exits 0 only once the daemon is sandboxed.
#
# --sandbox-best-effort: a warning at start, one per part it goes without,
# a summary once the filter is in place, and the parts that did work are
# there (root started: namespaces but the user one, the empty root, no
# capabilities, seccomp; an unprivileged user: seccomp and no_new_privs).
# The option is in --help and passt(1).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

DENY=$TOOLS/sysdeny
[ -x "$DENY" ] || fail "no sysdeny in $TOOLS"
setup_ns
need setpriv unshare nsenter

SAN=0
grep -qa __asan_init "$PASST" && SAN=1

# clone flags, for unshare()'s argument 0
NEWUSER=0x10000000 NEWNS=0x00020000 NEWIPC=0x08000000 NEWUTS=0x04000000
PR_SET_SECCOMP=22 PR_SET_NO_NEW_PRIVS=38

status_field() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"
}

ns_id() {
	readlink "/proc/$1/ns/$2"
}

# refused NAME WHAT RULE... [-- OPTION...]: the daemon, root started, in
# the foreground, with RULEs denied, must exit 1 saying "Sandbox: WHAT"
refused() {
	_name=$1 _what=$2
	shift 2
	_rules=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		_rules="$_rules $1"
		shift
	done
	[ $# -eq 0 ] || shift
	rm -f "$SOCK" "$PIDFILE"
	_st=0
	# shellcheck disable=SC2086
	timeout 20 ip netns exec "$HOST" "$DENY" $_rules -- "$PASST" -f \
		-s "$SOCK" -P "$PIDFILE" "$@" >"$T/$_name.out" \
		2>"$T/$_name.err" || _st=$?
	expect "$_name: exit status" "$_st" 1
	grep -q 'Sandboxed' "$T/$_name.err" &&
		fail "$_name: sandboxed all the same: $(cat "$T/$_name.err")"
	expect "$_name: error lines" "$(grep -c 'ERROR' "$T/$_name.err")" 1
	grep -q "ERROR: Sandbox: $_what" "$T/$_name.err" ||
		fail "$_name: no 'Sandbox: $_what': $(grep ERROR "$T/$_name.err")"
	sanitizer_check "$T/$_name.err"
	log "$_name: $(grep ERROR "$T/$_name.err")"
}

# ---- each part, in both modes where the mode matters
refused userns "can't create a user namespace" \
	"unshare:0:$NEWUSER:$NEWUSER"
refused userns-vu "can't create a user namespace" \
	"unshare:0:$NEWUSER:$NEWUSER" -- --vhost-user
refused mountns "can't create a mount namespace" "unshare:0:$NEWNS:$NEWNS"
refused ipcns "can't create an IPC namespace" "unshare:0:$NEWIPC:$NEWIPC"
refused utsns "can't create a UTS namespace" "unshare:0:$NEWUTS:$NEWUTS"
refused pivot "can't pivot into an empty root" pivot_root
refused caps "can't keep the capabilities the set-up needs" capset
refused nnp "can't set no_new_privs" \
	"prctl:0:0xffffffff:$PR_SET_NO_NEW_PRIVS"
refused seccomp "seccomp: can't" seccomp \
	"prctl:0:0xffffffff:$PR_SET_SECCOMP"
refused seccomp-vu "the peer credential checker couldn't sandbox itself" \
	seccomp "prctl:0:0xffffffff:$PR_SET_SECCOMP" -- --vhost-user
refused seccomp-direct "seccomp: can't" seccomp \
	"prctl:0:0xffffffff:$PR_SET_SECCOMP" -- --vhost-user --repair-path none

# ---- an unprivileged user, where unprivileged user namespaces are off
refused unpriv "can't create a user namespace" \
	"unshare:0:$NEWUSER:$NEWUSER" -- --runas 4242

# ---- the real thing: no user namespaces left to create. A user namespace
# of the test's own, mapping root and nobody, sets its limit to 0
unshare --user sleep 600 &
UNS=$!
track "$UNS"
wait_for "[ '$(ns_id $$ user)' != \"\$(readlink /proc/$UNS/ns/user)\" ]" 10 ||
	fail "no user namespace for the limit"
echo "0 0 65536" >"/proc/$UNS/uid_map"
echo "0 0 65536" >"/proc/$UNS/gid_map"
before=$(cat /proc/sys/user/max_user_namespaces)
rm -f "$SOCK" "$PIDFILE"
st=0
timeout 20 ip netns exec "$HOST" nsenter --user --target "$UNS" sh -c \
	'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' sh \
	"$PASST" -f -s "$SOCK" -P "$PIDFILE" >"$T/limit.out" 2>"$T/limit.err" ||
	st=$?
expect "user.max_user_namespaces: unchanged outside" \
	"$(cat /proc/sys/user/max_user_namespaces)" "$before"
expect "limit: exit status" "$st" 1
grep -q "ERROR: Sandbox: can't create a user namespace: No space left on device" \
	"$T/limit.err" || fail "limit: $(cat "$T/limit.err")"
log "limit: $(grep ERROR "$T/limit.err")"

# ---- daemonized, as libvirt starts it: the parent reports the failure
rm -f "$SOCK" "$PIDFILE"
st=0
timeout 20 ip netns exec "$HOST" "$DENY" "unshare:0:$NEWUSER:$NEWUSER" -- \
	"$PASST" --vhost-user --one-off --socket "$SOCK" --pid "$PIDFILE" \
	--log-file "$T/daemon.log" >"$T/daemon.out" 2>"$T/daemon.err" ||
	st=$?
expect "daemonized: parent's exit status" "$st" 1
grep -q "Sandbox: can't create a user namespace" "$T/daemon.err" ||
	fail "daemonized: the parent didn't relay it: $(cat "$T/daemon.err")"
grep -q "Sandbox: can't create a user namespace" "$T/daemon.log" ||
	fail "daemonized: not in the log file"
[ ! -e "$PIDFILE" ] || fail "daemonized: pid file left behind"
[ ! -e "$SOCK" ] || fail "daemonized: socket left behind"
[ ! -e "$SOCK.repair" ] || fail "daemonized: repair socket left behind"
wait_for "[ -z \"\$(ip netns pids $HOST)\" ]" 10 ||
	fail "daemonized: processes left: $(ip netns pids "$HOST")"

# ...and when it works, the parent returns once the daemon is sandboxed
rm -f "$SOCK" "$PIDFILE"
timeout 20 ip netns exec "$HOST" "$PASST" --vhost-user --one-off \
	--socket "$SOCK" --pid "$PIDFILE" --log-file "$T/good.log" \
	>"$T/good.out" 2>&1 || fail "daemonized: $(cat "$T/good.out")"
PID=$(tr -d ' \n' <"$PIDFILE")
track "$PID"
expect "daemonized: Seccomp as the parent returns" \
	"$(status_field "$PID" Seccomp)" 2
kill -TERM "$PID"
wait_for "! alive $PID" 10 || fail "daemonized: ignores SIGTERM"

# ---- --sandbox-best-effort, root started, no user namespace
best() {
	_name=$1
	shift
	rm -f "$SOCK" "$PIDFILE"
	ip netns exec "$HOST" "$DENY" "unshare:0:$NEWUSER:$NEWUSER" -- \
		"$@" "$PASST" -f -s "$SOCK" -P "$PIDFILE" --vhost-user \
		--sandbox-best-effort >"$T/$_name.out" 2>"$T/$_name.err" &
	PID=$!
	track "$PID"
	wait_for "grep -q 'Sandbox incomplete' '$T/$_name.err' ||
		  ! alive $PID" 10 || fail "$_name: no summary line"
	alive "$PID" || fail "$_name: died: $(tail -n 5 "$T/$_name.err")"
	grep -q 'WARNING: --sandbox-best-effort: ' "$T/$_name.err" ||
		fail "$_name: no warning at start"
	grep -q "Sandbox: can't create a user namespace: Operation not permitted; going on without it" \
		"$T/$_name.err" || fail "$_name: $(grep Sandbox "$T/$_name.err")"
	# PID may be setpriv's exec'd daemon: it is, setpriv execs
	expect "$_name: NoNewPrivs" "$(status_field "$PID" NoNewPrivs)" 1
	expect "$_name: Seccomp" "$(status_field "$PID" Seccomp)" 2
	expect "$_name: user namespace" "$(ns_id "$PID" user)" \
		"$(ns_id $$ user)"
	log "$_name: $(grep 'Sandbox incomplete' "$T/$_name.err")"
}
best best
for f in CapEff CapPrm CapBnd; do
	expect "best: $f" "$(status_field "$PID" $f)" 0000000000000000
done
# (ip netns exec gives every process a mount namespace: the root tells)
for n in ipc uts; do
	[ "$(ns_id "$PID" $n)" != "$(ns_id $$ $n)" ] || fail "best: no $n namespace"
done
if [ "$SAN" = 0 ]; then
	expect "best: root directory" "$(ls -A "/proc/$PID/root/")" ""
fi
grep -q 'Sandbox incomplete (--sandbox-best-effort), without: can.t create a user namespace$' \
	"$T/best.err" || fail "best: $(grep 'Sandbox incomplete' "$T/best.err")"
grep -q 'Sandboxed: seccomp profile vhost-user-migrate' "$T/best.err" ||
	fail "best: no seccomp line"
PASST_PID=$PID PASST_ERR=$T/best.err passt_stop

# ...an unprivileged user: no namespaces at all, no empty root; seccomp
best unpriv setpriv --reuid 4242 --regid 4242 --clear-groups
expect "unpriv: Uid" "$(status_field "$PID" Uid)" "4242	4242	4242	4242"
[ -d "/proc/$PID/root/etc" ] || fail "unpriv: an empty root after all?"
for w in "can't create a mount namespace" "no empty root"; do
	grep -q "Sandbox incomplete.*$w" "$T/unpriv.err" ||
		fail "unpriv: '$w' not in $(grep 'Sandbox incomplete' "$T/unpriv.err")"
done
PASST_PID=$PID PASST_ERR=$T/unpriv.err passt_stop

# ---- documented
"$PASST" --help | grep -q -- '--sandbox-best-effort' || fail "not in --help"
grep -q 'sandbox\\-best\\-effort' "$TOP/doc/passt.1" || fail "not in passt(1)"
log "all cases passed"
