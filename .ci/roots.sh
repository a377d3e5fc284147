#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# .ci/roots.sh - build the newer Debian roots the tests run in: Debian 13
# (trixie: glibc 2.41, GCC 14) and sid (glibc 2.43, GCC 16, QEMU 11.1,
# libvirt 12.8), with debootstrap from the archive this machine's own apt
# sources name (.ci/mirror.sh: the repository names no mirror).
#
# Usage: sh .ci/roots.sh [NAME...]     (default: trixie sid)
#
# Where: $PT_ROOTS/NAME, by default /var/cache/passt-test/roots/NAME, a
# stable path that every checkout and CI run on the machine shares. A root
# is kept as it was built for as long as the list of packages below stays
# the same (its ".passt-root" file records the list): a second run costs a
# look at that file. PT_ROOTS_REFRESH=1 builds them anew (sid moves on).
# One builder at a time (flock on $PT_ROOTS/.build.lock); a root is built
# beside the old one and put in its place when complete. Measured on the
# 2-core machine: trixie 57 s and 376 MB, sid 77 s and 592 MB; a run that
# finds both up to date, 0.4 s. (A mirror may serve sid's Release file past
# its Valid-Until date: the root's apt is told not to mind.)
#
# Programs in a root run through test/roots/enter.sh (pivot_root in a
# private mount namespace, not chroot: see there).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
ROOTS=${PT_ROOTS:-/var/cache/passt-test/roots}
ENTER=$here/../test/roots/enter.sh
[ $# -gt 0 ] || set -- trixie sid

# The build and the tests that start the daemon: compiler and libraries,
# namespaces, captures, the test tools' needs
PKGS_COMMON="gcc make libc6-dev pkg-config libseccomp-dev libcap-dev
	liburing-dev libcmocka-dev iproute2 procps iputils-ping busybox-static
	tcpdump jq util-linux mount coreutils gawk ca-certificates"
# sid only: QEMU 11.1 end to end (-netdev stream, vhost-user, passt) and
# libvirt 12.8 driving the daemon
PKGS_SID="qemu-system-x86 libvirt-daemon libvirt-daemon-driver-qemu
	libvirt-clients cpio gzip"

command -v debootstrap >/dev/null || {
	echo "roots: debootstrap missing (sh .ci/setup installs it)" >&2
	exit 1
}
mirror=$(sh "$here/mirror.sh")
mkdir -p "$ROOTS"
exec 9>"$ROOTS/.build.lock"
flock 9

for name in "$@"; do
	case $name in
	trixie) pkgs=$PKGS_COMMON ;;
	sid) pkgs="$PKGS_COMMON $PKGS_SID" ;;
	*) echo "roots: unknown root $name (trixie, sid)" >&2; exit 2 ;;
	esac
	# shellcheck disable=SC2086
	stamp="passt test root v1: $name: $(echo $pkgs)"
	dir=$ROOTS/$name
	if [ -f "$dir/.passt-root" ] && [ -z "${PT_ROOTS_REFRESH:-}" ] &&
	   [ "$(cat "$dir/.passt-root")" = "$stamp" ]; then
		echo "roots: $name up to date in $dir ($(du -sh "$dir" 2>/dev/null | cut -f1))"
		continue
	fi
	start=$(date +%s)
	new=$dir.new
	rm -rf "$new"
	echo "roots: building $name in $dir (debootstrap, then packages)"
	# sid's systemd may fail to configure here: finished inside below
	debootstrap --variant=minbase "$name" "$new" "$mirror" \
		>"$ROOTS/$name.log" 2>&1 ||
		grep -q 'Base system installed successfully' \
			"$ROOTS/$name.log" ||
		echo "roots: debootstrap $name: $(tail -n 1 "$ROOTS/$name.log")" \
			"(finishing inside)"
	[ -x "$new/bin/sh" ] || {
		echo "roots: debootstrap $name failed:" >&2
		tail -n 20 "$ROOTS/$name.log" >&2
		exit 1
	}
	# The root's apt: the same archive, no recommends, no daemons
	# started by maintainer scripts
	echo "deb $mirror $name main" >"$new/etc/apt/sources.list"
	# A mirror may serve sid's Release file past its Valid-Until date
	echo 'Acquire::Check-Valid-Until "false";' \
		>"$new/etc/apt/apt.conf.d/99passt-test"
	printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
	chmod 0755 "$new/usr/sbin/policy-rc.d"
	# shellcheck disable=SC2086
	PT_ROOT_BUILDING=1 "$ENTER" "$new" /bin/sh -ec '
		export DEBIAN_FRONTEND=noninteractive
		dpkg --configure -a || :
		apt-get -q update
		apt-get -q -y -f install
		apt-get -q -y --no-install-recommends install "$@"
		apt-get clean
		rm -rf /var/lib/apt/lists/*
	' sh $pkgs >>"$ROOTS/$name.log" 2>&1 || {
		echo "roots: installing packages in $name failed:" >&2
		tail -n 20 "$ROOTS/$name.log" >&2
		exit 1
	}
	echo "$stamp" >"$new/.passt-root"
	if [ -d "$dir" ]; then
		mv "$dir" "$dir.old.$$"
		rm -rf "$dir.old.$$"
	fi
	mv "$new" "$dir"
	echo "roots: $name built in $(($(date +%s) - start)) s," \
		"$(du -sh "$dir" | cut -f1)," \
		"glibc $("$ENTER" "$name" /usr/bin/ldd --version | head -n 1 | sed 's/.* //')"
done
