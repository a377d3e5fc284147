// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * passt.c - main: configuration, then the front-end, then the event loop.
 *
 * passt gives one virtual machine a network without privileges or a tap
 * device: QEMU hands us the guest's Ethernet frames (stream socket, later
 * vhost-user), we answer ARP, NDP, DHCP and DHCPv6 ourselves and translate
 * the guest's traffic into ordinary sockets of our network namespace.
 *
 * Start-up order matters to libvirt: the front-end socket is listening
 * before we daemonize, and the pid file names the daemon before the
 * parent exits, so once the parent is gone QEMU can connect and libvirt
 * can read the pid file.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf/conf.h"
#include "ctx.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "isolation.h"
#include "log.h"
#include "loop.h"
#include "tap/pcap.h"
#include "tap/stream.h"
#include "tap/tap.h"
#include "tap/vhost_user.h"
#include "tcp/tcp.h"

static struct ctx ctx;

/* Write our pid to @path with a single write; die naming -P on failure */
static void pid_file_write(const char *path, pid_t pid)
{
	char buf[32];
	int fd, n;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die_perror("-P/--pid: can't create %s", path);
	n = snprintf(buf, sizeof(buf), "%i\n", pid);
	if (write(fd, buf, n) != n)
		die_perror("-P/--pid: can't write %s", path);
	close(fd);
}

/*
 * Fork; the parent writes the child's pid file and exits 0, the child
 * detaches from the terminal and goes on.
 */
static void daemonize(struct ctx *c)
{
	pid_t pid = fork();
	int null;

	if (pid < 0)
		die_perror("fork");
	if (pid > 0) {
		if (c->pid_file[0])
			pid_file_write(c->pid_file, pid);
		_exit(EXIT_SUCCESS);
	}

	setsid();
	if (chdir("/"))
		warn_perror("chdir /");
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	log_to_stderr(false);
	if (!c->log_file[0])
		log_to_syslog(true);
}

int main(int argc, char **argv)
{
	struct ctx *c = &ctx;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	conf(c, argc, argv);

	if (c->print_capabilities) {
		/* vhost-user back-end convention: JSON on stdout, exit 0 */
		printf("{\n  \"type\": \"net\"\n}\n");
		return fflush(stdout) ? EXIT_FAILURE : EXIT_SUCCESS;
	}

	if (c->log_file[0] && (rc = log_open_file(c->log_file))) {
		errno = -rc;
		die_perror("-l/--log-file: can't open %s", c->log_file);
	}
	if (c->pcap_file[0] && (rc = pcap_init(c->pcap_file))) {
		errno = -rc;
		die_perror("-p/--pcap: can't open %s", c->pcap_file);
	}
	flow_init();
	if ((rc = loop_init(c))) {
		errno = -rc;
		die_perror("event loop set-up");
	}

	fwd_defaults(c);
	tcp_init(c);
	fwd_listen_init(c);
	if (c->mode == MODE_VU)
		vu_init(c);
	else
		stream_init(c);

	if (!c->foreground)
		daemonize(c);
	else if (c->pid_file[0])
		pid_file_write(c->pid_file, getpid());

	isolation_drop(c);

	if ((rc = loop_signals_init(c))) {
		errno = -rc;
		die_perror("signal set-up");
	}

	loop_run(c);

	tap_log_stats();
	if (c->mode == MODE_VU)
		vu_cleanup(c);
	else
		stream_cleanup(c);
	if (c->pid_file[0])
		unlink(c->pid_file);
	log_close();
	return EXIT_SUCCESS;
}
