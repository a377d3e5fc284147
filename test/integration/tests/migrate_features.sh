#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_features.sh - what QEMU checks when it loads a migrated
# virtio-net device on the target, with vu-front as a Linux guest (-O -e:
# it takes the checksum and segmentation offloads and EVENT_IDX a back-end
# offers, as Linux does behind QEMU), migrating from our daemon to
# upstream passt (Debian 13's, test/upstream/fetch.sh):
#
#   1. the guest boots on ours, default features: the migration to
#      upstream is refused at the target, as QEMU refuses it ("Features
#      0x... unsupported"): upstream offers none of the offloads the
#      guest negotiated. The source takes its connections back; its
#      streams go on, byte-exact, and no RST leaves the source pod
#   2. the guest boots on ours with --virtio-compat: it negotiates
#      upstream's features only, and the same migration completes; the
#      streams are byte-exact, and no RST leaves either pod
#   3. the guest boots on ours, default features, and the target is ours
#      with --virtio-compat and --one-off (as libvirt starts it): refused
#      after the target restored the connections; the target, whose
#      front-end goes away before the guest ran there, closes them
#      silently (repair mode) and exits: the peers get neither FIN nor
#      RST from it, and the streams go on from the source, byte-exact
#
# Before vu-front checked the features at load, migration 1 "completed"
# (the target simply negotiated less), where QEMU fails it. Before the
# target closed an abandoned restore silently, its exit sent the peer of
# the peer -> guest stream a FIN, and that stream stalled in 3.
#
# SKIP (77) only if test/upstream/fetch.sh can't get the package.
# PT_TIMEOUT: 240
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"

need_upstream passt

# Ours in SRC, upstream in DST, each with its own helper
export PASST_DST=$UP/passt PASST_REPAIR_DST=$UP/passt-repair
MIG_DIRECT=0
# shellcheck source=migrate-lib.sh
. "$(dirname "$0")/../migrate-lib.sh"

RATE=256
MIG_VU_OPTS="-O -e"

# boot N [OPTION...]: a fresh guest (bridge) on a fresh daemon of ours in
# SRC with OPTIONs, its helper, two streams aN (peer -> guest) and bN
# (guest -> peer), flowing. Sets OUR_SOCK, OUR_PID
boot() {
	_n=$1
	shift
	mig_pod_daemon src source "$@"
	OUR_SOCK=$D_SOCK OUR_PID=$D_PID
	MIG_SOCK=$OUR_SOCK
	guest_up
	mig_repair_ready src "$OUR_SOCK"
	mig_stream "a$_n" down4 $((5000 + _n * 10 + 1)) --rate "$RATE"
	mig_stream "b$_n" up4 $((5000 + _n * 10 + 2)) --rate "$RATE"
	mig_flowing "a$_n" 32768 10 || fail "stream a$_n does not flow"
	mig_flowing "b$_n" 32768 10 || fail "stream b$_n does not flow"
}

# unboot: the guest and our daemon go (the bridge takes tap0 with it)
unboot() {
	kill -TERM "$BRIDGE_PID" 2>/dev/null || :
	wait_for "! alive $BRIDGE_PID" 10 || fail "vu-front ignores SIGTERM"
	wait "$BRIDGE_PID" 2>/dev/null || :
	wait_for "! ip -n $GUEST link show tap0" 5 || fail "tap0 still there"
	mig_stop "$OUR_PID"
}

mig_setup

# 1. Default features: refused at the target's load, the source resumes
boot 1
grep -q 'bridge: offloads 0x' "$T/vu-front.err" ||
	fail "the guest took no offloads from us: $(cat "$T/vu-front.err")"
mig_pod_daemon dst target
up_pid=$D_PID
rst_src=$(mig_rsts "$SRC")
if mig_migrate "$D_SOCK"; then
	fail "migration 1 completed, but QEMU would refuse it: the guest" \
	     "negotiated features upstream doesn't offer"
fi
expect "migration 1's result" "$(mig_field result)" failed-resumed
expect "migration 1's failing stage" "$(mig_field stage)" features
msg=$(grep -m1 'Features 0x' "$T/vu-front.err") ||
	fail "no 'Features 0x... unsupported' line from vu-front"
log "migration 1, as QEMU: $msg"
mig_flowing a1 32768 15 || fail "a1 doesn't flow on the source after it resumed"
mig_flowing b1 32768 15 || fail "b1 doesn't flow on the source after it resumed"
mig_streams_verify a1 b1
expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src)) 0
grep -q 'connection(s) resumed' "$OUR_SOCK.err" ||
	fail "our source didn't say it resumed: $(tail -n 5 "$OUR_SOCK.err")"
log "upstream, as the refused target, said: $(tail -n 3 "$MIG_DLOG" | tr '\n' ' ')"
mv "$T/vu-front.err" "$T/vu-front-1.err"
unboot
mig_stop "$up_pid"

# 2. --virtio-compat: the guest negotiates upstream's features, and moves
boot 2 --virtio-compat
! grep -q 'bridge: offloads 0x' "$T/vu-front.err" ||
	fail "offloads negotiated with --virtio-compat: $(grep offloads "$T/vu-front.err")"
mig_pod_daemon dst target
up_pid=$D_PID
rst_src=$(mig_rsts "$SRC") rst_dst=$(mig_rsts "$DST")
mig_migrate_switch "$D_SOCK" dst 0 || fail "migration 2 failed: $MIG_RESULT"
mig_flowing a2 32768 15 || fail "a2 doesn't flow on the target"
mig_flowing b2 32768 15 || fail "b2 doesn't flow on the target"
mig_streams_verify a2 b2
expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src)) 0
expect "RSTs from the target pod" $(($(mig_rsts "$DST") - rst_dst)) 0
log "migration 2 (--virtio-compat): $MIG_RESULT"
unboot
mig_stop "$up_pid"

# 3. Ours to ours --virtio-compat, one-off: refused, the target lets go
export PASST_DST=$PASST PASST_REPAIR_DST=$PASST_REPAIR
mig_fabric_to src
boot 3
mig_pod_daemon dst target --virtio-compat --one-off
t_pid=$D_PID t_log=$D_LOG
rst_src=$(mig_rsts "$SRC") rst_dst=$(mig_rsts "$DST")
if mig_migrate "$D_SOCK"; then
	fail "migration 3 completed: the target doesn't offer our features"
fi
expect "migration 3's failing stage" "$(mig_field stage)" features
wait_for "! alive $t_pid" 10 || fail "the refused target (one-off) still runs"
grep 'restored connection(s) closed silently' "$t_log" >&2 ||
	fail "the refused target didn't close its restore silently: $(tail -n 4 "$t_log")"
mig_flowing a3 32768 15 || fail "a3 doesn't flow on the source after it resumed"
mig_flowing b3 32768 15 || fail "b3 doesn't flow on the source after it resumed"
mig_streams_verify a3 b3
expect "RSTs from the source pod" $(($(mig_rsts "$SRC") - rst_src)) 0
expect "RSTs from the refused target's pod" $(($(mig_rsts "$DST") - rst_dst)) 0
unboot
