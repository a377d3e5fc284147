// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pcap.c - write every frame exchanged with the guest to a pcap file.
 *
 * Classic libpcap format (magic 0xa1b2c3d4, version 2.4, LINKTYPE_ETHERNET,
 * microsecond timestamps), readable by tcpdump -r and wireshark. Each
 * record is one writev() so the file never holds half a record unless the
 * disk fills up, in which case capture stops with a warning.
 *
 * The data path calls in only when a capture was asked for (-p: the
 * callers check c->pcap_file), so without one no frame runs any of this;
 * the file's own check below covers a capture stopped by a failed write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "pcap.h"
#include "util.h"

#define PCAP_SNAPLEN 65535
#define LINKTYPE_ETHERNET 1
#define PCAP_IOV_MAX 64

static int pcap_fd = -1;

/**
 * pcap_init() - create (truncate) the capture file and write its header
 * @path:	file name
 *
 * Return: 0 or -errno
 */
int pcap_init(const char *path)
{
	const struct {
		uint32_t magic;
		uint16_t major, minor;
		int32_t thiszone;
		uint32_t sigfigs, snaplen, network;
	} hdr = { 0xa1b2c3d4, 2, 4, 0, 0, PCAP_SNAPLEN, LINKTYPE_ETHERNET };
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, &hdr, sizeof(hdr)) != sizeof(hdr)) {
		close(fd);
		return -EIO;
	}
	pcap_fd = fd;
	info("Saving packet capture to %s", path);
	return 0;
}

/**
 * pcap_frame_iov() - append one frame made of headers and payload pieces
 * @hdr:	contiguous start of the frame
 * @hlen:	its length
 * @iov:	payload pieces
 * @n:		number of pieces
 * @plen:	payload bytes, at most the pieces' total
 */
void pcap_frame_iov(const void *hdr, size_t hlen, const struct iovec *iov,
		    unsigned n, size_t plen)
{
	struct {
		uint32_t sec, usec, caplen, len;
	} rec;
	struct iovec v[PCAP_IOV_MAX + 2];
	size_t left = plen, total = hlen + plen;
	struct timespec ts;
	unsigned i, k = 2;

	if (pcap_fd < 0)
		return;
	if (total > PCAP_SNAPLEN)
		return;		/* never, for frames we send */
	for (i = 0; i < n && left && k < ARRAY_SIZE(v); i++, k++) {
		v[k].iov_base = iov[i].iov_base;
		v[k].iov_len = iov[i].iov_len < left ? iov[i].iov_len : left;
		left -= v[k].iov_len;
	}
	if (left)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	rec.sec = (uint32_t)ts.tv_sec;
	rec.usec = (uint32_t)(ts.tv_nsec / 1000);
	rec.caplen = rec.len = (uint32_t)total;
	v[0].iov_base = &rec;
	v[0].iov_len = sizeof(rec);
	v[1].iov_base = (void *)hdr;
	v[1].iov_len = hlen;
	if (writev(pcap_fd, v, (int)k) != (ssize_t)(sizeof(rec) + total)) {
		warn_perror("pcap: write failed, capture stopped");
		close(pcap_fd);
		pcap_fd = -1;
	}
}

/**
 * pcap_frame() - append one frame to the capture, if capturing
 * @frame:	Ethernet frame
 * @len:	its length
 */
void pcap_frame(const void *frame, size_t len)
{
	struct {
		uint32_t sec, usec, caplen, len;
	} rec;
	struct iovec iov[2];
	struct timespec ts;
	size_t cap = len > PCAP_SNAPLEN ? PCAP_SNAPLEN : len;

	if (pcap_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	rec.sec = (uint32_t)ts.tv_sec;
	rec.usec = (uint32_t)(ts.tv_nsec / 1000);
	rec.caplen = (uint32_t)cap;
	rec.len = (uint32_t)len;
	iov[0].iov_base = &rec;
	iov[0].iov_len = sizeof(rec);
	iov[1].iov_base = (void *)frame;
	iov[1].iov_len = cap;
	if (writev(pcap_fd, iov, 2) != (ssize_t)(sizeof(rec) + cap)) {
		warn_perror("pcap: write failed, capture stopped");
		close(pcap_fd);
		pcap_fd = -1;
	}
}
