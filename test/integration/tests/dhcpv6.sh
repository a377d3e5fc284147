#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# dhcpv6.sh - ISC dhclient -6 in the guest gets the host's IPv6 address and
# the resolver configuration (IPv6 servers and search list) over DHCPv6
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
need dhclient

setup_ns
passt_start
bridge_start

# dhclient -6 binds to the link-local address: it must have passed DAD
wait_for "ip -n $GUEST -6 -o addr show dev tap0 scope link |
	  grep -v tentative | grep -q fe80:" 10 ||
	fail "tap0 link-local address stays tentative"

# dhclient runs its script with a clean environment: the lease file's path
# goes into the script itself
cat >"$T/dhclient.script" <<EOS
#!/bin/sh
# dhclient event script: record the lease, configure nothing
LEASE_FILE='$T/lease6'
EOS
cat >>"$T/dhclient.script" <<'EOS'
case "$reason" in
BOUND6|RENEW6|REBIND6|REBOOT6)
	{
		echo "ip='$new_ip6_address'"
		echo "plen='$new_ip6_prefixlen'"
		echo "dns='$new_dhcp6_name_servers'"
		echo "search='$new_dhcp6_domain_search'"
	} >"$LEASE_FILE.tmp"
	mv "$LEASE_FILE.tmp" "$LEASE_FILE"
	;;
esac
exit 0
EOS
chmod +x "$T/dhclient.script"

# Give up after 20 s rather than dhclient's default of 60
echo 'timeout 20;' >"$T/dhclient.conf"

timeout 60 ip netns exec "$GUEST" dhclient -6 -1 -v \
	-cf "$T/dhclient.conf" -lf "$T/dhclient6.leases" -pf "$T/dhclient6.pid" \
	-sf "$T/dhclient.script" tap0 >"$T/dhclient.log" 2>&1 ||
	fail "dhclient -6 got no lease: $(tail -n 5 "$T/dhclient.log")"

# After binding, dhclient forks to renew later: stop it
if [ -s "$T/dhclient6.pid" ]; then
	dpid=$(cat "$T/dhclient6.pid")
	track "$dpid"
	kill -TERM "$dpid" 2>/dev/null || :
fi

[ -s "$T/lease6" ] || fail "dhclient script did not record a lease"
L=$T/lease6
log "lease: $(tr '\n' ' ' <"$L")"

expect "address" "$(lease_get "$L" ip)" "$ADDR6"
expect_in "DNS servers" "$(lease_get "$L" dns)" "$DNS6"
# dhclient writes the search list as domain names, trailing dot or not
got_search=$(lease_get "$L" search | tr -d '"' | sed 's/\. / /g; s/\.$//')
expect_in "search list" "$got_search" "$SEARCH"
passt_check_alive
passt_stop
