#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# stream_splice.sh - the two ways the stream front-end writes frames
# (stream/stream_out.c):
#   splice   the default: frames go to the front-end's socket by
#            reference (sendfile() from the output buffer's file); the
#            daemon says so, and its output buffer is a file on a tmpfs
#            of its own (hugefile.c), mapped twice, whose first mapping
#            maps huge pages whole once the transfer is over
#   memfd    PASST_NO_HUGEFILE=1: the same from a memfd, mapped twice
#   copy     PASST_NO_SPLICE=1: send() copies them
# Each time 32 MiB of a verified pattern go each way at once, through a
# kernel guest (tapbridge), so the output buffer wraps many times while
# the front-end still holds what it hasn't read.
# Then the turn to copying when a later sendfile() fails (the test
# build's hook, PASST_TEST_SENDFILE_OK=N, fails the call after N): the
# same transfer, with the frames the socket held by reference when it
# failed freed as the front-end reads them (else the buffer fills up for
# good and frames are dropped), once with the plain loop and once with
# the copies queued on the io_uring (PASST_IO_URING_WAIT=1), whose
# completion must not free those frames either (the tapbridge never lags
# a whole buffer behind, so an overwrite wouldn't show here).
# Then, on the splice path: a front-end that the daemon drops (a broken
# length prefix) with replies still unread in its socket keeps exactly
# those replies, although the next front-end's frames are written where
# they were in the daemon's buffer (framesend hold-unread, check-held).
# The whole integration suite runs on the splice path with the plain
# build and on the copy path under ASan (make integration-asan).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need_sockio
FS=$TOOLS/framesend
[ -x "$FS" ] || fail "no framesend in $TOOLS"
HOOKS=${PASST_HOOKS:-$(dirname "$PASST")/test/passt-hooks}
[ -x "$HOOKS" ] || fail "no test-hooks daemon at $HOOKS"
grep -qa PASST_TEST_SENDFILE_OK "$HOOKS" || fail "$HOOKS has no sendfile hook"
if grep -qa PASST_TEST_SENDFILE_OK "$PASST"; then
	fail "$PASST has the sendfile test hook compiled in"
fi

# This test chooses (integration-asan sets some)
unset PASST_NO_SPLICE PASST_NO_IO_URING PASST_IO_URING_WAIT PASST_NO_HUGEFILE
setup_ns
BYTES=$((32 * 1024 * 1024))
# A kernel without transparent huge pages, or with them denied to every
# tmpfs, gives the buffer small ones: nothing to check there
NO_THP=
SHM=/sys/kernel/mm/transparent_hugepage/shmem_enabled
if [ ! -r "$SHM" ] || grep -q '\[deny\]' "$SHM"; then
	NO_THP=1
	log "no huge pages for tmpfs here ($SHM): not checking they're mapped"
fi

# ring_mapped: KiB of the output buffer's file mapped (the memfd's name,
# or the unlinked file of the tmpfs, "/#INODE (deleted)"), in all its
# mappings (the daemon's madvise() splits them): twice its 4 MiB
ring_mapped() {
	local range rest kib=0

	while read -r range rest; do
		case "$rest" in
		*' /memfd:passt-stream-out'*)
			[ -n "${PASST_NO_HUGEFILE:-}" ] || continue ;;
		*' /#'[0-9]*' (deleted)')
			[ -z "${PASST_NO_HUGEFILE:-}" ] || continue ;;
		*) continue ;;
		esac
		kib=$((kib + (16#${range#*-} - 16#${range%-*}) / 1024))
	done <"/proc/$PASST_PID/maps"
	echo "$kib"
}

# case_run NAME splice|copy|fallback: start, check the path, transfer,
# stop; fallback: splicing first, copying after the hook's failure
case_run() {
	passt_start
	if [ -n "${PASST_NO_HUGEFILE:-}" ]; then
		grep -q 'stream: output buffer in a memfd.*: PASST_NO_HUGEFILE)' \
			"$PASST_ERR" ||
			fail "$1: not a memfd: $(grep 'stream:' "$PASST_ERR")"
	else
		grep -q 'stream: output buffer on huge pages' "$PASST_ERR" ||
			fail "$1: no huge pages: $(grep 'stream:' "$PASST_ERR")"
	fi
	[ "$(ring_mapped)" -eq 8192 ] ||
		fail "$1: the output buffer isn't mapped twice: $(ring_mapped) KiB"
	if [ "$2" != copy ]; then
		grep -q 'stream: frames to the front-end spliced.*sendfile' \
			"$PASST_ERR" ||
			fail "$1: not splicing: $(grep 'stream:' "$PASST_ERR")"
	else
		grep -q 'stream: frames to the front-end copied.*PASST_NO_SPLICE' \
			"$PASST_ERR" ||
			fail "$1: not copying: $(grep 'stream:' "$PASST_ERR")"
	fi
	log "$1: $(grep -m1 'stream: ' "$PASST_ERR")"
	[ -z "${PASST_IO_URING_WAIT:-}" ] ||
		log "$1: $(grep -m1 'io_uring: ' "$PASST_ERR")"
	guest_up
	pattern_both "$1" 7301 "$BYTES" 90
	passt_check_alive
	if [ -z "${PASST_NO_HUGEFILE:-}" ] && [ -z "$NO_THP" ]; then
		pmd=$(awk '/^ShmemPmdMapped:/ { print $2 }' \
			"/proc/$PASST_PID/smaps_rollup")
		[ "${pmd:-0}" -gt 0 ] ||
			fail "$1: no huge page mapped whole: $(grep Pmd \
				"/proc/$PASST_PID/smaps_rollup")"
		log "$1: ${pmd} KiB of huge pages mapped"
	fi
	if [ "$2" = fallback ]; then
		grep -q 'stream: sendfile(): Invalid argument, copying' \
			"$PASST_ERR" ||
			fail "$1: no turn to copying: $(grep 'stream:' "$PASST_ERR")"
		! grep -q 'frame(s) dropped' "$PASST_ERR" ||
			fail "$1: $(grep -m1 'frame(s) dropped' "$PASST_ERR")"
	fi
	bridge_stop
	passt_stop
}

case_run splice splice
PASST_NO_HUGEFILE=1 case_run memfd splice
PASST_NO_SPLICE=1 case_run copy copy
PASST=$HOOKS PASST_TEST_SENDFILE_OK=30 case_run fallback fallback
PASST=$HOOKS PASST_TEST_SENDFILE_OK=30 PASST_IO_URING_WAIT=1 \
	case_run fallback-uring fallback

# A dropped front-end's unread frames stay what they were
passt_start
"$FS" -t 10 -n 2000 "$SOCK" hold-unread arp-burst arp-burst arp-probe \
	check-held 2>"$T/fs-held.log" ||
	fail "held connection: $(tail -n 3 "$T/fs-held.log")"
passt_check_alive
log "held connection: 2000 replies intact behind 4000 for the next one"
passt_stop
