// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vu-front.c - a vhost-user front-end of our own, playing QEMU for tests.
 *
 * Usage: vu-front [OPTIONS] SOCKPATH CASE...
 *
 * Guest memory is one or two memfds (-2: two regions, and the first TX
 * buffer straddles their boundary, so the daemon must split it). We map
 * them ourselves and use our own virtual addresses as the "QEMU virtual
 * addresses" of the protocol, like QEMU does. Layout (guest physical):
 *
 *	0x000000 RX ring (desc, avail, used), 0x010000 TX ring
 *	0x100000 RX buffers: VF_Q x VF_RX_BUF bytes
 *	TX_BASE  TX buffers: VF_TX_SLOTS (-F: up to VF_Q) x VF_TX_BUF bytes,
 *		 headers before
 *
 * TX frames are laid out three ways, in turn: header and frame in one
 * buffer; header, then the frame; header, the frame's first 90 bytes, then
 * the rest in pieces of up to 16 KiB (as a Linux guest sends a TSO
 * segment: the daemon takes it without gathering, see demux_input_part()).
 * The third only if the daemon offers checksum offload: Linux has no
 * scatter-gather without it, and upstream passt, which doesn't offer it,
 * aborts on such chains.
 * With -P, as a Linux guest lays frames out: if checksum offload was
 * negotiated, every frame of 2 KiB or more goes in pieces, the header and
 * the first 90 bytes sharing the first one, the rest in pieces of 32 KiB;
 * anything else (and everything without checksum offload: Linux then
 * linearises every frame) in one buffer with its header.
 *
 * Connecting does what QEMU 10 does at start-up and device start (doc
 * §4.1, §4.2): features, protocol features (REPLY_ACK is used from then
 * on), owner, call fds, SET_FEATURES (VERSION_1, PROTOCOL_FEATURES,
 * MRG_RXBUF), the memory table, then NUM/BASE/ADDR/KICK/CALL for both
 * rings and ENABLE. All RX buffers are posted at once and re-posted as
 * soon as a frame is taken out. Every frame from the daemon is checked:
 * used length, virtio-net header (flags 0, num_buffers consistent with
 * the used entries; flags may only carry DATA_VALID).
 *
 * Cases, run in order on the current connection:
 *   connect        (re)connect and set the device up (done before the first
 *                  case needing it)
 *   arp-probe      ARP request for the gateway on TX, wait for the reply
 *   dhcp-probe     DHCPDISCOVER, wait for the DHCPOFFER
 *   bridge         create a tap device (-n, -m) and relay frames both ways
 *                  until SIGTERM or the daemon closes the connection
 *   expect-close   wait for the daemon to close the connection
 *   close          close the connection ourselves
 *   bad-sizes      payloads of wrong sizes; each must be refused
 *   bad-fds        wrong fd counts; each must be refused
 *   bad-ring-fds   kick, call, error and log fds that aren't eventfds
 *                  (pipes, a socket, a file): refused; eventfds in blocking
 *                  mode are made non-blocking, and a full one as the
 *                  interrupt fd doesn't stall the daemon
 *   bad-ring-addr  ring addresses outside guest memory; refused
 *   out-of-order   a fresh connection: kick/addr before memory, refused
 *   unknown        unknown request with NEED_REPLY: refused, goes on
 *   oversize       a header announcing a 64 KiB payload: connection closed
 *   too-many-fds   10 fds with one message: connection closed
 *   loop-chain     TX chains: self loop, 2-cycle, > 4 GiB total, head
 *                  out of range, next out of range, buffer out of memory,
 *                  bad indirect tables; each returned, no frame
 *   bad-avail-idx  TX avail idx far ahead: ring ignored from then on
 *   rx-readonly    RX buffer without WRITE: RX ignored from then on
 *   stop-kick      GET_VRING_BASE on TX (checks the index), then a frame
 *                  and a kick: the daemon must not touch the ring
 *   log            SET_LOG_BASE + LOG_ALL: a frame to us marks its pages
 *   shrink-mem     the first memory region's file truncated to nothing, and
 *                  a kick: the daemon must drop the connection, and live
 *                  (the file gets its size back, for the next one)
 *   shrink-log     the same with the dirty log's file (logging on)
 *   features       print the daemon's feature and protocol feature offers
 *                  ("features=0x... protocol_features=0x..." on stdout)
 *   mig-probe      connect: exit 3 unless the daemon offers DEVICE_STATE
 *   state-load     connect, load --state-load FILE as a migration target
 *                  (SET_DEVICE_STATE_FD LOAD, CHECK_DEVICE_STATE must be 0,
 *                  or non-zero with --expect-load-fail), then start afresh
 *   state-abandon  connect, start a LOAD, write part of it, disconnect: the
 *                  daemon must close the state pipe, and accept a LOAD on
 *                  the next connection (then empty: CHECK fails)
 *   close-race     GET_VRING_BASE in a round with interrupts to send, then
 *                  new descriptors (a state pipe, TCP clients of a
 *                  forwarded port) in the same round: the state and the
 *                  clients get only what they should (needs --freeze PID,
 *                  --race-netns PATH, --race-connect ADDR:PORT: the
 *                  daemon, stopped while the round is made ready, and
 *                  where the clients connect from, and to)
 *   msg-rounds     messages that are all there are handled in one round of
 *                  the daemon: 32 with their payloads, sent while it is
 *                  stopped (--freeze PID), all answered when the round's
 *                  interrupt comes
 *   long-chains    a TX ring of 32768 entries, every one the head of a chain
 *                  of 32768 zero-length descriptors, avail->idx moved every
 *                  50 ms, control messages meanwhile, for --attack-secs
 *                  SECONDS (5); prints "long-chains: used=N ms=N rtt_n=N
 *                  rtt_p50_us=N rtt_p99_us=N rtt_max_us=N" on stdout
 *   load-flood     a LOAD whose pipe a child fills with garbage as fast as
 *                  it goes, for --attack-secs, control messages meanwhile;
 *                  prints "load-flood: bytes=N rtt_n=N rtt_p50_us=N
 *                  rtt_p99_us=N rtt_max_us=N check=N" on stdout
 *   hostile        bridge like "bridge" (-n, -m), but lay the rings out as
 *                  a broken or malicious driver would, until SIGTERM: see
 *                  "hostile guest driver" below. Needs --hostile SEED or
 *                  a fixed layout (the switches below)
 *
 * Options: -t MS timeout for every wait (default 5000), -r SECONDS retry
 * connecting, -2 two memory regions, -n TAP, -m MTU (bridge), -v verbose,
 * -P TX frames laid out as a Linux guest does (in pieces if 2 KiB or more
 * and checksum offload was negotiated; at most 21 in flight), -O offloads
 * (bridge): take whichever of checksum and TCP segmentation offload the
 * daemon offers, both ways, as a Linux virtio-net guest does behind QEMU
 * (GUEST_CSUM, GUEST_TSO4/6, CSUM, HOST_TSO4/6), and pass the virtio-net
 * headers through to and from the tap (TUNSETOFFLOAD). -e takes
 * VIRTIO_RING_F_EVENT_IDX if offered, as a Linux guest does: kicks only
 * when avail->idx passes the daemon's avail_event; in bridge mode, RX
 * interrupts asked for with used_event once the ring is drained, TX
 * interrupts only while every TX slot is in flight (as the Linux driver
 * asks for them when its TX ring is full). -d USEC (bridge): a slow
 * guest, at most one frame to the daemon every USEC microseconds (the
 * rest waits in the tap's queue). -F N (bridge): at most N TX frames in
 * flight (1 to 256: a guest whose queue limits, as a small ring or byte
 * queue limits do, what it has handed over and not got back), each
 * taking its descriptors from a free list, as the Linux driver does: one
 * in one buffer, or with -P and checksum offload the header and the
 * frame's first 90 bytes, then 32 KiB pieces; so large frames in pieces
 * may run out of the ring's 256 descriptors first, as a Linux guest's
 * would. Instead of -P's 21 and the default 64.
 *
 * Live migration, in bridge mode (what QEMU 10 does, see "migration"
 * below). A migration starts on SIGUSR2 or on a line written to the
 * trigger FIFO: "migrate" (to --migrate-to), "migrate SOCK" (to SOCK:
 * several migrations, back and forth, in one run), "cancel" (save the
 * state, then resume the source) or "abort SOCK" (save, load into the
 * daemon at SOCK, then fail as a QEMU does after the target loaded the
 * device state: the target's connection is closed before its device ever
 * starts, and the source resumes) or "reconnect" (stop the rings, ask for
 * the state, then drop the connection in the middle of the transfer, as a
 * front-end that goes away, connect again and start the device where it
 * was, as QEMU does with reconnect-ms). Each one ends with a line on
 * stderr, also appended to --migrate-done FILE:
 *   migrate: result=ok|cancelled|aborted|reconnected|failed-resumed|failed
 *   n=N stage=S
 *   state_bytes=N save_check=N load_check=N base_rx=N base_tx=N
 *   stop_ms=N save_ms=N load_ms=N start_ms=N downtime_ms=N total_ms=N
 *   at_ms=N
 * (stop: disable + GET_VRING_BASE; save: SAVE + CHECK; load: LOAD +
 * CHECK; start: the target's device start; downtime: from the stop to the
 * started target; total: from the trigger, including the target's connect
 * sequence and the dirty-log start; at: wall clock, in ms since the
 * epoch, when the target started, 0 if it didn't).
 *   --migrate-to SOCK       default target
 *   --migrate-trigger FIFO  command FIFO (made with mkfifo by the caller)
 *   --migrate-done FILE     append each result line to FILE
 *   --migrate-fail          "migrate" (and SIGUSR2) cancel after SAVE
 *   --migrate-close-source  close the source's connection once migrated
 *                           (otherwise it stays open, as a live source
 *                           QEMU, until the next migration or the end)
 *   --state-save FILE       record each saved state ("%d": migration no.)
 *   --state-load FILE       give the target FILE instead of the source's
 *                           state (also for the state-load case)
 *   --state-flags-or BITS   OR BITS (e.g. 0x10, ACK_FROM_TAP_DUE) into the
 *                           flags of every TCP flow record of the source's
 *                           state before the target loads it (version 2's
 *                           layout), as another source may set them: the
 *                           recorded state (--state-save) is the source's
 *   --no-mig-log            no dirty logging before the switch-over
 *   --no-disable            no SET_VRING_ENABLE 0 before GET_VRING_BASE
 *   --migrate-exec CMD      run "sh -c CMD" (not waited for) as soon as
 *                           the target runs the guest; MIG_N, MIG_TARGET
 *                           in its environment
 *   --send-rarp             after a migration, SEND_RARP (the guest's
 *                           MAC) to the target, as QEMU's announce timer
 *                           does: at 50 ms, then every 100 ms, 5 in all
 *   --migrate-notify FIFO   then write a message to FIFO (non-blocking):
 *                           the contents of --migrate-notify-msg FILE
 *                           (read at the trigger), or "migrated N"
 *   --phase-exec CMD        run "sh -c CMD" and wait for it at each step
 *                           of a migration, MIG_PHASE in its environment:
 *                           "stopped" (rings stopped, SAVE not sent yet),
 *                           "save-sent" (SET_DEVICE_STATE_FD(SAVE) sent,
 *                           its reply not read yet), "saved" (SAVE and
 *                           its CHECK done), "loaded" (LOAD and its
 *                           CHECK done, the target not started); and
 *                           MIG_N: e.g. a test that makes something
 *                           happen at one exact point of the switch-over
 * Any of these offers DEVICE_STATE: a daemon without it makes vu-front
 * exit with status 3 at connect time.
 * As in QEMU, the guest keeps the features it negotiated at boot across
 * migrations: the target is only asked what it offers, and once it has
 * loaded the state, a target that lacks one of them (of those QEMU takes
 * from a vhost-user back-end) fails the migration, with QEMU's message
 * ("Features 0x... unsupported. Allowed features: 0x...", stage=features)
 * and the source resumes.
 *
 * The hostile case:
 *   --hostile SEED          everything at random from SEED: features, one
 *                           or two regions, the tap's MTU (unless -m), how
 *                           often each misbehaviour happens (printed at
 *                           the start, with the seed)
 *   --no-mrg                don't take MRG_RXBUF
 *   --rx-chain SIZES        every RX chain is this: descriptor sizes, comma
 *                           separated, SIZExCOUNT for repeats ("66,24x63")
 *   --rx-same-head          one RX chain, at head 0, in every available entry
 * Any of the last three makes a fixed layout: nothing else misbehaves.
 *
 * Exit status: 0 if every case went as expected (and every migration but
 * the requested cancels succeeded), 1 otherwise, 2 on usage, 3 if the
 * daemon can't migrate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_tun.h>

#include "common/frame.h"
#include "common/vring_desc.h"
#include "common/vu_req.h"

#define VF_Q 256
#define VF_MEM_SIZE (64ULL << 20)
#define VF_RX_RING 0x0ULL
#define VF_TX_RING 0x10000ULL
#define VF_RX_BUFS 0x100000ULL
#define VF_RX_BUF 4096
#define VF_TX_SLOTS 64
#define VF_TX_BUF 65600
#define VF_TX_HDRS 0x80000ULL
/* With -2, slot 0 starts 32 bytes before the second region */
#define VF_TX_BASE (VF_MEM_SIZE / 2 - 32)
#define HDR 12
#define FRAME_MAX 65535
/* Every fourth TX slot carries its frame in pieces, from descriptors of
 * the ring's second half: the header, the first bytes (all the headers of
 * a TCP segment), then the rest in pieces of at most 16 KiB
 */
#define VF_TX_SPLIT_HEAD 90
#define VF_TX_SPLIT_MIN 2048	/* -P: smaller frames stay in one piece */
#define VF_TX_SPLIT_PIECE 16384
/* -P: pieces of 32 KiB, as Linux's page fragments for socket data are */
#define VF_TX_SPLIT_PIECE_P 32768
#define VF_TX_SPLIT_DESCS 6

/* Protocol: the requests in common/vu_req.h */
#define F_CSUM (1ULL << 0)
#define F_MRG (1ULL << 15)
#define F_OFFLOADS ((1ULL << 0) | (1ULL << 1) | (1ULL << 7) | (1ULL << 8) | \
		    (1ULL << 11) | (1ULL << 12))	/* CSUM, GUEST_CSUM,
							 * GUEST_TSO4/6,
							 * HOST_TSO4/6 */
#define F_LOG_ALL (1ULL << 26)
/* The virtio-net features QEMU 10 takes from a vhost-user back-end (its
 * list in net/vhost-user.c): the guest may only have those of them the
 * back-end offered, and a migration target whose back-end lacks one the
 * guest negotiated is refused at device load. The others (MAC, STATUS,
 * CTRL_VQ, ...) QEMU emulates itself; PROTOCOL_FEATURES and LOG_ALL are
 * the back-end's, not the guest's.
 */
#define F_QEMU_VU ((1ULL << 0) | (1ULL << 1) | (1ULL << 3) | (1ULL << 6) | \
		   (1ULL << 7) | (1ULL << 8) | (1ULL << 9) | (1ULL << 10) | \
		   (1ULL << 11) | (1ULL << 12) | (1ULL << 13) | \
		   (1ULL << 14) | (1ULL << 15) | (1ULL << 21) | \
		   (1ULL << 22) | (1ULL << 24) | (1ULL << 27) | \
		   (1ULL << 28) | (1ULL << 29) | (1ULL << 32) | \
		   (1ULL << 33) | (1ULL << 34) | (1ULL << 35) | \
		   (1ULL << 38) | (1ULL << 40) | (1ULL << 54) | \
		   (1ULL << 55) | (1ULL << 56) | (1ULL << 57) | \
		   (1ULL << 60) | (1ULL << 61))
#define F_EVIDX (1ULL << 29)	/* VIRTIO_RING_F_EVENT_IDX */
#define F_PROTO (1ULL << 30)
#define F_V1 (1ULL << 32)
#define PF_MQ (1ULL << 0)
#define PF_LOG_SHMFD (1ULL << 1)
#define PF_REPLY_ACK (1ULL << 3)
#define PF_DEVICE_STATE (1ULL << 19)
#define D_NEXT 1
#define D_WRITE 2
#define D_INDIRECT 4

static const uint8_t mac_guest[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static int timeout_ms = 5000, retry_s, mtu = 65520;
static bool two_regions, verbose;
static const char *sock_path, *tap_name = "tap0";
static const char *cur_path;		/* the daemon running the guest */
static volatile sig_atomic_t stop;

static int sock = -1;
static int memfd[2] = { -1, -1 };
static uint8_t *mem[2];
static bool reply_ack, log_shmfd;
static bool mig_wanted;			/* offer DEVICE_STATE */

struct ring {
	unsigned q;
	uint64_t gpa;
	uint8_t *desc, *avail, *used;
	uint16_t avail_idx, used_seen;
	uint16_t kicked_idx;		/* avail_idx at the last kick_wanted() */
	int kick, call;
};
static struct ring rx, tx;
static unsigned tx_next;		/* next TX slot */

static uint8_t frame[FRAME_MAX + HDR];
static uint8_t rx_flags;		/* header flags of the last RX frame */
static bool offload;			/* -O */
static bool split_all;			/* -P */
static bool want_evidx;			/* -e */
static bool evidx;			/* EVENT_IDX negotiated */
static unsigned tx_slots = VF_TX_SLOTS;	/* in flight, at most */
/* -F: TX descriptors taken from a free list, as the Linux driver does:
 * a frame takes what its layout needs (one, or with -P up to
 * VF_TX_FLIGHT_DESCS), and gets them back once the daemon used it
 */
static bool tx_flight;			/* -F given */
#define VF_TX_FLIGHT_DESCS 4
static uint16_t tx_free[VF_Q];		/* free descriptors, a stack */
static unsigned tx_free_n;
static uint16_t tx_slot_desc[VF_Q][VF_TX_FLIGHT_DESCS];
static uint8_t tx_slot_ndesc[VF_Q];
static uint16_t tx_reclaimed;		/* used entries given back so far */
static unsigned tx_flight_n;		/* -F N */
static void tx_flight_reset(void);
static long long pace_ns;		/* -d, in ns; 0: no pacing */
static long long pace_next;		/* CLOCK_MONOTONIC ns of the next */
static uint64_t offloads;		/* of F_OFFLOADS, what was negotiated */
static bool dev_csum;			/* the daemon offers CSUM */
static uint64_t dev_offer;		/* the daemon's GET_FEATURES answer */
static uint8_t rx_hdr[12];		/* virtio-net header of the last RX
					 * frame (with offloads) */

/* The hostile case (see "hostile guest driver" below): what the seed, or
 * the switches for a fixed layout, chose. Probabilities in per mille, but
 * those of what makes the daemon ignore the RX ring (p_bad, misaligned
 * RX tables) per ten thousand chains.
 */
#define HOS_MAX_PIECES 64
static struct {
	bool on;		/* --hostile or a fixed-layout switch */
	bool fixed;		/* a fixed layout: no random perturbation */
	uint64_t seed;
	bool mrg, evidx, offload;
	unsigned p_indirect, p_misalign, p_dup, p_reuse, p_rewrite, p_zero;
	unsigned p_tiny, p_alias, p_bad, p_garbage, p_nokick, p_weird;
	unsigned p_irq;		/* used_event / NO_INTERRUPT games */
	unsigned max_descs;	/* longest chain, 1 to HOS_MAX_PIECES */
	unsigned chaos_ms;	/* mean time between ring events, 0: none */
	unsigned scribble_us;	/* racing writer's period, 0: none */
	unsigned rx_fixed[HOS_MAX_PIECES], rx_fixed_n;	/* --rx-chain */
	bool same_head;		/* --rx-same-head */
	bool no_mrg;		/* --no-mrg */
} hos;
static bool mtu_given;			/* -m */
static void hos_start(void);

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return (uint64_t)now_ns() / 1000000;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static volatile sig_atomic_t mig_sig;

/* SIGUSR2: migrate, as "migrate" on the trigger FIFO */
static void on_migrate_signal(int sig)
{
	(void)sig;
	mig_sig = 1;
}

#define say(...) fprintf(stderr, "vu-front: " __VA_ARGS__)
#define vsay(...)                                                      \
	do {                                                           \
		if (verbose)                                           \
			say(__VA_ARGS__);                              \
	} while (0)

/* ---- guest memory ---------------------------------------------------- */

/* Our pointer for guest physical address @gpa (always mapped here) */
static uint8_t *gp(uint64_t gpa)
{
	if (two_regions && gpa >= VF_MEM_SIZE / 2)
		return mem[1] + (gpa - VF_MEM_SIZE / 2);
	return mem[0] + gpa;
}

/* Our virtual address of @gpa, which is what QEMU would send */
static uint64_t qva(uint64_t gpa)
{
	return (uint64_t)(uintptr_t)gp(gpa);
}

/* Copy into guest memory, split at the region boundary */
static void gwrite(uint64_t gpa, const void *p, size_t len)
{
	uint64_t half = VF_MEM_SIZE / 2;

	if (two_regions && gpa < half && gpa + len > half) {
		size_t n = half - gpa;

		memcpy(gp(gpa), p, n);
		memcpy(gp(half), (const uint8_t *)p + n, len - n);
		return;
	}
	memcpy(gp(gpa), p, len);
}

static int mem_setup(void)
{
	unsigned n = two_regions ? 2 : 1, i;
	uint64_t sz = VF_MEM_SIZE / n;

	for (i = 0; i < n; i++) {
		memfd[i] = memfd_create("vu-front", MFD_CLOEXEC);
		if (memfd[i] < 0 || ftruncate(memfd[i], (off_t)sz)) {
			perror("vu-front: memfd");
			return -1;
		}
		mem[i] = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED,
			      memfd[i], 0);
		if (mem[i] == MAP_FAILED) {
			perror("vu-front: mmap");
			return -1;
		}
	}
	return 0;
}

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

/* desc_set() - descriptor @i of @r, as vring_desc_put() writes one */
static void desc_set(struct ring *r, unsigned i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	vring_desc_put(r->desc + 16 * i, addr, len, flags, next);
}

static void ring_init(struct ring *r, uint64_t gpa)
{
	r->q = VF_Q;
	r->gpa = gpa;
	r->desc = gp(gpa);
	r->avail = gp(gpa + 16 * VF_Q);
	r->used = gp(gpa + 0x4000);
	memset(r->desc, 0, 0x8000);
	r->avail_idx = r->used_seen = r->kicked_idx = 0;
}

static uint64_t ring_desc_gpa(const struct ring *r)
{
	return r->gpa;
}

static uint64_t ring_avail_gpa(const struct ring *r)
{
	return r->gpa + 16 * VF_Q;
}

static uint64_t ring_used_gpa(const struct ring *r)
{
	return r->gpa + 0x4000;
}

/* Make head @h available, publish, and optionally kick */
static void ring_offer(struct ring *r, uint16_t h)
{
	put16(r->avail + 4 + 2 * (r->avail_idx % r->q), h);
	r->avail_idx++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	put16(r->avail + 2, r->avail_idx);
}

static void kick(struct ring *r)
{
	uint64_t one = 1;

	if (write(r->kick, &one, 8) != 8)
		perror("vu-front: kick");
}

static uint16_t used_idx(const struct ring *r)
{
	uint16_t v = get16(r->used + 2);

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return v;
}

/* Kick for what was published since the last call, unless the device
 * said it doesn't need kicks, as the Linux driver does: a full barrier
 * between our avail->idx store and the load of used->flags (NO_NOTIFY),
 * or with EVENT_IDX of avail_event (kick if our index passed it)
 */
static void kick_wanted(struct ring *r)
{
	uint16_t old = r->kicked_idx, ev;

	if (r->avail_idx == old)
		return;
	r->kicked_idx = r->avail_idx;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (evidx) {
		ev = get16(r->used + 4 + 8 * r->q);
		if ((uint16_t)(r->avail_idx - ev - 1) <
		    (uint16_t)(r->avail_idx - old))
			kick(r);
		return;
	}
	if (!(get16(r->used) & 1))
		kick(r);
}

/* With EVENT_IDX, ask for an interrupt at used entry @at of @r (used_event):
 * on RX the next one once the ring is drained, as the Linux driver does;
 * on TX the next one while every TX slot is in flight, as the driver does
 * when its TX ring is full (without EVENT_IDX every used entry interrupts
 * anyway: we never set NO_INTERRUPT). True if entries came meanwhile (no
 * need to wait)
 */
static bool used_event_arm(struct ring *r, uint16_t at)
{
	if (!evidx)
		return false;
	put16(r->avail + 4 + 2 * r->q, at);
	/* Our used_event store before the load of used->idx */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return used_idx(r) != at;
}

static unsigned long long tx_irq_asked;	/* TX used_event_arm() calls */

/* ---- messages -------------------------------------------------------- */

static int msg_send_fds(uint32_t req, uint32_t flags, const void *p,
			uint32_t size, const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 16)];
		struct cmsghdr align;
	} cbuf;
	uint8_t hdr[12];
	struct iovec iov[2] = {
		{ hdr, 12 }, { (void *)p, size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	uint32_t fl = F_VERSION | flags;

	memcpy(hdr, &req, 4);
	memcpy(hdr + 4, &fl, 4);
	memcpy(hdr + 8, &size, 4);
	if (nfds) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)(12 + size)) {
		say("send request %u: %s\n", req, strerror(errno));
		return -1;
	}
	return 0;
}

static int msg_send(uint32_t req, uint32_t flags, const void *p,
		    uint32_t size)
{
	return msg_send_fds(req, flags, p, size, NULL, 0);
}

/* Read exactly @len bytes with the deadline; -1 on EOF/timeout */
static int read_full(void *buf, size_t len)
{
	uint64_t end = now_ms() + timeout_ms;
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = { sock, POLLIN, 0 };
		int left = (int)(end - now_ms());
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		n = recv(sock, (uint8_t *)buf + got, len - got, 0);
		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

/* Wait for a reply to @req with an 8-byte payload */
static int reply_u64(uint32_t req, uint64_t *v)
{
	uint8_t hdr[12];
	uint32_t r, fl, size;

	if (read_full(hdr, 12))
		return -1;
	memcpy(&r, hdr, 4);
	memcpy(&fl, hdr + 4, 4);
	memcpy(&size, hdr + 8, 4);
	if (r != req || !(fl & 0x4) || size != 8) {
		say("bad reply: request %u flags 0x%x size %u to %u\n", r, fl,
		    size, req);
		return -1;
	}
	return read_full(v, 8);
}

static int get_u64(uint32_t req, uint64_t *v)
{
	if (msg_send(req, 0, NULL, 0))
		return -1;
	return reply_u64(req, v);
}

/* Send with NEED_REPLY (REPLY_ACK); return the acked status, -1 if none */
static int acked(uint32_t req, const void *p, uint32_t size, const int *fds,
		 unsigned nfds, uint64_t *status)
{
	if (msg_send_fds(req, F_NEED_REPLY, p, size, fds, nfds))
		return -1;
	return reply_u64(req, status);
}

/* Request that must be refused: NEED_REPLY, non-zero status expected */
static int expect_refused(const char *what, uint32_t req, const void *p,
			  uint32_t size, const int *fds, unsigned nfds)
{
	uint64_t st;

	if (acked(req, p, size, fds, nfds, &st)) {
		say("%s: no reply\n", what);
		return -1;
	}
	if (!st) {
		say("%s: accepted, should have been refused\n", what);
		return -1;
	}
	vsay("%s: refused (%llu)\n", what, (unsigned long long)st);
	return 0;
}

static int send_u64(uint32_t req, uint64_t v)
{
	uint64_t st;

	if (!reply_ack)
		return msg_send(req, 0, &v, 8);
	if (acked(req, &v, 8, NULL, 0, &st) || st) {
		say("request %u refused\n", req);
		return -1;
	}
	return 0;
}

static int send_state(uint32_t req, uint32_t idx, uint32_t num)
{
	uint32_t s[2] = { idx, num };
	uint64_t st;

	if (!reply_ack)
		return msg_send(req, 0, s, 8);
	if (acked(req, s, 8, NULL, 0, &st) || st) {
		say("request %u (ring %u, %u) refused\n", req, idx, num);
		return -1;
	}
	return 0;
}

static int send_vring_fd(uint32_t req, unsigned idx, int fd)
{
	uint64_t v = idx, st;

	if (!reply_ack)
		return msg_send_fds(req, 0, &v, 8, &fd, 1);
	if (acked(req, &v, 8, &fd, 1, &st) || st) {
		say("request %u (ring %u) refused\n", req, idx);
		return -1;
	}
	return 0;
}

struct addr_msg {
	uint32_t index, flags;
	uint64_t desc, used, avail, log;
};

static void addr_fill(struct addr_msg *a, const struct ring *r,
		      unsigned idx, uint32_t flags)
{
	a->index = idx;
	a->flags = flags;
	a->desc = qva(ring_desc_gpa(r));
	a->used = qva(ring_used_gpa(r));
	a->avail = qva(ring_avail_gpa(r));
	a->log = ring_used_gpa(r);
}

static int mem_table_msg(uint8_t *buf)
{
	unsigned n = two_regions ? 2 : 1, i;
	uint64_t sz = VF_MEM_SIZE / n;

	memset(buf, 0, 8 + 32 * n);
	memcpy(buf, &n, 4);
	for (i = 0; i < n; i++) {
		uint64_t r[4] = { i * sz, sz, (uint64_t)(uintptr_t)mem[i], 0 };

		memcpy(buf + 8 + 32 * i, r, 32);
	}
	return (int)(8 + 32 * n);
}

static void sock_close(void)
{
	if (sock >= 0)
		close(sock);
	sock = -1;
	if (rx.kick >= 0) {
		close(rx.kick);
		close(rx.call);
		close(tx.kick);
		close(tx.call);
	}
	rx.kick = rx.call = tx.kick = tx.call = -1;
	reply_ack = false;
}

static int sock_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint64_t end = now_ms() + (uint64_t)retry_s * 1000;

	sock_close();
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	for (;;) {
		sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (sock < 0)
			return -1;
		if (!connect(sock, (struct sockaddr *)&a, sizeof(a)))
			return 0;
		close(sock);
		sock = -1;
		if (now_ms() >= end || stop) {
			say("connect %s: %s\n", path, strerror(errno));
			return -1;
		}
		usleep(50000);
	}
}

/* Post every RX buffer */
static void rx_post_all(void)
{
	unsigned i;

	for (i = 0; i < VF_Q; i++) {
		desc_set(&rx, i, VF_RX_BUFS + (uint64_t)i * VF_RX_BUF,
			 VF_RX_BUF, D_WRITE, 0);
		ring_offer(&rx, (uint16_t)i);
	}
}

/* Features we ack in SET_FEATURES (LOG_ALL added while logging) */
#define F_ACKED (F_V1 | F_PROTO | F_MRG)
static uint64_t features_drop;		/* of F_ACKED, not acked (hostile) */

/* What SET_FEATURES carries, as QEMU's, whose dirty-log start sends the
 * same again with LOG_ALL: F_ACKED and what we took of the offer
 */
static uint64_t features_acked(void)
{
	return (F_ACKED & ~features_drop) | offloads | (evidx ? F_EVIDX : 0);
}

/*
 * The connect sequence of QEMU (doc §4.1): features, protocol features,
 * owner, features again, call fds. New kick/call eventfds for this
 * connection. With migration requested, DEVICE_STATE must be offered:
 * without it the daemon can't migrate, and we exit with status 3.
 */
static int dev_handshake(void)
{
	uint64_t f, pf, want = PF_REPLY_ACK | PF_LOG_SHMFD;

	if (mig_wanted)
		want |= PF_DEVICE_STATE;
	if (get_u64(GET_FEATURES, &f))
		return -1;
	dev_offer = f;
	offloads = offload ? f & F_OFFLOADS : 0;
	evidx = want_evidx && (f & F_EVIDX);
	dev_csum = f & F_CSUM;
	if ((f & F_ACKED) != F_ACKED) {
		say("features 0x%llx lack VERSION_1/PROTOCOL/MRG_RXBUF\n",
		    (unsigned long long)f);
		return -1;
	}
	if (get_u64(GET_PROTOCOL_FEATURES, &pf))
		return -1;
	if (mig_wanted && !(pf & PF_DEVICE_STATE)) {
		say("daemon lacks DEVICE_STATE (protocol features 0x%llx): "
		    "it can't migrate\n", (unsigned long long)pf);
		exit(3);
	}
	pf &= want;
	if (msg_send(SET_PROTOCOL_FEATURES, 0, &pf, 8))
		return -1;
	reply_ack = pf & PF_REPLY_ACK;
	log_shmfd = pf & PF_LOG_SHMFD;
	if (msg_send(SET_OWNER, 0, NULL, 0) || get_u64(GET_FEATURES, &f))
		return -1;

	rx.kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	rx.call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	tx.kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	tx.call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (send_vring_fd(SET_VRING_CALL, 0, rx.call) ||
	    send_vring_fd(SET_VRING_CALL, 1, tx.call))
		return -1;
	return 0;
}

/*
 * The device start sequence of QEMU (doc §4.2). @fresh: new, empty rings
 * and every RX buffer posted; otherwise the rings in guest memory carry
 * on (migration target, cancelled migration) from the avail indexes
 * @base that GET_VRING_BASE returned.
 */
static int dev_start(uint64_t extra_features, bool fresh,
		     const uint16_t base[2])
{
	uint8_t mt[8 + 32 * 2];
	uint64_t st;
	int len;

	if (send_u64(SET_FEATURES, features_acked() | extra_features))
		return -1;
	len = mem_table_msg(mt);
	if (acked(SET_MEM_TABLE, mt, (uint32_t)len, memfd, two_regions ? 2 : 1,
		  &st) || st) {
		say("SET_MEM_TABLE refused\n");
		return -1;
	}

	if (fresh) {
		ring_init(&rx, VF_RX_RING);
		ring_init(&tx, VF_TX_RING);
		tx_next = 0;
		tx_flight_reset();
	}
	for (unsigned i = 0; i < 2; i++) {
		struct ring *r = i ? &tx : &rx;
		struct addr_msg a;

		addr_fill(&a, r, i, 0);
		if (send_state(SET_VRING_NUM, i, VF_Q) ||
		    send_state(SET_VRING_BASE, i, fresh ? 0 : base[i]))
			return -1;
		if (acked(SET_VRING_ADDR, &a, sizeof(a), NULL, 0, &st) || st) {
			say("SET_VRING_ADDR %u refused\n", i);
			return -1;
		}
		if (send_vring_fd(SET_VRING_KICK, i, r->kick) ||
		    send_vring_fd(SET_VRING_CALL, i, r->call))
			return -1;
	}
	if (fresh && hos.on)
		hos_start();
	else if (fresh)
		rx_post_all();
	if (send_state(SET_VRING_ENABLE, 0, 1) ||
	    send_state(SET_VRING_ENABLE, 1, 1))
		return -1;
	kick(&rx);
	if (!fresh)
		kick(&tx);
	vsay("device started\n");
	return 0;
}

/* Connect to the daemon at sock_path and start the device afresh */
static int dev_connect(uint64_t extra_features)
{
	if (sock_connect(sock_path) || dev_handshake())
		return -1;
	return dev_start(extra_features, true, NULL);
}

/* ---- frames ---------------------------------------------------------- */

/* -F: every TX descriptor free, no slot holding any (a fresh ring) */
static void tx_flight_reset(void)
{
	unsigned i;

	tx_free_n = 0;
	for (i = VF_Q; i-- > 0;)
		tx_free[tx_free_n++] = (uint16_t)i;
	memset(tx_slot_ndesc, 0, sizeof(tx_slot_ndesc));
	tx_reclaimed = used_idx(&tx);
}

/* -F: the descriptors of TX slot @s back to the free list */
static void tx_flight_free(unsigned s)
{
	while (tx_slot_ndesc[s] && tx_free_n < VF_Q)
		tx_free[tx_free_n++] = tx_slot_desc[s][--tx_slot_ndesc[s]];
	tx_slot_ndesc[s] = 0;
}

/* -F: free the descriptors of the frames the daemon used since the last
 * call (it uses them in order, as every device here does)
 */
static void tx_flight_reclaim(void)
{
	uint16_t u = used_idx(&tx);

	while (tx_reclaimed != u) {
		unsigned inflight = (uint16_t)(tx.avail_idx - tx_reclaimed);

		tx_flight_free((tx_next - inflight) % tx_slots);
		tx_reclaimed++;
	}
}

/* May the next frame go on TX: a slot free, and (-F) descriptors for the
 * largest layout a frame may take?
 */
static bool tx_room(void)
{
	if ((uint16_t)(tx.avail_idx - used_idx(&tx)) >= tx_slots)
		return false;
	if (!tx_flight)
		return true;
	tx_flight_reclaim();
	return tx_free_n >= (split_all ? VF_TX_FLIGHT_DESCS : 1);
}

/* -F: put a frame in TX slot @s at @buf, with descriptors from the free
 * list: in one buffer with its header, or (-P with checksum offload, 2 KiB
 * or more) the header and the frame's first bytes, then 32 KiB pieces
 */
static int tx_frame_flight(unsigned s, uint64_t buf, const uint8_t *hdr,
			   const uint8_t *f, size_t len, bool sg)
{
	size_t off = VF_TX_SPLIT_HEAD, piece = VF_TX_SPLIT_PIECE_P, l;
	uint16_t d[VF_TX_FLIGHT_DESCS];
	unsigned n = 1, i;

	if (sg && len >= VF_TX_SPLIT_MIN)
		n += (unsigned)((len - off + piece - 1) / piece);
	tx_flight_reclaim();
	tx_flight_free(s);
	if (n > VF_TX_FLIGHT_DESCS || tx_free_n < n)
		return -1;
	for (i = 0; i < n; i++)
		d[i] = tx_free[--tx_free_n];
	gwrite(buf, hdr, HDR);
	gwrite(buf + HDR, f, len);
	if (n == 1) {
		desc_set(&tx, d[0], buf, (uint32_t)(HDR + len), 0, 0);
	} else {
		desc_set(&tx, d[0], buf, HDR + VF_TX_SPLIT_HEAD, D_NEXT, d[1]);
		for (i = 1; i < n; i++, off += l) {
			l = len - off < piece ? len - off : piece;
			desc_set(&tx, d[i], buf + HDR + off, (uint32_t)l,
				 i + 1 < n ? D_NEXT : 0,
				 i + 1 < n ? d[i + 1] : 0);
		}
	}
	memcpy(tx_slot_desc[s], d, n * sizeof(d[0]));
	tx_slot_ndesc[s] = (uint8_t)n;
	ring_offer(&tx, d[0]);
	tx_next++;
	return 0;
}

/* Put a frame on TX (header + frame) in one of the layouts above; the
 * header is @hdr (offloads), or zero
 */
static int tx_frame_hdr(const uint8_t *hdr, const uint8_t *f, size_t len)
{
	static const uint8_t zero[HDR];
	unsigned s = tx_next % tx_slots, d = 2 * s;
	uint64_t buf = VF_TX_BASE + (uint64_t)s * VF_TX_BUF;
	uint64_t end = now_ms() + timeout_ms;

	/* Wait until the slot came back */
	while (!tx_room()) {
		if (now_ms() > end) {
			say("TX ring not drained\n");
			return -1;
		}
		usleep(1000);
	}
	if (len > VF_TX_BUF - HDR)
		return -1;
	/* A Linux guest has scatter-gather only with checksum offload */
	bool sg = split_all && (offloads & F_CSUM);

	if (tx_flight)
		return tx_frame_flight(s, buf, hdr ? hdr : zero, f, len, sg);
	if (split_all ? !sg || len < VF_TX_SPLIT_MIN : s % 2) {
		gwrite(buf, hdr ? hdr : zero, HDR);
		gwrite(buf + HDR, f, len);
		desc_set(&tx, d, buf, (uint32_t)(HDR + len), 0, 0);
	} else if (sg || (s % 4 == 2 && dev_csum && len > VF_TX_SPLIT_HEAD)) {
		/* As a Linux guest lays out a large frame: the frame's start
		 * with all its headers, then the payload in pieces. With -P
		 * the virtio-net header goes in front of the first piece, in
		 * the same buffer, as Linux puts it; otherwise in a buffer of
		 * its own, a layout the daemon must handle as well
		 */
		unsigned k = VF_Q / 2 +
			     (split_all ? s : s / 4) * VF_TX_SPLIT_DESCS;
		size_t piece = split_all ? VF_TX_SPLIT_PIECE_P
					 : VF_TX_SPLIT_PIECE;
		size_t off = VF_TX_SPLIT_HEAD;

		d = k;
		if (split_all) {
			gwrite(buf, hdr ? hdr : zero, HDR);
			gwrite(buf + HDR, f, len);
			desc_set(&tx, k, buf, HDR + VF_TX_SPLIT_HEAD, D_NEXT,
				 (uint16_t)(k + 1));
			buf += HDR;
		} else {
			uint64_t h = VF_TX_HDRS + 16 * s;

			memcpy(gp(h), hdr ? hdr : zero, HDR);
			gwrite(buf, f, len);
			desc_set(&tx, k, h, HDR, D_NEXT, (uint16_t)(k + 1));
			k++;
			desc_set(&tx, k, buf, VF_TX_SPLIT_HEAD, D_NEXT,
				 (uint16_t)(k + 1));
		}
		while (off < len) {
			size_t l = len - off < piece ? len - off : piece;

			k++;
			desc_set(&tx, k, buf + off, (uint32_t)l,
				 off + l < len ? D_NEXT : 0, (uint16_t)(k + 1));
			off += l;
		}
	} else {
		uint64_t h = VF_TX_HDRS + 16 * s;

		memcpy(gp(h), hdr ? hdr : zero, HDR);
		desc_set(&tx, d, h, HDR, D_NEXT, (uint16_t)(d + 1));
		gwrite(buf, f, len);
		desc_set(&tx, d + 1, buf, (uint32_t)len, 0, 0);
	}
	ring_offer(&tx, (uint16_t)d);
	tx_next++;
	return 0;
}

static int tx_frame(const uint8_t *f, size_t len)
{
	return tx_frame_hdr(NULL, f, len);
}

/*
 * Take the next frame from RX into @out: returns its length, 0 if none
 * pending, -1 on a protocol violation by the daemon. Buffers are
 * re-posted (not kicked: the caller kicks).
 */
static int rx_frame(uint8_t *out, size_t size)
{
	uint16_t idx = used_idx(&rx), nbuf, i;
	size_t len = 0;

	if (idx == rx.used_seen)
		return 0;
	for (i = 0;; i++) {
		const uint8_t *u;
		uint32_t id, l;
		uint8_t *b;

		if ((uint16_t)(idx - rx.used_seen) == 0) {
			say("frame spans %u buffers, only %u used\n", nbuf, i);
			return -1;
		}
		u = rx.used + 4 + 8 * (rx.used_seen % VF_Q);
		id = get32(u);
		l = get32(u + 4);
		rx.used_seen++;
		if (id >= VF_Q || l > VF_RX_BUF) {
			say("used entry id %u len %u\n", id, l);
			return -1;
		}
		b = gp(VF_RX_BUFS + (uint64_t)id * VF_RX_BUF);
		if (!i) {
			if (l < HDR + 14) {
				say("RX frame of %u bytes\n", l);
				return -1;
			}
			/* DATA_VALID (2) is fine: upstream passt sets it;
			 * NEEDS_CSUM (1) and TCP GSO (1, 4; 0x80 ECN)
			 * only with the offloads negotiated
			 */
			rx_flags = b[0];
			memcpy(rx_hdr, b, sizeof(rx_hdr));
			if ((b[0] & ~(offloads ? 3 : 2)) ||
			    (b[1] && (!offloads ||
				      ((b[1] & 0x7f) != 1 &&
				       (b[1] & 0x7f) != 4)))) {
				say("RX header flags 0x%x gso 0x%x\n", b[0],
				    b[1]);
				return -1;
			}
			nbuf = get16(b + 10);
			if (!nbuf) {
				say("num_buffers 0\n");
				return -1;
			}
			b += HDR;
			l -= HDR;
		}
		if (len + l <= size)
			memcpy(out + len, b, l);
		len += l;
		desc_set(&rx, id, VF_RX_BUFS + (uint64_t)id * VF_RX_BUF,
			 VF_RX_BUF, D_WRITE, 0);
		ring_offer(&rx, (uint16_t)id);
		if (i + 1 == nbuf)
			break;
	}
	if (len > size) {
		say("RX frame of %zu bytes\n", len);
		return -1;
	}
	return (int)len;
}

static void drain_eventfd(int fd)
{
	uint64_t v;

	while (read(fd, &v, 8) == 8)
		;
}

/* Wait for a frame for which @match is true; 0 if found */
static int rx_wait(bool (*match)(const uint8_t *, size_t, uint32_t),
		   uint32_t arg)
{
	uint64_t end = now_ms() + timeout_ms;
	static uint8_t f[FRAME_MAX];

	for (;;) {
		struct pollfd pfd[2] = { { rx.call, POLLIN, 0 },
					 { sock, POLLIN, 0 } };
		int n, left;

		while ((n = rx_frame(f, sizeof(f))) > 0) {
			kick(&rx);
			vsay("RX frame, %d bytes, type 0x%02x%02x\n", n, f[12],
			     f[13]);
			if (match(f, (size_t)n, arg))
				return 0;
		}
		if (n < 0)
			return -1;
		left = (int)(end - now_ms());
		if (left <= 0)
			return -1;
		poll(pfd, 2, left < 20 ? left : 20);
		if (pfd[1].revents & (POLLIN | POLLHUP)) {
			say("daemon closed the connection\n");
			return -1;
		}
		drain_eventfd(rx.call);
	}
}

static size_t arp_request(uint8_t *f)
{
	struct in_addr me, gw;

	inet_pton(AF_INET, "192.0.2.2", &me);
	inet_pton(AF_INET, "192.0.2.1", &gw);
	memcpy(f, mac_bcast, 6);
	memcpy(f + 6, mac_guest, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	f[14] = 0;
	f[15] = 1;
	f[16] = 0x08;
	f[17] = 0;
	f[18] = 6;
	f[19] = 4;
	f[20] = 0;
	f[21] = 1;
	memcpy(f + 22, mac_guest, 6);
	memcpy(f + 28, &me, 4);
	memset(f + 32, 0, 6);
	memcpy(f + 38, &gw, 4);
	return 42;
}

static bool is_arp_reply(const uint8_t *f, size_t len, uint32_t arg)
{
	(void)arg;
	return len >= 42 && f[12] == 0x08 && f[13] == 0x06 && f[21] == 2 &&
	       !memcmp(f, mac_guest, 6);
}

static size_t dhcp_discover(uint8_t *f, uint32_t xid)
{
	static const uint8_t any[4], bcast[4] = { 255, 255, 255, 255 };
	uint8_t *ip = f + 14, *udp = ip + 20, *b = udp + 8;
	size_t o = 240, l4;

	memset(f, 0, 14 + 20 + 8 + 300);
	eth_hdr_put(f, mac_bcast, mac_guest, 0x0800);
	b[0] = 1;
	b[1] = 1;
	b[2] = 6;
	xid = htonl(xid);
	memcpy(b + 4, &xid, 4);
	b[10] = 0x80;
	memcpy(b + 28, mac_guest, 6);
	b[236] = 99;
	b[237] = 130;
	b[238] = 83;
	b[239] = 99;
	b[o++] = 53;
	b[o++] = 1;
	b[o++] = 1;
	b[o++] = 255;
	l4 = 8 + o;
	ip4_hdr_put(ip, 17, &any, &bcast, (uint16_t)(20 + l4), 0, 0);
	udp[1] = 68;
	udp[3] = 67;
	udp[4] = (uint8_t)(l4 >> 8);
	udp[5] = (uint8_t)l4;
	return 14 + 20 + l4;
}

static bool is_dhcp_offer(const uint8_t *f, size_t len, uint32_t xid)
{
	uint32_t x;

	if (len < 14 + 20 + 8 + 240 || f[12] != 0x08 || f[13] || f[23] != 17)
		return false;
	memcpy(&x, f + 14 + 20 + 8 + 4, 4);
	return f[14 + 20 + 8] == 2 && ntohl(x) == xid;
}

/*
 * Send @f and wait for an answer @match takes; as a client does, send it
 * again every second until the timeout: an answer the daemon couldn't
 * queue (all our buffers full, of a backlog for a guest that went away
 * before us) is lost, and isn't sent again otherwise
 */
static int request(const uint8_t *f, size_t len,
		   bool (*match)(const uint8_t *, size_t, uint32_t),
		   uint32_t arg)
{
	uint64_t end = now_ms() + timeout_ms;
	int saved = timeout_ms, rc = -1;

	while (rc && now_ms() < end) {
		if (tx_frame(f, len))
			break;
		kick(&tx);
		timeout_ms = (int)(end - now_ms() < 1000 ? end - now_ms()
							 : 1000);
		rc = rx_wait(match, arg);
		timeout_ms = saved;
		if (rc) {
			struct pollfd p = { sock, POLLIN, 0 };

			if (poll(&p, 1, 0))	/* the daemon closed it */
				break;
		}
	}
	timeout_ms = saved;
	return rc;
}

static int case_arp_probe(void)
{
	uint8_t f[64];
	size_t len = arp_request(f);

	if (request(f, len, is_arp_reply, 0)) {
		say("arp-probe: no ARP reply\n");
		return -1;
	}
	vsay("arp-probe: ARP reply\n");
	return 0;
}

static int case_dhcp_probe(void)
{
	uint32_t xid = (uint32_t)now_ms();
	size_t len = dhcp_discover(frame, xid);

	if (request(frame, len, is_dhcp_offer, xid)) {
		say("dhcp-probe: no DHCPOFFER\n");
		return -1;
	}
	vsay("dhcp-probe: DHCPOFFER\n");
	return 0;
}

static int case_expect_close(void)
{
	struct pollfd pfd = { sock, POLLIN, 0 };
	uint64_t end = now_ms() + timeout_ms;
	uint8_t b[256];

	while (now_ms() < end) {
		if (poll(&pfd, 1, 50) > 0) {
			ssize_t n = recv(sock, b, sizeof(b), MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno == ECONNRESET)) {
				vsay("connection closed by the daemon\n");
				sock_close();
				return 0;
			}
		}
	}
	say("expect-close: the daemon kept the connection\n");
	return -1;
}

/* ---- bridge ---------------------------------------------------------- */

/*
 * Write a frame from RX to the tap, behind a virtio-net header (the tap
 * has IFF_VNET_HDR). A frame marked DATA_VALID may lack its TCP or UDP
 * checksum (upstream passt leaves it out), and tun ignores DATA_VALID:
 * mark it NEEDS_CSUM with the checksum's place instead, which the guest
 * kernel takes as verified on local delivery, as for a virtio guest.
 */
static void tap_write(int tap, const uint8_t *f, size_t len)
{
	uint8_t h[HDR] = { 0 };
	struct iovec iov[2] = { { h, HDR }, { (void *)f, len } };
	size_t l3 = 14, l4 = 0;
	uint8_t proto = 0;

	if (rx_hdr[0] & 1 || rx_hdr[1]) {
		/* Offloads: the tap takes the daemon's header as it is */
		memcpy(h, rx_hdr, 10);
	} else if ((rx_flags & 2) && len >= l3 + 40) {
		if (f[12] == 0x08 && f[13] == 0x00) {
			l4 = l3 + 4 * (f[l3] & 0xf);
			proto = f[l3 + 9];
		} else if (f[12] == 0x86 && f[13] == 0xdd) {
			l4 = l3 + 40;
			proto = f[l3 + 6];
		}
	}
	if ((proto == 6 && l4 + 20 <= len) || (proto == 17 && l4 + 8 <= len)) {
		uint16_t start = (uint16_t)l4, off = proto == 6 ? 16 : 6;

		h[0] = 1;	/* NEEDS_CSUM */
		memcpy(h + 6, &start, 2);
		memcpy(h + 8, &off, 2);
	}
	if (writev(tap, iov, 2) < 0 && errno != EAGAIN && errno != EIO)
		perror("vu-front: tap write");
}

static int tap_open(void)
{
	int hsz = HDR;
	struct ifreq ifr = { 0 };
	int fd, s;

	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror("vu-front: /dev/net/tun");
		return -1;
	}
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", tap_name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 ||
	    ioctl(fd, TUNSETVNETHDRSZ, &hsz) < 0) {
		perror("vu-front: TUNSETIFF");
		close(fd);
		return -1;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifr.ifr_mtu = mtu;
	if (s < 0 || ioctl(s, SIOCSIFMTU, &ifr) < 0 ||
	    ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		perror("vu-front: tap set-up");
		close(fd);
		return -1;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		perror("vu-front: tap up");
		close(fd);
		return -1;
	}
	close(s);
	if (offloads) {
		/* What the guest kernel may send us: as negotiated */
		unsigned long tf = 0;

		if (offloads & F_CSUM) {
			tf |= TUN_F_CSUM;
			if (offloads & (1ULL << 11))
				tf |= TUN_F_TSO4;
			if (offloads & (1ULL << 12))
				tf |= TUN_F_TSO6;
		}
		if (ioctl(fd, TUNSETOFFLOAD, tf) < 0) {
			perror("vu-front: TUNSETOFFLOAD");
			close(fd);
			return -1;
		}
		say("bridge: offloads 0x%llx\n", (unsigned long long)offloads);
	}
	return fd;
}

/* ---- migration ------------------------------------------------------- */

/*
 * A migration is what QEMU 10 does at switch-over (doc §4.3, §8): the
 * target's connect sequence (its QEMU is up before the switch-over), then
 * the VM stops: no frames relayed (the tap keeps the guest's frames in its
 * queue), rings disabled and stopped with GET_VRING_BASE, the state saved
 * through a pipe (SET_DEVICE_STATE_FD SAVE, CHECK_DEVICE_STATE), loaded
 * into the target the same way, and the target's device started on the
 * same guest memory with the source's ring indexes. A cancelled migration
 * starts the source's device again instead. Dirty logging (SET_LOG_BASE,
 * LOG_ALL, LOG flags) is turned on first unless --no-mig-log, as QEMU
 * does for its pre-copy; nobody reads the log: memory is shared here.
 */

#define STATE_NOFD 0x100
#define STATE_SAVE 0
#define STATE_LOAD 1

/* A connection to a daemon: socket, negotiated options, ring eventfds */
struct conn {
	int sock, rk, rc, tk, tc;
	bool reply_ack, log_shmfd;
};

static const char *mig_to, *mig_trigger, *mig_done, *state_save_path;
static const char *mig_exec, *mig_notify, *mig_notify_msg, *mig_phase_exec;
static const char *state_load_path;
static unsigned long state_flags_or;	/* --state-flags-or */
static bool mig_cancel, mig_close_src, mig_nolog, mig_nodisable;
static bool expect_load_fail;
/* --send-rarp: QEMU's announcement after a migration, as its default
 * announce timer sends it: SEND_RARP 50 ms after the target runs the
 * guest, then every 100 ms, five in all
 */
static bool mig_rarp;
static unsigned rarp_left;
static long long rarp_next;		/* CLOCK_MONOTONIC ns */
static unsigned mig_n, mig_bad;
static struct conn old_src = { -1, -1, -1, -1, -1, false, false };

/* conn_save() - move the current connection into @c, none left current */
static void conn_save(struct conn *c)
{
	c->sock = sock;
	c->rk = rx.kick;
	c->rc = rx.call;
	c->tk = tx.kick;
	c->tc = tx.call;
	c->reply_ack = reply_ack;
	c->log_shmfd = log_shmfd;
	sock = rx.kick = rx.call = tx.kick = tx.call = -1;
	reply_ack = log_shmfd = false;
}

/* conn_load() - make @c the current connection */
static void conn_load(const struct conn *c)
{
	sock = c->sock;
	rx.kick = c->rk;
	rx.call = c->rc;
	tx.kick = c->tk;
	tx.call = c->tc;
	reply_ack = c->reply_ack;
	log_shmfd = c->log_shmfd;
}

static void conn_close(struct conn *c)
{
	int *fds[] = { &c->sock, &c->rk, &c->rc, &c->tk, &c->tc };
	unsigned i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* Dirty logging on, as QEMU starts its pre-copy */
static int mig_log_start(void)
{
	uint64_t size = VF_MEM_SIZE / 4096 / 8, m[2] = { size, 0 }, st;
	struct addr_msg a;
	unsigned i;
	int fd;

	if (!log_shmfd)
		return 0;
	fd = memfd_create("vu-front-log", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size)) {
		perror("vu-front: log memfd");
		return -1;
	}
	if (msg_send_fds(SET_LOG_BASE, 0, m, 16, &fd, 1) ||
	    reply_u64(SET_LOG_BASE, &st)) {
		say("SET_LOG_BASE not answered\n");
		close(fd);
		return -1;
	}
	close(fd);
	if (send_u64(SET_FEATURES, features_acked() | F_LOG_ALL))
		return -1;
	for (i = 0; i < 2; i++) {
		addr_fill(&a, i ? &tx : &rx, i, 1);
		if (!reply_ack) {
			if (msg_send(SET_VRING_ADDR, 0, &a, sizeof(a)))
				return -1;
		} else if (acked(SET_VRING_ADDR, &a, sizeof(a), NULL, 0, &st) ||
			   st) {
			say("SET_VRING_ADDR with LOG refused\n");
			return -1;
		}
	}
	return 0;
}

/* The reply to SET_DEVICE_STATE_FD: a u64, and maybe the daemon's fd */
static int reply_state_fd(uint64_t *v, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cbuf;
	uint8_t hdr[12];
	struct iovec iov = { hdr, 12 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf) };
	struct pollfd pfd = { sock, POLLIN, 0 };
	uint32_t r, fl, size;
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return -1;
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return -1;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET &&
		    cm->cmsg_type == SCM_RIGHTS && *fd < 0)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	}
	if (n < 12 && read_full(hdr + n, (size_t)(12 - n)))
		return -1;
	memcpy(&r, hdr, 4);
	memcpy(&fl, hdr + 4, 4);
	memcpy(&size, hdr + 8, 4);
	if (r != SET_DEVICE_STATE_FD || !(fl & 0x4) || size != 8) {
		say("bad reply: request %u flags 0x%x size %u to %u\n", r, fl,
		    size, SET_DEVICE_STATE_FD);
		return -1;
	}
	return read_full(v, 8);
}

/*
 * --phase-exec CMD: run it (sh -c) at @phase and wait until it exits.
 * SIGCHLD is ignored (the --migrate-exec children are never waited for),
 * so waitpid() can't give the status: it returns once the child is gone.
 */
static void mig_phase(const char *phase)
{
	char n[16];
	pid_t pid;

	if (!mig_phase_exec)
		return;
	snprintf(n, sizeof(n), "%u", mig_n);
	pid = fork();
	if (pid < 0) {
		perror("vu-front: fork");
		return;
	}
	if (!pid) {
		setenv("MIG_N", n, 1);
		setenv("MIG_PHASE", phase, 1);
		execl("/bin/sh", "sh", "-c", mig_phase_exec, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	vsay("phase %s: hook done\n", phase);
}

/*
 * SET_DEVICE_STATE_FD(@dir, STOPPED) with our end @ours of a pipe whose
 * other end is @theirs (which we close): returns the fd to transfer on
 * (ours, or the daemon's if it sent one instead), -1 on refusal
 */
static int state_fd(uint32_t dir, int ours, int theirs)
{
	uint32_t t[2] = { dir, 0 };
	uint64_t v;
	int fd, rc;

	rc = msg_send_fds(SET_DEVICE_STATE_FD, 0, t, 8, &theirs, 1);
	close(theirs);
	if (!rc && dir == STATE_SAVE)
		mig_phase("save-sent");
	if (rc || reply_state_fd(&v, &fd)) {
		say("SET_DEVICE_STATE_FD (%s): no reply\n",
		    dir == STATE_SAVE ? "SAVE" : "LOAD");
		close(ours);
		return -1;
	}
	if (v & 0xff) {
		say("SET_DEVICE_STATE_FD (%s) refused: 0x%llx\n",
		    dir == STATE_SAVE ? "SAVE" : "LOAD", (unsigned long long)v);
		if (fd >= 0)
			close(fd);
		close(ours);
		return -1;
	}
	if (v & STATE_NOFD) {
		if (fd >= 0) {
			say("SET_DEVICE_STATE_FD: an fd despite NOFD\n");
			close(fd);
		}
		return ours;
	}
	if (fd < 0) {
		say("SET_DEVICE_STATE_FD: neither NOFD nor an fd\n");
		close(ours);
		return -1;
	}
	close(ours);
	return fd;
}

/* Read @fd to EOF into a growing buffer, within the timeout */
static int pipe_read_all(int fd, uint8_t **buf, size_t *len)
{
	uint64_t end = now_ms() + timeout_ms;
	size_t cap = 1 << 16;

	*len = 0;
	*buf = malloc(cap);
	if (!*buf || fcntl(fd, F_SETFL, O_NONBLOCK))
		return -1;
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		ssize_t n;
		int left;

		if (*len == cap) {
			uint8_t *b = realloc(*buf, cap * 2);

			if (!b)
				return -1;
			*buf = b;
			cap *= 2;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (!n)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			perror("vu-front: state read");
			return -1;
		}
		left = (int)(end - now_ms());
		if (left <= 0) {
			say("state: no EOF after %zu bytes within %d ms\n",
			    *len, timeout_ms);
			return -1;
		}
		poll(&pfd, 1, left);
	}
}

/* Write all of @buf to @fd within the timeout */
static int pipe_write_all(int fd, const uint8_t *buf, size_t len)
{
	uint64_t end = now_ms() + timeout_ms;
	size_t done = 0;

	if (fcntl(fd, F_SETFL, O_NONBLOCK))
		return -1;
	while (done < len) {
		struct pollfd pfd = { fd, POLLOUT, 0 };
		ssize_t n = write(fd, buf + done, len - done);
		int left;

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			say("state write: %s after %zu of %zu bytes\n",
			    strerror(errno), done, len);
			return -1;
		}
		left = (int)(end - now_ms());
		if (left <= 0) {
			say("state write: %zu of %zu bytes within %d ms\n",
			    done, len, timeout_ms);
			return -1;
		}
		poll(&pfd, 1, left);
	}
	return 0;
}

/*
 * state_save() - SAVE from the (stopped) current daemon into @buf/@len,
 * then CHECK_DEVICE_STATE into @check. 0 if the exchange itself worked.
 */
static int state_save(uint8_t **buf, size_t *len, uint64_t *check)
{
	int p[2], fd, rc;

	*buf = NULL;
	*len = 0;
	*check = UINT64_MAX;
	if (pipe2(p, O_CLOEXEC))
		return -1;
	fd = state_fd(STATE_SAVE, p[0], p[1]);
	if (fd < 0)
		return -1;
	rc = pipe_read_all(fd, buf, len);
	close(fd);
	if (get_u64(CHECK_DEVICE_STATE, check)) {
		say("CHECK_DEVICE_STATE (SAVE): no reply\n");
		return -1;
	}
	return rc;
}

/* state_load() - LOAD @buf/@len into the current daemon, CHECK into @check */
static int state_load(const uint8_t *buf, size_t len, uint64_t *check)
{
	int p[2], fd, rc;

	*check = UINT64_MAX;
	if (pipe2(p, O_CLOEXEC))
		return -1;
	fd = state_fd(STATE_LOAD, p[1], p[0]);
	if (fd < 0)
		return -1;
	rc = pipe_write_all(fd, buf, len);
	close(fd);
	if (get_u64(CHECK_DEVICE_STATE, check)) {
		say("CHECK_DEVICE_STATE (LOAD): no reply\n");
		return -1;
	}
	return rc;
}

/* Read a whole file (for --state-load) */
static int file_read(const char *path, uint8_t **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0) {
		say("%s: %s\n", path, strerror(errno));
		return -1;
	}
	rc = pipe_read_all(fd, buf, len);
	close(fd);
	return rc;
}

/* --state-flags-or: OR the bits into each basic TCP flow record's flags.
 * Version 2's layout: the flow count at 58, the records (112 bytes each)
 * from 62, their flags at 86
 */
static void state_flags_edit(uint8_t *buf, size_t len)
{
	uint32_t n, i;

	if (len < 62)
		return;
	n = get_be32(buf + 58);
	for (i = 0; i < n && 62 + (size_t)(i + 1) * 112 <= len; i++)
		buf[62 + (size_t)i * 112 + 86] |= (uint8_t)state_flags_or;
	say("state: flags 0x%02lx added to %u flow record(s)\n",
	    state_flags_or, i);
}

/* Write the state to --state-save PATH ("%d" in it: migration number) */
static void state_record(const uint8_t *buf, size_t len)
{
	const char *pct = strstr(state_save_path, "%d");
	char path[4096];
	FILE *f;

	if (pct)
		snprintf(path, sizeof(path), "%.*s%u%s",
			 (int)(pct - state_save_path), state_save_path, mig_n,
			 pct + 2);
	else
		snprintf(path, sizeof(path), "%s", state_save_path);
	f = fopen(path, "we");
	if (!f || (len && fwrite(buf, len, 1, f) != 1) || fclose(f)) {
		say("%s: can't write the state\n", path);
		return;
	}
	vsay("state: %zu bytes recorded in %s\n", len, path);
}

/* Deliver the frames the daemon put on RX to the tap (and re-post) */
static void rx_drain(int tap)
{
	static uint8_t f[FRAME_MAX];
	int n;

	while ((n = rx_frame(f, sizeof(f))) > 0)
		tap_write(tap, f, (size_t)n);
}

/* The result line on stderr, and appended to --migrate-done FILE */
static void mig_report(const char *line)
{
	FILE *f;

	say("%s\n", line);
	if (!mig_done)
		return;
	f = fopen(mig_done, "ae");
	if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f))
		say("%s: can't write\n", mig_done);
}

/*
 * Run --migrate-exec CMD (sh -c, not waited for) as soon as the target
 * runs the guest, with MIG_N and MIG_TARGET in its environment: e.g. a
 * fabric switch timed from the end of the migration, not from a poll
 */
static void mig_hook(const char *to)
{
	char n[16];
	pid_t pid;

	if (!mig_exec)
		return;
	snprintf(n, sizeof(n), "%u", mig_n);
	pid = fork();
	if (pid < 0) {
		perror("vu-front: fork");
		return;
	}
	if (pid)
		return;
	setenv("MIG_N", n, 1);
	setenv("MIG_TARGET", to, 1);
	execl("/bin/sh", "sh", "-c", mig_exec, (char *)NULL);
	_exit(127);
}

/*
 * --migrate-notify FIFO: write @msg (read from --migrate-notify-msg FILE
 * at the trigger, default "migrated N") to FIFO as soon as the target
 * runs the guest, without blocking: e.g. route changes for an "ip -batch
 * FIFO" started beforehand, with no process to start at that moment
 */
static void mig_notify_write(const char *msg, size_t len)
{
	int fd;

	if (!mig_notify)
		return;
	fd = open(mig_notify, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENXIO)
		return;		/* nobody listens this time */
	if (fd < 0 || write(fd, msg, len) != (ssize_t)len)
		say("notify %s: %s\n", mig_notify, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * What QEMU checks when it loads the virtio-net device on a migration
 * target: every feature the guest negotiated (features_acked(), at boot)
 * that QEMU takes from the back-end must be in the target back-end's
 * offer @offer. -1 (with QEMU's message) if not
 */
static int features_check(uint64_t offer)
{
	uint64_t guest = features_acked() & F_QEMU_VU;

	if (!(guest & ~offer))
		return 0;
	say("migrate: target: Features 0x%llx unsupported. Allowed features: "
	    "0x%llx (the back-end lacks 0x%llx): Failed to load "
	    "virtio-net:virtio\n", (unsigned long long)guest,
	    (unsigned long long)(offer & F_QEMU_VU),
	    (unsigned long long)(guest & ~offer));
	return -1;
}

/*
 * migrate() - switch the guest over from the current daemon to the one
 * listening at @to (@mode MIG_GO), or (MIG_CANCEL) fail the migration after
 * the source saved its state and start the source's device again, as QEMU
 * does when a migration is cancelled, or (MIG_ABORT) fail it after the
 * target at @to loaded the state: its connection is closed before its
 * device starts (a target QEMU that fails and exits), and the source's
 * device starts again, or (MIG_RECONNECT) drop the source's connection
 * while it writes the state, connect again and start its device where it
 * was. The caller's loop is blocked meanwhile: no frame is relayed.
 * Reports one "migrate: result=..." line with the timings (ms since the
 * trigger). Returns 0 if the guest runs again, on the target or (after a
 * cancel, an abort, a reconnection or a failure) on the source; -1 if not.
 */
enum mig_mode { MIG_GO, MIG_CANCEL, MIG_ABORT, MIG_RECONNECT };

static int migrate(int tap, const char *to, enum mig_mode mode)
{
	bool cancel = mode == MIG_CANCEL || mode == MIG_RECONNECT;
	bool abort = mode == MIG_ABORT;
	uint64_t t0 = now_ms(), t_conn, t_stop, t_stopped = 0, t_saved = 0;
	uint64_t t_loaded = 0, t_started = 0, check = 0, lcheck = 0;
	uint8_t *state = NULL, *file = NULL;
	const uint8_t *load;
	size_t state_len = 0, file_len = 0, load_len;
	const char *stage = "none";
	struct conn src, dst;
	uint16_t base[2] = { 0, 0 };
	struct timespec t_wall = { 0, 0 };
	bool have_dst = false, resumed = false, csum_dst = false;
	uint64_t offer_dst = 0;
	char notify[1024];
	size_t notify_len;
	char line[512];
	unsigned i;

	mig_n++;
	say("migrate: #%u %s%s\n", mig_n, cancel ? "cancel after SAVE" : "to ",
	    cancel ? "" : to);
	notify_len = (size_t)snprintf(notify, sizeof(notify), "migrated %u\n",
				      mig_n);
	if (mig_notify_msg) {
		int fd = open(mig_notify_msg, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, notify, sizeof(notify));

		/* No file: the default message (the hook does the work) */
		if (n < 0 && errno != ENOENT)
			say("%s: %s\n", mig_notify_msg, strerror(errno));
		else
			notify_len = (size_t)n;
		if (fd >= 0)
			close(fd);
	}
	if (!cancel && state_load_path &&
	    file_read(state_load_path, &file, &file_len)) {
		stage = "state-file";
		goto out;
	}
	if (!mig_nolog && mig_log_start()) {
		stage = "log";
		goto out;
	}
	if (!cancel) {
		/* The guest keeps what it negotiated at boot: the target's
		 * offer is only checked against it (features_check())
		 */
		uint64_t off = offloads, offer_src = dev_offer;
		bool ev = evidx, csum = dev_csum;

		/* The target's QEMU is up and connected before switch-over */
		conn_save(&src);
		if (sock_connect(to) || dev_handshake()) {
			sock_close();
			conn_load(&src);
			offloads = off;
			evidx = ev;
			dev_csum = csum;
			dev_offer = offer_src;
			stage = "connect";
			goto out;
		}
		offer_dst = dev_offer;
		csum_dst = dev_csum;
		offloads = off;
		evidx = ev;
		dev_csum = csum;
		dev_offer = offer_src;
		conn_save(&dst);
		conn_load(&src);
		have_dst = true;
	}
	t_conn = now_ms();

	/* Switch-over: the VM stops */
	t_stop = now_ms();
	rx_drain(tap);
	if (!mig_nodisable &&
	    (send_state(SET_VRING_ENABLE, 0, 0) ||
	     send_state(SET_VRING_ENABLE, 1, 0))) {
		stage = "disable";
		goto resume;
	}
	for (i = 0; i < 2; i++) {
		uint32_t s[2] = { i, 0 };
		uint64_t v;

		if (msg_send(GET_VRING_BASE, 0, s, 8) ||
		    reply_u64(GET_VRING_BASE, &v)) {
			stage = "get-vring-base";
			goto resume;
		}
		memcpy(s, &v, 8);
		if (s[0] != i) {
			say("GET_VRING_BASE %u: reply for ring %u\n", i, s[0]);
			stage = "get-vring-base";
			goto resume;
		}
		base[i] = (uint16_t)s[1];
	}
	/* A stopped ring goes to the target as it is: the daemon must leave
	 * kicks asked for on TX (it may have had them off while it polled),
	 * or a target that doesn't write the flags never hears from us
	 */
	if (!evidx && (get16(tx.used) & 1)) {
		say("migration: the source left NO_NOTIFY on the TX ring\n");
		stage = "tx-kicks";
		goto resume;
	}
	t_stopped = now_ms();
	mig_phase("stopped");
	if (mode == MIG_RECONNECT) {
		int p[2], fd = -1;

		/* The front-end goes away with the transfer under way */
		if (!pipe2(p, O_CLOEXEC))
			fd = state_fd(STATE_SAVE, p[0], p[1]);
		sock_close();
		if (fd >= 0)
			close(fd);
		stage = "reconnect";
		if (sock_connect(cur_path) || dev_handshake())
			goto out;
		goto resume;
	}
	if (state_save(&state, &state_len, &check) || check) {
		if (state_save_path && state)
			state_record(state, state_len);
		stage = "save";
		goto resume;
	}
	t_saved = now_ms();
	if (state_save_path)
		state_record(state, state_len);
	if (state_flags_or)
		state_flags_edit(state, state_len);
	mig_phase("saved");
	if (cancel) {
		stage = "cancel";
		goto resume;
	}

	conn_save(&src);
	conn_load(&dst);
	have_dst = false;
	load = file ? file : state;
	load_len = file ? file_len : state_len;
	if (state_load(load, load_len, &lcheck) || lcheck) {
		sock_close();
		conn_load(&src);
		stage = "load";
		goto resume;
	}
	/* QEMU loads the back-end's state with the device, then checks the
	 * features, and fails the load: the target's QEMU quits
	 */
	if (features_check(offer_dst)) {
		sock_close();
		conn_load(&src);
		stage = "features";
		goto resume;
	}
	dev_offer = offer_dst;
	dev_csum = csum_dst;
	t_loaded = now_ms();
	mig_phase("loaded");
	if (abort) {
		/* The target QEMU fails and exits: its device never ran */
		sock_close();
		conn_load(&src);
		stage = "abort";
		goto resume;
	}
	if (dev_start(0, false, base)) {
		/* The target took the state: no way back */
		stage = "start";
		goto out;
	}
	t_started = now_ms();
	if (mig_rarp) {
		rarp_left = 5;
		rarp_next = now_ns() + 50 * 1000000LL;
	}
	cur_path = to;
	mig_notify_write(notify, notify_len);
	clock_gettime(CLOCK_REALTIME, &t_wall);
	mig_hook(to);
	if (old_src.sock >= 0)
		conn_close(&old_src);
	if (mig_close_src)
		conn_close(&src);
	else
		old_src = src;
	stage = NULL;
	goto out;

resume:
	/* The source runs the guest again: device start, logging off */
	if (have_dst) {
		conn_close(&dst);
		have_dst = false;
	}
	if (dev_start(0, false, base)) {
		say("migrate: the source's device doesn't start again\n");
	} else {
		resumed = true;
		t_started = now_ms();
	}

out:
	if (have_dst)
		conn_close(&dst);
	snprintf(line, sizeof(line),
		 "migrate: result=%s n=%u stage=%s state_bytes=%zu "
		 "save_check=%llu load_check=%llu base_rx=%u base_tx=%u "
		 "stop_ms=%llu save_ms=%llu load_ms=%llu start_ms=%llu "
		 "downtime_ms=%llu total_ms=%llu at_ms=%llu",
		 !stage ? "ok" :
		 !strcmp(stage, "cancel") && resumed ? "cancelled" :
		 !strcmp(stage, "abort") && resumed ? "aborted" :
		 !strcmp(stage, "reconnect") && resumed ? "reconnected" :
		 resumed ? "failed-resumed" : "failed",
		 mig_n, stage ? stage : "done", state_len,
		 (unsigned long long)check, (unsigned long long)lcheck,
		 base[0], base[1],
		 (unsigned long long)(t_stopped ? t_stopped - t_stop : 0),
		 (unsigned long long)(t_saved ? t_saved - t_stopped : 0),
		 (unsigned long long)(t_loaded ? t_loaded - t_saved : 0),
		 (unsigned long long)(t_started && t_loaded ?
				      t_started - t_loaded : 0),
		 (unsigned long long)(t_started ? t_started - t_stop : 0),
		 (unsigned long long)(now_ms() - t0),
		 (unsigned long long)t_wall.tv_sec * 1000 +
		 (unsigned long long)t_wall.tv_nsec / 1000000);
	(void)t_conn;
	mig_report(line);
	free(state);
	free(file);
	if (stage && strcmp(stage, "cancel") && strcmp(stage, "abort") &&
	    strcmp(stage, "reconnect"))
		mig_bad++;
	if (!stage || resumed)
		return 0;
	return -1;
}

/* Trigger FIFO: lines "migrate [SOCK]", "cancel", "abort SOCK", "reconnect" */
static int trig_fd = -1;

/* Next command from the trigger FIFO into @cmd; 1 if one, 0 if none */
static int trigger_next(char *cmd, size_t size)
{
	static char buf[512];
	static size_t len;
	char *nl;
	ssize_t n;

	if (trig_fd >= 0 && len < sizeof(buf) - 1) {
		n = read(trig_fd, buf + len, sizeof(buf) - 1 - len);
		if (n > 0)
			len += (size_t)n;
	}
	buf[len] = 0;
	nl = strchr(buf, '\n');
	if (!nl) {
		if (len == sizeof(buf) - 1)
			len = 0;	/* garbage: drop it */
		return 0;
	}
	*nl = 0;
	snprintf(cmd, size, "%s", buf);
	len -= (size_t)(nl + 1 - buf);
	memmove(buf, nl + 1, len);
	return 1;
}

/* Run one trigger command; -1 if the guest can't run any more */
static int trigger_run(int tap, char *cmd)
{
	char *arg;

	while (*cmd == ' ')
		cmd++;
	arg = strchr(cmd, ' ');
	if (arg) {
		*arg++ = 0;
		while (*arg == ' ')
			arg++;
		if (!*arg)
			arg = NULL;
	}
	if (!strcmp(cmd, "migrate")) {
		if (!arg && !mig_to && !mig_cancel) {
			say("migrate: no target (--migrate-to or "
			    "\"migrate SOCK\")\n");
			return 0;
		}
		return migrate(tap, arg ? arg : mig_to,
			       mig_cancel && !arg ? MIG_CANCEL : MIG_GO);
	}
	if (!strcmp(cmd, "cancel"))
		return migrate(tap, NULL, MIG_CANCEL);
	if (!strcmp(cmd, "reconnect"))
		return migrate(tap, NULL, MIG_RECONNECT);
	if (!strcmp(cmd, "abort")) {
		if (!arg) {
			say("abort: no target (\"abort SOCK\")\n");
			return 0;
		}
		return migrate(tap, arg, MIG_ABORT);
	}
	if (*cmd)
		say("trigger: unknown command \"%s\"\n", cmd);
	return 0;
}

static int case_bridge(void)
{
	static uint8_t f[14 + 65535], bframe[HDR + 14 + 65535];
	int tap = tap_open(), n, rc = 0;
	uint64_t frames_in = 0, frames_out = 0;
	char cmd[512];

	if (tap < 0)
		return -1;
	if (mig_trigger) {
		/* Read-write: no EOF when a writer closes, never blocks */
		trig_fd = open(mig_trigger, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (trig_fd < 0) {
			say("%s: %s\n", mig_trigger, strerror(errno));
			close(tap);
			return -1;
		}
	}
	say("bridge: connected, %s up%s\n", tap_name,
	    evidx ? ", EVENT_IDX" : "");
	while (!stop) {
		struct timespec wait = { 0, 100 * 1000000L };
		long long pace_wait = pace_next - now_ns();
		struct pollfd pfd[6] = { { tap, POLLIN, 0 },
					 { rx.call, POLLIN, 0 },
					 { sock, POLLIN, 0 },
					 { trig_fd, POLLIN, 0 },
					 { old_src.sock, POLLIN, 0 },
					 { -1, POLLIN, 0 } };
		/* Don't read the tap while TX slots are all in flight: wait
		 * for the daemon to use one (TX interrupt), not for the
		 * poll timeout
		 */
		if (!tx_room()) {
			tx_irq_asked += evidx;
			if (!used_event_arm(&tx, used_idx(&tx))) {
				pfd[0].fd = -1;
				pfd[5].fd = tx.call;
			}
		}
		/* -d: the tap waits until the next frame is due */
		if (pace_ns && pace_wait > 0) {
			pfd[0].fd = -1;
			wait.tv_sec = pace_wait / 1000000000LL;
			wait.tv_nsec = pace_wait % 1000000000LL;
		}
		if (rarp_left) {
			long long w = rarp_next - now_ns();

			w = w < 0 ? 0 : w;
			if (w < wait.tv_sec * 1000000000LL + wait.tv_nsec) {
				wait.tv_sec = w / 1000000000LL;
				wait.tv_nsec = w % 1000000000LL;
			}
		}
		if (ppoll(pfd, 6, &wait, NULL) < 0 && errno != EINTR)
			break;
		if (pfd[2].revents & (POLLIN | POLLHUP)) {
			say("bridge: daemon closed the connection\n");
			break;
		}
		if (pfd[4].revents & (POLLIN | POLLHUP)) {
			say("bridge: the migration source closed its "
			    "connection\n");
			conn_close(&old_src);
		}
		while (mig_sig || trigger_next(cmd, sizeof(cmd))) {
			if (mig_sig) {
				mig_sig = 0;
				snprintf(cmd, sizeof(cmd), "migrate");
			}
			if (trigger_run(tap, cmd)) {
				rc = -1;
				break;
			}
		}
		if (rc)
			break;
		if (rarp_left && now_ns() >= rarp_next) {
			uint64_t m = 0;

			memcpy(&m, mac_guest, 6);
			if (send_u64(SEND_RARP, m))
				say("bridge: SEND_RARP refused\n");
			rarp_left--;
			rarp_next += 100 * 1000000LL;
		}
		drain_eventfd(rx.call);
		drain_eventfd(tx.call);
		do {
			while ((n = rx_frame(f, sizeof(f))) > 0) {
				tap_write(tap, f, (size_t)n);
				frames_out++;
			}
		} while (!n && used_event_arm(&rx, rx.used_seen));
		if (n < 0) {
			rc = -1;
			break;
		}
		kick_wanted(&rx);
		while (tx_room() && (!pace_ns || now_ns() >= pace_next)) {
			/* The tap's header: with offloads, the guest
			 * kernel's checksum and GSO requests, passed on
			 */
			ssize_t r = read(tap, bframe, sizeof(bframe));

			if (r <= HDR)
				break;
			if (tx_frame_hdr(offloads ? bframe : NULL, bframe + HDR,
					 (size_t)r - HDR))
				break;
			frames_in++;
			if (pace_ns)
				pace_next = now_ns() + pace_ns;
		}
		kick_wanted(&tx);
	}
	say("bridge: %llu frames to the daemon, %llu from it\n",
	    (unsigned long long)frames_in, (unsigned long long)frames_out);
	if (evidx)
		say("bridge: TX interrupts asked for %llu times\n",
		    tx_irq_asked);
	if (mig_n)
		say("bridge: %u migrations, %u failed\n", mig_n, mig_bad);
	conn_close(&old_src);
	if (trig_fd >= 0)
		close(trig_fd);
	close(tap);
	return rc || mig_bad ? -1 : 0;
}

/* ---- malformed input ------------------------------------------------- */

static int case_bad_sizes(void)
{
	uint8_t buf[512] = { 0 };
	uint32_t n;

	if (expect_refused("SET_VRING_NUM, 4 bytes", SET_VRING_NUM, buf, 4,
			   NULL, 0) ||
	    expect_refused("SET_FEATURES, 4 bytes", SET_FEATURES, buf, 4,
			   NULL, 0) ||
	    expect_refused("SET_VRING_ADDR, 32 bytes", SET_VRING_ADDR, buf,
			   32, NULL, 0) ||
	    expect_refused("SET_VRING_BASE, 16 bytes", SET_VRING_BASE, buf,
			   16, NULL, 0))
		return -1;
	n = 9;
	memcpy(buf, &n, 4);
	if (expect_refused("SET_MEM_TABLE, 9 regions", SET_MEM_TABLE, buf,
			   8 + 32 * 8, NULL, 0))
		return -1;
	n = 1;
	memcpy(buf, &n, 4);
	if (expect_refused("SET_MEM_TABLE, 1 region, 72 bytes",
			   SET_MEM_TABLE, buf, 72, memfd, 1))
		return -1;
	/* Region of size 0, and one larger than its file */
	{
		uint64_t r[4] = { 0, 0, 0x10000, 0 };

		memcpy(buf + 8, r, 32);
		if (expect_refused("SET_MEM_TABLE, empty region",
				   SET_MEM_TABLE, buf, 40, memfd, 1))
			return -1;
		r[1] = VF_MEM_SIZE * 4;
		memcpy(buf + 8, r, 32);
		if (expect_refused("SET_MEM_TABLE, region beyond its file",
				   SET_MEM_TABLE, buf, 40, memfd, 1))
			return -1;
		r[1] = UINT64_MAX - 10;
		r[0] = 100;
		memcpy(buf + 8, r, 32);
		if (expect_refused("SET_MEM_TABLE, wrapping region",
				   SET_MEM_TABLE, buf, 40, memfd, 1))
			return -1;
	}
	{
		uint32_t s[2] = { 0, 1000 };
		uint64_t pf, pairs = 1;
		char what[64];

		if (expect_refused("SET_VRING_NUM 1000", SET_VRING_NUM, s, 8,
				   NULL, 0))
			return -1;
		/* The first ring past the queue pairs the daemon offers */
		if (get_u64(GET_PROTOCOL_FEATURES, &pf) ||
		    ((pf & PF_MQ) && get_u64(GET_QUEUE_NUM, &pairs)))
			return -1;
		if (!pairs || pairs > 0x8000) {
			say("GET_QUEUE_NUM: %llu queue pairs\n",
			    (unsigned long long)pairs);
			return -1;
		}
		s[0] = (uint32_t)(2 * pairs);
		s[1] = 256;
		snprintf(what, sizeof(what), "SET_VRING_NUM, ring %u", s[0]);
		if (expect_refused(what, SET_VRING_NUM, s, 8, NULL, 0))
			return -1;
		s[0] = 0;
		s[1] = 5;
		if (expect_refused("SET_VRING_ENABLE 5", SET_VRING_ENABLE, s,
				   8, NULL, 0))
			return -1;
	}
	{
		uint64_t f = F_PROTO;	/* no VERSION_1 */

		if (expect_refused("SET_FEATURES without VERSION_1",
				   SET_FEATURES, &f, 8, NULL, 0))
			return -1;
		f = F_V1 | (1ULL << 33);
		if (expect_refused("SET_FEATURES, not offered",
				   SET_FEATURES, &f, 8, NULL, 0))
			return -1;
	}
	return 0;
}

static int case_bad_fds(void)
{
	int fds[2] = { rx.kick, tx.kick };
	uint64_t v = 0;
	uint8_t mt[8 + 64];
	int len = mem_table_msg(mt);

	if (expect_refused("SET_VRING_KICK, 2 fds", SET_VRING_KICK, &v, 8,
			   fds, 2))
		return -1;
	v = 0x100;
	if (expect_refused("SET_VRING_CALL, NOFD with an fd", SET_VRING_CALL,
			   &v, 8, fds, 1))
		return -1;
	v = 1;
	if (expect_refused("SET_VRING_CALL, no fd without NOFD",
			   SET_VRING_CALL, &v, 8, NULL, 0))
		return -1;
	v = 0x205;
	if (expect_refused("SET_VRING_CALL, bad bits", SET_VRING_CALL, &v, 8,
			   fds, 1))
		return -1;
	if (expect_refused("SET_MEM_TABLE, no fds", SET_MEM_TABLE, mt,
			   (uint32_t)len, NULL, 0))
		return -1;
	/* A socket is not guest memory */
	if (expect_refused("SET_MEM_TABLE, fd is a socket", SET_MEM_TABLE, mt,
			   (uint32_t)len, &sock, 1))
		return -1;
	if (expect_refused("SET_VRING_NUM with an fd", SET_VRING_NUM, &v, 8,
			   fds, 1))
		return -1;
	return 0;
}

/* An eventfd in blocking mode, at its counter's limit: one more write of
 * 1 would block its writer
 */
static int eventfd_full(void)
{
	uint64_t v = 0xfffffffffffffffeULL;
	int fd = eventfd(0, EFD_CLOEXEC);

	if (fd >= 0 && write(fd, &v, 8) != 8) {
		close(fd);
		return -1;
	}
	return fd;
}

/* @fd (the file's flags are shared with the daemon) is now non-blocking */
static int expect_nonblocking(const char *what, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || !(fl & O_NONBLOCK)) {
		say("%s: the daemon left it blocking\n", what);
		return -1;
	}
	return 0;
}

/*
 * bad-ring-fds: kick, call, error and log fds that aren't eventfds are
 * refused; eventfds in blocking mode are made non-blocking, and one at its
 * counter's limit, as the interrupt fd, doesn't stall the daemon (it
 * writes to it at once, and for each frame to us)
 */
static int case_bad_ring_fds(void)
{
	int p[2], s[2], m, fd, r, rc = -1;
	uint64_t v = 0, st = 0;

	if (pipe2(p, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_STREAM, 0, s) ||
	    (m = memfd_create("vu-front-log", MFD_CLOEXEC)) < 0)
		return -1;
	if (expect_refused("SET_VRING_CALL, a pipe", SET_VRING_CALL, &v, 8,
			   &p[1], 1))
		goto out;
	v = 1;
	if (expect_refused("SET_VRING_KICK, a pipe", SET_VRING_KICK, &v, 8,
			   &p[0], 1) ||
	    expect_refused("SET_VRING_ERR, a socket", SET_VRING_ERR, &v, 8,
			   &s[0], 1) ||
	    expect_refused("SET_VRING_CALL, a file", SET_VRING_CALL, &v, 8,
			   &m, 1) ||
	    expect_refused("SET_LOG_FD, a file", SET_LOG_FD, NULL, 0, &m, 1))
		goto out;
	/* Refused: the rings go on with what they had */
	if (case_arp_probe())
		goto out;

	/* A full, blocking eventfd for RX interrupts, then frames to us */
	if ((fd = eventfd_full()) < 0)
		goto out;
	v = 0;
	if ((r = acked(SET_VRING_CALL, &v, 8, &fd, 1, &st)) || st) {
		/* No reply: it blocked writing to the fd at once */
		say("SET_VRING_CALL, a full blocking eventfd: %s\n",
		    r ? "no reply, the daemon stalled" : "refused");
		close(fd);
		goto out;
	}
	if (expect_nonblocking("SET_VRING_CALL", fd) || case_arp_probe() ||
	    case_arp_probe()) {
		close(fd);
		goto out;
	}
	close(fd);
	if (send_vring_fd(SET_VRING_CALL, 0, rx.call))
		goto out;

	/* A blocking eventfd as TX kick fd: we kick through it from now on */
	if ((fd = eventfd(0, EFD_CLOEXEC)) < 0)
		goto out;
	v = 1;
	if (acked(SET_VRING_KICK, &v, 8, &fd, 1, &st) || st) {
		say("SET_VRING_KICK, a blocking eventfd: refused\n");
		close(fd);
		goto out;
	}
	close(tx.kick);
	tx.kick = fd;
	if (expect_nonblocking("SET_VRING_KICK", fd) || case_arp_probe())
		goto out;
	if ((fd = eventfd(0, EFD_CLOEXEC)) < 0)
		goto out;
	if (acked(SET_VRING_ERR, &v, 8, &fd, 1, &st) || st ||
	    expect_nonblocking("SET_VRING_ERR", fd)) {
		close(fd);
		goto out;
	}
	close(fd);
	rc = 0;
out:
	close(p[0]);
	close(p[1]);
	close(s[0]);
	close(s[1]);
	close(m);
	return rc;
}

static int case_bad_ring_addr(void)
{
	struct addr_msg a;

	addr_fill(&a, &tx, 1, 0);
	a.desc = 0x10;
	if (expect_refused("SET_VRING_ADDR desc unmapped", SET_VRING_ADDR,
			   &a, sizeof(a), NULL, 0))
		return -1;
	addr_fill(&a, &tx, 1, 0);
	a.used = qva(0) + VF_MEM_SIZE / (two_regions ? 2 : 1) - 8;
	if (expect_refused("SET_VRING_ADDR used ring past the end",
			   SET_VRING_ADDR, &a, sizeof(a), NULL, 0))
		return -1;
	addr_fill(&a, &tx, 1, 0);
	a.avail = UINT64_MAX - 1;
	if (expect_refused("SET_VRING_ADDR avail wraps", SET_VRING_ADDR, &a,
			   sizeof(a), NULL, 0))
		return -1;
	addr_fill(&a, &tx, 1, 0);
	a.desc += 8;
	if (expect_refused("SET_VRING_ADDR desc misaligned", SET_VRING_ADDR,
			   &a, sizeof(a), NULL, 0))
		return -1;
	addr_fill(&a, &tx, 9, 0);
	if (expect_refused("SET_VRING_ADDR ring 9", SET_VRING_ADDR, &a,
			   sizeof(a), NULL, 0))
		return -1;
	/* The running ring must be untouched by all that */
	return 0;
}

static int case_out_of_order(void)
{
	struct addr_msg a;
	uint64_t pf = PF_REPLY_ACK, f;
	int fd = eventfd(0, EFD_CLOEXEC);

	if (sock_connect(sock_path) || get_u64(GET_FEATURES, &f) ||
	    msg_send(SET_PROTOCOL_FEATURES, 0, &pf, 8))
		return -1;
	reply_ack = true;
	if (expect_refused("SET_VRING_KICK before anything", SET_VRING_KICK,
			   &(uint64_t){ 1 }, 8, &fd, 1))
		return -1;
	addr_fill(&a, &tx, 1, 0);
	if (expect_refused("SET_VRING_ADDR before SET_VRING_NUM",
			   SET_VRING_ADDR, &a, sizeof(a), NULL, 0))
		return -1;
	if (send_state(SET_VRING_NUM, 1, VF_Q))
		return -1;
	if (expect_refused("SET_VRING_ADDR before SET_MEM_TABLE",
			   SET_VRING_ADDR, &a, sizeof(a), NULL, 0))
		return -1;
	if (expect_refused("SET_VRING_KICK before SET_VRING_ADDR",
			   SET_VRING_KICK, &(uint64_t){ 1 }, 8, &fd, 1))
		return -1;
	close(fd);
	sock_close();
	return 0;
}

static int case_unknown(void)
{
	uint64_t v = 0, f;

	if (expect_refused("request 77", 77, &v, 8, NULL, 0) ||
	    expect_refused("SET_CONFIG (25)", 25, &v, 8, NULL, 0))
		return -1;
	/* No reply wanted: must be ignored, and the connection goes on */
	if (msg_send(99, 0, NULL, 0) || get_u64(GET_FEATURES, &f))
		return -1;
	return 0;
}

static int case_oversize(void)
{
	uint8_t hdr[12];
	uint32_t req = SET_VRING_NUM, fl = 1, size = 65536;

	memcpy(hdr, &req, 4);
	memcpy(hdr + 4, &fl, 4);
	memcpy(hdr + 8, &size, 4);
	if (send(sock, hdr, 12, MSG_NOSIGNAL) != 12)
		return -1;
	return case_expect_close();
}

static int case_too_many_fds(void)
{
	int fds[10], i, rc;
	uint64_t v = 0;

	for (i = 0; i < 10; i++)
		fds[i] = rx.kick;
	if (msg_send_fds(SET_VRING_KICK, 0, &v, 8, fds, 10))
		return -1;
	rc = case_expect_close();
	return rc;
}

/* Offer TX head @h (descriptors already written) and wait for it back */
static int tx_expect_returned(const char *what, uint16_t h)
{
	uint64_t end = now_ms() + timeout_ms;
	uint16_t want = (uint16_t)(tx.avail_idx + 1);

	ring_offer(&tx, h);
	kick(&tx);
	while (used_idx(&tx) != want) {
		if (now_ms() > end) {
			say("%s: chain not returned\n", what);
			return -1;
		}
		usleep(1000);
	}
	{
		const uint8_t *u = tx.used + 4 + 8 * ((want - 1) % VF_Q);

		if (get32(u) != h || get32(u + 4)) {
			say("%s: used entry %u/%u\n", what, get32(u),
			    get32(u + 4));
			return -1;
		}
	}
	vsay("%s: returned\n", what);
	return 0;
}

static int case_loop_chain(void)
{
	/* Use descriptors beyond those the TX slots use */
	const unsigned b = 240;	/* above the split TX chains (128..223) */
	uint64_t buf = VF_TX_BASE + VF_TX_BUF;	/* slot 1 buffer */
	uint64_t tbl = VF_TX_HDRS + 0x4000;	/* indirect table */

	/* Wait for normal TX slots to be done, to keep indexes in sync */
	desc_set(&tx, b, buf, 100, D_NEXT, (uint16_t)b);
	if (tx_expect_returned("self loop", (uint16_t)b))
		return -1;
	desc_set(&tx, b, buf, 100, D_NEXT, (uint16_t)(b + 1));
	desc_set(&tx, b + 1, buf, 100, D_NEXT, (uint16_t)b);
	if (tx_expect_returned("2-cycle", (uint16_t)b))
		return -1;
	desc_set(&tx, b, buf, 0xfffffff0, D_NEXT, (uint16_t)(b + 1));
	desc_set(&tx, b + 1, buf, 0xfffffff0, 0, 0);
	if (tx_expect_returned("> 4 GiB chain", (uint16_t)b))
		return -1;
	desc_set(&tx, b, buf, 100, D_NEXT, 4000);
	if (tx_expect_returned("next out of range", (uint16_t)b))
		return -1;
	desc_set(&tx, b, VF_MEM_SIZE + 4096, 100, 0, 0);
	if (tx_expect_returned("buffer outside memory", (uint16_t)b))
		return -1;
	desc_set(&tx, b, VF_MEM_SIZE - 50, 100, 0, 0);
	if (tx_expect_returned("buffer past the end of memory", (uint16_t)b))
		return -1;
	desc_set(&tx, b, UINT64_MAX - 50, 100, 0, 0);
	if (tx_expect_returned("buffer address wraps", (uint16_t)b))
		return -1;
	desc_set(&tx, b, VF_MEM_SIZE * 2, 64, D_INDIRECT, 0);
	if (tx_expect_returned("indirect table out of range", (uint16_t)b))
		return -1;
	desc_set(&tx, b, tbl, 20, D_INDIRECT, 0);
	if (tx_expect_returned("indirect table of 20 bytes", (uint16_t)b))
		return -1;
	/* Indirect table whose entry loops, and one that nests */
	{
		struct ring t = { .desc = gp(tbl) };

		desc_set(&t, 0, buf, 100, D_NEXT, 0);
		desc_set(&tx, b, tbl, 32, D_INDIRECT, 0);
		if (tx_expect_returned("indirect self loop", (uint16_t)b))
			return -1;
		desc_set(&t, 0, tbl, 32, D_INDIRECT, 0);
		if (tx_expect_returned("nested indirect", (uint16_t)b))
			return -1;
		desc_set(&t, 0, buf, 100, D_NEXT, 7);
		if (tx_expect_returned("indirect next out of range",
				       (uint16_t)b))
			return -1;
	}
	desc_set(&tx, b, buf, 100, D_WRITE | D_NEXT, (uint16_t)(b + 1));
	desc_set(&tx, b + 1, buf, 100, 0, 0);
	if (tx_expect_returned("readable after writable", (uint16_t)b))
		return -1;
	/* Head out of range: not returned (no valid id), but skipped */
	ring_offer(&tx, 9999);
	kick(&tx);
	usleep(100000);
	return 0;
}

static int case_bad_avail_idx(void)
{
	put16(tx.avail + 2, (uint16_t)(tx.avail_idx + 1000));
	kick(&tx);
	usleep(100000);
	return 0;
}

static int case_rx_readonly(void)
{
	unsigned i;

	/* Make every posted RX buffer read-only, then ask for a reply */
	for (i = 0; i < VF_Q; i++)
		desc_set(&rx, i, VF_RX_BUFS + (uint64_t)i * VF_RX_BUF,
			 VF_RX_BUF, 0, 0);
	if (!case_arp_probe()) {
		say("rx-readonly: got a reply in read-only buffers\n");
		return -1;
	}
	return 0;
}

static int case_stop_kick(void)
{
	uint32_t s[2] = { 1, 0 };
	uint8_t hdr[12], f[64];
	uint32_t r, size;
	uint16_t before;

	/* Let earlier frames complete */
	usleep(50000);
	if (msg_send(GET_VRING_BASE, 0, s, 8) || read_full(hdr, 12))
		return -1;
	memcpy(&r, hdr, 4);
	memcpy(&size, hdr + 8, 4);
	if (r != GET_VRING_BASE || size != 8 || read_full(s, 8))
		return -1;
	if (s[0] != 1 || s[1] != tx.avail_idx) {
		say("GET_VRING_BASE: ring %u at %u, expected %u\n", s[0], s[1],
		    tx.avail_idx);
		return -1;
	}
	before = used_idx(&tx);
	arp_request(f);
	if (tx_frame(f, 42))
		return -1;
	kick(&tx);
	usleep(200000);
	if (used_idx(&tx) != before) {
		say("stop-kick: the daemon used a stopped ring\n");
		return -1;
	}
	return 0;
}

/* Dirty logging on, as QEMU's pre-copy turns it on: a log of one bit per
 * page of guest memory in a memfd (*@fd, mapped at *@log), LOG_ALL, and
 * the rings' used areas logged. Return: 0, -1 on failure
 */
static int log_on(int *fd, uint8_t **log)
{
	uint64_t log_size = VF_MEM_SIZE / 4096 / 8, st, m[2];
	struct addr_msg a;
	unsigned i;

	*fd = memfd_create("vu-log", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, (off_t)log_size))
		return -1;
	*log = mmap(NULL, log_size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd,
		    0);
	if (*log == MAP_FAILED)
		return -1;
	m[0] = log_size;
	m[1] = 0;
	if (msg_send_fds(SET_LOG_BASE, 0, m, 16, fd, 1) ||
	    reply_u64(SET_LOG_BASE, &st)) {
		say("log: SET_LOG_BASE not answered\n");
		return -1;
	}
	if (send_u64(SET_FEATURES, F_V1 | F_PROTO | F_MRG | F_LOG_ALL))
		return -1;
	for (i = 0; i < 2; i++) {
		addr_fill(&a, i ? &tx : &rx, i, 1);
		if (acked(SET_VRING_ADDR, &a, sizeof(a), NULL, 0, &st) || st)
			return -1;
	}
	return 0;
}

static int case_log(void)
{
	uint64_t log_size = VF_MEM_SIZE / 4096 / 8;
	unsigned i, dirty = 0;
	uint8_t *log;
	uint64_t pg;
	int fd;

	if (log_on(&fd, &log))
		return -1;
	close(fd);
	if (case_arp_probe())
		return -1;
	/* The used ring page of RX and at least one RX buffer page */
	pg = ring_used_gpa(&rx) / 4096;
	if (!(log[pg / 8] & (1 << (pg % 8)))) {
		say("log: RX used ring page not marked\n");
		return -1;
	}
	for (i = 0; i < VF_Q; i++) {
		pg = (VF_RX_BUFS + (uint64_t)i * VF_RX_BUF) / 4096;
		if (log[pg / 8] & (1 << (pg % 8)))
			dirty++;
	}
	if (!dirty) {
		say("log: no RX buffer page marked\n");
		return -1;
	}
	vsay("log: %u RX buffer pages marked\n", dirty);
	munmap(log, log_size);
	return 0;
}

/*
 * shrink-mem, shrink-log: the file behind guest memory (the first
 * region), or behind the dirty log, truncated to nothing under the
 * daemon, which then touches it (a kick, a frame to answer): it must
 * drop this front-end, not die of SIGBUS. The file gets its size back
 * afterwards, for the next connection.
 */
static int case_shrink(bool log_file)
{
	uint64_t full = VF_MEM_SIZE / (two_regions ? 2 : 1);
	uint8_t *log = NULL, f[64];
	int fd = -1, rc;

	if (log_file) {
		if (log_on(&fd, &log) || case_arp_probe())
			return -1;
		if (ftruncate(fd, 0))
			return -1;
		/* An ARP reply marks pages in the log that is gone */
		if (tx_frame(f, arp_request(f)))
			return -1;
		kick(&tx);
	} else {
		if (ftruncate(memfd[0], 0))
			return -1;
		kick(&tx);
		kick(&rx);
	}
	rc = case_expect_close();
	if (log_file) {
		munmap(log, VF_MEM_SIZE / 4096 / 8);
		close(fd);
	} else if (ftruncate(memfd[0], (off_t)full)) {
		return -1;
	}
	sock_close();
	if (rc)
		say("shrink-%s: the daemon kept the connection\n",
		    log_file ? "log" : "mem");
	return rc;
}

/* features: what the daemon offers, on stdout, as QEMU asks for it first
 * (GET_FEATURES, GET_PROTOCOL_FEATURES); nothing negotiated
 */
static int case_features(void)
{
	uint64_t f, pf;

	if (sock_connect(sock_path) || get_u64(GET_FEATURES, &f) ||
	    get_u64(GET_PROTOCOL_FEATURES, &pf))
		return -1;
	printf("features=0x%llx protocol_features=0x%llx\n",
	       (unsigned long long)f, (unsigned long long)pf);
	fflush(stdout);
	sock_close();
	return 0;
}

/* mig-probe: exit 3 (in dev_handshake) unless DEVICE_STATE is offered */
static int case_mig_probe(void)
{
	mig_wanted = true;
	if (sock_connect(sock_path) || dev_handshake())
		return -1;
	say("mig-probe: DEVICE_STATE offered\n");
	sock_close();
	return 0;
}

/*
 * state-load: a fresh connection, --state-load FILE into the daemon as a
 * migration target does (LOAD, CHECK_DEVICE_STATE), then a fresh device
 * start. Passes if CHECK_DEVICE_STATE is 0 (non-zero: --expect-load-fail)
 */
static int case_state_load(void)
{
	uint8_t *buf = NULL;
	size_t len;
	uint64_t check;
	int rc;

	if (!state_load_path) {
		say("state-load: no --state-load FILE\n");
		return -1;
	}
	mig_wanted = true;
	if (file_read(state_load_path, &buf, &len) ||
	    sock_connect(sock_path) || dev_handshake()) {
		free(buf);
		return -1;
	}
	rc = state_load(buf, len, &check);
	free(buf);
	say("state-load: %zu bytes, CHECK_DEVICE_STATE %llu\n", len,
	    (unsigned long long)check);
	if (rc)
		return -1;
	if (!check == expect_load_fail) {
		say("state-load: the daemon %s the state\n",
		    check ? "refused" : "accepted");
		return -1;
	}
	return dev_start(0, true, NULL);
}

/*
 * state-abandon: a fresh connection starts a LOAD, writes part of a
 * stream and goes away, as a target QEMU that dies mid-migration. The
 * daemon must let go of the pipe (our write end sees its reader close)
 * and accept a new transfer on the next connection, which a transfer
 * still in progress would refuse (EBUSY).
 */
static int case_state_abandon(void)
{
	static const uint8_t part[16] = { 'p', 'a', 's', 's', 't' };
	uint64_t end, check;
	int p[2], fd;

	mig_wanted = true;
	if (sock_connect(sock_path) || dev_handshake() ||
	    pipe2(p, O_CLOEXEC) || (fd = state_fd(STATE_LOAD, p[1], p[0])) < 0)
		return -1;
	if (write(fd, part, sizeof(part)) != (ssize_t)sizeof(part)) {
		say("state-abandon: writing to the state pipe: %s\n",
		    strerror(errno));
		close(fd);
		return -1;
	}
	sock_close();

	/* No events asked: POLLERR comes once the reader is closed */
	end = now_ms() + timeout_ms;
	for (;;) {
		struct pollfd pfd = { fd, 0, 0 };
		int left = (int)(end > now_ms() ? end - now_ms() : 0);

		if (poll(&pfd, 1, left) < 0 && errno != EINTR) {
			close(fd);
			return -1;
		}
		if (pfd.revents & POLLERR)
			break;		/* the daemon closed its end */
		if (now_ms() >= end) {
			say("state-abandon: the daemon still holds the state "
			    "pipe of a connection that is gone\n");
			close(fd);
			return -1;
		}
	}
	close(fd);
	say("state-abandon: state pipe closed by the daemon\n");

	if (sock_connect(sock_path) || dev_handshake() || pipe2(p, O_CLOEXEC))
		return -1;
	fd = state_fd(STATE_LOAD, p[1], p[0]);
	if (fd < 0) {
		say("state-abandon: the next transfer was refused\n");
		return -1;
	}
	close(fd);		/* an empty stream: refused at the CHECK */
	if (get_u64(CHECK_DEVICE_STATE, &check)) {
		say("CHECK_DEVICE_STATE (LOAD): no reply\n");
		return -1;
	}
	say("state-abandon: next transfer accepted, CHECK %llu\n",
	    (unsigned long long)check);
	sock_close();
	return 0;
}

/* ---- hostile guest driver -------------------------------------------- */

/*
 * The hostile case bridges tap0 like "bridge" does, so that the guest
 * kernel's TCP runs through the daemon, but lays the rings out as a broken
 * or malicious driver could: chains of 1 to 64 descriptors of any size
 * (0 included), in indirect tables (misaligned ones too), the same head
 * in several available entries, heads offered again before they came
 * back, descriptors rewritten after they were published, available
 * indexes that jump, a thread racing on the rings (descriptors, available
 * and used rings), interrupt suppression games, garbage TX chains, and
 * ring events on the control socket (disable/enable, new addresses, a new
 * memory table, stop and restart from any index, a fresh connection). The
 * daemon must survive every one of them; whether the guest's traffic does
 * is not our concern here, but most chains are sane, so that it flows.
 *
 * What we read back from the RX ring is what we posted, as we recorded
 * it: a chain that came back is delivered to the tap (a garbled frame is
 * the guest kernel's to drop) and its descriptors are free again; used
 * entries naming chains we don't hold (duplicates, stale entries) are
 * counted and skipped. A ring that stops moving, as the daemon ignores
 * it (broken), is mended with SET_VRING_ADDR, or if that doesn't do, a
 * fresh connection.
 *
 * Every choice comes from one pseudo-random generator seeded with
 * --hostile SEED: the seed picks the features (MRG_RXBUF, EVENT_IDX,
 * offloads), one or two memory regions, the tap's MTU (unless -m) and the
 * rates of each misbehaviour; the same seed makes the same choices,
 * though timing makes no two runs alike.
 */

#define HOS_IND_BASE	0x20000ULL	/* indirect tables, per ring and head */
#define HOS_IND_STRIDE	0x420ULL	/* 64 entries, and room to misalign */
#define HOS_RX_ARENA	VF_RX_BUFS	/* RX buffers */
#define HOS_RX_ARENA_LEN (14ULL << 20)
#define HOS_TX_ARENA	(VF_MEM_SIZE / 2 - (512ULL << 10))
#define HOS_TX_ARENA_LEN (VF_MEM_SIZE / 2)
#define HOS_STALL_MS	300	/* TX chains out this long: reconnect */
#define HOS_QUIET_MS	300	/* nothing on RX while the guest sends */

/* A chain we posted, as we laid it out */
struct hos_chain {
	bool live;			/* posted, not back yet */
	bool taint;			/* rewritten since: don't read it */
	uint8_t ndesc, np;
	uint16_t desc[HOS_MAX_PIECES];	/* descriptors it took */
	uint64_t gpa[HOS_MAX_PIECES];
	uint32_t len[HOS_MAX_PIECES];
};

/* Our side of one ring: free descriptors, chains, buffer arena */
struct hos_ring {
	struct ring *r;
	unsigned q;
	uint16_t freel[VF_Q];
	unsigned nfree;
	bool isfree[VF_Q];
	struct hos_chain ch[VF_Q];
	uint64_t arena, arena_len, bump;
	unsigned live;
	uint64_t last_used_ms;		/* when a chain last came back */
};

static struct hos_ring hrx, htx;
static uint64_t hos_rng;
/* A frame from the RX ring being put together (MRG_RXBUF) */
static uint8_t hos_f[FRAME_MAX + HDR], hos_hdr[HDR];
static size_t hos_flen;
static unsigned hos_want;		/* buffers it still takes */
static bool hos_bad;			/* it won't be delivered */
static unsigned hos_tx_since_rx;	/* frames sent since one came */
static int hos_tap = -1;
static struct {
	unsigned long long frames_in, frames_out, bogus, dropped, reconnects;
	unsigned long long dups, reuses, rewrites, indirect, misaligned;
	unsigned long long garbage, jumps, events, scribbles, mends;
} hst;

/* splitmix64 */
static uint64_t hos_rand(void)
{
	uint64_t z = (hos_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned hos_below(unsigned n)
{
	return n ? (unsigned)(hos_rand() % n) : 0;
}

static bool hos_chance(unsigned per_mille)
{
	return hos_below(1000) < per_mille;
}

/* For what breaks a whole ring (RX): per ten thousand chains */
static bool hos_chance_10k(unsigned n)
{
	return hos_below(10000) < n;
}

/*
 * --rx-chain SPEC: sizes of the descriptors of every RX chain, comma
 * separated, each optionally xCOUNT: "66,24x63" is 66 bytes, then 63
 * descriptors of 24 bytes. Return: 0, -1 if malformed
 */
static int hos_parse_chain(const char *spec)
{
	const char *p = spec;

	hos.rx_fixed_n = 0;
	while (*p) {
		char *end;
		unsigned long sz = strtoul(p, &end, 10), cnt = 1;

		if (end == p)
			return -1;
		if (*end == 'x') {
			p = end + 1;
			cnt = strtoul(p, &end, 10);
			if (end == p || !cnt)
				return -1;
		}
		while (cnt--) {
			if (hos.rx_fixed_n == HOS_MAX_PIECES || sz > 65536)
				return -1;
			hos.rx_fixed[hos.rx_fixed_n++] = (unsigned)sz;
		}
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return hos.rx_fixed_n ? 0 : -1;
}

/* Choose everything from the seed (before memory is set up) */
static void hos_profile(void)
{
	static const int mtus[] = { 1500, 4000, 9000, 65520 };
	unsigned aggr;

	hos_rng = hos.seed;
	hos.mrg = hos_chance(500);
	hos.evidx = hos_chance(500);
	hos.offload = hos_chance(500);
	two_regions = two_regions || hos_chance(300);
	if (!mtu_given)
		mtu = mtus[hos_below(4)];
	/* Most seeds misbehave mildly, so that TCP still moves data (each
	 * lost frame costs it a retransmission), some wildly
	 */
	aggr = hos_chance(700) ? 1 + hos_below(40) : 5 + hos_below(250);
	hos.p_indirect = hos_below(400);
	hos.p_misalign = hos_below(500);
	hos.p_dup = hos_below(aggr);
	hos.p_reuse = hos_below(aggr);
	hos.p_rewrite = hos_below(aggr / 2);
	hos.p_zero = hos_below(300);
	hos.p_tiny = hos_below(aggr);
	hos.p_alias = hos_below(aggr / 2);
	hos.p_bad = hos_below(15);
	hos.p_garbage = hos_below(aggr / 4);
	hos.p_nokick = hos_below(200);
	hos.p_weird = hos_below(700);
	hos.p_irq = hos_below(aggr);
	hos.max_descs = hos_chance(400) ? HOS_MAX_PIECES
					: 1 + hos_below(HOS_MAX_PIECES);
	hos.chaos_ms = hos_chance(700) ? 50 + hos_below(1000) : 0;
	hos.scribble_us = hos_chance(300) ? 20 + hos_below(2000) : 0;

	if (hos.fixed) {
		/* The switches say it all: a plain driver otherwise */
		hos.mrg = !hos.no_mrg;
		hos.evidx = hos.offload = false;
		hos.p_indirect = hos.p_misalign = hos.p_dup = hos.p_reuse = 0;
		hos.p_rewrite = hos.p_zero = hos.p_tiny = hos.p_alias = 0;
		hos.p_bad = hos.p_garbage = hos.p_nokick = hos.p_weird = 0;
		hos.p_irq = hos.chaos_ms = hos.scribble_us = 0;
		hos.max_descs = 1;
	}
	if (hos.no_mrg)
		hos.mrg = false;
	features_drop = hos.mrg ? 0 : F_MRG;
	offload = hos.offload;
	want_evidx = hos.evidx;
	hos_rng = hos.seed ^ 0x686f7374696c65ULL;	/* the run's own */
}

/* Copy out of guest memory; bytes outside it read as 0 */
static void hos_gread(uint64_t gpa, void *buf, size_t len)
{
	uint64_t half = VF_MEM_SIZE / 2;
	uint8_t *b = buf;

	memset(buf, 0, len);
	if (gpa >= VF_MEM_SIZE)
		return;
	if (len > VF_MEM_SIZE - gpa)
		len = VF_MEM_SIZE - gpa;
	if (two_regions && gpa < half && gpa + len > half) {
		size_t n = half - gpa;

		memcpy(b, gp(gpa), n);
		memcpy(b + n, gp(half), len - n);
		return;
	}
	memcpy(b, gp(gpa), len);
}

/* Write into guest memory, as far as it goes */
static void hos_gwrite(uint64_t gpa, const void *p, size_t len)
{
	if (gpa >= VF_MEM_SIZE)
		return;
	if (len > VF_MEM_SIZE - gpa)
		len = VF_MEM_SIZE - gpa;
	gwrite(gpa, p, len);
}

static void hos_ring_reset(struct hos_ring *hr, struct ring *r, unsigned q,
			   uint64_t arena, uint64_t arena_len)
{
	unsigned i;

	hr->r = r;
	hr->q = q;
	hr->nfree = 0;
	for (i = VF_Q; i-- > 0;) {
		hr->freel[hr->nfree++] = (uint16_t)i;
		hr->isfree[i] = true;
		hr->ch[i].live = false;
	}
	hr->arena = arena;
	hr->arena_len = arena_len;
	hr->bump = 0;
	hr->live = 0;
	hr->last_used_ms = now_ms();
}

static int hos_desc_take(struct hos_ring *hr)
{
	uint16_t d;

	if (!hr->nfree)
		return -1;
	/* Any free one, not always the last freed */
	if (hos_chance(300)) {
		unsigned k = hos_below(hr->nfree);

		d = hr->freel[k];
		hr->freel[k] = hr->freel[hr->nfree - 1];
	} else {
		d = hr->freel[hr->nfree - 1];
	}
	hr->nfree--;
	hr->isfree[d] = false;
	return d;
}

static void hos_desc_put(struct hos_ring *hr, uint16_t d)
{
	if (d >= VF_Q || hr->isfree[d])
		return;
	hr->isfree[d] = true;
	hr->freel[hr->nfree++] = d;
}

static void hos_chain_free(struct hos_ring *hr, uint16_t h)
{
	struct hos_chain *c = &hr->ch[h];
	unsigned i;

	if (!c->live)
		return;
	for (i = 0; i < c->ndesc; i++)
		hos_desc_put(hr, c->desc[i]);
	c->live = false;
	hr->live--;
}

/* Buffer space from the ring's arena, wrapping around (what is still out
 * then gets written over: one more way to be hostile)
 */
static uint64_t hos_alloc(struct hos_ring *hr, uint64_t len)
{
	uint64_t at;

	if (hos_chance(hos.p_alias))
		return hr->arena + hos_below((unsigned)hr->arena_len - 65536);
	if (hr->bump + len + 8 > hr->arena_len)
		hr->bump = 0;
	at = hr->arena + hr->bump;
	if (hos_chance(100))
		at += hos_below(8);		/* odd addresses */
	hr->bump = at - hr->arena + len;
	return at;
}

/* Where an indirect table for head @h goes, @mis bytes off alignment */
static uint64_t hos_ind_gpa(const struct hos_ring *hr, unsigned h,
			    unsigned mis)
{
	return HOS_IND_BASE + (hr->q * VF_Q + h) * HOS_IND_STRIDE + mis;
}

/*
 * Lay out a chain of @np pieces with descriptor @flags (each also gets
 * NEXT but the last), directly or through an indirect table, and record
 * it. Return: its head, -1 if descriptors ran out (nothing posted)
 */
static int hos_post(struct hos_ring *hr, unsigned np, const uint64_t *gpa,
		    const uint32_t *len, uint16_t flags)
{
	bool ind = np && hos_chance(hos.p_indirect);
	uint16_t d[HOS_MAX_PIECES];
	struct hos_chain *c;
	unsigned i, nd = ind ? 1 : np;
	int t;

	if (!np || np > HOS_MAX_PIECES || hr->nfree < nd)
		return -1;
	for (i = 0; i < nd; i++) {
		t = hos_desc_take(hr);
		d[i] = (uint16_t)t;
	}
	if (ind) {
		unsigned mis = 0;
		struct ring tbl;
		uint64_t tg;

		/* RX ignores the whole ring for a bad chain: seldom there */
		if (hr->q ? hos_chance(hos.p_misalign)
			  : hos_chance_10k(hos.p_misalign / 10)) {
			mis = hos_chance(300) ? 8 : 1 + hos_below(15);
			hst.misaligned += mis % 8 != 0;
		}
		tg = hos_ind_gpa(hr, d[0], mis);
		tbl.desc = gp(tg);
		for (i = 0; i < np; i++)
			desc_set(&tbl, i, gpa[i], len[i],
				 flags | (i + 1 < np ? D_NEXT : 0),
				 (uint16_t)(i + 1 < np ? i + 1 : 0));
		desc_set(hr->r, d[0], tg, 16 * np, D_INDIRECT, 0);
		hst.indirect++;
	} else {
		for (i = 0; i < np; i++)
			desc_set(hr->r, d[i], gpa[i], len[i],
				 flags | (i + 1 < np ? D_NEXT : 0),
				 i + 1 < np ? d[i + 1] : 0);
	}
	c = &hr->ch[d[0]];
	c->live = true;
	c->taint = false;
	c->ndesc = (uint8_t)nd;
	c->np = (uint8_t)np;
	memcpy(c->desc, d, nd * sizeof(d[0]));
	memcpy(c->gpa, gpa, np * sizeof(gpa[0]));
	memcpy(c->len, len, np * sizeof(len[0]));
	hr->live++;
	return d[0];
}

/* Offer head @h, and maybe again in more entries (duplicates) */
static void hos_offer(struct hos_ring *hr, uint16_t h)
{
	struct ring *r = hr->r;

	ring_offer(r, h);
	if (hos_chance(hos.p_dup)) {
		unsigned n = 1 + hos_below(8);

		while (n-- && (uint16_t)(r->avail_idx - r->used_seen) < VF_Q) {
			ring_offer(r, h);
			hst.dups++;
		}
	}
}

/* A live chain offered again before it came back, perhaps laid out anew
 * in the same descriptors; or one descriptor of it rewritten, unoffered
 */
static void hos_meddle(struct hos_ring *hr)
{
	unsigned h = hos_below(VF_Q), i;
	struct hos_chain *c = &hr->ch[h];

	if (!c->live || !c->ndesc)
		return;
	if (hos_chance(hos.p_reuse) &&
	    (uint16_t)(hr->r->avail_idx - hr->r->used_seen) < VF_Q) {
		ring_offer(hr->r, (uint16_t)h);
		hst.reuses++;
	}
	if (hos_chance(hos.p_rewrite)) {
		uint16_t d = c->desc[hos_below(c->ndesc)];
		uint64_t a = hos_chance(500) ? hr->arena + hos_below(1 << 20)
					     : hos_rand();
		uint32_t l = hos_chance(500) ? hos_below(70000)
					     : (uint32_t)hos_rand();

		for (i = 0; i < 1 + hos_below(3); i++) {
			switch (hos_below(4)) {
			case 0:
				desc_set(hr->r, d, a, l,
					 (uint16_t)hos_below(8),
					 (uint16_t)hos_below(VF_Q * 2));
				break;
			case 1:
				put16(hr->r->desc + 16 * d + 12,
				      (uint16_t)hos_below(8));
				break;
			case 2:
				put16(hr->r->desc + 16 * d + 14,
				      (uint16_t)hos_below(VF_Q + 4));
				break;
			default:
				memcpy(hr->r->desc + 16 * d + 8, &l, 4);
			}
		}
		c->taint = true;
		hst.rewrites++;
	}
}

/* Sizes of an RX chain's pieces; Return: how many */
static unsigned hos_rx_shape(uint32_t *len)
{
	unsigned np, i;

	if (hos.rx_fixed_n) {
		memcpy(len, hos.rx_fixed, hos.rx_fixed_n * sizeof(len[0]));
		return hos.rx_fixed_n;
	}
	if (!hos_chance(hos.p_weird)) {
		/* What a Linux guest posts: one buffer (MRG_RXBUF, small
		 * frames), or header and pages (big packets)
		 */
		uint32_t whole = (uint32_t)mtu + 14 + HDR;

		if (hos.mrg) {
			len[0] = hos_chance(500) ? 1536 + hos_below(2560)
						 : 4096;
			return 1;
		}
		if (!hos.offload && whole <= 4096) {
			len[0] = whole + hos_below(512);
			return 1;
		}
		np = 1 + (65562 + 4095) / 4096;
		len[0] = HDR;
		for (i = 1; i < np; i++)
			len[i] = 4096;
		return np > hos.max_descs ? hos.max_descs : np;
	}
	np = 1 + hos_below(hos.max_descs);
	for (i = 0; i < np; i++) {
		if (hos_chance(hos.p_zero))
			len[i] = 0;
		else if (hos_chance(300))
			len[i] = 1 + hos_below(64);
		else if (hos_chance(700))
			len[i] = 65 + hos_below(2048);
		else
			len[i] = 2049 + hos_below(14336);
	}
	if (hos_chance(hos.p_tiny))
		len[0] = hos_below(80);
	/* Nothing writable at all breaks the ring: only as often as the
	 * other bad chains
	 */
	for (i = 0; i < np && !len[i]; i++)
		;
	if (i == np && !hos_chance_10k(hos.p_bad))
		len[np - 1] = 1 + hos_below(4096);
	return np;
}

/* Post one RX chain; Return: 0, -1 if out of descriptors */
static int hos_rx_post_one(void)
{
	uint64_t gpa[HOS_MAX_PIECES];
	uint32_t len[HOS_MAX_PIECES];
	uint16_t flags = D_WRITE;
	unsigned np = hos_rx_shape(len), i;
	bool contig = hos.rx_fixed_n || hos_chance(600);
	uint64_t total = 0, at = 0;
	int h;

	for (i = 0; i < np; i++)
		total += len[i];
	if (contig)
		at = hos_alloc(&hrx, total);
	for (i = 0; i < np; i++) {
		gpa[i] = contig ? at : hos_alloc(&hrx, len[i]);
		at += len[i];
	}
	if (hos_chance_10k(hos.p_bad)) {
		/* Out of memory, or read-only: the daemon drops the ring */
		i = hos_below(np);
		if (hos_chance(500))
			gpa[i] = VF_MEM_SIZE - hos_below(64);
		else
			flags = 0;
	}
	h = hos_post(&hrx, np, gpa, len, flags);
	if (h < 0)
		return -1;
	hos_offer(&hrx, (uint16_t)h);
	return 0;
}

/* Fill the RX ring up: as many chains as it takes */
static void hos_rx_fill(void)
{
	while ((uint16_t)(rx.avail_idx - rx.used_seen) < VF_Q) {
		if (hos.same_head)
			ring_offer(&rx, 0);
		else if (hos_rx_post_one())
			break;
	}
}

/* A fresh device (dev_start()): forget the old rings, post RX buffers */
static void hos_start(void)
{
	hos_ring_reset(&hrx, &rx, 0, HOS_RX_ARENA, HOS_RX_ARENA_LEN);
	hos_ring_reset(&htx, &tx, 1, HOS_TX_ARENA, HOS_TX_ARENA_LEN);
	hos_want = 0;
	if (hos.same_head) {
		/* One chain, at head 0, in every available entry */
		uint64_t gpa[HOS_MAX_PIECES], at;
		uint32_t len[HOS_MAX_PIECES];
		unsigned np = hos_rx_shape(len), i, k;

		at = hos_alloc(&hrx, 65536);
		for (i = 0; i < np; i++) {
			gpa[i] = at;
			at += len[i];
		}
		/* Descriptors 0 to np - 1, in order */
		hrx.nfree = 0;
		for (k = VF_Q; k-- > np;)
			hrx.freel[hrx.nfree++] = (uint16_t)k;
		for (k = 0; k < np; k++)
			hrx.isfree[k] = false;
		for (i = 0; i < np; i++)
			desc_set(&rx, i, gpa[i], len[i],
				 D_WRITE | (i + 1 < np ? D_NEXT : 0),
				 (uint16_t)(i + 1 < np ? i + 1 : 0));
		hrx.ch[0].live = true;
		hrx.ch[0].taint = false;
		hrx.ch[0].ndesc = hrx.ch[0].np = (uint8_t)np;
		for (i = 0; i < np; i++) {
			hrx.ch[0].desc[i] = (uint16_t)i;
			hrx.ch[0].gpa[i] = gpa[i];
			hrx.ch[0].len[i] = len[i];
		}
		hrx.live = 1;
	}
	hos_rx_fill();
}

/* Read @len bytes from @off in chain @c, as we laid it out */
static size_t hos_chain_read(const struct hos_chain *c, size_t off,
			     uint8_t *buf, size_t len)
{
	size_t done = 0;
	unsigned i;

	for (i = 0; i < c->np && done < len; i++) {
		size_t n;

		if (off >= c->len[i]) {
			off -= c->len[i];
			continue;
		}
		n = c->len[i] - off;
		if (n > len - done)
			n = len - done;
		hos_gread(c->gpa[i] + off, buf + done, n);
		done += n;
		off = 0;
	}
	return done;
}

/* Frames from the RX ring to the tap; chains back to the free list */
static void hos_rx_reap(void)
{
	uint16_t idx = used_idx(&rx), n = (uint16_t)(idx - rx.used_seen);

	if (n > VF_Q) {
		/* Somebody wrote used->idx (the racing thread): skip */
		rx.used_seen = idx;
		hos_want = 0;
		hst.bogus++;
		return;
	}
	while (n--) {
		const uint8_t *u = rx.used + 4 + 8 * (rx.used_seen % VF_Q);
		uint32_t id = get32(u), l = get32(u + 4), cap = 0;
		struct hos_chain *c;
		unsigned i;

		rx.used_seen++;
		hrx.last_used_ms = now_ms();
		hos_tx_since_rx = 0;
		if (id >= VF_Q || !hrx.ch[id].live) {
			hst.bogus++;
			hos_want = 0;
			continue;
		}
		c = &hrx.ch[id];
		for (i = 0; i < c->np; i++)
			cap += c->len[i];
		if (l > cap)
			l = cap;
		if (!hos_want) {
			/* A new frame: the header, then the frame */
			hos_chain_read(c, 0, hos_hdr, HDR);
			hos_want = hos.mrg ? get16(hos_hdr + 10) : 1;
			hos_bad = l < HDR + 14 || l - HDR > sizeof(hos_f) ||
				  !hos_want || hos_want > VF_Q;
			if (hos_bad)
				hos_want = 1;
			hos_flen = 0;
			if (!hos_bad)
				hos_flen = hos_chain_read(c, HDR, hos_f,
							  l - HDR);
		} else if (hos_flen + l <= sizeof(hos_f)) {
			hos_flen += hos_chain_read(c, 0, hos_f + hos_flen, l);
		} else {
			hos_bad = true;
		}
		hos_bad = hos_bad || c->taint;
		if (hos.same_head)
			ring_offer(&rx, 0);
		else
			hos_chain_free(&hrx, (uint16_t)id);
		if (--hos_want)
			continue;
		/* The tap takes what a virtio-net header may say */
		if (hos_bad || (hos_hdr[0] & ~3) ||
		    ((hos_hdr[1] & 0x7f) != 0 && (hos_hdr[1] & 0x7f) != 1 &&
		     (hos_hdr[1] & 0x7f) != 4)) {
			hst.dropped++;
			continue;
		}
		memcpy(rx_hdr, hos_hdr, sizeof(rx_hdr));
		rx_flags = hos_hdr[0];
		tap_write(hos_tap, hos_f, hos_flen);
		hst.frames_out++;
	}
}

/* TX chains that came back: descriptors free again */
static void hos_tx_reap(void)
{
	uint16_t idx = used_idx(&tx), n = (uint16_t)(idx - tx.used_seen);

	if (n > VF_Q) {
		tx.used_seen = idx;
		hst.bogus++;
		return;
	}
	while (n--) {
		const uint8_t *u = tx.used + 4 + 8 * (tx.used_seen % VF_Q);
		uint32_t id = get32(u);

		tx.used_seen++;
		htx.last_used_ms = now_ms();
		if (id >= VF_Q || !htx.ch[id].live) {
			hst.bogus++;
			continue;
		}
		hos_chain_free(&htx, (uint16_t)id);
	}
}

/* A TX chain that breaks the rules, instead of a frame */
static void hos_tx_garbage(void)
{
	uint64_t gpa[2] = { HOS_TX_ARENA, HOS_TX_ARENA + 100 };
	uint32_t len[2] = { 100, 100 };
	int h, d;

	switch (hos_below(8)) {
	case 0:		/* beyond guest memory */
		gpa[0] = VF_MEM_SIZE + hos_below(1 << 20);
		break;
	case 1:		/* more than 4 GiB */
		len[0] = len[1] = 0xfffffff0;
		break;
	case 2:		/* address wraps */
		gpa[0] = UINT64_MAX - hos_below(100);
		break;
	default:
		break;
	}
	h = hos_post(&htx, 2, gpa, len, 0);
	if (h < 0)
		return;
	d = htx.ch[h].ndesc == 2 ? htx.ch[h].desc[1] : -1;
	switch (hos_below(8)) {
	case 3:		/* a loop */
		if (d >= 0)
			put16(tx.desc + 16 * d + 12, D_NEXT);
		if (d >= 0)
			put16(tx.desc + 16 * d + 14, (uint16_t)h);
		break;
	case 4:		/* next out of range */
		if (d >= 0)
			put16(tx.desc + 16 * d + 14,
			      (uint16_t)(VF_Q + hos_below(999)));
		if (d >= 0)
			put16(tx.desc + 16 * d + 12, D_NEXT);
		break;
	case 5:		/* writable, then readable */
		put16(tx.desc + 16 * h + 12, D_WRITE | D_NEXT);
		break;
	case 6:		/* an indirect table of odd length, or nested */
		desc_set(&tx, (unsigned)h, hos_ind_gpa(&htx, (unsigned)h, 0),
			 hos_chance(500) ? 20 + hos_below(100) : 16 * VF_Q,
			 D_INDIRECT, 0);
		{
			struct ring tbl = {
				.desc = gp(hos_ind_gpa(&htx, (unsigned)h, 0))
			};

			desc_set(&tbl, 0, hos_ind_gpa(&htx, (unsigned)h, 0),
				 32, D_INDIRECT, 0);
		}
		break;
	case 7:		/* indirect and NEXT */
		put16(tx.desc + 16 * h + 12, D_INDIRECT | D_NEXT);
		break;
	default:
		break;
	}
	htx.ch[h].taint = true;
	hos_offer(&htx, (uint16_t)h);
	hst.garbage++;
}

/* Put a frame from the tap (virtio-net header first) on TX, cut into
 * pieces at random points (empty pieces too), contiguous or scattered
 * Return: 0, -1 if out of descriptors
 */
static int hos_tx_frame(const uint8_t *hf, size_t total)
{
	uint64_t gpa[HOS_MAX_PIECES];
	uint32_t len[HOS_MAX_PIECES], cut[HOS_MAX_PIECES + 1];
	unsigned np, i, j;
	bool contig = hos_chance(600);
	uint64_t at = 0;
	int h;

	if (hos_chance(hos.p_garbage))
		hos_tx_garbage();
	np = hos.fixed || hos_chance(500) ? 1 + hos_below(2)
					  : 1 + hos_below(hos.max_descs);
	if (np > htx.nfree)
		np = htx.nfree;
	if (!np)
		return -1;
	/* Cut points: sorted, equal ones make empty pieces */
	cut[0] = 0;
	for (i = 1; i < np; i++) {
		uint32_t v = hos_chance(hos.p_zero) && i > 1 ?
			     cut[i - 1] :
			     (uint32_t)hos_below((unsigned)total + 1);

		for (j = i; j > 1 && cut[j - 1] > v; j--)
			cut[j] = cut[j - 1];
		cut[j] = v;
	}
	cut[np] = (uint32_t)total;
	if (contig)
		at = hos_alloc(&htx, total);
	for (i = 0; i < np; i++) {
		len[i] = cut[i + 1] - cut[i];
		gpa[i] = contig ? at + cut[i] : hos_alloc(&htx, len[i]);
		hos_gwrite(gpa[i], hf + cut[i], len[i]);
	}
	h = hos_post(&htx, np, gpa, len, 0);
	if (h < 0)
		return -1;
	hos_offer(&htx, (uint16_t)h);
	hos_tx_since_rx++;
	return 0;
}

/* Interrupt suppression games: used_event anywhere, NO_INTERRUPT on/off */
static void hos_irq_games(struct ring *r)
{
	if (!hos_chance(hos.p_irq))
		return;
	if (evidx)
		put16(r->avail + 4 + 2 * VF_Q, (uint16_t)hos_rand());
	else
		put16(r->avail, (uint16_t)(hos_rand() & 1));
}

/* Send a request with NEED_REPLY and take the answer, whatever it says */
static int hos_req(uint32_t req, const void *p, uint32_t size, int fd)
{
	uint64_t st;

	return acked(req, p, size, &fd, fd >= 0, &st);
}

/* GET_VRING_BASE on ring @q, then start it again from @base */
static int hos_restart(unsigned q, uint32_t base)
{
	struct ring *r = q ? &tx : &rx;
	uint32_t s[2] = { q, 0 };
	struct addr_msg a;
	uint8_t h[12];

	if (msg_send(GET_VRING_BASE, 0, s, 8) || read_full(h, 12) ||
	    read_full(s, 8))
		return -1;
	s[0] = q;
	s[1] = base;
	addr_fill(&a, r, q, 0);
	if (hos_req(SET_VRING_BASE, s, 8, -1) ||
	    hos_req(SET_VRING_ADDR, &a, sizeof(a), -1) ||
	    hos_req(SET_VRING_KICK, &(uint64_t){ q }, 8, r->kick) ||
	    hos_req(SET_VRING_CALL, &(uint64_t){ q }, 8, r->call))
		return -1;
	return 0;
}

/* One event on a ring, or on the connection; Return: -1 to reconnect */
static int hos_chaos(void)
{
	unsigned q = hos_below(2);
	struct ring *r = q ? &tx : &rx;
	uint32_t s[2] = { q, 0 };
	struct addr_msg a;
	uint8_t mt[8 + 32 * 2];

	hst.events++;
	switch (hos_below(16)) {
	case 10:
	case 11:	/* interrupt suppression flipped at once */
		put16(r->avail, (uint16_t)(get16(r->avail) ^ 1));
		put16(r->avail + 4 + 2 * VF_Q, (uint16_t)hos_rand());
		return 0;
	case 12:
	case 13:	/* a kick out of the blue */
		kick(r);
		return 0;
	case 14:	/* used->flags and avail_event: ours to scribble too */
		put16(r->used, (uint16_t)hos_rand());
		put16(r->used + 4 + 8 * VF_Q, (uint16_t)hos_rand());
		return 0;
	case 0:
	case 1:		/* avail->idx jumps ahead, over stale entries */
		r->avail_idx = (uint16_t)(r->avail_idx + 1 +
					  hos_below(VF_Q / 2));
		put16(r->avail + 2, r->avail_idx);
		kick(r);
		hst.jumps++;
		return 0;
	case 2:		/* ...or further than the ring is long */
		put16(r->avail + 2, (uint16_t)(r->avail_idx + VF_Q + 1 +
					       hos_below(30000)));
		kick(r);
		hst.jumps++;
		return 0;
	case 3:		/* disabled for a moment */
		return hos_req(SET_VRING_ENABLE, s, 8, -1) ||
		       hos_req(SET_VRING_ENABLE, (uint32_t[]){ q, 1 }, 8, -1);
	case 4:		/* the same addresses again */
		addr_fill(&a, r, q, 0);
		return hos_req(SET_VRING_ADDR, &a, sizeof(a), -1);
	case 5: {	/* the same memory again */
		uint64_t st;

		return acked(SET_MEM_TABLE, mt, (uint32_t)mem_table_msg(mt),
			     memfd, two_regions ? 2 : 1, &st);
	}
	case 6:		/* stopped, and started again where it was */
		return hos_restart(q, r->avail_idx);
	case 7:		/* ...or anywhere */
		return hos_restart(q, hos_below(65536));
	case 8: {	/* a blocking eventfd, full, as interrupt fd */
		int fd = eventfd(0, EFD_CLOEXEC);
		uint64_t v = 0xfffffffffffffffeULL;
		int rc;

		if (fd < 0 || write(fd, &v, 8) != 8) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
		rc = hos_req(SET_VRING_CALL, &(uint64_t){ q }, 8, fd);
		close(fd);
		/* Our own back a moment later */
		return rc || hos_req(SET_VRING_CALL, &(uint64_t){ q }, 8,
				     r->call);
	}
	default:	/* a fresh connection */
		return -1;
	}
}

/* A moment without us: the racing writer's target */
static volatile bool hos_scribble_stop;

/* The racing writer: random bytes in descriptors, available and used
 * rings of both queues, while the daemon reads them
 */
static void *hos_scribble(void *arg)
{
	uint64_t st = hos.seed * 31 + 7;
	uint8_t *rings[2] = { gp(VF_RX_RING), gp(VF_TX_RING) };

	(void)arg;
	while (!hos_scribble_stop) {
		struct timespec ts = { 0, (long)hos.scribble_us * 1000 };
		uint8_t *b;
		uint64_t z;
		uint16_t v;
		size_t off;

		st += 0x9e3779b97f4a7c15ULL;
		z = (st ^ (st >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z ^= z >> 27;
		b = rings[z & 1];
		v = (uint16_t)(z >> 16);
		switch ((z >> 1) & 3) {
		case 0:		/* a descriptor field */
			off = 16 * ((z >> 32) % VF_Q) + 2 * ((z >> 48) % 8);
			break;
		case 1:		/* an available entry, flags or used_event */
			off = 16 * VF_Q + 2 * ((z >> 32) % (VF_Q + 3));
			break;
		default:	/* the used ring, idx included */
			off = 0x4000 + 2 * ((z >> 32) % (2 + 4 * VF_Q));
			break;
		}
		__atomic_store_n((uint16_t *)(b + off), v, __ATOMIC_RELAXED);
		hst.scribbles++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void hos_report(void)
{
	say("hostile: seed %llu: %llu frames to the daemon, %llu from it, "
	    "%llu dropped; %llu reconnects, %llu mends, %llu events, %llu "
	    "jumps; "
	    "chains: %llu duplicated, %llu reused, %llu rewritten, %llu "
	    "indirect (%llu misaligned), %llu garbage; %llu bogus used "
	    "entries, %llu racing writes\n",
	    (unsigned long long)hos.seed, hst.frames_in, hst.frames_out,
	    hst.dropped, hst.reconnects, hst.mends, hst.events, hst.jumps,
	    hst.dups,
	    hst.reuses, hst.rewrites, hst.indirect, hst.misaligned,
	    hst.garbage, hst.bogus, hst.scribbles);
}

/* Both rings set up again where they are (SET_VRING_ADDR), with our own
 * avail->idx: what a ring the daemon ignores needs. Return: 0 if done
 */
static int hos_mend(void)
{
	unsigned q;

	hst.mends++;
	vsay("hostile: mending the rings\n");
	for (q = 0; q < 2; q++) {
		struct ring *r = q ? &tx : &rx;
		struct addr_msg a;

		put16(r->avail + 2, r->avail_idx);
		addr_fill(&a, r, q, 0);
		if (hos_req(SET_VRING_ADDR, &a, sizeof(a), -1))
			return -1;
		kick(r);
	}
	return 0;
}

/* The guest sends, and nothing comes back to it: the RX ring is ignored
 * (broken), most likely
 */
static bool hos_rx_quiet(uint64_t now)
{
	/* Eight: more than a guest sends unanswered on its own (router
	 * solicitations, multicast reports, duplicate address detection)
	 */
	return now > hrx.last_used_ms + HOS_QUIET_MS && hos_tx_since_rx >= 8;
}

/* TX chains out (or entries we can't account for: duplicates the daemon
 * skipped, jumps), and none came back for a while: the ring is ignored
 */
static bool hos_tx_stalled(uint64_t now)
{
	return (htx.live || (uint16_t)(tx.avail_idx - tx.used_seen) >=
			    VF_Q - 16) &&
	       now > htx.last_used_ms + HOS_STALL_MS;
}

/* Reconnect, as often as it takes, until the daemon is gone */
static int hos_reconnect(const char *why)
{
	hst.reconnects++;
	vsay("hostile: reconnecting: %s\n", why);
	sock_close();
	if (dev_connect(0)) {
		say("hostile: can't connect to the daemon any more\n");
		return -1;
	}
	return 0;
}

static int case_hostile(void)
{
	static uint8_t bframe[HDR + 14 + 65535];
	uint64_t next_chaos = 0, next_kick = 0, mended = 0, now;
	pthread_t scribbler;
	bool scribbling = false;
	int rc = 0;

	if (sock < 0 && dev_connect(0))
		return -1;
	hos_tap = tap_open();
	if (hos_tap < 0)
		return -1;
	if (hos.scribble_us &&
	    !pthread_create(&scribbler, NULL, hos_scribble, NULL))
		scribbling = true;
	say("hostile: connected, %s up, seed %llu: mrg %d evidx %d "
	    "offload %d regions %d mtu %d; per mille: indirect %u "
	    "misaligned %u dup %u reuse %u rewrite %u zero %u tiny %u "
	    "alias %u bad %u garbage %u nokick %u weird %u irq %u; "
	    "chains up to %u, events every ~%u ms, racing writes every %u "
	    "us\n", tap_name, (unsigned long long)hos.seed, hos.mrg, evidx,
	    !!offloads, two_regions ? 2 : 1, mtu, hos.p_indirect,
	    hos.p_misalign, hos.p_dup, hos.p_reuse, hos.p_rewrite,
	    hos.p_zero, hos.p_tiny, hos.p_alias, hos.p_bad, hos.p_garbage,
	    hos.p_nokick, hos.p_weird, hos.p_irq, hos.max_descs,
	    hos.chaos_ms, hos.scribble_us);

	while (!stop) {
		struct pollfd pfd[4] = { { hos_tap, POLLIN, 0 },
					 { rx.call, POLLIN, 0 },
					 { tx.call, POLLIN, 0 },
					 { sock, POLLIN, 0 } };
		bool posted = false;

		if (htx.nfree < 2)
			pfd[0].fd = -1;
		if (poll(pfd, 4, 2) < 0 && errno != EINTR)
			break;
		now = now_ms();
		if (pfd[3].revents & (POLLIN | POLLHUP)) {
			/* Replies are read where asked for: this is the end */
			if (hos_reconnect("the daemon closed the connection")) {
				rc = -1;
				break;
			}
			continue;
		}
		drain_eventfd(rx.call);
		drain_eventfd(tx.call);

		hos_rx_reap();
		hos_tx_reap();
		if (hos_chance(hos.p_reuse + hos.p_rewrite))
			hos_meddle(hos_chance(500) ? &hrx : &htx);
		hos_rx_fill();

		while (htx.nfree >= 2 &&
		       (uint16_t)(tx.avail_idx - tx.used_seen) < VF_Q - 16) {
			ssize_t n = read(hos_tap, bframe, sizeof(bframe));

			if (n <= HDR)
				break;
			if (!offloads)
				memset(bframe, 0, HDR);
			if (hos_tx_frame(bframe, (size_t)n))
				break;
			hst.frames_in++;
			posted = true;
		}
		hos_irq_games(&rx);
		hos_irq_games(&tx);

		/* Kicks as the driver wants them, or none; now and then
		 * regardless, so that a ring we fooled goes on
		 */
		if (!hos_chance(hos.p_nokick)) {
			kick_wanted(&rx);
			if (posted)
				kick_wanted(&tx);
		}
		if (now >= next_kick) {
			kick(&rx);
			kick(&tx);
			next_kick = now + 10;
		}

		/* A TX ring that stopped moving (ignored as broken, most
		 * likely), or entries we can't account for any more (the
		 * daemon skipped duplicates, the index jumped): a fresh
		 * device cures it. Then, now and then, an event.
		 */
		/* A ring that stopped moving is ignored as broken, most
		 * likely: new addresses mend it; if they don't, a fresh
		 * device
		 */
		if (hos_tx_stalled(now) || hos_rx_quiet(now)) {
			bool again = now < mended + 2 * HOS_STALL_MS;

			if (!again && !hos_mend()) {
				mended = now;
				hrx.last_used_ms = htx.last_used_ms = now;
				continue;
			}
			if (hos_reconnect(hos_rx_quiet(now) ? "RX quiet" :
					  "TX stalled")) {
				rc = -1;
				break;
			}
			continue;
		}
		if (!hos.chaos_ms || now < next_chaos)
			continue;
		if (next_chaos && hos_chaos() && hos_reconnect("event")) {
			rc = -1;
			break;
		}
		next_chaos = now + 1 + hos_below(2 * hos.chaos_ms);
	}
	if (scribbling) {
		hos_scribble_stop = true;
		pthread_join(scribbler, NULL);
	}
	hos_report();
	close(hos_tap);
	return rc;
}

/* ---- attacks on the daemon's own resources ---------------------------- */

/*
 * What a front-end can do to the daemon beyond laying rings out: cases of
 * their own, each with one daemon-side resource as its target, and each
 * checking that the daemon survived it, served it no more than its share,
 * and gave nobody else anything of it.
 */

static pid_t freeze_pid;		/* --freeze: the daemon's pid */
static const char *race_netns;		/* --race-netns: the clients' netns */
static const char *race_to;		/* --race-connect ADDR:PORT */

/* Stop (SIGSTOP) the daemon and wait until it is stopped, or go on */
static int freeze(bool on)
{
	uint64_t end = now_ms() + timeout_ms;
	char path[64], st[512];

	if (kill(freeze_pid, on ? SIGSTOP : SIGCONT)) {
		perror("vu-front: freeze");
		return -1;
	}
	if (!on)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)freeze_pid);
	while (now_ms() < end) {
		FILE *f = fopen(path, "re");
		char *p = NULL;

		if (f) {
			p = fgets(st, sizeof(st), f);
			fclose(f);
		}
		if (p && (p = strrchr(st, ')')) && p[1] &&
		    (p[2] == 'T' || p[2] == 't'))
			return 0;
		usleep(1000);
	}
	say("freeze: pid %d doesn't stop\n", (int)freeze_pid);
	return -1;
}

/* A TCP socket in netns @ns (a path), not connected: what a client of a
 * forwarded port will be. Return: the socket, -1 on failure
 */
static int race_socket(const char *ns)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int fd = open(ns, O_RDONLY | O_CLOEXEC), s = -1;

	if (self < 0 || fd < 0 || setns(fd, CLONE_NEWNET)) {
		perror("vu-front: setns");
		goto out;
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (setns(self, CLONE_NEWNET)) {
		perror("vu-front: setns back");
		exit(1);
	}
out:
	if (self >= 0)
		close(self);
	if (fd >= 0)
		close(fd);
	return s;
}

/* Connect @s to --race-connect, and wait until it is */
static int race_connect(int s)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct pollfd p = { s, POLLOUT, 0 };
	char host[64], *colon;
	int err = 0;
	socklen_t sl = sizeof(err);

	snprintf(host, sizeof(host), "%s", race_to);
	if (!(colon = strrchr(host, ':')))
		return -1;
	*colon = 0;
	a.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -1;
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) &&
	    errno != EINPROGRESS) {
		perror("vu-front: race connect");
		return -1;
	}
	if (poll(&p, 1, timeout_ms) != 1 ||
	    getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &sl) || err) {
		say("close-race: client connect: %s\n", strerror(err));
		return -1;
	}
	return 0;
}

/* Read the 8-byte answer to a GET_VRING_BASE for ring @q */
static int vring_base_reply(unsigned q)
{
	uint32_t s[2];
	uint8_t hdr[12];
	uint32_t r;

	if (read_full(hdr, 12) || read_full(s, 8))
		return -1;
	memcpy(&r, hdr, 4);
	if (r != GET_VRING_BASE || s[0] != q) {
		say("close-race: GET_VRING_BASE %u: reply %u for ring %u\n",
		    q, r, s[0]);
		return -1;
	}
	return 0;
}

/* Wait until the daemon read everything we sent on the control socket */
static int sent_all_read(void)
{
	uint64_t end = now_ms() + timeout_ms;
	int outq = 0;

	while (!ioctl(sock, SIOCOUTQ, &outq) && outq > 0) {
		if (now_ms() > end) {
			say("close-race: the daemon doesn't read: %d bytes\n",
			    outq);
			return -1;
		}
		usleep(1000);
	}
	return 0;
}

#define RACE_CLIENTS 4
#define RACE_SOAKS 6
#define RACE_HOLES 12	/* free numbers below those in use, at most */
#define RACE_PIPE 4096
/* What the state pipe holds first: it leaves 56 bytes of its one page */
static const uint8_t race_fill[RACE_PIPE - 56];

/*
 * close-race: a round of the daemon in which it has an interrupt to send
 * (a frame on TX, and its kick, come first), handles GET_VRING_BASE on TX
 * (which sends its last interrupts and closes the ring's kick and call
 * fds), and then takes new descriptors, which get the numbers just freed:
 * @soak eventfds (SET_VRING_ERR on rings nobody uses), then a migration
 * state pipe (SAVE), or TCP clients of a forwarded port (--race-connect,
 * from --race-netns). All of it is made ready while the daemon is
 * stopped (--freeze): the GET_VRING_BASE header beforehand, and its
 * payload in that round, as a daemon that read a message in two rounds
 * would see it. The state must be a clean stream, the clients must get
 * nothing: an interrupt written to a number the daemon had closed would
 * be eight bytes in one of them ("01 00 00 00 00 00 00 00").
 */
static int close_race_one(bool save, unsigned soak)
{
	static const uint8_t magic[8] = { 0xb1, 0xbb, 0x1d, 0x1b,
					  0x0b, 0xb1, 0xd1, 0xb0 };
	uint32_t base[2][2] = { { 0, 0 }, { 1, 0 } }, dir[2] = { STATE_SAVE };
	uint32_t hdr[3] = { GET_VRING_BASE, F_VERSION, 8 };
	int cl[RACE_CLIENTS], p[2] = { -1, -1 }, rc = -1, fd, efd[RACE_SOAKS];
	int hole[RACE_HOLES + 1];
	unsigned i, n = save ? 0 : RACE_CLIENTS;
	uint8_t f[64], *state = NULL;
	uint64_t v, check = 1;
	size_t len = 0;

	for (i = 0; i < RACE_CLIENTS; i++)
		cl[i] = -1;
	for (i = 0; i < RACE_SOAKS; i++)
		efd[i] = -1;
	for (i = 0; i < RACE_HOLES + 1; i++)
		hole[i] = -1;
	if (dev_connect(0) || case_arp_probe())
		return -1;
	for (i = 0; i < n; i++) {
		if ((cl[i] = race_socket(race_netns)) < 0)
			goto out;
	}
	for (i = 0; i < soak; i++) {
		if ((efd[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
			goto out;
	}
	/* A pipe of one page that has room for an interrupt, not for the
	 * state: the state goes in a later round, as a large one does
	 */
	if (save && (pipe2(p, O_CLOEXEC) ||
		     fcntl(p[1], F_SETPIPE_SZ, RACE_PIPE) != RACE_PIPE ||
		     write(p[1], race_fill, sizeof(race_fill)) !=
		     sizeof(race_fill)))
		goto out;

	/* The daemon's free descriptor numbers, below the ones it uses,
	 * taken (error fds of rings nobody uses); then TX's kick fd again,
	 * and its call fd: the call fd takes the kick fd's old number, so
	 * that it is the lowest of the two, and what comes first after
	 * GET_VRING_BASE takes its number. A daemon that takes one message
	 * per round takes one descriptor in that round, no more.
	 */
	for (i = 0; i < RACE_HOLES + 1; i++) {
		uint64_t ring = 2 + i, st;

		if (i == RACE_HOLES &&
		    (acked(SET_VRING_KICK, &(uint64_t){ 1 }, 8, &tx.kick, 1,
			   &st) || st ||
		     acked(SET_VRING_CALL, &(uint64_t){ 1 }, 8, &tx.call, 1,
			   &st) || st))
			goto out;
		if ((hole[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
		    acked(SET_VRING_ERR, &ring, 8, &hole[i], 1, &st) || st)
			goto out;
	}

	/* RX stopped, and the header of TX's GET_VRING_BASE read */
	if (msg_send(GET_VRING_BASE, 0, base[0], 8) || vring_base_reply(0) ||
	    send(sock, hdr, 12, MSG_NOSIGNAL) != 12 || sent_all_read())
		goto out;

	if (freeze(true))
		goto out;
	rc = -1;
	if (tx_frame(f, arp_request(f)))
		goto thaw;
	kick(&tx);
	if (send(sock, base[1], 8, MSG_NOSIGNAL) != 8)
		goto thaw;
	for (i = 0; i < soak; i++) {
		uint64_t ring = 4 + RACE_HOLES + i;

		if (msg_send_fds(SET_VRING_ERR, 0, &ring, 8, &efd[i], 1))
			goto thaw;
	}
	if (save && msg_send_fds(SET_DEVICE_STATE_FD, 0, dir, 8, &p[1], 1))
		goto thaw;
	for (i = 0; i < n; i++) {
		if (race_connect(cl[i]))
			goto thaw;
	}
	rc = 0;
thaw:
	if (freeze(false) || rc)
		goto out;
	rc = -1;
	if (vring_base_reply(1))
		goto out;
	if (save) {
		close(p[1]);
		p[1] = -1;
		if (reply_state_fd(&v, &fd) || (v & 0xff) ||
		    !(v & STATE_NOFD)) {
			say("close-race: SAVE refused\n");
			goto out;
		}
		if (fd >= 0)
			close(fd);
		/* Not a byte read before the round is over: until then,
		 * the state can't go in, whatever takes its time
		 */
		if (get_u64(GET_FEATURES, &v) || get_u64(GET_FEATURES, &v))
			goto out;
		if (pipe_read_all(p[0], &state, &len) ||
		    get_u64(CHECK_DEVICE_STATE, &check)) {
			say("close-race: no state, or no CHECK answer\n");
			goto out;
		}
		if (len < sizeof(race_fill) + 8 ||
		    memcmp(state + sizeof(race_fill), magic, 8) || check) {
			const uint8_t *b = state + sizeof(race_fill);

			len = len > sizeof(race_fill) ? len - sizeof(race_fill) : 0;
			say("close-race: state of %zu bytes starts with "
			    "%02x %02x %02x %02x %02x %02x %02x %02x, CHECK "
			    "%llu (%u fds soaked)\n", len,
			    len > 0 ? b[0] : 0, len > 1 ? b[1] : 0,
			    len > 2 ? b[2] : 0, len > 3 ? b[3] : 0,
			    len > 4 ? b[4] : 0, len > 5 ? b[5] : 0,
			    len > 6 ? b[6] : 0, len > 7 ? b[7] : 0,
			    (unsigned long long)check, soak);
			goto out;
		}
	}
	/* Two round trips: the daemon's round that had it all is over */
	if (get_u64(GET_FEATURES, &v) || get_u64(GET_FEATURES, &v))
		goto out;
	for (i = 0; i < n; i++) {
		struct pollfd pfd = { cl[i], POLLIN, 0 };
		uint8_t b[64];
		ssize_t got;

		if (poll(&pfd, 1, i ? 0 : 200) <= 0)
			continue;
		got = recv(cl[i], b, sizeof(b), MSG_DONTWAIT);
		if (got > 0) {
			say("close-race: client %u got %zd bytes the guest "
			    "never sent: %02x %02x %02x %02x...\n", i, got,
			    b[0], got > 1 ? b[1] : 0, got > 2 ? b[2] : 0,
			    got > 3 ? b[3] : 0);
			goto out;
		}
	}
	vsay("close-race: %s, %u fds soaked: clean\n",
	     save ? "state" : "clients", soak);
	rc = 0;
out:
	for (i = 0; i < RACE_CLIENTS; i++) {
		if (cl[i] >= 0)
			close(cl[i]);
	}
	for (i = 0; i < RACE_SOAKS; i++) {
		if (efd[i] >= 0)
			close(efd[i]);
	}
	for (i = 0; i < RACE_HOLES + 1; i++) {
		if (hole[i] >= 0)
			close(hole[i]);
	}
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	free(state);
	sock_close();
	return rc;
}

#define ROUNDS_MSGS 32

/*
 * msg-rounds: messages that are all there are handled in one round of
 * the daemon. With the daemon stopped (--freeze): a frame on TX and its
 * kick (the round's interrupt on RX, for the ARP reply, comes at its
 * end), and ROUNDS_MSGS SET_VRING_ENABLE with NEED_REPLY, each with its
 * payload; then the daemon goes on, and is stopped again the moment the
 * RX interrupt comes: every reply must be there by then. A daemon that
 * read a header in one round and its payload in the next took a round
 * per message, and had answered none when its first round ended.
 */
static int case_msg_rounds(void)
{
	uint64_t end, v;
	uint8_t f[64];
	unsigned i;
	int inq = 0, rc = -1;

	if (!freeze_pid) {
		say("msg-rounds: needs --freeze\n");
		return -1;
	}
	if (!reply_ack) {
		say("msg-rounds: needs REPLY_ACK\n");
		return -1;
	}
	/* Stopped: no interrupt of an earlier round can come any more */
	if (freeze(true))
		return -1;
	drain_eventfd(rx.call);
	if (tx_frame(f, arp_request(f)))
		goto thaw;
	kick(&tx);
	for (i = 0; i < ROUNDS_MSGS; i++) {
		uint32_t st[2] = { 0, 1 };

		if (msg_send(SET_VRING_ENABLE, F_NEED_REPLY, st, 8))
			goto thaw;
	}
	rc = 0;
thaw:
	if (freeze(false) || rc)
		return -1;
	/* The interrupt of the round with the ARP reply: stopped again at
	 * once, with what was answered by then. Another interrupt (a router
	 * advertisement of a round that was under way when we stopped it)
	 * isn't the one
	 */
	end = now_ms() + timeout_ms;
	for (;;) {
		struct pollfd pfd = { rx.call, POLLIN, 0 };
		static uint8_t rf[FRAME_MAX];
		int left = (int)(end - now_ms()), n;
		bool arp = false;

		if (left <= 0) {
			say("msg-rounds: no RX interrupt\n");
			return -1;
		}
		if (poll(&pfd, 1, left) != 1)
			continue;
		if (freeze(true))
			return -1;
		if (ioctl(sock, FIONREAD, &inq))
			inq = -1;
		drain_eventfd(rx.call);
		while ((n = rx_frame(rf, sizeof(rf))) > 0)
			arp = arp || is_arp_reply(rf, (size_t)n, 0);
		if (freeze(false) || n < 0)
			return -1;
		kick(&rx);
		if (arp)
			break;
	}
	if (inq < ROUNDS_MSGS * 20) {
		say("msg-rounds: %d bytes of replies when the round's "
		    "interrupt came, expected %d: a round per message?\n", inq,
		    ROUNDS_MSGS * 20);
		return -1;
	}
	for (i = 0; i < ROUNDS_MSGS; i++) {
		if (reply_u64(SET_VRING_ENABLE, &v) || v) {
			say("msg-rounds: reply %u missing or refused\n", i);
			return -1;
		}
	}
	drain_eventfd(rx.call);
	vsay("msg-rounds: %u messages answered in one round\n", ROUNDS_MSGS);
	return 0;
}

#define LC_Q 32768			/* the largest ring there is */
#define LC_RING 0x400000ULL		/* desc, then avail, then used */
#define LC_AVAIL (LC_RING + 16ULL * LC_Q)
#define LC_USED (LC_RING + 0xa0000ULL)
#define LC_MOVE_MS 50
#define LC_SAMPLES 4096

static unsigned lc_secs = 5;		/* --attack-secs */

static int lc_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * long-chains: a driver that does almost nothing, with a ring that costs
 * the most it can: a TX ring of LC_Q entries whose descriptors are all
 * zero-length, each pointing to the next (a chain of LC_Q descriptors
 * from any head, a loop in the end), every available entry a head, and
 * avail->idx moved every LC_MOVE_MS to a full ring again, for
 * --attack-secs seconds. Meanwhile control messages (GET_FEATURES) go back and forth.
 * Prints the entries the daemon used (what it walked) and the round trip
 * times; the test measures the daemon's CPU time per entry.
 */
static int case_long_chains(void)
{
	struct addr_msg a = { 1, 0, qva(LC_RING), qva(LC_USED), qva(LC_AVAIL),
			      LC_USED }, ra;
	struct ring big = { .q = LC_Q, .gpa = LC_RING };
	uint64_t st, v, start, next = 0, now;
	static uint64_t rtt[LC_SAMPLES];
	uint32_t used_total = 0;
	uint8_t mt[8 + 32 * 2];
	unsigned i, n = 0;
	uint16_t last;

	if (sock_connect(sock_path) || dev_handshake() ||
	    send_u64(SET_FEATURES, features_acked()) ||
	    acked(SET_MEM_TABLE, mt, (uint32_t)mem_table_msg(mt), memfd,
		  two_regions ? 2 : 1, &st) || st)
		return -1;
	big.desc = gp(LC_RING);
	big.avail = gp(LC_AVAIL);
	big.used = gp(LC_USED);
	big.kick = tx.kick;
	big.call = tx.call;
	for (i = 0; i < LC_Q; i++) {
		desc_set(&big, i, VF_RX_BUFS, 0, D_NEXT,
			 (uint16_t)((i + 1) % LC_Q));
		put16(big.avail + 4 + 2 * i, (uint16_t)i);
	}
	memset(big.used, 0, 6 + 8 * LC_Q);
	put16(big.avail, 0);
	put16(big.avail + 2, 0);

	ring_init(&rx, VF_RX_RING);
	addr_fill(&ra, &rx, 0, 0);
	if (send_state(SET_VRING_NUM, 0, VF_Q) ||
	    send_state(SET_VRING_BASE, 0, 0) ||
	    send_state(SET_VRING_NUM, 1, LC_Q) ||
	    send_state(SET_VRING_BASE, 1, 0) ||
	    acked(SET_VRING_ADDR, &ra, sizeof(ra), NULL, 0, &st) || st ||
	    acked(SET_VRING_ADDR, &a, sizeof(a), NULL, 0, &st) || st)
		return -1;
	if (send_vring_fd(SET_VRING_KICK, 0, rx.kick) ||
	    send_vring_fd(SET_VRING_CALL, 0, rx.call) ||
	    send_vring_fd(SET_VRING_KICK, 1, tx.kick) ||
	    send_vring_fd(SET_VRING_CALL, 1, tx.call))
		return -1;
	rx_post_all();
	if (send_state(SET_VRING_ENABLE, 0, 1) ||
	    send_state(SET_VRING_ENABLE, 1, 1))
		return -1;

	last = get16(big.used + 2);
	start = now_ms();
	while ((now = now_ms()) < start + lc_secs * 1000ULL) {
		long long t0;
		uint16_t u = get16(big.used + 2);

		used_total += (uint16_t)(u - last);
		last = u;
		if (now >= next) {
			/* A full ring again, from where the daemon is */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			put16(big.avail + 2, (uint16_t)(u + LC_Q));
			kick(&big);
			next = now + LC_MOVE_MS;
		}
		t0 = now_ns();
		if (get_u64(GET_FEATURES, &v)) {
			say("long-chains: no answer to GET_FEATURES\n");
			return -1;
		}
		if (n < LC_SAMPLES)
			rtt[n++] = (uint64_t)(now_ns() - t0) / 1000;
		usleep(10000);
	}
	used_total += (uint16_t)(get16(big.used + 2) - last);
	qsort(rtt, n, sizeof(rtt[0]), lc_cmp);
	printf("long-chains: used=%u ms=%llu rtt_n=%u rtt_p50_us=%llu "
	       "rtt_p99_us=%llu rtt_max_us=%llu\n", used_total,
	       (unsigned long long)(now_ms() - start), n,
	       (unsigned long long)(n ? rtt[n / 2] : 0),
	       (unsigned long long)(n ? rtt[n * 99 / 100] : 0),
	       (unsigned long long)(n ? rtt[n - 1] : 0));
	fflush(stdout);
	sock_close();
	return 0;
}

/* Control round trips (GET_FEATURES) until @child exits; the times go
 * to @rtt (microseconds, at most LC_SAMPLES), their count to *@n.
 * Return: 0, -1 if one went unanswered
 */
static int rtt_until_exit(pid_t child, uint64_t *rtt, unsigned *n)
{
	*n = 0;
	for (;;) {
		long long t0 = now_ns();
		uint64_t v;

		if (waitpid(child, NULL, WNOHANG) == child)
			return 0;
		if (get_u64(GET_FEATURES, &v)) {
			say("no answer to GET_FEATURES within %d ms\n",
			    timeout_ms);
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			return -1;
		}
		if (*n < LC_SAMPLES)
			rtt[(*n)++] = (uint64_t)(now_ns() - t0) / 1000;
		usleep(10000);
	}
}

/*
 * load-flood: a migration target fed as fast as a pipe goes: LOAD, then
 * a child splices garbage into the state pipe for --attack-secs seconds
 * (the daemon reads it all and drops it: no stream starts like that),
 * while control messages go back and forth. Prints "load-flood:
 * bytes=N rtt_n=N rtt_p50_us=N rtt_p99_us=N rtt_max_us=N check=N" on
 * stdout; CHECK_DEVICE_STATE must refuse the garbage.
 */
static int case_load_flood(void)
{
	static uint64_t rtt[LC_SAMPLES];
	static uint8_t junk[1 << 18];
	uint64_t check = 0, *bytes;
	int p[2], fd, rc;
	unsigned n;
	pid_t child;

	mig_wanted = true;
	bytes = mmap(NULL, sizeof(*bytes), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bytes == MAP_FAILED || sock_connect(sock_path) ||
	    dev_handshake() || pipe2(p, O_CLOEXEC))
		return -1;
	*bytes = 0;
	fcntl(p[1], F_SETPIPE_SZ, 1 << 20);	/* as large as we may */
	if ((fd = state_fd(STATE_LOAD, p[1], p[0])) < 0)
		return -1;
	memset(junk, 0xa5, sizeof(junk));
	signal(SIGCHLD, SIG_DFL);
	if (!(child = fork())) {
		uint64_t end = now_ms() + lc_secs * 1000ULL;

		/* Pages by reference (vmsplice()): faster than the daemon
		 * can copy them out, so the pipe never runs dry
		 */
		fcntl(fd, F_SETFL, 0);
		while (now_ms() < end) {
			struct iovec iov = { junk, sizeof(junk) };
			ssize_t w = vmsplice(fd, &iov, 1, 0);

			if (w < 0)
				w = write(fd, junk, sizeof(junk));
			if (w <= 0)
				break;
			*bytes += (uint64_t)w;
		}
		_exit(0);
	}
	close(fd);
	rc = rtt_until_exit(child, rtt, &n);
	signal(SIGCHLD, SIG_IGN);
	if (rc)
		return -1;
	if (get_u64(CHECK_DEVICE_STATE, &check)) {
		say("load-flood: no answer to CHECK_DEVICE_STATE\n");
		return -1;
	}
	qsort(rtt, n, sizeof(rtt[0]), lc_cmp);
	printf("load-flood: bytes=%llu rtt_n=%u rtt_p50_us=%llu "
	       "rtt_p99_us=%llu rtt_max_us=%llu check=%llu\n",
	       (unsigned long long)*bytes, n,
	       (unsigned long long)(n ? rtt[n / 2] : 0),
	       (unsigned long long)(n ? rtt[n * 99 / 100] : 0),
	       (unsigned long long)(n ? rtt[n - 1] : 0),
	       (unsigned long long)check);
	fflush(stdout);
	sock_close();
	if (!check) {
		say("load-flood: the daemon took the garbage\n");
		return -1;
	}
	return 0;
}

static int case_close_race(void)
{
	unsigned soak;

	if (!freeze_pid || !race_netns || !race_to) {
		say("close-race: needs --freeze, --race-netns and "
		    "--race-connect\n");
		return -1;
	}
	mig_wanted = true;
	for (soak = 0; soak < RACE_SOAKS; soak++) {
		if (close_race_one(true, soak))
			return -1;
	}
	for (soak = 0; soak < 2; soak++) {
		if (close_race_one(false, soak))
			return -1;
	}
	return 0;
}

/* ---- main ------------------------------------------------------------ */

static void usage(const char *name)
{
	fprintf(stderr,
		"Usage: %s [-t MS] [-r SECONDS] [-2] [-n TAP] [-m MTU] [-v] "
		"[--migrate-to SOCK] [--migrate-trigger FIFO] "
		"[--migrate-done FILE] [--migrate-fail] "
		"[--migrate-close-source] [--state-save FILE] "
		"[--state-load FILE] [--state-flags-or BITS] "
		"[--expect-load-fail] [--no-mig-log] "
		"[--no-disable] [-d USEC] [-F N] [--migrate-exec CMD] "
		"[--migrate-notify FIFO] "
		"[--migrate-notify-msg FILE] [--send-rarp] [--phase-exec CMD] "
		"[--hostile SEED] [--no-mrg] "
		"[--rx-chain SIZES] [--rx-same-head] [--freeze PID] "
		"[--race-netns PATH] [--race-connect ADDR:PORT] "
		"SOCKPATH CASE...\n"
		"(see the comment at the top of vu-front.c for the cases "
		"and options)\n", name);
	exit(2);
}

static int run_case(const char *name)
{
	static const char *const need_dev[] = {
		"arp-probe", "dhcp-probe", "bridge", "bad-sizes", "bad-fds",
		"bad-ring-fds",
		"bad-ring-addr", "unknown", "oversize", "too-many-fds",
		"loop-chain", "bad-avail-idx", "rx-readonly", "stop-kick",
		"log", "msg-rounds", "shrink-mem", "shrink-log",
	};
	unsigned i;

	for (i = 0; i < sizeof(need_dev) / sizeof(need_dev[0]); i++) {
		if (!strcmp(name, need_dev[i]) && sock < 0 && dev_connect(0))
			return -1;
	}
	if (!strcmp(name, "connect"))
		return dev_connect(0);
	if (!strcmp(name, "features"))
		return case_features();
	if (!strcmp(name, "mig-probe"))
		return case_mig_probe();
	if (!strcmp(name, "state-load"))
		return case_state_load();
	if (!strcmp(name, "state-abandon"))
		return case_state_abandon();
	if (!strcmp(name, "close")) {
		sock_close();
		usleep(20000);
		return 0;
	}
	if (!strcmp(name, "arp-probe"))
		return case_arp_probe();
	if (!strcmp(name, "dhcp-probe"))
		return case_dhcp_probe();
	if (!strcmp(name, "bridge"))
		return case_bridge();
	if (!strcmp(name, "expect-close"))
		return case_expect_close();
	if (!strcmp(name, "bad-sizes"))
		return case_bad_sizes();
	if (!strcmp(name, "bad-fds"))
		return case_bad_fds();
	if (!strcmp(name, "bad-ring-fds"))
		return case_bad_ring_fds();
	if (!strcmp(name, "bad-ring-addr"))
		return case_bad_ring_addr();
	if (!strcmp(name, "out-of-order"))
		return case_out_of_order();
	if (!strcmp(name, "unknown"))
		return case_unknown();
	if (!strcmp(name, "oversize"))
		return case_oversize();
	if (!strcmp(name, "too-many-fds"))
		return case_too_many_fds();
	if (!strcmp(name, "loop-chain"))
		return case_loop_chain();
	if (!strcmp(name, "bad-avail-idx"))
		return case_bad_avail_idx();
	if (!strcmp(name, "rx-readonly"))
		return case_rx_readonly();
	if (!strcmp(name, "stop-kick"))
		return case_stop_kick();
	if (!strcmp(name, "log"))
		return case_log();
	if (!strcmp(name, "shrink-mem"))
		return case_shrink(false);
	if (!strcmp(name, "shrink-log"))
		return case_shrink(true);
	if (!strcmp(name, "hostile"))
		return case_hostile();
	if (!strcmp(name, "close-race"))
		return case_close_race();
	if (!strcmp(name, "msg-rounds"))
		return case_msg_rounds();
	if (!strcmp(name, "long-chains"))
		return case_long_chains();
	if (!strcmp(name, "load-flood"))
		return case_load_flood();
	say("unknown case %s\n", name);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "migrate-to", required_argument, NULL, 'T' },
		{ "migrate-trigger", required_argument, NULL, 'G' },
		{ "migrate-done", required_argument, NULL, 'D' },
		{ "migrate-fail", no_argument, NULL, 1100 },
		{ "migrate-close-source", no_argument, NULL, 'C' },
		{ "state-save", required_argument, NULL, 'S' },
		{ "state-load", required_argument, NULL, 'L' },
		{ "state-flags-or", required_argument, NULL, 1101 },
		{ "expect-load-fail", no_argument, NULL, 'E' },
		{ "no-mig-log", no_argument, NULL, 'N' },
		{ "no-disable", no_argument, NULL, 'X' },
		{ "migrate-exec", required_argument, NULL, 'x' },
		{ "migrate-notify", required_argument, NULL, 'o' },
		{ "migrate-notify-msg", required_argument, NULL, 'M' },
		{ "send-rarp", no_argument, NULL, 'R' },
		{ "phase-exec", required_argument, NULL, 'H' },
		{ "hostile", required_argument, NULL, 1000 },
		{ "no-mrg", no_argument, NULL, 1001 },
		{ "rx-chain", required_argument, NULL, 1002 },
		{ "rx-same-head", no_argument, NULL, 1003 },
		{ "freeze", required_argument, NULL, 1004 },
		{ "race-netns", required_argument, NULL, 1005 },
		{ "race-connect", required_argument, NULL, 1006 },
		{ "attack-secs", required_argument, NULL, 1007 },
		{ 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction sm = { .sa_handler = on_migrate_signal };
	int opt, i;

	while ((opt = getopt_long(argc, argv, "t:r:2n:m:vOPed:F:", lopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'F':
			tx_flight = true;
			tx_flight_n = (unsigned)atoi(optarg);
			if (tx_flight_n < 1 || tx_flight_n > VF_Q)
				usage(argv[0]);
			break;
		case 'd':
			pace_ns = atoll(optarg) * 1000;
			if (pace_ns <= 0)
				usage(argv[0]);
			break;
		case 't':
			timeout_ms = atoi(optarg);
			break;
		case 'r':
			retry_s = atoi(optarg);
			break;
		case '2':
			two_regions = true;
			break;
		case 'n':
			tap_name = optarg;
			break;
		case 'm':
			mtu = atoi(optarg);
			mtu_given = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'O':
			offload = true;
			break;
		case 'e':
			want_evidx = true;
			break;
		case 'P':
			/* Every frame in pieces: as many slots as split
			 * chains fit the ring's second half
			 */
			split_all = true;
			tx_slots = (VF_Q / 2) / VF_TX_SPLIT_DESCS;
			break;
		case 'T':
			mig_to = optarg;
			break;
		case 'G':
			mig_trigger = optarg;
			break;
		case 'D':
			mig_done = optarg;
			break;
		case 1100:
			mig_cancel = true;
			break;
		case 'C':
			mig_close_src = true;
			break;
		case 'S':
			state_save_path = optarg;
			break;
		case 'L':
			state_load_path = optarg;
			break;
		case 1101:
			state_flags_or = strtoul(optarg, NULL, 0);
			if (!state_flags_or || state_flags_or > 0xff) {
				say("--state-flags-or: bits 0x01 to 0xff\n");
				usage(argv[0]);
			}
			break;
		case 'E':
			expect_load_fail = true;
			break;
		case 'N':
			mig_nolog = true;
			break;
		case 'X':
			mig_nodisable = true;
			break;
		case 'x':
			mig_exec = optarg;
			break;
		case 'o':
			mig_notify = optarg;
			break;
		case 'M':
			mig_notify_msg = optarg;
			break;
		case 'R':
			mig_rarp = true;
			break;
		case 'H':
			mig_phase_exec = optarg;
			break;
		case 1000:
			hos.on = true;
			hos.seed = strtoull(optarg, NULL, 0);
			break;
		case 1001:
			hos.on = hos.fixed = hos.no_mrg = true;
			break;
		case 1002:
			hos.on = hos.fixed = true;
			if (hos_parse_chain(optarg))
				usage(argv[0]);
			break;
		case 1003:
			hos.on = hos.fixed = hos.same_head = true;
			break;
		case 1004:
			freeze_pid = (pid_t)atoi(optarg);
			break;
		case 1005:
			race_netns = optarg;
			break;
		case 1006:
			race_to = optarg;
			break;
		case 1007:
			lc_secs = (unsigned)atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind + 1 >= argc || (tx_flight && hos.on))
		usage(argv[0]);
	if (tx_flight)
		tx_slots = tx_flight_n;
	mig_wanted = mig_to || mig_trigger || mig_cancel || state_save_path ||
		     state_load_path;
	sock_path = cur_path = argv[optind];
	if (hos.on)
		hos_profile();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR2, &sm, NULL);
	signal(SIGCHLD, SIG_IGN);	/* --migrate-exec children */
	signal(SIGPIPE, SIG_IGN);
	rx.kick = -1;
	if (mem_setup())
		return 2;

	for (i = optind + 1; i < argc; i++) {
		vsay("case %s\n", argv[i]);
		if (run_case(argv[i])) {
			say("FAIL: %s\n", argv[i]);
			return 1;
		}
		vsay("ok: %s\n", argv[i]);
	}
	sock_close();
	return 0;
}
