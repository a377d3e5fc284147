# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu.sh - vhost-user variants of the lib.sh helpers, for tests/vu_*.sh.
#
# Sourced after lib.sh. The guest is still the kernel of the GUEST
# namespace behind tap0, but the bridge is vu-front, our own vhost-user
# front-end, so every frame crosses virtqueues in shared memory instead of
# the stream socket. bridge_start is replaced, so lib.sh's guest_up,
# dhcp4, slaac_wait and friends work unchanged.
#
# Environment: VU_FRONT_OPTS, extra options for the bridge (e.g. -2 for
# two memory regions).

VUFRONT=$TOOLS/vu-front

# need_vufront: fail unless the vu-front tool is built
need_vufront() {
	[ -x "$VUFRONT" ] || fail "no vu-front in $TOOLS"
}

# vu_passt_start [OPTION...]: the daemon in vhost-user mode
vu_passt_start() {
	passt_start --vhost-user "$@"
}

# vu NAME CASE...: run vu-front in GUEST with the given cases; its stderr
# goes to $T/NAME.err; fails the test with its last words if it fails
vu() {
	_name=$1
	shift
	ip netns exec "$GUEST" "$VUFRONT" -t "${VU_TIMEOUT:-5000}" \
		${VU_FRONT_OPTS:-} "$SOCK" "$@" 2>"$T/$_name.err" ||
		fail "vu-front $*: $(tail -n 5 "$T/$_name.err")"
}

# bridge_start [NAME]: vu-front in bridge mode in GUEST, connected
bridge_start() {
	_name=${1:-vb}
	# Not the last one's words: the shell truncates the log only once
	# the new one runs, and the wait below may look before
	rm -f "$T/$_name.err"
	ip netns exec "$GUEST" "$VUFRONT" -r 5 ${VU_FRONT_OPTS:-} "$SOCK" \
		bridge 2>"$T/$_name.err" &
	BRIDGE_PID=$!
	track "$BRIDGE_PID"
	wait_for "grep -q 'bridge: connected' '$T/$_name.err'" 10 ||
		fail "vu-front did not connect: $(cat "$T/$_name.err")"
}
