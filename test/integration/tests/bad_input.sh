#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bad_input.sh - malformed frames from the guest are dropped and the
# daemon goes on serving on the same connection; a burst of more frames
# than a loop round takes is all answered; broken framing resets
# the connection (frames < 14 or > 65535 bytes cannot be resynchronised) and a new
# client is served. The log stays bounded (rate-limited warnings).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

FS=$TOOLS/framesend
[ -x "$FS" ] || fail "no framesend in $TOOLS"

setup_ns
passt_start

# Every crafted frame, then the daemon must still answer ARP and DHCP
"$FS" -t 10 "$SOCK" all-frames arp-probe dhcp-probe 2>"$T/fs1.log" ||
	fail "after crafted frames: $(tail -n 3 "$T/fs1.log")"
passt_check_alive

# 4000 ARP requests written while the daemon is stopped: it finds them
# all in one read, more than a loop round takes (2048 frames), and must
# come back for the rest without the guest sending anything more
"$FS" -t 10 -n 4000 -S "$PASST_PID" "$SOCK" arp-burst arp-probe \
	2>"$T/fs-burst.log" ||
	fail "ARP burst: $(tail -n 3 "$T/fs-burst.log")"
passt_check_alive

# 1000 seeded random frames: same, and at most a few log lines
before=$(wc -l <"$PASST_ERR")
"$FS" -t 10 -n 1000 -s 42 "$SOCK" garbage arp-probe 2>"$T/fs2.log" ||
	fail "after garbage: $(tail -n 3 "$T/fs2.log")"
passt_check_alive
lines=$(($(wc -l <"$PASST_ERR") - before))
log "garbage: $lines log lines for 1000 frames"
# Checked at the end, so that the framing checks below still run
flood=
if [ "$lines" -ge 50 ]; then
	flood="$lines log lines for 1000 bad frames: not rate-limited"
	log "most frequent lines:"
	tail -n "$lines" "$PASST_ERR" | sed 's/[0-9a-f:]\{17\}/MAC/g' |
		sort | uniq -c | sort -rn | head -n 5 >&2
fi

# Broken framing: the daemon resets the connection, a new one works
for c in truncated-eth zero-length oversized-length huge-length just-over; do
	"$FS" -t 10 "$SOCK" "$c" expect-close reconnect arp-probe \
		2>"$T/fs-$c.log" ||
		fail "$c: $(tail -n 3 "$T/fs-$c.log")"
	passt_check_alive
done
[ -s "$PASST_ERR" ] || fail "no warning logged for broken framing"
log "daemon log: $(wc -l <"$PASST_ERR") lines"
passt_stop
[ -z "$flood" ] || fail "$flood"
