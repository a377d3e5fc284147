#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_msg_rounds.sh - a vhost-user message that is all there is read whole
# and handled in one loop round, header and payload: vu-front's
# "msg-rounds" sends 32 messages with payloads (and a frame whose answer
# interrupts the guest at the end of the round) while the daemon is
# stopped; when the interrupt comes, all 32 must be answered. Before,
# vu_recv() went back to the loop after each header: a round per message,
# none answered at the end of the first (and at the switch-over of a
# migration, every message with a payload cost two rounds).
set -eu
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vu.sh
. "$(dirname "$0")/../vu.sh"
need_vufront

setup_ns
vu_passt_start
vu rounds connect arp-probe msg-rounds msg-rounds --freeze "$PASST_PID"
passt_check_alive
passt_stop
