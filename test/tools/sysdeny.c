// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sysdeny.c - run a program with some system calls failing, for tests.
 *
 * Usage: sysdeny [-e ERRNO] RULE... -- PROGRAM [ARG...]
 *
 * Installs a seccomp filter that makes each RULE's system call fail with
 * ERRNO (default EPERM) instead of running, then executes PROGRAM, which
 * inherits the filter (and can only add its own on top). A RULE is
 *
 *   NAME               every call of NAME fails
 *   NAME:ARG:MASK:VAL  only calls whose argument number ARG (0 to 5),
 *                      masked with MASK, equals VAL; numbers in C syntax
 *
 * for example "unshare:0:0x10000000:0x10000000" for an unshare() that
 * asks for a new user namespace, as a kernel or container runtime that
 * doesn't allow them would refuse it. Any other call, and every call of
 * NAME that the argument check doesn't match, runs normally.
 *
 * Started with CAP_SYS_ADMIN (as root), sysdeny leaves no_new_privs alone,
 * so that PROGRAM starts with the privileges it would have had without
 * it; without that capability the kernel wants no_new_privs for a filter,
 * and PROGRAM inherits it.
 *
 * Exit status: PROGRAM's (sysdeny execs it); 2 on a usage or set-up error.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>

#define USAGE "usage: sysdeny [-e ERRNO] RULE... -- PROGRAM [ARG...]\n" \
	      "  RULE: NAME, or NAME:ARG:MASK:VALUE\n"

static void usage(void)
{
	fputs(USAGE, stderr);
	exit(2);
}

/* Parse a number in C syntax (0x, 0 prefixes) into @v; 0 or -1 */
static int num(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -1 : 0;
}

/* Add one RULE to @f; 0 or -1 */
static int rule_add(scmp_filter_ctx f, uint32_t act, const char *rule)
{
	char name[64], *p, *q;
	uint64_t arg, mask, val;
	int nr, rc;

	if (snprintf(name, sizeof(name), "%s", rule) >= (int)sizeof(name))
		return -1;
	p = strchr(name, ':');
	if (p)
		*p++ = '\0';
	nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR) {
		fprintf(stderr, "sysdeny: unknown system call '%s'\n", name);
		return -1;
	}
	if (!p) {
		rc = seccomp_rule_add(f, act, nr, 0);
	} else {
		if (!(q = strchr(p, ':')))
			return -1;
		*q++ = '\0';
		if (num(p, &arg) || arg > 5)
			return -1;
		p = q;
		if (!(q = strchr(p, ':')))
			return -1;
		*q++ = '\0';
		if (num(p, &mask) || num(q, &val))
			return -1;
		rc = seccomp_rule_add(f, act, nr, 1,
				      SCMP_CMP((unsigned)arg,
					       SCMP_CMP_MASKED_EQ, mask, val));
	}
	if (rc) {
		fprintf(stderr, "sysdeny: rule '%s': %s\n", rule,
			strerror(-rc));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	cap_flag_value_t admin = CAP_CLEAR;
	scmp_filter_ctx f;
	int i, e = EPERM, rc;
	uint64_t v;
	cap_t caps;

	i = 1;
	if (i + 1 < argc && !strcmp(argv[i], "-e")) {
		if (num(argv[i + 1], &v) || !v || v > 4095)
			usage();
		e = (int)v;
		i += 2;
	}

	f = seccomp_init(SCMP_ACT_ALLOW);
	if (!f) {
		fprintf(stderr, "sysdeny: seccomp_init failed\n");
		return 2;
	}
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (rule_add(f, SCMP_ACT_ERRNO((unsigned)e), argv[i])) {
			fprintf(stderr, "sysdeny: bad rule '%s'\n", argv[i]);
			usage();
		}
	}
	if (i + 1 >= argc)
		usage();

	/* Keep the program's no_new_privs as it would be without us */
	caps = cap_get_proc();
	if (caps) {
		cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &admin);
		cap_free(caps);
	}
	if (admin == CAP_SET &&
	    (rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 0))) {
		fprintf(stderr, "sysdeny: no_new_privs: %s\n", strerror(-rc));
		return 2;
	}
	if ((rc = seccomp_load(f))) {
		fprintf(stderr, "sysdeny: can't load the filter: %s\n",
			strerror(-rc));
		return 2;
	}
	seccomp_release(f);

	execvp(argv[i + 1], argv + i + 1);
	fprintf(stderr, "sysdeny: %s: %s\n", argv[i + 1], strerror(errno));
	return 2;
}
