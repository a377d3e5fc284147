#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# netdev_passt.sh - QEMU starts the daemon itself (-netdev passt, QEMU 10.1
# and later; vhost-user=on in vhost-user mode), as a user of a current
# distribution runs it: QEMU passes --quiet, the options its properties map
# to, --pid FILE (in its TMPDIR) and --fd 3 (a socketpair), from its own
# working directory. Checked:
#   - the options QEMU maps do what they say in the guest: mtu (the DHCP
#     MTU), dns and search (resolv.conf), tcp-ports (an inbound
#     connection), param (--hostname, in the DHCP lease)
#   - 8 MiB downloaded from the peer, and 8 MiB through the forwarded
#     port, every byte (SHA-256)
#   - nothing left behind: no file in QEMU's working directory (no
#     repair helper socket: --fd without a socket path makes none), the
#     pid file gone once the daemon is
#   - the daemon exits when QEMU does, even killed (SIGKILL: QEMU can't
#     tell it), and its log says nothing at --quiet but errors
# Skipped where QEMU has no -netdev passt (Debian 12's QEMU 10.0): the
# sid root's QEMU 11.1 runs it (test/roots/run.sh).
#
# The boot gets 150 s, not 90: on this 2-core machine shared with other
# test runs, TCG took up to 80 s before the guest's kernel started (its
# own clock said 27 s at GUEST-READY, 108 s after QEMU started); if it
# doesn't come, the processes in HOST and QEMU's threads are logged.
# e2e-timeout: 300
set -eu
. "$(dirname "$0")/../lib.sh"
need sha256sum
need_sockio

MIB=8
PORT=5001

setup_ns
need_guest
qemu_has_passt ||
	skip "$($QEMU --version | head -n 1): no -netdev passt (QEMU 10.1+)"

qemu_start --passt ',"mtu":1500,"dns":"192.0.2.54",
	"search":[{"str":"one.test"},{"str":"two.test"}],
	"tcp-ports":[{"str":"'"$PORT"'"}],
	"param":[{"str":"--hostname"},{"str":"g1.test"},
		 {"str":"--log-file"},{"str":"'"$T/passt.log"'"}]'
# QEMU waits for the daemon's first process to exit before it boots the
# guest: if the guest doesn't come, say what each process in HOST waits on
if ! wait_for "grep -q '^GUEST-READY' '$T/console.log' ||
	       ! alive $QEMU_PID" 150; then
	for p in $(ip netns pids "$HOST"); do
		log "HOST: $p $(cat "/proc/$p/comm") $(cut -d' ' -f3 \
			"/proc/$p/stat") wchan=$(cat "/proc/$p/wchan") ppid=$(cut \
			-d' ' -f4 "/proc/$p/stat") $(tr '\0' ' ' <"/proc/$p/cmdline")"
	done
	for t in /proc/"$QEMU_PID"/task/*; do
		log "QEMU thread ${t##*/}: $(cat "$t/comm") $(cut -d' ' -f3 \
			"$t/stat") wchan=$(cat "$t/wchan") utime=$(cut -d' ' -f14 \
			"$t/stat")"
	done
	ls -l "/proc/$QEMU_PID/fd" >&2
	log "daemon's log: $(cat "$T/passt.log" 2>/dev/null)"
	log "QEMU: $(cat "$T/qemu.err")"
fi
guest_wait 10

# The daemon QEMU started: the one passt process in HOST
dpid=
for p in $(ip netns pids "$HOST"); do
	[ "$p" != "$QEMU_PID" ] || continue
	[ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$PASST")" ] || continue
	[ -z "$dpid" ] || fail "two daemons in HOST: $dpid and $p"
	dpid=$p
done
[ -n "$dpid" ] || fail "no daemon in HOST: $(cat "$T/qemu.err")"
args=$(tr '\0' ' ' <"/proc/$dpid/cmdline")
log "daemon $dpid: $args"
case "$args" in
*" --quiet "*"--pid $T/qemu-tmp/"*" --fd 3 ") ;;
*) fail "not what QEMU passes: $args" ;;
esac
[ "$E2E_MODE" = stream ] || case "$args" in
*" --vhost-user "*) ;;
*) fail "vhost-user=on without --vhost-user: $args" ;;
esac

# What the options did
expect "DHCP address" "$G_IP4" "$ADDR4/24"
expect "DHCP MTU (mtu=1500)" "$G_MTU" 1500
expect "nameserver (dns=)" \
	"$(g_ok 'sed -n "s/^nameserver //p" /etc/resolv.conf' | head -n 1)" \
	192.0.2.54
expect "search domains (search=)" \
	"$(g_ok 'sed -n "s/^search //p" /etc/resolv.conf')" "one.test two.test"
g_ok 'cat /run/lease' | grep -q "hostname='g1.test'" ||
	fail "--hostname (param=): not in the lease: $(g_ok 'cat /run/lease')"

# 8 MiB down from the peer
head -c "${MIB}M" /dev/urandom >"$T/down"
rm -f "$T/ready"
bg "$ROUTER" down-peer "$T/down" /dev/null \
	"$SOCKIO" -t 120 --report --ready "$T/ready" tcp-listen "$PEER4" 6001
ppid=$BG_PID
wait_ready "$T/ready"
g_ok -t 120 "sockio -t 110 tcp-connect $PEER4 6001 </dev/null >/tmp/got" \
	>/dev/null
bg_wait "$ppid" 20 || :
expect "download: peer exit status" "$BG_ST" 0
expect "download: SHA-256 in the guest" \
	"$(g_ok 'sha256sum /tmp/got | cut -d" " -f1; rm -f /tmp/got')" \
	"$(sha "$T/down")"

# 8 MiB through the forwarded port (tcp-ports=), to the guest
g_bg in "sockio -t 110 --ready /tmp/in.ready tcp-listen $(guest_addr4) \
	$PORT </dev/null >/tmp/got 2>/tmp/in.err"
g_wait_file /tmp/in.ready
st=0
ns "$ROUTER" "$SOCKIO" -t 120 tcp-connect "$ADDR4" "$PORT" <"$T/down" \
	>/dev/null 2>"$T/in-peer.err" || st=$?
expect "inbound: peer exit status" "$st" 0
g_bg_wait in 20
expect "inbound: guest exit status" "$BG_ST" 0
expect "inbound: SHA-256 in the guest" \
	"$(g_ok 'sha256sum /tmp/got | cut -d" " -f1')" "$(sha "$T/down")"
alive "$dpid" || fail "the daemon died"

# Nothing in QEMU's working directory, the pid file QEMU named only
[ -z "$(ls -A "$T/qemu-cwd")" ] ||
	fail "files in QEMU's working directory: $(ls -A "$T/qemu-cwd")"
[ "$(ls -A "$T/qemu-tmp")" = "$(basename "$(echo "$args" |
	sed 's/.* --pid \([^ ]*\) .*/\1/')")" ] ||
	fail "in QEMU's TMPDIR: $(ls -A "$T/qemu-tmp")"

# QEMU goes away without a word: the daemon follows, and takes its pid
# file with it
kill -KILL "$QEMU_PID"
wait "$QEMU_PID" 2>/dev/null || :
wait_for "! alive $dpid" 10 || fail "the daemon outlives QEMU"
[ -z "$(ls -A "$T/qemu-cwd" "$T/qemu-tmp" | grep -v ':$' | grep .)" ] ||
	fail "left behind: $(ls -A "$T/qemu-cwd" "$T/qemu-tmp")"
log "daemon $dpid exited with QEMU; nothing left behind"
# --quiet: warnings and errors only, none here
[ ! -s "$T/passt.log" ] || fail "the daemon's log: $(tail -n 5 "$T/passt.log")"
