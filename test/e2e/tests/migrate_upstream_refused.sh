#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_upstream_refused.sh - migrate_upstream.sh's "refused" case: a
# guest booted on our daemon without --virtio-compat can't move to
# upstream passt (Debian 13's): QEMU 10 refuses the device at the target
# ("Features 0x... unsupported"), the source runs the guest again and
# our daemon takes its connections back. Not in the default list (it
# shows what --virtio-compat is for); run it by name. vhost-user only.
# e2e-timeout: 420
export E2E_UP_CASE=refused
exec "$(dirname "$0")/migrate_upstream.sh"
