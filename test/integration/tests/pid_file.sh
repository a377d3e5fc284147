#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# pid_file.sh - daemonized (no -f): the parent returns once the socket
# listens, the pid file names the live daemon, mode 0600 as upstream's,
# SIGTERM removes both files. With -l, the address and nameserver summary
# at start goes to the log file too, as upstream writes it
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

setup_ns

# The daemon's stderr goes to /dev/null once it detaches: sanitizer
# reports, if any, go to files instead
ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$T/sanitizer"
UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$T/sanitizer"

st=0
timeout 10 ip netns exec "$HOST" "$PASST" -s "$SOCK" -P "$PIDFILE" \
	-l "$T/passt.log" >"$T/passt.out" 2>"$PASST_ERR" || st=$?
expect "parent's exit status" "$st" 0
[ -S "$SOCK" ] || fail "socket not listening when the parent returned"
[ -s "$PIDFILE" ] || fail "no pid file when the parent returned"
expect "pid file mode" "$(stat -c %a "$PIDFILE")" 600
for l in "IPv4: address $ADDR4/24, gateway $GW4" "    DNS: $DNS4" \
	 "IPv6: address $ADDR6/64" "    search: $SEARCH"; do
	grep -qF "$l" "$PASST_ERR" || fail "not on stderr: '$l'"
	grep -qF "$l" "$T/passt.log" ||
		fail "not in the log file: '$l': $(head -n 5 "$T/passt.log")"
done

pid=$(tr -d ' \n' <"$PIDFILE")
case "$pid" in
'' | *[!0-9]*) fail "pid file holds '$pid'" ;;
esac
track "$pid"
alive "$pid" || fail "pid $pid from the pid file is not running"
expect "process name" "$(cat "/proc/$pid/comm")" passt

kill -TERM "$pid"
wait_for "! alive $pid" 10 || fail "daemon ignores SIGTERM"
[ ! -e "$SOCK" ] || fail "socket left behind"
[ ! -e "$PIDFILE" ] || fail "pid file left behind"
sanitizer_check "$PASST_ERR" "$T"/sanitizer.*
