#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_from_upstream.sh - migrate_upstream.sh's "from" case: upstream
# passt (Debian 13's) boots the guest under QEMU 10, which then moves to
# our daemon, with live streams both ways, every byte checked.
# vhost-user only.
# e2e-timeout: 420
export E2E_UP_CASE=from
exec "$(dirname "$0")/migrate_upstream.sh"
