/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * isolation.h - dropping privileges after set-up
 */
#ifndef ISOLATION_H
#define ISOLATION_H

struct ctx;

void isolation_drop(const struct ctx *c);

#endif /* ISOLATION_H */
