// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * listen.c - bind, listen on and accept from the front-end's UNIX socket.
 *
 * Theory of operation
 *
 * Both front-ends (qemu stream and vhost-user) are reached through a UNIX
 * stream socket: the path given with -s, or the first free
 * /tmp/passt_N.socket (N = 1..99). We bind it before daemonizing, so that
 * whoever started us can launch QEMU as soon as we return.
 *
 * A path that is in use is probed with connect(): if somebody answers,
 * another instance is serving it and we refuse to steal it; if the
 * connection is refused, the file is a stale socket left by a dead
 * instance, and we unlink it and bind again. The socket file is ours from
 * then on and tap_listen_cleanup() removes it at exit.
 *
 * The socket is registered with the event loop as REF_TAP_LISTEN; the loop
 * hands the event to the front-end of the configured mode, which calls
 * tap_accept(). What to do with an extra client is the front-end's call
 * (both turn it away: one front-end at a time).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "loop.h"
#include "rmfile.h"
#include "tap/listen.h"

static bool listen_path_ours;		/* we created c->sock_path */

/**
 * tap_try_bind() - bind a socket to a path, replacing a stale socket file
 * @fd:		UNIX domain socket
 * @path:	path to bind to
 *
 * Return: 0 or -errno
 */
static int tap_try_bind(int fd, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int probe, rc;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)))
		return 0;
	if (errno != EADDRINUSE)
		return -errno;

	/* Is somebody listening there, or is it a stale socket file? */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	rc = connect(probe, (struct sockaddr *)&a, sizeof(a));
	close(probe);
	if (!rc || errno != ECONNREFUSED)
		return -EADDRINUSE;

	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
		return -errno;
	return 0;
}

/**
 * tap_listen() - bind and listen on the front-end socket, register it
 * @c:		execution context; c->sock_path is filled in if empty
 *
 * Return: 0; dies on failures, which are configuration errors here
 */
int tap_listen(struct ctx *c)
{
	int fd, rc = -EADDRINUSE, i;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die_perror("UNIX socket");

	if (c->sock_path[0]) {
		rc = tap_try_bind(fd, c->sock_path);
		if (rc == -EADDRINUSE)
			die("%s: another instance is already listening there",
			    c->sock_path);
		if (rc) {
			errno = -rc;
			die_perror("Can't bind UNIX socket %s", c->sock_path);
		}
	} else {
		for (i = 1; i < 100 && rc; i++) {
			snprintf(c->sock_path, sizeof(c->sock_path),
				 "/tmp/passt_%i.socket", i);
			rc = tap_try_bind(fd, c->sock_path);
		}
		if (rc)
			die("No free /tmp/passt_N.socket path, use -s");
	}
	listen_path_ours = true;

	if (listen(fd, 1))
		die_perror("listen on %s", c->sock_path);
	c->fd_listen = fd;
	if (loop_add(c, fd, EPOLLIN, loop_ref(REF_TAP_LISTEN, 0, 0)))
		die_perror("epoll_ctl");

	info("UNIX domain socket bound at %s", c->sock_path);
	return 0;
}

/**
 * tap_accept() - accept a pending connection on the listening socket
 * @c:		execution context
 *
 * Return: non-blocking, close-on-exec connected socket, or -errno
 */
int tap_accept(struct ctx *c)
{
	int fd = accept4(c->fd_listen, NULL, NULL,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/**
 * tap_listen_cleanup() - remove the socket file we created, at exit
 * @c:		execution context
 */
void tap_listen_cleanup(struct ctx *c)
{
	if (listen_path_ours && c->sock_path[0])
		rmfile_unlink(c->sock_path);
}

/**
 * tap_inherited() - prepare the --fd socket for the loop
 * @c:		execution context
 *
 * Return: the inherited fd, now non-blocking and close-on-exec; dies if
 *	   it isn't usable, which is a configuration error
 */
int tap_inherited(struct ctx *c)
{
	int fl = fcntl(c->fd_inherited, F_GETFL);

	if (fl < 0 || fcntl(c->fd_inherited, F_SETFL, fl | O_NONBLOCK))
		die_perror("--fd %i", c->fd_inherited);
	fcntl(c->fd_inherited, F_SETFD, FD_CLOEXEC);
	info("Using inherited connected socket, fd %i", c->fd_inherited);
	return c->fd_inherited;
}
