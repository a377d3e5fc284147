#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# migrate_mq.sh - migrate.sh with two vCPUs and two queue pairs (QEMU's
# queues=2, mq=on) on both QEMUs: the rings of both pairs are logged and
# handed over, and the connections' state goes with the device state once.
# vhost-user only, as migrate.sh.
# e2e-timeout: 420
export E2E_SMP=2 E2E_QUEUES=2
exec "$(dirname "$0")/migrate.sh"
