/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listen.h - the front-end's listening UNIX socket, shared by the stream
 * and vhost-user front-ends
 */
#ifndef TAP_LISTEN_H
#define TAP_LISTEN_H

struct ctx;

int tap_listen(struct ctx *c);
int tap_inherited(struct ctx *c);
int tap_accept(struct ctx *c);
void tap_listen_cleanup(struct ctx *c);

#endif /* TAP_LISTEN_H */
