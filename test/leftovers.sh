#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# leftovers.sh - sourced by the test runners (integration, e2e, libvirt):
# each test under its time limit, in a process group of its own, and what
# a test killed at its limit could not remove itself. A test's
# namespaces are named after its ID (lib.sh's PT_ID: ID-guest, ID-host,
# ID-router, and migrate-lib.sh's ID-src, ID-dst, ID-fabric, ID-third);
# whatever still runs in them (the daemon, QEMU, libvirtd) is killed, the
# namespaces and their /etc/netns resolver directories removed.

# limited SECS CMD...: run CMD (a test) with a time limit of SECS seconds,
# in a process group of its own (timeout's): at the limit the whole group
# gets SIGTERM, and SIGKILL 10 s later (status 124, or 137). Returns CMD's
# status. A runner that is stopped meanwhile stops the test with it
# (limited_stop, from its trap): the test's group is out of reach of a
# signal to the runner's own group (a flake budget that ends, a time limit
# of the runner's), and would go on alone
LIMITED_PID=
limited() {
	local _st=0
	timeout -k 10 "$@" &
	LIMITED_PID=$!
	wait "$LIMITED_PID" || _st=$?
	LIMITED_PID=
	return "$_st"
}

# limited_stop: the test limited() runs, if any, stopped: SIGTERM to its
# group (and to timeout, in case it hasn't made the group yet: it passes
# the signal on), SIGKILL 10 s later; waits for it
limited_stop() {
	[ -n "$LIMITED_PID" ] || return 0
	kill -TERM -- "-$LIMITED_PID" 2>/dev/null
	kill -TERM "$LIMITED_PID" 2>/dev/null
	wait "$LIMITED_PID" 2>/dev/null
	LIMITED_PID=
}

# leftovers ID: remove what the test with ID left behind
leftovers() {
	for n in "$1-guest" "$1-host" "$1-router" "$1-src" "$1-dst" \
		"$1-fabric" "$1-third"; do
		[ -e "/run/netns/$n" ] || continue
		for pid in $(ip netns pids "$n" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || :
		done
		ip netns del "$n" 2>/dev/null || :
	done
	rm -rf "/etc/netns/$1-host" "/etc/netns/$1-src" "/etc/netns/$1-dst" \
		"/etc/netns/$1-third"
}
