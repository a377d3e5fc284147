#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# enter.sh - run a command inside a Debian root that .ci/roots.sh built
#
# Usage: test/roots/enter.sh [-b PATH]... ROOT CMD [ARG...]
#
# ROOT is a name (trixie, sid: a directory of $PT_ROOTS, by default
# /var/cache/passt-test/roots) or a path. CMD runs with the root's own
# programs and libraries (its glibc, its compiler, its QEMU and libvirt),
# on this machine's kernel, as the same process: every step execs the
# next, so a caller that started us knows CMD's pid, and its signals and
# exit status are CMD's.
#
# Not chroot(2) alone: a chrooted process may not create a user namespace
# (unshare(CLONE_NEWUSER) fails with EPERM), and the daemon's sandbox needs
# one. So, in a private mount namespace: the root is bound onto itself,
# this machine's /dev, /proc, /sys are bound in, /run and /dev/shm are
# fresh tmpfs, and the root becomes / with pivot_root(2), the old one
# detached. What the root sees of this machine's files, at the same paths:
#   /tmp                      test directories, sockets, logs
#   /run/lock, /run/passt-test-sysctl
#                             the locks and the saved sysctl values that
#                             tests share with the ones running outside
#   this source tree          (the directory above test/), and each -b PATH
# The working directory is kept if the root can see it, else it is /.
#
# The root's own files are shared with every other user of it: a test
# writes to /tmp or to the source tree, never into the root.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
binds="/tmp $top"
while [ "${1:-}" = -b ]; do
	[ -n "${2:-}" ] && [ -e "$2" ] || {
		echo "enter.sh: -b needs an existing path" >&2
		exit 2
	}
	binds="$binds $(cd "$2" && pwd)"
	shift 2
done
if [ $# -lt 2 ]; then
	echo "usage: $0 [-b PATH]... ROOT CMD [ARG...]" >&2
	exit 2
fi
case $1 in
*/*) root=$1 ;;
*) root=${PT_ROOTS:-/var/cache/passt-test/roots}/$1 ;;
esac
shift
if [ ! -x "$root/bin/sh" ] || { [ ! -f "$root/.passt-root" ] &&
	[ -z "${PT_ROOT_BUILDING:-}" ]; }; then
	echo "enter.sh: no root at $root (sh .ci/setup builds it)" >&2
	exit 2
fi
root=$(cd "$root" && pwd)
[ "$(id -u)" = 0 ] || { echo "enter.sh: needs root" >&2; exit 2; }
mkdir -p /run/lock /run/passt-test-sysctl

exec unshare -m --propagation private -- /bin/sh -euc '
root=$1 binds=$2 cwd=$3
shift 3
mount --rbind "$root" "$root"
for d in dev proc sys; do
	mount --rbind "/$d" "$root/$d"
done
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"
mkdir -p "$root/dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
for p in /run/lock /run/passt-test-sysctl $binds; do
	mkdir -p "$root$p"
	mount --rbind "$p" "$root$p"
done
cd "$root"
mkdir -p .old
pivot_root . .old
exec chroot . /bin/sh -c "umount -l /.old
cd \"\$0\" 2>/dev/null || cd /
exec \"\$@\"" "$cwd" "$@"
' enter "$root" "$binds" "$(pwd)" "$@"
