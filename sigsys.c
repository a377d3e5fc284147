// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sigsys.c - a system call that a seccomp filter of ours denies explains
 * itself: one line naming the call and the profile, then the process exits.
 *
 * Theory of operation
 *
 * Our filters (isolation_seccomp.c: the daemon's profiles;
 * isolation_peer.c: the peer credential checker's; passt-repair.c) don't
 * kill outright. Their default action is
 * SECCOMP_RET_TRAP: the kernel doesn't make the call, and sends SIGSYS to
 * the thread that tried, with the call's number and architecture in the
 * signal's information (si_syscall, si_arch). Our handler writes one line,
 *
 *   PREFIX: seccomp profile PROFILE denied system call NAME (NR), exiting
 *
 * through the program's emitter (the daemon: its log, wherever it goes;
 * the checker: its socket to the daemon, which logs it; passt-repair:
 * standard error), then calls _exit() with the program's status. So a
 * user who meets a libc that makes a call we didn't expect has a line to
 * report, where before the process just vanished.
 *
 * Fail-closed, as a kill was:
 *  - nothing of the program runs after a denied call, and the call is
 *    never made: the handler never returns (a return would resume the
 *    program as if the call had failed), and calls nothing but the
 *    emitter and _exit();
 *  - the handler is installed before the filter is loaded, with SIGSYS
 *    unblocked; the filters allow neither rt_sigaction() nor
 *    rt_sigprocmask() (sanitizer builds aside), so nothing changes that
 *    afterwards. If SIGSYS were blocked or ignored all the same, the
 *    kernel would reset it to its default action and kill the process;
 *  - an emitter that made a denied call itself would meet SIGSYS blocked
 *    (we're in its handler): the kernel kills the process then, too.
 *
 * The handler may only make async-signal-safe calls that every profile
 * allows: it formats the line by hand, and takes the call's name from a
 * table filled before the filter went in (libseccomp allocates names).
 * A call from another architecture (the i386 or x32 entry points) is
 * named by number and architecture.
 *
 * With -DISOLATION_SECCOMP_LOG (development only, never a release) the
 * action is SCMP_ACT_LOG instead: denied calls are made, and the kernel
 * logs each one (audit type 1326, "syscall=NR"): how the allow-lists
 * are found (isolation_seccomp.c says how).
 */
#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "sigsys.h"

#ifndef SYS_SECCOMP
#define SYS_SECCOMP	1	/* si_code of a seccomp SIGSYS (asm/siginfo.h) */
#endif

/* Highest native system call number we name (x86_64: about 470) */
#define SIGSYS_NAMES	1024

static const char *sigsys_names[SIGSYS_NAMES];
static const char *sigsys_prefix = "";
static const char *sigsys_profile = "";
static sigsys_emit_fn sigsys_emit;
static int sigsys_status = 1;
static uint32_t sigsys_arch;

/**
 * sigsys_action() - the action of our filters for a call not on the list
 *
 * Return: SCMP_ACT_TRAP (see the top of the file), or SCMP_ACT_LOG in a
 *	   -DISOLATION_SECCOMP_LOG build
 */
uint32_t sigsys_action(void)
{
#ifdef ISOLATION_SECCOMP_LOG
	return SCMP_ACT_LOG;
#else
	return SCMP_ACT_TRAP;
#endif
}

/* Append @s to @buf (@size bytes, @n used), as far as it fits */
static size_t sigsys_cat(char *buf, size_t size, size_t n, const char *s)
{
	while (*s && n + 1 < size)
		buf[n++] = *s++;
	buf[n] = '\0';
	return n;
}

/* Append @v to @buf in @base (10 or 16), as far as it fits */
static size_t sigsys_num(char *buf, size_t size, size_t n, unsigned long v,
			 unsigned base)
{
	char d[24];
	int i = 0;

	do {
		d[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && i < (int)sizeof(d));
	while (i && n + 1 < size)
		buf[n++] = d[--i];
	buf[n] = '\0';
	return n;
}

/**
 * sigsys_format() - the line for a denied call, without a newline
 * @buf:	where to write it, NUL-terminated, cut if it doesn't fit
 * @size:	size of @buf, at least 1
 * @nr:		the call's number
 * @arch:	its architecture (AUDIT_ARCH_*), from the signal
 *
 * Async-signal-safe: no allocation, no locale, no stdio.
 *
 * Return: length of the line
 */
static size_t sigsys_format(char *buf, size_t size, int nr, uint32_t arch)
{
	size_t n = 0;

	buf[0] = '\0';
	n = sigsys_cat(buf, size, n, sigsys_prefix);
	n = sigsys_cat(buf, size, n, ": seccomp profile ");
	n = sigsys_cat(buf, size, n, sigsys_profile);
	n = sigsys_cat(buf, size, n, " denied system call ");
	if (arch == sigsys_arch && nr >= 0 && nr < SIGSYS_NAMES &&
	    sigsys_names[nr]) {
		n = sigsys_cat(buf, size, n, sigsys_names[nr]);
		n = sigsys_cat(buf, size, n, " (");
		n = sigsys_num(buf, size, n, (unsigned long)nr, 10);
		n = sigsys_cat(buf, size, n, ")");
	} else {
		n = sigsys_num(buf, size, n, (unsigned long)(unsigned)nr, 10);
		n = sigsys_cat(buf, size, n, " (architecture 0x");
		n = sigsys_num(buf, size, n, arch, 16);
		n = sigsys_cat(buf, size, n, ")");
	}
	return sigsys_cat(buf, size, n, ", exiting");
}

/**
 * sigsys_handler() - SIGSYS from our filter: say which call, then exit
 * @sig:	signal number, unused
 * @si:		signal information, with the syscall denied
 * @uc:		signal context, unused
 *
 * See the top of the file.
 */
static void sigsys_handler(int sig, siginfo_t *si, void *uc)
{
	char line[256];
	size_t n;

	(void)sig;
	(void)uc;
	if (si->si_code != SYS_SECCOMP)
		return;		/* kill -SYS: not a call of ours denied */
	n = sigsys_format(line, sizeof(line) - 1, si->si_syscall,
			  si->si_arch);
	line[n++] = '\n';
	if (sigsys_emit)
		sigsys_emit(line, n);
	_exit(sigsys_status);
}

/**
 * sigsys_arm() - install the handler, before a filter is loaded
 * @prefix:	what the line starts with ("Sandbox", "passt-repair"):
 *		static, or kept for the process's lifetime
 * @profile:	the filter's name, kept the same way
 * @emit:	where the line goes (called from the handler)
 * @status:	exit status after a denied call
 *
 * Resolves the name of every native system call now: the handler can't.
 *
 * Return: 0, or -errno if the handler can't be installed
 */
int sigsys_arm(const char *prefix, const char *profile, sigsys_emit_fn emit,
	       int status)
{
	struct sigaction sa = { .sa_sigaction = sigsys_handler,
				.sa_flags = SA_SIGINFO };
	sigset_t set;
	int nr;

	for (nr = 0; nr < SIGSYS_NAMES; nr++) {
		if (!sigsys_names[nr])
			sigsys_names[nr] = seccomp_syscall_resolve_num_arch(
				SCMP_ARCH_NATIVE, nr);
	}
	sigsys_arch = seccomp_arch_native();
	sigsys_prefix = prefix;
	sigsys_profile = profile;
	sigsys_emit = emit;
	sigsys_status = status;

	sigemptyset(&sa.sa_mask);
	sigfillset(&sa.sa_mask);	/* nothing else runs in between */
	if (sigaction(SIGSYS, &sa, NULL))
		return -errno;
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	if (sigprocmask(SIG_UNBLOCK, &set, NULL))
		return -errno;
	return 0;
}
