/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uring.h - io_uring for the system calls that end a loop round (uring.c)
 */
#ifndef URING_H
#define URING_H

#include <stdbool.h>
#include <stdint.h>

struct ctx;

/* Called when a queued operation didn't return what was expected, and
 * after every uring_send()
 */
typedef void (*uring_done_fn)(struct ctx *c, uint64_t tag, int res);

void uring_init(struct ctx *c);
bool uring_on(void);
bool uring_waits(void);
int uring_recv_trunc(int s, uint32_t len, uring_done_fn done, uint64_t tag);
int uring_write(int fd, const void *buf, uint32_t len);
int uring_send(int s, const void *buf, uint32_t len, uring_done_fn done,
	       uint64_t tag);
void uring_flush(void);
void uring_close(int fd);
struct epoll_event;
int uring_epoll_wait(int epfd, struct epoll_event *ev, int max);
void uring_exit(void);

#endif /* URING_H */
