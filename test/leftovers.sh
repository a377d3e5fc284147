#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# leftovers.sh - sourced by the test runners (integration, e2e, libvirt):
# what a test killed at its timeout could not remove itself. A test's
# namespaces are named after its ID (lib.sh's PT_ID: ID-guest, ID-host,
# ID-router, and migrate-lib.sh's ID-src, ID-dst, ID-fabric); whatever
# still runs in them (the daemon, QEMU, libvirtd) is killed, the namespaces
# and their /etc/netns resolver directories removed.

# leftovers ID: remove what the test with ID left behind
leftovers() {
	for n in "$1-guest" "$1-host" "$1-router" "$1-src" "$1-dst" \
		"$1-fabric"; do
		[ -e "/run/netns/$n" ] || continue
		for pid in $(ip netns pids "$n" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || :
		done
		ip netns del "$n" 2>/dev/null || :
	done
	rm -rf "/etc/netns/$1-host" "/etc/netns/$1-src" "/etc/netns/$1-dst"
}
