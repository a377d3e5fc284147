#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# layout.sh - the Layout table of README.md names every part of the tree:
# each top-level source file and folder, each folder under test/, each
# test tool and each top-level test script; and names nothing that isn't
# there. A header is covered by its .c file of the same name.
#
# Usage: test/lint/layout.sh [README]
#
# Exit status: 0 if the table and the tree agree, 1 otherwise (each
# difference on standard error)

set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
readme=${1:-$top/README.md}
cd "$top" || exit 1

# The table: the lines between "## Layout" and the next heading that start
# with "|"; every `name` quoted in them
table=$(sed -n '/^## Layout/,/^## /p' "$readme" | grep '^|')
# shellcheck disable=SC2016 # backquotes to match, not an expansion
named=$(echo "$table" | grep -o '`[^`]*`' | tr -d '`' | sort -u)
[ -n "$named" ] || { echo "layout: no Layout table in $readme" >&2; exit 1; }

has() {
	echo "$named" | grep -qxF -- "$1"
}

fail=0
miss() {
	echo "layout: $1 is not in the Layout table of README.md" >&2
	fail=1
}

files=$(git ls-files 2>/dev/null) || files=$(find . -type f | sed 's|^\./||')

# Top-level sources and folders (not the dotfiles, the licence, the
# Makefile, README.md itself)
for e in $(echo "$files" | cut -d/ -f1 | sort -u); do
	case $e in
	.*|LICENSE|Makefile|README.md) continue ;;
	esac
	if [ -d "$e" ]; then
		[ "$e" = test ] || has "$e/" || miss "$e/"
		continue
	fi
	case $e in
	*.h) has "$e" || has "${e%.h}.c" || miss "$e" ;;
	*) has "$e" || miss "$e" ;;
	esac
done

# test/: each folder, each script at its top, each tool
for d in $(echo "$files" | grep '^test/[^/]*/' | cut -d/ -f1-2 | sort -u); do
	has "$d/" || miss "$d/"
done
for f in $(echo "$files" | grep -E '^test/[^/]*\.sh$'); do
	has "$f" || miss "$f"
done
for f in $(echo "$files" | grep -E '^test/tools/[^/]*\.c$'); do
	t=$(basename "$f" .c)
	has "$t" || miss "test tool $t ($f)"
done

# ...and nothing that isn't there: every name with a slash or a source
# suffix, looked for at the top, in test/ or in the folder it is listed in
for n in $named; do
	case $n in
	*/|*.c|*.h|*.sh|*.md) ;;
	*) continue ;;
	esac
	[ -e "$n" ] && continue
	found=0
	for d in $(echo "$files" | cut -d/ -f1 | sort -u) test/tools test/unit; do
		[ -e "$d/$n" ] && { found=1; break; }
	done
	[ $found = 1 ] && continue
	# A file named in its folder's row: look in every folder
	echo "$files" | grep -q -- "/${n%/}$" && continue
	echo "$files" | grep -q -- "/${n%/}/" && continue
	echo "layout: the Layout table names $n, which is not in the tree" >&2
	fail=1
done

exit $fail
