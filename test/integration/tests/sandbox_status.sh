#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sandbox_status.sh - started as root the way libvirt starts it
# (daemonized, --one-off --socket --pid [--vhost-user] --mtu --interface
# --address --netmask --log-file --tcp-ports --udp-ports), the daemon runs
# as nobody (or --runas), with no capabilities in any set (CAP_NET_ADMIN
# only with --repair-path none: direct TCP_REPAIR), no_new_privs, a
# seccomp filter, not dumpable, no core dumps and a bounded number of
# open files, in its own user, mount, IPC and UTS namespaces, with an
# empty root; SIGTERM still removes its pid and socket files. --runas 0
# is refused. Stream and vhost-user mode. With a repair helper socket,
# the peer credential checker (isolation_peer.c) runs beside it: the daemon's
# user, in the namespaces we started in, but with nothing else (no
# capability, no_new_privs, seccomp, not dumpable, one descriptor);
# without one, there is no such process. Direct TCP_REPAIR has a profile
# of its own.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

setup_ns

# Sanitizer builds stay dumpable and see /proc (the leak checker needs
# both at exit): see isolation.c
SAN=0
grep -qa __asan_init "$PASST" && SAN=1

ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$T/sanitizer"
UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$T/sanitizer"

# status_field PID FIELD: a value from /proc/PID/status
status_field() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"
}

# ns_id PID NS: the namespace's inode, as a link name
ns_id() {
	readlink "/proc/$1/ns/$2"
}

# start NAME OPTION...: the daemon as libvirt runs it; sets PID
start() {
	_name=$1
	shift
	rm -f "$SOCK" "$PIDFILE" "$SOCK.repair"
	_st=0
	# shellcheck disable=SC2086 # START_WRAP: a command and its options
	timeout 20 ${START_WRAP:-} ip netns exec "$HOST" "$PASST" --one-off \
		--socket "$SOCK" --pid "$PIDFILE" "$@" --mtu 65520 --interface h0 \
		--address "$ADDR4" --netmask 255.255.255.0 \
		--log-file "$T/$_name.log" --tcp-ports 2222:22 \
		--udp-ports 5353 >"$T/$_name.out" 2>&1 || _st=$?
	expect "$_name: parent's exit status" "$_st" 0
	PID=$(tr -d ' \n' <"$PIDFILE")
	track "$PID"
	wait_for "grep -q 'Sandboxed: seccomp profile' '$T/$_name.log' ||
		  ! alive $PID" 10 || fail "$_name: no sandbox line in the log"
	alive "$PID" || fail "$_name: daemon gone: $(tail -n 5 "$T/$_name.log")"
}

# check NAME UID CAPS PROFILE USERNS: what /proc says about the daemon
check() {
	_name=$1
	_caps=$3
	expect "$_name: Uid" "$(status_field "$PID" Uid)" "$2	$2	$2	$2"
	expect "$_name: Gid" "$(status_field "$PID" Gid)" "$2	$2	$2	$2"
	expect "$_name: Groups" "$(status_field "$PID" Groups)" ""
	for f in CapEff CapPrm CapBnd; do
		expect "$_name: $f" "$(status_field "$PID" $f)" "$_caps"
	done
	for f in CapInh CapAmb; do
		expect "$_name: $f" "$(status_field "$PID" $f)" 0000000000000000
	done
	expect "$_name: NoNewPrivs" "$(status_field "$PID" NoNewPrivs)" 1
	expect "$_name: Seccomp" "$(status_field "$PID" Seccomp)" 2
	grep -q "Sandboxed: seccomp profile $4," "$T/$_name.log" ||
		fail "$_name: not the $4 profile: $(grep Sandboxed "$T/$_name.log")"
	if [ "$SAN" = 0 ]; then
		# Not dumpable: /proc/PID/* belongs to root, not to the daemon
		expect "$_name: owner of /proc/PID/environ (dumpable?)" \
			"$(stat -c %u "/proc/$PID/environ")" 0
	fi
	grep -q '^Max core file size *0 *0 ' "/proc/$PID/limits" ||
		fail "$_name: core dumps allowed: $(grep core "/proc/$PID/limits")"
	# Open files: soft = hard, at most what is open plus the flow table
	# (32768) plus a spare, or what the hard limit allowed at start
	_soft=$(awk '/^Max open files/ { print $4 }' "/proc/$PID/limits")
	_hard=$(awk '/^Max open files/ { print $5 }' "/proc/$PID/limits")
	expect "$_name: open files, soft = hard" "$_soft" "$_hard"
	[ "$_hard" -le $((32768 + 1024)) ] ||
		fail "$_name: open files limit $_hard, not flows + spare"

	for n in mnt ipc uts; do
		[ "$(ns_id "$PID" $n)" != "$(ns_id $$ $n)" ] ||
			fail "$_name: still in the parent's $n namespace"
	done
	if [ "$5" = new ]; then
		[ "$(ns_id "$PID" user)" != "$(ns_id $$ user)" ] ||
			fail "$_name: still in the parent's user namespace"
	else
		expect "$_name: user namespace" "$(ns_id "$PID" user)" \
			"$(ns_id $$ user)"
	fi
	expect "$_name: network namespace" "$(ns_id "$PID" net)" \
		"$(ip netns exec "$HOST" readlink /proc/self/ns/net)"

	# The root is the empty tmpfs (a sanitizer build: /proc only)
	_root=$(ls -A "/proc/$PID/root/")
	if [ "$SAN" = 1 ]; then
		expect "$_name: root directory" "$_root" proc
	else
		expect "$_name: root directory" "$_root" ""
	fi
	expect "$_name: root file system" \
		"$(stat -f -c %T "/proc/$PID/root/")" tmpfs
	touch "/proc/$PID/root/x" 2>/dev/null &&
		fail "$_name: the root is writable"
	log "$_name: $(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' \
		"/proc/$PID/status" | tr '\t\n' '  ')"
}

# children PID: the daemon's child processes
children() {
	cat "/proc/$1/task/$1/children" 2>/dev/null | tr -s ' ' '\n' |
		sed '/^$/d'
}

# checker NAME UID: the peer credential checker, the daemon's only child
checker() {
	_c=$(children "$PID")
	[ -n "$_c" ] || fail "$1: no peer credential checker"
	[ "$(echo "$_c" | wc -l)" -eq 1 ] || fail "$1: children: $_c"
	expect "$1: checker's name" "$(cat "/proc/$_c/comm")" passt-peercred
	expect "$1: checker's Uid" "$(status_field "$_c" Uid)" "$2	$2	$2	$2"
	for f in CapEff CapPrm CapBnd CapInh CapAmb; do
		expect "$1: checker's $f" "$(status_field "$_c" $f)" \
			0000000000000000
	done
	expect "$1: checker's NoNewPrivs" "$(status_field "$_c" NoNewPrivs)" 1
	expect "$1: checker's Seccomp" "$(status_field "$_c" Seccomp)" 2
	# Where it can see who a helper really is
	expect "$1: checker's user namespace" "$(ns_id "$_c" user)" \
		"$(ns_id $$ user)"
	expect "$1: checker's descriptors" "$(ls "/proc/$_c/fd" | tr '\n' ' ')" \
		"3 "
	if [ "$SAN" = 0 ]; then
		expect "$1: owner of the checker's /proc/PID/environ" \
			"$(stat -c %u "/proc/$_c/environ")" 0
	fi
	CHECKER=$_c
	log "$1: checker $_c: $(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' \
		"/proc/$_c/status" | tr '\t\n' '  ')"
}

# stop NAME [REPAIR]: SIGTERM; the daemon removes its files
stop() {
	kill -TERM "$PID"
	wait_for "! alive $PID" 10 || fail "$1: daemon ignores SIGTERM"
	[ ! -e "$SOCK" ] || fail "$1: socket left behind"
	[ ! -e "$PIDFILE" ] || fail "$1: pid file left behind"
	[ ! -e "$SOCK.repair" ] || fail "$1: repair socket left behind"
	grep -q 'exiting' "$T/$1.log" || fail "$1: no exit line in the log"
	sanitizer_check "$T/$1.log" "$T"/sanitizer.* "$T/$1.out"
}

# ---- vhost-user, as libvirt: the repair helper socket, migration profile
start vu --vhost-user
[ -S "$SOCK.repair" ] || fail "vu: no repair helper socket"
check vu 65534 0000000000000000 vhost-user-migrate new
grep -q 'Running as user 65534, group 65534' "$T/vu.log" ||
	fail "vu: no identity line in the log"
checker vu 65534
stop vu
wait_for "[ ! -d /proc/$CHECKER ]" 10 || fail "vu: the checker outlived the daemon"

# ---- stream mode
start stream
check stream 65534 0000000000000000 stream new
expect "stream: child processes" "$(children "$PID")" ""
stop stream

# ---- a hard limit of open files below the flow table (1024): it stays,
# and the log says how many connections that leaves room for
START_WRAP="prlimit --nofile=1024:1024" start lowfd
expect "lowfd: open files limit" \
	"$(awk '/^Max open files/ { print $5 }' "/proc/$PID/limits")" 1024
_w='inherited hard limit of 1024 leaves room for about [0-9]* connections'
grep -q "$_w, not 32768" "$T/lowfd.log" ||
	fail "lowfd: no warning about the open files limit"
check lowfd 65534 0000000000000000 stream new
stop lowfd

# ---- vhost-user, direct TCP_REPAIR: CAP_NET_ADMIN kept, and logged; no
# new user namespace (it would take the capability from our netns)
start direct --vhost-user --repair-path none
check direct 65534 0000000000001000 vhost-user-direct parent
expect "direct: child processes" "$(children "$PID")" ""
grep -q 'Keeping CAP_NET_ADMIN' "$T/direct.log" ||
	fail "direct: keeping CAP_NET_ADMIN is not logged"
stop direct

# ---- --runas another user
start runas --vhost-user --runas 4242:4343
expect "runas: Uid" "$(status_field "$PID" Uid)" "4242	4242	4242	4242"
expect "runas: Gid" "$(status_field "$PID" Gid)" "4343	4343	4343	4343"
for f in CapEff CapPrm CapBnd; do
	expect "runas: $f" "$(status_field "$PID" $f)" 0000000000000000
done
checker runas 4242
stop runas

# ---- root is refused
st=0
timeout 20 ip netns exec "$HOST" "$PASST" -f --socket "$SOCK" --runas 0 \
	>"$T/root.out" 2>&1 || st=$?
[ "$st" -ne 0 ] || fail "--runas 0: exit status 0"
grep -q 'refusing to run as root' "$T/root.out" ||
	fail "--runas 0: $(cat "$T/root.out")"
[ ! -e "$SOCK" ] || fail "--runas 0: socket left behind"
log "all cases passed"
