# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate-lib.sh - topology and helpers for live migration tests, without
# QEMU: sourced after lib.sh and vu.sh by tests/migrate_*.sh.
#
#   GUEST   tap0: the guest kernel, bridged by vu-front (our vhost-user
#           front-end) to the daemon of one pod, and migrated by it to
#           the other's (vu-front --migrate-trigger: what QEMU does at
#           switch-over, with the same guest memory)
#   SRC     source pod: eth0 192.0.2.2/24 2001:db8:1::2/64, default
#   DST     target pod: the SAME addresses, default routes via FABRIC
#   FABRIC  router: fs (to SRC) and fd (to DST), each with 192.0.2.1/32
#           and fe80::1; the peer 203.0.113.7/32 and 2001:db8:2::7/128 on
#           its loopback; ONE host route per family sends the pod address
#           to SRC or DST (mig_fabric_to), replaced atomically, so a test
#           can keep routing to the source for W ms after the migration,
#           as OVN does
#
# A daemon runs in each pod in vhost-user mode, with its repair helper
# (passt-repair, root, in the pod) connected to SOCK.repair. Upstream's
# passt and passt-repair (test/upstream/fetch.sh) work as well as ours:
# PASST_MIG is the daemon (default $PASST), PASST_REPAIR the helper
# (default: passt-repair next to PASST_MIG, else upstream's fetched one).
# The two pods may run different binaries (interoperability): PASST_SRC
# and PASST_DST are the daemons of the SRC and DST pods, PASST_REPAIR_SRC
# and PASST_REPAIR_DST their helpers (defaults: PASST_MIG, PASST_REPAIR).
#
# Names carry $PT_ID; everything is removed on exit (lib.sh's clean-up,
# plus the DST pod). Environment: MIG_DAEMON_OPTS (extra daemon options),
# MIG_DAEMONIZE=1 (let the daemon fork, with a pid file), MIG_VU_OPTS
# (extra vu-front options).
#
# Every migration runs with Debian's default socket buffer limits:
# mig_setup sets net.core.wmem_max and rmem_max to MIG_WMEM_MAX and
# MIG_RMEM_MAX (default 212992 each, what Debian and most Kubernetes
# nodes have; these machines have 4 MiB, which hid deep send queues that
# a target couldn't take) and puts the old values back on exit. They are
# global, not per namespace, and migration tests may run at once (other
# runners, a flake budget's rounds): the machine's values are saved by
# whoever comes first, and the last one to leave restores them
# (test/sysctl-share.sh). Tests that aren't migration tests may meanwhile
# see the low limits: they only cap SO_SNDBUF and SO_RCVBUF.

# shellcheck source=../sysctl-share.sh
. "$(dirname "${BASH_SOURCE[0]}")/../sysctl-share.sh"

SRC=$PT_ID-src
DST=$PT_ID-dst
FABRIC=$PT_ID-fabric
# lib.sh's helpers and clean-up know HOST and ROUTER
HOST=$SRC
ROUTER=$FABRIC

PASST_MIG=${PASST_MIG:-$PASST}
# The helper next to the daemon, else the plain build's (the ASan build
# has none), else upstream's (test/upstream/fetch.sh, default directory):
# the protocol is the same, but only ours attaches the drop filter that
# some kernels refuse to the daemon itself (doc/migration.md)
if [ -z "${PASST_REPAIR:-}" ]; then
	PASST_REPAIR=$(dirname "$PASST_MIG")/passt-repair
	[ -x "$PASST_REPAIR" ] || PASST_REPAIR=$TOP/build/passt-repair
	[ -x "$PASST_REPAIR" ] ||
		PASST_REPAIR=${PASST_UPSTREAM_DIR:-/var/cache/passt-test/upstream}/bin/passt-repair
fi
PASST_SRC=${PASST_SRC:-$PASST_MIG}
PASST_DST=${PASST_DST:-$PASST_MIG}
PASST_REPAIR_SRC=${PASST_REPAIR_SRC:-$PASST_REPAIR}
PASST_REPAIR_DST=${PASST_REPAIR_DST:-$PASST_REPAIR}
MIG_FIFO=$T/migrate.fifo
MIG_DONE=$T/migrate.done
MIG_HOOK=$T/migrate.hook
# A script vu-front runs (and waits for) at each step of a migration, with
# MIG_PHASE stopped, save-sent, saved or loaded (vu-front --phase-exec):
# tests write it to act at one exact point of the switch-over
MIG_PHASE_HOOK=$T/phase.hook
MIG_N=0

mig_cleanup() {
	_mrc=$?
	set +e
	for _pid in $(ip netns pids "$DST" 2>/dev/null); do
		# wait: reap our own children quietly ("Killed" otherwise)
		{ kill -KILL "$_pid" && wait "$_pid"; } 2>/dev/null
	done
	ip netns del "$DST" 2>/dev/null
	rm -rf "/etc/netns/$SRC" "/etc/netns/$DST"
	mig_sysctl_restore
	(exit "$_mrc")
	cleanup
}
trap mig_cleanup EXIT

# ---- Debian's default socket buffer limits (see the top) ----

MIG_WMEM_MAX=${MIG_WMEM_MAX:-212992}
MIG_RMEM_MAX=${MIG_RMEM_MAX:-212992}
MIG_SYSCTL_SET=0

# mig_sysctl_set: join the users of the limits (the machine's values saved
# if nobody did yet), set MIG_WMEM_MAX and MIG_RMEM_MAX
mig_sysctl_set() {
	sysctl_share_join "$$" "$MIG_WMEM_MAX" "$MIG_RMEM_MAX" ||
		fail "can't set net.core.wmem_max/rmem_max"
	MIG_SYSCTL_SET=1
	log "net.core.wmem_max=$(sysctl -n net.core.wmem_max)" \
		"net.core.rmem_max=$(sysctl -n net.core.rmem_max)"
}

# mig_sysctl_restore: leave the users; the last one puts the saved values
# back
mig_sysctl_restore() {
	[ "$MIG_SYSCTL_SET" = 1 ] || return 0
	MIG_SYSCTL_SET=0
	sysctl_share_leave "$$"
}

# mig_pod NS IF: pod NS, its end IF of a veth from FABRIC
mig_pod() {
	ip netns add "$1"
	ip -n "$1" link set lo up
	ip link add "$2" netns "$FABRIC" type veth peer name eth0 netns "$1"
	ip -n "$1" addr add "$ADDR4/24" dev eth0
	ip -n "$1" addr add "$ADDR6/64" dev eth0 nodad
	ip -n "$1" link set eth0 up
	ip -n "$1" route add default via "$GW4" dev eth0
	ip -n "$1" -6 route add default via fe80::1 dev eth0
	ns "$1" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
	# MIG_CC: the pods' congestion control (default: the machine's,
	# which a new namespace inherits; Debian's is cubic)
	[ -z "${MIG_CC:-}" ] ||
		ns "$1" sysctl -qw net.ipv4.tcp_congestion_control="$MIG_CC"
	# MIG_TCP_WMEM: the daemon's sockets' send buffers (tcp_wmem)
	[ -z "${MIG_TCP_WMEM:-}" ] ||
		ns "$1" sysctl -qw net.ipv4.tcp_wmem="$MIG_TCP_WMEM"
	mkdir -p "/etc/netns/$1"
	cat >"/etc/netns/$1/resolv.conf" <<-EOF
		nameserver $DNS4
		nameserver $DNS6
		search $SEARCH
	EOF

	ip -n "$FABRIC" addr add "$GW4/32" dev "$2"
	ip -n "$FABRIC" addr add fe80::1/64 dev "$2" nodad
	ip -n "$FABRIC" link set "$2" up
	ns "$FABRIC" sysctl -qw "net.ipv4.conf.$2.rp_filter=0"
}

# mig_pod_dir DIR: a pod's directory for the daemon's sockets, as libvirt
# and KubeVirt make it: it belongs to the user the daemon runs as (nobody:
# started as root, it becomes that, and hands its files to it), so that it
# can remove its files at exit, and so that passt-repair, in directory
# mode, takes its socket (there, only root's or the directory owner's).
# Sticky and writable for all, like /tmp, for whatever else tests put in
mig_pod_dir() {
	mkdir -p -m 1777 "$1"
	chown 65534:65534 "$1"
}

# mig_setup: the four namespaces, addressed and routed to SRC
mig_setup() {
	need_root
	[ -x "$PASST_MIG" ] || fail "no daemon binary at $PASST_MIG"
	[ -x "$PASST_SRC" ] || fail "no daemon binary at $PASST_SRC"
	[ -x "$PASST_DST" ] || fail "no daemon binary at $PASST_DST"
	need_vufront
	need_sockio
	need nstat ss flock
	mig_sysctl_set
	for _n in "$FABRIC" "$GUEST"; do
		ip netns add "$_n"
		ip -n "$_n" link set lo up
	done
	# Replies to the pod address may leave by either link
	ns "$FABRIC" sysctl -qw net.ipv4.conf.all.rp_filter=0
	ns "$FABRIC" sysctl -qw net.ipv4.conf.default.rp_filter=0
	# A namespace may only pick what the machine allows (a global list:
	# adding to it changes nobody's default)
	if [ -n "${MIG_CC:-}" ] &&
	   ! sysctl -n net.ipv4.tcp_allowed_congestion_control |
		tr ' ' '\n' | grep -qx "$MIG_CC"; then
		sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n net.ipv4.tcp_allowed_congestion_control) $MIG_CC"
	fi
	for _n in "$FABRIC" "$GUEST"; do
		[ -z "${MIG_CC:-}" ] ||
			ns "$_n" sysctl -qw net.ipv4.tcp_congestion_control="$MIG_CC"
	done
	ip -n "$FABRIC" addr add "$PEER4/32" dev lo
	ip -n "$FABRIC" addr add "$PEER6/128" dev lo
	mig_pod "$SRC" fs
	mig_pod "$DST" fd
	mig_fabric_to src

	ns "$GUEST" sysctl -qw net.ipv6.conf.all.forwarding=0
	ns "$GUEST" sysctl -qw net.ipv6.conf.default.accept_ra=1

	for _n in "$SRC" "$DST"; do
		mig_fabric_to "${_n##*-}"
		wait_for "ns $_n ping -c1 -W1 $PEER4" 10 ||
			fail "set-up: $_n can't reach $PEER4"
		wait_for "ns $_n ping -6 -c1 -W1 $PEER6" 10 ||
			fail "set-up: $_n can't reach $PEER6"
	done
	mig_fabric_to src
	mkfifo "$MIG_FIFO" "$T/fabric.fifo"
	: >"$MIG_DONE"
	# MIG_CAPTURE_ALL=1: every TCP segment through the fabric (both
	# pods' links) and on the guest's side (tap0), the whole test long
	# ($T/fabric-all.pcap, $T/guest-all.pcap; keep them with PT_KEEP=1
	# or PT_KEEP=fail), to look into one
	if [ "${MIG_CAPTURE_ALL:-0}" = 1 ]; then
		for _n in fabric guest; do
			_cns=$FABRIC
			[ "$_n" = fabric ] || _cns=$GUEST
			ip netns exec "$_cns" tcpdump -U -n -s 128 -i any \
				-w "$T/$_n-all.pcap" tcp >"$T/$_n-all.cap" 2>&1 &
			track $!
			wait_for "grep -q 'listening on' '$T/$_n-all.cap'" 30 ||
				fail "tcpdump in $_cns: $(cat "$T/$_n-all.cap")"
		done
	fi
	# MIG_SS_EVERY=MS: every MS ms, "ss -tinH state all" of the guest,
	# both pods and the fabric, into $T/ss-all.txt, the whole test long
	[ -z "${MIG_SS_EVERY:-}" ] || mig_ss_sample "$MIG_SS_EVERY"
}

# mig_ss_sample MS: the sampler of MIG_SS_EVERY (in the background)
mig_ss_sample() {
	(
		_mss=$(awk "BEGIN { print $1 / 1000 }")
		while :; do
			for _n in "$GUEST" "$SRC" "$DST" "$FABRIC"; do
				echo "@$(date +%T.%N) $_n"
				ip netns exec "$_n" ss -tinH state all 2>&1
			done
			sleep "$_mss"
		done
	) >>"$T/ss-all.txt" 2>&1 &
	track $!
}

# mig_peer_ttl TTL: the peer's namespace (FABRIC) sends with TTL (and IPv6
# hop limit) TTL. Held sockets drop what comes with less than 255 (see
# tcp/migrate_src.c): a test that needs a segment from the peer to get into a
# held socket sends it with 255, as a peer on the same link may
mig_peer_ttl() {
	ns "$FABRIC" sysctl -qw net.ipv4.ip_default_ttl="$1"
	for _c in all default lo fs fd; do
		ns "$FABRIC" sysctl -qw "net.ipv6.conf.$_c.hop_limit=$1"
	done
}

# mig_fabric_to src|dst: route the pod address to that pod (one route per
# family, each replaced atomically)
mig_fabric_to() {
	case $1 in
	src) _if=fs ;;
	dst) _if=fd ;;
	third) _if=ft ;;
	*) fail "mig_fabric_to: src or dst, not $1" ;;
	esac
	ip -n "$FABRIC" route replace "$ADDR4/32" dev "$_if"
	ip -n "$FABRIC" -6 route replace "$ADDR6/128" dev "$_if"
	MIG_FABRIC=$1
}

# mig_pod_link src|dst down|up: cut a pod off the fabric (its eth0 down:
# whatever the fabric sends it is dropped silently, it sends nothing) or
# connect it again (eth0 up, with the IPv6 address and the default routes
# that "down" removed). With "down" at a migration's trigger, a source
# that leaves no socket behind (upstream passt before July 2025 exits at
# once) behaves like one that stays silent while the fabric still routes
# to it (what a lingering source with an input filter does).
#
# While the pod is cut off, the fabric keeps its MAC address (a permanent
# neighbour entry, as OVN's static bindings): otherwise the link going
# down flushes the entry, and what the peer sends before the switch waits
# in a new one's queue for the 3 s its resolution takes to fail, while
# the peer's kernel doesn't retransmit a segment whose first copy is still
# queued in the host (TcpExtTCPSpuriousRtxHostQueues): a download stopped
# for 3 s after the migration (migrate_interop, whole-suite runs). Dropped
# at the dead link instead, the segments are retransmitted to the target
# as soon as the fabric switched
mig_pod_link() {
	_pn=$(mig_ns "$1")
	case $1 in
	src) _pif=fs ;;
	dst) _pif=fd ;;
	third) _pif=ft ;;
	esac
	if [ "$2" = down ]; then
		_pmac=$(ip netns exec "$_pn" cat /sys/class/net/eth0/address)
		ip -n "$FABRIC" neigh replace "$ADDR4" lladdr "$_pmac" \
			dev "$_pif" nud permanent
		ip -n "$FABRIC" -6 neigh replace "$ADDR6" lladdr "$_pmac" \
			dev "$_pif" nud permanent
		ip -n "$_pn" link set eth0 down
		return
	fi
	ip -n "$_pn" link set eth0 up
	ip -n "$_pn" addr replace "$ADDR6/64" dev eth0 nodad
	ip -n "$_pn" route replace default via "$GW4" dev eth0
	ip -n "$_pn" -6 route replace default via fe80::1 dev eth0
	# Resolved again from now on
	ip -n "$FABRIC" neigh del "$ADDR4" dev "$_pif" 2>/dev/null || :
	ip -n "$FABRIC" -6 neigh del "$ADDR6" dev "$_pif" 2>/dev/null || :
}

# mig_ns src|dst: the namespace of that pod
mig_ns() {
	case $1 in
	src) echo "$SRC" ;;
	dst) echo "$DST" ;;
	third) echo "$THIRD" ;;
	*) fail "mig_ns: src or dst, not $1" ;;
	esac
}

# mig_pod_bin NS DEFAULT SRC_BIN DST_BIN: the binary for pod NS
mig_pod_bin() {
	case $1 in
	"$SRC") echo "$3" ;;
	"$DST") echo "$4" ;;
	*) echo "$2" ;;
	esac
}

# TCP_REPAIR through the helper (passt-repair, as KubeVirt runs it) by
# default. MIG_DIRECT=1: the daemons set it themselves (--repair-path none,
# they keep CAP_NET_ADMIN, isolation.c) and the helper steps are no-ops;
# migrate_silence_direct.sh runs migrate_silence.sh that way. Either way
# the source's hold is silent: the daemon attaches the drop-all filter, or,
# where the kernel wants CAP_NET_ADMIN for that, our helper does
MIG_DIRECT=${MIG_DIRECT:-0}

# mig_daemon_start NS SOCK [OPTION...]: the daemon in pod NS in vhost-user
# mode on SOCK (PASST_SRC or PASST_DST), waits until it listens. Sets
# MIG_DPID (its pid) and MIG_DLOG (its stderr); the pid file is SOCK.pid
mig_daemon_start() {
	_ns=$1 _sock=$2
	shift 2
	_bin=$(mig_pod_bin "$_ns" "$PASST_MIG" "$PASST_SRC" "$PASST_DST")
	[ "$MIG_DIRECT" = 0 ] || set -- --repair-path none "$@"
	MIG_DLOG=$_sock.err
	rm -f "$_sock" "$_sock.pid"
	if [ "${MIG_DAEMONIZE:-0}" = 1 ]; then
		ip netns exec "$_ns" "$_bin" --vhost-user -s "$_sock" \
			-P "$_sock.pid" ${MIG_DAEMON_OPTS:-} "$@" \
			>"$_sock.out" 2>"$MIG_DLOG" ||
			fail "daemon in $_ns: $(tail -n 5 "$MIG_DLOG")"
		wait_for "[ -s '$_sock.pid' ]" 10 ||
			fail "daemon in $_ns wrote no pid file"
		MIG_DPID=$(cat "$_sock.pid")
	else
		# Not through ns(): $! must be the daemon itself
		ip netns exec "$_ns" "$_bin" --vhost-user -f -s "$_sock" \
			-P "$_sock.pid" ${MIG_DAEMON_OPTS:-} "$@" \
			>"$_sock.out" 2>"$MIG_DLOG" &
		MIG_DPID=$!
	fi
	track "$MIG_DPID"
	if ! wait_for "sock_listening $_ns '$_sock' || ! alive $MIG_DPID" 10 ||
	   ! alive "$MIG_DPID"; then
		fail "daemon in $_ns did not start: $(tail -n 5 "$MIG_DLOG")"
	fi
}

# mig_daemon_stop PID: SIGTERM, then wait (SIGKILL after 5 s); no checks:
# a migration source may have exited by itself already
mig_daemon_stop() {
	alive "$1" || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	wait_for "! alive $1" 5 || kill_own KILL "$1"
	wait "$1" 2>/dev/null || :
}

# mig_probe SOCK: SKIP the test unless the daemon at SOCK offers
# DEVICE_STATE (vu-front mig-probe exits 3 then)
mig_probe() {
	_st=0
	ip netns exec "$GUEST" "$VUFRONT" -t 5000 "$1" mig-probe \
		2>"$T/mig-probe.err" || _st=$?
	[ "$_st" -ne 3 ] ||
		skip "$PASST_MIG can't migrate: $(grep -m1 DEVICE_STATE "$T/mig-probe.err")"
	[ "$_st" -eq 0 ] || fail "mig-probe: $(tail -n 3 "$T/mig-probe.err")"
}

# mig_repair_start NS PATH: the repair helper, as root in pod NS, on PATH:
# a daemon's SOCK.repair (connects at once), or a directory (waits for a
# *.repair socket to appear there: start it before the daemon). Sets
# MIG_RPID. The helper is PASST_REPAIR_SRC or PASST_REPAIR_DST.
# For a directory, returns once the helper watches it (an inotify watch
# in its fdinfo): upstream's helper only learns of entries created after
# that (ours also lists the directory), so a daemon started sooner could
# create its socket unseen
mig_repair_start() {
	[ "$MIG_DIRECT" = 0 ] || return 0
	_rbin=$(mig_pod_bin "$1" "$PASST_REPAIR" "$PASST_REPAIR_SRC" \
		"$PASST_REPAIR_DST")
	[ -x "$_rbin" ] ||
		fail "no repair helper at $_rbin (set PASST_REPAIR, or run test/upstream/fetch.sh)"
	_log=$T/repair-${1##*-}-$(date +%s%N).err
	ip netns exec "$1" "$_rbin" "$2" >"$_log" 2>&1 &
	MIG_RPID=$!
	track "$MIG_RPID"
	[ -d "$2" ] || return 0
	wait_for "grep -qs '^inotify wd:' /proc/$MIG_RPID/fdinfo/* ||
		  ! alive $MIG_RPID" 10 && alive "$MIG_RPID" ||
		fail "repair helper $_rbin isn't watching $2: $(cat "$_log")"
}

# mig_repair_connected NS SOCK: true once a helper is connected to
# SOCK.repair of a daemon in pod NS (an established unix socket there)
mig_repair_connected() {
	[ "$MIG_DIRECT" = 0 ] || return 0
	ns "$1" ss -xH state established 2>/dev/null | grep -qF "$2.repair"
}

# mig_bridge_start SOCK: vu-front in GUEST bridging tap0 to the daemon at
# SOCK, with migration enabled (trigger FIFO, result file); waits until
# it's connected. Sets BRIDGE_PID
mig_bridge_start() {
	ip netns exec "$GUEST" "$VUFRONT" -r 5 -t "${MIG_TIMEOUT_MS:-10000}" \
		--migrate-trigger "$MIG_FIFO" --migrate-done "$MIG_DONE" \
		--migrate-exec "[ ! -f '$MIG_HOOK' ] || sh '$MIG_HOOK'" \
		--migrate-notify "$T/fabric.fifo" \
		--migrate-notify-msg "$T/fabric.msg" \
		--phase-exec "[ ! -f '$MIG_PHASE_HOOK' ] || sh '$MIG_PHASE_HOOK'" \
		${MIG_VU_OPTS:-} "$1" bridge 2>"$T/vu-front.err" &
	BRIDGE_PID=$!
	track "$BRIDGE_PID"
	wait_for "grep -q 'bridge: connected' '$T/vu-front.err' ||
		  ! alive $BRIDGE_PID" 10 || :
	if ! alive "$BRIDGE_PID"; then
		_st=0
		wait "$BRIDGE_PID" || _st=$?
		[ "$_st" -eq 3 ] &&
			skip "$PASST_MIG can't migrate: $(grep -m1 DEVICE_STATE "$T/vu-front.err")"
		fail "vu-front exited ($_st): $(tail -n 5 "$T/vu-front.err")"
	fi
}

# bridge_start: for lib.sh's guest_up, once MIG_SOCK is set
bridge_start() {
	mig_bridge_start "$MIG_SOCK"
}

# mig_trigger CMD: one command line to vu-front's trigger FIFO
mig_trigger() {
	alive "$BRIDGE_PID" || fail "vu-front is gone: $(tail -n 5 "$T/vu-front.err")"
	timeout 5 sh -c 'printf "%s\n" "$1" >"$2"' - "$1" "$MIG_FIFO" ||
		fail "can't write to the trigger FIFO"
}

# mig_migrate SOCK [TIMEOUT]: migrate the guest to the daemon at SOCK and
# wait for vu-front's result line (in MIG_RESULT). Returns 0 iff the
# result is "ok"
mig_migrate() {
	_n=$(wc -l <"$MIG_DONE")
	mig_trigger "migrate $1"
	wait_for "[ \$(wc -l <'$MIG_DONE') -gt $_n ] ||
		  ! alive $BRIDGE_PID" "${2:-20}" ||
		fail "migration to $1 did not complete"
	MIG_RESULT=$(sed -n "$((_n + 1))p" "$MIG_DONE")
	[ -n "$MIG_RESULT" ] ||
		fail "vu-front died migrating: $(tail -n 5 "$T/vu-front.err")"
	MIG_N=$((MIG_N + 1))
	log "migration $MIG_N: $MIG_RESULT"
	[ "$(mig_field result)" = ok ]
}

# mig_migrate_switch SOCK POD W: migrate to the daemon at SOCK in POD (src
# or dst); W ms after the target runs the guest the fabric routes the pod
# address to POD. W=0: vu-front writes the route changes to an "ip -batch"
# started beforehand (--migrate-notify), so no process starts at that
# moment; otherwise its --migrate-exec hook sleeps W ms, then switches.
# Returns as mig_migrate; on success, waits for the switch, and
# MIG_SWITCH_AT is when it came (epoch ms)
mig_migrate_switch() {
	case $2 in
	src) _if=fs ;;
	dst) _if=fd ;;
	third) _if=ft ;;
	*) fail "mig_migrate_switch: src or dst, not $2" ;;
	esac
	rm -f "$T/migrate.switched" "$T/fabric.msg" "$MIG_HOOK"
	# The cut-over, until the fabric switched: mig_watch doesn't count it
	: >"$T/cutover"
	if [ "$3" -eq 0 ]; then
		printf '%s\n' "route replace $ADDR4/32 dev $_if" \
			"route replace $ADDR6/128 dev $_if" >"$T/fabric.msg"
		ip -n "$FABRIC" -batch "$T/fabric.fifo" >"$T/fabric.log" 2>&1 &
		_ipb=$!
		track "$_ipb"
		# vu-front drops the message if nobody opens the FIFO yet (it
		# never blocks): wait until ip waits in open() for a writer
		wait_for "grep -q wait_for_partner /proc/$_ipb/wchan" 10 ||
			fail "ip -batch doesn't open $T/fabric.fifo"
	else
		cat >"$MIG_HOOK" <<-EOF
			sleep $(awk "BEGIN { print $3 / 1000 }")
			printf '%s\n' "route replace $ADDR4/32 dev $_if" \
				"route replace $ADDR6/128 dev $_if" |
				ip -n "$FABRIC" -batch -
			date +%s%N >"$T/migrate.switched.tmp"
			mv "$T/migrate.switched.tmp" "$T/migrate.switched"
		EOF
	fi
	if ! mig_migrate "$1"; then
		rm -f "$MIG_HOOK" "$T/fabric.msg" "$T/cutover"
		[ "$3" -ne 0 ] || kill "$_ipb" 2>/dev/null || :
		return 1
	fi
	if [ "$3" -eq 0 ]; then
		bg_wait "$_ipb" 10 && [ "$BG_ST" = 0 ] ||
			fail "fabric switch failed: $(cat "$T/fabric.log")"
		MIG_SWITCH_MS="at once (vu-front wrote the routes)"
		MIG_SWITCH_AT=$(mig_field at_ms)
	else
		wait_for "[ -e '$T/migrate.switched' ]" $((10 + $3 / 1000)) ||
			fail "the fabric did not switch to $2"
		# How late the switch came, after the target started the guest
		MIG_SWITCH_AT=$(($(cat "$T/migrate.switched") / 1000000))
		MIG_SWITCH_MS="$((MIG_SWITCH_AT - $(mig_field at_ms))) ms"
	fi
	rm -f "$MIG_HOOK" "$T/fabric.msg" "$T/cutover"
	[ "$(ip -n "$FABRIC" route get "$ADDR4" | sed -n 's/.* dev \([a-z0-9]*\).*/\1/p')" = "$_if" ] ||
		fail "fabric still routes $ADDR4 elsewhere: $(ip -n "$FABRIC" route get "$ADDR4")"
	MIG_FABRIC=$2
	log "fabric switched to $2 after the target started: $MIG_SWITCH_MS (W=$3)"
}

# mig_cancel [TIMEOUT]: a migration that fails after the source saved its
# state: the source resumes. Returns 0 iff the result is "cancelled"
mig_cancel() {
	_n=$(wc -l <"$MIG_DONE")
	mig_trigger cancel
	wait_for "[ \$(wc -l <'$MIG_DONE') -gt $_n ] ||
		  ! alive $BRIDGE_PID" "${1:-20}" ||
		fail "cancelled migration did not complete"
	MIG_RESULT=$(sed -n "$((_n + 1))p" "$MIG_DONE")
	log "cancel: $MIG_RESULT"
	[ "$(mig_field result)" = cancelled ]
}

# mig_reconnect [TIMEOUT]: the front-end drops its connection to the
# source while the source writes its state, connects again and starts the
# device where it was (vu-front "reconnect"). Returns 0 iff the result is
# "reconnected"
mig_reconnect() {
	_n=$(wc -l <"$MIG_DONE")
	mig_trigger reconnect
	wait_for "[ \$(wc -l <'$MIG_DONE') -gt $_n ] ||
		  ! alive $BRIDGE_PID" "${1:-20}" ||
		fail "the reconnection did not complete"
	MIG_RESULT=$(sed -n "$((_n + 1))p" "$MIG_DONE")
	log "reconnect: $MIG_RESULT"
	[ "$(mig_field result)" = reconnected ]
}

# mig_hook_until: the start of a MIG_PHASE_HOOK script (plain sh, none of
# our functions there): until_ok CMD polls CMD every 50 ms, 10 s at most
mig_hook_until() {
	cat <<-'EOF'
		until_ok() {
			_i=0
			while ! eval "$1" >/dev/null 2>&1; do
				_i=$((_i + 1))
				[ "$_i" -lt 200 ] || { echo "phase hook: timed out: $1" >&2; return 1; }
				sleep 0.05
			done
		}
	EOF
}

# mig_abort SOCK [TIMEOUT]: a migration that fails after the target at
# SOCK loaded the state: vu-front closes the target's connection before
# its device starts (a target QEMU that exits) and the source resumes.
# Returns 0 iff the result is "aborted"
mig_abort() {
	_n=$(wc -l <"$MIG_DONE")
	mig_trigger "abort $1"
	wait_for "[ \$(wc -l <'$MIG_DONE') -gt $_n ] ||
		  ! alive $BRIDGE_PID" "${2:-20}" ||
		fail "aborted migration did not complete"
	MIG_RESULT=$(sed -n "$((_n + 1))p" "$MIG_DONE")
	log "abort: $MIG_RESULT"
	[ "$(mig_field result)" = aborted ]
}

# mig_field KEY: the value of KEY=... in the last result line
mig_field() {
	printf '%s\n' "$MIG_RESULT" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# mig_rsts NS: TcpOutRsts of pod (or any) namespace NS (absolute)
mig_rsts() {
	nstat_get "$1" TcpOutRsts
}

# mig_ss_info NS FILTER...: "ss -tinH" lines (joined) for FILTER in NS
mig_ss_info() {
	_n=$1
	shift
	ns "$_n" ss -tinH "$@" 2>/dev/null | tr '\n' ' '
}

# mig_ss_field NS KEY FILTER...: a numeric field (bytes_acked,
# bytes_sent, bytes_retrans, unacked, notsent, retrans ...) of the first
# socket matching FILTER in NS; empty if none
mig_ss_field() {
	_n=$1 _k=$2
	shift 2
	mig_ss_info "$_n" "$@" | tr ' ' '\n' |
		sed -n "s/^$_k:\\([0-9]*\\).*/\\1/p" | head -n 1
}

# mig_unacked NS FILTER...: bytes sent but not acknowledged on the first
# socket matching FILTER in NS (bytes_sent - bytes_retrans - bytes_acked)
mig_unacked() {
	_i=$(mig_ss_info "$@")
	_s=$(printf '%s\n' "$_i" | tr ' ' '\n' | sed -n 's/^bytes_sent:\([0-9]*\)/\1/p' | head -n 1)
	_r=$(printf '%s\n' "$_i" | tr ' ' '\n' | sed -n 's/^bytes_retrans:\([0-9]*\)/\1/p' | head -n 1)
	_a=$(printf '%s\n' "$_i" | tr ' ' '\n' | sed -n 's/^bytes_acked:\([0-9]*\)/\1/p' | head -n 1)
	echo $((${_s:-0} - ${_r:-0} - ${_a:-0}))
}

# ---- position-encoded streams (sockio pattern-*) ----

# mig_stream_start NAME NS_LISTEN NS_CONNECT ADDR PORT SENDER [OPTION...]:
# a pattern stream on one connection, listener in NS_LISTEN, client in
# NS_CONNECT; SENDER (listen or connect) sends until $T/NAME.stop exists,
# the other side verifies every byte. Progress in $T/NAME.{l,c}.prog;
# pids in MIG_SL and MIG_SC
mig_stream_start() {
	# bg() uses _name, _ns, _in, _out: keep ours apart
	_msn=$1 _msl=$2 _msc=$3 _msa=$4 _msp=$5 _mss=$6
	shift 6
	_msls='' _mscs=''
	[ "$_mss" = listen ] && _msls=--send
	[ "$_mss" = connect ] && _mscs=--send
	rm -f "$T/$_msn.ready" "$T/$_msn.stop"
	bg "$_msl" "$_msn.l" /dev/null /dev/null "$SOCKIO" -t 120 --report \
		--ready "$T/$_msn.ready" --progress "$T/$_msn.l.prog" \
		--stop-file "$T/$_msn.stop" $_msls "$@" \
		pattern-listen "$_msa" "$_msp"
	MIG_SL=$BG_PID
	wait_ready "$T/$_msn.ready"
	bg "$_msc" "$_msn.c" /dev/null /dev/null "$SOCKIO" -t 120 --report \
		--progress "$T/$_msn.c.prog" --stop-file "$T/$_msn.stop" \
		$_mscs "$@" pattern-connect "$_msa" "$_msp"
	MIG_SC=$BG_PID
}

# mig_prog NAME SIDE KEY: rx or tx (bytes) or end of side l or c
mig_prog() {
	[ -r "$T/$1.$2.prog" ] || { [ "$3" = end ] && echo none || echo 0; return; }
	tr ' ' '\n' <"$T/$1.$2.prog" | sed -n "s/^$3=//p"
}

# mig_stream_wait_rx NAME SIDE BYTES [TIMEOUT]: wait until SIDE received
# at least BYTES; returns 1 on timeout
mig_stream_wait_rx() {
	wait_for "[ \$(mig_prog $1 $2 rx) -ge $3 ]" "${4:-10}"
}

# mig_stream_stop NAME [TIMEOUT]: the sender stops; wait for both ends
# to exit. MIG_ST_L and MIG_ST_C: their exit statuses (timeout if stuck)
mig_stream_stop() {
	touch "$T/$1.stop"
	bg_wait "$MIG_SL" "${2:-15}" || :
	MIG_ST_L=$BG_ST
	bg_wait "$MIG_SC" "${2:-15}" || :
	MIG_ST_C=$BG_ST
}

# ---- shared by the newer migrate_*.sh tests and bench/migrate-scale.sh ----

THIRD=$PT_ID-third

# mig_third_setup: a third pod, THIRD ("third" for mig_ns, mig_fabric_to
# and mig_migrate_switch), with the same addresses, on FABRIC's link ft;
# removed on exit. Call after mig_setup
mig_third_setup() {
	trap mig_third_cleanup EXIT
	mig_pod "$THIRD" ft
	_mtf=$MIG_FABRIC
	mig_fabric_to third
	wait_for "ns $THIRD ping -c1 -W1 $PEER4" 10 ||
		fail "set-up: $THIRD can't reach $PEER4"
	wait_for "ns $THIRD ping -6 -c1 -W1 $PEER6" 10 ||
		fail "set-up: $THIRD can't reach $PEER6"
	mig_fabric_to "$_mtf"
}

mig_third_cleanup() {
	_mrc=$?
	set +e
	for _pid in $(ip netns pids "$THIRD" 2>/dev/null); do
		{ kill -KILL "$_pid" && wait "$_pid"; } 2>/dev/null
	done
	ip netns del "$THIRD" 2>/dev/null
	rm -rf "/etc/netns/$THIRD"
	(exit "$_mrc")
	mig_cleanup
}

# mig_pod_daemon POD ROLE [OPTION...]: a fresh daemon in pod POD (src,
# dst, third) in its own directory, with its repair helper: as a source
# (ROLE source) the helper connects to its socket, as a target (ROLE
# target) it watches the directory first, as KubeVirt does. Sets D_SOCK,
# D_PID, D_LOG
MIG_GEN=0
mig_pod_daemon() {
	_mpp=$1 _mpr=$2
	shift 2
	MIG_GEN=$((MIG_GEN + 1))
	_mpd=$T/$_mpp$MIG_GEN
	mig_pod_dir "$_mpd"
	D_SOCK=$_mpd/passt.socket
	[ "$_mpr" != target ] || mig_repair_start "$(mig_ns "$_mpp")" "$_mpd"
	mig_daemon_start "$(mig_ns "$_mpp")" "$D_SOCK" "$@"
	D_PID=$MIG_DPID D_LOG=$MIG_DLOG
	if [ "$_mpr" = target ]; then
		wait_for "mig_repair_connected $(mig_ns "$_mpp") $D_SOCK" 10 ||
			fail "repair helper (directory mode) not connected to $D_SOCK.repair"
	fi
}

# mig_guest_start [OPTION...]: the first source, a daemon with OPTIONs in
# pod src (mig_pod_daemon), checked that it can migrate (mig_probe), the
# guest up through it (MIG_SOCK) and its repair helper connected. Leaves
# D_SOCK, D_PID, D_LOG of that daemon
mig_guest_start() {
	mig_pod_daemon src source "$@"
	mig_probe "$D_SOCK"
	MIG_SOCK=$D_SOCK
	guest_up
	mig_repair_ready src "$D_SOCK"
}

# mig_repair_ready POD SOCK: a helper connected to the daemon at SOCK
# (start one if none is, e.g. on a former target whose helper left)
mig_repair_ready() {
	mig_repair_connected "$(mig_ns "$1")" "$2" && return 0
	mig_repair_start "$(mig_ns "$1")" "$2.repair"
	wait_for "mig_repair_connected $(mig_ns "$1") $2" 10 ||
		fail "repair helper not connected to $2.repair"
}

# mig_slow_class PORT: on the guest's tap, an HTB tree whose default class
# runs at 10 Gbit/s and whose class 1:4 sends 1 byte a second, already in
# debt: one UDP datagram to the peer's PORT (1400 bytes) takes its bucket
# first (HTB lets a packet through on any credit, then owes), so whatever
# a test files into 1:4 afterwards waits there for 20 minutes. Skips the
# test without HTB or the u32 classifier
mig_slow_class() {
	ns "$GUEST" tc qdisc replace dev tap0 root handle 1: htb default 1 \
		2>/dev/null || skip "no HTB qdisc on the guest's tap"
	ns "$GUEST" tc class add dev tap0 parent 1: classid 1:1 htb \
		rate 10gbit
	ns "$GUEST" tc class add dev tap0 parent 1: classid 1:4 htb \
		rate 8bit ceil 8bit burst 1 cburst 1
	ns "$GUEST" tc filter add dev tap0 parent 1: protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport "$1" 0xffff \
		flowid 1:4 2>/dev/null || skip "no u32 classifier"
	ns "$GUEST" bash -c "head -c 1400 /dev/zero >/dev/udp/$PEER4/$1"
	wait_for "ns $GUEST tc -s class show dev tap0 classid 1:4 | grep -q 'Sent 14[0-9][0-9] bytes 1 pkt'" 5 ||
		fail "the drain datagram: $(ns "$GUEST" tc -s class show dev tap0)"
}

# mig_stream NAME KIND PORT [OPTION...]: a pattern stream between the peer
# (FABRIC) and the guest; KIND down4/down6 (peer -> guest) or up4/up6
# (guest -> peer). NAME must be a shell identifier; pids in SL_NAME,
# SC_NAME, the kind in KIND_NAME
mig_stream() {
	_msk=$2
	case $_msk in
	*4) _msa=$PEER4 ;;
	*6) _msa=$PEER6 ;;
	*) fail "mig_stream: bad kind $_msk" ;;
	esac
	case $_msk in
	down*) _mssd=listen ;;
	up*) _mssd=connect ;;
	*) fail "mig_stream: bad kind $_msk" ;;
	esac
	_msnm=$1 _msport=$3
	shift 3
	mig_stream_start "$_msnm" "$FABRIC" "$GUEST" "$_msa" "$_msport" \
		"$_mssd" "$@"
	eval "SL_$_msnm=$MIG_SL SC_$_msnm=$MIG_SC KIND_$_msnm=$_msk PORT_$_msnm=$_msport"
}

# mig_rx NAME: the receiving side of stream NAME (c: guest, l: peer)
mig_rx() {
	eval "_mrk=\$KIND_$1"
	case $_mrk in
	down*) echo c ;;
	*) echo l ;;
	esac
}

# mig_tx NAME: the sending side of stream NAME
mig_tx() {
	[ "$(mig_rx "$1")" = c ] && echo l || echo c
}

# mig_alive NAME: both ends of stream NAME still run
mig_alive() {
	eval "alive \$SL_$1 && alive \$SC_$1"
}

# mig_flowing NAME BYTES TIMEOUT: stream NAME's receiver gets BYTES more
# than now within TIMEOUT seconds, both ends still running
mig_flowing() {
	_mfs=$(mig_rx "$1")
	_mfw=$(($(mig_prog "$1" "$_mfs" rx) + $2))
	wait_for "[ \$(mig_prog $1 $_mfs rx) -ge $_mfw ] || ! mig_alive $1" \
		"$3" >/dev/null 2>&1 || :
	[ "$(mig_prog "$1" "$_mfs" rx)" -ge "$_mfw" ] && mig_alive "$1"
}

# mig_streams_verify NAME...: every sender stops at once, then each pair
# must exit 0 (within MIG_VERIFY_TIMEOUT s, default 60, for all) with the
# receiver having exactly what was sent (every byte verified by sockio);
# fails the test otherwise (MIG_VERIFY_NOFAIL=1: returns 1, the streams
# in MIG_VERIFY_BAD). Logs one line per stream
mig_streams_verify() {
	_mvpids=
	: >"$T/verify.lst"
	for _mvn in "$@"; do
		touch "$T/$_mvn.stop"
		eval "_mvpids=\"\$_mvpids \$SL_$_mvn \$SC_$_mvn\" _mvk=\$KIND_$_mvn"
		echo "$_mvn $_mvk" >>"$T/verify.lst"
	done
	# A watchdog, so that a stuck end can't hang the wait below; its
	# sleep goes with it (an orphaned sleep would keep the test's log and
	# the caller's descriptors open for the whole timeout)
	# shellcheck disable=SC2086
	(
		trap 'kill $! 2>/dev/null; exit 0' TERM
		sleep "${MIG_VERIFY_TIMEOUT:-60}" &
		wait $!
		kill_own KILL $_mvpids
	) >/dev/null 2>&1 &
	_mvwd=$!
	: >"$T/verify.st"
	for _mvn in "$@"; do
		eval "_mvl=\$SL_$_mvn _mvc=\$SC_$_mvn"
		_mvsl=0 _mvsc=0
		wait "$_mvl" 2>/dev/null || _mvsl=$?
		wait "$_mvc" 2>/dev/null || _mvsc=$?
		echo "$_mvn $_mvsl $_mvsc" >>"$T/verify.st"
	done
	kill "$_mvwd" 2>/dev/null || :
	wait "$_mvwd" 2>/dev/null || :
	# One pass over every progress file
	_mvbad=$(awk -v t="$T" '
		function get(f, k,   l, n, kv, i, v) {
			v = ""
			if ((getline l < f) > 0) {
				n = split(l, kv, " ")
				for (i = 1; i <= n; i++)
					if (index(kv[i], k "=") == 1)
						v = substr(kv[i], length(k) + 2)
			}
			close(f)
			return v
		}
		FILENAME ~ /verify.lst$/ { kind[$1] = $2; next }
		{
			n = $1; rx = kind[n] ~ /^down/ ? "c" : "l"
			tx = rx == "c" ? "l" : "c"
			s = get(t "/" n "." tx ".prog", "tx")
			r = get(t "/" n "." rx ".prog", "rx")
			e = get(t "/" n "." rx ".prog", "end")
			printf "stream %s: sent=%s received=%s end=%s status=%s/%s\n", n, s, r, e, $2, $3 > "/dev/stderr"
			if ($2 != 0 || $3 != 0 || s != r || s + 0 == 0)
				bad = bad " " n
		}
		END { print bad }' "$T/verify.lst" "$T/verify.st")
	for _mvn in $_mvbad; do
		log "  $_mvn: $(cat "$T/$_mvn".*.err 2>/dev/null | tr '\n' ' ')"
	done
	MIG_VERIFY_BAD=$_mvbad
	[ -z "$_mvbad" ] && return 0
	# MIG_VERIFY_NOFAIL=1: report only (returns 1)
	[ "${MIG_VERIFY_NOFAIL:-0}" = 1 ] && return 1
	fail "streams not byte-exact or failed: $_mvbad"
}

# mig_diag NAME...: what the kernels think of those streams (ss -tin in
# FABRIC, the pods and the guest), for a failure report
mig_diag() {
	for _mdn in "$@"; do
		eval "_mdk=\$KIND_$_mdn _mdp=\${PORT_$_mdn:-none}"
		log "---- stream $_mdn ($_mdk): progress l: $(cat "$T/$_mdn.l.prog" 2>/dev/null), c: $(cat "$T/$_mdn.c.prog" 2>/dev/null)"
		for _mdns in "$FABRIC" "$SRC" "$DST" "$GUEST"; do
			log "  $_mdns: $(ns "$_mdns" ss -tinH state all 2>/dev/null |
				grep -A1 -E "[:.]$_mdp( |$)" | tr -s ' \n' ' ')"
		done
	done
}

# mig_streams_start KIND_OF PORT0 COUNT [OPTION...]: COUNT pattern streams
# s0..s(COUNT-1) at once (listeners first, then the connectors), stream i
# of kind "KIND_OF i" (a function printing down4, up4, down6 or up6) on
# port PORT0 + i. Sets MIG_NAMES
mig_streams_start() {
	_mkf=$1 _mp0=$2 _mcn=$3
	shift 3
	MIG_NAMES=
	_mi=0
	while [ "$_mi" -lt "$_mcn" ]; do
		_mn=s$_mi _mk=$($_mkf "$_mi")
		case $_mk in
		*4) _ma=$PEER4 ;;
		*) _ma=$PEER6 ;;
		esac
		_msl='' _msc=''
		case $_mk in
		down*) _msl=--send ;;
		*) _msc=--send ;;
		esac
		rm -f "$T/$_mn.ready" "$T/$_mn.stop"
		bg "$FABRIC" "$_mn.l" /dev/null /dev/null "$SOCKIO" -t 120 \
			--report --ready "$T/$_mn.ready" \
			--progress "$T/$_mn.l.prog" --stop-file "$T/$_mn.stop" \
			$_msl "$@" pattern-listen "$_ma" $((_mp0 + _mi))
		eval "SL_$_mn=$BG_PID KIND_$_mn=$_mk ADDR_$_mn=$_ma SEND_$_mn=$_msc"
		eval "PORT_$_mn=$((_mp0 + _mi))"
		MIG_NAMES="$MIG_NAMES $_mn"
		_mi=$((_mi + 1))
	done
	for _mn in $MIG_NAMES; do
		wait_ready "$T/$_mn.ready" 30
	done
	_mi=0
	for _mn in $MIG_NAMES; do
		eval "_ma=\$ADDR_$_mn _msc=\$SEND_$_mn"
		bg "$GUEST" "$_mn.c" /dev/null /dev/null "$SOCKIO" -t 120 \
			--report --progress "$T/$_mn.c.prog" \
			--stop-file "$T/$_mn.stop" $_msc "$@" \
			pattern-connect "$_ma" $((_mp0 + _mi))
		eval "SC_$_mn=$BG_PID"
		_mi=$((_mi + 1))
	done
}

# mig_exit_wait PID TIMEOUT: wait up to TIMEOUT seconds for PID (a child
# of ours) to exit; MIG_EXIT_ST its status, MIG_EXIT_MS how long it took
# (timeout: "timeout", and the process is left running)
mig_exit_wait() {
	_mew0=$(now_ms)
	if ! wait_for "! alive $1" "$2" >/dev/null 2>&1; then
		MIG_EXIT_ST=timeout MIG_EXIT_MS=$(($(now_ms) - _mew0))
		return 1
	fi
	MIG_EXIT_MS=$(($(now_ms) - _mew0))
	MIG_EXIT_ST=0
	wait "$1" 2>/dev/null || MIG_EXIT_ST=$?
}

# mig_cap_start NS IF NAME [DIR]: tcpdump on IF in NS (direction DIR:
# in, out or inout), TCP only, to $T/NAME.pcap; waits until it listens.
# Sets CAP_PID
mig_cap_start() {
	rm -f "$T/$3.pcap"
	ip netns exec "$1" tcpdump -U --immediate-mode -n -s 128 -i "$2" -Q "${4:-inout}" \
		-w "$T/$3.pcap" tcp >"$T/$3.tcpdump.log" 2>&1 &
	CAP_PID=$!
	track "$CAP_PID"
	wait_for "grep -q 'listening on' '$T/$3.tcpdump.log' || ! alive $CAP_PID" 60 ||
		fail "tcpdump did not start"
	alive "$CAP_PID" || fail "tcpdump: $(cat "$T/$3.tcpdump.log")"
}

# mig_cap_stop PID: stop a capture, wait for it to flush
mig_cap_stop() {
	kill_own INT "$1"
	wait_for "! alive $1" 10 || kill_own KILL "$1"
	wait "$1" 2>/dev/null || :
}

# mig_cap_text NAME: the capture as text, one segment a line, epoch time,
# absolute sequence numbers
mig_cap_text() {
	tcpdump -r "$T/$1.pcap" -n -tt -S 2>/dev/null
}

# mig_all_flowing BYTES TIMEOUT NAME...: every stream's receiver gets
# BYTES more than now within TIMEOUT seconds (one awk per poll, for many
# streams). Returns 1 if not; MIG_LAGGING then lists "NAME:rx:end" of
# the streams that didn't (end is not "running" for one that ended)
mig_all_flowing() {
	_mab=$1 _mat=$2
	shift 2
	for _man in "$@"; do
		printf '%s %s\n' "$_man" "$T/$_man.$(mig_rx "$_man").prog"
	done >"$T/flow.files"
	mig_rx_now >"$T/flow.base"
	_mae=$(($(now_ms) + _mat * 1000))
	while :; do
		MIG_LAGGING=$(mig_rx_now | awk -v b="$_mab" '
			NR == FNR { base[$1] = $2; next }
			$2 < base[$1] + b || $3 != "running" {
				printf "%s%s:%s:%s", s, $1, $2, $3; s = " " }
			' "$T/flow.base" -)
		[ -n "$MIG_LAGGING" ] || return 0
		[ "$(now_ms)" -lt "$_mae" ] || return 1
		sleep 0.1
	done
}

# mig_rx_now: "NAME RX END" for each stream in $T/flow.files
mig_rx_now() {
	awk '{
		rx = 0; end = "none"
		if ((getline l < $2) > 0) {
			n = split(l, kv, " ")
			for (i = 1; i <= n; i++) {
				if (kv[i] ~ /^rx=/) rx = substr(kv[i], 4)
				if (kv[i] ~ /^end=/) end = substr(kv[i], 5)
			}
		}
		close($2)
		print $1, rx, end
	}' "$T/flow.files"
}

# ---- many streams in two processes (bench/migrate-scale.sh, issue 51) ----

# The N streams of a round are two sockio processes (pattern-many), one in
# FABRIC listening on PORT0 .. PORT0 + N - 1 and one in the guest making
# the connections; stream I goes peer -> guest for an even I and guest ->
# peer for an odd one. Each keeps a progress file, a line a stream

# many_start ROUND PORT0 N RATE: the streams of ROUND; ML_PID, MC_PID
many_start() {
	rm -f "$T/many$1".*
	bg "$FABRIC" "many$1.l" /dev/null /dev/null "$SOCKIO" -t 1800 \
		--report --ready "$T/many$1.ready" \
		--progress "$T/many$1.l.prog" --stop-file "$T/many$1.stop" \
		--send-parity 0 --rate "$4" pattern-many-listen "$PEER4" "$2" "$3"
	ML_PID=$BG_PID
	wait_ready "$T/many$1.ready" 30
	bg "$GUEST" "many$1.c" /dev/null /dev/null "$SOCKIO" -t 1800 \
		--report --progress "$T/many$1.c.prog" \
		--stop-file "$T/many$1.stop" --send-parity 1 --rate "$4" \
		pattern-many-connect "$PEER4" "$2" "$3"
	MC_PID=$BG_PID
}

# many_rx ROUND: "I RX END" of each stream's receiving end
many_rx() {
	sed 's/^/l /' "$T/many$1.l.prog"
	sed 's/^/c /' "$T/many$1.c.prog"
} 2>/dev/null

# many_flowing ROUND N BYTES TIMEOUT: every stream's receiver gets BYTES
# more than now within TIMEOUT seconds. Returns 1 if not, MIG_LAGGING
# then says how many didn't and lists the first few ("I:RX:END")
many_flowing() {
	many_rx "$1" | many_pick >"$T/many$1.base"
	_mfe=$(($(now_ms) + $4 * 1000))
	while :; do
		MIG_LAGGING=$(many_rx "$1" | many_pick |
			awk -v b="$3" -v n="$2" '
			FILENAME != "-" { base[$1] = $2; next }
			{ seen[$1] = 1 }
			$2 < base[$1] + b || $3 != "running" {
				if (++k <= 5) l = l " " $1 ":" $2 ":" $3 }
			END {
				for (i = 0; i < n; i++)
					if (!(i in seen)) k++
				if (k) print k " streams:" l
			}' "$T/many$1.base" -)
		[ -n "$MIG_LAGGING" ] || return 0
		[ "$(now_ms)" -lt "$_mfe" ] || return 1
		sleep 0.2
	done
}

# many_pick: of many_rx's lines, the receiving end's ("I RX END")
many_pick() {
	awk '{ i = $2; sub(/^rx=/, "", $3); sub(/^end=/, "", $5)
	       if ((i % 2 == 0) == ($1 == "c")) print i, $3, $5 }'
}

# many_verify ROUND TIMEOUT N: every sender stops, both processes must end
# within TIMEOUT seconds; MANY_BAD: how many streams are broken: not ended
# with both FINs at both ends, or the receiver doesn't have exactly what
# the sender sent (sockio verifies every byte)
many_verify() {
	touch "$T/many$1.stop"
	bg_wait "$ML_PID" "$2" || kill -KILL "$ML_PID" 2>/dev/null || :
	bg_wait "$MC_PID" 10 || kill -KILL "$MC_PID" 2>/dev/null || :
	MANY_BAD=$(many_rx "$1" | awk -v n="$3" '
		{ i = $2; sub(/^rx=/, "", $3); sub(/^tx=/, "", $4)
		  sub(/^end=/, "", $5)
		  rx[$1, i] = $3; tx[$1, i] = $4; e[$1, i] = $5 }
		END {
			for (i = 0; i < n; i++) {
				s = i % 2 ? "c" : "l"; r = i % 2 ? "l" : "c"
				if (e["l", i] != "eof" || e["c", i] != "eof" ||
				    tx[s, i] != rx[r, i] || tx[s, i] + 0 == 0)
					bad++
			}
			print bad + 0
		}')
}

# many_moving ROUND N BYTES TIMEOUT MIN: at least MIN of the N streams'
# receivers get BYTES more than now within TIMEOUT seconds. Returns 1 if
# not; MANY_MOVED says how many did
many_moving() {
	many_rx "$1" | many_pick >"$T/many$1.base"
	_mme=$(($(now_ms) + $4 * 1000))
	while :; do
		MANY_MOVED=$(many_rx "$1" | many_pick | awk -v b="$3" '
			FILENAME != "-" { base[$1] = $2; next }
			$2 >= base[$1] + b && $3 == "running" { k++ }
			END { print k + 0 }' "$T/many$1.base" -)
		[ "$MANY_MOVED" -lt "$5" ] || return 0
		[ "$(now_ms)" -lt "$_mme" ] || return 1
		sleep 0.2
	done
}

# mig_stop PID: SIGTERM to a daemon of ours, wait up to 30 s (a sanitizer
# build on a loaded machine is slow to exit), then SIGKILL; no checks
mig_stop() {
	alive "$1" || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	wait_for "! alive $1" 30 >/dev/null 2>&1 || kill_own KILL "$1"
	wait "$1" 2>/dev/null || :
}

# ---- what the restored sockets do after the switch (issue 51) ----

# The kernel counters that say why a stream waits after a migration:
# answers the peer didn't send (an old ACK failing PAWS, an out-of-window
# segment rate-limited), timers of ours that fired instead, segments our
# TTL limit dropped
MIG_NSTAT_KEYS="TcpExtTCPACKSkippedSeq TcpExtPAWSOldAck TcpExtPAWSEstab TcpExtTCPACKSkippedPAWS TcpExtTCPLossProbes TcpExtTCPTimeouts TcpExtTCPMinTTLDrop TcpRetransSegs TcpOutRsts"

# mig_nstat NS: "KEY=VALUE ..." of MIG_NSTAT_KEYS in NS (absolute)
mig_nstat() {
	# shellcheck disable=SC2086
	ns "$1" nstat -az $MIG_NSTAT_KEYS 2>/dev/null |
		awk 'NF >= 2 && $1 !~ /^#/ { printf "%s=%s ", $1, $2 }'
}

# mig_nstat_diff BEFORE AFTER: the counters that changed, "KEY+N ..."
mig_nstat_diff() {
	printf '%s\n%s\n' "$1" "$2" | awk '
		NR == 1 { for (i = 1; i <= NF; i++) { split($i, kv, "="); b[kv[1]] = kv[2] } next }
		{ for (i = 1; i <= NF; i++) { split($i, kv, "=")
			d = kv[2] - b[kv[1]]; if (d) printf "%s+%d ", kv[1], d } }'
}

# mig_trace_start NS FILE FILTER: every 100 ms, "@MS" and the "ss -tinmH"
# lines of the sockets matching FILTER in NS (each socket on one line,
# starting with its state), appended to
# FILE, until mig_trace_stop. Sets MIG_TRACE_PID
mig_trace_start() {
	rm -f "$2.stop"
	ip netns exec "$1" sh -c '
		while [ ! -e "$1.stop" ]; do
			echo "@$(($(date +%s%N) / 1000000))"
			ss -tinmH "$2" | awk "
				/^[^ \t]/ { if (l != \"\") print l; l = \$0; next }
				{ l = l \" \" \$0 }
				END { if (l != \"\") print l }" | tr -s " \t" "  "
			sleep 0.1
		done' - "$2" "$3" >>"$2" 2>/dev/null &
	MIG_TRACE_PID=$!
	track "$MIG_TRACE_PID"
}

# mig_trace_stop FILE: end the sampler writing FILE
mig_trace_stop() {
	touch "$1.stop"
	bg_wait "$MIG_TRACE_PID" 5 || kill "$MIG_TRACE_PID" 2>/dev/null || :
}

# mig_trace_moved FILE KEY SINCE: for each socket (local and peer address)
# sampled in FILE, the time in ms from SINCE (epoch ms) to the first sample
# at which its KEY (bytes_acked, bytes_received ...) is above its value in
# the last sample at or before SINCE (0 if none: a socket restored later);
# "-1" if it never is. One line per socket: "LOCAL PEER MS"
mig_trace_moved() {
	awk -v k="$2" -v since="$3" '
		/^@/ { t = substr($1, 2) + 0; next }
		/^ESTAB/ {
			id = $4 " " $5; v = 0
			for (i = 6; i <= NF; i++)
				if (index($i, k ":") == 1)
					v = substr($i, length(k) + 2) + 0
			if (!(id in seen)) { seen[id] = 1; order[++n] = id; base[id] = 0 }
			if (t <= since) { base[id] = v; next }
			if (!(id in moved) && v > base[id]) moved[id] = t - since
		}
		END {
			for (i = 1; i <= n; i++)
				print order[i], (order[i] in moved) ? moved[order[i]] : -1
		}' "$1"
}

# mig_trace_wait FILE KEY SINCE N TIMEOUT: wait up to TIMEOUT seconds
# until N sockets of FILE have moved (mig_trace_moved); 1 if not
mig_trace_wait() {
	wait_for "[ \$(mig_trace_moved '$1' '$2' '$3' | awk '\$3 >= 0' |
		  wc -l) -ge $4 ]" "$5"
}

# ---- the streams' progress watchdog (issue 54) ----
#
# A stream through a migration pauses for the cut-over (the device
# stopped, the state moved, the fabric switched W ms after the target
# started: a second or two on a loaded machine, where the switch itself
# comes late) and for nothing else. mig_watch doesn't count the cut-over
# (mig_migrate_switch, until the switch) and fails the test when a stream
# gets nothing for MIG_STALL_MS otherwise (default 3000: after a switch,
# the sender's retransmission timer, backed off during the cut-over, may
# take a while), and says where it stopped.

MIG_STALL_MS=${MIG_STALL_MS:-3000}
MIG_T0=$(now_ms)

# mig_guest_daemon PID LOG: the daemon that runs the guest from now on
# (mig_stalled has it log its connections)
mig_guest_daemon() {
	echo "$1 $2" >"$T/guest.daemon.tmp"
	mv "$T/guest.daemon.tmp" "$T/guest.daemon"
}

# mig_stalled WHAT: where the streams stand when they stopped (WHAT says
# when), into $T/stall.log: the guest's, the pods' and the fabric's
# sockets (ss -tinm), and the daemon that runs the guest (mig_guest_daemon)
# logs its connections (SIGUSR1: at debug level, MIG_DAEMON_OPTS=--debug,
# each one's window and flight)
mig_stalled() {
	{
		echo "==== streams stopped ($1) at $(date +%T.%N)"
		for _sn in "$GUEST" "$SRC" "$DST" "$FABRIC"; do
			echo "== ss -tinm in $_sn"
			ip netns exec "$_sn" ss -tinm
		done
		# A sender's retransmission waits while its first copy is
		# still queued in the host (a neighbour still resolving)
		echo "== neighbours and retransmission counters in $FABRIC"
		ip -n "$FABRIC" -s neigh show
		ip netns exec "$FABRIC" nstat -az \
			TcpExtTCPSpuriousRtxHostQueues TcpExtTCPTimeouts \
			TcpExtTCPLossProbes
	} >>"$T/stall.log" 2>&1
	[ -s "$T/guest.daemon" ] || return 0
	read -r _gp _gl <"$T/guest.daemon"
	_sz=$(stat -c %s "$_gl")
	kill_own USR1 "$_gp"
	wait_for "[ \$(stat -c %s '$_gl') -gt $_sz ]" 5 || :
}

# mig_sender_sock NAME: what the sending socket of stream NAME waits for
# (the guest's for an upload, the peer's for a download)
mig_sender_sock() {
	eval "_gsp=\$PORT_$1"
	if [ "$(mig_tx "$1")" = c ]; then
		ip netns exec "$GUEST" ss -tin "dport = :$_gsp"
	else
		ip netns exec "$FABRIC" ss -tin "sport = :$_gsp"
	fi 2>/dev/null |
		grep -oE '(rto|backoff|unacked|lost|snd_wnd|notsent|lastsnd|lastack):[0-9.]+' |
		tr '\n' ' '
}

# mig_watch NAME...: in the background, until they end (or mig_watch_stop),
# how much of each stream its receiver has, every 100 ms. Each one's
# longest pause goes to $T/pause.NAME ("MS AT_MS", AT_MS from the test's
# start), every pause of a second or more to $T/pauses.log, a cut-over
# (mig_migrate_switch) not counted; a pause over MIG_STALL_MS is recorded
# (mig_stalled), described in $T/stall.msg, and the test fails with it
# (SIGUSR2 to its shell, trapped here). Sets MIG_WATCH_PID
mig_watch() {
	trap 'fail "a stream stopped: $(cat "$T/stall.msg")"' USR2
	mig_watch_run "$$" "$@" &
	MIG_WATCH_PID=$!
	track "$MIG_WATCH_PID"
}

# mig_watch_stop: the watchdog ends (the streams it watched may stop now)
mig_watch_stop() {
	kill_own TERM "$MIG_WATCH_PID"
	bg_wait "$MIG_WATCH_PID" 5 || :
}

# mig_watch_run SHELL NAME...: mig_watch's loop; SHELL is the test's
mig_watch_run() {
	local n l r e now p sh=$1
	local -A rx since longest side
	shift
	for n in "$@"; do
		side[$n]=$(mig_rx "$n")
	done
	while :; do
		now=$(($(date +%s%N) / 1000000))
		e=0
		for n in "$@"; do
			# A cut-over: a pause, if any, starts when it ends
			[ ! -e "$T/cutover" ] || [ -z "${since[$n]:-}" ] ||
				since[$n]=$now
			l=
			read -r l <"$T/$n.${side[$n]}.prog" 2>/dev/null || :
			case $l in
			*end=running*) ;;
			'') e=1; continue ;;	# not yet started
			*) continue ;;		# ended
			esac
			e=1
			r=${l#rx=}
			r=${r%% *}
			if [ "$r" != "${rx[$n]:-}" ]; then
				p=$((now - ${since[$n]:-$now}))
				[ "$p" -lt 1000 ] ||
					echo "$n: $p ms from $((since[$n] - MIG_T0)) ms" >>"$T/pauses.log"
				rx[$n]=$r since[$n]=$now
				continue
			fi
			p=$((now - since[$n]))
			if [ "$p" -gt "${longest[$n]:-0}" ]; then
				longest[$n]=$p
				echo "$p $((since[$n] - MIG_T0))" >"$T/pause.$n"
			fi
			[ "$p" -gt "$MIG_STALL_MS" ] || continue
			mig_stalled "$n got nothing for $p ms"
			echo "$n got nothing for $p ms, from $((since[$n] - MIG_T0)) ms on, at rx=$r; sender: $(cat "$T/$n.$(mig_tx "$n").prog"), its socket: $(mig_sender_sock "$n"); stall.log: where it stands" >"$T/stall.msg"
			kill -USR2 "$sh"
			return
		done
		[ "$e" = 1 ] || return 0
		sleep 0.1
	done
}

# mig_pauses NAME...: each stream's longest pause so far
mig_pauses() {
	for _pn in "$@"; do
		# No file: it never paused for a whole sample (100 ms)
		{ read -r _pm _pa <"$T/pause.$_pn"; } 2>/dev/null ||
			_pm=0 _pa=-
		printf ' %s %s ms (at %s ms)' "$_pn" "$_pm" "$_pa"
	done
}

# ---- uploads held while the guest runs here (issue 51) ----
#
# A failed or stalled migration step holds connections whose repair helper
# is late, while the guest runs on that side: what the guest sends them is
# kept and ACKed (tcp/kept.c), so when the helper answers they move at
# once, not after the guest's backed-off retransmission timer.

MIG_HOLD_MS=${MIG_HOLD_MS:-8000}	# the longest hold (the helper's 10 s)
MIG_MOVE_MS=2000			# to move again, after the helper
MIG_MOVE_BYTES=$((1024 * 1024))		# more than our queues could hold

# mig_held_backoff LO HI: the largest retransmission backoff of the guest's
# connections to the peer's ports LO to HI
mig_held_backoff() {
	ns "$GUEST" ss -tinH "( dport >= :$1 and dport <= :$2 )" |
		grep -oE 'backoff:[0-9]+' | cut -d: -f2 | sort -n | tail -n 1
}

# mig_held_release STEP GO T0 LO HI NAME...: uploads NAME (to the peer's
# ports LO to HI) held since T0 (ms): their peers get nothing until the
# guest's fourth retransmission timeout, or MIG_HOLD_MS after T0; then GO
# is created (the stalled helper goes on), and each peer's progress is
# polled for 30 s. Sets MIG_HELD_LEFT (those that didn't get
# MIG_MOVE_BYTES more) and MIG_HELD_REPORT (when each did, from GO), and
# logs them; mig_held_check asserts
mig_held_release() {
	local _st=$1 _go=$2 _t0=$3 _lo=$4 _hi=$5 _n _r0 _still _back _bo
	shift 5
	MIG_HELD_NAMES=$*
	for _n in "$@"; do
		eval "_held_rx_$_n=\$(mig_prog $_n l rx)"
	done
	wait_for "[ \"\$(mig_held_backoff $_lo $_hi)\" -ge 4 ] 2>/dev/null ||
		  [ \$(now_ms) -ge $((_t0 + MIG_HOLD_MS)) ]" \
		$((MIG_HOLD_MS / 1000 + 5))
	_bo=$(mig_held_backoff "$_lo" "$_hi")
	for _n in "$@"; do
		eval "[ \"\$(mig_prog $_n l rx)\" = \"\$_held_rx_$_n\" ]" ||
			fail "$_st: $_n moved while held"
	done
	_back=$(now_ms)
	touch "$_go"
	MIG_HELD_LEFT=$*
	while [ -n "$MIG_HELD_LEFT" ] &&
	      [ "$(now_ms)" -lt $((_back + 30000)) ]; do
		_still=
		for _n in $MIG_HELD_LEFT; do
			eval "_r0=\$_held_rx_$_n"
			if [ "$(mig_prog "$_n" l rx)" -ge \
			     $((_r0 + MIG_MOVE_BYTES)) ]; then
				eval "_held_ms_$_n=$(($(now_ms) - _back))"
			else
				_still="$_still $_n"
			fi
		done
		MIG_HELD_LEFT=$_still
		[ -z "$MIG_HELD_LEFT" ] || sleep 0.05
	done
	MIG_HELD_REPORT=
	for _n in "$@"; do
		eval "MIG_HELD_REPORT=\"\$MIG_HELD_REPORT $_n:\${_held_ms_$_n:-never} ms\""
	done
	log "$_st: the helper went on $((_back - _t0)) ms after the hold began, the guest's backoff at ${_bo:-0}; moved again after:$MIG_HELD_REPORT; the guest's sockets: $(ns "$GUEST" ss -tinH "( dport >= :$_lo and dport <= :$_hi )" | grep -oE '(rto|backoff|unacked):[0-9.]+' | tr '\n' ' ')"
}

# mig_held_check STEP: every upload of mig_held_release moved again, each
# within MIG_MOVE_MS of the helper's return
mig_held_check() {
	local _n _ms
	[ -z "$MIG_HELD_LEFT" ] || fail "$1: never moved again:$MIG_HELD_LEFT"
	for _n in $MIG_HELD_NAMES; do
		eval "_ms=\$_held_ms_$_n"
		[ "$_ms" -lt "$MIG_MOVE_MS" ] ||
			fail "$1: $_n moved again $_ms ms after the helper's return (at most $MIG_MOVE_MS):$MIG_HELD_REPORT"
	done
}
