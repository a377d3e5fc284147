#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_load_flood.sh - a migration stream can't pin the loop: vu-front's
# "load-flood" starts a LOAD and fills the state pipe with garbage as fast
# as a pipe goes, for LF_SECS (3) seconds, while control messages go back
# and forth. The daemon reads at most MIGRATE_LOAD_ROUND bytes of it per
# loop round (migrate/transfer.c), so every control message must be
# answered (within vu-front's 5 s; the round trip times are printed);
# the garbage is refused at CHECK_DEVICE_STATE, and a fresh connection
# is served. Before, the read went on while the pipe had bytes: a writer
# that kept it full kept the daemon away from everything else (on a
# machine where the daemon reads faster than a pipe is filled it doesn't
# show here: test_migrate_load checks the bound itself).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

SECS=${LF_SECS:-3}

setup_ns
vu_passt_start
ip netns exec "$GUEST" "$VUFRONT" -t 5000 --attack-secs "$SECS" "$SOCK" \
	load-flood >"$T/lf.out" 2>"$T/lf.err" ||
	fail "vu-front load-flood: $(tail -n 3 "$T/lf.err")"
passt_check_alive
line=$(grep '^load-flood:' "$T/lf.out") || fail "no result from vu-front"
log "$line"
vu after connect arp-probe dhcp-probe
passt_stop
