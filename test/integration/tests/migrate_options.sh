#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_options.sh - the deprecated migration options and --one-off
# (migrate-lib.sh topology; vu-front closes the source's connection once
# migrated, --migrate-close-source, as a source QEMU that quits). Three
# migrations, each source started with one option:
#
#   1. SRC (--migrate-no-linger) -> DST: the source logs a deprecation
#      warning at start; after the migration it closes the migrated
#      sockets at once (none of their 4-tuples is left in SRC, ss) and
#      keeps running. The fabric still routes to SRC, so the peer's next
#      segment of the "nl" stream (peer -> guest) gets a RST from SRC:
#      the documented old behaviour, asserted (TcpOutRsts in SRC grows).
#      That stream is then given up.
#   2. DST (--migrate-exit) -> SRC: deprecation warning at start; the
#      source exits with status 0 after the migration. DST is cut off the
#      fabric at the trigger (mig_pod_link), so that the peer's segments
#      find no closed socket there.
#   3. SRC (--one-off) -> DST: the source does NOT exit when the
#      front-end disconnects after the migration; it lingers and ends on
#      SIGUSR2 with status 0.
# A second stream ("ex", guest -> peer, IPv6) runs through migrations 2
# and 3 and must arrive byte for byte. Neither stream may stop but for a
# cut-over (nl until migration 1): one that gets nothing for MIG_STALL_MS
# (3 s) fails the test at once, with where it stopped (mig_watch).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"
need busybox

MIG_VU_OPTS="${MIG_VU_OPTS:-} --migrate-close-source"

mig_setup
# 1. --migrate-no-linger
mig_pod_daemon src source --migrate-no-linger
a_sock=$D_SOCK a_pid=$D_PID a_log=$D_LOG
grep -q -- '--migrate-no-linger is deprecated' "$a_log" ||
	fail "no deprecation warning for --migrate-no-linger: $(head -n 5 "$a_log")"
mig_probe "$a_sock"
MIG_SOCK=$a_sock
guest_up
mig_repair_ready src "$a_sock"
mig_stream nl down4 7201 --rate 512 -t 300
mig_all_flowing 32768 15 nl || fail "stream nl not flowing: $MIG_LAGGING"
mig_guest_daemon "$a_pid" "$a_log"
mig_watch nl

mig_pod_daemon dst target --migrate-exit
b_sock=$D_SOCK b_pid=$D_PID b_log=$D_LOG
grep -q -- '--migrate-exit is deprecated' "$b_log" ||
	fail "no deprecation warning for --migrate-exit: $(head -n 5 "$b_log")"
mig_repair_ready src "$a_sock"
rst0=$(mig_rsts "$SRC")
# nl is given up with the migration (see the top)
mig_watch_stop
log "1: nl's longest pause before the migration:$(mig_pauses nl)"
mig_migrate "$b_sock" || fail "migration 1: $MIG_RESULT"
wait_for "! ns $SRC ss -tnH state all '( dport = :7201 )' | grep -q ." 5 ||
	fail "1: migrated sockets still in SRC: $(ns "$SRC" ss -tnH '( dport = :7201 )')"
grep -q 'closed (--migrate-no-linger)' "$a_log" ||
	fail "1: no --migrate-no-linger line: $(grep -E 'Migration|Linger' "$a_log")"
# The peer's next segment reaches SRC, which has no socket for it
wait_for "[ \$(mig_rsts $SRC) -gt $rst0 ]" 15 ||
	fail "1: no RST from SRC for the peer's segments (documented for --migrate-no-linger)"
log "1: --migrate-no-linger: sockets closed at once, SRC sent $(($(mig_rsts "$SRC") - rst0)) RST(s) to the peer (the old behaviour)"
alive "$a_pid" || fail "1: the --migrate-no-linger source exited"
mig_fabric_to dst
eval "kill_own TERM \$SL_nl \$SC_nl"
mig_stop "$a_pid"
wait "$a_pid" 2>/dev/null || :
sanitizer_check "$a_log"

# 2. --migrate-exit
mig_stream ex up6 7202 --rate 512 -t 300
mig_all_flowing 32768 15 ex || fail "stream ex not flowing: $MIG_LAGGING"
mig_guest_daemon "$b_pid" "$b_log"
mig_watch ex
mig_pod_daemon src target --one-off
c_sock=$D_SOCK c_pid=$D_PID c_log=$D_LOG
mig_repair_ready dst "$b_sock"
rst0_dst=$(mig_rsts "$DST")
mig_pod_link dst down
mig_migrate_switch "$c_sock" src 0 || fail "migration 2: $MIG_RESULT"
mig_guest_daemon "$c_pid" "$c_log"
mig_exit_wait "$b_pid" 10 || fail "2: the --migrate-exit source still runs"
log "2: --migrate-exit: the source exited with status $MIG_EXIT_ST, $MIG_EXIT_MS ms after the migration"
[ "$MIG_EXIT_ST" = 0 ] || fail "2: exit status $MIG_EXIT_ST"
grep -q 'exiting (--migrate-exit)' "$b_log" ||
	fail "2: no --migrate-exit line: $(grep -E 'Migration|Linger' "$b_log")"
sanitizer_check "$b_log"
mig_pod_link dst up
mig_all_flowing 32768 20 ex || fail "2: stream ex stops: $MIG_LAGGING"

# 3. --one-off, as a source: the front-end's disconnection doesn't end it
mig_pod_daemon dst target
d_sock=$D_SOCK d_pid=$D_PID d_log=$D_LOG
mig_repair_ready src "$c_sock"
mig_migrate_switch "$d_sock" dst 0 || fail "migration 3: $MIG_RESULT"
mig_guest_daemon "$d_pid" "$d_log"
wait_for "grep -q 'front-end disconnected after migrating away' '$c_log' ||
	  ! alive $c_pid" 10 ||
	fail "3: the front-end's disconnection isn't logged: $(tail -n 5 "$c_log")"
# It must not go (negative check: give it a moment to do so wrongly)
if wait_for "! alive $c_pid" 2 2>/dev/null; then
	fail "3: the --one-off source exited when the front-end left: $(tail -n 5 "$c_log")"
fi
grep -q 'Linger: holding 1 migrated' "$c_log" ||
	fail "3: the --one-off source doesn't linger: $(grep -E 'Migration|Linger' "$c_log")"
log "3: --one-off: still running after the front-end disconnected, lingering"
kill -USR2 "$c_pid"
mig_exit_wait "$c_pid" 10 || fail "3: the source ignored SIGUSR2"
[ "$MIG_EXIT_ST" = 0 ] || fail "3: exit status $MIG_EXIT_ST"
sanitizer_check "$c_log"

mig_all_flowing 32768 20 ex || fail "3: stream ex stops: $MIG_LAGGING"
mig_watch_stop
log "ex's longest pause:$(mig_pauses ex)"
mig_streams_verify ex
rst_dst=$(($(mig_rsts "$DST") - rst0_dst))
# Not asserted: the streams are what must survive (checked above)
[ "$rst_dst" -eq 0 ] ||
	log "NOTE: DST sent $rst_dst RST(s) after migration 1 ($(nstat_get "$DST" TcpEstabResets) established resets there)"
alive "$d_pid" || fail "the last target died"
mig_stop "$d_pid"
sanitizer_check "$T"/*/passt.socket.err
