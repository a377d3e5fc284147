/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vhost.h - the vhost-user front-end as the daemon's main sees it: one
 * struct tap_frontend (vhost/net.c), chosen at start
 */
#ifndef VHOST_VHOST_H
#define VHOST_VHOST_H

struct tap_frontend;

extern const struct tap_frontend vu_frontend;

#endif /* VHOST_VHOST_H */
