/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_loop.h - registrations in place of epoll, for harnesses that run
 * the daemon's handlers themselves: loop_add(), loop_mod() and loop_del()
 * record what would be registered, and the harness polls regs[] itself.
 *
 * Include once, after defining MAX_REGS and declaring the harness's
 * "static struct ctx c". Each harness is its own program, so these
 * definitions replace loop.c's at link time.
 */
#ifndef FUZZ_LOOP_H
#define FUZZ_LOOP_H

#include <fcntl.h>
#include <stdbool.h>

#include "loop.h"

static struct {
	int fd;
	uint32_t events;
	union epoll_ref ref;
	bool fired;	/* EPOLLET: dispatched once since registered */
} regs[MAX_REGS];
static unsigned n_regs;

static int reg_find(int fd)
{
	unsigned i;

	for (i = 0; i < n_regs; i++)
		if (regs[i].fd == fd)
			return (int)i;
	return -1;
}

int loop_add(struct ctx *cx, int fd, uint32_t events, union epoll_ref ref)
{
	FZ_CHECK(cx == &c && fd >= 0);
	FZ_CHECK(reg_find(fd) < 0); /* epoll would say EEXIST */
	FZ_CHECK(fcntl(fd, F_GETFD) >= 0);
	if (n_regs >= MAX_REGS)
		return -ENOSPC;
	regs[n_regs].fd = fd;
	regs[n_regs].events = events;
	regs[n_regs].ref = ref;
	regs[n_regs].fired = false;
	n_regs++;
	return 0;
}

int loop_mod(struct ctx *cx, int fd, uint32_t events, union epoll_ref ref)
{
	int i = reg_find(fd);

	if (i < 0)
		return loop_add(cx, fd, events, ref);
	regs[i].events = events;
	regs[i].ref = ref;
	regs[i].fired = false;
	return 0;
}

void loop_del(struct ctx *cx, int fd)
{
	int i = reg_find(fd);

	(void)cx;
	if (i >= 0)
		regs[i] = regs[--n_regs];
}

/* Generations, as loop.c hands them out */
uint32_t loop_gen_next(void)
{
	static uint32_t gen;

	if (!++gen)
		gen = 1;
	return gen;
}

#endif /* FUZZ_LOOP_H */
