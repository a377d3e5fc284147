#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# qemu-migrate.sh - live migration between two real QEMUs (TCG, vhost-user)
# with 1, 10 and 100 TCP connections: QEMU's downtime and total time, and
# how long after the fabric switch the stream moves again (not part of
# make check). Run as root after building the daemon, passt-repair and the
# test tools:
#
#   bench/qemu-migrate.sh
#   PASST=build-x/passt TOOLS=build-x/test/tools CONNS="1 10" \
#	bench/qemu-migrate.sh
#
# The set-up is test/e2e/migrate-lib.sh's (the scenario of
# test/e2e/tests/migrate.sh): the guest boots behind passt in pod SRC, the
# target QEMU waits behind passt in pod DST (same addresses), passt-repair
# on both sides. For each N in CONNS (default "1 10 100"), with a freshly
# booted guest: N connections from the guest to the peer, each carrying a
# position-encoded stream peer -> guest at RATE KiB/s (default 16); QMP
# "migrate"; the fabric keeps routing to SRC for W s (default 3) after the
# target runs the guest, then switches. One line per N, then a table:
#
#   downtime_ms, total_ms, setup_ms   query-migrate, as QEMU reports them
#   moved_ms    from the fabric switch until the first connection's stream
#               moved again (the guest's telemetry, 50 ms resolution)
#   intact      connections whose every byte arrived in order, with a
#               clean end, out of N (when both ends stop)
#
# Under TCG on a shared machine the numbers vary with the load: run it on
# a quiet machine, more than once.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
CONNS=${CONNS:-1 10 100}
RATE=${RATE:-16}
W=${W:-3}

# One N, in its own process (its own namespaces and clean-up)
if [ "${1:-}" = --one ]; then
	N=$2
	export E2E_MODE=vhost-user
	PT_ID=bqm$$
	# shellcheck source=../test/e2e/lib.sh
	. "$TOP/test/e2e/lib.sh"
	# shellcheck source=../test/e2e/migrate-lib.sh
	. "$TOP/test/e2e/migrate-lib.sh"
	need jq
	need_guest
	qm_pods
	qm_daemon src --migrate-linger-timeout 600
	qm_daemon dst
	qm_start src
	qm_start dst
	guest_wait 400
	for i in $(seq "$N"); do
		bg "$FABRIC" "p$i" /dev/null /dev/null "$SOCKIO" -t 0 \
			--ready "$T/p$i.ready" --progress "$T/p$i.prog" \
			--stop-file "$T/stop" --send --rate "$RATE" \
			pattern-listen "$PEER4" $((5000 + i))
		echo "$BG_PID" >>"$T/peers"
	done
	for i in $(seq "$N"); do
		wait_ready "$T/p$i.ready" 30
	done
	# Starting 100 processes takes a while under TCG: in the background
	# Only the first one keeps a progress file (telemetry): a hundred
	# rewritten every 50 ms starve a TCG guest; every one reports at exit
	g_bg conns "for i in \$(seq $N); do
		p=; [ \$i -eq 1 ] && p='--progress /tmp/c1.prog'
		sockio -t 0 --report \$p --stop-file /tmp/stop \
			pattern-connect $PEER4 \$((5000 + i)) \
			</dev/null >/dev/null 2>/tmp/c\$i.err &
	done; wait"
	wait_for "[ \$(ns $FABRIC ss -Htn state established \
		'( sport >= :5001 and sport <= :$((5000 + N)) )' | wc -l) -ge $N ]" 300 ||
		fail "not all $N connections established"
	tel_start c1=/tmp/c1.prog
	wait_for "[ \$(tel_last c1 rx) -ge $((RATE * 1024 * 2)) ]" 60 ||
		fail "no stream"
	qm_repair_src
	qm_switch_arm "$W"
	qm_migrate 300 || fail "migration $QM_STATUS"
	qm_quit src --nowait
	qm_switch_wait
	qm_quit src
	qm_moved c1 4096 60 || :
	# The others carry on too: a few more seconds for every stream
	sleep 3
	touch "$T/stop"
	g_ok "touch /tmp/stop" >/dev/null
	while read -r p; do
		bg_wait "$p" 60 || :
	done <"$T/peers"
	g_run -t 60 "n=0; while [ \$n -lt 200 ] && pidof sockio >/dev/null; do
		usleep 100000; n=\$((n + 1)); done" >/dev/null || :
	intact=0
	# sockio --report: "bytes_in=N bytes_out=M end=eof|rst|..."
	g_run -t 60 "for i in \$(seq $N); do echo \"\$i \$(grep -h bytes_in= /tmp/c\$i.err)\"; done" \
		>"$T/guest.progs" 2>/dev/null || :
	for i in $(seq "$N"); do
		g=$(sed -n "s/^$i //p" "$T/guest.progs")
		grx=$(printf '%s\n' "$g" | tr ' ' '\n' | sed -n 's/^bytes_in=//p')
		gend=$(printf '%s\n' "$g" | tr ' ' '\n' | sed -n 's/^end=//p')
		ptx=$(tr ' ' '\n' <"$T/p$i.prog" | sed -n 's/^tx=//p')
		pend=$(tr ' ' '\n' <"$T/p$i.prog" | sed -n 's/^end=//p')
		[ "$gend" = eof ] && [ "$pend" = eof ] && [ "$grx" = "$ptx" ] &&
			intact=$((intact + 1))
	done
	echo "RESULT conns=$N downtime_ms=$QM_DOWNTIME total_ms=$QM_TOTAL" \
		"setup_ms=$QM_SETUP moved_ms=${QM_MOVED_MS:-none}" \
		"intact=$intact/$N"
	kill -USR2 "$SRC_PID" 2>/dev/null || :
	qm_quit dst
	exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
echo "qemu-migrate: W=$W s, $RATE KiB/s per connection, peer -> guest"
results=
for n in $CONNS; do
	log=$(mktemp "/tmp/qemu-migrate.$n.XXXXXX")
	st=0
	"$0" --one "$n" >"$log" 2>&1 || st=$?
	line=$(sed -n 's/^RESULT //p' "$log")
	if [ "$st" -ne 0 ] || [ -z "$line" ]; then
		echo "N=$n: failed (status $st), log in $log:"
		grep 'FAIL' "$log" | head -n 3
		line="conns=$n failed"
	else
		echo "$line"
		rm -f "$log"
	fi
	results="$results$line
"
done
echo
echo "| connections | downtime (ms) | total (ms) | setup (ms) | moved again after the switch (ms) | intact |"
echo "|---|---|---|---|---|---|"
printf '%s' "$results" | while read -r l; do
	[ -n "$l" ] || continue
	f() { printf '%s\n' "$l" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
	echo "| $(f conns) | $(f downtime_ms) | $(f total_ms) | $(f setup_ms) |" \
		"$(f moved_ms) | $(f intact) |"
done
