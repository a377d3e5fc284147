#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kerneldoc-test.sh - kerneldoc.sh finds each kind of fault it claims to,
# and nothing in well-formed code
#
# Usage: test/lint/kerneldoc-test.sh

set -u

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat > "$dir/t.c" <<'C'
#define FOO 1 /* a comment's quote, opened in a directive
		 * and closed here */
/**
 * good() - well-formed: pointer-to-function and array parameters
 * @a:		a
 * @cb:		callback
 * @buf:	buffer
 *
 * Return: 0
 */
int good(int a, void (*cb)(int x), const char buf[6])
{
	return '{' == '}';
}

/**
 * ok_void() - nothing returned, no parameters
 */
__attribute__((noreturn)) void ok_void(void)
{
	for (;;)
		;
}

/**
 * ok_var() - variadic
 * @fmt:	format
 * @...:	arguments
 */
void ok_var(const char *fmt, ...)
{
	(void)fmt;
}

static void ok_static(int x)
{
	(void)x;
}

/**
 * wrong() - names another function
 * @a:	a
 *
 * Return: 0
 */
int right(int a)
{
	return a;
}

/**
 * params() - one parameter missing, one extra
 * @a:	a
 * @c:	not a parameter
 */
void params(int a, int b)
{
}

/**
 * vararg() - variadic without @...
 * @fmt:	format
 */
void vararg(const char *fmt, ...)
{
}

/* nodoc() - a plain comment */
void nodoc(void)
{
}

/**
 * gap() - a blank line after the block
 */

void gap(void)
{
}

/**
 * sdoc() - static, wrong parameter
 * @y:	y
 */
static void sdoc(int x)
{
}

/**
 * nosum - no parentheses
 */
void nosum(void)
{
}

/**
 * noret() - returns a value, says nothing of it
 */
void *noret(void)
{
	return 0;
}

struct __attribute__((packed)) st { int a; };
static const struct st tab[] = { { 1 }, };
int (*fp)(int) = 0;

static int long_nodoc(int x)
{
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	return x;
}

static int short_nodoc(int x)
{
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	return x;
}

/**
 * long_doc() - documented, as long as long_nodoc()
 * @x:	x
 *
 * Return: x + 12
 */
static int long_doc(int x)
{
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	x++;
	return x;
}
C

cat > "$dir/expected" <<'E'
t.c:46: right(): kernel-doc names wrong()
t.c:56: params(): @b not documented
t.c:56: params(): @c documented, not a parameter
t.c:64: vararg(): @... not documented
t.c:69: nodoc(): no kernel-doc block
t.c:73: gap(): kernel-doc block not right before the function
t.c:77: gap(): no kernel-doc block
t.c:85: sdoc(): @x not documented
t.c:85: sdoc(): @y documented, not a parameter
t.c:92: nosum(): kernel-doc does not start with "nosum() - summary"
t.c:99: noret(): returns a value, no "Return:" line
t.c:108: long_nodoc(): static, 16 lines, no kernel-doc block
E

lint="$(cd "$(dirname "$0")" && pwd)/kerneldoc.sh"
cd "$dir" || exit 1
"$lint" t.c > out
rc=$?
if [ $rc -ne 1 ]; then
	echo "kerneldoc-test: exit status $rc for faulty code, not 1"
	exit 1
fi
if ! diff -u expected out; then
	echo "kerneldoc-test: reports differ from the expected ones"
	exit 1
fi
echo "kerneldoc-test: ok"
