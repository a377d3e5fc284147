/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hugefile.h - an unlinked file on huge pages (hugefile.c)
 */
#ifndef HUGEFILE_H
#define HUGEFILE_H

#include <stddef.h>

/* Huge pages the file's tmpfs takes: map it aligned to this */
#define HUGEFILE_ALIGN	(2UL * 1024 * 1024)

int hugefile_open(size_t size, const char **why);

#endif /* HUGEFILE_H */
