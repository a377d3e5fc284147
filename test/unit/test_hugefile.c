// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * test_hugefile.c - hugefile.c for real: the file is unlinked, of the size
 * asked for, close-on-exec, on a tmpfs of that size (nothing more fits),
 * and mapped aligned it gets huge pages mapped whole (where the kernel
 * gives tmpfs huge pages); an unprivileged caller (nobody) gets one too,
 * through a user namespace, as an unprivileged daemon in a pod would;
 * PASST_NO_HUGEFILE=1 says no, and why.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "env.h"
#include "hugefile.h"

#define SIZE (8UL * 1024 * 1024)

/* Can tmpfs have huge pages here at all? */
static bool thp_for_tmpfs(void)
{
	char buf[128] = { 0 };
	FILE *f;

	f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return buf[0] && !strstr(buf, "[deny]");
}

/* KiB of shmem mapped by huge pages in our mapping starting at @addr */
static long pmd_mapped_kib(const void *addr)
{
	char line[256], start[32];
	bool in = false;
	long kib = -1;
	FILE *f;

	snprintf(start, sizeof(start), "%lx-", (unsigned long)addr);
	f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	/* The first ShmemPmdMapped after our mapping's line is its own */
	while (fgets(line, sizeof(line), f)) {
		if (!in) {
			in = !strncmp(line, start, strlen(start));
			continue;
		}
		if (sscanf(line, "ShmemPmdMapped: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

static void test_unlinked_sized_file_on_our_own_tmpfs(void **state)
{
	const char *why = "unset";
	struct statfs sfs;
	struct stat st;
	uint8_t *base, *p;
	size_t i;
	int fd;

	(void)state;
	fd = hugefile_open(SIZE, &why);
	assert_true(fd >= 0);
	assert_null(why);

	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, SIZE);
	assert_int_equal(st.st_nlink, 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(fstatfs(fd, &sfs), 0);
	assert_int_equal(sfs.f_type, TMPFS_MAGIC);

	/* The tmpfs holds the file and no more */
	assert_int_equal(fallocate(fd, 0, 0, SIZE), 0);
	assert_int_not_equal(fallocate(fd, 0, SIZE, 1024 * 1024), 0);
	assert_int_equal(errno, ENOSPC);

	/* Aligned, it's mapped with huge pages, where tmpfs has them */
	base = mmap(NULL, SIZE + HUGEFILE_ALIGN, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(base != MAP_FAILED);
	p = base + (HUGEFILE_ALIGN - (uintptr_t)base % HUGEFILE_ALIGN) %
		   HUGEFILE_ALIGN;
	assert_true(mmap(p, SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED);
	for (i = 0; i < SIZE; i += 4096)
		p[i] = (uint8_t)(i >> 12);
	for (i = 0; i < SIZE; i += 4096)
		assert_int_equal(p[i], (uint8_t)(i >> 12));
	if (thp_for_tmpfs())
		assert_true(pmd_mapped_kib(p) > 0);
	else
		printf("hugefile: no huge pages for tmpfs here, not checked\n");

	munmap(base, SIZE + HUGEFILE_ALIGN);
	close(fd);
}

/* Is the number in sysctl file @path positive? True if there's no file */
static bool sysctl_positive(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = 1;

	if (!f)
		return true;
	if (fscanf(f, "%ld", &v) != 1)
		v = 0;
	fclose(f);
	return v > 0;
}

/* Unprivileged, as in a pod: through a user namespace of its own */
static void test_unprivileged_caller_gets_one(void **state)
{
	int st;
	pid_t pid;

	(void)state;
	if (geteuid()) {
		printf("hugefile: not root, can't drop to nobody: skipped\n");
		return;
	}
	if (!sysctl_positive("/proc/sys/user/max_user_namespaces") ||
	    !sysctl_positive("/proc/sys/kernel/unprivileged_userns_clone")) {
		printf("hugefile: no unprivileged user namespaces: skipped\n");
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		const char *why = "unset";
		int fd;

		/* As a daemon exec()ed as nobody would be: dumpable, so that
		 * it owns its /proc/self files (uid_map)
		 */
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_DUMPABLE, 1))
			_exit(2);
		fd = hugefile_open(SIZE, &why);
		if (fd < 0) {
			fprintf(stderr, "hugefile as nobody: %s\n", why);
			_exit(1);
		}
		_exit(why ? 3 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_disabled_by_environment(void **state)
{
	const char *why = NULL;

	(void)state;
	setenv("PASST_NO_HUGEFILE", "1", 1);
	env_init();
	assert_int_equal(hugefile_open(SIZE, &why), -1);
	assert_string_equal(why, "PASST_NO_HUGEFILE");
	unsetenv("PASST_NO_HUGEFILE");
	env_init();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unlinked_sized_file_on_our_own_tmpfs),
		cmocka_unit_test(test_unprivileged_caller_gets_one),
		cmocka_unit_test(test_disabled_by_environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
