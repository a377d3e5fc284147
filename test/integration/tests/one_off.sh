#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# one_off.sh - with -1, the daemon exits by itself when its client leaves,
# and removes its socket and pid file
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

setup_ns
passt_start -1
[ -s "$PIDFILE" ] || fail "no pid file"
bridge_start
passt_check_alive

kill -TERM "$BRIDGE_PID"
wait_for "! alive $PASST_PID" 10 || fail "daemon still running after the client left"
st=0
wait "$PASST_PID" || st=$?
sanitizer_check "$PASST_ERR"
expect "exit status" "$st" 0
[ ! -e "$SOCK" ] || fail "socket left behind"
[ ! -e "$PIDFILE" ] || fail "pid file left behind"
