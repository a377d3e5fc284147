#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sandbox_seccomp.sh - a system call outside the allow-list kills the
# daemon (SIGSYS, SCMP_ACT_KILL_PROCESS), in stream and vhost-user mode.
# The call is made by a test-only path: PASST_TEST_FORBIDDEN_SYSCALL=NAME
# (or NAME:ARG..., with numeric arguments), honoured only by the daemon
# built with -DPASST_TEST_HOOKS (make's $(BUILD)/test/passt-hooks). The
# plain daemon has no such path: it ignores the variable and keeps
# running. Also: an allowed call made the same way (close, on fd 0) does
# not kill the hooks build.
#
# Arguments: unlinkat() on anything but a kept directory (here AT_FDCWD)
# kills, in every mode. With direct TCP_REPAIR (CAP_NET_ADMIN kept),
# setsockopt() of an option the daemon never sets (SO_MARK,
# IP_TRANSPARENT) kills, TCP_REPAIR doesn't; with a repair helper (no
# capability) SO_MARK is the kernel's to refuse. And every socket option
# the daemon's sources set (setsockopt(FD, LEVEL, OPTION, ...) outside
# the start-up code in conf/) has its row in the direct profile's table
# in isolation.c: a new one must be added there, or the daemon would die
# of it in that mode.
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

# ---- arguments: unlinkat() outside the kept directories (AT_FDCWD)
run stream-unlinkat "$HOOKS" unlinkat:-100:0:0
killed stream-unlinkat unlinkat:-100:0:0
run vu-unlinkat "$HOOKS" unlinkat:-100:0:0 --vhost-user
killed vu-unlinkat unlinkat:-100:0:0

# setsockopt() with CAP_NET_ADMIN kept: SO_MARK (SOL_SOCKET 1, 36),
# IP_TRANSPARENT (IPPROTO_IP 0, 19) kill; TCP_REPAIR (6, 19) is allowed
run direct-so-mark "$HOOKS" setsockopt:-1:1:36 --vhost-user --repair-path none
killed direct-so-mark setsockopt:-1:1:36
run direct-transparent "$HOOKS" setsockopt:-1:0:19 --vhost-user \
	--repair-path none
killed direct-transparent setsockopt:-1:0:19

# allowed NAME CALL: the hook's call returned, the daemon lives on
allowed() {
	grep -q "Test hook: $2 returned" "$T/$1.err" ||
		fail "$1: the hook did not return: $(cat "$T/$1.err")"
	alive "$PID" || fail "$1: the daemon died"
	PASST_PID=$PID
	PASST_ERR=$T/$1.err
	passt_stop
	log "$1: $2 returned, the daemon lives on"
}
run direct-repair "$HOOKS" setsockopt:-1:6:19 --vhost-user --repair-path none
allowed direct-repair setsockopt:-1:6:19
run helper-so-mark "$HOOKS" setsockopt:-1:1:36 --vhost-user
allowed helper-so-mark setsockopt:-1:1:36

# Every option the sources set is in the direct profile's table
tbl=$(perl -ne 'print "$1 $2\n" while /SOCKOPT\((\w+), (\w+)\)/g' \
	"$TOP/isolation.c" | sed 's/^SOL_TCP /IPPROTO_TCP /' | sort -u)
[ -n "$tbl" ] || fail "no SOCKOPT() rows in isolation.c"
# The daemon's sources, but its start-up code (conf/) and the sandbox's
# shellcheck disable=SC2016
used=$(find "$TOP" -name '*.c' -not -path "$TOP/test/*" \
	-not -path "$TOP/build*" -not -path "$TOP/conf/*" \
	-not -name passt-repair.c -not -name isolation.c -print0 |
	xargs -0 perl -0777 -ne \
	'print "$1 $2\n" while /setsockopt\(\s*[^,;]+,\s*(\w+),\s*(\w+)/g' |
	sed 's/^SOL_TCP /IPPROTO_TCP /; s/^SOL_IPV6 /IPPROTO_IPV6 /' | sort -u)
[ "$(echo "$used" | wc -l)" -ge 10 ] || fail "source scan found: $used"
missing=$(comm -23 <(echo "$used") <(echo "$tbl"))
[ -z "$missing" ] ||
	fail "set in the sources, not allowed with direct TCP_REPAIR: $missing"
log "direct profile: all $(echo "$used" | wc -l) socket options set in the sources are allowed"

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
