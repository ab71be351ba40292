/*
 * targets.c -- what containment-check needs to know and a guest cannot
 * learn by itself: the gateway host's addresses, the exceptions that must
 * stay closed for this guest, the LAN ranges the host is on.  Written
 * into the guest as /etc/moat/containment-targets (see
 * containment-check(8)); the scanner reads it by default.
 */
#include <sys/socket.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "log.h"
#include "provision.h"

static void
host_lines(FILE *f, const struct moat_config *cfg)
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
		p.plen = addr_mask_plen(i->ifa_netmask, a.family);
		if (a.family != AF_INET || p.plen < 8 || p.plen > 30 ||
		    !rangeset_contains(cfg->private, &a))
			continue;
		memset(p.addr.a + p.plen / 8 + (p.plen % 8 != 0), 0,
		    4 - (size_t)(p.plen / 8 + (p.plen % 8 != 0)));
		if (p.plen % 8)
			p.addr.a[p.plen / 8] &= (uint8_t)(0xff << (8 - p.plen % 8));
		fprintf(f, "lan %s\n", prefix_fmt(&p, buf, sizeof(buf)));
	}
	freeifaddrs(ifa);
}

char *
targets_text(const struct moat_config *cfg, const char *name,
    enum moat_egress egress)
{
	struct moat_sandbox sb = { .name = (char *)name, .egress = egress };
	char *text = NULL, buf[64];
	size_t len = 0, i;
	FILE *f;

	if ((f = open_memstream(&text, &len)) == NULL)
		fatal("open_memstream");
	fprintf(f, "# moat: what containment-check probes beyond its own "
	    "discovery\n");
	host_lines(f, cfg);
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
