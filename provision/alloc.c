/*
 * alloc.c -- pick a new guest's address, MAC and tap name from the loaded
 * configuration.  Pure functions of the config, so unit tests drive them.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "confpath.h"
#include "provision.h"

/* The loader's rule for sandbox names (lib/confpath.h), so every name
 * provision accepts is also a valid drop-in file stem. */
bool
name_valid(const char *s)
{
	return confpath_name_valid(s);
}

static uint32_t
v4(const struct moat_addr *a)
{
	uint32_t v;

	memcpy(&v, a->a, 4);
	return ntohl(v);
}

static bool
addr_used(const struct moat_config *cfg, uint32_t h)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (cfg->sandboxes[i].address.family == AF_INET &&
		    v4(&cfg->sandboxes[i].address) == h)
			return true;
	return false;
}

/* The lowest free host address after the gateway's, in box.pool when a
 * separate gateway box gave this host one.  -1: pool exhausted. */
int
alloc_address(const struct moat_config *cfg, struct moat_addr *out)
{
	const struct moat_prefix *net = &cfg->gw.network;
	const struct moat_prefix *pool = cfg->box.has_pool ? &cfg->box.pool :
	    net;
	uint32_t nbase = v4(&net->addr), nsize, base, size, h;
	uint32_t gw = v4(&cfg->gw.address);

	if (net->addr.family != AF_INET || net->plen < 1 || net->plen > 30 ||
	    pool->plen < net->plen || pool->plen > 30)
		return -1;
	nsize = 1u << (32 - net->plen);
	size = 1u << (32 - pool->plen);
	base = v4(&pool->addr) & ~(size - 1);
	for (h = base; h < base + size; h++) {
		/* Never the network's own first and last addresses. */
		if (h <= nbase || h >= nbase + nsize - 1 || h == gw ||
		    addr_used(cfg, h))
			continue;
		memset(out, 0, sizeof(*out));
		out->family = AF_INET;
		h = htonl(h);
		memcpy(out->a, &h, 4);
		return 0;
	}
	return -1;
}

static bool
mac_used(const struct moat_config *cfg, const uint8_t mac[6])
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (memcmp(cfg->sandboxes[i].mac, mac, 6) == 0)
			return true;
	return false;
}

/* 02:6d:74 ("mt", locally administered, unicast) then the address's low
 * 24 bits: unique inside any network of /8 or longer unless someone wrote
 * a colliding MAC by hand, in which case the next free one is taken. */
void
alloc_mac(const struct moat_config *cfg, const struct moat_addr *addr,
    uint8_t mac[6])
{
	uint32_t low = v4(addr) & 0xffffff;
	unsigned int i;

	for (i = 0; i < 0x1000000; i++, low = (low + 1) & 0xffffff) {
		mac[0] = 0x02;
		mac[1] = 0x6d;
		mac[2] = 0x74;
		mac[3] = (uint8_t)(low >> 16);
		mac[4] = (uint8_t)(low >> 8);
		mac[5] = (uint8_t)low;
		if (!mac_used(cfg, mac))
			return;
	}
}

static bool
tap_used(const struct moat_config *cfg, const char *tap,
    bool (*in_use)(const char *))
{
	size_t i;

	if (strcmp(tap, cfg->gw.bridge) == 0 ||
	    strcmp(tap, cfg->gw.uplink) == 0)
		return true;
	for (i = 0; i < cfg->nsandboxes; i++)
		if (strcmp(cfg->sandboxes[i].tap, tap) == 0)
			return true;
	return in_use != NULL && in_use(tap);
}

/* "mt-NAME" when it fits in IFNAMSIZ and is free, else "mt-PREFIX-N". */
int
alloc_tap(const struct moat_config *cfg, const char *name,
    bool (*in_use)(const char *), char tap[16])
{
	char buf[64];
	int i, keep;

	snprintf(buf, sizeof(buf), "mt-%s", name);
	if (strlen(buf) <= 15 && !tap_used(cfg, buf, in_use)) {
		memcpy(tap, buf, strlen(buf) + 1);
		return 0;
	}
	for (i = 1; i < 1000; i++) {
		/* "mt-" + prefix + "-N" in 15 characters. */
		keep = 12 - (i < 10 ? 2 : i < 100 ? 3 : 4);
		snprintf(buf, sizeof(buf), "mt-%.*s-%d", keep, name, i);
		if (strlen(buf) <= 15 && !tap_used(cfg, buf, in_use)) {
			memcpy(tap, buf, strlen(buf) + 1);
			return 0;
		}
	}
	return -1;
}

void
mac_fmt(const uint8_t m[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
	    m[3], m[4], m[5]);
}

void
netmask_fmt(int plen, char out[16])
{
	uint32_t m = plen == 0 ? 0 : htonl(~0u << (32 - plen));

	inet_ntop(AF_INET, &m, out, 16);
}

void
pv_addr6(const struct moat_config *cfg, const struct moat_sandbox *x,
    char addr[46], char gw[46])
{
	struct moat_addr a;

	addr[0] = gw[0] = '\0';
	if (!config_sandbox_addr6(cfg, x, &a))
		return;
	addr_fmt(&a, addr, 46);
	addr_fmt(&cfg->gw.ipv6_address, gw, 46);
}
