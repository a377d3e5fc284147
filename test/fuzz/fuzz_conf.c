// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_conf.c - conf_parse(), the command line, on argument vectors built
 * from the input.
 *
 * Input: byte 0 picks the size of the error buffer (1, 16, 64 or 256
 * bytes: bits 0-1); the rest are the arguments after "passt", separated by
 * NUL bytes (at most 62 of them). Each argument is copied to a buffer of
 * exactly its length plus the terminator, and the error buffer is
 * allocated at exactly the size conf_parse() is told, so ASan sees any
 * access past either. Seeds (gen_corpus): the command lines libvirt and
 * KubeVirt build, the unit tests' good and bad options.
 *
 * Checks: the result is 0, 1 (-h, --version) or -1; on -1 the message is
 * one non-empty line, terminated inside the buffer; on 0 the options
 * conf_check() refuses in combination are not combined (one address
 * family at least, -F or -s, migration options with --vhost-user only, an
 * MTU of 0 or 68 to 65520); parsing the same vector again gives the same
 * result and the same message (the getopt state is reset every time: one
 * input in eight, as it doubles the cost). conf_parse() touches nothing
 * on the host but the user and group databases (--runas): those lookups
 * are replaced here by a fixed table (root, nobody; group nogroup), which
 * keeps the fuzzer fast and its results independent of the machine.
 */
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>

#include "fuzz_common.h"
#include "conf/conf.h"
#include "ctx.h"

#define MAX_ARGS 64

static struct ctx c;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_log_init();
	/* -h and --version print to stdout: not in the fuzzer's output */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	return 0;
}

/* The user and group databases, as far as --runas needs them */
static struct passwd pw_root = { .pw_name = "root", .pw_uid = 0, .pw_gid = 0 };
static struct passwd pw_nobody = { .pw_name = "nobody", .pw_uid = 65534,
				   .pw_gid = 65534 };
static struct group gr_nogroup = { .gr_name = "nogroup", .gr_gid = 65534 };

struct passwd *getpwnam(const char *name)
{
	if (!strcmp(name, "root"))
		return &pw_root;
	if (!strcmp(name, "nobody"))
		return &pw_nobody;
	return NULL;
}

struct passwd *getpwuid(uid_t uid)
{
	if (uid == 0)
		return &pw_root;
	if (uid == 65534)
		return &pw_nobody;
	return NULL;
}

struct group *getgrnam(const char *name)
{
	return strcmp(name, "nogroup") ? NULL : &gr_nogroup;
}

static int parse(char **argv, int argc, char *err, size_t errlen)
{
	return conf_parse(&c, argc, argv, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t errlens[4] = { 1, 16, 64, 256 };
	char *argv[MAX_ARGS + 1], *argv2[MAX_ARGS + 1], *err, *err2;
	size_t errlen, off, end;
	int argc = 0, rc, rc2, i;

	if (size < 1 || size > 4096)
		return 0;
	errlen = errlens[data[0] & 3];

	argv[argc++] = strdup("passt");
	for (off = 1; off < size && argc < MAX_ARGS - 1; off = end + 1) {
		const uint8_t *z = memchr(data + off, 0, size - off);

		end = z ? (size_t)(z - data) : size;
		argv[argc] = malloc(end - off + 1);
		FZ_CHECK(argv[argc]);
		memcpy(argv[argc], data + off, end - off);
		argv[argc][end - off] = '\0';
		argc++;
	}
	argv[argc] = NULL;
	/* getopt_long() permutes the vector, not the strings: keep a copy */
	memcpy(argv2, argv, sizeof(argv[0]) * (argc + 1));

	err = malloc(errlen);
	err2 = malloc(errlen);
	FZ_CHECK(err && err2);
	memset(err, 0x55, errlen);

	rc = parse(argv, argc, err, errlen);
	FZ_CHECK(rc == 0 || rc == 1 || rc == -1);
	FZ_CHECK(memchr(err, '\0', errlen));
	if (rc == -1) {
		FZ_CHECK(err[0] || errlen == 1);
		FZ_CHECK(!strchr(err, '\n'));
	} else if (rc == 0) {
		FZ_CHECK(err[0] == '\0');
		FZ_CHECK(!(c.no_v4 && c.no_v6));
		FZ_CHECK(!(c.fd_inherited >= 0 && c.sock_path[0]));
		FZ_CHECK(!c.mtu || (c.mtu >= 68 && c.mtu <= 65520));
		FZ_CHECK(memchr(c.sock_path, '\0', sizeof(c.sock_path)));
		FZ_CHECK(memchr(c.pid_file, '\0', sizeof(c.pid_file)));
		FZ_CHECK(memchr(c.log_file, '\0', sizeof(c.log_file)));
		FZ_CHECK(memchr(c.hostname, '\0', sizeof(c.hostname)));
		FZ_CHECK(c.repair_mode != REPAIR_MODE_DIRECT);
		FZ_CHECK(c.repair_mode != REPAIR_MODE_NONE ||
			 !c.repair_path[0]);
		if (c.mode != MODE_VU)
			FZ_CHECK(!c.repair_path[0] && !c.migrate_exit &&
				 c.repair_mode == REPAIR_MODE_NONE &&
				 !c.migrate_no_linger &&
				 c.migrate_linger_timeout ==
				 MIGRATE_LINGER_DEFAULT_S);
	}

	/* Same vector (original order), same outcome */
	if (!(data[0] & 0x1c)) {
		memset(err2, 0x55, errlen);
		rc2 = parse(argv2, argc, err2, errlen);
		FZ_CHECK(rc2 == rc);
		FZ_CHECK(!strcmp(err, err2));
	}

	for (i = 0; i < argc; i++)
		free(argv2[i]);
	free(err);
	free(err2);
	return 0;
}
