// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * close.c - TCP, the end of a connection: closed gracefully once both
 * FINs are done and the socket has sent everything (tcp_maybe_done()),
 * reset both ways (tcp_rst(), tcp_desync()), the socket closed and the
 * flow freed (tcp_close()). Above seg.c (the RST to the guest, or owed
 * to it), below the two directions, set-up and the dispatch.
 *
 * Theory of operation
 *
 * Closing has two halves: the socket, and the flow. A graceful close
 * first drops the ACKed bytes the guest has (unread data would make
 * close() send the peer a RST); a reset sets SO_LINGER 0 so that the
 * kernel sends one. The socket is closed through uring.c, which knows
 * whether a queued discard still names it. The flow goes at once, with
 * whatever it held: data kept for it (kept.c). Guest data batched for
 * its socket dies too, without a call up: the batch's end writes only to
 * a live flow of the same generation (from_guest.c's
 * tcp_flush_pending()), and a closed flow's slot isn't reused before the
 * round ends (flow.c). A RST the guest can't get now is owed
 * (seg.c, tcp_rst_owe()).
 *
 * Both FINs done doesn't mean the peer has everything: the flow stays,
 * draining (TCP_F_DRAINING), until SIOCOUTQ is empty, so that a
 * migration still sees the socket.
 */
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "flow.h"
#include "flow_tcp.h"
#include "log.h"
#include "loop.h"
#include "tcp/close.h"
#include "tcp/kept.h"
#include "tcp/proto.h"
#include "tcp/seg.h"
#include "uring.h"
#include "util.h"

/*
 * tcp_conn_free() - forget a connection; the socket is already handled.
 * Guest data held for it in a batch dies with it (tcp_flush_pending()
 * finds the flow closing): it must never reach the socket of a
 * connection that later gets the same slot (test tcp_reuse).
 */
static void tcp_conn_free(struct tcp_conn *conn)
{
	union flow *flow = (union flow *)conn;

	tcp_kept_drop(conn);
	conn->flags &= ~TCP_F_ACK_DUE;
	flow_close(flow);
}

/**
 * tcp_desync() - a socket call we rely on to keep both sides in step
 *		  failed: reset this connection rather than go on with wrong
 *		  sequence numbers, and say which call it was (once: the
 *		  connection is gone then)
 * @c:		execution context
 * @conn:	connection, gone on return
 * @what:	the call that failed, for the log
 * @e:		its errno, 0 if it did less than asked
 */
void tcp_desync(struct ctx *c, struct tcp_conn *conn,
		const char *what, int e)
{
	flow_warn_rl(conn, "%s failed (%s), resetting the connection", what,
		     e ? strerror(e) : "short");
	tcp_rst(c, conn);
}

/**
 * tcp_close() - close the socket gracefully, or with RST, and forget the
 *		 connection
 * @c:		execution context
 * @conn:	connection, gone on return
 * @rst:	make the kernel send the peer a RST (SO_LINGER 0)
 */
void tcp_close(struct ctx *c, struct tcp_conn *conn, bool rst)
{
	if (conn->sock >= 0) {
		if (rst) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(conn->sock, SOL_SOCKET, SO_LINGER, &l,
				   sizeof(l));
		} else if (conn->acked_unread) {
			/* Unread data would turn close() into a RST */
			recv(conn->sock, NULL, conn->acked_unread,
			     MSG_TRUNC | MSG_DONTWAIT);
		}
		conn->acked_unread = 0;
		loop_del(c, conn->sock);
		uring_close(conn->sock);	/* a discard may name it */
		conn->sock = -1;
	}
	tcp_conn_free(conn);
}

/**
 * tcp_rst() - reset both sides: RST to the guest, RST to the peer
 * @c:		execution context
 * @conn:	connection, gone on return
 */
void tcp_rst(struct ctx *c, struct tcp_conn *conn)
{
	if (conn->f.state != TCP_ST_CONNECTING &&
	    tcp_send_ctl(c, conn, TCP_RST | TCP_ACK, conn->seq_to_guest))
		tcp_rst_owe(conn);
	tcp_close(c, conn, true);
}

/**
 * tcp_maybe_done() - both directions closed: release the connection, once
 *		      the socket has nothing left to send
 * @c:		execution context
 * @conn:	connection
 *
 * What the guest sent may still wait in the socket behind a slow path:
 * closed, the socket would be the kernel's alone, and a migration wouldn't
 * see it (the peer would get a reset from the target's kernel, with part
 * of the data). So the flow stays (TCP_F_DRAINING, its timer checking
 * SIOCOUTQ) until the peer has ACKed all of it and our FIN.
 *
 * Return: true if the connection was closed and is gone
 */
bool tcp_maybe_done(struct ctx *c, struct tcp_conn *conn)
{
	int outq = 0;

	/* Data kept, or a migration's, must reach the socket first */
	if (conn->flags & TCP_F_TAIL)
		return false;
	if ((conn->flags & TCP_F_GUEST_FIN) && (conn->flags & TCP_F_FIN_ACKED)) {
		/* The guest's FIN may be what closed it: ACK it now, the
		 * deferred ACK would find the connection gone
		 */
		if (conn->flags & TCP_F_ACK_DUE)
			tcp_ack_now(c, conn);
		if (!ioctl(conn->sock, SIOCOUTQ, &outq) && outq > 0) {
			conn->flags |= TCP_F_DRAINING;
			conn->timer = now_ms() + TCP_DRAIN_MS;
			return false;
		}
		tcp_close(c, conn, false);
		return true;
	}
	return false;
}
