#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ours-as-upstream.sh - run a build of ours in the benchmark's upstream slot
#
# For side-by-side comparisons of two builds, or of one build with and
# without a setting: the harness starts "upstream" with the same options
# as ours, which are passed on.
#
#   ALT_BIN=/tmp/old/build/passt UPSTREAM=bench/ours-as-upstream.sh \
#       BENCH_HARNESSES=qemu bench/run.sh
#   ALT_ENV=PASST_COALESCE_US=0 UPSTREAM=bench/ours-as-upstream.sh ...
#
# ALT_BIN: the daemon (default: build/passt beside this script)
# ALT_ENV: VAR=VALUE settings for it, separated by spaces
# ALT_ARGS: options for it after the harness's (e.g. --virtio-compat)

bin=${ALT_BIN:-$(dirname "$0")/../build/passt}

# shellcheck disable=SC2086 # ALT_ENV is a list of words
exec env ${ALT_ENV:-} "$bin" "$@" ${ALT_ARGS:-}
