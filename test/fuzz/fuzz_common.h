/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_common.h - shared pieces of the libFuzzer harnesses: a rich
 * execution context whose configuration corners are picked by a "knob"
 * byte taken from the input, view range checks, and a crash helper.
 *
 * Harnesses build with clang -fsanitize=fuzzer,address,undefined against
 * the library objects built with the same sanitizers (see build.sh).
 * Output buffers are always allocated at exactly the capacity the code
 * under test is told about, so ASan sees any write past it.
 */
#ifndef TEST_FUZZ_COMMON_H
#define TEST_FUZZ_COMMON_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "log.h"
#include "net/packet.h"

/* Abort with a message: libFuzzer records the input as a crash */
#define FZ_CHECK(cond)                                                         \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

/* Is @v empty, or entirely inside [@base, @base + @len)? */
static inline int fz_view_in(struct pview v, const void *base, size_t len)
{
	const uint8_t *b = base;

	if (!v.p)
		return v.len == 0;
	return v.p >= b && v.len <= len && (size_t)(v.p - b) <= len - v.len;
}

static inline void fz_a4(struct in_addr *a, const char *s)
{
	FZ_CHECK(inet_pton(AF_INET, s, a) == 1);
}

static inline void fz_a6(struct in6_addr *a, const char *s)
{
	FZ_CHECK(inet_pton(AF_INET6, s, a) == 1);
}

/*
 * fz_ctx_base() - a context as conf/ would set it up for a dual-stack
 * host: IPv4 /24 with gateway, IPv6 /64 with link-local router address,
 * DNS servers, search domains, hostname. Only fields before the port
 * tables are touched, so callers may reset just those (fz_ctx_reset()).
 */
static inline void fz_ctx_base(struct ctx *c)
{
	memset(c, 0, offsetof(struct ctx, tcp_fwd));
	c->mode = MODE_STREAM;
	c->fd_listen = c->fd_inherited = -1;
	c->ifi4_ok = c->ifi6_ok = true;
	c->ifi4 = c->ifi6 = 2;
	fz_a4(&c->ip4.addr, "192.0.2.10");
	c->ip4.prefix_len = 24;
	fz_a4(&c->ip4.gw, "192.0.2.1");
	fz_a4(&c->ip4.dns[0], "192.0.2.53");
	fz_a4(&c->ip4.dns[1], "198.51.100.53");
	c->ip4.dns_count = 2;
	fz_a4(&c->ip4.map_host_loopback, "192.0.2.1");
	fz_a6(&c->ip6.addr, "2001:db8:1:2::15");
	c->ip6.prefix_len = 64;
	fz_a6(&c->ip6.gw, "fe80::1");
	fz_a6(&c->ip6.our_ll, "fe80::1");
	fz_a6(&c->ip6.dns[0], "2001:db8::53");
	fz_a6(&c->ip6.dns[1], "2001:db8::54");
	c->ip6.dns_count = 2;
	fz_a6(&c->ip6.map_host_loopback, "fe80::1");
	memcpy(c->our_mac, "\x9a\x55\x9a\x55\x9a\x55", 6);
	c->mtu = 1500;
	strcpy(c->search[0].name, "example.com");
	strcpy(c->search[1].name, "corp.example.org");
	c->search_count = 2;
	strcpy(c->hostname, "guest");
	c->epollfd = -1;
}

/*
 * fz_ctx_knob() - move the configuration to one of its corners
 * @k:		bit 0: no DNS servers; bit 1: as many and as long search
 *		domains as the context holds; bit 2: longest hostname and
 *		FQDN; bit 3: --no-dhcp-dns; bit 4: --no-dhcp-search;
 *		bit 5: MTU 0 or 65520; bits 6-7: IPv4 prefix /24, /32, /31
 *		or /24 with an off-link gateway
 */
static inline void fz_ctx_knob(struct ctx *c, uint8_t k)
{
	static const int prefix[4] = {24, 32, 31, 24};
	int i;

	if (k & 1) {
		c->ip4.dns_count = 0;
		c->ip6.dns_count = 0;
	} else {
		for (i = 0; i < MAXDNS; i++) {
			c->ip4.dns[i].s_addr = htonl(0xc0000235 + i);
			c->ip6.dns[i] = c->ip6.addr;
			c->ip6.dns[i].s6_addr[15] = (uint8_t)(0x53 + i);
		}
		c->ip4.dns_count = c->ip6.dns_count = MAXDNS;
	}
	if (k & 2) {
		for (i = 0; i < MAXDNS_SEARCH; i++) {
			char *n = c->search[i].name;
			int j;

			/* 3 labels of 63 and one of 61: 253 characters */
			for (j = 0; j < 3; j++) {
				memset(n + j * 64, 'a' + i, 63);
				n[j * 64 + 63] = '.';
			}
			memset(n + 192, 'z', 61);
			n[253] = '\0';
		}
		c->search_count = MAXDNS_SEARCH;
	}
	if (k & 4) {
		memset(c->hostname, 'h', HOST_NAME_MAX);
		c->hostname[HOST_NAME_MAX] = '\0';
		for (i = 0; i < 4; i++) {
			memset(c->fqdn + i * 64, 'f', 63);
			c->fqdn[i * 64 + 63] = '.';
		}
		c->fqdn[253] = '\0';
	}
	c->no_dhcp_dns = !!(k & 8);
	c->no_dhcp_search = !!(k & 16);
	if (k & 32)
		c->mtu = (k & 1) ? 0 : 65520;
	c->ip4.prefix_len = prefix[k >> 6];
	if ((k >> 6) == 3)
		fz_a4(&c->ip4.gw, "203.0.113.1");
}

/* Errors only, unless FUZZ_LOG is set (then everything, to reproduce) */
static inline void fz_log_init(void)
{
	log_level = getenv("FUZZ_LOG") ? LOG_LVL_TRACE : LOG_LVL_ERR;
}

/* FZ_INIT_LOG - LLVMFuzzerInitialize() for a harness whose only set-up is
 * fz_log_init(): write it once, at file scope
 */
#define FZ_INIT_LOG							\
	int LLVMFuzzerInitialize(int *argc, char ***argv)		\
	{								\
		(void)argc;						\
		(void)argv;						\
		fz_log_init();						\
		return 0;						\
	}

#endif /* TEST_FUZZ_COMMON_H */
