/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sock.h - one socket in TCP_REPAIR terms (sock.c): its queues, its
 * windows, its state as TCP_INFO tells it, made deaf to its peer or
 * filtered while it is held; what both sides of a TCP migration do to a
 * socket, below tcp/ (which knows the connection around it).
 */
#ifndef REPAIR_SOCK_H
#define REPAIR_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel_abi.h"	/* TCP_REPAIR_WINDOW */

/* Our own copy of the kernel's repair structure (uapi linux/tcp.h) */
struct tcpm_window {
	uint32_t snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;
};

#define TCPM_QUEUE_NONE	0
#define TCPM_QUEUE_RECV	1
#define TCPM_QUEUE_SEND	2

/* Largest piece written into a queue in one call (halved on ENOBUFS) */
#define TCPM_CHUNK	(64 * 1024)
#define TCPM_CHUNK_MIN	1024

/**
 * struct tcpm_progress - what a socket tells of its peer (TCP_INFO)
 * @segs_in:		segments received
 * @unacked:		segments sent and not acknowledged
 * @bytes_acked:	bytes the peer acknowledged since the socket began
 * @bytes_received:	bytes received since the socket began
 */
struct tcpm_progress {
	uint32_t segs_in;
	uint32_t unacked;
	uint64_t bytes_acked;
	uint64_t bytes_received;
};

int tcpm_progress(int s, struct tcpm_progress *pr);
void tcpm_rto_cap(int s, bool on);
int tcpm_filter_attach(int s);
bool tcpm_filtered(int s);
void tcpm_filter_detach(int s);
int tcpm_deaf(int s, int family, bool on);
int tcpm_queue(int s, int q);
int tcpm_get_u32(int s, int opt, uint32_t *v);
int tcpm_get_window(int s, struct tcpm_window *w);
bool tcpm_fin_rcvd(uint8_t st);
bool tcpm_in_repair(int s);
ssize_t tcpm_fill(int s, const uint8_t *p, uint32_t len);
unsigned tcpm_lap(uint64_t *t);

#endif /* REPAIR_SOCK_H */
