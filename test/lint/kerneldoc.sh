#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kerneldoc.sh - every non-static function definition, and every static one
# over 15 lines, carries a kernel-doc block, and every kernel-doc block names
# its function and its parameters
#
# Usage: test/lint/kerneldoc.sh [PATH...]
#
# PATH is a C file or a folder (its *.c files, not recursive). Without PATH,
# the daemon's sources: the top-level *.c files (passt-repair.c among them)
# and conf/ tap/ local/ stream/ vhost/ net/ fwd/ tcp/ udp/ icmp/ migrate/
# repair/.
# test/ is not checked; those paths are relative to the top of the tree,
# wherever the script is run from. Given paths are relative to the current directory.
#
# A kernel-doc block is a comment opened with "/**" that ends on the line
# just before the definition, as everywhere in the tree:
#
#	/**
#	 * name() - summary, continued on tab-indented lines if long
#	 * @param:	description
#	 *
#	 * Longer description
#	 *
#	 * Return: what it returns
#	 */
#
# Reported, one line each (file:line: function(): problem):
#  - a non-static function with no kernel-doc block right before it;
#  - a static function longer than 15 lines, counted from the first line
#    of its definition to its closing brace, with no kernel-doc block
#    right before it (short static helpers may go without);
#  - a block (static function or not) whose first line doesn't name the
#    function as "name() - summary";
#  - a parameter without an "@param:" line, and an "@name:" line for no
#    parameter (variadic functions document "@...:");
#  - a function returning a value whose block has no "Return:" line;
#  - a block naming a function ("name() - ...") that is not right before
#    a definition (it drifted away from its function).
#
# How it reads C: a character scanner that skips comments, strings,
# character constants and preprocessor lines, and keeps the brace depth.
# At depth 0, the text from the end of the previous declaration to a "{"
# is a function definition if, with __attribute__((...)) removed, it holds
# no "=" and ends in the ")" closing the parameter list. That is enough for
# this tree's kernel-style C; it isn't a C parser (no K&R definitions, no
# functions returning function pointers).
#
# Exit status: 0 if nothing is reported, 1 otherwise, 2 on bad usage.

set -u

if [ $# -eq 0 ]; then
	cd "$(dirname "$0")/../.." || exit 2
	set -- *.c conf tap local stream vhost net fwd tcp udp icmp migrate repair
fi

files=()
for p in "$@"; do
	if [ -d "$p" ]; then
		for f in "$p"/*.c; do
			[ -e "$f" ] && files+=("$f")
		done
	elif [ -f "$p" ]; then
		files+=("$p")
	else
		echo "kerneldoc.sh: no such file or folder: $p" >&2
		exit 2
	fi
done
[ ${#files[@]} -eq 0 ] && exit 0

exec awk -v MAX_UNDOC=15 '
function reset_decl() {
	decl = ""
	decl_line = 0
}

# Remove every __attribute__((...)) from s
function strip_attr(s,    i, j, d, c) {
	while ((i = index(s, "__attribute__")) > 0) {
		j = i + length("__attribute__")
		while (substr(s, j, 1) ~ /[ \t]/)
			j++
		if (substr(s, j, 1) != "(")
			break
		d = 0
		for (; j <= length(s); j++) {
			c = substr(s, j, 1)
			if (c == "(")
				d++
			else if (c == ")" && --d == 0)
				break
		}
		s = substr(s, 1, i - 1) " " substr(s, j + 1)
	}
	return s
}

function trim(s) {
	sub(/^[ \t\n]+/, "", s)
	sub(/[ \t\n]+$/, "", s)
	return s
}

# Name of one parameter declaration, "" if unnamed
function param_name(p,    m) {
	p = trim(p)
	if (p == "void" || p == "")
		return ""
	if (p == "...")
		return "..."
	if (match(p, /\([ \t]*\*[ \t]*(const[ \t]+)?[A-Za-z_][A-Za-z0-9_]*/)) {
		m = substr(p, RSTART, RLENGTH)
		sub(/^.*[^A-Za-z0-9_]/, "", m)
		return m
	}
	while (sub(/\[[^]]*\][ \t]*$/, "", p))
		;
	p = trim(p)
	if (!match(p, /[A-Za-z_][A-Za-z0-9_]*$/))
		return ""
	m = substr(p, RSTART, RLENGTH)
	# a lone type ("int") has no name; any other single word is a type
	if (p == m)
		return ""
	return m
}

# Function a kernel-doc block names on its first line, "" if none
function doc_fn(doc,    a, n, k, c) {
	n = split(doc, a, "\n")
	for (k = 1; k <= n; k++) {
		c = a[k]
		sub(/^[ \t]*\/\*\*[ \t]*/, "", c)
		sub(/^[ \t]*\*[ \t]?/, "", c)
		c = trim(c)
		if (c == "")
			continue
		if (c !~ /^[A-Za-z_][A-Za-z0-9_]*\(\) - /)
			return ""
		sub(/\(\).*/, "", c)
		return c
	}
	return ""
}

# A block naming a function is dropped without reaching a definition
function drop_doc(    n) {
	if (last_doc != "" && (n = doc_fn(last_doc)) != "")
		report(last_doc_start, n, "kernel-doc block not right " \
		       "before the function")
	last_doc = ""
}

function report(line, name, msg) {
	printf "%s:%d: %s(): %s\n", FILENAME, line, name, msg
	bad++
}

function check_def(text, line,    s, i, j, c, d, name, plist, np, params,
		   n, k, have, doc, docname, seen, a, rtype, static_fn) {
	s = strip_attr(text)
	if (index(s, "=") || !index(s, "("))
		return
	s = trim(s)
	if (substr(s, length(s), 1) != ")")
		return
	i = index(s, "(")
	name = substr(s, 1, i - 1)
	if (!match(name, /[A-Za-z_][A-Za-z0-9_]*[ \t]*$/))
		return
	name = trim(substr(name, RSTART, RLENGTH))
	# the parameter list: from the first "(" to its match
	d = 0
	for (j = i; j <= length(s); j++) {
		c = substr(s, j, 1)
		if (c == "(")
			d++
		else if (c == ")" && --d == 0)
			break
	}
	plist = substr(s, i + 1, j - i - 1)
	# split at commas outside nested parentheses
	np = 0
	d = 0
	k = 1
	for (j = 1; j <= length(plist) + 1; j++) {
		c = substr(plist, j, 1)
		if (c == "(" || c == "[")
			d++
		else if (c == ")" || c == "]")
			d--
		else if ((c == "," && d == 0) || j > length(plist)) {
			n = param_name(substr(plist, k, j - k))
			if (n != "")
				params[++np] = n
			k = j + 1
		}
	}

	static_fn = (s ~ /(^|[^A-Za-z0-9_])static([^A-Za-z0-9_]|$)/)

	have = (last_doc != "" && last_doc_end == line - 1)
	if (!have) {
		drop_doc()
		if (!static_fn)
			report(line, name, "no kernel-doc block")
		else {
			# judged at its closing brace, by its length
			undoc_name = name
			undoc_line = line
		}
		return
	}

	doc = last_doc
	last_doc = ""
	n = split(doc, a, "\n")
	# first line of text after "/**"
	docname = ""
	for (k = 1; k <= n; k++) {
		c = a[k]
		sub(/^[ \t]*\/\*\*[ \t]*/, "", c)
		sub(/^[ \t]*\*[ \t]?/, "", c)
		if (trim(c) != "") {
			docname = trim(c)
			break
		}
	}
	if (docname !~ /^[A-Za-z_][A-Za-z0-9_]*\(\) - ./)
		report(line, name, "kernel-doc does not start with \"" name \
		       "() - summary\"")
	else {
		sub(/\(\).*/, "", docname)
		if (docname != name)
			report(line, name, "kernel-doc names " docname "()")
	}

	# a value returned is described
	rtype = substr(s, 1, i - 1)
	if ((rtype !~ /(^|[^A-Za-z0-9_])void[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*$/ ||
	     index(rtype, "*")) && doc !~ /\n[ \t]*\*[ \t]*Return:/)
		report(line, name, "returns a value, no \"Return:\" line")

	for (k = 1; k <= n; k++) {
		c = a[k]
		if (match(c, /^[ \t]*\*[ \t]*@([A-Za-z0-9_]+|\.\.\.):/)) {
			c = substr(c, RSTART, RLENGTH)
			sub(/^[ \t]*\*[ \t]*@/, "", c)
			sub(/:$/, "", c)
			seen[c] = 1
		}
	}
	for (k = 1; k <= np; k++) {
		if (!(params[k] in seen))
			report(line, name, "@" params[k] " not documented")
		have_p[params[k]] = 1
	}
	for (c in seen)
		if (!(c in have_p))
			report(line, name, "@" c " documented, not a parameter")
	delete have_p
}

FNR == 1 {
	undoc_name = ""
	depth = 0
	state = ""	# "", "comment", "str", "chr"
	reset_decl()
	last_doc = ""
	last_doc_end = -1
	cpp = 0
	com_cpp = 0
}

{
	line = $0
	# a preprocessor line, its continuations, and a comment opened in one:
	# scanned for comments and strings only
	incpp = (state == "" && (cpp || line ~ /^[ \t]*#/)) ||
		(state == "comment" && com_cpp)
	if (state == "comment")
		com = com "\n"
	len = length(line)
	for (i = 1; i <= len; i++) {
		c = substr(line, i, 1)
		if (state == "comment") {
			com = com c
			if (c == "*" && substr(line, i + 1, 1) == "/") {
				com = com "/"
				i++
				state = ""
				if (com_cpp) {
					com_cpp = 0
				} else if (depth == 0 && decl == "") {
					drop_doc()
					if (substr(com, 1, 3) == "/**" &&
					    com != "/**/") {
						last_doc = com
						last_doc_start = com_line
						last_doc_end = FNR
					}
				}
			}
			continue
		}
		if (state == "str" || state == "chr") {
			if (c == "\\")
				i++
			else if ((state == "str" && c == "\"") ||
				 (state == "chr" && c == "\x27"))
				state = ""
			continue
		}
		two = substr(line, i, 2)
		if (two == "/*") {
			state = "comment"
			com_cpp = incpp
			com_line = FNR
			com = "/*"
			i++
			continue
		}
		if (two == "//")
			break
		if (c == "\"") {
			state = "str"
			continue
		}
		if (c == "\x27") {
			state = "chr"
			continue
		}
		if (incpp)
			continue
		if (depth > 0) {
			if (c == "{")
				depth++
			else if (c == "}" && --depth == 0) {
				reset_decl()
				if (undoc_name != "" &&
				    FNR - undoc_line + 1 > MAX_UNDOC)
					report(undoc_line, undoc_name,
					       "static, " (FNR - undoc_line + 1) \
					       " lines, no kernel-doc block")
				undoc_name = ""
			}
			continue
		}
		if (c == "{") {
			undoc_name = ""
			check_def(decl, decl_line)
			depth = 1
			drop_doc()
			continue
		}
		if (c == ";") {
			reset_decl()
			last_doc = ""
			continue
		}
		if (c == "}") {
			reset_decl()
			continue
		}
		if (decl == "" && c ~ /[ \t]/)
			continue
		if (decl == "")
			decl_line = FNR
		decl = decl c
	}
	cpp = incpp && state == "" && line ~ /\\$/
	if (depth == 0 && decl != "")
		decl = decl " "
}

END {
	drop_doc()
	exit bad ? 1 : 0
}
' "${files[@]}"
