#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sandbox_seccomp.sh - a system call outside the allow-list ends the
# daemon, in stream and vhost-user mode: the call is not made, one line
# names it and the profile ("Sandbox: seccomp profile PROFILE denied
# system call NAME (NR), exiting", sigsys.c), on standard error, in the
# log file (-l) and to syslog (a daemon without -l: a busybox syslogd
# on a /dev/log of this test's own), and the exit status is 128 + SIGSYS,
# nothing run after it. The same for the peer credential checker (its
# line comes through the daemon's log) and for passt-repair (its stderr).
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
# in isolation_seccomp.c: a new one must be added there, or the daemon would die
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

# denied_line FILE PROFILE NAME NR: the one line about a denied call is in
# FILE, the last line there
denied_line() {
	_want="Sandbox: seccomp profile $2 denied system call $3 ($4), exiting"
	grep -qF "ERROR: $_want" "$1" ||
		fail "no line '$_want' in $1: $(tail -n 3 "$1")"
	expect "the line about the denied call, last in $1" \
		"$(tail -n 1 "$1" | sed 's/^.*ERROR: //')" "$_want"
}

# killed NAME SYSCALL PROFILE: the daemon ended right after the hook call,
# status 128 + SIGSYS, saying which call and profile
killed() {
	bg_wait "$PID" 10 || fail "$1: still running after calling $2"
	expect "$1: exit status (128 + SIGSYS)" "$BG_ST" $((128 + 31))
	grep -q "Test hook: calling $2" "$T/$1.err" ||
		fail "$1: the hook did not run: $(cat "$T/$1.err")"
	grep -q 'Test hook: .* returned' "$T/$1.err" &&
		fail "$1: $2 returned instead of killing the daemon"
	_nr=$(sed -n "s/^.*Test hook: calling $2 (\([0-9]*\))$/\1/p" \
		"$T/$1.err")
	denied_line "$T/$1.err" "$3" "${2%%:*}" "$_nr"
	sanitizer_check "$T/$1.err"
	log "$1: $2 ended the daemon (status $BG_ST): $(tail -n 1 "$T/$1.err")"
}

# ---- forbidden calls kill, in each mode
run stream-getcwd "$HOOKS" getcwd
killed stream-getcwd getcwd stream
run vu-execve "$HOOKS" execve --vhost-user
killed vu-execve execve vhost-user-migrate
run vu-direct-chroot "$HOOKS" chroot --vhost-user --repair-path none
killed vu-direct-chroot chroot vhost-user-direct
run stream-mknodat "$HOOKS" mknodat
killed stream-mknodat mknodat stream

# ---- arguments: unlinkat() outside the kept directories (AT_FDCWD)
run stream-unlinkat "$HOOKS" unlinkat:-100:0:0
killed stream-unlinkat unlinkat:-100:0:0 stream
run vu-unlinkat "$HOOKS" unlinkat:-100:0:0 --vhost-user
killed vu-unlinkat unlinkat:-100:0:0 vhost-user-migrate

# setsockopt() with CAP_NET_ADMIN kept: SO_MARK (SOL_SOCKET 1, 36),
# IP_TRANSPARENT (IPPROTO_IP 0, 19) kill; TCP_REPAIR (6, 19) is allowed
run direct-so-mark "$HOOKS" setsockopt:-1:1:36 --vhost-user --repair-path none
killed direct-so-mark setsockopt:-1:1:36 vhost-user-direct
run direct-transparent "$HOOKS" setsockopt:-1:0:19 --vhost-user \
	--repair-path none
killed direct-transparent setsockopt:-1:0:19 vhost-user-direct

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
	"$TOP/isolation_seccomp.c" | sed 's/^SOL_TCP /IPPROTO_TCP /' | sort -u)
[ -n "$tbl" ] || fail "no SOCKOPT() rows in isolation_seccomp.c"
# The daemon's sources, but its start-up code (conf/) and the sandbox's
# shellcheck disable=SC2016
used=$(find "$TOP" -name '*.c' -not -path "$TOP/test/*" \
	-not -path "$TOP/build*" -not -path "$TOP/conf/*" \
	-not -name passt-repair.c -not -name 'isolation*.c' -print0 |
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

# ---- the line in the log file too, timestamped
run stream-logfile "$HOOKS" getcwd -l "$T/stream-logfile.log"
killed stream-logfile getcwd stream
nr=$(sed -n 's/^.*Test hook: calling getcwd (\([0-9]*\))$/\1/p' \
	"$T/stream-logfile.err")
denied_line "$T/stream-logfile.log" stream getcwd "$nr"
tail -n 1 "$T/stream-logfile.log" | grep -qE \
	'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z ERROR: ' ||
	fail "log file: no timestamp: $(tail -n 1 "$T/stream-logfile.log")"
log "log file: $(tail -n 1 "$T/stream-logfile.log")"

# ---- ...and to syslog: a daemon (no -f) without -l, in a mount namespace
# whose /dev has busybox's syslogd on /dev/log. The line also reaches
# whoever started it (its standard error is the parent's pipe until it's
# sandboxed), and the parent exits 1: the daemon died starting
need busybox unshare
mkdir -p "$T/hostdev"
st=0
PASST_TEST_FORBIDDEN_SYSCALL=getcwd ip netns exec "$HOST" unshare -m sh -ec '
	T=$1 HOOKS=$2 SOCK=$3
	mount --rbind /dev "$T/hostdev"
	mount -t tmpfs -o mode=0755 tmpfs /dev
	for n in null zero random urandom; do
		touch "/dev/$n"
		mount --bind "$T/hostdev/$n" "/dev/$n"
	done
	busybox syslogd -n -O "$T/syslog.txt" &
	sl=$!
	i=0
	while [ ! -S /dev/log ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	st=0
	"$HOOKS" -s "$SOCK" 2>"$T/syslog-daemon.err" || st=$?
	# syslogd writes what it got before it goes
	i=0
	while ! grep -q "denied system call" "$T/syslog.txt" 2>/dev/null &&
	      [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill "$sl"
	exit "$st"
' sh "$T" "$HOOKS" "$SOCK" || st=$?
expect "syslog: the starting parent's exit status" "$st" 1
grep -qF "Sandbox: seccomp profile stream denied system call getcwd ($nr), exiting" \
	"$T/syslog-daemon.err" ||
	fail "syslog: not on the parent's stderr: $(cat "$T/syslog-daemon.err")"
grep -E 'passt\[[0-9]+\]: ERROR: Sandbox: seccomp profile stream denied system call getcwd \('"$nr"'\), exiting' \
	"$T/syslog.txt" >/dev/null ||
	fail "syslog: no line: $(cat "$T/syslog.txt" 2>/dev/null)"
log "syslog: $(grep 'denied system call' "$T/syslog.txt")"

# ---- the peer credential checker: its filter denies the call at its
# first request (a repair helper connecting); the daemon logs the line,
# refuses the helper and goes on
REPAIR=${REPAIR:-$(dirname "$PASST")/passt-repair}
[ -x "$REPAIR" ] || REPAIR=$TOP/build/passt-repair
[ -x "$REPAIR" ] || fail "no passt-repair next to $PASST or in build/ (make)"
run checker "$HOOKS" checker/getcwd --vhost-user
[ -S "$SOCK.repair" ] || fail "checker: no repair helper socket"
"$REPAIR" "$SOCK.repair" 2>"$T/checker-helper.err" &
hpid=$!
track "$hpid"
wait_for "grep -q 'Repair helper refused' '$T/checker.err'" 10 ||
	fail "checker: helper not refused: $(tail -n 3 "$T/checker.err")"
grep -qF "ERROR: Sandbox: seccomp profile peer-credential-checker denied system call getcwd ($nr), exiting" \
	"$T/checker.err" ||
	fail "checker: no line: $(tail -n 3 "$T/checker.err")"
alive "$PID" || fail "checker: the daemon died"
wait "$hpid" 2>/dev/null || :
PASST_PID=$PID
PASST_ERR=$T/checker.err
passt_stop
log "checker: $(grep 'peer-credential-checker denied' "$T/checker.err")"

# ---- passt-repair's own filter (its test flavour, the same variable)
RHOOKS=$(dirname "$HOOKS")/passt-repair-hooks
[ -x "$RHOOKS" ] || fail "no $RHOOKS (make \$(BUILD)/test/passt-repair-hooks)"
grep -qa PASST_TEST_FORBIDDEN_SYSCALL "$REPAIR" &&
	fail "$REPAIR has the test hook compiled in"
if grep -qa __asan_init "$RHOOKS"; then
	# Its sanitizer build only logs violations (passt-repair.c)
	log "passt-repair: sanitizer build, its filter only logs: not checked"
else
	st=0
	PASST_TEST_FORBIDDEN_SYSCALL=getcwd timeout 10 "$RHOOKS" "$T" \
		2>"$T/repair-hooks.err" || st=$?
	expect "passt-repair: exit status" "$st" 1
	expect "passt-repair: its last line" \
		"$(tail -n 1 "$T/repair-hooks.err")" \
		"passt-repair: seccomp profile passt-repair denied system call getcwd ($nr), exiting"
	grep -q 'returned' "$T/repair-hooks.err" &&
		fail "passt-repair: getcwd returned"
	log "passt-repair: $(tail -n 1 "$T/repair-hooks.err")"
fi

# ---- the release build ignores the variable
run plain "$PASST" getppid --vhost-user
grep -q 'Test hook' "$T/plain.err" && fail "plain: the hook ran"
alive "$PID" || fail "plain: the daemon died: $(tail -n 3 "$T/plain.err")"
PASST_PID=$PID
PASST_ERR=$T/plain.err
passt_stop
log "all cases passed"
