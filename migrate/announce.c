// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * announce.c - after a live migration, tell the pod's network that the
 * guest is here now: a RARP, a gratuitous ARP and an unsolicited
 * Neighbour Advertisement on the host (pod) interface.
 *
 * Theory of operation
 *
 * Why: OVN, with requested-chassis=src,dst and activation-strategy=rarp
 * (what Kube-OVN and OVN-Kubernetes set during a KubeVirt migration),
 * keeps the pod's port on the target chassis blocked, and its traffic on
 * the source, until it sees a RARP *from the port on the target*. QEMU
 * sends one for the guest after a migration, but behind passt it reaches
 * us, not the pod's interface: the guest's MAC is our business, the
 * pod's interface has its own. So we send one there, from the pod
 * interface's MAC, and with it the gratuitous ARP and the unsolicited NA
 * that update the neighbours' caches for the pod's addresses (which are
 * the guest's). Without it the fabric switches on its own schedule.
 *
 * How: a packet socket (AF_PACKET, SOCK_RAW) bound to the host interface
 * with protocol 0, so it receives nothing and is never polled: we only
 * send() frames built by net/announce_frames.c. Opening it needs CAP_NET_RAW,
 * so it is opened by announce_init() before the sandbox, and only if we
 * hold the capability; the socket keeps working without it. Without it
 * (libvirt and KubeVirt start passt with no capabilities) one line says
 * so at start-up and nothing else changes. --no-announce: no socket, no
 * line.
 *
 * When ("the guest runs here now", as a migration target):
 *  - our rings start after a state LOAD was applied (the target's QEMU
 *    starts the device when the migrated guest resumes): the earliest we
 *    know, once per LOAD (announce_target_loaded(), then
 *    announce_device_started()), on the connection that made the LOAD
 *    (a target QEMU that refuses the device after it disconnects:
 *    announce_front_end_gone());
 *  - VHOST_USER_SEND_RARP (we offer VHOST_USER_PROTOCOL_F_RARP): QEMU's
 *    own announcement, a few rounds, 50 ms after the guest resumes and
 *    then every 100 ms by default, for a guest without
 *    VIRTIO_NET_F_GUEST_ANNOUNCE; also QMP's announce-self;
 *  - a RARP frame from the front-end (in stream mode, QEMU writes its
 *    announcement into the socket);
 *  - the guest's own announcement (gratuitous ARP, unsolicited NA), as a
 *    guest with VIRTIO_NET_F_GUEST_ANNOUNCE sends it when QEMU asks, for
 *    ANNOUNCE_WINDOW_MS after a LOAD only: elsewhere a guest's gratuitous
 *    ARP is just that.
 * Each is a burst of the three frames, at most one per ANNOUNCE_MIN_MS
 * (QEMU and the guest are untrusted: a flood of SEND_RARP can't become
 * a flood on the pod's link).
 *
 * Never: receive on the socket, send anything but the three frames, send
 * them for addresses other than the guest's (the ones we give it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctx.h"
#include "log.h"
#include "migrate/announce.h"
#include "net/announce_frames.h"
#include "net/packet.h"
#include "util.h"

static struct {
	int fd;			/* packet socket, -1 if none */
	unsigned ifindex;
	char ifname[IFNAMSIZ];
	uint8_t mac[ETH_ADDR_LEN];	/* the host interface's */
	bool armed;		/* a LOAD was applied, rings not started yet */
	uint64_t window_end;	/* guest announcements count until then */
	uint64_t last;		/* last burst, ms */
	unsigned bursts;	/* sent since start */
	unsigned logged;	/* bursts logged at info level, per LOAD */
} ann = { .fd = -1 };

/* Do we hold CAP_NET_RAW (effective)? */
static bool announce_cap_net_raw(void)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t cap = cap_get_proc();

	if (!cap)
		return false;
	if (cap_get_flag(cap, CAP_NET_RAW, CAP_EFFECTIVE, &v))
		v = CAP_CLEAR;
	cap_free(cap);
	return v == CAP_SET;
}

/**
 * announce_open() - the packet socket on an interface, and its MAC address
 * @ifindex:	index of the interface
 *
 * Return: 0 or -errno (logged)
 */
static int announce_open(unsigned ifindex)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = 0,	/* receive nothing */
		.sll_ifindex = (int)ifindex,
	};
	struct ifreq ifr;
	int fd, rc;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		warn_perror("Announce: can't open a packet socket");
		return rc;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ann.ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		rc = -errno;
		warn_perror("Announce: can't read the MAC address of %s",
			    ann.ifname);
		goto fail;
	}
	if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
		info("Announce: %s isn't an Ethernet interface, a migrated "
		     "guest won't be announced there", ann.ifname);
		rc = -ENOTSUP;
		goto fail;
	}
	memcpy(ann.mac, ifr.ifr_hwaddr.sa_data, ETH_ADDR_LEN);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		rc = -errno;
		warn_perror("Announce: can't bind the packet socket to %s",
			    ann.ifname);
		goto fail;
	}
	ann.fd = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

/**
 * announce_init() - open the packet socket, before the sandbox, if we may
 * @c:		execution context: --no-announce, the host interface
 */
void announce_init(struct ctx *c)
{
	if (c->no_announce)
		return;
	ann.ifindex = c->ifi4_ok && c->ifi4 ? c->ifi4 : c->ifi6;
	if (!ann.ifindex || !if_indextoname(ann.ifindex, ann.ifname)) {
		info("Announce: no host interface: a migrated guest won't be "
		     "announced");
		return;
	}
	if (!announce_cap_net_raw()) {
		info("Announce: no CAP_NET_RAW: a migrated guest can't be "
		     "announced on %s (RARP for the fabric's activation, "
		     "gratuitous ARP, unsolicited NA)", ann.ifname);
		return;
	}
	if (announce_open(ann.ifindex))
		return;
	info("Announce: a migrated guest is announced on %s "
	     "(%02x:%02x:%02x:%02x:%02x:%02x): RARP, gratuitous ARP, "
	     "unsolicited NA", ann.ifname, ann.mac[0], ann.mac[1], ann.mac[2],
	     ann.mac[3], ann.mac[4], ann.mac[5]);
}

/* Send one frame; false if it didn't go (logged, rate-limited) */
static bool announce_send(const uint8_t *f, size_t len, const char *what)
{
	ssize_t n = send(ann.fd, f, len, MSG_DONTWAIT);

	if (n == (ssize_t)len)
		return true;
	warn_rl("Announce: %s on %s: %s", what, ann.ifname,
		n < 0 ? strerror(errno) : "short write");
	return false;
}

/**
 * announce_burst() - one burst: RARP, then the addresses we give the guest
 * @c:		execution context
 * @why:	what the burst is for, for the logs
 */
static void announce_burst(const struct ctx *c, const char *why)
{
	char a4[INET_ADDRSTRLEN] = "", a6[INET6_ADDRSTRLEN] = "";
	uint8_t f[ANNOUNCE_FRAME_MAX];
	uint64_t now = now_ms();
	size_t len;

	if (ann.fd < 0)
		return;
	if (ann.bursts && now - ann.last < ANNOUNCE_MIN_MS) {
		debug_rl("Announce (%s): %llu ms after the last one, skipped",
			 why, (unsigned long long)(now - ann.last));
		return;
	}
	ann.last = now;
	ann.bursts++;

	len = announce_frame_rarp(f, sizeof(f), ann.mac);
	announce_send(f, len, "RARP");
	if (c->ifi4_ok && c->ip4.addr.s_addr) {
		len = announce_frame_garp(f, sizeof(f), ann.mac, c->ip4.addr);
		if (announce_send(f, len, "gratuitous ARP"))
			inet_ntop(AF_INET, &c->ip4.addr, a4, sizeof(a4));
	}
	if (c->ifi6_ok && !IN6_IS_ADDR_UNSPECIFIED(&c->ip6.addr) &&
	    (!c->ifi6 || c->ifi6 == ann.ifindex)) {
		len = announce_frame_na(f, sizeof(f), ann.mac, &c->ip6.addr);
		if (announce_send(f, len, "unsolicited NA"))
			inet_ntop(AF_INET6, &c->ip6.addr, a6, sizeof(a6));
	}

	if (ann.logged++ < 1)
		info("Announce (%s): RARP%s%s%s%s on %s", why,
		     a4[0] ? ", gratuitous ARP for " : "", a4,
		     a6[0] ? ", unsolicited NA for " : "", a6, ann.ifname);
	else
		debug("Announce (%s): again", why);
}

/**
 * announce_target_loaded() - a migration state LOAD was applied: the
 *			      guest will run here once our rings start
 */
void announce_target_loaded(void)
{
	ann.armed = true;
	ann.logged = 0;
	ann.window_end = now_ms() + ANNOUNCE_WINDOW_MS;
}

/**
 * announce_device_started() - the front-end started our rings: if a LOAD
 *			       came before, the migrated guest runs here
 * @c:		execution context
 */
void announce_device_started(struct ctx *c)
{
	if (!ann.armed)
		return;
	ann.armed = false;
	announce_burst(c, "the migrated guest runs here");
}

/**
 * announce_front_end_gone() - the front-end disconnected: a LOAD it made
 *			       is void (its QEMU may have refused the device
 *			       after it), and so are the guest's triggers
 */
void announce_front_end_gone(void)
{
	ann.armed = false;
	ann.window_end = 0;
}

/**
 * announce_send_rarp() - VHOST_USER_SEND_RARP: QEMU announces the guest
 * @c:		execution context
 */
void announce_send_rarp(struct ctx *c)
{
	announce_burst(c, "SEND_RARP");
}

/* Gratuitous ARP: sender and target protocol addresses equal, not 0 */
static bool announce_is_garp(const struct pkt *p)
{
	const uint8_t *spa = pv_at(p->l3, 14, 4), *tpa = pv_at(p->l3, 24, 4);
	uint16_t op;

	if (!pv_be16(p->l3, 6, &op) || (op != 1 && op != 2) || !spa || !tpa)
		return false;
	return !memcmp(spa, tpa, 4) && memcmp(spa, "\0\0\0\0", 4);
}

/* Unsolicited NA: to a multicast address, Solicited flag clear */
static bool announce_is_una(const struct pkt *p)
{
	uint8_t type, flags;

	if (p->family != AF_INET6 || p->proto != IPPROTO_ICMPV6 || p->frag ||
	    !IN6_IS_ADDR_MULTICAST(&p->dst6))
		return false;
	if (!pv_u8(p->l4, 0, &type) || !pv_u8(p->l4, 4, &flags))
		return false;
	return type == 136 && !(flags & 0x40);
}

/**
 * announce_guest_frame() - a frame from the guest side: an announcement?
 * @c:		execution context
 * @p:		parsed frame (untrusted)
 *
 * Return: true if the frame was a RARP, which only we take; gratuitous
 *	   ARPs and NAs go on to their handlers as well
 */
bool announce_guest_frame(struct ctx *c, const struct pkt *p)
{
	switch (p->ethertype) {
	case ETHTYPE_RARP:
		announce_burst(c, "RARP from the front-end");
		return true;
	case ETHTYPE_ARP:
		if (announce_is_garp(p) && now_ms() < ann.window_end)
			announce_burst(c, "the guest's gratuitous ARP");
		return false;
	case ETHTYPE_IPV6:
		if (announce_is_una(p) && now_ms() < ann.window_end)
			announce_burst(c, "the guest's unsolicited NA");
		return false;
	default:
		return false;
	}
}
