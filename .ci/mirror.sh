#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Print the URI of the Debian archive that this machine's own apt sources
# already use for the "bookworm" suite (one-line .list or deb822 .sources
# format). The repository names no mirror: whatever the machine is set up
# with is what we add suites of (bookworm-backports, trixie) at run time.
set -eu
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -r "$f" ] || continue
	# deb [options] URI suite components...
	uri=$(sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\)[[:space:]]\{1,\}bookworm[[:space:]].*/\2/p' "$f" | head -n1)
	[ -n "$uri" ] && { echo "$uri"; exit 0; }
done
for f in /etc/apt/sources.list.d/*.sources; do
	[ -r "$f" ] || continue
	uri=$(awk '
		/^[[:space:]]*$/ { if (deb && suite && uri != "") { print uri; exit }
				   deb = 0; suite = 0; uri = ""; next }
		/^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
		/^URIs:/ { uri = $2 }
		/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
		END { if (deb && suite && uri != "") print uri }' "$f" | head -n1)
	[ -n "$uri" ] && { echo "$uri"; exit 0; }
done
echo "no apt source for Debian bookworm found in /etc/apt" >&2
exit 1
