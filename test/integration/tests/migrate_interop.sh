#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_interop.sh - live migration between the REAL upstream passt
# (Debian 13's 0.0~git20250503, test/upstream/fetch.sh) and our daemon,
# both ways, in the migrate-lib.sh topology (guest kernel behind vu-front,
# SRC and DST pods with the same addresses, peer on the FABRIC):
#
#   migration 1: upstream passt in SRC (source) -> ours in DST (target)
#   migration 2: ours in DST (source) -> a fresh upstream passt in SRC
#
# Repair helpers, crossed each way: in migration 1 our passt-repair
# serves upstream's passt (the source: socket mode) and upstream's
# passt-repair serves ours (the target: directory mode, which our daemon
# takes from root only, or its own user); in migration 2 ours serves both,
# our daemon as the source and upstream's as the target, in directory
# mode (where ours takes only sockets of root or of the directory's
# owner: upstream's, started as root, are root's). Every helper must be
# taken: no "Repair helper refused" in our daemon's log, no "skipping"
# from ours.
#
# Streams (sockio pattern-*, every byte checked against its offset):
#   - four long ones over both migrations: peer -> guest and guest ->
#     peer, IPv4 and IPv6;
#   - before each migration, four half-closed ones, which are in FIN
#     states at the dump and finish after it:
#       gf: the guest sent 3000 bytes and FIN (FIN_WAIT2 at the source),
#           the peer keeps streaming to the guest;
#       pf: the peer sent 3000 bytes and FIN (CLOSE_WAIT at the source),
#           the guest keeps streaming to the peer;
#       gq: the guest sent 8000 bytes and FIN, the peer doesn't read
#           (4 KiB receive buffer): FIN_WAIT1 with data never sent;
#       pq: the peer sent 20000 bytes and FIN, the guest doesn't read: the
#           source's socket in CLOSE_WAIT with data in its receive queue.
# Everything must arrive byte-exact, each connection must end with both
# EOFs (no reset), and no RST may leave either pod; the four long ones
# never get nothing for more than MIG_STALL_MS (3 s) outside the
# cut-over of migration 1, whose target is ours (mig_watch: the test fails
# at once, with where they stopped). down4 once paused for 3.0 s there in
# about three whole-suite runs of seven: the peer's segments sent between
# the old pod's link going down and the switch waited in the fabric's
# neighbour queue for that link until its resolution failed, 3 s, and the
# peer's kernel doesn't retransmit a segment still queued in the host; the
# fabric now keeps the pod's MAC address while it is cut off
# (mig_pod_link). Not through migration 2: upstream's
# target doesn't poke the peers of the sockets it restores, and one whose
# last flight the cut-over lost waits for its first timeout, 3 s without
# an RTT sample (tcp/migrate_poke.c): up6 got nothing for 3.0 s after it
# once, under ASan on a loaded machine. The 15 s that each stream has to
# move after each migration (round) cover that.
#
# Why the old pod is cut off the fabric (mig_pod_link src down) when
# migration 1 starts: upstream's source exits as soon as CHECK_DEVICE_STATE
# confirms the migration (this release has no linger), and its sockets go
# with it. Until the fabric switches, the peer's segments still reach the
# SRC pod, where no socket is left, and its kernel answers each one with a
# RST that tears down the connection the target has just restored. With
# the pod's link down they are dropped silently, as a lingering source
# that holds its sockets silently would. Ours lingers, so migration 2
# needs no such help.
#
# The FIN sequence accounting of both is compared with what the kernel
# put on the wire: the state streams are kept (vu-front --state-save),
# the fabric is captured (tcpdump -S), and for the FIN flows the stream's
# seq_snd / seq_rcv + rcvq are printed next to the FIN's sequence number.
# Upstream's convention (queues: data bytes only; seq_snd = snd_una, one
# past our FIN in FIN_WAIT2; seq_rcv + rcvq = rcv_nxt, one past the
# peer's FIN in CLOSE_WAIT; a FIN not ACKed yet right after sndq bytes)
# must hold for our stream (migration 2), and is reported for upstream's.
#
# MIG_INTEROP_OTHER=DIR takes passt and passt-repair from DIR instead of
# upstream's (DIR = our build directory: a control run, ours both ways).
#
# SKIP (77) only if test/upstream/fetch.sh can't get the package. About
# three minutes:
# PT_TIMEOUT: 400
#
# Three defects of upstream's release show up here, none of them ours to
# fix (doc/migration.md, section 9), and are accepted with exactly their
# symptoms, named in the log (known_defect()):
#   - gq1, upstream as source, FIN_WAIT1: its seq_snd is one past snd_una,
#     so the restored socket ignores the peer's ACKs: the peer gets what
#     was sent before the migration and no more, nobody ends;
#   - pq16, upstream as source, CLOSE_WAIT with unread data: its rcvq lacks
#     the last byte (it takes the peer's FIN off SIOCINQ, which never
#     counts it): the guest gets a clean EOF one byte short;
#   - pq26, upstream as target, CLOSE_WAIT with data the guest hasn't
#     read: it sends the guest its FIN only on end-of-file from the socket,
#     which a restored socket never gives: all data, no EOF.
# Anything else that isn't byte-exact with both EOFs fails, and so do RSTs
# from either pod (the old pod's only in migration 2, see above).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"

# Upstream's binaries (cached after the first fetch)
if [ -n "${MIG_INTEROP_OTHER:-}" ]; then
	UP=$MIG_INTEROP_OTHER
	[ -x "$UP/passt" ] || fail "no passt in MIG_INTEROP_OTHER=$UP"
else
	need_upstream passt
fi

# Our helper: next to the daemon, else the plain build's (ASan runs)
OUR_REPAIR=$(dirname "$PASST")/passt-repair
[ -x "$OUR_REPAIR" ] || OUR_REPAIR=$TOP/build/passt-repair
[ -x "$OUR_REPAIR" ] ||
	fail "no passt-repair of ours next to $PASST nor in $TOP/build"

export PASST_SRC=$UP/passt PASST_DST=$PASST
export PASST_REPAIR_SRC=$OUR_REPAIR PASST_REPAIR_DST=$UP/passt-repair
MIG_VU_OPTS="--state-save $T/state-%d.bin"
# shellcheck source=migrate-lib.sh
# Helpers always: upstream's daemon knows no other way to TCP_REPAIR once it
# runs as nobody ("--repair-path none" makes it migrate no connections).
# Where the kernel refuses our daemon the drop filter, our helper attaches
# it; upstream's doesn't, so ours holds unfiltered when upstream's helper
# serves it (migration 2, see below)
MIG_DIRECT=0
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tcpdump od

RATE=128

# hc NAME KIND PORT: a half-closed connection between the peer (listens)
# and the guest (connects). KIND gf|pf|gq|pq as above
hc() {
	_n=$1 _k=$2 _p=$3
	_lo="--send --rate $RATE" _co="--send --bytes 3000"
	case $_k in
	pf) _lo="--send --bytes 3000" _co="--send --rate $RATE" ;;
	gq) _lo="--pause-rx --rcvbuf 4096" _co="--send --bytes 8000" ;;
	pq) _lo="--send --bytes 20000" _co="--pause-rx --rcvbuf 4096" ;;
	esac
	case $_n in
	*6) _a=$PEER6 ;;
	*) _a=$PEER4 ;;
	esac
	rm -f "$T/$_n.ready" "$T/$_n.stop"
	# shellcheck disable=SC2086
	bg "$FABRIC" "$_n.l" /dev/null /dev/null "$SOCKIO" -t 120 --report \
		--ready "$T/$_n.ready" --progress "$T/$_n.l.prog" \
		--stop-file "$T/$_n.stop" $_lo pattern-listen "$_a" "$_p"
	eval "SL_$_n=$BG_PID"
	wait_ready "$T/$_n.ready"
	# shellcheck disable=SC2086
	bg "$GUEST" "$_n.c" /dev/null /dev/null "$SOCKIO" -t 120 --report \
		--progress "$T/$_n.c.prog" --stop-file "$T/$_n.stop" \
		$_co pattern-connect "$_a" "$_p"
	eval "SC_$_n=$BG_PID PORT_$_n=$_p"
}

# hc_state NS PORT STATE: the pod's socket to the peer's PORT is in STATE
hc_state() {
	ns "$1" ss -tnH state "$3" "( dport = :$2 )" | grep -q .
}

# hc_ready NS NAME STATE: wait for the source pod's socket of NAME
hc_ready() {
	eval "_p=\$PORT_$2"
	wait_for "hc_state $1 $_p $3" 15 ||
		fail "$2: no $3 socket in $1: $(ns "$1" ss -tnH "( dport = :$_p )")"
}

# verify NAME...: stop, wait, and check every direction of each stream
verify() {
	for _v in "$@"; do
		touch "$T/$_v.stop"
	done
	for _v in "$@"; do
		eval "_l=\$SL_$_v _c=\$SC_$_v"
		bg_wait "$_l" 10 || :
		_sl=$BG_ST
		bg_wait "$_c" 10 || :
		_sc=$BG_ST
		_ltx=$(mig_prog "$_v" l tx) _lrx=$(mig_prog "$_v" l rx)
		_ctx=$(mig_prog "$_v" c tx) _crx=$(mig_prog "$_v" c rx)
		summary="$summary
$_v: peer->guest $_ltx/$_crx guest->peer $_ctx/$_lrx end peer=$(mig_prog "$_v" l end) guest=$(mig_prog "$_v" c end) status=$_sl/$_sc"
		if [ "$_sl" != 0 ] || [ "$_sc" != 0 ] ||
		   [ "$_ltx" != "$_crx" ] || [ "$_ctx" != "$_lrx" ] ||
		   [ $((_ltx + _ctx)) -eq 0 ]; then
			if known_defect "$_v"; then
				summary="$summary (known upstream defect: $KNOWN)"
			else
				bad="$bad $_v"
				log "$_v: $(cat "$T/$_v".*.err | tr '\n' ' ')"
			fi
		fi
	done
}

# known_defect NAME: true if stream NAME failed exactly as one of upstream's
# defects listed at the top makes it fail (verify()'s variables); KNOWN
# names it
known_defect() {
	case $1 in
	gq1)
		KNOWN="FIN_WAIT1 seq_snd one past snd_una (upstream source)"
		[ "$_ctx" = 8000 ] && [ "$_lrx" -lt 8000 ] &&
			[ "$_sl" = timeout ] && [ "$_sc" = timeout ]
		;;
	pq16)
		KNOWN="CLOSE_WAIT rcvq one byte short (upstream source)"
		[ "$_ltx" = 20000 ] && [ "$_crx" = 19999 ] &&
			[ "$_sl" = 0 ] && [ "$_sc" = 0 ]
		;;
	pq26)
		KNOWN="CLOSE_WAIT without FIN to the guest (upstream target)"
		[ "$_ltx" = 20000 ] && [ "$_crx" = 20000 ] &&
			[ "$_sl" = timeout ] && [ "$_sc" = timeout ]
		;;
	*) return 1 ;;
	esac
}

# ---- reading the state streams (no tools beyond od) ----

# u32 FILE OFF: big-endian 32-bit unsigned at OFF
u32() {
	od -An -tu1 -j "$2" -N 4 "$1" |
		awk '{ printf "%.0f\n", (($1 * 256 + $2) * 256 + $3) * 256 + $4 }'
}

# u8 FILE OFF
u8() {
	od -An -tu1 -j "$2" -N 1 "$1" | tr -d ' '
}

# le16 FILE OFF: little-endian 16-bit (the flowside ports)
le16() {
	od -An -tu1 -j "$2" -N 2 "$1" | awk '{ print $1 + $2 * 256 }'
}

# ext FILE PORT: "seq_snd seq_rcv sndq notsent rcvq state" of the flow
# whose HOST side's remote port is PORT
ext() {
	_f=$1
	_cnt=$(u32 "$_f" 58)
	_o=$((62 + _cnt * 112))
	_i=0
	while [ "$_i" -lt "$_cnt" ]; do
		_b=$((62 + _i * 112))
		_h=38
		[ "$(u8 "$_f" "$_b")" = 1 ] && _h=2
		_rp=$(le16 "$_f" $((_b + _h + 34)))
		_ss=$(u32 "$_f" "$_o") _sr=$(u32 "$_f" $((_o + 4)))
		_sq=$(u32 "$_f" $((_o + 8))) _ns=$(u32 "$_f" $((_o + 12)))
		_rq=$(u32 "$_f" $((_o + 16))) _st=$(u8 "$_f" $((_o + 50)))
		if [ "$_rp" = "$2" ]; then
			echo "$_ss $_sr $_sq $_ns $_rq $_st"
			return 0
		fi
		_o=$((_o + 52 + _sq + _rq))
		_i=$((_i + 1))
	done
	return 1
}

# fin_seq DIR PORT: sequence number of the first FIN on the wire from the
# pod (DIR out) or from the peer (DIR in) on connection PORT
fin_seq() {
	if [ "$1" = out ]; then
		_m="IP6\\? [0-9a-f.:]*\\.[0-9]* > [0-9a-f.:]*\\.$2: Flags \\[F"
	else
		_m="IP6\\? [0-9a-f.:]*\\.$2 > [0-9a-f.:]*: Flags \\[F"
	fi
	# "seq A:B" (data, then the FIN at B) or "seq A" (the FIN alone)
	mig_cap_text fabric | grep -m 1 "$_m" |
		sed -n 's/.* seq \([0-9]*:\)\{0,1\}\([0-9]*\).*/\2/p'
}

# fin_report MIG NAME: the stream's numbers for NAME's connection next to
# the FINs the kernel sent; "fin_ok" tells whether they are kernel-exact
fin_report() {
	eval "_p=\$PORT_$2"
	set -- "$1" "$2" $(ext "$T/state-$1.bin" "$_p" || echo '- - - - - -')
	_m=$1 _n=$2 _ss=$3 _sr=$4 _sq=$5 _ns=$6 _rq=$7 _st=$8
	_fo=$(fin_seq out "$_p") _fi=$(fin_seq in "$_p")
	fin_ok=1
	case $_n in
	gf*) [ "$_ss" = $(((_fo + 1) % 4294967296)) ] || fin_ok=0 ;;
	gq*) [ "$_fo" = "" ] || [ $(((_ss + _sq) % 4294967296)) = "$_fo" ] ||
		fin_ok=0 ;;
	pf* | pq*) [ $(((_sr + _rq) % 4294967296)) = \
		     $(((_fi + 1) % 4294967296)) ] || fin_ok=0 ;;
	esac
	summary="$summary
migration $_m $_n: state=$_st seq_snd=$_ss sndq=$_sq notsent=$_ns seq_rcv=$_sr rcvq=$_rq | wire: our FIN ${_fo:-none} peer FIN ${_fi:-none} | as-upstream=$fin_ok"
}

# ---- the run ----

mig_setup
mig_cap_start "$FABRIC" any fabric
gen=0
pod() { # pod POD ROLE: D_SOCK, D_PID
	gen=$((gen + 1))
	_d=$T/$1$gen
	mig_pod_dir "$_d"
	D_SOCK=$_d/passt.socket
	[ "$2" != target ] || mig_repair_start "$(mig_ns "$1")" "$_d"
	mig_daemon_start "$(mig_ns "$1")" "$D_SOCK"
	D_PID=$MIG_DPID
	[ "$2" != target ] ||
		wait_for "mig_repair_connected $(mig_ns "$1") $D_SOCK" 10 ||
		fail "$1: repair helper (directory mode) not connected"
}
helper() { # helper POD SOCK: a helper connected to SOCK.repair
	mig_repair_connected "$(mig_ns "$1")" "$2" && return 0
	mig_repair_start "$(mig_ns "$1")" "$2.repair"
	wait_for "mig_repair_connected $(mig_ns "$1") $2" 10 ||
		fail "$1: repair helper not connected to $2.repair"
}

pod src source
up_sock=$D_SOCK up_pid=$D_PID
MIG_SOCK=$up_sock
guest_up
helper src "$up_sock"

summary= bad=
port=5000
for s in down4 up4 down6 up6; do
	port=$((port + 1))
	mig_stream "$s" "$s" "$port" --rate "$RATE"
done
for s in down4 up4 down6 up6; do
	mig_flowing "$s" 16384 10 || fail "stream $s does not flow"
done
# They never stop for long but for the cut-over, as long as ours runs the
# guest (see the top; not the daemons' debug logs on a stall: upstream's
# would take SIGUSR1 for the end)
mig_watch down4 up4 down6 up6

# round N SRC_POD SRC_SOCK TO_POD: half-closed flows, migrate, finish them
round() {
	_r=$1 _from=$2 _fsock=$3 _to=$4
	_fns=$(mig_ns "$_from")
	hc "gf$_r" gf $((5100 + _r * 10 + 1))
	hc "pf$_r" pf $((5100 + _r * 10 + 2))
	hc "gq$_r" gq $((5100 + _r * 10 + 3))
	hc "pq${_r}6" pq $((5100 + _r * 10 + 4))
	hc_ready "$_fns" "gf$_r" fin-wait-2
	hc_ready "$_fns" "pf$_r" close-wait
	hc_ready "$_fns" "gq$_r" fin-wait-1
	hc_ready "$_fns" "pq${_r}6" close-wait
	eval "_pq=\$PORT_pq${_r}6"
	wait_for "[ \$(ns $_fns ss -tnH state close-wait '( dport = :$_pq )' | awk '{ print \$1 }') -gt 0 ]" 10 ||
		fail "pq$_r: nothing queued: $(ns "$_fns" ss -tnH "( dport = :$_pq )")"
	ss_dump "before migration $_r"

	pod "$_to" target
	to_sock=$D_SOCK to_pid=$D_PID
	helper "$_from" "$_fsock"
	rst_old=$(mig_rsts "$_fns") rst_new=$(mig_rsts "$(mig_ns "$_to")")
	[ "$_from" != src ] || mig_pod_link src down
	mig_migrate_switch "$to_sock" "$_to" 0 ||
		fail "migration $_r ($_from -> $_to): $MIG_RESULT"
	# The half-closed ones first: upstream resets a connection whose
	# guest keeps its window closed for about 15 s (its ACK timeouts),
	# migration or not, and pq's guest reads nothing until it's verified
	verify "gf$_r" "pf$_r" "gq$_r" "pq${_r}6"
	for s in down4 up4 down6 up6; do
		mig_flowing "$s" 16384 15 ||
			bad="$bad $s(stalled after migration $_r)"
	done
	rst_old=$(($(mig_rsts "$_fns") - rst_old))
	rst_new=$(($(mig_rsts "$(mig_ns "$_to")") - rst_new))
	summary="$summary
migration $_r: $MIG_RESULT; RSTs from the old pod $rst_old, from the new $rst_new"
	[ "$rst_new" -eq 0 ] || bad="$bad rst-new-$_r"
	[ "$_from" = src ] || [ "$rst_old" -eq 0 ] || bad="$bad rst-old-$_r"
}

# 1: upstream (with our helper) -> ours (with upstream's helper)
round 1 src "$up_sock" dst
mig_watch_stop
log "longest pauses through migration 1:$(mig_pauses down4 up4 down6 up6)"
our_sock=$to_sock our_pid=$to_pid
mig_daemon_stop "$up_pid"
mig_pod_link src up

# 2: ours (with ours) -> upstream (with ours, directory mode)
# Our daemon gets our helper for its migration as source: upstream's, still
# connected from migration 1, doesn't attach the drop filter (see
# doc/migration.md; migrate_upstream_helper covers that pairing)
PASST_REPAIR_DST=$OUR_REPAIR PASST_REPAIR_SRC=$OUR_REPAIR
pkill -f "^$UP/passt-repair $T/dst" || :
wait_for "! mig_repair_connected $DST $our_sock" 10 ||
	fail "upstream's helper is still connected to our daemon"
round 2 dst "$our_sock" src
mig_daemon_stop "$our_pid"

# Every helper taken, by either side
! grep -h "Repair helper refused" "$T"/*/passt.socket.err ||
	bad="$bad helper-refused"
! grep -h "skipping" "$T"/repair-*.err || bad="$bad helper-skipped"
verify down4 up4 down6 up6
mig_cap_stop "$CAP_PID"
for r in 1 2; do
	for n in "gf$r" "pf$r" "gq$r" "pq${r}6"; do
		fin_report "$r" "$n"
		# Ours (the source of migration 2) must be kernel-exact
		[ "$r" = 1 ] || [ "$fin_ok" = 1 ] || bad="$bad fin-accounting-$n"
	done
done
log "upstream: $UP/passt, ours: $PASST, helpers: $OUR_REPAIR, $UP/passt-repair$summary"
[ -z "$bad" ] || fail "problems:$bad"
