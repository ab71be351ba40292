/*
 * parent_ha_dup.c -- split brain: is another box answering for the
 * pair's shared uplink address (gateway.ha.uplink_address) while this
 * one is master?
 *
 * Two masters at once happen when the boxes stop hearing each other
 * (the peer link is cut) and both keep their uplink.  Each then holds
 * the shared addresses; the policy stands on both, so nothing opens,
 * but the guests' flows and the uplink's replies go to either box.
 * While this box is master, every PROBE_MS it asks who has the shared
 * uplink address, as a host checking for a duplicate does (RFC 5227: an
 * ARP request from 0.0.0.0, which changes nobody's ARP cache).  Only a
 * box holding the address answers, and this one does not answer
 * itself: an answer means another master.  ctl status, the metrics and
 * the audit log say so.  The main loop polls the socket (ha_dup_fd) and
 * wakes for the next probe (ha_dup_timeout, ha_dup_tick).
 *
 * The kernel filter takes only ARP replies for that address on the
 * uplink, of their exact shape; the parent copies the sender's MAC out
 * of such a frame and reads nothing else.  Sending and reading never
 * block (a non-blocking packet socket, read from the event loop).
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

#define PROBE_MS	1000	/* between two probes while master */
#define DUP_HOLD	3	/* s a seen answer counts as current */

struct arp4 {			/* an Ethernet/IPv4 ARP packet */
	uint16_t	htype, ptype;
	uint8_t		hlen, plen;
	uint16_t	op;
	uint8_t		sha[6], spa[4], tha[6], tpa[4];
} __attribute__((packed));

struct ha_dup {
	int		 fd;
	int		 ifindex;
	uint8_t		 mac[6];	/* the uplink's own */
	uint8_t		 addr[4];	/* the shared uplink address */
	uint64_t	 next_ms;	/* the next probe, gw_mono_ms() */
	uint8_t		 other[6];	/* the last answer's sender */
	time_t		 seen;		/* and when (0: never) */
	time_t		 first;		/* start of the current episode */
	uint64_t	 answers;
};

/* ARP reply, Ethernet/IPv4, sender protocol address == addr. */
static int
attach_filter(int fd, const uint8_t addr[4])
{
	uint32_t spa;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, sizeof(struct arp4), 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),	/* htype, ptype */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x00010800, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),	/* hlen plen op */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x06040002, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 14),	/* spa */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, sizeof(struct arp4)),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	memcpy(&spa, addr, 4);
	f[7].k = ntohl(spa);
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
	    sizeof(prog));
}

void
ha_dup_readable(struct gw *gw)
{
	struct ha_dup *d = gw->ha_dup;
	struct arp4 a;
	char mac[18], addr[INET_ADDRSTRLEN];
	ssize_t n;
	time_t now = time(NULL);

	if (d == NULL)
		return;
	while ((n = recv(d->fd, &a, sizeof(a), 0)) >= 0) {
		/* Not our own reply (none is sent to our probe), and only
		 * while this box claims the address. */
		if ((size_t)n < sizeof(a) || memcmp(a.sha, d->mac, 6) == 0 ||
		    gw->ha_role != HA_MASTER)
			continue;
		d->answers++;
		if (d->seen == 0 || now - d->seen > DUP_HOLD) {
			d->first = now;
			snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
			    a.sha[0], a.sha[1], a.sha[2], a.sha[3], a.sha[4],
			    a.sha[5]);
			inet_ntop(AF_INET, d->addr, addr, sizeof(addr));
			log_warnx("ha: split brain: %s is also held by %s, "
			    "another master", addr, mac);
			audit_event(gw, "ha-split-brain", "address", addr,
			    "mac", mac, NULL);
		}
		memcpy(d->other, a.sha, 6);
		d->seen = now;
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		log_warn("ha: reading ARP on the uplink");
}

void
ha_dup_tick(struct gw *gw)
{
	struct ha_dup *d = gw->ha_dup;
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ARP),
		.sll_halen = 6,
		.sll_addr = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	};
	struct arp4 a = {
		.htype = htons(ARPHRD_ETHER), .ptype = htons(ETH_P_IP),
		.hlen = 6, .plen = 4, .op = htons(ARPOP_REQUEST),
	};

	if (d == NULL || gw_mono_ms() < d->next_ms)
		return;
	if (gw->ha_role == HA_MASTER) {
		to.sll_ifindex = d->ifindex;
		memcpy(a.sha, d->mac, 6);
		memcpy(a.tpa, d->addr, 4);
		/* Lost now and then is fine: the next one is a second away. */
		(void)sendto(d->fd, &a, sizeof(a), MSG_DONTWAIT,
		    (struct sockaddr *)&to, sizeof(to));
	}
	d->next_ms = gw_mono_ms() + PROBE_MS;
}

int
ha_dup_fd(const struct gw *gw)
{
	return gw->ha_dup != NULL ? gw->ha_dup->fd : -1;
}

int
ha_dup_timeout(const struct gw *gw, int timeout)
{
	uint64_t now = gw_mono_ms(), next;

	if (gw->ha_dup == NULL)
		return timeout;
	next = gw->ha_dup->next_ms <= now ? 0 : gw->ha_dup->next_ms - now;
	return timeout >= 0 && (uint64_t)timeout < next ? timeout : (int)next;
}

/* With gateway.ha and its uplink_address: open the watch.  A failure is
 * logged and leaves the box without it (it changes no decision). */
void
ha_dup_start(struct gw *gw)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	struct ha_dup *d;
	struct ifreq ifr;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
	    .sll_protocol = htons(ETH_P_ARP) };

	if (!gw->ha_on || g->ha_uplink_address.family != AF_INET)
		return;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		fatal("calloc");
	memcpy(d->addr, g->ha_uplink_address.a, 4);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g->uplink);
	d->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (d->fd == -1 || attach_filter(d->fd, d->addr) == -1 ||
	    (d->ifindex = (int)if_nametoindex(g->uplink)) == 0 ||
	    ioctl(d->fd, SIOCGIFHWADDR, &ifr) == -1) {
		log_warn("ha: no split-brain watch on %s", g->uplink);
		goto fail;
	}
	memcpy(d->mac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_ifindex = d->ifindex;
	/* Protocol 0 until the filter is on: nothing queued unfiltered. */
	if (bind(d->fd, (struct sockaddr *)&sll, sizeof(sll)) == -1) {
		log_warn("ha: no split-brain watch on %s", g->uplink);
		goto fail;
	}
	d->next_ms = gw_mono_ms() + PROBE_MS;
	gw->ha_dup = d;
	return;
fail:
	if (d->fd != -1)
		close(d->fd);
	free(d);
}

void
ha_dup_stop(struct gw *gw)
{
	struct ha_dup *d = gw->ha_dup;

	if (d == NULL)
		return;
	close(d->fd);
	free(d);
	gw->ha_dup = NULL;
}

/* Another master answered within the last DUP_HOLD seconds. */
bool
ha_dup_now(const struct gw *gw, char *mac, size_t maclen, time_t *first)
{
	const struct ha_dup *d = gw->ha_dup;

	if (d == NULL || d->seen == 0 || time(NULL) - d->seen > DUP_HOLD ||
	    gw->ha_role != HA_MASTER)
		return false;
	snprintf(mac, maclen, "%02x:%02x:%02x:%02x:%02x:%02x", d->other[0],
	    d->other[1], d->other[2], d->other[3], d->other[4], d->other[5]);
	*first = d->first;
	return true;
}
