# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2034
#
# flood-lib.sh - shared part of the flood tests (tests/flood_*.sh): a
# hostile guest (test/tools/flooder) floods the daemon while one ordinary
# stream has to get through, and the daemon's flow table, descriptors,
# memory and log are watched.
#
# Sourced after lib.sh. The daemon logs to $T/passt.log too (-l), where
# every line has a timestamp: flood_log_rate counts lines per second.
#
# Bounds (the reclaim rule is at the top of flow.c and in doc/passt.1):
#   FLOOD_DGRAM_MAX  UDP + ICMP echo flows: FLOW_DGRAM_MAX (16384)
#   FLOOD_HALF_OPEN  half-open TCP connections: TCP_HALF_OPEN_MAX (4096)
#   FLOOD_ROUND      entries closed in one loop round and not yet free: at
#                    most the frames of one round's input (2048 on the
#                    stream front-end), counted in "flows: N"
#   FLOOD_RSS_KB     growth of the daemon's RSS over its baseline (64 MiB:
#                    the flow table is static, so this is the table's
#                    pages being touched, not allocations)
#   FLOOD_LOG_RATE   lines per second in the daemon's log (20: each
#                    guest-triggered message is rate-limited to one per
#                    second per call site)
#   FLOOD_STREAM_SECS deadline of the ordinary stream (60 s: it must
#                    complete, at whatever speed the shared machine allows)

FLOOD_DGRAM_MAX=16384
FLOOD_HALF_OPEN=4096
FLOOD_ROUND=2200
FLOOD_RSS_KB=$((64 * 1024))
FLOOD_LOG_RATE=20
FLOOD_STREAM_SECS=${FLOOD_STREAM_SECS:-60}
FLOODER=${FLOODER:-$TOOLS/flooder}
PASST_LOG=$T/passt.log

# passt_rss: the daemon's resident set, kB
passt_rss() {
	sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$PASST_PID/status"
}

# passt_cpu_ticks: user + system time of the daemon, in clock ticks
passt_cpu_ticks() {
	sed 's/^.*) //' "/proc/$PASST_PID/stat" | awk '{ print $12 + $13 }'
}

# flood_start [OPTION...]: namespaces, the daemon (with a log file), the
# guest online, a pattern receiver on the peer; baseline figures
flood_start() {
	[ -x "$FLOODER" ] || fail "no flooder in $TOOLS"
	need_sockio
	setup_ns
	passt_start -l "$PASST_LOG" "$@"
	guest_up
	bg "$ROUTER" sink /dev/null /dev/null "$SOCKIO" -t 0 --ready "$T/sink" \
		pattern-listen "$PEER4" 7100
	SINK_PID=$BG_PID
	wait_ready "$T/sink"
	rss0=$(passt_rss)
	fds0=$(passt_fds)
	flows0=$(passt_flows) || fail "no 'flows:' line after SIGUSR1"
	max_fds=$fds0 max_flows=$flows0 max_rss=$rss0
	log "baseline: $fds0 fds, $flows0 flows, RSS $rss0 kB"
}

# flood_sample: one sample of fds, flows and RSS into the maxima
flood_sample() {
	_d=$(passt_fds) _f=$(passt_flows) _r=$(passt_rss)
	[ -n "$_f" ] || _f=0
	[ "$_d" -gt "$max_fds" ] && max_fds=$_d
	[ "$_f" -gt "$max_flows" ] && max_flows=$_f
	[ "$_r" -gt "$max_rss" ] && max_rss=$_r
	echo "$(now_ms) fds=$_d flows=$_f rss=$_r" >>"$T/watch.log"
}

# flood_stream: 8 MiB guest -> peer, verified, in the background: STREAM_PID
flood_stream() {
	bg "$GUEST" stream /dev/null /dev/null "$SOCKIO" \
		-t "$FLOOD_STREAM_SECS" --send --bytes 8388608 \
		pattern-connect "$PEER4" 7100
	STREAM_PID=$BG_PID
	STREAM_T0=$(now_ms)
}

# flood_watch PID...: sample every 200 ms while any PID lives
flood_watch() {
	while :; do
		_any=
		for _p in "$@"; do
			alive "$_p" && _any=1
		done
		[ -n "$_any" ] || break
		passt_check_alive
		flood_sample
		sleep 0.2
	done
	flood_sample
}

# flood_stream_check: the stream finished in time, and intact
flood_stream_check() {
	bg_wait "$STREAM_PID" "$FLOOD_STREAM_SECS" ||
		fail "ordinary stream still running after $FLOOD_STREAM_SECS s"
	[ "$BG_ST" = 0 ] ||
		fail "ordinary stream failed (status $BG_ST): $(cat "$T/stream.err")"
	bg_wait "$SINK_PID" 10 ||
		fail "the peer did not see the stream's end"
	[ "$BG_ST" = 0 ] ||
		fail "the peer's check of the stream failed: $(cat "$T/sink.err")"
	log "ordinary stream: 8 MiB in $(($(now_ms) - STREAM_T0)) ms"
}

# flood_log_rate: most lines the daemon logged in one second (flow counts
# asked for by the test itself excluded)
flood_log_rate() {
	grep -v 'flows:' "$PASST_LOG" | cut -c1-19 | sort | uniq -c |
		sort -n | tail -n 1 | awk '{ print $1 + 0 }'
}

# flood_bounds FLOWS [FDS]: check the maxima against FLOWS (flows), FDS
# (default FLOWS) + 64 descriptors over the baseline, the RSS and log bounds
flood_bounds() {
	_fdb=${2:-$1}
	_rate=$(flood_log_rate)
	log "maxima: $max_fds fds, $max_flows flows, RSS $max_rss kB" \
		"(baseline $fds0, $flows0, $rss0 kB); log: ${_rate:-0} lines/s at most"
	[ "$max_flows" -le "$1" ] ||
		fail "flows: $max_flows, bound $1"
	[ "$max_fds" -le $((fds0 + _fdb + 64)) ] ||
		fail "descriptors: $max_fds, bound $((fds0 + _fdb + 64))"
	[ "$max_rss" -le $((rss0 + FLOOD_RSS_KB)) ] ||
		fail "RSS: $max_rss kB, baseline $rss0 kB + $FLOOD_RSS_KB kB"
	[ "${_rate:-0}" -le "$FLOOD_LOG_RATE" ] ||
		fail "log: ${_rate} lines in one second (bound $FLOOD_LOG_RATE): $(grep -v 'flows:' "$PASST_LOG" | tail -n 5)"
}

# flood_stop: passt_stop, with more time for the exit: with thousands of
# sockets still open, their release by the kernel (and a sanitizer's leak
# check) takes a while on a busy machine
flood_stop() {
	_t=$(now_ms)
	kill_own TERM "$PASST_PID"
	wait_for "! alive $PASST_PID" 60 || fail "daemon ignores SIGTERM"
	log "daemon exited $(($(now_ms) - _t)) ms after SIGTERM"
	passt_stop
}
