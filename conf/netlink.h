/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conf/netlink.h - read the host's routes and addresses over
 * rtnetlink, to pick defaults for the guest at start-up.
 */
#ifndef CONF_NETLINK_H
#define CONF_NETLINK_H

#include <stdint.h>

int nl_default_route(int family, unsigned *ifindex, void *gw);
int nl_addr_get(int family, unsigned ifindex, void *addr, int *prefix_len);

#endif /* CONF_NETLINK_H */
