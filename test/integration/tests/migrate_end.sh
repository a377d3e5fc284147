#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_end.sh - how a lingering migration source ends (migrate-lib.sh
# topology). Two pattern streams (peer -> guest over IPv4, guest -> peer
# over IPv6) run through three migrations, each source ending its linger
# a different way:
#
#   (a) SRC -> DST, fabric switched after 1 s, then SIGUSR2 to the source
#       (foreground, -P pid file): it exits 0 promptly; its log has
#       exactly one "Linger: ended" line, naming SIGUSR2, the number of
#       connections held (2) and for how long; the pid file, the socket
#       and SOCK.repair are gone; it closed the held sockets silently:
#       no RST (nstat in SRC) and no FIN or RST in a capture of SRC's
#       egress from the signal on; the peer's connections are still
#       ESTABLISHED (ss in FABRIC) and both streams carry on via DST.
#   (b) DST -> SRC (new daemon), fabric switched at once, then SIGTERM to
#       the lingering DST daemon: exit 0 within 4 s (it promises 2 s), a
#       "Linger: ended" line, files removed.
#   (c) SRC -> DST (new daemon); the SRC daemon was started daemonized
#       (as libvirt does: it forks, the pid file names the child, logs
#       to -l FILE) with --migrate-linger-timeout 2: it ends its linger
#       by itself after about 2 s ("Linger: ended (timeout)"), and its
#       pid file, socket and SOCK.repair are removed.
# No RST from any pod; at the end every byte verified. And the streams
# never stop but for a cut-over: one that gets nothing for MIG_STALL_MS
# (3 s) fails the test at once, with where it stopped (mig_watch).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox tcpdump

# files_gone SOCK: the pid file, socket and repair socket are removed
files_gone() {
	for _f in "$1" "$1.pid" "$1.repair"; do
		[ ! -e "$_f" ] || fail "$_f left behind by the ended source"
	done
}

# one_end LOG WHAT: exactly one "Linger: ended" line, matching WHAT
one_end() {
	_n=$(grep -c 'Linger: ended' "$1" || :)
	[ "$_n" -eq 1 ] ||
		fail "$_n 'Linger: ended' lines in $1: $(grep Linger "$1")"
	grep -E "Linger: ended $2" "$1" >&2 ||
		fail "'Linger: ended' line not as expected ($2): $(grep 'Linger: ended' "$1")"
}

mig_setup
mig_guest_start
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG
[ -s "$a_sock.pid" ] && [ "$(cat "$a_sock.pid")" = "$a_pid" ] ||
	fail "pid file $a_sock.pid doesn't name $a_pid"

mig_stream down down4 7101 --rate 512 -t 300
mig_stream up up6 7102 --rate 512 -t 300
mig_all_flowing 65536 15 down up ||
	fail "streams not flowing: $MIG_LAGGING"
mig_guest_daemon "$a_pid" "$a_log"
mig_watch down up
rst0_src=$(mig_rsts "$SRC")
rst0_dst=$(mig_rsts "$DST")

# (a) SIGUSR2
mig_pod_daemon dst target
b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
mig_repair_ready src "$a_sock"
mig_migrate_switch "$b_sock" dst 1000 || fail "migration (a): $MIG_RESULT"
mig_guest_daemon "$b_pid" "$b_log"
grep -q 'Linger: holding 2 migrated' "$a_log" ||
	fail "(a) the source doesn't linger with 2 connections: $(grep -E 'Linger|Migration' "$a_log")"
mig_cap_start "$SRC" eth0 end-a out
cap=$CAP_PID
kill -USR2 "$a_pid"
mig_exit_wait "$a_pid" 10 || fail "(a) the source ignored SIGUSR2"
log "(a) SIGUSR2: exit status $MIG_EXIT_ST after $MIG_EXIT_MS ms"
[ "$MIG_EXIT_ST" = 0 ] || fail "(a) exit status $MIG_EXIT_ST"
[ "$MIG_EXIT_MS" -lt 3000 ] || fail "(a) took $MIG_EXIT_MS ms to exit"
one_end "$a_log" '\(SIGUSR2[^)]*\): 2 connection\(s\) held for [0-9.]+ s'
files_gone "$a_sock"
sanitizer_check "$a_log"
# The peer's ends are still there, and both streams carry on
mig_all_flowing 65536 20 down up ||
	fail "(a) streams stop after the source ended: $MIG_LAGGING"
mig_cap_stop "$cap"
est=$(ns "$FABRIC" ss -tnH state established \
	'( sport = :7101 or sport = :7102 )' | wc -l)
[ "$est" -eq 2 ] || fail "(a) $est of the peer's 2 connections ESTABLISHED"
closing=$(mig_cap_text end-a | grep -c 'Flags \[[^]]*[FR]' || :)
log "(a) SRC egress after SIGUSR2: $(mig_cap_text end-a | wc -l) segment(s), $closing with FIN or RST"
[ "$closing" -eq 0 ] ||
	fail "(a) SRC sent FIN or RST on closing: $(mig_cap_text end-a | grep 'Flags \[[^]]*[FR]' | head -n 3)"
rst=$(($(mig_rsts "$SRC") - rst0_src))
[ "$rst" -eq 0 ] || fail "(a) SRC sent $rst RSTs"

# (b) SIGTERM while lingering; the next source (SRC) ends by timeout,
# daemonized
MIG_DAEMONIZE=1 mig_pod_daemon src target --migrate-linger-timeout 2 \
	-l "$T/c.log"
c_sock=$D_SOCK c_pid=$D_PID c_log=$T/c.log
mig_repair_ready dst "$b_sock"
mig_migrate_switch "$c_sock" src 0 || fail "migration (b): $MIG_RESULT"
mig_guest_daemon "$c_pid" "$c_log"
grep -q 'Linger: holding 2 migrated' "$b_log" ||
	fail "(b) the source doesn't linger: $(grep -E 'Linger|Migration' "$b_log")"
kill -TERM "$b_pid"
mig_exit_wait "$b_pid" 10 || fail "(b) the source ignored SIGTERM"
log "(b) SIGTERM: exit status $MIG_EXIT_ST after $MIG_EXIT_MS ms"
[ "$MIG_EXIT_ST" = 0 ] || fail "(b) exit status $MIG_EXIT_ST"
[ "$MIG_EXIT_MS" -lt 4000 ] || fail "(b) took $MIG_EXIT_MS ms to exit"
one_end "$b_log" '\([^)]*\): 2 connection\(s\) held for [0-9.]+ s'
files_gone "$b_sock"
sanitizer_check "$b_log"
mig_all_flowing 32768 20 down up ||
	fail "(b) streams stop: $MIG_LAGGING"

# (c) --migrate-linger-timeout 2, daemonized
mig_pod_daemon dst target
d_sock=$D_SOCK d_pid=$D_PID d_log=$D_LOG
mig_repair_ready src "$c_sock"
mig_migrate_switch "$d_sock" dst 0 || fail "migration (c): $MIG_RESULT"
mig_guest_daemon "$d_pid" "$d_log"
t0=$(now_ms)
wait_for "! alive $c_pid" 15 || fail "(c) the source still runs 15 s on"
took=$(($(now_ms) - t0))
log "(c) linger timeout 2 s: gone $took ms after the migration"
one_end "$c_log" '\(timeout\): 2 connection\(s\) held for [0-9.]+ s'
held=$(sed -n 's/.*Linger: ended (timeout): .* held for \([0-9.]*\) s.*/\1/p' "$c_log")
awk -v h="$held" 'BEGIN { exit !(h >= 1.5 && h < 6) }' ||
	fail "(c) held for $held s with --migrate-linger-timeout 2"
wait_for "[ ! -e '$c_sock.pid' ]" 5 || :
files_gone "$c_sock"

mig_all_flowing 32768 20 down up || fail "(c) streams stop: $MIG_LAGGING"
mig_watch_stop
log "longest pauses:$(mig_pauses down up)"
mig_streams_verify down up
rst_src=$(($(mig_rsts "$SRC") - rst0_src))
rst_dst=$(($(mig_rsts "$DST") - rst0_dst))
[ "$rst_src" -eq 0 ] || fail "SRC sent $rst_src RSTs"
[ "$rst_dst" -eq 0 ] || fail "DST sent $rst_dst RSTs"
alive "$d_pid" || fail "the last target died"
mig_stop "$d_pid"
sanitizer_check "$T"/*/passt.socket.err "$c_log"
