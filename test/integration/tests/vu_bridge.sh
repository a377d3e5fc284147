#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_bridge.sh - the kernel of the GUEST namespace as a vhost-user guest
# (vu-front bridging tap0 to the virtqueues): DHCP, SLAAC, ping both
# families, and TRANSFER_MB (default 16) MiB of TCP each way, IPv4,
# checked by SHA-256. VU_FRONT_OPTS=-2 runs it with two memory regions,
# -e with VIRTIO_RING_F_EVENT_IDX (vu_event_idx.sh). Either way, the
# daemon's interrupt counters must match what vu-front asked for: without
# EVENT_IDX it never sets NO_INTERRUPT, so no interrupt is held back;
# with it, it asks for RX interrupts (used_event) once it has drained the
# ring, and for a TX one only while all its TX slots are in flight (it
# says how often at exit), so nearly all TX ones are held back.
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need busybox sha256sum
need_vufront
need_sockio

MB=${TRANSFER_MB:-16}

setup_ns
vu_passt_start ${VU_PASST_OPTS:-}
guest_up

ns "$GUEST" ping -c 2 -W 2 "$PEER4" >"$T/ping4.log" 2>&1 ||
	fail "ping $PEER4: $(tail -n 3 "$T/ping4.log")"
ns "$GUEST" ping -6 -c 2 -W 2 "$PEER6" >"$T/ping6.log" 2>&1 ||
	fail "ping -6 $PEER6: $(tail -n 3 "$T/ping6.log")"
passt_check_alive

head -c "${MB}M" /dev/urandom >"$T/up"
head -c "${MB}M" /dev/urandom >"$T/down"

# guest -> peer
rm -f "$T/ready" "$T/recv"
bg "$ROUTER" up-listen /dev/null "$T/recv" \
	"$SOCKIO" "${STALL[@]}" -t 40 --report --ready "$T/ready" \
	tcp-listen "$PEER4" 5001
lpid=$BG_PID
wait_ready "$T/ready"
st=0
ns "$GUEST" "$SOCKIO" "${STALL[@]}" -t 40 --report tcp-connect "$PEER4" 5001 \
	<"$T/up" >/dev/null 2>"$T/up-connect.err" || st=$?
bg_wait "$lpid" 20 || :
expect "guest -> peer: client exit status" "$st" 0
expect "guest -> peer: listener exit status" "$BG_ST" 0
expect "guest -> peer: SHA-256" "$(sha "$T/recv")" "$(sha "$T/up")"
passt_check_alive

# peer -> guest
rm -f "$T/ready" "$T/recv"
bg "$ROUTER" down-listen "$T/down" /dev/null \
	"$SOCKIO" "${STALL[@]}" -t 40 --report --ready "$T/ready" \
	tcp-listen "$PEER4" 5002
lpid=$BG_PID
wait_ready "$T/ready"
st=0
ns "$GUEST" "$SOCKIO" "${STALL[@]}" -t 40 --report --hold \
	tcp-connect "$PEER4" 5002 \
	</dev/null >"$T/recv" 2>"$T/down-connect.err" || st=$?
bg_wait "$lpid" 20 || :
expect "peer -> guest: client exit status" "$st" 0
expect "peer -> guest: listener exit status" "$BG_ST" 0
expect "peer -> guest: SHA-256" "$(sha "$T/recv")" "$(sha "$T/down")"
passt_check_alive

bridge_stop
passt_check_alive
passt_stop

# vu-front lays every fourth TX frame out as a Linux guest does a TSO
# segment (headers, then the payload in pieces): TCP took those as they
# lay, with no gathering copy (demux_input_part()), and the data above
# arrived intact
pieces=$(sed -n 's/.* \([0-9]*\) taken in pieces.*/\1/p' "$PASST_ERR" |
	 tail -n 1)
[ "${pieces:-0}" -gt 0 ] ||
	fail "no frame taken in pieces: $(grep 'Frames from guest' \
		"$PASST_ERR")"

# "interrupts to the guest: RX n, TX n; not wanted (...): RX n, TX n"
irq=$(grep 'interrupts to the guest' "$PASST_ERR" | tail -n 1)
re='.*RX \([0-9]*\), TX \([0-9]*\);.*RX \([0-9]*\), TX \([0-9]*\)$'
read -r rx tx rx_held tx_held <<EOF
$(echo "$irq" | sed -n "s/$re/\1 \2 \3 \4/p")
EOF
[ -n "${tx_held:-}" ] ||
	fail "no interrupt counters in the daemon's log: $irq"
log "$irq"
[ "$rx" -gt 0 ] || fail "no RX interrupt: $irq"
case " ${VU_FRONT_OPTS:-} " in
*" -e "*)
	grep -q 'bridge: connected.*EVENT_IDX' "$T/vb.err" ||
		fail "EVENT_IDX not negotiated: $(head -n 3 "$T/vb.err")"
	# A TX interrupt per time vu-front asked for one, and one more at
	# most (the first decision on a new ring); every other one held back
	asked=$(sed -n 's/.*TX interrupts asked for \([0-9]*\) times.*/\1/p' \
		"$T/vb.err" | tail -n 1)
	[ -n "$asked" ] || fail "vu-front didn't say how often it asked for" \
		"TX interrupts: $(tail -n 3 "$T/vb.err")"
	if [ "$tx" -gt $((asked + 1)) ] || [ "$tx_held" -eq 0 ]; then
		fail "TX interrupts with EVENT_IDX (vu-front asked $asked" \
			"times): $irq"
	fi
	log "vu-front asked for TX interrupts $asked times"
	;;
*)
	if [ "$tx" -eq 0 ] || [ "$rx_held" -ne 0 ] ||
	   [ "$tx_held" -ne 0 ]; then
		fail "interrupts without EVENT_IDX: $irq"
	fi
	;;
esac
