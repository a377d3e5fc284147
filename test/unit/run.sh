#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Run each cmocka test binary; print one summary line for all of them.
pass=0; fail=0
for t in "$@"; do
	if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAILED: $t"; fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
