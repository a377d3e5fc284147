# SPDX-License-Identifier: GPL-2.0-or-later
#
# activation-lib.sh - a fabric that moves the pod address the way OVN does
# with activation-strategy=rarp, for tests/migrate_activation.sh and
# bench/migrate-activation.sh. Sourced after migrate-lib.sh.
#
# OVN, with requested-chassis=src,dst during a migration, keeps sending
# the pod's traffic to the source until it sees a RARP from the port on
# the target chassis. Here: tcpdump on the FABRIC's link to the target pod
# watches for a RARP whose source is the target pod's eth0 MAC; the first
# one makes the FABRIC route the pod address to that pod (an "ip -batch"
# started beforehand reads the routes from a FIFO, so nothing is forked
# at that moment). A fabric that never sees one would never switch: as a
# stand-in for OVN's own timeout, the switch also happens W ms after the
# target started the guest (vu-front's --migrate-exec hook), if the RARP
# hasn't come by then.
#
#   act_migrate SOCK POD W   migrate to the daemon at SOCK in POD (src,
#                            dst); sets ACT_HOW (rarp or timeout), ACT_RUN
#                            (epoch ms when the target ran the guest),
#                            ACT_RARP (the first RARP's capture time, ms,
#                            empty if none), ACT_SWITCH (when the route
#                            was replaced, ms)
#   act_cap_start / act_cap_stop   capture of what the pods announce
#                            (RARP, ARP, ICMPv6) on both links, and of the
#                            TCP segments towards the pods (for the resume
#                            figures): act_frames NAME, act_resume PORT
#                            DATA

# act_mac POD: the MAC address of that pod's eth0
act_mac() {
	ip -n "$(mig_ns "$1")" link show eth0 |
		sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

# act_if POD: the FABRIC's link to that pod
act_if() {
	case $1 in
	src) echo fs ;;
	dst) echo fd ;;
	*) fail "act_if: src or dst, not $1" ;;
	esac
}

# act_cap_start: tcpdump on both of FABRIC's pod links, incoming: the
# pods' announcements (ann-IF.pcap) and, outgoing, TCP to the pods
# (tcp-IF.pcap); waits until they listen
act_cap_start() {
	ACT_CAPS=
	for _ai in fs fd; do
		for _ak in ann tcp; do
			if [ "$_ak" = ann ]; then
				_ad=in _af='ether proto 0x8035 or arp or icmp6'
			else
				_ad=out _af=tcp
			fi
			rm -f "$T/$_ak-$_ai.pcap"
			ip netns exec "$FABRIC" tcpdump -U --immediate-mode -n \
				-s 128 -i "$_ai" -Q "$_ad" \
				-w "$T/$_ak-$_ai.pcap" "$_af" \
				>"$T/$_ak-$_ai.log" 2>&1 &
			track $!
			ACT_CAPS="$ACT_CAPS $!"
			wait_for "grep -q 'listening on' '$T/$_ak-$_ai.log'" 60 ||
				fail "tcpdump on $_ai: $(cat "$T/$_ak-$_ai.log")"
		done
	done
}

# act_cap_stop: stop the captures, let them flush
act_cap_stop() {
	for _ap in $ACT_CAPS; do
		mig_cap_stop "$_ap"
	done
	ACT_CAPS=
}

# act_frames IF: the pods' announcements captured on link IF, as text
# (epoch time, MACs)
act_frames() {
	tcpdump -r "$T/ann-$1.pcap" -n -e -tt 2>/dev/null
}

# act_migrate SOCK POD W: see above. Each call has its own directory
# ($T/actN): a fallback hook still sleeping from an earlier migration
# only ever looks at its own
ACT_N=0
act_migrate() {
	_aif=$(act_if "$2")
	_amac=$(act_mac "$2")
	ACT_N=$((ACT_N + 1))
	_ad=$T/act$ACT_N
	mkdir -p "$_ad"
	mkfifo "$_ad/fifo" "$_ad/routes"
	# The route changer, waiting for its lines
	ip -n "$FABRIC" -batch "$_ad/routes" >"$_ad/ip.log" 2>&1 &
	_aip=$!
	track "$_aip"
	# The watcher: the first RARP from the target pod switches
	ip netns exec "$FABRIC" tcpdump -l -n -e -tt --immediate-mode \
		-i "$_aif" -Q in "ether proto 0x8035 and ether src $_amac" \
		>"$_ad/fifo" 2>"$_ad/tcpdump.log" &
	_atd=$!
	track "$_atd"
	(
		exec 3>"$_ad/routes"
		IFS= read -r _al <"$_ad/fifo" || exit 0
		[ ! -e "$_ad/how" ] || exit 0
		echo rarp >"$_ad/how"
		printf '%s\n' "route replace $ADDR4/32 dev $_aif" \
			"route replace $ADDR6/128 dev $_aif" >&3
		exec 3>&-
		_ae=${EPOCHREALTIME/./}
		echo "$((_ae / 1000))" >"$_ad/switched.tmp"
		echo "${_al%% *}" >"$_ad/rarp"
		mv "$_ad/switched.tmp" "$_ad/switched"
	) &
	_ard=$!
	track "$_ard"
	wait_for "grep -q 'listening on' '$_ad/tcpdump.log' ||
		  ! alive $_atd" 60 && alive "$_atd" ||
		fail "the fabric's RARP watcher: $(cat "$_ad/tcpdump.log")"
	# The fallback, W ms after the target started the guest
	cat >"$MIG_HOOK" <<-EOF
		sleep $(awk "BEGIN { print $3 / 1000 }")
		[ ! -e '$_ad/how' ] || exit 0
		echo timeout >'$_ad/how'
		printf '%s\n' "route replace $ADDR4/32 dev $_aif" \
			"route replace $ADDR6/128 dev $_aif" | ip -n '$FABRIC' -batch -
		date +%s%3N >'$_ad/switched.tmp'
		mv '$_ad/switched.tmp' '$_ad/switched'
	EOF
	if ! mig_migrate "$1"; then
		rm -f "$MIG_HOOK"
		kill "$_atd" "$_ard" "$_aip" 2>/dev/null || :
		return 1
	fi
	wait_for "[ -e '$_ad/switched' ]" $((10 + $3 / 1000)) ||
		fail "the fabric did not switch to $2"
	rm -f "$MIG_HOOK"
	# On a RARP, the route changer has its lines and the end of them:
	# it exits once the routes are in (killed, it may not have read them)
	[ "$(cat "$_ad/how")" != rarp ] ||
		wait_for "! alive $_aip" 10 || :
	kill "$_atd" "$_ard" "$_aip" 2>/dev/null || :
	wait "$_atd" "$_ard" "$_aip" 2>/dev/null || :
	ACT_HOW=$(cat "$_ad/how")
	ACT_RUN=$(mig_field at_ms)
	ACT_SWITCH=$(cat "$_ad/switched")
	ACT_RARP=
	[ ! -s "$_ad/rarp" ] ||
		ACT_RARP=$(awk '{ printf "%d\n", $1 * 1000 }' "$_ad/rarp")
	MIG_FABRIC=$2
	[ "$(ip -n "$FABRIC" route get "$ADDR4" |
	     sed -n 's/.* dev \([a-z0-9]*\).*/\1/p')" = "$_aif" ] ||
		fail "the fabric doesn't route $ADDR4 to $2"
}

# act_resume PORT DATA IF FROM: ms from FROM (epoch ms) to the first TCP
# segment from the peer's PORT to the pod on link IF at or after it (DATA
# 1: a data segment, the peer's retransmission; 0: anything, its ACK);
# "none" if there is none. Needs act_cap_stop first
act_resume() {
	tcpdump -r "$T/tcp-$3.pcap" -n -tt 2>/dev/null |
		awk -v from="$4" -v p="$1" -v data="$2" '
		{
			t = $1 * 1000
			if (t < from || index($3, "." p) != length($3) - length(p))
				next
			if (data && !match($0, /length [1-9]/))
				next
			printf "%d\n", t - from; found = 1; exit
		}
		END { if (!found) print "none" }'
}
