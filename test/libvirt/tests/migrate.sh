#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate.sh - real libvirt (11.3) drives a live migration of a domain
# whose interface is <interface type='vhostuser'><backend type='passt'/>
# (our installed passt), between two libvirt "nodes" on this machine, as
# on a KubeVirt node pair:
#
#   node 1, node 2   each a libvirtd (and its virtlogd) in a pod network
#                    namespace of test/integration/migrate-lib.sh (SRC,
#                    DST: the same addresses, the FABRIC routes the pod
#                    address to one of them), with its own mount namespace
#                    (private /run/libvirt, /var/lib/libvirt,
#                    /var/log/libvirt, /var/cache/libvirt,
#                    /etc/libvirt/qemu; /etc/hosts with its host name),
#                    UTS namespace (host name) and
#                    host_uuid: libvirt sees two hosts. A veth between the
#                    pods carries QEMU's migration stream (--migrateuri
#                    tcp://198.51.100.N); the source libvirtd reaches the
#                    target's through its UNIX socket (--p2p)
#   passt-repair     started one-off for each migration as KubeVirt's
#                    virt-handler starts it: on the source, on the socket,
#                    before the migration; on the target, on the passt
#                    directory, before the migration finalizes (here: as
#                    soon as the target's libvirt has created it), each
#                    with a 60 s timeout, in the node's namespaces
#   the fabric       keeps routing the pod address to the source for LVM_W
#                    seconds after the migration, then to the target; then
#                    SIGUSR2 ends the source passt's linger (what KubeVirt's
#                    launcher would do once the fabric switched)
#
# The guest (transient domain, TCG) streams a position-encoded pattern
# both ways on two connections with the peer, through all of:
#   1. node 1 -> node 2: virsh migrate --live --p2p; the streams move
#      again after the switch; no RST from either pod; the source passt,
#      which libvirt 11.3 leaves running after the domain left (logged),
#      exits 0 on SIGUSR2 with its pid and socket files gone, and no passt
#      file is left on node 1
#   2. node 2 -> node 1 at 1 MiB/s, aborted with virsh domjobabort: the
#      domain still runs on node 2, the streams go on, node 1 has neither
#      domain nor passt nor passt files left (virsh migrate's error is
#      logged)
#   3. node 2 -> node 1 again, at full speed: as in 1, the other way
# Then both ends stop sending: every byte arrived, in order, both ends saw
# a clean end of stream. Logged: virsh migrate's time, libvirt's job
# statistics (downtime), how long the streams took to move again.
#
# About two minutes. Environment: LVM_W (s, default 3), LVM_RATE (KiB/s
# per stream and direction, default 256).
set -eu
. "$(dirname "$0")/../lib.sh"
export PASST=$LV_PREFIX/bin/passt
. "$TOP/test/e2e/migrate-lib.sh"
need_sockio
need nsenter unshare jq nstat

LVM_W=${LVM_W:-3}
LVM_RATE=${LVM_RATE:-256}
NAME=$PT_ID
LVM_UUID=$(cat /proc/sys/kernel/random/uuid)
HELPER=$LV_PREFIX/bin/passt-repair
PDIR=/run/libvirt/qemu/passt
E2E_MEM=256

[ -x "$HELPER" ] || fail "no passt-repair in $LV_PREFIX/bin"

# ---- the nodes ----

# lvm_uri N: libvirt URI of node N, for virsh and for --p2p
lvm_uri() {
	echo "qemu+unix:///system?socket=$T/node$1/sock/libvirt-sock"
}

# V1, V2 ARG...: virsh on node 1 or 2
V1() { timeout 120 virsh -q -c "$(lvm_uri 1)" "$@"; }
V2() { timeout 120 virsh -q -c "$(lvm_uri 2)" "$@"; }
Vn() { _vn=$1; shift; "V$_vn" "$@"; }

# lvm_pod N: the pod namespace of node N
lvm_pod() {
	[ "$1" = 1 ] && echo "$SRC" || echo "$DST"
}

# lvm_node N: virtlogd and libvirtd of node N in its pod, with their own
# mount and UTS namespaces; LVM_PID_N: libvirtd's pid (the namespaces'
# anchor: /proc/PID/root is the node's view of the file system)
lvm_node() {
	_d=$T/node$1
	mkdir -p "$_d/sock" "$_d/lib" "$_d/log/qemu" "$_d/cache" "$_d/etc"
	cp -a /var/lib/libvirt/. "$_d/lib/"
	# QEMU's capabilities, as probed before: a node without them probes
	# QEMU at its first domain, which takes tens of seconds under load
	cp -a /var/cache/libvirt/. "$_d/cache/"
	# libvirt looks its host name up, often: from the file, not from the
	# pod's nameservers, which don't exist (seconds each)
	{ cat /etc/hosts; echo "127.0.1.1 lvm$PT_ID-node$1"; } >"$_d/hosts"
	cat >"$_d/libvirtd.conf" <<-EOF
		unix_sock_dir = "$_d/sock"
		auth_unix_rw = "none"
		auth_unix_ro = "none"
		host_uuid = "$(cat /proc/sys/kernel/random/uuid)"
		log_outputs = "${LVM_LOG_LEVEL:-3}:stderr"
	EOF
	cat >"$_d/start.sh" <<-EOF
		set -e
		mount --make-rprivate /
		hostname lvm$PT_ID-node$1
		mkdir -p /run/libvirt
		mount -t tmpfs -o mode=0755 lvm-run /run/libvirt
		mount --bind "$_d/lib" /var/lib/libvirt
		mount --bind "$_d/log" /var/log/libvirt
		mount --bind "$_d/cache" /var/cache/libvirt
		mount --bind "$_d/etc" /etc/libvirt/qemu
		mount --bind "$_d/hosts" /etc/hosts
		virtlogd -d -p "$_d/virtlogd.pid"
		exec libvirtd -p "$_d/libvirtd.pid" -f "$_d/libvirtd.conf"
	EOF
	PATH="$LV_PREFIX/bin:$PATH" ip netns exec "$(lvm_pod "$1")" \
		unshare --mount --uts --propagation private sh "$_d/start.sh" \
		</dev/null >"$_d/libvirtd.log" 2>&1 7>&- &
	eval "LVM_PID_$1=$!"
	track "$!"
	wait_for "[ -S '$_d/sock/libvirt-sock' ] || ! alive $!" 30 &&
		alive "$!" || fail "node $1: libvirtd did not start: $(tail -n 5 "$_d/libvirtd.log")"
	wait_for "V$1 version" 30 || fail "node $1: virsh can't talk to libvirtd"
	[ "$(cat "/proc/$!/comm")" = libvirtd ] || fail "node $1: pid $! isn't libvirtd"
	log "node $1: libvirtd (pid $!) in $(lvm_pod "$1"), host name" \
		"$(Vn "$1" hostname), host UUID $(Vn "$1" capabilities |
		sed -n 's/.*<uuid>\(.*\)<\/uuid>.*/\1/p' | head -n 1)"
}

# lvm_root N PATH: PATH as node N sees it
lvm_root() {
	eval "echo /proc/\$LVM_PID_$1/root$2"
}

# lvm_down: domains gone, the nodes' daemons stopped (exit trap)
lvm_down() {
	set +e
	for _n in 1 2; do
		eval "_lp=\${LVM_PID_$_n:-}"
		[ -n "$_lp" ] && alive "$_lp" || continue
		Vn "$_n" destroy "$NAME" >/dev/null 2>&1
		kill -TERM "$_lp"
		wait_for "! alive $_lp" 10 || kill -KILL "$_lp"
		_vp=$(cat "$T/node$_n/virtlogd.pid" 2>/dev/null)
		[ -z "$_vp" ] || kill -TERM "$_vp" 2>/dev/null
	done
}

# ---- the domain ----

# lvm_xml N: the domain, with node N's console and command channel
lvm_xml() {
	lv_xml vhost-user "$NAME" uuid="$LVM_UUID" node="$1" queues=1 \
		cpu=no ports=no cmdline="no_timer_check guest.noslaac" \
		dev=eth0 log="$T/passt-$1.log"
}

# lvm_follow N: the guest's command channel (g_run) goes to node N's
# FIFOs; QEMU_PID is node N's QEMU
lvm_follow() {
	exec 7>&-
	exec 7<>"$T/cmd-$1.in"
	QEMU_PID=$(cat "$(lvm_root "$1" "/run/libvirt/qemu/$NAME.pid")")
	ln -sf "console-$1.log" "$T/console.log"
}

# lvm_passt N: the passt of the domain on node N: LVM_PASST (pid),
# LVM_SOCK (its socket, as node N sees it), LVM_FILES (pid and socket
# files, as we see them)
lvm_passt() {
	_pf=$(ls "$(lvm_root "$1" "$PDIR")"/*-"$NAME"-net0-passt.pid 2>/dev/null |
	      head -n 1)
	[ -s "$_pf" ] || fail "node $1: no passt pid file in $PDIR"
	LVM_PASST=$(cat "$_pf")
	alive "$LVM_PASST" || fail "node $1: passt (pid $LVM_PASST) not running"
	expect "node $1: the process in passt's pid file" \
		"$(cat "/proc/$LVM_PASST/comm")" passt
	LVM_SOCK=$PDIR/$(basename "${_pf%-passt.pid}").socket
	LVM_FILES="$_pf $(lvm_root "$1" "$LVM_SOCK")"
	grep -h 'Announce' "$T/passt-$1.log" | tail -n 1 >&2 || :
	log "node $1: passt pid $LVM_PASST, user" \
		"$(stat -c %U "/proc/$LVM_PASST")," \
		"capabilities $(sed -n 's/^CapEff:\t*//p' "/proc/$LVM_PASST/status"):" \
		"$(tr '\0' ' ' <"/proc/$LVM_PASST/cmdline")"
}

# lvm_helper N PATH: passt-repair, one-off, in node N's namespaces, on
# PATH (a socket, or the passt directory), 60 s at most; LVM_HPID its pid
lvm_helper() {
	nsenter -t "$(eval "echo \$LVM_PID_$1")" -m -n \
		timeout 60 "$HELPER" "$2" >>"$T/helper-$1.log" 2>&1 &
	LVM_HPID=$!
	track "$LVM_HPID"
}

# lvm_helper_src N: the source's helper, connected. virt-handler runs one
# for each migration: one left from an earlier migration (connected to
# the same daemon after an aborted one) is ended first, as its 60 s
# timeout would end it, maybe in the middle of this migration
lvm_helper_src() {
	eval "_hp=\${LVM_HSRC_$1:-}"
	if [ -n "$_hp" ] && alive "$_hp"; then
		kill -TERM "$_hp"
		wait_for "! alive $_hp" 10 || fail "node $1: passt-repair ignores SIGTERM"
		wait_for "! mig_repair_connected $(lvm_pod "$1") $LVM_SOCK" 10 ||
			fail "node $1: passt still sees the old helper"
	fi
	lvm_helper "$1" "$LVM_SOCK.repair"
	eval "LVM_HSRC_$1=$LVM_HPID"
	wait_for "mig_repair_connected $(lvm_pod "$1") $LVM_SOCK" 20 ||
		fail "node $1: passt-repair not connected: $(tail -n 3 "$T/helper-$1.log")"
}

# lvm_helper_dst N: the target's helper on the passt directory, once the
# target's libvirt has created it (in the background: "before the
# migration finalizes")
lvm_helper_dst() {
	(
		wait_for "[ -d '$(lvm_root "$1" "$PDIR")' ]" 60 || exit 1
		nsenter -t "$(eval "echo \$LVM_PID_$1")" -m -n \
			timeout 60 "$HELPER" "$PDIR" >>"$T/helper-$1.log" 2>&1
	) &
	track "$!"
}

# lvm_passt_left N: what passt left on node N, a process in its pod or a
# file of the domain's in its passt directory (nothing: status 0)
lvm_passt_left() {
	_left=
	for _p in $(ip netns pids "$(lvm_pod "$1")"); do
		[ "$(cat "/proc/$_p/comm" 2>/dev/null)" != passt ] ||
			_left="$_left process $_p;"
	done
	_f=$(ls "$(lvm_root "$1" "$PDIR")" 2>/dev/null | grep -- "-$NAME-" || :)
	[ -z "$_f" ] || _left="$_left files in $PDIR: $_f"
	echo "$_left"
	[ -z "$_left" ]
}

# lvm_no_passt N WHAT: nothing of passt left on node N (within 10 s)
lvm_no_passt() {
	wait_for "lvm_passt_left $1" 10 ||
		fail "$2: left on node $1: $(lvm_passt_left "$1")"
}

# g_rx NAME: bytes the guest received on stream NAME (0 if unknown)
g_rx() {
	_v=$(g_run -t 5 "cat /tmp/$1.prog" | tr ' ' '\n' | sed -n 's/^rx=//p')
	echo "${_v:-0}"
}

# lvm_moving WHAT: both streams move both ways (128 KiB more each)
lvm_moving() {
	for _s in s t; do
		_p0=$(peer_prog "$_s" rx) _g0=$(g_rx "$_s")
		wait_for "[ \$(peer_prog $_s rx) -ge $((_p0 + 131072)) ]" 30 ||
			fail "$1: stream $_s from the guest doesn't move"
		wait_for "[ \$(g_rx $_s) -ge $((_g0 + 131072)) ]" 30 ||
			fail "$1: stream $_s to the guest doesn't move"
	done
}

# lvm_migrate FROM TO [OPTION...]: virsh migrate --live --p2p from node
# FROM to node TO; LVM_MS its time, LVM_ERR its error output. Returns its
# status
lvm_migrate() {
	_f=$1 _t=$2
	shift 2
	lvm_xml "$_t" >"$T/dom-$_t.xml"
	_t0=$(now_ms)
	_st=0
	Vn "$_f" migrate --live --p2p --verbose "$@" --xml "$T/dom-$_t.xml" \
		--migrateuri "tcp://198.51.100.$_t" "$NAME" "$(lvm_uri "$_t")" \
		>"$T/migrate.out" 2>"$T/migrate.err" || _st=$?
	LVM_MS=$(($(now_ms) - _t0))
	LVM_ERR=$(tr '\n' ' ' <"$T/migrate.err")
	return "$_st"
}

# lvm_handover FROM TO: a completed migration's aftermath: the fabric
# routes to node FROM's pod for LVM_W s more, then to TO's; FROM's passt
# lingers until SIGUSR2, then exits 0 leaving nothing; the streams move
lvm_handover() {
	_pp=$LVM_PASST _pfiles=$LVM_FILES
	log "migration $1 -> $2: completed in $LVM_MS ms; $(grep -h -i -E 'downtime|total' "$T/jobinfo" | tr -s ' ' | tr '\n' ' ')"
	wait_for "[ \"\$(Vn $1 domstate $NAME 2>&1)\" != running ]" 30 ||
		fail "the domain still runs on node $1"
	expect "the domain on node $2" "$(Vn "$2" domstate "$NAME")" running
	# libvirt 11.3 leaves the source's back-end alone: it lingers
	alive "$_pp" || fail "node $1's passt is gone before the linger ended"
	log "node $1: libvirt left passt (pid $_pp) running after the domain left"
	sleep "$LVM_W"	# the fabric's delay, the scenario itself
	mig_fabric_to "$([ "$2" = 1 ] && echo src || echo dst)"
	_tsw=$(now_ms)
	kill -USR2 "$_pp"
	wait_for "! alive $_pp" 10 || fail "node $1's passt ignores SIGUSR2"
	for _f in $_pfiles; do
		[ ! -e "$_f" ] || fail "node $1's passt left $_f"
	done
	lvm_no_passt "$1" "after the linger"
	lvm_follow "$2"
	lvm_passt "$2"
	lvm_moving "after migration $1 -> $2"
	log "the streams moved again within $(($(now_ms) - _tsw)) ms of the switch"
}

# ---- the run ----

lvm_cleanup() {
	_lrc=$?
	set +e
	lvm_down
	(exit "$_lrc")
	mig_cleanup
}

mig_setup
trap lvm_cleanup EXIT
need_guest
# The migration network between the nodes
ip link add mg1 netns "$SRC" type veth peer name mg2 netns "$DST"
ip -n "$SRC" addr add 198.51.100.1/24 dev mg1
ip -n "$DST" addr add 198.51.100.2/24 dev mg2
ip -n "$SRC" link set mg1 up
ip -n "$DST" link set mg2 up
wait_for "ip netns exec $SRC ping -c1 -W1 198.51.100.2" 10 ||
	fail "no migration network between the nodes"

mkdir -p /run/lock
exec 8>/run/lock/passt-libvirt-test.lock
flock -w 300 8 || fail "another libvirt test holds the lock"
lv_stop_pid /run/libvirtd.pid libvirtd
chmod 0755 "$T"
lv_image
lvm_node 1
lvm_node 2
# Each node probes QEMU (tens of seconds under TCG on a busy machine:
# libvirt doesn't take the copied capabilities cache in a node's
# namespaces): both at once, before the domain needs it
V1 domcapabilities >/dev/null 2>&1 &
p1=$!
V2 domcapabilities >/dev/null 2>&1 &
p2=$!
wait "$p1" "$p2" || :

for n in 1 2; do
	rm -f "$T/cmd-$n.in" "$T/cmd-$n.out"
	mkfifo "$T/cmd-$n.in" "$T/cmd-$n.out"
	cat 0<>"$T/cmd-$n.out" >>"$T/cmd.log" &
	track "$!"
done
# Both nodes' FIFOs to the guest stay open for writing, so that whoever
# opens one for reading (libvirt, QEMU) never waits for a writer
exec 3<>"$T/cmd-1.in" 4<>"$T/cmd-2.in"
# passt's log files (<backend logFile=...>): libvirt hands passt the
# path; the QEMU user must be able to write it
for n in 1 2; do
	: >"$T/passt-$n.log"
	chown libvirt-qemu "$T/passt-$n.log"
done
: >"$T/cmd.log"
lvm_xml 1 >"$T/dom-1.xml"
QEMU_T0=$(now_ms)
V1 create "$T/dom-1.xml" >/dev/null 2>"$T/create.err" ||
	fail "virsh create: $(cat "$T/create.err")"
log "virsh create took $(($(now_ms) - QEMU_T0)) ms"
lvm_follow 1
lvm_passt 1
guest_wait 200
[ "$G_IP4" != none ] || fail "guest has no IPv4 address"

qm_stream_start s 5001 "$LVM_RATE"
qm_stream_start t 5002 "$LVM_RATE"
lvm_moving "before the migrations"
rst1=$(mig_rsts "$SRC") rst2=$(mig_rsts "$DST")
# RSTs a pod sends towards the fabric, on its eth0 (nstat's count also
# has those of QEMU's migration streams between the nodes: an aborted
# migration resets its own)
for n in 1 2; do
	ip netns exec "$(lvm_pod "$n")" tcpdump -U --immediate-mode -n -tt \
		-i eth0 -Q out 'tcp[tcpflags] & tcp-rst != 0' \
		>"$T/rst-$n.txt" 2>"$T/rst-$n.log" &
	eval "RST_CAP_$n=$!"
	track "$!"
	wait_for "grep -q 'listening on' '$T/rst-$n.log'" 30 ||
		fail "tcpdump on node $n's pod: $(cat "$T/rst-$n.log")"
done

# 1. node 1 -> node 2
lvm_helper_src 1
lvm_helper_dst 2
lvm_migrate 1 2 || fail "virsh migrate 1 -> 2: $LVM_ERR"
V2 domjobinfo --completed "$NAME" >"$T/jobinfo" 2>&1 || :
lvm_handover 1 2

# 2. node 2 -> node 1, slowly, aborted
lvm_helper_src 2
lvm_helper_dst 1
lvm_migrate 2 1 --bandwidth 1 &
mpid=$!
wait_for "V2 domjobinfo $NAME | grep -q 'Data processed'" 60 ||
	fail "the migration 2 -> 1 doesn't start: $(cat "$T/migrate.err")"
V2 domjobabort "$NAME" >/dev/null || fail "virsh domjobabort failed"
st=0
wait "$mpid" || st=$?
[ "$st" -ne 0 ] || fail "the aborted migration 2 -> 1 succeeded"
log "aborted: virsh migrate says: $(tr '\n' ' ' <"$T/migrate.err")"
expect "the domain on node 2 after the abort" "$(V2 domstate "$NAME")" running
wait_for "! V1 domstate $NAME" 30 || fail "the domain is on node 1 after the abort"
lvm_no_passt 1 "after the aborted migration"
lvm_passt 2
lvm_moving "after the aborted migration"

# 3. node 2 -> node 1
lvm_helper_src 2
lvm_helper_dst 1
lvm_migrate 2 1 || fail "virsh migrate 2 -> 1: $LVM_ERR"
V1 domjobinfo --completed "$NAME" >"$T/jobinfo" 2>&1 || :
lvm_handover 2 1

# The end: every byte, both ways, clean ends, no RST
for s in s t; do
	qm_stream_stop "$s" 60
	log "stream $s: guest: $QS_GUEST; peer: $(cat "$T/$s.prog")"
	expect "stream $s, at its end" "$QS_CHECK" ok
done
log "RSTs from the pods, all links (nstat): node 1" \
	"$(($(mig_rsts "$SRC") - rst1)), node 2 $(($(mig_rsts "$DST") - rst2))"
for n in 1 2; do
	eval "_rc=\$RST_CAP_$n"
	kill -INT "$_rc"
	wait_for "! alive $_rc" 10 || fail "tcpdump on node $n's pod doesn't stop"
	expect "RSTs from node $n's pod towards the fabric ($(cat "$T/rst-$n.txt"))" \
		"$(grep -c . "$T/rst-$n.txt")" 0
done
V1 destroy "$NAME" >/dev/null || fail "virsh destroy failed"
lvm_no_passt 1 "after virsh destroy"
