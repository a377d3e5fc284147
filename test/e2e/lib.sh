# SPDX-License-Identifier: GPL-2.0-or-later
#
# lib.sh - QEMU guest helpers for the end-to-end tests and the demo.
#
# Sourced by test/e2e/tests/*.sh and test/demo.sh, on top of the namespace
# harness (test/integration/lib.sh: ROUTER with the peer, HOST where the
# daemon runs; its GUEST namespace stays empty here). QEMU runs in the root
# namespace and reaches the daemon through its UNIX socket. The guest is
# test/guest/out (test/guest/build.sh); it talks to us over its second
# serial port, a FIFO pair here, which doesn't depend on the network under
# test:
#
#   g_run [-t SECS] SCRIPT    run SCRIPT in the guest, print its output,
#                             return its exit status (124: no answer)
#   g_ok, g_bg, g_bg_wait, g_wait_file   built on it (see below)
#   passt_up [OPTION...]      the daemon in HOST, --vhost-user in that mode
#   qemu_start, guest_wait, qemu_stop    boot, wait for GUEST-READY, power off
#
# Environment: E2E_MODE stream (default) or vhost-user; QEMU (binary);
# E2E_ACCEL (tcg or kvm; default kvm only if kvm_intel or kvm_amd is
# loaded); GUEST_OUT (guest image directory); E2E_MEM (MiB, default 512);
# E2E_SMP (vCPUs, default 1); E2E_QUEUES (vhost-user queue pairs, default
# 1: QEMU's queues=, with mq=on at the device above 1).

E2E_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PASST=${PASST:-$E2E_TOP/build/passt}
export TOOLS=${TOOLS:-$E2E_TOP/build/test/tools}
# shellcheck source=../integration/lib.sh
. "$E2E_TOP/test/integration/lib.sh"
TOP=$E2E_TOP

E2E_MODE=${E2E_MODE:-stream}
QEMU=${QEMU:-qemu-system-x86_64}
GUEST_OUT=${GUEST_OUT:-$TOP/test/guest/out}
E2E_MEM=${E2E_MEM:-512}
E2E_SMP=${E2E_SMP:-1}
E2E_QUEUES=${E2E_QUEUES:-1}
QEMU_PID=
G_SEQ=0

# The guest's MAC address (QEMU's default, made explicit)
GUEST_MAC=52:54:00:12:34:56

# have_guest: true if the guest image is there
have_guest() {
	[ -s "$GUEST_OUT/vmlinuz" ] && [ -s "$GUEST_OUT/initramfs.gz" ]
}

# need_guest: fail unless QEMU and the guest image are there
need_guest() {
	command -v "$QEMU" >/dev/null ||
		fail "$QEMU not installed (sh .ci/setup installs it)"
	have_guest ||
		fail "no guest image in $GUEST_OUT (make guest builds it)"
}

# need_mode: in vhost-user mode, skip while the daemon refuses
# --vhost-user ("not implemented yet"); run in HOST, after setup_ns
need_mode() {
	case "$E2E_MODE" in
	stream) return 0 ;;
	vhost-user) ;;
	*) fail "unknown E2E_MODE '$E2E_MODE'" ;;
	esac
	ip netns exec "$HOST" "$PASST" -f --vhost-user -s "$T/probe.socket" \
		>"$T/probe.out" 2>&1 &
	_pid=$!
	track "$_pid"
	wait_for "[ -S '$T/probe.socket' ] || ! alive $_pid" 10 || :
	if alive "$_pid"; then
		kill -TERM "$_pid"
		wait "$_pid" 2>/dev/null || :
		rm -f "$T/probe.socket"
		return 0
	fi
	wait "$_pid" 2>/dev/null || :
	if grep -q 'not implemented' "$T/probe.out"; then
		skip "vhost-user: the daemon says: $(head -n 1 "$T/probe.out")"
	fi
	fail "passt --vhost-user did not start: $(head -n 3 "$T/probe.out")"
}

# passt_up [OPTION...]: passt_start, with --vhost-user in that mode
passt_up() {
	if [ "$E2E_MODE" = vhost-user ]; then
		passt_start --vhost-user "$@"
	else
		passt_start "$@"
	fi
}

# accel_args: TCG unless KVM is real (PVM's /dev/kvm hangs stock kernels)
accel_args() {
	_accel=${E2E_ACCEL:-}
	if [ -z "$_accel" ]; then
		_accel=tcg
		if grep -qE '^kvm_(intel|amd) ' /proc/modules 2>/dev/null &&
		   [ -w /dev/kvm ]; then
			_accel=kvm
		fi
	fi
	if [ "$_accel" = kvm ]; then
		echo "-accel kvm -cpu host"
	else
		echo "-accel tcg -cpu max"
	fi
}

# qemu_has_passt: true if QEMU has -netdev passt (10.1 and later)
qemu_has_passt() {
	"$QEMU" -netdev help 2>/dev/null | grep -qx passt
}

# qemu_start [--reconnect] [--append ARGS] [--passt JSON]: boot the guest
# against the daemon's socket $SOCK in $E2E_MODE; --reconnect lets QEMU
# reconnect (reconnect-ms) when the daemon goes away. With --passt, QEMU
# starts the daemon itself ($PASST: -netdev passt, vhost-user=on in that
# mode, JSON: more members of the netdev's JSON object, from a comma),
# in HOST, with its working directory $T/qemu-cwd and TMPDIR (where it
# puts the daemon's pid file) $T/qemu-tmp. Doesn't wait: see guest_wait
qemu_start() {
	_rc=
	_append=
	_passt=
	while [ $# -gt 0 ]; do
		case "$1" in
		--reconnect) _rc=500 ;;
		--append) _append=$2; shift ;;
		--passt) _passt=" $2"; shift ;;
		*) fail "qemu_start: bad argument $1" ;;
		esac
		shift
	done
	rm -f "$T/cmd.in" "$T/cmd.out" "$T/console.log" "$T/cmd.log"
	mkfifo "$T/cmd.in" "$T/cmd.out"
	: >"$T/cmd.log"
	# QEMU opens both FIFOs read-write: neither open blocks
	cat "$T/cmd.out" >>"$T/cmd.log" &
	track $!
	exec 7<>"$T/cmd.in"

	_net=
	_dev="virtio-net-pci,netdev=n0,mac=$GUEST_MAC,romfile="
	case "$E2E_MODE" in
	stream)
		_net="-netdev stream,id=n0,server=off,addr.type=unix"
		_net="$_net,addr.path=$SOCK${_rc:+,reconnect-ms=$_rc}"
		;;
	vhost-user)
		_net="-object memory-backend-memfd,id=m,share=on,size=${E2E_MEM}M"
		_net="$_net -numa node,memdev=m"
		_net="$_net -chardev socket,id=c,path=$SOCK${_rc:+,reconnect-ms=$_rc}"
		_net="$_net -netdev vhost-user,id=n0,chardev=c"
		if [ "$E2E_QUEUES" -gt 1 ]; then
			_net="$_net,queues=$E2E_QUEUES"
			_dev="$_dev,mq=on,vectors=$((2 * E2E_QUEUES + 2))"
		fi
		;;
	esac
	_wrap=
	_nd=
	if [ -n "$_passt" ]; then
		_vu=false
		[ "$E2E_MODE" = vhost-user ] && _vu=true
		_net=${_net%%-chardev*}
		[ "$_vu" = true ] || _net=
		_nd="{\"type\":\"passt\",\"id\":\"n0\",\"path\":\"$PASST\""
		_nd="$_nd,\"vhost-user\":$_vu${_passt# }}"
		mkdir -p "$T/qemu-cwd" "$T/qemu-tmp"
		# Like /tmp: a daemon started as root becomes nobody, and
		# removes its pid file through the directory
		chmod 1777 "$T/qemu-tmp"
		_wrap="ip netns exec $HOST env TMPDIR=$T/qemu-tmp"
	fi
	# shellcheck disable=SC2046,SC2086
	( [ -z "$_passt" ] || cd "$T/qemu-cwd"
	  exec $_wrap "$QEMU" $(accel_args) -m "$E2E_MEM" -smp "$E2E_SMP" \
		-nodefaults -display none -no-reboot -no-user-config \
		-kernel "$GUEST_OUT/vmlinuz" -initrd "$GUEST_OUT/initramfs.gz" \
		-append "console=ttyS0 panic=-1 quiet $_append" \
		-serial "file:$T/console.log" \
		-chardev "pipe,id=cmd,path=$T/cmd" -serial chardev:cmd \
		$_net ${_nd:+-netdev "$_nd"} -device "$_dev" \
		>"$T/qemu.out" 2>"$T/qemu.err" </dev/null ) &
	QEMU_PID=$!
	track "$QEMU_PID"
	QEMU_T0=$(now_ms)
}

# qemu_check_alive: fail if QEMU is gone
qemu_check_alive() {
	alive "$QEMU_PID" && return 0
	fail "QEMU exited: $(tail -n 5 "$T/qemu.err")"
}

# guest_wait [TIMEOUT]: wait for the guest's GUEST-READY line and its
# command channel; sets G_IP4 (address/prefix), G_ROUTER, G_MTU, G_IP6
# (address/prefix), "none" for what it didn't get; logs the boot time
guest_wait() {
	wait_for "grep -q '^GUEST-READY' '$T/console.log' ||
		  ! alive $QEMU_PID" "${1:-90}" ||
		fail "guest not ready after ${1:-90} s"
	qemu_check_alive
	wait_for "grep -q '^@@READY' '$T/cmd.log' || ! alive $QEMU_PID" 20 ||
		fail "no command channel"
	qemu_check_alive
	_ready=$(grep '^GUEST-READY' "$T/console.log" | tail -n 1 | tr -d '\r')
	G_IP4=$(echo "$_ready" | sed -n 's/.* ip=\([^ ]*\).*/\1/p')
	G_ROUTER=$(echo "$_ready" | sed -n 's/.* router=\([^ ]*\).*/\1/p')
	G_MTU=$(echo "$_ready" | sed -n 's/.* mtu=\([^ ]*\).*/\1/p')
	G_IP6=$(echo "$_ready" | sed -n 's/.* ip6=\([^ ]*\).*/\1/p')
	_ms=$(($(now_ms) - QEMU_T0))
	log "guest ready after $((_ms / 1000)).$((_ms % 1000 / 100)) s:" \
		"${_ready#GUEST-READY }"
	grep '^GUEST-ERROR' "$T/console.log" >&2 || :
}

# g_run [-t SECS] SCRIPT: run SCRIPT (sh) in the guest, killed after SECS
# (default 30); its output (stdout and stderr) goes to our stdout, its exit
# status is ours. 124 if the guest didn't answer in time
g_run() {
	_secs=30
	if [ "$1" = -t ]; then
		_secs=$2
		shift 2
	fi
	G_SEQ=$((G_SEQ + 1))
	_id=$BASHPID.$G_SEQ.$RANDOM
	printf '@@CMD %s %s %s\n' "$_id" "$_secs" \
		"$(printf '%s\n' "$*" | base64 -w0)" >&7
	if ! wait_for "grep -q '^@@END $_id ' '$T/cmd.log' ||
		       ! alive $QEMU_PID" $((_secs + 10)) ||
	   ! grep -q "^@@END $_id " "$T/cmd.log"; then
		log "guest: no answer to: $*"
		return 124
	fi
	sed -n "/^@@BEGIN $_id\$/,/^@@END $_id /p" "$T/cmd.log" | sed '1d;$d'
	return "$(sed -n "s/^@@END $_id \([0-9]*\)\$/\1/p" "$T/cmd.log")"
}

# g_ok [-t SECS] SCRIPT: g_run, and fail with the output unless it
# succeeded; the output goes to stdout
g_ok() {
	_st=0
	_out=$(g_run "$@") || _st=$?
	if [ "$_st" -ne 0 ]; then
		[ "$1" = -t ] && shift 2
		fail "guest: '$*' exited $_st: $_out"
	fi
	printf '%s\n' "$_out"
}

# g_bg NAME SCRIPT: start SCRIPT in the background in the guest; its
# output goes to /tmp/NAME.out and .err, its exit status to /tmp/NAME.rc
g_bg() {
	_n=$1
	shift
	g_ok "rm -f /tmp/$_n.rc
{ ( $* ) </dev/null >/tmp/$_n.out 2>/tmp/$_n.err
  echo \$? >/tmp/$_n.rc; } </dev/null >/dev/null 2>&1 &" >/dev/null
}

# g_bg_wait NAME [SECS]: wait for a g_bg job to end; its status in BG_ST
g_bg_wait() {
	BG_ST=$(g_run -t "${2:-30}" "while [ ! -e /tmp/$1.rc ]; do
		usleep 50000; done; cat /tmp/$1.rc") || BG_ST=timeout
}

# g_wait_file FILE [SECS]: wait until FILE exists in the guest
g_wait_file() {
	g_run -t "${2:-10}" "while [ ! -e $1 ]; do usleep 50000; done" ||
		fail "guest: no $1 after ${2:-10} s"
}

# guest_addr4 / guest_addr6: the addresses without the prefix length
guest_addr4() {
	echo "${G_IP4%/*}"
}
guest_addr6() {
	echo "${G_IP6%/*}"
}

# qemu_stop: power the guest off (SIGTERM if it doesn't go), wait for QEMU
qemu_stop() {
	alive "$QEMU_PID" || return 0
	g_run -t 5 poweroff >/dev/null 2>&1 || :
	wait_for "! alive $QEMU_PID" 10 || kill -TERM "$QEMU_PID" 2>/dev/null
	wait_for "! alive $QEMU_PID" 10 || kill -KILL "$QEMU_PID" 2>/dev/null
	wait "$QEMU_PID" 2>/dev/null || :
	exec 7>&-
}
