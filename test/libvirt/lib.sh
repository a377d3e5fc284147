# SPDX-License-Identifier: GPL-2.0-or-later
#
# lib.sh - real libvirt as the daemon's client, for test/libvirt/tests/.
#
# Sourced on top of test/e2e/lib.sh (guest command channel: g_run, g_ok,
# g_bg, guest_wait...) and so of test/integration/lib.sh (namespaces:
# ROUTER with the peer, HOST where libvirtd, and so passt and QEMU, run,
# as in a pod). What it sets up, all of it private to the test and removed
# at exit:
#
#   virtlogd and libvirtd (system instance, run as root) in HOST, in the
#   foreground, with their own pid files; libvirtd listens on a socket in
#   $T (unix_sock_dir), and $LV_PREFIX/bin (our "make install") comes
#   first on its PATH: that is where libvirt finds "passt"
#
#   domains defined from lv_xml: the test guest (kernel and initrd copied
#   to $T, readable by libvirt-qemu), its console on a file and its
#   command channel on a FIFO pair, one interface with the passt back-end
#   in stream ("user") or vhost-user mode, TCP and UDP ports forwarded
#
# libvirt's own state (/run/libvirt/qemu, /etc/libvirt/qemu/NAME.xml,
# /var/log/libvirt/qemu/NAME.log) is shared with any other instance: one
# test at a time (a lock), and domain names carry $PT_ID.
#
# Environment: LV_PREFIX (an installation of ours, from run.sh), plus
# what test/e2e/lib.sh reads.

# shellcheck source=../e2e/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../e2e/lib.sh"

LV_PREFIX=${LV_PREFIX:-}
LV_STATE=/run/libvirt/qemu/passt
LV_URI="qemu:///system?socket=$T/sock/libvirt-sock"
LV_LIBVIRTD=
LV_VIRTLOGD=
LV_CAT=
LV_TCP=5001
LV_UDP=5003
LV_VU_QUEUES=2	# vCPUs and queue pairs of the vhost-user domain
# The guest's ACPI power button: modules the image lacks (lv_image)
LV_ACPI_MODS="button evdev"

# V ARG...: virsh on our libvirtd
V() {
	timeout 60 virsh -q -c "$LV_URI" "$@"
}

# lv_stop_pid PIDFILE NAME: stop a NAME daemon that PIDFILE names, if any
lv_stop_pid() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0
	[ -n "$pid" ] && alive "$pid" || return 0
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 0
	log "stopping the $2 (pid $pid) that the package started"
	kill -TERM "$pid"
	wait_for "! alive $pid" 10 || kill -KILL "$pid"
}

# lv_up: namespaces, then virtlogd and libvirtd in HOST
lv_up() {
	need virsh libvirtd virtlogd flock cpio gzip dpkg-deb
	[ -n "$LV_PREFIX" ] && [ -x "$LV_PREFIX/bin/passt" ] ||
		fail "no installation in LV_PREFIX='$LV_PREFIX' (run run.sh)"
	setup_ns
	need_guest

	mkdir -p /run/lock
	exec 8>/run/lock/passt-libvirt-test.lock
	flock -w 300 8 || fail "another libvirt test holds the lock"
	trap '_lv_rc=$?; set +e; lv_down; (exit $_lv_rc); cleanup' EXIT

	# A libvirtd the package's scripts started would own the shared
	# state and the log daemon's socket
	lv_stop_pid /run/libvirtd.pid libvirtd
	lv_stop_pid /run/virtlogd.pid virtlogd

	# QEMU and passt run as libvirt-qemu: they need to get into $T
	chmod 0755 "$T"
	mkdir -p "$T/sock"
	cat >"$T/libvirtd.conf" <<-EOF
		unix_sock_dir = "$T/sock"
		log_outputs = "3:stderr"
	EOF
	ip netns exec "$HOST" virtlogd -p "$T/virtlogd.pid" \
		</dev/null >"$T/virtlogd.log" 2>&1 7>&- 8>&- &
	LV_VIRTLOGD=$!
	track "$LV_VIRTLOGD"
	wait_for "[ -S /run/libvirt/virtlogd-sock ] || ! alive $LV_VIRTLOGD" \
		20 && alive "$LV_VIRTLOGD" || fail "virtlogd did not start"
	PATH="$LV_PREFIX/bin:$PATH" ip netns exec "$HOST" \
		libvirtd -p "$T/libvirtd.pid" -f "$T/libvirtd.conf" \
		</dev/null >"$T/libvirtd.log" 2>&1 7>&- 8>&- &
	LV_LIBVIRTD=$!
	track "$LV_LIBVIRTD"
	wait_for "[ -S '$T/sock/libvirt-sock' ] || ! alive $LV_LIBVIRTD" 30 &&
		alive "$LV_LIBVIRTD" || fail "libvirtd did not start"
	wait_for "V version" 30 || fail "virsh can't talk to libvirtd"
	[ "$(cat "/proc/$LV_LIBVIRTD/comm")" = libvirtd ] ||
		fail "pid $LV_LIBVIRTD is not libvirtd"
	log "libvirtd $(libvirtd --version | sed 's/.* //') (pid" \
		"$LV_LIBVIRTD) in $HOST, passt from $LV_PREFIX/bin"
	lv_image
}

# lv_down: domains gone, daemons stopped, libvirt's files of ours removed
# (from the exit trap, with errexit off)
lv_down() {
	local d
	set +e
	if [ -n "$LV_LIBVIRTD" ] && alive "$LV_LIBVIRTD"; then
		for d in $(cat "$T/domains" 2>/dev/null); do
			V destroy "$d" >/dev/null 2>&1
			V undefine "$d" >/dev/null 2>&1
		done
	fi
	for d in $LV_LIBVIRTD $LV_VIRTLOGD; do
		alive "$d" || continue
		kill -TERM "$d"
		wait_for "! alive $d" 10 || kill -KILL "$d"
		wait "$d" 2>/dev/null
	done
	for d in $(cat "$T/domains" 2>/dev/null); do
		rm -f "/var/log/libvirt/qemu/$d.log" "/etc/libvirt/qemu/$d.xml"
		rm -f "$LV_STATE"/*-"$d"-*
	done
	exec 7>&-
}

# lv_image: the guest's kernel and initrd in $T, the initrd with a second
# archive holding the ACPI power button modules (the image has none, so it
# couldn't honour "virsh shutdown"; see lv_acpi_arm)
lv_image() {
	local deb m
	mkdir -p "$T/img" "$T/extra/lib/modules/acpi" "$T/kpkg"
	cp "$GUEST_OUT/vmlinuz" "$T/img/vmlinuz"
	deb=$(ls "$GUEST_OUT"/cache/linux-image-"$(cat \
		"$GUEST_OUT/kernel.version")"_*.deb 2>/dev/null | head -n 1)
	[ -f "$deb" ] || fail "no kernel package in $GUEST_OUT/cache"
	for m in $LV_ACPI_MODS; do
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$T/kpkg" \
			--wildcards "*/$m.ko" || fail "no $m.ko in $deb"
		find "$T/kpkg" -name "$m.ko" -exec cp {} \
			"$T/extra/lib/modules/acpi/" \;
	done
	(cd "$T/extra" && find lib | cpio -o -H newc --quiet | gzip) \
		>"$T/extra.cpio.gz"
	cat "$GUEST_OUT/initramfs.gz" "$T/extra.cpio.gz" >"$T/img/initrd"
	rm -rf "$T/kpkg" "$T/extra" "$T/extra.cpio.gz"
	chmod -R a+rX "$T/img"
}

# lv_xml MODE NAME [KEY=VALUE...]: domain XML, MODE stream or vhost-user;
# vhost-user with two vCPUs and two queue pairs (<driver queues='2'/>, as
# KubeVirt's networkInterfaceMultiqueue asks for one per vCPU). KEYs, for
# the migration test's domain: uuid=UUID; node=N (console-N.log, cmd-N:
# one console and command channel per node); queues=1 (one vCPU, one
# queue pair); cpu=no (no <cpu mode='maximum'/>, which can't migrate);
# ports=no (no port forwarding); cmdline=ARGS (added to the kernel's);
# dev=IFNAME (<source dev>: the back-end's --interface); log=FILE (its
# --log-file)
lv_xml() {
	local type=user mem='' vcpu=1 drv='' uuid='' sfx='' cpu=yes ports=yes
	local cmdline='' src='' log='' kv
	if [ "$1" = vhost-user ]; then
		type=vhostuser
		mem="<memoryBacking><source type='memfd'/><access mode='shared'/></memoryBacking>"
		vcpu=$LV_VU_QUEUES
		drv="<driver queues='$LV_VU_QUEUES'/>"
	fi
	for kv in "${@:3}"; do
		case $kv in
		uuid=*)	uuid="<uuid>${kv#*=}</uuid>" ;;
		node=*)	sfx=-${kv#*=} ;;
		queues=1) vcpu=1 drv= ;;
		cpu=no)	cpu= ;;
		ports=no) ports= ;;
		cmdline=*) cmdline=" ${kv#*=}" ;;
		dev=*)	src="<source dev='${kv#*=}'/>" ;;
		log=*)	log=" logFile='${kv#*=}'" ;;
		*)	fail "lv_xml: unknown $kv" ;;
		esac
	done
	cat <<-EOF
	<domain type='qemu'>
	  <name>$2</name>
	  ${uuid:+$uuid}
	  <memory unit='MiB'>$E2E_MEM</memory>
	  $mem
	  <vcpu>$vcpu</vcpu>
	  <os>
	    <type arch='x86_64' machine='pc'>hvm</type>
	    <kernel>$T/img/vmlinuz</kernel>
	    <initrd>$T/img/initrd</initrd>
	    <cmdline>console=ttyS0 panic=-1 quiet$cmdline</cmdline>
	  </os>
	  <features><acpi/></features>
	  ${cpu:+<cpu mode='maximum'/>}
	  <on_reboot>destroy</on_reboot>
	  <devices>
	    <serial type='file'>
	      <source path='$T/console$sfx.log'/><target port='0'/>
	    </serial>
	    <serial type='pipe'>
	      <source path='$T/cmd$sfx'/><target port='1'/>
	    </serial>
	    <interface type='$type'>
	      <mac address='$GUEST_MAC'/>
	      $src
	      <model type='virtio'/>
	      $drv
	      <backend type='passt'$log/>
	      <rom enabled='no'/>
	EOF
	[ -z "$ports" ] || cat <<-EOF
	      <portForward proto='tcp'><range start='$LV_TCP'/></portForward>
	      <portForward proto='udp'><range start='$LV_UDP'/></portForward>
	EOF
	cat <<-EOF
	    </interface>
	    <controller type='usb' model='none'/>
	    <memballoon model='none'/>
	  </devices>
	</domain>
	EOF
}

# lv_define MODE NAME: define the domain (undefined at exit)
lv_define() {
	lv_xml "$1" "$2" >"$T/$2.xml"
	echo "$2" >>"$T/domains"
	V define "$T/$2.xml" >/dev/null || fail "virsh define $2 failed"
}

# lv_start NAME: start the domain, attach to its console and command
# channel; sets QEMU_PID, and LV_PASST_PID, LV_PASST_ARGV, LV_FILES (the
# back-end's pid and socket files) from the pid file libvirt reads
lv_start() {
	local id pidf
	rm -f "$T/cmd.in" "$T/cmd.out" "$T/console.log" "$T/cmd.log"
	mkfifo "$T/cmd.in" "$T/cmd.out"
	: >"$T/cmd.log"
	# Read-write: libvirt opens and closes the FIFOs before QEMU does,
	# which would be an end of file for a reader that isn't a writer too
	[ -z "$LV_CAT" ] || { kill "$LV_CAT"; wait "$LV_CAT"; } 2>/dev/null || :
	cat 0<>"$T/cmd.out" >>"$T/cmd.log" &
	LV_CAT=$!
	track "$LV_CAT"
	exec 7<>"$T/cmd.in"
	QEMU_T0=$(now_ms)
	V start "$1" >/dev/null 2>"$T/start.err" ||
		fail "virsh start $1: $(cat "$T/start.err")"
	id=$(V domid "$1")
	QEMU_PID=$(cat "/run/libvirt/qemu/$1.pid")
	pidf=$LV_STATE/$id-$1-net0-passt.pid
	LV_FILES="$pidf $LV_STATE/$id-$1-net0.socket"
	[ -s "$pidf" ] || fail "no pid file $pidf"
	LV_PASST_PID=$(cat "$pidf")
	alive "$LV_PASST_PID" || fail "passt (pid $LV_PASST_PID) not running"
	expect "process in the pid file" \
		"$(cat "/proc/$LV_PASST_PID/comm")" passt
	LV_PASST_ARGV=$(tr '\0' ' ' <"/proc/$LV_PASST_PID/cmdline")
	log "$1: libvirt started passt (pid $LV_PASST_PID, user" \
		"$(stat -c %U "/proc/$LV_PASST_PID")): $LV_PASST_ARGV"
	[ "$(readlink "/proc/$LV_PASST_PID/exe")" = \
	  "$(readlink -f "$LV_PREFIX/bin/passt")" ] ||
		fail "libvirt ran $(readlink "/proc/$LV_PASST_PID/exe")," \
		     "not ours"
	[ -S "$LV_STATE/$id-$1-net0.socket" ] || fail "no socket"
}

# lv_gone NAME WHAT: after the domain stopped: no passt process (the one
# we knew, or any other in HOST) and no pid or socket file left
lv_gone() {
	local p left
	wait_for "[ \"\$(V domstate $1)\" = 'shut off' ]" 30 ||
		fail "$2: $1 is '$(V domstate "$1")', not shut off"
	wait_for "! alive $LV_PASST_PID" 10 ||
		fail "$2: passt (pid $LV_PASST_PID) still running"
	for p in $(ip netns pids "$HOST"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" != passt ] ||
			fail "$2: a passt process (pid $p) is left"
	done
	left=$(ls -d $LV_FILES "${LV_FILES##* }.repair" 2>/dev/null || :)
	[ -z "$left" ] || fail "$2: left behind: $left"
	left=$(ls "$LV_STATE" | grep -- "-$1-" || :)
	[ -z "$left" ] || fail "$2: left in $LV_STATE: $left"
	exec 7>&-
	log "$2: no passt process, no pid or socket file left"
}

# lv_acpi_arm: in the guest, load the power button modules and power off
# at its first event: the guest then honours ACPI shutdown requests
lv_acpi_arm() {
	g_ok 'for m in /lib/modules/acpi/*.ko; do insmod $m || exit 1; done
	n=0
	while :; do
		for e in /sys/class/input/event*; do
			[ "$(cat $e/device/name 2>/dev/null)" = "Power Button" ] ||
				continue
			d=/dev/input/${e##*/}
			[ -c $d ] || continue
			{ head -c 1 $d >/dev/null; sync; poweroff -f; } \
				</dev/null >/dev/null 2>&1 &
			echo "watching $d"
			exit 0
		done
		n=$((n + 1))
		[ $n -gt 40 ] && { echo "no power button"; exit 1; }
		usleep 50000
	done' >&2
}
