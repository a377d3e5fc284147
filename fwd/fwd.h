/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fwd.h - where guest traffic goes on the host and how host peers appear
 * to the guest (address mapping), outbound sockets, and the listening
 * sockets of forwarded ports (-t, -u).
 */
#ifndef FWD_FWD_H
#define FWD_FWD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "inany.h"

struct ctx;

/* epoll reference index of a listening socket: port and family */
#define FWD_REF(port, family) ((uint32_t)(port) | \
			       ((family) == AF_INET6 ? 1U << 16 : 0))
#define FWD_REF_PORT(idx) ((uint16_t)((idx) & 0xffff))
#define FWD_REF_FAMILY(idx) (((idx) >> 16) & 1 ? AF_INET6 : AF_INET)

socklen_t sockaddr_len(const union sockaddr_inany *sa);
uint16_t sockaddr_port(const union sockaddr_inany *sa);
void sockaddr_set(union sockaddr_inany *sa, int family, const void *addr,
		  uint16_t port);

int fwd_socket(const struct ctx *c, int family, int type);
int fwd_nat_outbound(const struct ctx *c, int family, const void *dst,
		     uint16_t port, union sockaddr_inany *sa);
int fwd_nat_inbound(const struct ctx *c, const union sockaddr_inany *peer,
		    union inany_addr *gsrc);
bool fwd_guest_addr(const struct ctx *c, int family, union inany_addr *a);
void fwd_defaults(struct ctx *c);
int fwd_listen_init(struct ctx *c);
unsigned fwd_tcp_listeners(const int **fds);

#endif /* FWD_FWD_H */
