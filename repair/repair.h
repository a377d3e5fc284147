/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * repair.h - turning TCP_REPAIR on and off for our sockets: directly when
 * we hold CAP_NET_ADMIN, through the passt-repair helper otherwise.
 */
#ifndef REPAIR_REPAIR_H
#define REPAIR_REPAIR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"

struct ctx;

/* Commands, as setsockopt(TCP_REPAIR) and the helper protocol take them */
#define REPAIR_ON	1
#define REPAIR_OFF	0
#define REPAIR_OFF_NO_WP (-1)

/* File descriptors in one helper message: the kernel's SCM_MAX_FD */
#define REPAIR_FDS_MAX	253

/**
 * typedef repair_peer_fn - may the peer of a helper's connection drive us?
 * @fd:		the helper's connected UNIX domain socket
 * @uid:	the peer's user, set if it could be told
 *
 * Return: 0 if so, -EPERM if it runs as another user, another -errno if
 *	   that can't be told (the helper is refused then too)
 */
typedef int (*repair_peer_fn)(int fd, uid_t *uid);

/**
 * typedef repair_done_fn - a job repair_run() left to the loop is over
 * @c:		execution context
 * @rc:		0 if every socket got every command, -errno if not (the
 *		helper was dropped: some sockets may have some of them)
 */
typedef void (*repair_done_fn)(struct ctx *c, int rc);

void repair_init(struct ctx *c, repair_peer_fn peer_check);
bool repair_available(struct ctx *c, int wait_ms);
bool repair_seen(void);
int repair_set(struct ctx *c, const int *fds, unsigned n, int cmd);
int repair_start(struct ctx *c, const int *fds, unsigned n, int cmd);
int repair_wait(struct ctx *c);

/**
 * struct repair_pipe - TCP_REPAIR for a list of sockets, a chunk at a
 *			time, the caller working on each chunk while the
 *			helper takes the next one (repair_pipe_ready())
 * @fds:	the sockets
 * @n:		how many
 * @cmd:	REPAIR_ON, REPAIR_OFF or REPAIR_OFF_NO_WP
 * @chunk:	sockets per chunk
 * @started:	@fds up to there were asked for
 * @done:	@fds up to there were answered
 * @start_rc:	how the start of the chunk in flight went (-errno: failed)
 * @failed:	the chunk that ended at @done failed (some of its sockets
 *		may have the command, some not)
 */
struct repair_pipe {
	const int *fds;
	unsigned n;
	int cmd;
	unsigned chunk;
	unsigned started;
	unsigned done;
	int start_rc;
	bool failed;
};

void repair_pipe_start(struct ctx *c, struct repair_pipe *rp, const int *fds,
		       unsigned n, int cmd, unsigned chunk);
bool repair_pipe_ready(struct ctx *c, struct repair_pipe *rp, unsigned pos);
int repair_run(struct ctx *c, const int *fds, unsigned n, const int *cmds,
	       unsigned ncmd, repair_done_fn cb);
bool repair_busy(void);
bool repair_settle(struct ctx *c);
bool repair_pending(int fd);
void repair_phase_begin(void);
void repair_phase_end(void);
void repair_timer(struct ctx *c, uint64_t now);
void repair_handler(struct ctx *c, union epoll_ref ref, uint32_t events);
void repair_close(struct ctx *c);
void repair_cleanup(struct ctx *c);

#endif /* REPAIR_REPAIR_H */
