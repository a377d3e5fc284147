#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_slow_download.sh - migrate_slow_upload.sh the other way: the
# peer sends to the guest over IPv4 and IPv6 through 4 Mbit/s links (the
# pods' uplinks and the FABRIC's links to them), at Debian's default
# net.core.wmem_max/rmem_max; two migrations, one each way, with deep
# queues at the peer; byte-exact to the guest, with the peer's FIN.
# PT_TIMEOUT: 240
MIG_SLOW_DIR=down exec bash "$(dirname "$0")/migrate_slow_upload.sh" "$@"
