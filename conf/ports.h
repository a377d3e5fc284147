/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conf/ports.h - the parser of -t and -u port specs, which fills the
 * inbound port forwarding tables of fwd_ports.h.
 */
#ifndef CONF_PORTS_H
#define CONF_PORTS_H

#include <stddef.h>
#include <stdint.h>

#include "fwd_ports.h"

int ports_parse(struct fwd_ports *fwd, const char *spec, char *errbuf,
		size_t errlen);
void ports_ephemeral_range(uint16_t *first, uint16_t *last);

#endif /* CONF_PORTS_H */
