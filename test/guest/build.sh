#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build.sh - build the small Linux guest of the end-to-end tests and the
# demo, from Debian packages only, into test/guest/out/:
#
#   vmlinuz         the kernel of the linux-image-6.1.* package that
#                   linux-image-amd64 depends on (apt-get download, dpkg -x:
#                   never installed)
#   initramfs.gz    cpio (newc), gzip: busybox-static, the virtio-net
#                   modules with their dependencies in load order, iperf3,
#                   sockperf (bench/qemu.sh) and our sockio (if built) with
#                   the libraries ldd lists, and /init (test/guest/init)
#   kernel.version  the kernel release, e.g. 6.1.0-57-amd64
#
# Rebuilds only when an input changed: this script, init, udhcpc.script,
# the kernel package version, busybox, iperf3, sockperf, sockio. The
# downloaded package is kept in out/cache/.
#
# Usage: build.sh [-f]      (-f: rebuild even if up to date)
# Environment: TOOLS (directory with sockio, default build/test/tools),
# GUEST_OUT (output directory).
set -euo pipefail

DIR=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$DIR/../.." && pwd)
OUT=${GUEST_OUT:-$DIR/out}
TOOLS=${TOOLS:-$TOP/build/test/tools}
CACHE=$OUT/cache
FORCE=0
[ "${1:-}" = -f ] && FORCE=1

# The modules we want; their dependencies are added from .modinfo
WANT_MODS="virtio_pci virtio_net"

log() {
	printf 'guest: %s\n' "$*" >&2
}

die() {
	log "error: $*"
	exit 1
}

for c in apt-cache apt-get dpkg dpkg-deb objcopy cpio gzip ldd sha256sum; do
	command -v "$c" >/dev/null || die "$c not found (run .ci/setup)"
done
BUSYBOX=$(command -v busybox) || die "busybox not found (run .ci/setup)"
bbldd=$(ldd "$BUSYBOX" 2>&1 || :)
case "$bbldd" in
*"not a dynamic"*|*"statically linked"*) ;;
*) die "$BUSYBOX is not static: install busybox-static" ;;
esac
IPERF3=$(command -v iperf3 || :)
SOCKPERF=$(command -v sockperf || :)
SOCKIO=$TOOLS/sockio
[ -x "$SOCKIO" ] || SOCKIO=

mkdir -p "$OUT" "$CACHE"
# One build at a time (parallel test runs share the output directory)
exec 9>"$OUT/.lock"
flock 9

# The kernel package: what linux-image-amd64 depends on, 6.1 preferred
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*\)$/\1/p' | head -n 1)
if [ -z "$kpkg" ]; then
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' |
		head -n 1)
fi
kver=
if [ -n "$kpkg" ]; then
	kver=$(apt-cache show --no-all-versions "$kpkg" 2>/dev/null |
		sed -n 's/^Version: //p' | head -n 1)
fi
if [ -n "$kpkg" ] && [ -n "$kver" ]; then
	deb=$CACHE/${kpkg}_${kver//:/%3a}_amd64.deb
else
	# No package lists (apt-get update not run, or offline): use what
	# was downloaded before, if anything
	deb=$(ls -t "$CACHE"/linux-image-*.deb 2>/dev/null | head -n 1 || :)
	[ -n "$deb" ] ||
		die "apt-cache knows no linux-image-amd64: run .ci/setup"
	log "no package lists: using cached $(basename "$deb")"
fi

# What the image is made of, hashed: same stamp, nothing to do
inputs() {
	sha256sum "$DIR/build.sh" "$DIR/init" "$DIR/udhcpc.script" \
		"$BUSYBOX" ${IPERF3:+"$IPERF3"} ${SOCKPERF:+"$SOCKPERF"} \
		${SOCKIO:+"$SOCKIO"}
	echo "kernel $(basename "$deb")"
	echo "sockio ${SOCKIO:-none} iperf3 ${IPERF3:-none}" \
		"sockperf ${SOCKPERF:-none}"
}
stamp=$(inputs | sha256sum | cut -d' ' -f1)
if [ "$FORCE" = 0 ] && [ -s "$OUT/vmlinuz" ] && [ -s "$OUT/initramfs.gz" ] &&
   [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$stamp" ]; then
	log "up to date ($OUT)"
	exit 0
fi
start=$(date +%s)

if [ ! -s "$deb" ]; then
	log "downloading $kpkg $kver"
	rm -f "$CACHE"/linux-image-*.deb
	# apt-get download writes to the current directory; as root it warns
	# that _apt can't write there, harmlessly
	(cd "$CACHE" && apt-get download "$kpkg=$kver" 2>&1 |
		grep -v 'unsandboxed' >&2) || :
	[ -s "$deb" ] || die "apt-get download $kpkg=$kver failed"
fi

WORK=$(mktemp -d "$OUT/work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
log "unpacking $(basename "$deb")"
dpkg -x "$deb" "$WORK/k"
krel=$(ls "$WORK/k/lib/modules" | head -n 1)
[ -n "$krel" ] || die "no modules in $(basename "$deb")"
[ -s "$WORK/k/boot/vmlinuz-$krel" ] || die "no vmlinuz-$krel"
MODDIR=$WORK/k/lib/modules/$krel

# modpath NAME: the .ko file of module NAME (- and _ are the same)
modpath() {
	local n=${1//-/_} alt=${1//_/-}
	find "$MODDIR/kernel" \( -name "$n.ko" -o -name "$alt.ko" \) \
		-print -quit
}

# moddeps FILE: the depends= of a module, from its .modinfo section (no
# modinfo/depmod on the machine: read the section with objcopy)
moddeps() {
	objcopy -O binary --only-section=.modinfo "$1" "$WORK/modinfo"
	tr '\0' '\n' <"$WORK/modinfo" | sed -n 's/^depends=//p' | tr ',' ' '
}

# Depth-first: dependencies before the module that needs them
ORDER=
SEEN=" "
visit() {
	local m=${1//-/_} f d
	case "$SEEN" in *" $m "*) return 0 ;; esac
	SEEN="$SEEN$m "
	if grep -q "/$m.ko\$" "$MODDIR/modules.builtin" 2>/dev/null; then
		return 0
	fi
	f=$(modpath "$m")
	[ -n "$f" ] || die "module $m not found in $krel"
	for d in $(moddeps "$f"); do
		visit "$d"
	done
	ORDER="$ORDER $m"
}
for m in $WANT_MODS; do
	visit "$m"
done
log "modules:$ORDER"

R=$WORK/root
mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,lib/modules}
mkdir -p "$R"/usr/share/udhcpc "$R"/lib/x86_64-linux-gnu "$R"/lib64
cp "$BUSYBOX" "$R/bin/busybox"
for a in $("$BUSYBOX" --list); do
	case "$a" in busybox|init|linuxrc) continue ;; esac
	ln -sf busybox "$R/bin/$a"
done
for m in $ORDER; do
	cp "$(modpath "$m")" "$R/lib/modules/$m.ko"
	echo "$m" >>"$R/lib/modules/order"
done
: >>"$R/lib/modules/order"

# copy_bin FILE: the program into /bin, with the libraries ldd lists, at
# the paths ldd gives (real directories in the image, no /lib symlink)
copy_bin() {
	local f=$1 lib
	cp -L "$f" "$R/bin/$(basename "$f")"
	for lib in $(ldd "$f" | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' \
		-e 's/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
		mkdir -p "$R$(dirname "$lib")"
		[ -e "$R$lib" ] || cp -L "$lib" "$R$lib"
	done
}
if [ -n "$IPERF3" ]; then
	copy_bin "$IPERF3"
else
	log "no iperf3: not in the image"
fi
if [ -n "$SOCKPERF" ]; then
	copy_bin "$SOCKPERF"
else
	log "no sockperf: not in the image (bench/qemu.sh has no latency)"
fi
if [ -n "$SOCKIO" ]; then
	copy_bin "$SOCKIO"
else
	log "no sockio in $TOOLS: not in the image (make tools)"
fi

install -m 0755 "$DIR/init" "$R/init"
install -m 0755 "$DIR/udhcpc.script" "$R/etc/udhcpc.script"
ln -sf /etc/udhcpc.script "$R/usr/share/udhcpc/default.script"
echo 'root:x:0:0:root:/root:/bin/sh' >"$R/etc/passwd"
echo 'root:x:0:' >"$R/etc/group"
echo guest >"$R/etc/hostname"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$R/etc/hosts"
: >"$R/etc/resolv.conf"

(cd "$R" && find . -print0 | LC_ALL=C sort -z |
	cpio --null --create --format=newc --quiet --owner=0:0) |
	gzip -6 >"$WORK/initramfs.gz"
cp "$WORK/k/boot/vmlinuz-$krel" "$WORK/vmlinuz"
mv "$WORK/vmlinuz" "$OUT/vmlinuz"
mv "$WORK/initramfs.gz" "$OUT/initramfs.gz"
echo "$krel" >"$OUT/kernel.version"
echo "$stamp" >"$OUT/stamp"
log "built $OUT (kernel $krel, initramfs $(du -h "$OUT/initramfs.gz" |
	cut -f1), $(($(date +%s) - start)) s)"
