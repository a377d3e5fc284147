/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * announce.h - announcing a migrated guest on the host's interface
 * (migrate/announce.c)
 */
#ifndef MIGRATE_ANNOUNCE_H
#define MIGRATE_ANNOUNCE_H

#include <stdbool.h>
#include <stdint.h>

struct ctx;
struct pkt;

/* After a migration, the guest's own announcements count for this long */
#define ANNOUNCE_WINDOW_MS	30000
/* At most one burst (RARP, ARP, NA) per this many ms */
#define ANNOUNCE_MIN_MS		50

void announce_init(struct ctx *c);
void announce_target_loaded(void);
void announce_device_started(struct ctx *c);
void announce_front_end_gone(void);
void announce_send_rarp(struct ctx *c);
bool announce_guest_frame(struct ctx *c, const struct pkt *p);

#endif /* MIGRATE_ANNOUNCE_H */
