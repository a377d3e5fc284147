// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * passt.c - main: configuration, then the front-end, then the event loop.
 *
 * passt gives one virtual machine a network without privileges or a tap
 * device: QEMU hands us the guest's Ethernet frames (stream socket or
 * vhost-user), we answer ARP, NDP, DHCP and DHCPv6 ourselves and translate
 * the guest's TCP, UDP and ICMP echo traffic into ordinary sockets of our
 * network namespace.
 *
 * Start-up order matters to libvirt: the front-end socket is listening
 * before we daemonize, and the parent exits only once the daemon has
 * written the pid file and built its sandbox (0), or has died trying (1,
 * with the daemon's own error message relayed on standard error), so once
 * the parent is gone QEMU can connect and libvirt can read the pid file.
 *
 * The event loop, as a picture in words:
 *  - who registers: each module registers its own fds (loop_add()) with a
 *    reference built from its object: flow_ref() for flows (index and
 *    generation), loop_ref() with a fresh loop_gen_next() for front-end
 *    connections and rings, the fd itself for listeners that never close;
 *  - who dispatches: main_dispatch() below, one switch from reference type
 *    to handler, the front-end's events (REF_FE_CONN, REF_FE_KICK) straight
 *    to the operations of the one in use (fe, below); each handler
 *    checks the reference against its object and drops stale events;
 *  - per round: after the events of one epoll_wait(), main_round_end()
 *    sends coalesced TCP ACKs, flushes frames to the guest, submits the
 *    round's queued system calls (uring.c; or the next wait submits them,
 *    where the loop waits in the ring, before any event is handled), and
 *    only then frees the flows closed during the round
 *    (flow_defer_free()), so an index is never reused within the round
 *    that closed it;
 *  - backlog: the stream front-end takes at most a round's worth of
 *    frames (the bound flow.c relies on) and may keep whole frames it has
 *    read for the next round: while it does (its backlog operation), the
 *    wait doesn't sleep, and the next round starts with them (resume);
 *  - timers: the loop's tick (every LOOP_TICK_MS) calls main_timer().
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
#include "demux.h"
#include "flow.h"
#include "fwd/fwd.h"
#include "env.h"
#include "isolation.h"
#include "log.h"
#include "loop.h"
#include "tap/coalesce.h"
#include "tap/listen.h"
#include "local/local.h"
#include "tap/pcap.h"
#include "stream/stream.h"
#include "tap/tap.h"
#include "vhost/vhost.h"
#include "tcp/tcp.h"
#include "udp/udp.h"
#include "icmp/icmp.h"
#include "migrate/announce.h"
#include "migrate/transfer.h"
#include "repair/repair.h"
#include "rmfile.h"
#include "uring.h"
#include "util.h"

static struct ctx ctx;

/**
 * main_signal() - act on the signals pending
 * @c:		execution context
 *
 * Signals arrive as events: SIGTERM and SIGINT end the loop (deferred, bounded,
 * while a migrated source lingers), SIGUSR1 logs counters, SIGUSR2 ends the
 * linger (see migrate/transfer.c).
 */
static void main_signal(struct ctx *c)
{
	int sig;

	while ((sig = loop_signal_next())) {
		if (migrate_signal(c, sig))
			continue;
		switch (sig) {
		case SIGTERM:
		case SIGINT:
			info("Signal %i received, exiting", sig);
			c->quit = true;
			break;
		case SIGUSR1:
			flow_log_stats();
			demux_log_stats();
			tcp_log_conns();
			break;
		default:
			debug("Signal %i ignored", sig);
		}
	}
}

/* The front-end in use, chosen once at start (with tap_frontend_set(),
 * which tells tap.c): the loop calls its operations directly, each round
 */
static const struct tap_frontend *fe;

/* The timer tick: every module's timeouts */
static void main_timer(struct ctx *c)
{
	uint64_t now = now_ms();

	if (!loop_timer_read())
		return;
	icmp_timer(c, now);
	local_timer(c, now);
	tcp_timer(c, now);
	udp_timer(c, now);
	migrate_timer(c, now);
}

/**
 * main_dispatch() - call the handler that takes an event's reference type
 * @c:		execution context
 * @ref:	epoll reference of the event
 * @events:	epoll events
 */
static void main_dispatch(struct ctx *c, union epoll_ref ref, uint32_t events)
{
	switch (ref.type) {
	case REF_SIGNAL:
		main_signal(c);
		break;
	case REF_TIMER:
		main_timer(c);
		break;
	case REF_TAP_LISTEN:
		fe->accept(c);
		break;
	case REF_FE_CONN:
		fe->handler(c, ref, events);
		break;
	case REF_FE_KICK:
		if (fe->kick)
			fe->kick(c, ref);
		break;
	case REF_ICMP:
		icmp_sock_handler(c, ref, events);
		break;
	case REF_TCP:
		tcp_sock_handler(c, ref, events);
		break;
	case REF_TCP_LISTEN:
		tcp_listen_handler(c, ref);
		break;
	case REF_UDP:
	case REF_UDP_LISTEN:
		udp_sock_handler(c, ref, events);
		break;
	case REF_MIGRATE:
		migrate_pipe_handler(c, ref, events);
		break;
	case REF_REPAIR_LISTEN:
	case REF_REPAIR:
		repair_handler(c, ref, events);
		migrate_repair_changed(c);
		break;
	default:
		debug("event for unhandled reference type %u", ref.type);
		break;
	}
}

/* End of a loop round: coalesced ACKs, frames out, queued calls, frees */
static void main_round_end(struct ctx *c)
{
	tcp_defer_handler(c);
	fe->flush(c);		/* frames out, interrupts */
	/* Or the loop's wait submits them, from the ring: see uring.c */
	if (!uring_waits())
		uring_flush();
	flow_defer_free();
}

/**
 * main_loop() - run until a signal or a front-end event asks us to stop
 * @c:		execution context
 */
static void main_loop(struct ctx *c)
{
	struct epoll_event ev[LOOP_EVENTS];
	int n, i;

	while (!c->quit) {
		/* Frames already read, left by the last round's budget:
		 * look at the other events without sleeping, then go on
		 */
		bool backlog = fe->backlog && fe->backlog(c);

		/* ...or until the front-end's input is to be polled */
		n = loop_wait(c, ev, LOOP_EVENTS, !backlog, fe->poll_at());
		if (backlog && fe->resume)
			fe->resume(c);
		if (fe->poll_at())
			fe->poll(c, now_ns());
		for (i = 0; i < n && !c->quit; i++) {
			union epoll_ref ref = { .u64 = ev[i].data.u64 };

			main_dispatch(c, ref, ev[i].events);
		}
		main_round_end(c);
	}
}

/* Write our pid to @path with a single write; die naming -P on failure */
static void pid_file_write(const char *path, pid_t pid)
{
	char buf[32];
	int fd, n;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die_perror("-P/--pid: can't create %s", path);
	isolation_chown_fd(fd);
	n = snprintf(buf, sizeof(buf), "%i\n", pid);
	if (write(fd, buf, n) != n)
		die_perror("-P/--pid: can't write %s", path);
	close(fd);
}

/**
 * daemon_parent() - relay a daemon's standard error until it is ready
 * @c:		execution context
 * @fd:		read end of the pipe from the daemon's standard error
 * @pid:	process ID of the daemon
 *
 * Relays what the daemon says until it is sandboxed (a NUL byte,
 * daemon_ready()), then exits 0. If it dies before, its last words were the
 * reason: remove the files it left and exit 1, so that libvirt sees the failure
 * as ours.
 */
__attribute__((noreturn))
static void daemon_parent(struct ctx *c, int fd, pid_t pid)
{
	char buf[1024];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		char *nul;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		nul = memchr(buf, '\0', (size_t)n);
		/* Best effort: there's nowhere else to say it */
		/* NOLINTNEXTLINE(clang-analyzer-deadcode.DeadStores) */
		n = write(STDERR_FILENO, buf, nul ? (size_t)(nul - buf) :
						    (size_t)n);
		if (nul)
			_exit(EXIT_SUCCESS);
	}

	waitpid(pid, NULL, 0);
	if (c->pid_file[0])
		unlink(c->pid_file);
	if (c->mode == MODE_VU)
		repair_cleanup(c);
	tap_listen_cleanup(c);
	_exit(EXIT_FAILURE);
}

/**
 * daemonize() - fork, the child goes on detached as the daemon
 * @c:		execution context
 *
 * The parent waits (daemon_parent()), the child detaches from the terminal,
 * writes the pid file and goes on. Its standard error is a pipe to the parent
 * until daemon_ready(), so that a set-up failure (the sandbox, above all)
 * reaches whoever started us, with a non-zero exit.
 */
static void daemonize(struct ctx *c)
{
	int null, msg[2];
	pid_t pid;

	if (pipe2(msg, O_CLOEXEC))
		die_perror("pipe");
	pid = fork();
	if (pid < 0)
		die_perror("fork");
	if (pid > 0) {
		close(msg[1]);
		daemon_parent(c, msg[0], pid);
	}
	close(msg[0]);

	setsid();
	if (chdir("/"))
		warn_perror("chdir /");
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(null, STDOUT_FILENO) < 0 || dup2(msg[1], STDERR_FILENO) < 0)
		die_perror("standard input, output and error");
	if (null > STDERR_FILENO)
		close(null);
	close(msg[1]);
	if (!c->log_file[0])
		log_to_syslog(true);
	if (c->pid_file[0])
		pid_file_write(c->pid_file, getpid());
}

/*
 * Sandboxed: tell a waiting parent (a NUL byte on our standard error, its
 * pipe), and log to standard error no more: nobody reads it from now on
 */
static void daemon_ready(const struct ctx *c)
{
	ssize_t n;

	if (c->foreground)
		return;
	/* The parent gone already would be nobody to tell */
	n = write(STDERR_FILENO, "", 1);
	(void)n;
	log_to_stderr(false);
}

/**
 * main() - configure, set up the front-end and the sandbox, run the loop
 * @argc:	argument count
 * @argv:	options, as passt(1) lists them
 *
 * Return: 0 on a clean exit (--print-capabilities; the front-end went
 *	   away with --one-off; the end of a finished migration's linger;
 *	   SIGTERM); configuration errors exit non-zero through die() before
 *	   anything is set up
 */
int main(int argc, char **argv)
{
	struct ctx *c = &ctx;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	env_init();
	conf(c, argc, argv);

	if (c->print_capabilities) {
		/* vhost-user back-end convention: JSON on stdout, exit 0 */
		printf("{\n  \"type\": \"net\"\n}\n");
		return fflush(stdout) ? EXIT_FAILURE : EXIT_SUCCESS;
	}

	isolation_check(c);
	if (c->log_file[0] && (rc = log_open_file(c->log_file))) {
		errno = -rc;
		die_perror("-l/--log-file: can't open %s", c->log_file);
	}
	conf_print(c);
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
	coalesce_init();
	/* The front-end first: forwarded ports take what descriptors are left */
	fe = c->mode == MODE_VU ? &vu_frontend : &stream_frontend;
	tap_frontend_set(fe);
	tap_init(c);
	if (c->mode == MODE_VU)
		repair_init(c, isolation_peer_check);
	fwd_listen_init(c);
	/* Needs CAP_NET_RAW, which the sandbox takes away */
	announce_init(c);

	if (!c->foreground)
		daemonize(c);
	else if (c->pid_file[0])
		pid_file_write(c->pid_file, getpid());

	/* After the fork (the ring belongs to the task that enables it),
	 * before the sandbox (which only allows io_uring_enter())
	 */
	uring_init(c);
	isolation_drop(c);

	if ((rc = loop_signals_init(c))) {
		errno = -rc;
		die_perror("signal set-up");
	}

	info("Started: passt %s, %s, pid %i, uid %u", VERSION,
	     tap_frontend_name(), (int)getpid(),
	     (unsigned)getuid());
	isolation_seccomp();
	daemon_ready(c);
	main_loop(c);

	demux_log_stats();
	tap_cleanup(c);
	if (c->mode == MODE_VU)
		repair_cleanup(c);
	if (c->pid_file[0])
		rmfile_unlink(c->pid_file);
	log_close();
	return EXIT_SUCCESS;
}
