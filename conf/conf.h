/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conf/conf.h - configuration: command line, then host defaults.
 */
#ifndef CONF_CONF_H
#define CONF_CONF_H

#include <stddef.h>

struct ctx;

int conf_parse(struct ctx *c, int argc, char **argv, char *errbuf,
	       size_t errlen);
void conf(struct ctx *c, int argc, char **argv);
void conf_print(const struct ctx *c);

#endif /* CONF_CONF_H */
