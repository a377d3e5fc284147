# SPDX-License-Identifier: GPL-2.0-or-later
#
# lib.sh - common set-up and helpers for the network namespace tests.
#
# Sourced by every test script (tests/*.sh). Three namespaces per test:
#
#   ROUTER  r0 192.0.2.1/24 2001:db8:1::1/64, peer 203.0.113.7/32 and
#           2001:db8:2::7/128 on its loopback: the "remote" host
#   HOST    h0 192.0.2.2/24 2001:db8:1::2/64, default routes via ROUTER:
#           where the daemon runs, as in a pod
#   GUEST   empty; tapbridge creates tap0 there and its kernel is the guest
#
# Only documentation ranges are used (192.0.2.0/24, 203.0.113.0/24,
# 2001:db8::/32). Names carry the runner's pid ($PT_ID), so parallel runs
# don't collide; everything is removed on exit. Waits poll a condition
# with a deadline (wait_for), never sleep for a fixed time.
#
# Environment: PASST (daemon binary), TOOLS (directory with tapbridge and
# framesend), PT_ID (name prefix, default pt$$), PT_KEEP=1 keeps the
# temporary directory (PT_KEEP=fail: only if the test failed),
# PT_PASST_OPTS (more options for every daemon passt_start starts, such as
# --trace), PT_PASST_LOG=1 (its log also in $T/passt.log, timestamped),
# PT_PASST_PCAP=1 (its frames in $T/passt.pcap),
# PT_STALL_MS (the TCP transfers' progress watchdog, STALL).

# Test scripts live in test/integration/tests/
TOP=$(cd "$(dirname "$0")/../../.." && pwd)

PASST=${PASST:-$TOP/build/passt}
TOOLS=${TOOLS:-$TOP/build/test/tools}
PT_ID=${PT_ID:-pt$$}

ROUTER=$PT_ID-router
HOST=$PT_ID-host
GUEST=$PT_ID-guest

# Addresses: the guest gets the host's, the gateway is the router
GW4=192.0.2.1
ADDR4=192.0.2.2
PEER4=203.0.113.7
GW6=2001:db8:1::1
ADDR6=2001:db8:1::2
PEER6=2001:db8:2::7
DNS4=192.0.2.53
DNS6=2001:db8:1::53
SEARCH=example.test

# Sanitizer builds: report leaks, and make UBSan reports fatal and findable
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

T=$(mktemp -d "/tmp/$PT_ID.XXXXXX")
# Started as root, the daemon becomes nobody and removes its pid and socket
# files through the directory: sticky and writable for all, like /tmp
chmod 1777 "$T"
SOCK=$T/passt.socket
PIDFILE=$T/passt.pid
PASST_PID=
PASST_ERR=$T/passt.err

log() {
	printf '%s\n' "$*" >&2
}

# The script's own stderr, kept: a failure inside a call whose stderr goes
# to a log (or to /dev/null) still reaches the terminal (to_terminal)
exec {PT_TERM_FD}>&2
PT_FAIL_MSG=

# to_terminal LINE: LINE on stderr, and on the script's own stderr too if
# this call's stderr goes elsewhere
to_terminal() {
	log "$1"
	[ /proc/self/fd/2 -ef "/proc/self/fd/$PT_TERM_FD" ] ||
		printf '%s\n' "$1" >&"$PT_TERM_FD"
}

fail() {
	PT_FAIL_MSG="FAIL: $*"
	to_terminal "$PT_FAIL_MSG"
	exit 1
}

skip() {
	PT_FAIL_MSG="SKIP: $*"
	to_terminal "$PT_FAIL_MSG"
	exit 77
}

# ns NAME CMD...: run CMD in namespace NAME
ns() {
	_ns=$1
	shift
	ip netns exec "$_ns" "$@"
}

# wait_for CMD TIMEOUT: poll shell command CMD until it succeeds; fail
# (return 1) once TIMEOUT seconds have passed
wait_for() {
	_end=$(($(date +%s%N) / 1000000 + ${2:-10} * 1000))
	while ! eval "$1" >/dev/null 2>&1; do
		if [ $(($(date +%s%N) / 1000000)) -gt "$_end" ]; then
			log "timed out after ${2:-10} s waiting for: $1"
			return 1
		fi
		sleep 0.05
	done
}

# A pid names a process only until it ends and is reaped: then the kernel
# gives it to a later process, once its counter comes round (pid_max is
# 32768 on these machines, and test suites running side by side fork
# thousands of processes a minute). So a pid kept in a list is checked
# before it is signalled: track records each process with its start time,
# and alive, kill_tracked and the clean-up take a pid for the process
# tracked with it only while the start time still matches. Without that,
# a test's clean-up SIGKILLed whatever had come to use a pid of one of its
# long-gone helpers: other tests' daemons, peers, front-ends, and the
# test scripts themselves (issue 54: failures with no daemon warning, a
# "Killed" line and a log cut short, status 137). What is left is the
# instant between the check and the kill.

# pid_stat PID: PID_STATE (state letter) and PID_START (start time, clock
# ticks after boot) of process PID; returns 1 if there is none
pid_stat() {
	local _l _f
	read -r _l 2>/dev/null <"/proc/$1/stat" || return 1
	# The name, in parentheses, may hold spaces and parentheses itself
	read -r -a _f <<<"${_l##*) }"
	PID_STATE=${_f[0]:-} PID_START=${_f[19]:-}
	[ -n "$PID_START" ]
}

# alive PID: true if the process exists and is not a zombie, and, if PID
# was tracked, is still the process tracked with it
alive() {
	local _t
	pid_stat "$1" || return 1
	[ "$PID_STATE" != Z ] || return 1
	[ -e "$T/pids.d/$1" ] || return 0
	read -r _t <"$T/pids.d/$1" || return 1
	[ "$_t" = "$PID_START" ]
}

# track PID: remember a process (and its start time: "-" if it is gone
# already) to kill at clean-up
track() {
	mkdir -p "$T/pids.d"
	if pid_stat "$1"; then
		echo "$PID_START" >"$T/pids.d/$1"
	else
		echo - >"$T/pids.d/$1"
	fi
}

# kill_tracked: SIGKILL to every tracked process that still runs (alive),
# and reap it if it is our child; the list is emptied
kill_tracked() {
	local _f _p
	for _f in "$T"/pids.d/*; do
		[ -e "$_f" ] || continue
		_p=${_f##*/}
		if alive "$_p"; then
			# wait reaps our own children quietly ("Killed"
			# otherwise)
			{ kill -KILL "$_p" && wait "$_p"; } 2>/dev/null
		fi
		rm -f "$_f"
	done
}

# kill_own SIGNAL PID...: SIGNAL to each PID that is still the process
# started with it (alive), to none that a later process took
kill_own() {
	local _s=$1 _p
	shift
	for _p in "$@"; do
		! alive "$_p" || kill "-$_s" "$_p" 2>/dev/null || :
	done
}

# sanitizer_check FILE...: fail if a sanitizer reported anything
sanitizer_check() {
	if grep -l -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' \
		-e 'runtime error:' "$@" 2>/dev/null; then
		grep -h -A 30 -e 'ERROR: .*Sanitizer' -e 'runtime error:' \
			"$@" >&2 || :
		fail "sanitizer report in the daemon's output"
	fi
}

# cleanup [CMD]: the EXIT trap; CMD is the command that was running, named
# in the last line when a failure went without a fail() of its own (set -e)
cleanup() {
	_rc=$?
	_cmd=${1:-}
	set +e
	kill_tracked
	for _n in "$GUEST" "$HOST" "$ROUTER"; do
		for _pid in $(ip netns pids "$_n" 2>/dev/null); do
			kill -KILL "$_pid" 2>/dev/null
		done
		ip netns del "$_n" 2>/dev/null
	done
	rm -rf "/etc/netns/$HOST"
	if [ "$_rc" -ne 0 ] && [ "$_rc" -ne 77 ]; then
		_dumped=
		# The daemons' logs too, in their pods' directories
		# (migrate-lib.sh's mig_pod_daemon: $T/POD/passt.socket.err)
		for _f in "$T"/*.err "$T"/*.log "$T"/*/*.err; do
			[ -s "$_f" ] || continue
			log "---- $_f (last 40 lines)"
			tail -n 40 "$_f" >&2
			_dumped=1
		done
		# The reason comes last, where a person looks first; a set -e
		# exit names the command that failed
		if [ -z "$PT_FAIL_MSG" ]; then
			printf "FAIL: %sexited with status %s\n" \
				"${_cmd:+'$_cmd' }" "$_rc" >&"$PT_TERM_FD"
		elif [ -n "$_dumped" ]; then
			printf '%s\n' "$PT_FAIL_MSG" >&"$PT_TERM_FD"
		fi
	fi
	if [ "${PT_KEEP:-0}" = fail ] && [ "$_rc" -ne 0 ] &&
	   [ "$_rc" -ne 77 ]; then
		log "kept: $T"
	elif [ "${PT_KEEP:-0}" != 1 ]; then
		rm -rf "$T"
	fi
	exit "$_rc"
}
trap 'cleanup "$BASH_COMMAND"' EXIT
trap 'exit 130' INT TERM

# need_root: skip the test unless namespaces can be created
need_root() {
	[ "$(id -u)" -eq 0 ] || skip "not root (network namespaces need root)"
	ip netns add "$PT_ID-probe" 2>/dev/null || skip "ip netns does not work"
	ip netns del "$PT_ID-probe"
	[ -x "$PASST" ] || fail "no daemon binary at $PASST (make builds it)"
	[ -x "$TOOLS/tapbridge" ] ||
		fail "no tapbridge in $TOOLS (make tools builds it)"
}

# need CMD...: fail unless every command exists (only a missing root or
# netns support is a reason to skip: .ci/run installs everything else)
need() {
	for _c in "$@"; do
		command -v "$_c" >/dev/null ||
			fail "$_c not installed (sh .ci/setup installs it)"
	done
}

# need_upstream FILE: UP, the directory of upstream passt's binaries that
# test/upstream/fetch.sh gets (cached after the first fetch); skip if it
# can't get the package, fail if it fails otherwise or UP has no FILE
need_upstream() {
	_st=0
	UP=$(sh "$TOP/test/upstream/fetch.sh" 2>"$T/fetch.err" |
		tail -n 1) || _st=$?
	[ "$_st" -ne 77 ] ||
		skip "upstream passt unavailable: $(tail -n 1 "$T/fetch.err")"
	[ "$_st" -eq 0 ] && [ -x "$UP/$1" ] ||
		fail "test/upstream/fetch.sh failed ($_st): $(tail -n 5 "$T/fetch.err")"
}

# setup_ns: the three namespaces, addressed and routed, and the resolver
# configuration the daemon in HOST will read
setup_ns() {
	need_root
	for _n in "$ROUTER" "$HOST" "$GUEST"; do
		ip netns add "$_n"
		ip -n "$_n" link set lo up
	done

	ip link add r0 netns "$ROUTER" type veth peer name h0 netns "$HOST"

	ip -n "$ROUTER" addr add "$GW4/24" dev r0
	ip -n "$ROUTER" addr add "$GW6/64" dev r0 nodad
	ip -n "$ROUTER" addr add "$PEER4/32" dev lo
	ip -n "$ROUTER" addr add "$PEER6/128" dev lo
	ip -n "$ROUTER" link set r0 up

	ip -n "$HOST" addr add "$ADDR4/24" dev h0
	ip -n "$HOST" addr add "$ADDR6/64" dev h0 nodad
	ip -n "$HOST" link set h0 up
	ip -n "$HOST" route add default via "$GW4"
	ip -n "$HOST" -6 route add default via "$GW6" dev h0
	ns "$HOST" sysctl -qw net.ipv4.ping_group_range="0 2147483647"

	mkdir -p "/etc/netns/$HOST"
	cat >"/etc/netns/$HOST/resolv.conf" <<-EOF
		nameserver $DNS4
		nameserver $DNS6
		search $SEARCH
	EOF

	# The guest takes router advertisements, and its tap0 will too
	ns "$GUEST" sysctl -qw net.ipv6.conf.all.forwarding=0
	ns "$GUEST" sysctl -qw net.ipv6.conf.default.accept_ra=1

	wait_for "ns $HOST ping -c1 -W1 $PEER4" 10 ||
		fail "set-up: HOST can't reach $PEER4"
	wait_for "ns $HOST ping -6 -c1 -W1 $PEER6" 10 ||
		fail "set-up: HOST can't reach $PEER6"
}

# sock_listening NS PATH: a UNIX socket listens at PATH, in namespace NS.
# The daemon binds its socket, then listens: in between (a moment, or much
# longer on a loaded machine) the file is there, and a connect() is
# refused. Clients retry (QEMU, vu-front -r, passt-repair); a test that
# connects once waits for this first. In the state "listening" itself:
# ss -l also lists a UNIX stream socket that is bound and not listening
# yet (UNCONN), in exactly that moment
sock_listening() {
	ip netns exec "$1" ss -xH state listening src "$2" 2>/dev/null |
		grep -q .
}

# passt_start [OPTION...]: start the daemon in HOST in the foreground,
# with our socket and pid file, and wait until its socket listens
passt_start() {
	# Not through ns(): $! must be the daemon (ip netns exec execs it),
	# not a subshell running a function
	# PT_PASST_LOG=1: a timestamped copy of the log too; PT_PASST_PCAP=1:
	# every frame in $T/passt.pcap
	[ "${PT_PASST_LOG:-0}" = 1 ] && set -- "$@" -l "$T/passt.log"
	[ "${PT_PASST_PCAP:-0}" = 1 ] && set -- "$@" --pcap "$T/passt.pcap"
	# shellcheck disable=SC2086
	ip netns exec "$HOST" "$PASST" -f -s "$SOCK" -P "$PIDFILE" "$@" \
		${PT_PASST_OPTS:-} >"$T/passt.out" 2>"$PASST_ERR" &
	PASST_PID=$!
	track "$PASST_PID"
	if ! wait_for "sock_listening $HOST '$SOCK' || ! alive $PASST_PID" 10 ||
	   ! alive "$PASST_PID"; then
		fail "daemon did not start (pid $PASST_PID): $(cat "$PASST_ERR")"
	fi
}

# passt_stop: SIGTERM, wait for the exit, check status, files, sanitizers
passt_stop() {
	kill_own TERM "$PASST_PID"
	wait_for "! alive $PASST_PID" 10 || fail "daemon ignores SIGTERM"
	_st=0
	wait "$PASST_PID" || _st=$?
	sanitizer_check "$PASST_ERR"
	[ "$_st" -eq 0 ] || fail "daemon exited with status $_st after SIGTERM"
	[ ! -e "$SOCK" ] || fail "socket $SOCK left behind"
	[ ! -e "$PIDFILE" ] || fail "pid file $PIDFILE left behind"
}

# passt_check_alive: fail if the daemon is gone, with its last words
passt_check_alive() {
	alive "$PASST_PID" && return 0
	_st=0
	wait "$PASST_PID" || _st=$?
	sanitizer_check "$PASST_ERR"
	fail "daemon died (status $_st): $(tail -n 5 "$PASST_ERR")"
}

# bridge_start [NAME]: tapbridge in GUEST (TAPBRIDGE_OPTS: more options);
# waits for it to be connected
bridge_start() {
	_name=${1:-tb}
	# Not the last one's words: the shell truncates the log only once
	# the new one runs, and the wait below may look before
	rm -f "$T/$_name.err"
	# shellcheck disable=SC2086
	ip netns exec "$GUEST" "$TOOLS/tapbridge" -r 5 ${TAPBRIDGE_OPTS:-} \
		"$SOCK" 2>"$T/$_name.err" &
	BRIDGE_PID=$!
	track "$BRIDGE_PID"
	wait_for "grep -q 'tapbridge: connected' '$T/$_name.err'" 10 ||
		fail "tapbridge did not connect: $(cat "$T/$_name.err")"
}

# bridge_stop: SIGTERM to tapbridge, wait until it and tap0 are gone
bridge_stop() {
	kill_own TERM "$BRIDGE_PID"
	wait_for "! alive $BRIDGE_PID" 10 || fail "tapbridge ignores SIGTERM"
	wait "$BRIDGE_PID" || :
	wait_for "! ip -n $GUEST link show tap0" 5 || fail "tap0 still there"
}

# lease_get FILE VAR: value of VAR in a lease file written by our DHCP
# client scripts (lines VAR='value'), empty if absent
lease_get() {
	sed -n "s/^$2='\\(.*\\)'\$/\\1/p" "$1"
}

# dhcp4 [FILE]: run udhcpc on tap0 in GUEST; the lease's variables go to
# FILE (default $T/lease4) as shell assignments
dhcp4() {
	_lease=${1:-$T/lease4}
	cat >"$T/udhcpc.script" <<-'EOF'
		#!/bin/sh
		# udhcpc event script: record the lease, configure nothing
		[ "$1" = bound ] || exit 0
		for v in ip subnet mask router dns domain search mtu lease; do
			eval "val=\${$v-}"
			printf "%s='%s'\n" "$v" "$val"
		done >"$LEASE_FILE.tmp"
		mv "$LEASE_FILE.tmp" "$LEASE_FILE"
	EOF
	chmod +x "$T/udhcpc.script"
	rm -f "$_lease"
	LEASE_FILE=$_lease timeout 30 \
		ip netns exec "$GUEST" busybox udhcpc -i tap0 -n -q -f \
		-t 5 -T 2 -O mtu -O search -O dns -O domain \
		-s "$T/udhcpc.script" >"$T/udhcpc.log" 2>&1 ||
		fail "udhcpc got no lease: $(tail -n 5 "$T/udhcpc.log")"
	[ -s "$_lease" ] || fail "udhcpc script did not run"
}

# dhcp4_apply [FILE]: configure tap0 in GUEST from the lease (IPv4 only:
# flushing everything would kill the link-local and SLAAC addresses)
dhcp4_apply() {
	_lease=${1:-$T/lease4}
	_mask=$(lease_get "$_lease" mask)
	ip -n "$GUEST" -4 addr flush dev tap0
	ip -n "$GUEST" addr add "$(lease_get "$_lease" ip)/${_mask:-24}" \
		dev tap0
	ip -n "$GUEST" route replace default \
		via "$(lease_get "$_lease" router)" dev tap0
}

# slaac_wait: wait for a global address and a default route from RA
slaac_wait() {
	wait_for "ip -n $GUEST -6 addr show dev tap0 scope global |
		  grep -q 'inet6 2001:db8:1:'" 15 ||
		fail "no SLAAC address on tap0: $(ip -n "$GUEST" -6 addr)"
	wait_for "ip -n $GUEST -6 route show default |
		  grep -q 'via fe80:.* dev tap0'" 10 ||
		fail "no IPv6 default route: $(ip -n "$GUEST" -6 route)"
}

# expect WHAT ACTUAL EXPECTED: fail unless equal
expect() {
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# expect_in WHAT LIST WORD: fail unless WORD is one of the words in LIST
expect_in() {
	for _w in $2; do
		[ "$_w" = "$3" ] && return 0
	done
	fail "$1: '$3' not in '$2'"
}

# ---- helpers for the TCP, UDP and soak tests (sockio) ----

SOCKIO=${SOCKIO:-$TOOLS/sockio}

# need_sockio: fail unless the sockio tool is built
need_sockio() {
	[ -x "$SOCKIO" ] || fail "no sockio in $TOOLS"
}

# STALL: sockio's options for the progress watchdog of a TCP transfer: it
# fails (exit 3) when the transfer makes no progress for PT_STALL_MS ms
# (default 2000), saying which connection, where it stopped and the
# kernel's view of it; at that moment stall.sh records the sockets of
# all three namespaces (ss -tinm), their links' counters (drops) and the
# guest's TCP counters (retransmissions, timeouts, window probes) in
# $T/stall.log, and has the daemon log its flows, frame counters and, at
# debug level, each connection's state (SIGUSR1). A transfer through the daemon
# takes well under a second at any size these tests use: two seconds
# without an ACK is a stall, not a slow machine.
PT_STALL_MS=${PT_STALL_MS:-2000}
STALL=(--stall "$PT_STALL_MS" --stall-cmd "$T/stall.sh")
cat >"$T/stall.sh" <<EOF
#!/bin/sh
# stall.sh: sockio --stall-cmd, see STALL in lib.sh
{
	echo "==== stall at \$(date +%T.%N)"
	for n in $GUEST $HOST $ROUTER; do
		echo "== ss -tinm in \$n"
		ip netns exec "\$n" ss -tinm
		echo "== ip -s link in \$n"
		ip -n "\$n" -s link
	done
	echo "== TCP counters in $GUEST (nstat -as)"
	ip netns exec "$GUEST" nstat -as | grep -E 'Tcp|Ip'
} >>"$T/stall.log" 2>&1
[ -s "$PIDFILE" ] && kill -USR1 "\$(cat "$PIDFILE")"
exit 0
EOF
chmod +x "$T/stall.sh"

# guest_up: tapbridge, DHCP lease applied, SLAAC address and default route
guest_up() {
	bridge_start
	dhcp4
	dhcp4_apply
	slaac_wait
	# Until duplicate address detection is done, the SLAAC address is
	# tentative and the guest picks another source (even ::1!) for
	# global destinations: wait for DAD to complete (a second or two;
	# on a machine loaded twenty times over its CPUs, it was seen to
	# take more than ten)
	wait_for "ip -n $GUEST -6 -o addr show dev tap0 scope global |
		  grep 'inet6 2001:db8:1:' | grep -qv tentative" 30 ||
		fail "SLAAC address stays tentative: $(ip -n "$GUEST" -6 addr)"
}

# guest_addr6: the guest's global (SLAAC) address on tap0
guest_addr6() {
	ip -n "$GUEST" -6 -o addr show dev tap0 scope global |
		sed -n 's/.* inet6 \([0-9a-f:]*\)\/.*/\1/p' | head -n 1
}

# bg NS NAME IN OUT CMD...: run CMD in namespace NS in the background with
# stdin from IN, stdout to OUT and stderr to $T/NAME.err; the pid goes to
# BG_PID (and is tracked for clean-up)
bg() {
	_ns=$1 _name=$2 _in=$3 _out=$4
	shift 4
	ip netns exec "$_ns" "$@" <"$_in" >"$_out" 2>"$T/$_name.err" &
	BG_PID=$!
	track "$BG_PID"
}

# bg_wait PID [TIMEOUT]: wait for a background process to exit; its exit
# status goes to BG_ST. Returns 1 (BG_ST=timeout) if it's still running
# after TIMEOUT seconds (default 30)
bg_wait() {
	if ! wait_for "! alive $1" "${2:-30}"; then
		BG_ST=timeout
		return 1
	fi
	BG_ST=0
	wait "$1" || BG_ST=$?
}

# wait_ready FILE [TIMEOUT]: wait until a --ready FILE exists
wait_ready() {
	wait_for "[ -e '$1' ]" "${2:-10}" || fail "not ready: $1"
}

# pattern_both NAME PORT BYTES SECS: BYTES of sockio's verified pattern
# each way at once, guest -> peer and peer -> guest, over one connection
# from the guest to the peer's PORT, checked at both ends; fails unless
# both ends finish within SECS, or if the transfer stalls (STALL)
pattern_both() {
	local _pb_l
	rm -f "$T/ready"
	bg "$ROUTER" "$1-peer" /dev/null /dev/null "$SOCKIO" "${STALL[@]}" \
		-t "$4" --send --bytes "$3" --ready "$T/ready" \
		pattern-listen "$PEER4" "$2"
	_pb_l=$BG_PID
	wait_ready "$T/ready"
	bg "$GUEST" "$1-guest" /dev/null /dev/null "$SOCKIO" "${STALL[@]}" \
		-t "$4" --send --bytes "$3" pattern-connect "$PEER4" "$2"
	bg_wait "$BG_PID" $(($4 + 10)) || fail "$1: guest end still running"
	[ "$BG_ST" = 0 ] || fail "$1: guest end: $(cat "$T/$1-guest.err")"
	bg_wait "$_pb_l" 10 || fail "$1: peer end still running"
	[ "$BG_ST" = 0 ] || fail "$1: peer end: $(cat "$T/$1-peer.err")"
	log "$1: $3 bytes each way, verified"
}

# sha FILE: the SHA-256 of FILE, hex only
sha() {
	sha256sum "$1" | cut -d' ' -f1
}

# now_ms: monotonic-enough wall clock in milliseconds
now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# passt_fds: number of open file descriptors of the daemon
passt_fds() {
	ls "/proc/$PASST_PID/fd" | wc -l
}

# passt_flows: SIGUSR1 to the daemon, print N from the new "flows: N" line
# it logs; returns 1 if no new line appears
passt_flows() {
	_before=$(grep -c 'flows:' "$PASST_ERR" || :)
	kill -USR1 "$PASST_PID" || return 1
	wait_for "[ \$(grep -c 'flows:' '$PASST_ERR') -gt $_before ]" 5 ||
		return 1
	grep 'flows:' "$PASST_ERR" | tail -n 1 |
		sed -n 's/.*flows: \([0-9][0-9]*\).*/\1/p'
}

# nstat_get NS COUNTER: absolute value of a kernel SNMP counter in NS
nstat_get() {
	ns "$1" nstat -az "$2" | awk -v c="$2" '$1 == c { print $2 }'
}

# tcp_counters NS: the kernel's TCP counters in NS that tell how a sender
# recovered from what didn't arrive or wasn't taken (retransmissions,
# timeouts, window probes), those that aren't zero, on one line
tcp_counters() {
	ns "$1" nstat -as | awk '
		/^TcpRetransSegs / || /^TcpExtTCP(Timeouts|LossProbes) / ||
		/^TcpExtTCP(FastRetrans|SlowStartRetrans|LostRetransmit) / ||
		/^TcpExtTCP(Reno|Loss)(Recovery|Failures) / ||
		/^TcpExtTCP(SpuriousRTOs|WinProbe|ZeroWindowDrop|RcvQDrop) / ||
		/^TcpExtTCPAbortOn(Data|Timeout) / {
			printf "%s%s=%s", sep, $1, $2; sep = " "
		}
		END { print "" }'
}

# ss_dump [TAG]: TCP socket details (ss -tinm) of all three namespaces,
# appended to $T/ss.log (shown by the clean-up when a test fails)
ss_dump() {
	for _n in "$GUEST" "$HOST" "$ROUTER"; do
		echo "== ${1:-} ss -tinm in $_n"
		ip netns exec "$_n" ss -tinm 2>&1
	done >>"$T/ss.log"
}

# Frame-level tests (tcpguest in ROUTER is the guest): TCPGUEST, the
# daemon's baseline of fds and flows ($fds0, $flows0)
TCPGUEST=${TCPGUEST:-$TOOLS/tcpguest}

# tcpguest_start: namespaces, the daemon, and its baseline, once it's done
# setting up (its socket comes before its io_uring, for one: a baseline
# taken in between counted a descriptor less, and tcp_storm failed on a
# busy machine)
tcpguest_start() {
	[ -x "$TCPGUEST" ] || fail "no tcpguest in $TOOLS"
	setup_ns
	passt_start
	wait_for "grep -q 'Sandboxed: seccomp profile' '$PASST_ERR'" 10 ||
		fail "the daemon doesn't say it's sandboxed: $(tail -n 3 "$PASST_ERR")"
	fds0=$(passt_fds)
	flows0=$(passt_flows) || fail "no 'flows:' line after SIGUSR1"
	log "baseline: $fds0 fds, $flows0 flows"
}

# settle WHAT: poll until the daemon is back to $flows0 flows, $fds0 fds
settle() {
	_e=$(($(now_ms) + 15000))
	while :; do
		_f=$(passt_flows) || _f='?'
		_d=$(passt_fds)
		[ "$_f" = "$flows0" ] && [ "$_d" = "$fds0" ] && return 0
		[ "$(now_ms)" -gt "$_e" ] &&
			fail "$1: the daemon keeps $_f flows and $_d fds, baseline $flows0 and $fds0"
		sleep 0.1
	done
}
