#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# repair_helper.sh - passt-repair against repairsrv, our stand-in for the
# daemon's side: TCP_REPAIR on, off and off-without-probe for 600 sockets
# in batches of 1 and 253; directory mode with the helper started before
# the socket exists and with the socket already there; bad requests (an
# unknown command, no descriptors) end the helper with an error, and so
# does a descriptor that isn't a TCP socket (UDP, UNIX, a pipe), before
# anything is done to any socket of the request (TCP, UDP, TCP: neither
# TCP socket gets repair mode or the drop filter); the drop filter goes on
# deaf sockets only (IP_MINTTL 255), drops what reaches them, is the
# helper's one eBPF program when it could load it, and goes at "off"
# (repairsrv -m filter); a close or a reset from
# the server ends it with status 0; without CAP_NET_ADMIN it fails with
# EPERM; a running helper has no_new_privs, a seccomp filter, and
# CAP_NET_ADMIN only once connected (CAP_DAC_OVERRIDE too before that, to
# reach a socket of another user's: "foreign"); sun_path overflows are refused for a socket path,
# and don't apply to directory mode (it connects through /proc/self/fd).
#
# Directory mode takes only sockets owned by root or by the directory's
# owner, and no symbolic links: in a root's directory open to all, a
# socket of uid 4242's and a link to a live root socket elsewhere are
# skipped (said on stderr, the wait goes on, neither server sees a
# connection), then a root socket is taken; in uid 4242's directory,
# 4242's socket is taken and uid 5555's never. An explicit socket path
# passes the same owner test, for what it leads to, or has a root
# listener: 4242's server in root's open directory is refused (status 1,
# before any request is read), directly or through a link; 4242's server in
# 4242's directory is taken through a link from root's, and so is a root
# server whose socket file is nobody's (a daemon started as root).
#
# The helper is $REPAIR (default: passt-repair next to $PASST, else in
# build/: "make" builds it, "make asan" does not).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"

# Neither the daemon nor tapbridge is needed here: root and netns only
[ "$(id -u)" -eq 0 ] || skip "not root"
ip netns add "$HOST" 2>/dev/null || skip "ip netns does not work"
ip -n "$HOST" link set lo up

REPAIR=${REPAIR:-$(dirname "$PASST")/passt-repair}
[ -x "$REPAIR" ] || REPAIR=$TOP/build/passt-repair
[ -x "$REPAIR" ] || fail "no passt-repair next to $PASST or in build/ (make)"
SRV=$TOOLS/repairsrv
[ -x "$SRV" ] || fail "no repairsrv in $TOOLS"
log "helper: $REPAIR"

# Reachable for the unprivileged case too: search on $T, all on $S
S=$T/s
mkdir -m 0777 "$S"
chmod 0711 "$T"

# srv_start NAME [OPTION...] PATH: repairsrv in HOST, wait for it to listen
# (through the command SRV_AS, if set: as another user)
srv_start() {
	_name=$1
	shift
	# shellcheck disable=SC2086
	ip netns exec "$HOST" ${SRV_AS:-} "$SRV" -t 20 "$@" \
		2>"$T/$_name.srv.err" &
	SRV_PID=$!
	track "$SRV_PID"
	wait_for "grep -q 'repairsrv: listening' '$T/$_name.srv.err' ||
		  ! alive $SRV_PID" 10 || fail "$_name: repairsrv did not start"
}

# srv_wait_ok NAME: repairsrv must exit 0, i.e. the helper behaved
srv_wait_ok() {
	bg_wait "$SRV_PID" 30 || fail "$1: repairsrv still running"
	sanitizer_check "$T/$1.srv.err"
	[ "$BG_ST" -eq 0 ] ||
		fail "$1: repairsrv status $BG_ST: $(tail -n 3 "$T/$1.srv.err")"
}

# helper_run NAME ARG...: run the helper in the foreground; status to
# HELPER_ST, stderr in $T/NAME.err
helper_run() {
	_name=$1
	shift
	HELPER_ST=0
	timeout 30 "$REPAIR" "$@" 2>"$T/$_name.err" || HELPER_ST=$?
	[ "$HELPER_ST" -ne 124 ] || fail "$_name: helper timed out"
}

# expect_error NAME PATTERN: the helper failed, saying PATTERN
expect_error() {
	[ "$HELPER_ST" -ne 0 ] || fail "$1: helper exited 0"
	[ "$HELPER_ST" -lt 128 ] ||
		fail "$1: helper killed by signal $((HELPER_ST - 128))"
	grep -q "^passt-repair: .*$2" "$T/$1.err" ||
		fail "$1: no '$2' in: $(cat "$T/$1.err")"
	log "$1: helper status $HELPER_ST: $(cat "$T/$1.err")"
}

# expect_ok NAME: the helper exited 0 and said nothing
expect_ok() {
	expect "$1: helper status" "$HELPER_ST" 0
	[ ! -s "$T/$1.err" ] || fail "$1: helper said: $(cat "$T/$1.err")"
}

# status_field PID FIELD: a value from /proc/PID/status
status_field() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"
}

# ---- command line
"$REPAIR" --version | grep -q '^passt-repair ' || fail "--version"
"$REPAIR" --help | grep -q 'Usage: passt-repair PATH' || fail "--help"
helper_run noarg
[ "$HELPER_ST" -ne 0 ] || fail "no argument: status 0"
grep -q 'Usage:' "$T/noarg.err" || fail "no argument: no usage message"
helper_run twoargs "$S/a" "$S/b"
[ "$HELPER_ST" -ne 0 ] || fail "two arguments: status 0"
helper_run missing "$S/nothing.repair"
expect_error missing "No such file or directory"

# ---- socket mode: 600 sockets, 4 commands, batches of 1, 253, 253, 93
srv_start cycle "$S/c.repair"
helper_run cycle "$S/c.repair"
srv_wait_ok cycle
expect_ok cycle
grep -q 'command -1: 600 sockets, 4 batches, ok' "$T/cycle.srv.err" ||
	fail "cycle: $(cat "$T/cycle.srv.err")"

# ---- the drop-all filter: on deaf sockets only (IP_MINTTL 255), dropping
# what their peers send with TTL 255; the shared eBPF program where the
# helper could load it (CAP_BPF or CAP_SYS_ADMIN at its start); gone at OFF
capeff=$((0x$(status_field $$ CapEff)))
bpf="" kind=a
[ $(((capeff >> 39) & 1 | (capeff >> 21) & 1)) -eq 0 ] ||
	bpf=-b kind="the eBPF"
# shellcheck disable=SC2086
srv_start filter -m filter -n 200 $bpf "$S/f.repair"
helper_run filter "$S/f.repair"
srv_wait_ok filter
expect_ok filter
grep -q "filter: 100 deaf socket(s) with $kind filter, dropping" \
	"$T/filter.srv.err" || fail "filter: $(cat "$T/filter.srv.err")"

# ---- the server resets the connection (echo left unread): status 0
srv_start reset -m reset "$S/r.repair"
helper_run reset "$S/r.repair"
srv_wait_ok reset
expect_ok reset

# ---- bad requests: the helper reports and closes, the server sees no echo
srv_start badcmd -m bad-cmd "$S/b.repair"
helper_run badcmd "$S/b.repair"
srv_wait_ok badcmd
expect_error badcmd "unknown command 5"

srv_start nofd -m no-fd "$S/n.repair"
helper_run nofd "$S/n.repair"
srv_wait_ok nofd
expect_error nofd "came without sockets"

srv_start nottcp -m not-tcp "$S/u.repair"
helper_run nottcp "$S/u.repair"
srv_wait_ok nottcp
expect_error nottcp "descriptor 1 of 1 is not a TCP socket (domain 2, type 2, protocol 17)"

srv_start mixed -m mixed "$S/m.repair"
helper_run mixed "$S/m.repair"
srv_wait_ok mixed
expect_error mixed "descriptor 2 of 3 is not a TCP socket"

srv_start unix -m unix "$S/x.repair"
helper_run unix "$S/x.repair"
srv_wait_ok unix
expect_error unix "descriptor 1 of 1 is not a TCP socket (domain 1, type 1, protocol 0)"

srv_start pipe -m pipe "$S/p1.repair"
helper_run pipe "$S/p1.repair"
srv_wait_ok pipe
expect_error pipe "descriptor 1 of 1: Socket operation on non-socket"

# ---- directory mode, the helper first (as on a KubeVirt target). Other
# entries, even a socket, don't count: only a name ending in .repair
D=$T/d
mkdir "$D"
: >"$D/passt.socket"
: >"$D/x.repair.old"
"$REPAIR" "$D" 2>"$T/dir.err" &
HPID=$!
track "$HPID"
# Blocked on its inotify descriptor: hardening is in place by then
wait_for "ls -l /proc/$HPID/fd | grep -q inotify || ! alive $HPID" 10 ||
	fail "dir: helper never watched $D"
alive "$HPID" || fail "dir: helper gone: $(cat "$T/dir.err")"

expect "NoNewPrivs" "$(status_field "$HPID" NoNewPrivs)" 1
expect "Seccomp" "$(status_field "$HPID" Seccomp)" 2
# CAP_NET_ADMIN, and CAP_DAC_OVERRIDE until connected (see "foreign")
expect "CapEff" "$(status_field "$HPID" CapEff)" 0000000000001002
expect "CapPrm" "$(status_field "$HPID" CapPrm)" 0000000000001002
expect "CapInh" "$(status_field "$HPID" CapInh)" 0000000000000000
expect "CapBnd" "$(status_field "$HPID" CapBnd)" 0000000000001002
expect "CapAmb" "$(status_field "$HPID" CapAmb)" 0000000000000000
[ "$(stat -c %u "/proc/$HPID")" -eq 0 ] || fail "dir: helper is dumpable"
# Inherited descriptors, plus the directory and the inotify one (the
# connection replaces both)
nfd=$(($(find "/proc/$HPID/fd" -mindepth 1 | wc -l) - 1))

# bind(), 300 ms, listen(): the helper meets ECONNREFUSED and retries
srv_start dir -d 300 -n 10 -w "$T/dir.go" "$D/1-vm-net0.socket.repair"
wait_for "grep -q 'repairsrv: waiting' '$T/dir.srv.err' || ! alive $SRV_PID" 20
grep -q 'command -1: 10 sockets, 2 batches, ok' "$T/dir.srv.err" ||
	fail "dir: $(cat "$T/dir.srv.err")"
# 40 sockets went through it: none of them is still open there
expect "dir: helper's descriptors after 4 requests" \
	"$(find "/proc/$HPID/fd" -mindepth 1 | wc -l)" "$nfd"
# Connected: CAP_NET_ADMIN alone
expect "CapEff, connected" "$(status_field "$HPID" CapEff)" 0000000000001000
expect "CapPrm, connected" "$(status_field "$HPID" CapPrm)" 0000000000001000
: >"$T/dir.go"
bg_wait "$HPID" 20 || fail "dir: helper still running"
srv_wait_ok dir
expect "dir: helper status" "$BG_ST" 0
[ ! -s "$T/dir.err" ] || fail "dir: helper said: $(cat "$T/dir.err")"

# ---- directory mode, the socket already there
srv_start present -n 10 "$D/2-vm-net0.socket.repair"
helper_run present "$D"
srv_wait_ok present
expect_ok present

# ---- the daemon runs as another user (libvirt's QEMU user, KubeVirt's
# 107), and its socket is that user's, mode 0755: root connects to it
# only with CAP_DAC_OVERRIDE (upstream's helper does), dropped once
# connected
need setpriv
F=$T/f
mkdir -m 0755 "$F"
chown 65534:65534 "$F"
SRV_AS="setpriv --reuid=65534 --regid=65534 --clear-groups" \
	srv_start foreign -n 10 "$F/x.repair"
chmod 0755 "$F/x.repair"	# as a daemon's umask leaves it
log "foreign: $(stat -c '%U %a' "$F/x.repair") socket"
helper_run foreign "$F/x.repair"
srv_wait_ok foreign
expect_ok foreign

# ---- sun_path is 108 bytes: a longer socket path is refused; directory
# mode connects through /proc/self/fd, where that doesn't matter (the
# server binds through a short link to the directory)
L=$T/$(printf '%0100d' 0)
mkdir "$L"
: >"$L/x.repair"
helper_run long "$L/x.repair"
expect_error long "path too long for a UNIX socket"
rm "$L/x.repair"
ln -s "$L" "$T/l"
srv_start longdir -n 10 "$T/l/x.repair"
helper_run longdir "$L"
srv_wait_ok longdir
expect_ok longdir

# ---- directory mode: whose sockets, and no symbolic links
# srv_idle NAME PATH: a server nobody should connect to (it gives up);
# through SRV_AS, if set
srv_idle() {
	# shellcheck disable=SC2086
	ip netns exec "$HOST" ${SRV_AS:-} "$SRV" -t 3 "$2" 2>"$T/$1.srv.err" &
	_ipid=$!
	track "$_ipid"
	wait_for "grep -q 'repairsrv: listening' '$T/$1.srv.err' ||
		  ! alive $_ipid" 10 || fail "$1: repairsrv did not start"
	eval "IDLE_$1=$_ipid"
}
# never NAME: that server saw no connection
never() {
	eval "_ipid=\$IDLE_$1"
	bg_wait "$_ipid" 10 || fail "$1: still running"
	grep -q 'repairsrv: connected' "$T/$1.srv.err" &&
		fail "$1: the helper connected to it"
	grep -q 'no helper connected' "$T/$1.srv.err" ||
		fail "$1: $(cat "$T/$1.srv.err")"
}

O=$T/open
mkdir -m 0777 "$O"
srv_idle planted "$O/a-planted.repair"
chown 4242 "$O/a-planted.repair"
srv_idle elsewhere "$S/elsewhere.repair"
ln -s "$S/elsewhere.repair" "$O/b-link.repair"
"$REPAIR" "$O" 2>"$T/owner.err" &
HPID=$!
track "$HPID"
wait_for "grep -q 'a-planted.repair: owned by user 4242, neither root nor the directory.s owner (0)' '$T/owner.err' &&
	  grep -q 'b-link.repair: a symbolic link' '$T/owner.err' ||
	  ! alive $HPID" 10 || fail "owner: $(cat "$T/owner.err")"
alive "$HPID" || fail "owner: helper gone: $(cat "$T/owner.err")"
srv_start owner -n 10 "$O/c-root.repair"
srv_wait_ok owner
bg_wait "$HPID" 20 || fail "owner: helper still running"
expect "owner: helper status" "$BG_ST" 0
never planted
never elsewhere
log "owner: $(grep skipping "$T/owner.err" | tr '\n' ' ')"

U=$T/user
mkdir -m 0777 "$U"
chown 4242 "$U"
srv_idle stranger "$U/a-stranger.repair"
chown 5555 "$U/a-stranger.repair"
srv_start dirowner -n 10 "$U/b-owner.repair"
chown 4242 "$U/b-owner.repair"
helper_run dirowner "$U"
srv_wait_ok dirowner
expect "dirowner: helper status" "$HELPER_ST" 0
never stranger

# ---- an explicit socket path passes the same test, for what it leads to
# (a symbolic link is fine: KubeVirt passes a short one), or has a root
# listener: uid 4242's server in root's directory open to all is
# refused, directly or through a link (before any request is read); 4242's
# server in 4242's directory is taken, through a link in root's; and a
# root server whose socket file is nobody's (as a daemon started as root
# hands it over) in root's directory is taken
AS4242="setpriv --reuid=4242 --regid=4242 --clear-groups"
SRV_AS=$AS4242 srv_idle pathplanted "$O/d-planted.repair"
helper_run pathplanted "$O/d-planted.repair"
expect_error pathplanted "owned by user 4242, neither root nor the owner (0) of its directory $O, and its listener runs as user 4242, not root: refusing it"
SRV_AS=$AS4242 srv_idle pathlinked "$O/d-linked.repair"
ln -s "$O/d-linked.repair" "$S/d-link.repair"
helper_run pathlink "$S/d-link.repair"
expect_error pathlink "owned by user 4242, neither root nor the owner (0) of its directory $O"
SRV_AS=$AS4242 srv_start pathowner -n 10 "$U/c-owner.repair"
ln -s "$U/c-owner.repair" "$S/c-link.repair"
helper_run pathowner "$S/c-link.repair"
srv_wait_ok pathowner
expect_ok pathowner
srv_start handed -n 10 "$O/e-handed.repair"
chown 65534 "$O/e-handed.repair"
helper_run handed "$O/e-handed.repair"
srv_wait_ok handed
expect_ok handed

# ---- no CAP_NET_ADMIN: EPERM, reported, status non-zero, sockets intact
need setpriv
srv_start noperm -m expect-fail -n 10 "$S/p.repair"
HELPER_ST=0
timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups \
	--inh-caps=-all --bounding-set=-all \
	"$REPAIR" "$S/p.repair" 2>"$T/noperm.err" || HELPER_ST=$?
srv_wait_ok noperm
expect_error noperm "Operation not permitted (CAP_NET_ADMIN needed)"

# A sanitizer build of the helper or the server must not have reported
sanitizer_check "$T"/*.err
log "all cases passed"
