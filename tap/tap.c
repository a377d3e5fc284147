// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tap.c - the frame layer every service and protocol sends through to the
 * guest, whatever the front-end.
 *
 * Theory of operation
 *
 * Out: tap_send_ip4() / tap_send_ip6() put Ethernet and IP headers in
 * front of a layer-4 message and fill in the IP header checksum and the
 * layer-4 checksum (TCP, UDP, ICMP, ICMPv6), so no caller computes one.
 * The frame goes to the guest's learned MAC (broadcast until learned), or
 * to the Ethernet multicast address for IPv6 multicast destinations.
 * tap_seg_*() build frames in place, in the front-end's own buffers.
 *
 * In: frames from the guest don't pass here; the front-ends hand them to
 * demux.c, which learns the guest's MAC and addresses and calls their
 * owners.
 *
 * Front-ends: frames reach the guest through the struct tap_frontend
 * chosen at start (tap_frontend_set(): the stream front-end of
 * stream/stream.c or vhost-user's of vhost/net.c), never by name: an
 * operation a front-end leaves NULL is what it doesn't need (one queue
 * pair, no checksum or segmentation offload, no input left over between
 * rounds). The loop (passt.c) calls the one in use directly for its
 * events, its input and the end of its rounds: tap.c is for senders.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ctx.h"
#include "log.h"
#include "net/checksum.h"
#include "net/packet.h"
#include "tap/coalesce.h"
#include "tap/pcap.h"
#include "tap/tap.h"
#include "util.h"

/**
 * struct tap_layer - the frame layer's state
 * @fe:		the front-end in use, chosen at start
 * @buf:	where tap_send_ip4() / tap_send_ip6() build a frame
 * @ip4_id:	IPv4 identification of the last frame sent
 * @tx:		frames sent to the guest
 * @tx_fail:	frames that couldn't be
 */
static struct tap_layer {
	const struct tap_frontend *fe;
	uint8_t buf[ETH_HDR_LEN + IP6_HDR_LEN + TAP_IP_MAX];
	uint16_t ip4_id;
	uint64_t tx, tx_fail;
} tap;

/**
 * tap_frontend_set() - choose the front-end, once, before tap_init()
 * @fe:		its operations (stream_frontend, vu_frontend)
 */
void tap_frontend_set(const struct tap_frontend *fe)
{
	tap.fe = fe;
}

/**
 * tap_frontend_name() - the front-end in use, for the log
 *
 * Return: its name, "none" if none was chosen
 */
const char *tap_frontend_name(void)
{
	return tap.fe ? tap.fe->name : "none";
}

/**
 * tap_init() - set up the front-end: inherited fd or listening socket
 * @c:		execution context
 *
 * Return: 0 or -errno
 */
int tap_init(struct ctx *c)
{
	return tap.fe->init(c);
}

/**
 * tap_cleanup() - close the front-end, remove its socket file
 * @c:		execution context
 */
void tap_cleanup(struct ctx *c)
{
	tap.fe->cleanup(c);
}

/**
 * tap_connected() - is a front-end attached?
 * @c:		execution context
 *
 * Return: non-zero if frames can be sent to the guest now
 */
int tap_connected(const struct ctx *c)
{
	return tap.fe->connected(c);
}

/**
 * tap_send_frame() - send one Ethernet frame to the guest
 * @c:		execution context
 * @frame:	frame, starting with the Ethernet header
 * @len:	length; frames shorter than 60 bytes are padded
 *
 * Return: 0 or -errno (no front-end, queue full, frame too long)
 */
int tap_send_frame(struct ctx *c, const void *frame, size_t len)
{
	uint8_t pad[FRAME_MIN_LEN];
	int rc;

	if (len > FRAME_MAX_LEN)
		return -EMSGSIZE;
	if (len < FRAME_MIN_LEN) {
		memset(pad, 0, sizeof(pad));
		memcpy(pad, frame, len);
		frame = pad;
		len = FRAME_MIN_LEN;
	}
	if (c->pcap_file[0])
		pcap_frame(frame, len);
	rc = tap.fe->send(c, frame, len);
	if (rc)
		tap.tx_fail++;
	else
		tap.tx++;
	return rc;
}

static void tap_eth_hdr(const struct ctx *c, uint8_t *eth, const uint8_t *dst,
			uint16_t type)
{
	memcpy(eth, dst ? dst : c->guest_mac, ETH_ADDR_LEN);
	memcpy(eth + ETH_ADDR_LEN, c->our_mac, ETH_ADDR_LEN);
	eth[12] = type >> 8;
	eth[13] = type & 0xff;
}

/* Where the layer-4 checksum lives, -1 if the protocol has none we fill */
static int tap_l4_csum_off(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return 16;
	case IPPROTO_UDP:
		return 6;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return 2;
	default:
		return -1;
	}
}

/**
 * tap_fill_l4_csum() - fill in the checksum of a layer-4 message
 * @l4:		the message, its checksum field written
 * @l4len:	length of @l4 in bytes
 * @proto:	its protocol; nothing is written for one without a checksum
 * @pseudo:	pseudo-header sum (ignored for ICMPv4, which has none)
 *
 * Return: 0, or -EINVAL if @l4len can't hold the checksum field
 */
static int tap_fill_l4_csum(uint8_t *l4, size_t l4len, uint8_t proto,
			    uint32_t pseudo)
{
	int off = tap_l4_csum_off(proto);
	uint16_t sum;

	if (off < 0)
		return 0;
	if (l4len < (size_t)off + 2)
		return -EINVAL;
	memset(l4 + off, 0, 2);
	sum = csum(l4, l4len, proto == IPPROTO_ICMP ? 0 : pseudo);
	if (proto == IPPROTO_UDP && !sum)
		sum = 0xffff;
	memcpy(l4 + off, &sum, 2);
	return 0;
}

/**
 * tap_hdr_len() - room for Ethernet and IP headers before a layer-4 message
 * @family:	AF_INET or AF_INET6
 *
 * Return: offset of the layer-4 header in a frame built by tap_send_l4()
 */
size_t tap_hdr_len(int family)
{
	return ETH_HDR_LEN + (family == AF_INET ? IP4_HDR_LEN : IP6_HDR_LEN);
}

/**
 * tap_ip4_hdr() - write an IPv4 header, no options, DF set, next identification
 * @ip:		where the header goes, IP4_HDR_LEN bytes
 * @src:	source address
 * @dst:	destination address
 * @proto:	protocol of the payload
 * @l4len:	length of the payload in bytes
 */
static void tap_ip4_hdr(uint8_t *ip, struct in_addr src, struct in_addr dst,
			uint8_t proto, size_t l4len)
{
	uint16_t tot = (uint16_t)(IP4_HDR_LEN + l4len), sum;

	ip[0] = 0x45;
	ip[1] = 0;
	ip[2] = tot >> 8;
	ip[3] = tot & 0xff;
	tap.ip4_id++;
	ip[4] = tap.ip4_id >> 8;
	ip[5] = tap.ip4_id & 0xff;
	ip[6] = 0x40;	/* DF */
	ip[7] = 0;
	ip[8] = 64;
	ip[9] = proto;
	ip[10] = ip[11] = 0;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	sum = csum(ip, IP4_HDR_LEN, 0);
	memcpy(ip + 10, &sum, 2);
}

static void tap_ip6_hdr(uint8_t *ip, const struct in6_addr *src,
			const struct in6_addr *dst, uint8_t proto,
			size_t l4len)
{
	memset(ip, 0, 4);
	ip[0] = 0x60;
	ip[4] = (l4len >> 8) & 0xff;
	ip[5] = l4len & 0xff;
	ip[6] = proto;
	ip[7] = 255;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
}

/**
 * tap_l3_hdrs() - Ethernet and IP headers in front of a layer-4 message
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @src:	source address, struct in_addr or struct in6_addr
 * @dst:	destination address, of the same family
 * @proto:	protocol of the layer-4 message
 * @frame:	the frame, headers written at its start
 * @l4len:	length of the layer-4 message in bytes
 *
 * Return: the pseudo-header sum for the layer-4 checksum, -1 if @l4len is too
 *	long
 */
static int64_t tap_l3_hdrs(const struct ctx *c, int family, const void *src,
			   const void *dst, uint8_t proto, uint8_t *frame,
			   size_t l4len)
{
	uint8_t *ip = frame + ETH_HDR_LEN;
	uint8_t mcast[ETH_ADDR_LEN] = { 0x33, 0x33 };

	if (family == AF_INET) {
		struct in_addr s4, d4;

		if (l4len > TAP_IP_MAX - IP4_HDR_LEN)
			return -1;
		memcpy(&s4, src, 4);
		memcpy(&d4, dst, 4);
		tap_eth_hdr(c, frame, NULL, ETHTYPE_IP);
		tap_ip4_hdr(ip, s4, d4, proto, l4len);
		return csum_pseudo4(s4, d4, proto, (uint16_t)l4len);
	} else {
		const struct in6_addr *d6 = dst;

		if (l4len > TAP_IP_MAX)
			return -1;
		if (d6->s6_addr[0] == 0xff) {
			memcpy(mcast + 2, &d6->s6_addr[12], 4);
			tap_eth_hdr(c, frame, mcast, ETHTYPE_IPV6);
		} else {
			tap_eth_hdr(c, frame, NULL, ETHTYPE_IPV6);
		}
		tap_ip6_hdr(ip, src, d6, proto, l4len);
		return csum_pseudo6(src, d6, proto, (uint32_t)l4len);
	}
}

/**
 * tap_send_l4() - add headers and checksums to a layer-4 message in place,
 *		   and send the frame to the guest
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @src:	source address (struct in_addr or struct in6_addr)
 * @dst:	destination address; IPv6 multicast maps to 33:33:xx:xx:xx:xx
 * @proto:	layer-4 protocol
 * @frame:	buffer whose layer-4 message starts at tap_hdr_len(@family)
 * @l4len:	length of the layer-4 message (its checksum is overwritten)
 *
 * Return: 0 or -errno
 */
int tap_send_l4(struct ctx *c, int family, const void *src, const void *dst,
		uint8_t proto, uint8_t *frame, size_t l4len)
{
	int64_t pseudo = tap_l3_hdrs(c, family, src, dst, proto, frame, l4len);

	if (pseudo < 0)
		return -EMSGSIZE;
	if (tap_fill_l4_csum(frame + tap_hdr_len(family), l4len, proto,
			     (uint32_t)pseudo))
		return -EINVAL;
	return tap_send_frame(c, frame, tap_hdr_len(family) + l4len);
}

/**
 * tap_seg_reserve() - reserve frames to be built in place
 * @c:		execution context
 * @hlen:	bytes of headers, from Ethernet on, each frame needs
 *		contiguous at tap_seg.l2
 * @plen:	payload bytes each frame may carry at most
 * @n:		frames wanted
 * @seg:	filled with the frames reserved
 * @iov:	filled with their payload pieces, in order: a socket read
 *		into @iov fills the frames one after the other
 * @iov_max:	room in @iov
 *
 * Every frame reserved can take exactly @plen bytes of payload (tap_seg.cap)
 * in its pieces, and all pieces fit @iov_max: a frame the front-end can't
 * give that much room isn't reserved. Nothing else may be sent to the guest
 * between this and tap_seg_done().
 *
 * Return: number of frames reserved, 0 if the front-end has no room now
 */
unsigned tap_seg_reserve(struct ctx *c, size_t hlen, size_t plen, unsigned n,
			 struct tap_seg *seg, struct iovec *iov,
			 unsigned iov_max)
{
	return tap.fe->reserve(c, hlen, plen, n, seg, iov, iov_max);
}

/**
 * tap_seg_trim() - limit what a socket read into reserved frames may fill
 * @seg:	frames from tap_seg_reserve()
 * @nseg:	how many
 * @iov:	the iovec array given to tap_seg_reserve(): the frames' payload
 *		pieces, in order, which are trimmed to @max bytes in all
 * @max:	in: bytes wanted at most; out: bytes the pieces now hold
 *
 * Only the frames' own pieces are looked at, whatever @max says.
 *
 * Return: number of pieces to read into, from @iov on
 */
unsigned tap_seg_trim(const struct tap_seg *seg, unsigned nseg,
		      struct iovec *iov, size_t *max)
{
	unsigned s, i, end = 0;
	size_t got = 0;

	for (s = 0; s < nseg && got < *max; s++) {
		for (i = seg[s].iov;
		     i < seg[s].iov + seg[s].niov && got < *max; i++) {
			if (iov[i].iov_len > *max - got)
				iov[i].iov_len = *max - got;
			got += iov[i].iov_len;
			end = i + 1;
		}
	}
	*max = got;
	return end;
}

/**
 * tap_seg_send() - complete a reserved frame and send it
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @src:	source address (struct in_addr or struct in6_addr)
 * @dst:	destination address
 * @proto:	layer-4 protocol
 * @seg:	frame, with the layer-4 header written at tap_hdr_len(@family)
 * @iov:	the iovec array given to tap_seg_reserve()
 * @l4hlen:	length of the layer-4 header
 * @plen:	payload bytes in the frame; only the last frame sent may be
 *		shorter than its capacity
 * @gso_size:	for a TCP frame carrying more than the guest's MSS (see
 *		tap_seg_tcp_max()), the MSS; else 0
 *
 * Return: 0 or -errno
 */
int tap_seg_send(struct ctx *c, int family, const void *src, const void *dst,
		 uint8_t proto, struct tap_seg *seg, const struct iovec *iov,
		 size_t l4hlen, size_t plen, uint16_t gso_size)
{
	size_t hdr = tap_hdr_len(family), len = hdr + l4hlen + plen;
	uint8_t *l4 = seg->l2 + hdr;
	int off = tap_l4_csum_off(proto);
	int64_t pseudo;
	uint32_t sum;
	uint16_t s16;
	int rc;

	pseudo = tap_l3_hdrs(c, family, src, dst, proto, seg->l2,
			     l4hlen + plen);
	if (pseudo < 0 || off < 0 || l4hlen < (size_t)off + 2)
		return -EINVAL;

	memset(l4 + off, 0, 2);
	if (tap.fe->csum_partial && tap.fe->csum_partial(c)) {
		/* The guest completes it, or trusts it (virtio NEEDS_CSUM) */
		s16 = htons((uint16_t)~ntohs(csum_fold((uint32_t)pseudo)));
		memcpy(l4 + off, &s16, 2);
		rc = tap.fe->commit(c, seg, iov, len, (uint16_t)hdr,
				    (uint16_t)off,
				    plen > gso_size ? gso_size : 0, family);
	} else {
		sum = csum_add((uint32_t)pseudo, l4, l4hlen);
		sum = csum_add_iov(sum, iov + seg->iov, seg->niov, plen);
		s16 = csum_fold(sum);
		if (proto == IPPROTO_UDP && !s16)
			s16 = 0xffff;
		memcpy(l4 + off, &s16, 2);
		rc = tap.fe->commit(c, seg, iov, len, 0, 0, 0, family);
	}
	if (rc)
		tap.tx_fail++;
	else
		tap.tx++;
	return rc;
}

/**
 * tap_seg_tcp_max() - TCP payload one frame to the guest may carry
 * @c:		execution context
 * @family:	AF_INET or AF_INET6
 * @mss:	the guest's MSS on the connection
 *
 * Return: @mss, or up to a 64 KiB IP packet's worth if the front-end can
 *	   hand the guest larger segments (vhost-user with GUEST_TSO), which
 *	   must then be sent with tap_seg_send()'s @gso_size set to @mss
 */
size_t tap_seg_tcp_max(const struct ctx *c, int family, size_t mss)
{
	/* IPv4's 16-bit length counts its header, IPv6's doesn't */
	size_t max = 65535 - TCP_HDR_LEN -
		     (family == AF_INET ? IP4_HDR_LEN : 0);

	if (!tap.fe->gso || !tap.fe->gso(c, family) || mss >= max)
		return mss;
	return max / mss * mss;
}

/**
 * tap_seg_done() - give back what was reserved and not sent
 * @c:		execution context
 */
void tap_seg_done(struct ctx *c)
{
	if (tap.fe->done)
		tap.fe->done(c);
}

/**
 * tap_send_ip4() - send an IPv4 packet to the guest
 * @c:		execution context
 * @src:	source address
 * @dst:	destination address
 * @proto:	layer-4 protocol
 * @l4:		layer-4 header and payload (checksum field is overwritten)
 * @l4len:	its length
 *
 * Return: 0 or -errno
 */
int tap_send_ip4(struct ctx *c, struct in_addr src, struct in_addr dst,
		 uint8_t proto, const void *l4, size_t l4len)
{
	if (l4len > TAP_IP_MAX - IP4_HDR_LEN)
		return -EMSGSIZE;
	memcpy(tap.buf + tap_hdr_len(AF_INET), l4, l4len);
	return tap_send_l4(c, AF_INET, &src, &dst, proto, tap.buf, l4len);
}

/**
 * tap_send_ip6() - send an IPv6 packet to the guest (hop limit 255)
 * @c:		execution context
 * @src:	source address
 * @dst:	destination address; multicast maps to 33:33:xx:xx:xx:xx
 * @proto:	layer-4 protocol (next header)
 * @l4:		layer-4 header and payload (checksum field is overwritten)
 * @l4len:	its length
 *
 * Return: 0 or -errno
 */
int tap_send_ip6(struct ctx *c, const struct in6_addr *src,
		 const struct in6_addr *dst, uint8_t proto, const void *l4,
		 size_t l4len)
{
	if (l4len > TAP_IP_MAX)
		return -EMSGSIZE;
	memcpy(tap.buf + tap_hdr_len(AF_INET6), l4, l4len);
	return tap_send_l4(c, AF_INET6, src, dst, proto, tap.buf, l4len);
}

/**
 * tap_log_stats() - report the front-end's counters and coalescing; the
 *		     frames' own line is demux_log_stats()'s
 * @tx:		frames sent to the guest, set
 * @tx_fail:	frames that couldn't be, set
 */
void tap_log_stats(uint64_t *tx, uint64_t *tx_fail)
{
	if (tap.fe && tap.fe->log_stats)
		tap.fe->log_stats();
	coalesce_log_stats();
	*tx = tap.tx;
	*tx_fail = tap.tx_fail;
}

/**
 * tap_tx_room() - bytes that can be queued for the guest right now
 * @c:		execution context
 *
 * Return: free room in the front-end's queue (with vhost-user queue pairs,
 *	   the most any RX ring has), 0 without a front-end
 */
size_t tap_tx_room(const struct ctx *c)
{
	return tap.fe->room(c);
}

/**
 * tap_queue_in() - the front-end queue pair the frame being handled came in
 *		    on (vhost-user multiqueue; 0 otherwise)
 *
 * Return: pair index, to give to tap_queue_out() for the same flow
 */
uint8_t tap_queue_in(void)
{
	return tap.fe->queue_in ? (uint8_t)tap.fe->queue_in() : 0;
}

/**
 * tap_queue_out() - send what follows on the queue pair a flow's guest
 *		     frames came in on (see vhost/net.c, "Queue pairs")
 * @pair:	pair from tap_queue_in(), 0 for a flow the guest didn't use
 */
void tap_queue_out(uint8_t pair)
{
	if (tap.fe->queue_out)
		tap.fe->queue_out(pair);
}

/**
 * tap_rx_kicks() - does anything wait for the guest to make room?
 * @c:		execution context
 * @waiting:	true while something does
 *
 * vhost-user: the guest is asked to kick us for new RX buffers only then
 * (the stream front-end has EPOLLOUT for this, see stream_out.c).
 *
 * Return: true if that just changed to asking: look at tap_tx_room() again
 */
bool tap_rx_kicks(struct ctx *c, bool waiting)
{
	return tap.fe->kicks && tap.fe->kicks(c, waiting);
}

/**
 * tap_flush() - end of a loop round: push queued frames to the front-end
 *		 (or queue that on the io_uring, for the loop's wait); the
 *		 fuzz harnesses' rounds end here, passt.c's call the
 *		 front-end itself
 * @c:		execution context
 */
void tap_flush(struct ctx *c)
{
	tap.fe->flush(c);
}
