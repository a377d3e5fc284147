#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_malformed.sh - vhost-user: malformed control messages (sizes, fd
# counts, ring addresses, order, unknown requests, ring fds that aren't
# eventfds) are refused and the connection goes on; eventfds in blocking
# mode are made non-blocking, so that a full one as the interrupt fd
# doesn't stall the daemon; framing errors (oversized payload, too many fds)
# close it; broken descriptor chains (loops, > 4 GiB, out of range,
# indirect tables) are returned and the ring goes on; an impossible avail
# index or read-only RX buffers disable that ring only; a stopped ring is
# left alone; a front-end that goes away in the middle of a state
# transfer (a dying migration target) makes the daemon drop the transfer
# and accept the next one. After each, the daemon must be alive and serve
# a fresh connection.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

setup_ns
vu_passt_start

# Refused, and the same connection still answers
vu sizes bad-sizes bad-fds bad-ring-addr unknown arp-probe
passt_check_alive
vu ringfds bad-ring-fds arp-probe
passt_check_alive
vu order out-of-order connect arp-probe
passt_check_alive
VU_FRONT_OPTS=-2 vu chains2 loop-chain arp-probe dhcp-probe
passt_check_alive
vu chains loop-chain arp-probe
passt_check_alive

# Framing errors: closed, then a new connection works
vu oversize oversize connect arp-probe
passt_check_alive
vu fds too-many-fds connect arp-probe
passt_check_alive

# Broken rings: ignored until set up again
vu avail bad-avail-idx close connect arp-probe
passt_check_alive
VU_TIMEOUT=1000 vu rxro rx-readonly close
passt_check_alive
vu after-rxro arp-probe
vu stop stop-kick close connect arp-probe
passt_check_alive

# A transfer whose front-end is gone is abandoned, once
vu abandon state-abandon connect arp-probe
passt_check_alive
n=$(grep -c 'went away during the state transfer' "$PASST_ERR" || :)
[ "$n" -eq 1 ] || fail "$n 'went away during the state transfer' lines"

# The log stays bounded
lines=$(wc -l <"$PASST_ERR")
log "daemon log: $lines lines"
[ "$lines" -lt 300 ] || fail "$lines log lines: not rate-limited?"
passt_stop
