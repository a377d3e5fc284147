#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# harness_pid_reuse.sh - the harness signals only processes it started:
# after a tracked process ended, its pid given to another process (as the
# kernel does once its pid counter comes round) is not that process. In
# a private pid namespace (unshare), a test shell sourcing lib.sh tracks
# a process, which ends; /proc/sys/kernel/ns_last_pid then makes the next
# process take its pid. Checked: alive says the tracked process is gone,
# the test shell's clean-up (kill_tracked, on exit) leaves the newcomer
# alone and still kills a tracked process that runs.
#
# Before this, on machines where three suites ran at once, clean-ups
# SIGKILLed other tests' daemons, peers and scripts (issue 54: status 137
# after 1 s, a peer's reset, a target's socket refusing connections).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || skip "not root (unshare --pid needs it)"
need unshare

LIB=$(cd "$(dirname "$0")/.." && pwd)/lib.sh

# The test shell: it tracks "old", which ends, and a running "mine";
# "new" takes old's pid. Its clean-up runs when it exits
cat >"$T/shell.sh" <<'EOF'
set -eu
. "$LIB"
sleep 60 &
old=$!
track "$old"
# Its start time (clock ticks after boot: the 22nd field)
read -r l <"/proc/$old/stat"
read -r -a f <<<"${l##*) }"
t0=${f[19]}
kill "$old"
wait "$old" || :
# Start times count in clock ticks (10 ms): let one go by, so that the
# newcomer starts later than old did, as any process does that gets a pid
# once the counter came round (builtins only: no process may start yet)
while :; do
	read -r up _ </proc/uptime
	[ "${up/./}" -le $((t0 + 2)) ] || break
done
# The next process forked in this pid namespace gets old's pid
echo $((old - 1)) >/proc/sys/kernel/ns_last_pid
sleep 60 &
new=$!
sleep 60 &
mine=$!
track "$mine"
echo "$old $new $mine" >"$OUT"
if alive "$old"; then
	echo "alive: yes" >>"$OUT"
else
	echo "alive: no" >>"$OUT"
fi
EOF

# The driver, pid 1 of the namespace: the test shell's orphans come to
# it, so it sees who survived the test shell's clean-up
cat >"$T/driver.sh" <<'EOF'
st=0
PT_ID=$PT_ID-shell bash "$T/shell.sh" || st=$?
[ "$st" -eq 0 ] || { echo "test shell: status $st"; exit 1; }
read -r old new mine <"$OUT"
echo "pids: old $old new $new mine $mine"
[ "$new" = "$old" ] || { echo "ns_last_pid: new got $new, not $old"; exit 1; }
grep -q 'alive: no' "$OUT" ||
	{ echo "alive: pid $old is the tracked process, though it ended and another took its pid"; exit 1; }
[ -e "/proc/$new" ] ||
	{ echo "the clean-up killed pid $new, a process it never started (the tracked one with that pid had ended)"; exit 1; }
kill "$new"
[ ! -e "/proc/$mine" ] ||
	{ echo "the clean-up left the tracked process $mine running"; exit 1; }
echo "ok"
EOF

st=0
export OUT=$T/out LIB T PT_ID
PT_KEEP=0 unshare --pid --fork --mount-proc bash "$T/driver.sh" \
	>"$T/driver.log" 2>&1 || st=$?
log "$(cat "$T/driver.log")"
[ "$st" -eq 0 ] || fail "$(tail -n 1 "$T/driver.log")"
