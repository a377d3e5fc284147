// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mem.c - guest memory of the vhost-user device: the memory table
 * (SET_MEM_TABLE), address translation, and the dirty log (SET_LOG_BASE)
 *
 * Theory of operation
 *
 * Memory: QEMU shares the guest's RAM as up to VU_MAX_REGIONS file
 * descriptors (vu_mem_map()). Two kinds of address point into it: QEMU
 * virtual addresses (the ring addresses of SET_VRING_ADDR) and guest
 * physical addresses (everything inside the rings). vu_qva_to_va() and
 * vu_gpa_to_va() find the region holding an address and return our
 * pointer plus how many bytes are contiguous from there, capped at the
 * region's end: a caller that needs more continues in the next region, so
 * no access can ever leave a mapping.
 *
 * Mapping: each region fd is mapped from offset 0 over mmap_offset +
 * memory_size bytes (the offset needn't be page-aligned), after checking
 * that the file is a regular file at least that large, so that nothing we
 * may touch lies beyond its end. Regions must not overlap, neither in
 * guest physical nor in QEMU virtual addresses. A new table is mapped
 * whole first, and only if all of its regions map does it replace the old
 * one (the caller then translates its rings again). The dirty log is
 * mapped the same way (vu_log_map()).
 *
 * Memory that shrinks: QEMU's memory-backend-memfd seals its memfds
 * against shrinking (F_SEAL_SHRINK, its default seal=on), and so the
 * memfd of its dirty log, but memory-backend-file and -shm files (huge
 * pages from hugetlbfs, /dev/shm) can't be sealed, so we take any file.
 * A front-end that truncates one after we mapped it makes our next access
 * past the new end a SIGBUS. vu_mem_guard() catches it: if the address is
 * in one of our guest mappings (or the log's), every one of them is
 * replaced by anonymous memory at the same address, the access is made
 * again and reads zeros (writes go nowhere), and vu_mem_faulted() tells
 * the owner, who drops the front-end at its next safe point (user.c): the
 * next one starts from nothing. A SIGBUS anywhere else is a crash: it goes
 * to the handler that was there before (a sanitizer's), or is logged and
 * kills us (SIGILL: the filter doesn't let us restore SIGBUS's default).
 * The kernel's own accesses (a recvmsg() into a guest buffer) fail with
 * EFAULT instead, which the caller sees.
 *
 * Dirty logging: while logging is on (VHOST_F_LOG_ALL and a log mapped),
 * vu_log_write() marks the pages written (the virtqueue code calls it for
 * every page it writes, and the used ring entries and index), by guest
 * physical address, with atomic ORs into the bitmap; bits past the mapped
 * bitmap are never written.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "vhost/mem.h"

/* A dirty log bigger than this is refused (1 TiB of guest memory) */
#define VU_LOG_MAX (1ULL << 25)

/**
 * vu_to_va() - translate a guest address by the region holding it
 * @m:		guest memory table
 * @a:		the address
 * @len:	bytes wanted from @a, cut to what the region holds from there
 * @gpa:	@a is a guest physical address, not a front-end (QEMU) virtual
 *		one
 *
 * Return: our pointer to @a, NULL if no region holds it
 */
static void *vu_to_va(const struct vu_mem *m, uint64_t a, uint64_t *len,
		      bool gpa)
{
	unsigned i;

	for (i = 0; i < m->n; i++) {
		const struct vu_region *r = &m->r[i];
		uint64_t start = gpa ? r->gpa : r->qva, off;

		if (a < start || a - start >= r->size)
			continue;
		off = a - start;
		if (*len > r->size - off)
			*len = r->size - off;
		return r->map + r->mmap_offset + off;
	}
	return NULL;
}

/**
 * vu_gpa_to_va() - translate a guest physical address
 * @m:		guest memory
 * @gpa:	guest physical address
 * @len:	in: bytes wanted; out: bytes contiguous at the result (<= in)
 *
 * Return: our pointer, NULL if @gpa isn't in guest memory
 */
void *vu_gpa_to_va(const struct vu_mem *m, uint64_t gpa, uint64_t *len)
{
	return vu_to_va(m, gpa, len, true);
}

/**
 * vu_qva_to_va() - translate a QEMU virtual address
 * @m:		guest memory
 * @qva:	address in QEMU's address space
 * @len:	in: bytes wanted; out: bytes contiguous at the result (<= in)
 *
 * Return: our pointer, NULL if @qva isn't in guest memory
 */
void *vu_qva_to_va(const struct vu_mem *m, uint64_t qva, uint64_t *len)
{
	return vu_to_va(m, qva, len, false);
}

/**
 * vu_log_write() - mark guest pages we wrote in the dirty log
 * @m:		guest memory and log
 * @gpa:	first byte written
 * @len:	bytes written
 */
void vu_log_write(struct vu_mem *m, uint64_t gpa, uint64_t len)
{
	uint64_t page, last;

	if (!m->log_on || !m->log || !len)
		return;
	page = gpa / VU_LOG_PAGE;
	last = (gpa + len - 1) / VU_LOG_PAGE;
	if (gpa + len - 1 < gpa)	/* wraps: can't be guest memory */
		return;
	for (; page <= last; page++) {
		if (page / 8 >= m->log_size)
			break;
		__atomic_fetch_or(&m->log[page / 8], (uint8_t)(1U << (page % 8)),
				  __ATOMIC_RELAXED);
	}
	m->log_dirty = true;
}

/**
 * vu_mem_unmap() - unmap all regions of the memory table
 * @m:		guest memory
 */
void vu_mem_unmap(struct vu_mem *m)
{
	unsigned i;

	for (i = 0; i < m->n; i++)
		munmap(m->r[i].map, m->r[i].map_len);
	m->n = 0;
}

/**
 * vu_log_unmap() - unmap the dirty log
 * @m:		guest memory and log
 */
void vu_log_unmap(struct vu_mem *m)
{
	if (m->log_map)
		munmap(m->log_map, m->log_map_len);
	m->log_map = m->log = NULL;
	m->log_map_len = m->log_size = 0;
}

/**
 * struct vu_guard - the guard against guest memory shrinking under us:
 *		     what it watches, the handler it replaced, what hit
 * @mem:	the memory it watches
 * @old:	the SIGBUS handler it replaced
 * @hit:	region + 1, or -1: the log (set by the signal handler)
 * @off:	offset in that mapping (likewise)
 */
static struct vu_guard {
	struct vu_mem *mem;
	struct sigaction old;
	volatile sig_atomic_t hit;
	volatile uintptr_t off;
} vu_guard;

/* Is @a in the mapping of @len bytes at @map? */
static bool vu_guard_in(const uint8_t *a, const uint8_t *map, uint64_t len)
{
	return map && a >= map && (uint64_t)(a - map) < len;
}

/* Anonymous memory where @map was: accesses go on, and touch nothing.
 * If the kernel refuses it (a commit limit, vm.max_map_count), the access
 * would fault again for ever: we say so and exit
 */
static void vu_guard_swap(uint8_t *map, uint64_t len)
{
	static const char msg[] = "vhost-user: guest memory shrank under us "
				  "and can't be replaced, exiting\n";

	if (map && mmap(map, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
		   MAP_FAILED) {
		log_sigsafe(msg, sizeof(msg) - 1);
		_exit(EXIT_FAILURE);
	}
}

/**
 * vu_guard_handler() - SIGBUS in guest memory: see "Memory that shrinks" above
 * @sig:	signal number, unused
 * @si:		signal information, with the faulting address
 * @uc:		signal context, unused
 *
 * Async-signal-safe: mmap().
 */
static void vu_guard_handler(int sig, siginfo_t *si, void *uc)
{
	static const char crash[] = "SIGBUS outside guest memory, a crash\n";
	const uint8_t *a = si->si_addr;
	struct vu_mem *m = vu_guard.mem;
	int hit = 0;
	unsigned i;

	for (i = 0; m && i < m->n && !hit; i++) {
		if (vu_guard_in(a, m->r[i].map, m->r[i].map_len)) {
			hit = (int)i + 1;
			vu_guard.off = (uintptr_t)(a - m->r[i].map);
		}
	}
	if (m && !hit && vu_guard_in(a, m->log_map, m->log_map_len)) {
		hit = -1;
		vu_guard.off = (uintptr_t)(a - m->log_map);
	}
	if (!hit) {
		/* Not ours: a crash, as it would have been without us */
		if ((vu_guard.old.sa_flags & SA_SIGINFO) &&
		    vu_guard.old.sa_sigaction) {
			vu_guard.old.sa_sigaction(sig, si, uc);
		} else if (vu_guard.old.sa_handler != SIG_DFL &&
			   vu_guard.old.sa_handler != SIG_IGN) {
			vu_guard.old.sa_handler(sig);
		}
		log_sigsafe(crash, sizeof(crash) - 1);
		__builtin_trap();	/* SIGILL: we can't restore SIGBUS */
	}
	for (i = 0; i < m->n; i++)
		vu_guard_swap(m->r[i].map, m->r[i].map_len);
	vu_guard_swap(m->log_map, m->log_map_len);
	if (!vu_guard.hit)
		vu_guard.hit = hit;
}

/**
 * vu_mem_guard() - survive guest memory that shrinks under us (SIGBUS)
 * @m:		the device's guest memory, watched from now on
 *
 * Before the sandbox, which allows no rt_sigaction().
 *
 * Return: 0, or -errno if the handler can't be installed
 */
int vu_mem_guard(struct vu_mem *m)
{
	struct sigaction sa = { .sa_sigaction = vu_guard_handler,
				.sa_flags = SA_SIGINFO };

	vu_guard.mem = m;
	if (sigemptyset(&sa.sa_mask) ||
	    sigaction(SIGBUS, &sa, &vu_guard.old))
		return -errno;
	if (vu_guard.old.sa_sigaction == vu_guard_handler)
		vu_guard.old.sa_handler = SIG_DFL;	/* called twice */
	return 0;
}

/**
 * vu_mem_faulted() - did a guest memory access fault since the last call?
 *
 * If so, the guarded mappings are anonymous memory now (see "Memory that
 * shrinks"): the caller drops the front-end, which unmaps them.
 *
 * Return: true if one did (logged: once per front-end, which goes)
 */
bool vu_mem_faulted(void)
{
	int hit = vu_guard.hit;

	if (!hit)
		return false;
	vu_guard.hit = 0;
	if (hit > 0)
		warn("vhost-user: guest memory region %i shrank under us "
		     "(SIGBUS at offset 0x%llx): dropping the front-end",
		     hit - 1, (unsigned long long)vu_guard.off);
	else
		warn("vhost-user: guest memory of the dirty log shrank under "
		     "us (SIGBUS at offset 0x%llx): dropping the front-end",
		     (unsigned long long)vu_guard.off);
	return true;
}

/* Check a region's fd can back @len bytes: a regular file that large */
static int vu_fd_check(int fd, uint64_t len)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size < len)
		return -EINVAL;
	return 0;
}

/**
 * vu_mem_check() - check the regions of a table: sizes, wrap-around, overlaps
 * @msg:	the table's regions, as the message carries them
 * @n:		number of regions
 * @nr:		the regions, filled in
 *
 * Return: 0 or -EINVAL
 */
static int vu_mem_check(const uint8_t *msg, uint32_t n, struct vu_region *nr)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		struct vu_mem_region_msg r;

		memcpy(&r, msg + sizeof(r) * i, sizeof(r));
		if (!r.size || r.gpa + r.size < r.gpa ||
		    r.qva + r.size < r.qva ||
		    r.mmap_offset + r.size < r.mmap_offset ||
		    r.mmap_offset + r.size > SIZE_MAX) {
			warn_rl("vhost-user: SET_MEM_TABLE: region %u: bad "
				"size or addresses", i);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (r.gpa < nr[j].gpa + nr[j].size &&
			    nr[j].gpa < r.gpa + r.size) {
				warn_rl("vhost-user: SET_MEM_TABLE: regions "
					"%u and %u overlap (guest)", j, i);
				return -EINVAL;
			}
			if (r.qva < nr[j].qva + nr[j].size &&
			    nr[j].qva < r.qva + r.size) {
				warn_rl("vhost-user: SET_MEM_TABLE: regions "
					"%u and %u overlap (QEMU)", j, i);
				return -EINVAL;
			}
		}
		nr[i].gpa = r.gpa;
		nr[i].size = r.size;
		nr[i].qva = r.qva;
		nr[i].mmap_offset = r.mmap_offset;
		nr[i].map_len = r.mmap_offset + r.size;
	}
	return 0;
}

/**
 * vu_mem_map() - check and map a new memory table, replacing the old one
 * @m:		guest memory
 * @msg:	the table's regions, as struct vu_mem_region_msg (untrusted)
 * @n:		number of regions, 1 to VU_MAX_REGIONS
 * @fds:	one fd per region (still the caller's)
 *
 * On failure (logged) the old table stays as it was.
 *
 * Return: 0 or -errno
 */
int vu_mem_map(struct vu_mem *m, const uint8_t *msg, uint32_t n,
	       const int *fds)
{
	struct vu_region nr[VU_MAX_REGIONS];
	uint32_t i;
	int rc;

	if (!n || n > VU_MAX_REGIONS)
		return -EINVAL;
	memset(nr, 0, sizeof(nr));
	if ((rc = vu_mem_check(msg, n, nr)))
		return rc;

	for (i = 0; i < n; i++) {
		void *p;

		if ((rc = vu_fd_check(fds[i], nr[i].map_len))) {
			warn_rl("vhost-user: SET_MEM_TABLE: region %u: fd "
				"isn't a file of %llu bytes", i,
				(unsigned long long)nr[i].map_len);
			goto fail;
		}
		p = mmap(NULL, nr[i].map_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_NORESERVE, fds[i], 0);
		if (p == MAP_FAILED) {
			rc = -errno;
			warn_rl("vhost-user: SET_MEM_TABLE: region %u: mmap "
				"of %llu bytes: %s", i,
				(unsigned long long)nr[i].map_len,
				strerror(errno));
			goto fail;
		}
		nr[i].map = p;
	}

	vu_mem_unmap(m);
	memcpy(m->r, nr, sizeof(nr));
	m->n = n;
	for (i = 0; i < n; i++)
		debug("vhost-user: region %u: guest 0x%llx QEMU 0x%llx size "
		      "0x%llx offset 0x%llx", i,
		      (unsigned long long)nr[i].gpa,
		      (unsigned long long)nr[i].qva,
		      (unsigned long long)nr[i].size,
		      (unsigned long long)nr[i].mmap_offset);
	return 0;

fail:
	while (i--)
		munmap(nr[i].map, nr[i].map_len);
	return rc;
}

/**
 * vu_log_map() - check and map the dirty log, replacing the old one
 * @m:		guest memory and log
 * @fd:		the log's fd (still the caller's)
 * @size:	bytes of bitmap (untrusted)
 * @offset:	where the bitmap starts in the file (untrusted)
 *
 * On failure (logged) the old log stays as it was.
 *
 * Return: 0 or -errno
 */
int vu_log_map(struct vu_mem *m, int fd, uint64_t size, uint64_t offset)
{
	uint64_t len = offset + size;
	void *p;
	int rc;

	if (!size || size > VU_LOG_MAX || len < offset ||
	    offset > VU_LOG_MAX) {
		warn_rl("vhost-user: SET_LOG_BASE: bad size %llu or offset "
			"%llu", (unsigned long long)size,
			(unsigned long long)offset);
		return -EINVAL;
	}
	if ((rc = vu_fd_check(fd, len))) {
		warn_rl("vhost-user: SET_LOG_BASE: fd isn't a file of %llu "
			"bytes", (unsigned long long)len);
		return rc;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		warn_rl("vhost-user: SET_LOG_BASE: mmap: %s", strerror(errno));
		return rc;
	}
	vu_log_unmap(m);
	m->log_map = p;
	m->log_map_len = len;
	m->log = (uint8_t *)p + offset;
	m->log_size = size;
	debug("vhost-user: dirty log of %llu bytes", (unsigned long long)size);
	return 0;
}
