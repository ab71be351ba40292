/*
 * targets.c -- what containment-check needs to know and a guest cannot
 * learn by itself: the gateway host's addresses, the exceptions that must
 * stay closed for this guest, the LAN ranges the host is on, the IPv6
 * networks it routes other than by its default route.  Written
 * into the guest as /etc/moat/containment-targets (see
 * containment-check(8)); the scanner reads it by default.
 */
#include <sys/socket.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "log.h"
#include "nftrules.h"
#include "provision.h"

/* Bounds, so that the scanner's lists (64 targets, 64 routed networks)
 * always take the file: an IPv6 LAN line is three targets. */
#define TARGETS_LAN6_MAX	8
#define TARGETS_ROUTED_MAX	32

struct nets6 {
	struct moat_prefix	 lan[TARGETS_LAN6_MAX];
	size_t			 nlan;
};

static void
prefix_mask(struct moat_prefix *p)
{
	size_t len = p->addr.family == AF_INET ? 4 : 16;
	int bit;

	for (bit = p->plen; bit < (int)len * 8; bit++)
		p->addr.a[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
}

/* Already listed: inside a network printed before (or the same). */
static bool
covered(const struct moat_prefix *v, size_t n, const struct moat_prefix *p)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].plen <= p->plen && prefix_contains(&v[i], &p->addr))
			return true;
	return false;
}

/* A network the guests must not reach over IPv6 and the scanner can
 * sample: not the guests' own, between /8 and /120. */
static bool
usable6(const struct moat_config *cfg, const struct moat_prefix *p)
{
	return p->addr.family == AF_INET6 && p->plen >= 8 && p->plen <= 120 &&
	    !(cfg->gw.ipv6 && prefix_overlaps(p, &cfg->gw.ipv6_network) &&
	    p->plen >= cfg->gw.ipv6_network.plen);
}

/* The IPv6 networks the policy's lan6 refuses that are not on the
 * host's own interfaces: the main table's routes other than the default
 * (nftr_routes6, the list lan6 is built from) and
 * gateway.ipv6.site_prefixes.  The scanner probes a few hosts of each. */
static void
routed_lines(FILE *f, const struct moat_config *cfg, const struct nets6 *n6)
{
	struct moat_prefix *v = NULL, done[TARGETS_ROUTED_MAX];
	size_t n = 0, ndone = 0, i, skipped = 0;
	char buf[64];

	if (nftr_routes6(cfg->gw.bridge, cfg->private, &v, &n) == -1)
		log_warn("cannot list this host's IPv6 routes");
	for (i = 0; i < cfg->gw.nipv6_site; i++) {
		v = xreallocarray(v, n + 1, sizeof(*v));
		v[n++] = cfg->gw.ipv6_site[i];
	}
	for (i = 0; i < n; i++) {
		struct moat_prefix p = v[i];

		prefix_mask(&p);
		if (!usable6(cfg, &p) || covered(n6->lan, n6->nlan, &p) ||
		    covered(done, ndone, &p))
			continue;
		if (ndone == TARGETS_ROUTED_MAX) {
			skipped++;
			continue;
		}
		done[ndone++] = p;
		fprintf(f, "routed %s\n", prefix_fmt(&p, buf, sizeof(buf)));
	}
	if (skipped > 0)
		fprintf(f, "# %zu more routed IPv6 networks not listed\n",
		    skipped);
	free(v);
}

static void
host_lines(FILE *f, const struct moat_config *cfg, struct nets6 *n6)
{
	struct ifaddrs *ifa, *i;
	struct moat_addr a;
	struct moat_prefix p;
	char buf[64];

	if (getifaddrs(&ifa) == -1) {
		log_warn("getifaddrs");
		return;
	}
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || addr_from_sockaddr(
		    (const struct sockaddr_storage *)i->ifa_addr, &a) == -1)
			continue;
		/* Loopback and link-local: the scanner probes those by
		 * itself; the sandbox networks (IPv4 and IPv6) are the
		 * gateway sweep's, where DNS and the proxy answer. */
		if ((a.family == AF_INET && a.a[0] == 127) ||
		    (a.family == AF_INET6 && (a.a[0] == 0xfe &&
		    (a.a[1] & 0xc0) == 0x80)) ||
		    (a.family == AF_INET6 && addr_cmp(&a, &(struct moat_addr){
		    .family = AF_INET6, .a = { [15] = 1 } }) == 0) ||
		    prefix_contains(&cfg->gw.network, &a) ||
		    (cfg->gw.ipv6 && prefix_contains(&cfg->gw.ipv6_network,
		    &a)))
			continue;
		fprintf(f, "gateway %s\n", addr_fmt(&a, buf, sizeof(buf)));
		p.addr = a;
		if ((p.plen = addr_mask_plen(i->ifa_netmask, a.family)) < 0)
			continue;
		prefix_mask(&p);
		/* IPv6: every global or unique-local network of the host's
		 * interfaces is refused to guests (lan6), public or not. */
		if (a.family == AF_INET6) {
			if (!usable6(cfg, &p) || covered(n6->lan, n6->nlan, &p) ||
			    n6->nlan == TARGETS_LAN6_MAX)
				continue;
			n6->lan[n6->nlan++] = p;
		} else if (p.plen < 8 || p.plen > 30 ||
		    !rangeset_contains(cfg->private, &a))
			continue;
		fprintf(f, "lan %s\n", prefix_fmt(&p, buf, sizeof(buf)));
	}
	freeifaddrs(ifa);
}

char *
targets_text(const struct moat_config *cfg, const char *name,
    enum moat_egress egress)
{
	struct moat_sandbox sb = { .name = (char *)name, .egress = egress };
	struct nets6 n6 = { .nlan = 0 };
	char *text = NULL, buf[64];
	size_t len = 0, i;
	FILE *f;

	if ((f = open_memstream(&text, &len)) == NULL)
		fatal("open_memstream");
	fprintf(f, "# moat: what containment-check probes beyond its own "
	    "discovery\n");
	host_lines(f, cfg, &n6);
	routed_lines(f, cfg, &n6);
	for (i = 0; i < cfg->gw.nexceptions; i++) {
		const struct moat_exception *x = &cfg->gw.exceptions[i];
		struct moat_addr a = x->to.addr;

		if (a.family != AF_INET || admit_exception_applies(x, &sb))
			continue;
		if (x->to.plen < 32)
			a.a[3] |= 1;
		fprintf(f, "exception %s", addr_fmt(&a, buf, sizeof(buf)));
		if (x->nports > 0)
			fprintf(f, ":%u", x->ports[0]);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		fatal("open_memstream");
	return text;
}
