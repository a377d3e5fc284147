// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz_migrate.c - mig_parse() on arbitrary migration streams.
 *
 * Input: the stream itself, exactly as it would come out of the
 * device-state pipe (seeds: the .bin files of test/data/migrate). The input is
 * copied to a buffer of exactly its size so ASan sees any read past the end.
 *
 * Checks: the result is 0 or one of the documented errors, with a reason
 * on failure and nothing left to free; on success, every accepted flow
 * satisfies the invariants the daemon relies on, the queues lie inside the
 * input, and encoding the decoded stream again gives a stream that parses
 * to the same content, byte-identical to the consumed input when that said
 * version 2 and compat 2. mig_stream_need(), which bounds what the daemon
 * reads into memory, agrees with mig_parse(): a stream it refuses, or
 * says is longer than the input, doesn't parse; one that parses is
 * exactly as long as it says (what was consumed of the input).
 */
#include <errno.h>
#include <stdbool.h>

#include "fuzz_common.h"
#include "repair/format.h"

static bool in_input(const uint8_t *p, size_t n, const uint8_t *b, size_t len)
{
	return p >= b && n <= len && (size_t)(p - b) <= len - n;
}

static void check_flow(const struct mig_flow_in *f, const uint8_t *b,
		       size_t len)
{
	int h = mig_basic_host_side(&f->b);

	FZ_CHECK(f->b.pif[h] == MIG_PIF_HOST);
	FZ_CHECK(f->b.pif[!h] == MIG_PIF_TAP);
	FZ_CHECK(f->b.events & MIG_EV_ESTABLISHED);
	FZ_CHECK(f->b.side[0].oport && f->b.side[0].eport);
	FZ_CHECK(f->b.side[1].oport && f->b.side[1].eport);
	FZ_CHECK(f->b.ws_from_tap <= MIG_WS_MAX);
	FZ_CHECK(f->b.ws_to_tap <= MIG_WS_MAX);
	FZ_CHECK(mig_addr_is_v4(&f->b.side[!h].eaddr) ==
		 mig_basic_is_v4(&f->b));
	FZ_CHECK(mig_addr_is_v4(&f->b.side[h].eaddr) == mig_basic_is_v4(&f->b));

	if (f->skip) {
		FZ_CHECK(f->e.tcpi_state == MIG_TCP_SKIP);
		FZ_CHECK(!f->sndq && !f->rcvq);
		return;
	}
	FZ_CHECK(f->e.tcpi_state != MIG_TCP_SKIP);
	FZ_CHECK(f->e.notsent <= f->e.sndq);
	FZ_CHECK(f->e.sndq <= MIG_QUEUE_MAX && f->e.rcvq <= MIG_QUEUE_MAX);
	FZ_CHECK(f->e.mss >= 1 && f->e.mss <= 65535);
	FZ_CHECK(f->e.snd_ws <= MIG_WS_MAX && f->e.rcv_ws <= MIG_WS_MAX);
	FZ_CHECK(f->e.max_window <= MIG_WND_MAX);
	FZ_CHECK(in_input(f->sndq, f->e.sndq, b, len));
	FZ_CHECK(in_input(f->rcvq, f->e.rcvq, b, len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_stream_in s, s2;
	struct mig_buf out = {0};
	uint8_t *b = malloc(size ? size : 1);
	char why[128];
	uint64_t need = 0;
	uint32_t i;
	int rc, nrc;

	memcpy(b, data, size);
	nrc = mig_stream_need(b, size, &need);
	FZ_CHECK(nrc == 0 || nrc == 1 || nrc == -EINVAL || nrc == -ENOTSUP ||
		 nrc == -E2BIG);
	rc = mig_parse(b, size, &s, why, sizeof(why));
	if (nrc < 0 || need > size)
		FZ_CHECK(rc);
	if (!rc)
		FZ_CHECK(nrc == 1 && need == s.used);
	if (rc) {
		FZ_CHECK(rc == -EINVAL || rc == -ENOTSUP || rc == -E2BIG);
		FZ_CHECK(why[0] && strlen(why) < sizeof(why));
		FZ_CHECK(!s.flows && !s.count);
		free(b);
		return 0;
	}

	FZ_CHECK(s.version == MIG_VERSION);
	FZ_CHECK(s.used <= size);
	FZ_CHECK(s.count <= MIG_FLOWS_MAX);
	FZ_CHECK(!s.count == !s.flows);
	for (i = 0; i < s.count; i++)
		check_flow(&s.flows[i], b, size);

	/* Round trip: encode again, parse again, same content */
	mig_put_stream(&out, &s);
	FZ_CHECK(!out.err);
	FZ_CHECK(out.len == s.used);
	if (!memcmp(b + 8, "\0\0\0\2\0\0\0\2", 8))
		FZ_CHECK(!memcmp(out.p, b, out.len));
	rc = mig_parse(out.p, out.len, &s2, why, sizeof(why));
	if (rc)
		fprintf(stderr, "re-parse: %s\n", why);
	FZ_CHECK(!rc);
	FZ_CHECK(s2.used == out.len);
	FZ_CHECK(mig_stream_in_equal(&s, &s2));

	mig_stream_in_free(&s2);
	mig_stream_in_free(&s);
	mig_buf_free(&out);
	free(b);
	return 0;
}
