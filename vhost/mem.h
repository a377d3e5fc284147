/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mem.h - guest memory of the vhost-user device: the memory table, address
 * translation and the dirty log (vhost/mem.c)
 */
#ifndef VHOST_MEM_H
#define VHOST_MEM_H

#include <stdbool.h>
#include <stdint.h>

/* Regions in one SET_MEM_TABLE (VHOST_MEMORY_BASELINE_NREGIONS) */
#define VU_MAX_REGIONS 8
/* Dirty log granularity (VHOST_LOG_PAGE) */
#define VU_LOG_PAGE 4096

/**
 * struct vu_region - one mapped guest memory region
 * @gpa:	guest physical address of its first byte
 * @size:	length in bytes
 * @qva:	QEMU virtual address of its first byte
 * @mmap_offset: offset of the region's data in the mapping
 * @map:	our mapping (from file offset 0), NULL if unused
 * @map_len:	length of @map (@mmap_offset + @size)
 */
struct vu_region {
	uint64_t gpa, size, qva, mmap_offset;
	uint8_t *map;
	uint64_t map_len;
};

/**
 * struct vu_mem - the guest's memory as we see it, and the dirty log
 * @n:		regions in use
 * @r:		regions
 * @log:	dirty page bitmap (bit per VU_LOG_PAGE from GPA 0), or NULL
 * @log_map:	mapping that holds @log
 * @log_map_len: its length
 * @log_size:	bytes of bitmap available at @log
 * @log_on:	VHOST_F_LOG_ALL negotiated: mark what we write
 * @log_dirty:	bits were set since the last log_fd notification
 */
struct vu_mem {
	unsigned n;
	struct vu_region r[VU_MAX_REGIONS];
	uint8_t *log;
	uint8_t *log_map;
	uint64_t log_map_len;
	uint64_t log_size;
	bool log_on;
	bool log_dirty;
};

/**
 * struct vu_mem_region_msg - one region of SET_MEM_TABLE, as it comes
 * @gpa:	guest physical address
 * @size:	length in bytes
 * @qva:	QEMU virtual address
 * @mmap_offset: offset of the region in the file
 */
struct vu_mem_region_msg {
	uint64_t gpa, size, qva, mmap_offset;
};

void *vu_gpa_to_va(const struct vu_mem *m, uint64_t gpa, uint64_t *len);
void *vu_qva_to_va(const struct vu_mem *m, uint64_t qva, uint64_t *len);
void vu_log_write(struct vu_mem *m, uint64_t gpa, uint64_t len);
int vu_mem_map(struct vu_mem *m, const uint8_t *msg, uint32_t n,
	       const int *fds);
void vu_mem_unmap(struct vu_mem *m);
int vu_log_map(struct vu_mem *m, int fd, uint64_t size, uint64_t offset);
void vu_log_unmap(struct vu_mem *m);
int vu_mem_guard(struct vu_mem *m);
bool vu_mem_faulted(void);

#endif /* VHOST_MEM_H */
