# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# sysctl-share.sh - net.core.wmem_max and rmem_max, set for a while by
# whoever needs other values, and put back by the last one to leave.
# Sourced (bash) by test/integration/migrate-lib.sh (every migration test
# runs at Debian's default limits) and test/flakes.sh (-b: rounds at
# each limit).
#
# The values are global, not per network namespace, and several users
# may hold them at once: runners side by side, and the flake budget with
# the tests it runs. In SYSCTL_SHARE_DIR, under the flock of its "lock":
#   saved  the machine's values, written by a user that finds none;
#   users  the users' pids, one a line.
# The last user to leave puts the saved values back and removes them. A
# user that died without leaving (SIGKILL, its runner's time limit) is
# dropped at the next look; the saved values stay: they are still the
# machine's, whatever the dead user left set, so the next user keeps them
# and the last one to leave puts them back. (Whoever saved the values it
# found instead, when the list was empty, took a test's limit for the
# machine's for good: a flake budget's, or a killed test's.)

SYSCTL_SHARE_DIR=${SYSCTL_SHARE_DIR:-/run/passt-test-sysctl}

# sysctl_share_prune: the users list rewritten with those that still run
# (under the lock)
sysctl_share_prune() {
	local _p _keep=
	[ -f "$SYSCTL_SHARE_DIR/users" ] || return 0
	while read -r _p; do
		[ -n "$_p" ] && [ -d "/proc/$_p" ] && _keep="$_keep$_p
"
	done <"$SYSCTL_SHARE_DIR/users"
	printf '%s' "$_keep" >"$SYSCTL_SHARE_DIR/users"
}

# sysctl_share_join PID [WMEM RMEM]: PID becomes a user (the machine's
# values saved first, unless they are already), and the limits are set to
# WMEM and RMEM, if given. Returns non-zero if that fails
sysctl_share_join() {
	mkdir -p "$SYSCTL_SHARE_DIR" || return 1
	(
		flock 9 || exit 1
		sysctl_share_prune
		if [ ! -s "$SYSCTL_SHARE_DIR/saved" ]; then
			echo "$(sysctl -n net.core.wmem_max) $(sysctl -n net.core.rmem_max)" \
				>"$SYSCTL_SHARE_DIR/saved" || exit 1
		fi
		echo "$1" >>"$SYSCTL_SHARE_DIR/users"
		[ $# -lt 3 ] ||
			sysctl -qw net.core.wmem_max="$2" net.core.rmem_max="$3"
	) 9>"$SYSCTL_SHARE_DIR/lock"
}

# sysctl_share_set WMEM RMEM: a user sets the limits
sysctl_share_set() {
	(
		flock 9 || exit 1
		sysctl -qw net.core.wmem_max="$1" net.core.rmem_max="$2"
	) 9>"$SYSCTL_SHARE_DIR/lock"
}

# sysctl_share_leave PID: PID is a user no more; if it was the last one,
# the saved values go back
sysctl_share_leave() {
	(
		flock 9 || exit 1
		sed -i "/^$1\$/d" "$SYSCTL_SHARE_DIR/users" 2>/dev/null
		sysctl_share_prune
		[ ! -s "$SYSCTL_SHARE_DIR/users" ] || exit 0
		read -r _w _r <"$SYSCTL_SHARE_DIR/saved" || exit 0
		sysctl -qw net.core.wmem_max="$_w" net.core.rmem_max="$_r"
		rm -f "$SYSCTL_SHARE_DIR/saved"
	) 9>"$SYSCTL_SHARE_DIR/lock"
}
