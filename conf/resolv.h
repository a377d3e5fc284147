/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conf/resolv.h - nameservers and search domains from resolv.conf, and the
 * check every search domain goes through.
 */
#ifndef CONF_RESOLV_H
#define CONF_RESOLV_H

struct ctx;

#define RESOLV_CONF_PATH "/etc/resolv.conf"

int resolv_parse(struct ctx *c, const char *path);
int resolv_search_add(struct ctx *c, const char *name);

#endif /* CONF_RESOLV_H */
