#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/soak.sh - an hour of churn across TCP, UDP and ICMP, in stream mode
# (tapbridge) and vhost-user mode (vu-front bridge), then a check that the
# daemon's descriptors, flows and memory come back down. A benchmark, not a
# CI test: it runs for SOAK_SECS per mode.
#
# Usage (as root): bench/soak.sh          (or SOAK_SECS=600 bench/soak.sh)
#
# Each mode runs in its own namespaces (test/integration/lib.sh), with the
# daemon in HOST forwarding TCP port 8080 to the guest. For SOAK_SECS:
#   TCP   sockio churn: connect, small echoed transfer, graceful close or
#         RST, from the guest to echo servers on the peer (IPv4 and IPv6),
#         and from the peer to the guest through the forwarded port;
#   UDP   three datagrams echoed, each time from a new socket (a new flow),
#         IPv4 and IPv6, back to back;
#   ICMP  the guest's ping, three requests, each time a new identifier.
# Every SOAK_SAMPLE seconds (30) the daemon's descriptors (/proc), flows
# (SIGUSR1: "flows: N") and RSS (VmRSS) are sampled into
# bench/results/soak-MODE.txt. After the churn, within SOAK_DRAIN seconds
# (240: UDP flows idle out after 180 s, ICMP after 60 s), descriptors and
# flows must be back to their baseline; RSS must not be above the first
# sample taken under load by more than SOAK_RSS_SLACK kB (1024: the flow
# table is static, so RSS grows only while its pages are first touched,
# and a leak would show as growth after that).
#
# Prints one summary table (also in bench/results/soak.md): per mode, the
# churn counts, and baseline / maximum / end of descriptors, flows and RSS.
# Exit status 0 if every mode came back to its baseline.
#
# Environment: SOAK_SECS (3600), SOAK_MODES ("stream vhost-user"),
# SOAK_SAMPLE (30), SOAK_DRAIN (240), SOAK_RSS_SLACK (1024), PASST, TOOLS,
# SOAK_PARALLEL=1 to run the modes side by side (an hour, not two; each
# mode then gets about one core).
set -eu

SOAK_TOP=$(cd "$(dirname "$0")/.." && pwd)
export PASST=${PASST:-$SOAK_TOP/build/passt}
export TOOLS=${TOOLS:-$SOAK_TOP/build/test/tools}
SOAK_SECS=${SOAK_SECS:-3600}
SOAK_MODES=${SOAK_MODES:-stream vhost-user}
SOAK_SAMPLE=${SOAK_SAMPLE:-30}
SOAK_DRAIN=${SOAK_DRAIN:-240}
SOAK_RSS_SLACK=${SOAK_RSS_SLACK:-1024}
RESULTS=$SOAK_TOP/bench/results
mkdir -p "$RESULTS"

# One mode, in a child of ours: lib.sh's namespaces and clean-up trap
if [ -n "${SOAK_MODE:-}" ]; then
	# (lib.sh sets TOP from the test scripts' place: we keep SOAK_TOP)
	# shellcheck disable=SC1091
	. "$SOAK_TOP/test/integration/lib.sh"
	if [ "$SOAK_MODE" = vhost-user ]; then
		# shellcheck disable=SC1091
		. "$SOAK_TOP/test/integration/vu.sh"
		need_vufront
		set -- --vhost-user
	else
		set --
	fi
	need busybox
	need_sockio
	OUT=$RESULTS/soak-$SOAK_MODE.txt

	passt_rss() {
		sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' \
			"/proc/$PASST_PID/status"
	}

	setup_ns
	passt_start -t 8080 "$@"
	guest_up
	bg "$ROUTER" echo4 /dev/null /dev/null \
		"$SOCKIO" -t 0 --ready "$T/r4" tcp-echo "$PEER4" 7000
	bg "$ROUTER" echo6 /dev/null /dev/null \
		"$SOCKIO" -t 0 --ready "$T/r6" tcp-echo "$PEER6" 7000
	bg "$ROUTER" uecho4 /dev/null /dev/null \
		"$SOCKIO" -t 0 --ready "$T/u4" udp-echo "$PEER4" 5353
	bg "$ROUTER" uecho6 /dev/null /dev/null \
		"$SOCKIO" -t 0 --ready "$T/u6" udp-echo "$PEER6" 5353
	bg "$GUEST" gecho /dev/null /dev/null \
		"$SOCKIO" -t 0 --ready "$T/rg" tcp-echo "$ADDR4" 8080
	for r in r4 r6 u4 u6 rg; do
		wait_ready "$T/$r"
	done

	fds0=$(passt_fds)
	flows0=$(passt_flows) || fail "no 'flows:' line after SIGUSR1"
	rss0=$(passt_rss)
	echo "# t_s fds flows rss_kb" >"$OUT"
	echo "0 $fds0 $flows0 $rss0" >>"$OUT"
	log "$SOAK_MODE: baseline $fds0 fds, $flows0 flows, RSS $rss0 kB"

	# TCP churn, both ways
	bg "$GUEST" churn4 /dev/null /dev/null \
		"$SOCKIO" -t $((SOAK_SECS + 60)) churn "$PEER4" 7000 "$SOAK_SECS"
	c4=$BG_PID
	bg "$GUEST" churn6 /dev/null /dev/null \
		"$SOCKIO" -t $((SOAK_SECS + 60)) churn "$PEER6" 7000 "$SOAK_SECS"
	c6=$BG_PID
	bg "$ROUTER" churnin /dev/null /dev/null \
		"$SOCKIO" -t $((SOAK_SECS + 60)) churn "$ADDR4" 8080 "$SOAK_SECS"
	ci=$BG_PID
	# UDP and ICMP churn: new sockets, new identifiers, every time
	end=$(($(now_ms) + SOAK_SECS * 1000))
	(
		n=0 bad=0
		while [ "$(now_ms)" -lt "$end" ]; do
			for a in "$PEER4" "$PEER6"; do
				ip netns exec "$GUEST" "$SOCKIO" -t 5 \
					udp-ping "$a" 5353 3 2>/dev/null ||
					bad=$((bad + 1))
				n=$((n + 1))
			done
			echo "udp=$n failed=$bad" >"$T/udp.count"
		done
	) &
	cu=$!
	track "$cu"
	(
		n=0 bad=0
		while [ "$(now_ms)" -lt "$end" ]; do
			for a in "$PEER4" "$PEER6"; do
				ip netns exec "$GUEST" ping -q -c 3 -i 0.2 \
					-W 2 "$a" >/dev/null 2>&1 ||
					bad=$((bad + 1))
				n=$((n + 1))
			done
			echo "icmp=$n failed=$bad" >"$T/icmp.count"
		done
	) &
	cp=$!
	track "$cp"

	t0=$(now_ms)
	next=$((t0 + SOAK_SAMPLE * 1000))
	max_fds=$fds0 max_flows=$flows0 max_rss=$rss0 rss_warm=
	while [ "$(now_ms)" -lt "$end" ]; do
		passt_check_alive
		if [ "$(now_ms)" -ge "$next" ]; then
			d=$(passt_fds) f=$(passt_flows || echo 0) r=$(passt_rss)
			[ -n "$rss_warm" ] || rss_warm=$r
			[ "$d" -gt "$max_fds" ] && max_fds=$d
			[ "$f" -gt "$max_flows" ] && max_flows=$f
			[ "$r" -gt "$max_rss" ] && max_rss=$r
			echo "$((($(now_ms) - t0) / 1000)) $d $f $r" >>"$OUT"
			next=$((next + SOAK_SAMPLE * 1000))
		fi
		sleep 1
	done

	# A churn's own summary line says how it went: after an hour of
	# children (sleep, ps...), the shell may no longer know its status
	errors=
	for c in "$c4:churn4" "$c6:churn6" "$ci:churnin"; do
		bg_wait "${c%%:*}" 120 || :
		grep -q '^churn: connections=[0-9]* .* errors=0 ' \
			"$T/${c#*:}.err" || errors="$errors ${c#*:}"
	done
	wait "$cu" "$cp" 2>/dev/null || :
	passt_check_alive
	tcp=$(sed -n 's/.*connections=\([0-9]*\).*/\1/p' "$T/churn4.err" \
		"$T/churn6.err" "$T/churnin.err" | awk '{ s += $1 } END { print s + 0 }')
	udp=$(cat "$T/udp.count" 2>/dev/null || echo udp=0)
	icmp=$(cat "$T/icmp.count" 2>/dev/null || echo icmp=0)

	# Back down: descriptors and flows to the baseline
	t1=$(now_ms)
	ok=1
	wait_for "[ \$(passt_fds) -le $fds0 ] && [ \"\$(passt_flows)\" = $flows0 ]" \
		"$SOAK_DRAIN" || ok=0
	drain=$((($(now_ms) - t1) / 1000))
	fds1=$(passt_fds) flows1=$(passt_flows || echo '?') rss1=$(passt_rss)
	echo "$((($(now_ms) - t0) / 1000)) $fds1 $flows1 $rss1 # after drain" >>"$OUT"
	[ "$rss1" -le $((${rss_warm:-$rss0} + SOAK_RSS_SLACK)) ] || ok=0
	[ -z "$errors" ] || ok=0
	result=$([ "$ok" = 1 ] && echo ok || echo FAILED)
	printf '| %s | %s | %s | %s | %s | %s/%s/%s | %s/%s/%s | %s/%s/%s | %s s | %s |\n' \
		"$SOAK_MODE" "$SOAK_SECS" "$tcp${errors:+ (failed:$errors)}" \
		"${udp#udp=}" "${icmp#icmp=}" "$fds0" "$max_fds" "$fds1" \
		"$flows0" "$max_flows" "$flows1" "$rss0" "$max_rss" "$rss1" \
		"$drain" "$result" >"$RESULTS/soak-$SOAK_MODE.row"
	passt_stop
	[ "$ok" = 1 ]
	exit
fi

[ "$(id -u)" -eq 0 ] || { echo "soak: needs root (namespaces)" >&2; exit 77; }
st=0
pids=
for m in $SOAK_MODES; do
	echo "soak: $m, $SOAK_SECS s (samples in bench/results/soak-$m.txt)"
	rm -f "$RESULTS/soak-$m.row"
	if [ "${SOAK_PARALLEL:-0}" = 1 ]; then
		SOAK_MODE=$m PT_ID=soak$$-${m%%-*} bash "$0" &
		pids="$pids $!"
	else
		SOAK_MODE=$m PT_ID=soak$$-${m%%-*} bash "$0" || st=1
	fi
done
for p in $pids; do
	wait "$p" || st=1
done
{
	echo "| mode | secs | TCP conns | UDP flows (failed) | ICMP pings (failed) | fds base/max/end | flows base/max/end | RSS kB base/max/end | drain | result |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for m in $SOAK_MODES; do
		cat "$RESULTS/soak-$m.row" 2>/dev/null ||
			echo "| $m | $SOAK_SECS | - | - | - | - | - | - | - | FAILED (no summary) |"
	done
} | tee "$RESULTS/soak.md"
exit "$st"
