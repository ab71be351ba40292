/*
 * config_host.c -- a valid configuration checked against the host that is
 * to run it: the uplink is one of the host's interfaces, and the sandbox
 * network (and gateway.ipv6's /64) is not a network the host already has
 * on an interface other than the bridge (guests would then shadow the LAN, or the LAN the
 * guests, and the private-range rules would judge the wrong hosts).
 *
 * config_check_host() is pure: the interfaces come as an argument, so a
 * test hands it any host it likes; config_host_read() reads this host's.
 * gatewayd runs both for -n, at start and on every reload.
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"

static void host_err(struct moat_errors *, const struct moat_where *,
    const char *, ...) __attribute__((format(printf, 3, 4)));

static void
host_err(struct moat_errors *e, const struct moat_where *w, const char *fmt,
    ...)
{
	char *msg;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	e->msg = xreallocarray(e->msg, e->n + 1, sizeof(char *));
	xasprintf(&e->msg[e->n++], "%s:%d: %s", w->file ? w->file : "?",
	    w->line, msg);
	free(msg);
}

/* "lo, eth0, wlan0": each interface once, in the order given. */
static void
if_names(const struct moat_hostif *ifs, size_t n, char *buf, size_t len)
{
	size_t i, j, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(ifs[i].name, ifs[j].name) == 0)
				break;
		if (j == i)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
			    used ? ", " : "", ifs[i].name);
	}
	if (used == 0)
		snprintf(buf, len, "none");
}

static void
check_uplink(const struct moat_config *cfg, const struct moat_hostif *ifs,
    size_t n, struct moat_errors *e)
{
	const struct moat_gateway *gw = &cfg->gw;
	const char *def = NULL;
	char names[512];
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(ifs[i].name, gw->uplink) == 0)
			return;
		if (ifs[i].default_route && def == NULL)
			def = ifs[i].name;
	}
	if_names(ifs, n, names, sizeof(names));
	/* The fix-it line: the shipped "eth0" is wrong on most hardware. */
	if (def != NULL)
		host_err(e, &gw->uplink_where, "gateway: uplink: no interface "
		    "\"%s\" on this host (it has: %s); the default route "
		    "leaves through %s: set uplink = \"%s\";", gw->uplink,
		    names, def, def);
	else
		host_err(e, &gw->uplink_where, "gateway: uplink: no interface "
		    "\"%s\" on this host (it has: %s) and no IPv4 default "
		    "route; set uplink to the interface towards the internet, "
		    "the one `ip route show default` will name", gw->uplink,
		    names);
}

/* One sandbox network (IPv4 or IPv6) against every interface's. */
static void
check_net(const struct moat_gateway *gw, const struct moat_prefix *p,
    const struct moat_where *w, const char *key,
    const struct moat_hostif *ifs, size_t n, struct moat_errors *e)
{
	char net[64], theirs[64], addr[INET6_ADDRSTRLEN];
	size_t i;

	if (p->plen == 0)
		return;
	prefix_fmt(p, net, sizeof(net));
	for (i = 0; i < n; i++) {
		if (ifs[i].net.plen == 0 || strcmp(ifs[i].name, gw->bridge) == 0 ||
		    !prefix_overlaps(&ifs[i].net, p))
			continue;
		prefix_fmt(&ifs[i].net, theirs, sizeof(theirs));
		addr_fmt(&ifs[i].addr, addr, sizeof(addr));
		host_err(e, w, "gateway: %s: %s overlaps %s, the network of "
		    "%s/%d on interface %s (expected a sandbox network that no "
		    "interface but the bridge %s uses)", key, net, theirs, addr,
		    ifs[i].net.plen, ifs[i].name, gw->bridge);
	}
}

static void
check_network(const struct moat_config *cfg, const struct moat_hostif *ifs,
    size_t n, struct moat_errors *e)
{
	const struct moat_gateway *gw = &cfg->gw;

	check_net(gw, &gw->network, &gw->network_where, "network", ifs, n, e);
	if (gw->ipv6)
		check_net(gw, &gw->ipv6_network, &gw->ipv6_where,
		    "ipv6: network", ifs, n, e);
}

static const struct host_check {
	const char	*what;
	void		(*fn)(const struct moat_config *,
			    const struct moat_hostif *, size_t,
			    struct moat_errors *);
} host_checks[] = {
	{ "the uplink exists", check_uplink },
	{ "the sandbox network is the bridge's alone", check_network },
};

size_t
config_check_host(const struct moat_config *cfg,
    const struct moat_hostif *ifs, size_t n, struct moat_errors *e)
{
	size_t i, before = e->n;

	for (i = 0; i < sizeof(host_checks) / sizeof(host_checks[0]); i++)
		host_checks[i].fn(cfg, ifs, n, e);
	return e->n - before;
}

/* The network of an address with prefix length plen. */
static void
network_of(const struct moat_addr *a, int plen, struct moat_prefix *p)
{
	int b, bits = a->family == AF_INET ? 32 : 128;

	memset(p, 0, sizeof(*p));
	p->addr = *a;
	for (b = plen; b < bits; b++)
		p->addr.a[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
	p->plen = plen;
}

int
config_host_default_if(char *name, size_t len)
{
	char line[256], ifn[IFNAMSIZ + 1];
	unsigned long dst, gwy, mask, metric, best = ~0UL;
	unsigned int flags;
	FILE *fp;

	if ((fp = fopen("/proc/net/route", "re")) == NULL)
		return -1;
	name[0] = '\0';
	/* Iface Destination Gateway Flags RefCnt Use Metric Mask ... (hex) */
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (sscanf(line, "%16s %lx %lx %x %*d %*d %lu %lx", ifn, &dst,
		    &gwy, &flags, &metric, &mask) != 6 || dst != 0 ||
		    mask != 0 || !(flags & 0x1) || metric >= best)
			continue;	/* 0x1: RTF_UP */
		best = metric;
		snprintf(name, len, "%s", ifn);
	}
	fclose(fp);
	return name[0] != '\0' ? 0 : -1;
}

int
config_host_read(struct moat_hostif **out, size_t *nout)
{
	struct ifaddrs *ifa, *i;
	struct moat_hostif *v = NULL, *h;
	char def[IFNAMSIZ] = "";
	size_t n = 0;
	int plen;

	if (getifaddrs(&ifa) == -1)
		return -1;
	(void)config_host_default_if(def, sizeof(def));
	for (i = ifa; i != NULL; i = i->ifa_next) {
		v = xreallocarray(v, n + 1, sizeof(*v));
		h = &v[n++];
		memset(h, 0, sizeof(*h));
		snprintf(h->name, sizeof(h->name), "%s", i->ifa_name);
		h->default_route = def[0] != '\0' && strcmp(def, h->name) == 0;
		if (i->ifa_addr == NULL || (i->ifa_addr->sa_family != AF_INET &&
		    i->ifa_addr->sa_family != AF_INET6) ||
		    addr_from_sockaddr((const struct sockaddr_storage *)
		    (const void *)i->ifa_addr, &h->addr) == -1 ||
		    (plen = addr_mask_plen(i->ifa_netmask,
		    i->ifa_addr->sa_family)) < 0)
			continue;
		network_of(&h->addr, plen, &h->net);
	}
	freeifaddrs(ifa);
	*out = v;
	*nout = n;
	return 0;
}
