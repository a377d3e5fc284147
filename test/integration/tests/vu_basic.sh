#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_basic.sh - vhost-user: --print-capabilities, then our own front-end
# negotiates, sets up memory (one and two regions) and rings, and gets
# answers to ARP and DHCP through the virtqueues; dirty logging marks the
# pages the daemon writes
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

caps=$("$PASST" --vhost-user --print-capabilities 2>/dev/null) ||
	fail "--print-capabilities failed"
expect "--print-capabilities" "$(echo $caps)" '{ "type": "net" }'
# QEMU's back-end discovery runs it without --vhost-user: only the JSON
caps=$("$PASST" --print-capabilities 2>/dev/null) ||
	fail "--print-capabilities without --vhost-user failed"
expect "--print-capabilities alone" "$(echo $caps)" '{ "type": "net" }'

setup_ns
vu_passt_start
vu basic arp-probe dhcp-probe
passt_check_alive
VU_FRONT_OPTS=-2 vu two-regions arp-probe dhcp-probe arp-probe
passt_check_alive
vu log log arp-probe
passt_check_alive
passt_stop
