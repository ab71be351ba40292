/*
 * discover.c -- what the guest can learn about its own network without
 * sending a packet: addresses, default routes, IPv6 routes, resolvers and
 * the neighbour table.  /proc/net follows the reader's network namespace,
 * so this is right inside a test namespace too; /etc/resolv.conf is not,
 * which is why reading it is the caller's choice.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cc.h"
#include "log.h"

static void
add_nic(struct cc_disc *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->nnics; i++)
		if (strcmp(d->nics[i], name) == 0)
			return;
	if (d->nnics < CC_MAXIF)
		snprintf(d->nics[d->nnics++], sizeof(d->nics[0]), "%s", name);
}

static void
discover_ifaces(struct cc_disc *d)
{
	struct ifaddrs *ifa, *i;
	struct cc_iface *f;

	if (getifaddrs(&ifa) == -1) {
		log_warn("getifaddrs");
		return;
	}
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || (i->ifa_flags & IFF_LOOPBACK) ||
		    !(i->ifa_flags & IFF_UP))
			continue;
		add_nic(d, i->ifa_name);
		if (i->ifa_addr->sa_family == AF_INET && d->nv4 < CC_MAXIF)
			f = &d->v4[d->nv4++];
		else if (i->ifa_addr->sa_family == AF_INET6 &&
		    d->nv6 < CC_MAXIF)
			f = &d->v6[d->nv6++];
		else
			continue;
		snprintf(f->name, sizeof(f->name), "%s", i->ifa_name);
		(void)addr_from_sockaddr(
		    (const struct sockaddr_storage *)(void *)i->ifa_addr, &f->addr);
		f->plen = addr_mask_plen(i->ifa_netmask, f->addr.family);
		if (f->plen < 0)
			f->plen = 0;
		f->index = if_nametoindex(i->ifa_name);
	}
	freeifaddrs(ifa);
}

/* /proc/net/route: Iface Destination Gateway Flags ... Mask, hex, host order
 * of the kernel, which is the same byte order as the address itself. */
static void
discover_route4(struct cc_disc *d)
{
	char line[256], ifn[16];
	unsigned dst, gw, flags, mask;
	FILE *f;

	if ((f = fopen("/proc/net/route", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%15s %x %x %x %*d %*d %*d %x", ifn, &dst, &gw,
		    &flags, &mask) != 5 || dst != 0 || mask != 0)
			continue;
		if (d->ndefault4++ == 0 && gw != 0) {
			d->gateway.family = AF_INET;
			memcpy(d->gateway.a, &gw, 4);
			snprintf(d->gw_ifname, sizeof(d->gw_ifname), "%s", ifn);
			d->gw_ifindex = if_nametoindex(ifn);
		}
	}
	fclose(f);
}

static int
hex16(const char *s, uint8_t out[16])
{
	unsigned v;
	int i;

	for (i = 0; i < 16; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static bool
addr_is_zero6(const struct moat_addr *a)
{
	static const uint8_t zero[16];

	return memcmp(a->a, zero, 16) == 0;
}

/* /proc/net/ipv6_route: dst dlen src slen nexthop metric ref use flags if.
 * A route into 2000::/3 (or a default route) not on loopback is a way out. */
static void
discover_route6(struct cc_disc *d)
{
	char dst[33], nh[33], ifn[32], line[256];
	unsigned dlen, flags;
	struct moat_addr a, n;
	char b1[INET6_ADDRSTRLEN], b2[INET6_ADDRSTRLEN];
	FILE *f;

	if ((f = fopen("/proc/net/ipv6_route", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%32s %x %*s %*s %32s %*s %*s %*s %x %31s",
		    dst, &dlen, nh, &flags, ifn) != 5 || strcmp(ifn, "lo") == 0)
			continue;
		memset(&a, 0, sizeof(a));
		memset(&n, 0, sizeof(n));
		a.family = n.family = AF_INET6;
		if (hex16(dst, a.a) == -1 || hex16(nh, n.a) == -1)
			continue;
		if (dlen == 0)
			d->ndefault6++;
		else if ((a.a[0] & 0xe0) != 0x20)
			continue;
		/* Beyond the guest's own link: a next hop, or wider than
		 * a /64 (a point-to-point device). */
		if (!addr_is_zero6(&n) || dlen < 64)
			d->nout6++;
		if (!addr_is_zero6(&n) && d->gw6.family == AF_UNSPEC) {
			d->gw6 = n;
			d->gw6_ifindex = if_nametoindex(ifn);
		}
		if (d->nglobal6++ == 0)
			snprintf(d->route6, sizeof(d->route6), "%s/%u via %s dev %s",
			    addr_fmt(&a, b1, sizeof(b1)), dlen,
			    addr_fmt(&n, b2, sizeof(b2)), ifn);
	}
	fclose(f);
}

static void
discover_resolv(struct cc_disc *d)
{
	char line[512], ns[INET6_ADDRSTRLEN + 1];
	FILE *f;

	if ((f = fopen("/etc/resolv.conf", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL && d->nns < CC_MAXNS) {
		if (sscanf(line, " nameserver %46s", ns) == 1 &&
		    addr_parse(ns, &d->ns[d->nns]) == 0)
			d->nns++;
	}
	fclose(f);
}

/* Our MAC on the gateway's interface, for the anti-spoofing probe. */
static void
discover_if_mac(struct cc_disc *d)
{
	struct ifreq ifr;
	int fd;

	if (d->gw_ifname[0] == '\0' ||
	    (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", d->gw_ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0 &&
	    ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER) {
		memcpy(d->gw_if_mac, ifr.ifr_hwaddr.sa_data, 6);
		d->has_if_mac = true;
	}
	close(fd);
}

void
discover(struct cc_disc *d, bool read_resolv)
{
	memset(d, 0, sizeof(*d));
	d->gateway.family = AF_UNSPEC;
	d->gw6.family = AF_UNSPEC;
	discover_ifaces(d);
	discover_route4(d);
	discover_if_mac(d);
	discover_route6(d);
	if (read_resolv)
		discover_resolv(d);
}

/* The gateway: its IPv4 address, or the IPv6 default route's next hop
 * when that is a routable address (the gateway's global or unique-local
 * one, where its resolver and proxy answer as on its IPv4 one). */
bool
disc_is_gateway(const struct cc_disc *d, const struct moat_addr *a)
{
	if (d->gateway.family != AF_UNSPEC && addr_cmp(a, &d->gateway) == 0)
		return true;
	return a->family == AF_INET6 && d->gw6.family == AF_INET6 &&
	    !(d->gw6.a[0] == 0xfe && (d->gw6.a[1] & 0xc0) == 0x80) &&
	    addr_cmp(a, &d->gw6) == 0;
}

bool
disc_is_self(const struct cc_disc *d, const struct moat_addr *a)
{
	size_t i;

	for (i = 0; i < d->nv4; i++)
		if (addr_cmp(&d->v4[i].addr, a) == 0)
			return true;
	for (i = 0; i < d->nv6; i++)
		if (addr_cmp(&d->v6[i].addr, a) == 0)
			return true;
	return false;
}

/* One RTM_NEWNEIGH from the dump; entries that are failed or incomplete
 * say nothing about who is there. */
static void
neigh_msg(struct cc_disc *d, const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	const struct rtattr *rta;
	struct cc_neigh *n;
	int len;

	if (d->nneigh >= CC_MAXNEIGH ||
	    (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) ||
	    (nd->ndm_state & (NUD_FAILED | NUD_INCOMPLETE | NUD_NOARP)))
		return;
	n = &d->neigh[d->nneigh];
	memset(n, 0, sizeof(*n));
	n->addr.family = AF_UNSPEC;
	n->ifindex = (unsigned)nd->ndm_ifindex;
	n->router = (nd->ndm_flags & NTF_ROUTER) != 0;
	len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*nd));
	for (rta = (const struct rtattr *)((const char *)nd +
	    NLMSG_ALIGN(sizeof(*nd))); RTA_OK(rta, len);
	    rta = RTA_NEXT(rta, len)) {
		if (rta->rta_type == NDA_DST && (RTA_PAYLOAD(rta) == 4 ||
		    RTA_PAYLOAD(rta) == 16)) {
			n->addr.family = nd->ndm_family;
			memcpy(n->addr.a, RTA_DATA(rta), RTA_PAYLOAD(rta));
		} else if (rta->rta_type == NDA_LLADDR &&
		    RTA_PAYLOAD(rta) == 6) {
			memcpy(n->lladdr, RTA_DATA(rta), 6);
			n->has_ll = true;
		}
	}
	if (n->addr.family != AF_UNSPEC)
		d->nneigh++;
}

static int
neigh_read(struct cc_disc *d, int fd)
{
	char buf[16384];
	struct nlmsghdr *h;
	ssize_t n;

	for (;;) {
		if ((n = recv(fd, buf, sizeof(buf), 0)) <= 0)
			return -1;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		    h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return -1;
			if (h->nlmsg_type == RTM_NEWNEIGH &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ndmsg)))
				neigh_msg(d, h);
		}
	}
}

/* The neighbour table, both families, by one netlink dump.  Called after
 * the first probes so that the gateway's entry exists. */
void
discover_neigh(struct cc_disc *d)
{
	struct {
		struct nlmsghdr	h;
		struct ndmsg	nd;
	} req;
	struct timeval tv = { .tv_sec = 2 };
	int fd;

	d->nneigh = 0;
	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
	    NETLINK_ROUTE)) == -1) {
		log_warn("netlink socket");
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = RTM_GETNEIGH;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = 1;
	req.nd.ndm_family = AF_UNSPEC;
	if (send(fd, &req, sizeof(req), 0) == -1 || neigh_read(d, fd) == -1)
		log_warnx("could not read the neighbour table");
	close(fd);
}

/* A unique local address counts: behind moat's nat66 a guest has one
 * and reaches the IPv6 internet through the gateway's masquerade.  The
 * route beyond the link (nout6: a default route or one into 2000::/3)
 * is what says the way out is meant; a ULA network without internet
 * advertises neither. */
bool
disc_has_v6(const struct cc_disc *d)
{
	size_t i;

	if (d->nout6 == 0)
		return false;
	for (i = 0; i < d->nv6; i++)
		if ((d->v6[i].addr.a[0] & 0xe0) == 0x20 ||
		    (d->v6[i].addr.a[0] & 0xfe) == 0xfc)
			return true;
	return false;
}
