/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kernel_abi.h - the kernel's numbers for socket options that some C
 * libraries' headers lack (newer than the library, or only in uapi
 * headers that clash with the library's): one fallback each, the
 * kernel's value, defined here only, so that the code that sets an
 * option and the seccomp table that allows it (isolation_seccomp.c)
 * can't disagree.
 */
#ifndef KERNEL_ABI_H
#define KERNEL_ABI_H

/* The library's own definitions first: a fallback only where it has none */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND		78	/* linux/in6.h */
#endif
#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT	73	/* linux/in6.h */
#endif
#ifndef SO_PEEK_OFF
#define SO_PEEK_OFF		42
#endif
#ifndef SO_ATTACH_BPF
#define SO_ATTACH_BPF		50	/* Linux 3.19 */
#endif
#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK		72	/* Linux 5.14 */
#endif
#ifndef TCP_REPAIR
#define TCP_REPAIR		19
#endif
#ifndef TCP_REPAIR_WINDOW
#define TCP_REPAIR_WINDOW	29
#endif
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS		44	/* Linux 6.15, uapi linux/tcp.h */
#endif

#endif /* KERNEL_ABI_H */
