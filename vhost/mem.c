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
 * Dirty logging: while logging is on (VHOST_F_LOG_ALL and a log mapped),
 * vu_log_write() marks the pages written (the virtqueue code calls it for
 * every page it writes, and the used ring entries and index), by guest
 * physical address, with atomic ORs into the bitmap; bits past the mapped
 * bitmap are never written.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "log.h"
#include "vhost/mem.h"

/* A dirty log bigger than this is refused (1 TiB of guest memory) */
#define VU_LOG_MAX (1ULL << 25)

/* Find the region holding [@a, ...) for address kind @gpa (else QVA) */
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

/* Check the regions of a table: sizes, wrap-around, overlaps */
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
