#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# vu_event_idx.sh - vu_bridge.sh with VIRTIO_RING_F_EVENT_IDX negotiated
# (vu-front -e), as a Linux guest behind QEMU has it: vu-front kicks only
# when its avail->idx passes the daemon's avail_event, and asks for RX
# interrupts with used_event, none for TX. The transfers must arrive
# intact (no kick or interrupt lost), and the daemon's counters must show
# the TX interrupts held back.
VU_FRONT_OPTS="${VU_FRONT_OPTS:-} -e" exec "$(dirname "$0")/vu_bridge.sh"
