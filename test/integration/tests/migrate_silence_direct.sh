#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_silence_direct.sh - migrate_silence.sh with TCP_REPAIR set by the
# daemons themselves (--repair-path none, CAP_NET_ADMIN kept), not through
# passt-repair: the silent hold must not depend on who sets repair mode.
MIG_DIRECT=1
export MIG_DIRECT
exec bash "$(dirname "$0")/migrate_silence.sh" "$@"
