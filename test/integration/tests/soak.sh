#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# soak.sh - SOAK_SECS (default 60) seconds of TCP connection churn (connect,
# small echoed transfer, graceful close or RST) from the guest to echo
# servers on the peer (IPv4 and IPv6) and from ROUTER to the guest through
# a forwarded port. Afterwards, within SOAK_DRAIN_SECS (default 60), the
# daemon's open descriptors return to their count before the churn and
# its flow table (SIGUSR1 -> "flows: N") empties. TCP only: UDP and ICMP
# flows would take minutes to idle out.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need busybox
need_sockio

SECS=${SOAK_SECS:-60}
DRAIN=${SOAK_DRAIN_SECS:-60}

setup_ns
passt_start -t 8080
guest_up

bg "$ROUTER" echo4 /dev/null /dev/null \
	"$SOCKIO" --ready "$T/r4" tcp-echo "$PEER4" 7000
bg "$ROUTER" echo6 /dev/null /dev/null \
	"$SOCKIO" --ready "$T/r6" tcp-echo "$PEER6" 7000
bg "$GUEST" gecho /dev/null /dev/null \
	"$SOCKIO" --ready "$T/rg" tcp-echo "$ADDR4" 8080
wait_ready "$T/r4"
wait_ready "$T/r6"
wait_ready "$T/rg"

fds0=$(passt_fds)
flows0=$(passt_flows) || fail "no 'flows:' line after SIGUSR1"
log "baseline: $fds0 fds, $flows0 flows"

bg "$GUEST" churn4 /dev/null /dev/null "$SOCKIO" churn "$PEER4" 7000 "$SECS"
c4=$BG_PID
bg "$GUEST" churn6 /dev/null /dev/null "$SOCKIO" churn "$PEER6" 7000 "$SECS"
c6=$BG_PID
bg "$ROUTER" churnin /dev/null /dev/null "$SOCKIO" churn "$ADDR4" 8080 "$SECS"
ci=$BG_PID

# Midway, the daemon is alive and holds flows
wait_for "! alive $c4 || [ \$(passt_fds) -gt $fds0 ]" 10 || :
passt_check_alive
log "during churn: $(passt_fds) fds, $(passt_flows || echo '?') flows"

errors=
for c in "$c4:churn4" "$c6:churn6" "$ci:churnin"; do
	bg_wait "${c%%:*}" $((SECS + 40)) || :
	log "${c#*:}: $(tr '\n' ' ' <"$T/${c#*:}.err")(status $BG_ST)"
	[ "$BG_ST" = 0 ] || errors="$errors ${c#*:}"
done
passt_check_alive

t0=$(now_ms)
if ! wait_for "[ \$(passt_fds) -le $fds0 ]" "$DRAIN"; then
	ls -l "/proc/$PASST_PID/fd" >"$T/fds.log" 2>&1 || :
	fail "fds: $(passt_fds) after ${DRAIN} s, baseline $fds0${errors:+; churn failed:$errors}"
fi
log "fds back to $(passt_fds) (baseline $fds0) after $(($(now_ms) - t0)) ms"
if ! wait_for "[ \"\$(passt_flows)\" = 0 ]" "$DRAIN"; then
	fail "flows: $(passt_flows) after ${DRAIN} s${errors:+; churn failed:$errors}"
fi
log "flows: 0 after $(($(now_ms) - t0)) ms"
[ -z "$errors" ] || fail "churn failed:$errors"
passt_stop
