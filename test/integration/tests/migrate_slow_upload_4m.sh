#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_slow_upload_4m.sh - migrate_slow_upload.sh with net.core.wmem_max
# and rmem_max at 4 MiB (what these machines have): there a restored
# socket could take the whole queue, but its MSS fell to 536 bytes and the
# upload stalled.
# PT_TIMEOUT: 240
MIG_WMEM_MAX=4194304 MIG_RMEM_MAX=4194304 \
	exec bash "$(dirname "$0")/migrate_slow_upload.sh" "$@"
