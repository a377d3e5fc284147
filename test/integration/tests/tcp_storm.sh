#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tcp_storm.sh - hundreds of guest TCP connections, IPv4 and IPv6 mixed,
# driven by tcpguest at frame level: opened, written both ways, closed with
# a FIN from either side first or reset from either side (also right after
# the data, in the same batch), and replaced by new ones as they finish,
# with the frames of many connections shuffled into batches of random size
# (one write() each). The seed is printed; TCPGUEST_SEED repeats a run.
# Every peer must receive exactly its own connection's bytes, resets must
# arrive as resets, and afterwards the daemon's flows and file descriptors
# must be back to their baseline.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

CONNS=${STORM_CONNS:-300}
RUNS=${STORM_RUNS:-3}

tcpguest_start

# Several runs with different seeds, each on a fresh connection to the
# daemon: the second and later ones also check that nothing of the
# previous run is in the way
for run in $(seq 1 "$RUNS"); do
	t0=$(now_ms)
	st=0
	seed=${TCPGUEST_SEED:-$(( $(date +%s%N) % 1000000007 + run ))}
	ns "$ROUTER" "$TCPGUEST" -t 20 -s "$seed" -n "$CONNS" \
		-b $((20000 + run * 5000)) "$SOCK" storm \
		>"$T/storm$run.log" 2>"$T/storm$run.err" || st=$?
	log "run $run: $(tr '\n' ' ' <"$T/storm$run.log")($(($(now_ms) - t0)) ms)"
	if [ "$st" -ne 0 ]; then
		cat "$T/storm$run.err" >&2
		passt_check_alive
		fail "run $run (seed $seed): tcpguest exit status $st"
	fi
	passt_check_alive
	settle "run $run"
done
passt_stop
