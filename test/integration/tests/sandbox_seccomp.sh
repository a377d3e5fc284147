#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sandbox_seccomp.sh - a system call outside the allow-list kills the
# daemon (SIGSYS, SCMP_ACT_KILL_PROCESS), in stream and vhost-user mode.
# The call is made by a test-only path: PASST_TEST_FORBIDDEN_SYSCALL=NAME,
# honoured only by the daemon built with -DPASST_TEST_HOOKS (make's
# $(BUILD)/test/passt-hooks). The plain daemon has no such path: it
# ignores the variable and keeps running. Also: an allowed call made the
# same way (close, on fd 0) does not kill the hooks build.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

HOOKS=${PASST_HOOKS:-$(dirname "$PASST")/test/passt-hooks}
[ -x "$HOOKS" ] || fail "no test-hooks daemon at $HOOKS (make \$(BUILD)/test/passt-hooks)"

setup_ns

# The release build must not carry the hook at all
if grep -qa PASST_TEST_FORBIDDEN_SYSCALL "$PASST"; then
	fail "$PASST has the test hook compiled in"
fi
grep -qa PASST_TEST_FORBIDDEN_SYSCALL "$HOOKS" ||
	fail "$HOOKS has no test hook"

# run NAME BINARY SYSCALL OPTION...: the daemon in the foreground with the
# hook's variable set; sets PID once it is sandboxed
run() {
	_name=$1
	_bin=$2
	_sys=$3
	shift 3
	rm -f "$SOCK" "$PIDFILE"
	PASST_TEST_FORBIDDEN_SYSCALL=$_sys ip netns exec "$HOST" "$_bin" -f \
		-s "$SOCK" -P "$PIDFILE" "$@" >"$T/$_name.out" 2>"$T/$_name.err" &
	PID=$!
	track "$PID"
	wait_for "grep -q 'Sandboxed: seccomp profile' '$T/$_name.err' ||
		  ! alive $PID" 10 || fail "$_name: never sandboxed"
}

# killed NAME SYSCALL: the daemon died of SIGSYS right after the hook call
killed() {
	bg_wait "$PID" 10 || fail "$1: still running after calling $2"
	expect "$1: exit status (128 + SIGSYS)" "$BG_ST" $((128 + 31))
	grep -q "Test hook: calling $2" "$T/$1.err" ||
		fail "$1: the hook did not run: $(cat "$T/$1.err")"
	grep -q 'Test hook: .* returned' "$T/$1.err" &&
		fail "$1: $2 returned instead of killing the daemon"
	sanitizer_check "$T/$1.err"
	log "$1: $2 killed the daemon (status $BG_ST)"
}

# ---- forbidden calls kill, in each mode
run stream-getcwd "$HOOKS" getcwd
killed stream-getcwd getcwd
run vu-execve "$HOOKS" execve --vhost-user
killed vu-execve execve
run vu-direct-chroot "$HOOKS" chroot --vhost-user --repair-path none
killed vu-direct-chroot chroot
run stream-mknodat "$HOOKS" mknodat
killed stream-mknodat mknodat

# ---- an allowed call made the same way: the daemon lives on
run stream-close "$HOOKS" close
grep -q 'Test hook: close returned' "$T/stream-close.err" ||
	fail "close: the hook did not return"
alive "$PID" || fail "close: the daemon died"
PASST_PID=$PID
passt_stop

# ---- the release build ignores the variable
run plain "$PASST" getppid --vhost-user
grep -q 'Test hook' "$T/plain.err" && fail "plain: the hook ran"
alive "$PID" || fail "plain: the daemon died: $(tail -n 3 "$T/plain.err")"
PASST_PID=$PID
PASST_ERR=$T/plain.err
passt_stop
log "all cases passed"
