/*
 * admit_reg.c -- see admit_reg.h.
 */
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>

#include "admit_reg.h"
#include "hex.h"

#define WHY(...)	(snprintf(why, len, __VA_ARGS__), -1)

bool
reg_name_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= REG_NAME_MAX &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n &&
	    s[0] != '-' && s[0] != '_';
}

/* Exactly aa:bb:cc:dd:ee:ff in hex, into m. */
static bool
mac_parse(const char *s, uint8_t m[6])
{
	int i, hi, lo;

	if (strlen(s) != 17)
		return false;
	for (i = 0; i < 6; i++) {
		if ((hi = hex_digit(s[3 * i])) == -1 ||
		    (lo = hex_digit(s[3 * i + 1])) == -1 ||
		    (i < 5 && s[3 * i + 2] != ':'))
			return false;
		m[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* Wider is more: none < allowlist < open. */
static int
egress_rank(enum moat_egress e)
{
	return e == EGRESS_NONE ? 0 : e == EGRESS_ALLOWLIST ? 1 : 2;
}

static int
egress_parse(const char *s, enum moat_egress *e)
{
	if (strcmp(s, "open") == 0)
		*e = EGRESS_OPEN;
	else if (strcmp(s, "allowlist") == 0)
		*e = EGRESS_ALLOWLIST;
	else if (strcmp(s, "none") == 0)
		*e = EGRESS_NONE;
	else
		return -1;
	return 0;
}

bool
reg_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	if (n == 0)
		return false;
	for (p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/* The address: IPv4, in the pool and the network, not special. */
static int
check_address(const struct moat_config *cfg, const struct moat_host *h,
    const char *s, struct moat_addr *a, char *why, size_t len)
{
	const struct moat_prefix *net = &cfg->gw.network;
	uint32_t v, host;
	struct in_addr in;

	if (inet_pton(AF_INET, s, &in) != 1)
		return WHY("address: expected an IPv4 address");
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	memcpy(a->a, &in, 4);
	if (!prefix_contains(&h->pool, a))
		return WHY("address outside this host's pool");
	if (!prefix_contains(net, a))
		return WHY("address outside gateway.network");
	v = ntohl(in.s_addr);
	host = net->plen >= 32 ? 0 : v & ((1u << (32 - net->plen)) - 1);
	if (host == 0 || host == (net->plen >= 32 ? 0 :
	    (1u << (32 - net->plen)) - 1))
		return WHY("address is the network's or its broadcast address");
	if (addr_cmp(a, &cfg->gw.address) == 0)
		return WHY("address is the gateway's own");
	return 0;
}

/* Each comma-separated item of list through ok(); -1 on the first not. */
static int
each_item(const char *list, size_t max, bool (*ok)(const char *, void *),
    void *arg, char *bad, size_t badlen)
{
	char item[256];
	const char *p = list, *c;
	size_t n, count = 0;

	while (*p != '\0') {
		c = strchr(p, ',');
		n = c ? (size_t)(c - p) : strlen(p);
		snprintf(item, sizeof(item), "%.*s", (int)n, p);
		if (n == 0 || n >= sizeof(item) || ++count > max || !ok(item, arg)) {
			snprintf(bad, badlen, "%s", item);
			return -1;
		}
		p += n + (c != NULL);
		if (c != NULL && *p == '\0')
			return snprintf(bad, badlen, "%s", ""), -1;
	}
	return 0;
}

static bool
pattern_ok(const char *s, void *arg)
{
	(void)arg;
	return hostpattern_valid(s);
}

struct secret_arg {
	const struct moat_config	*cfg;
	const struct moat_host		*h;
};

static bool
secret_ok(const char *s, void *arg)
{
	const struct secret_arg *x = arg;
	size_t i;

	if (config_secret_by_name(x->cfg, s) == NULL)
		return false;
	for (i = 0; i < x->h->secrets.n; i++)
		if (strcmp(x->h->secrets.v[i], s) == 0)
			return true;
	return false;
}

/* Name, address, MAC and tap against every other sandbox. */
static int
check_unique(const struct moat_config *cfg, const struct reg_claim *c,
    const struct moat_host *h, const struct moat_addr *a,
    const uint8_t mac[6], char *why, size_t len)
{
	const struct moat_sandbox *x;
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++) {
		x = &cfg->sandboxes[i];
		if (strcmp(x->name, c->name) == 0) {
			if (!reg_owned(x, h))
				return WHY("name used by another sandbox");
			continue;	/* its own entry, which this replaces */
		}
		if (strcmp(x->tap, c->name) == 0)
			return WHY("name used by another sandbox's tap");
		if (addr_cmp(&x->address, a) == 0)
			return WHY("address used by another sandbox");
		if (memcmp(x->mac, mac, 6) == 0)
			return WHY("mac used by another sandbox");
	}
	return 0;
}

int
admit_registration(const struct moat_config *cfg, const struct moat_host *h,
    const struct reg_claim *c, char *why, size_t len)
{
	struct secret_arg sa = { cfg, h };
	struct moat_addr a;
	enum moat_egress e;
	uint8_t mac[6];
	char bad[256];

	if (!reg_name_valid(c->name))
		return WHY("name: expected 1 to %d of a-z, 0-9, '-' and '_', "
		    "starting with a letter or digit", REG_NAME_MAX);
	if (check_address(cfg, h, c->address, &a, why, len) == -1)
		return -1;
	if (!mac_parse(c->mac, mac))
		return WHY("mac: expected aa:bb:cc:dd:ee:ff");
	if ((mac[0] & 1) || memcmp(mac, "\0\0\0\0\0\0", 6) == 0)
		return WHY("mac: expected a unicast address");
	if (egress_parse(c->egress, &e) == -1)
		return WHY("egress: expected open, allowlist or none");
	if (egress_rank(e) > egress_rank(h->max_egress))
		return WHY("egress \"%s\" is wider than this host's max_egress "
		    "\"%s\"", egress_name(e), egress_name(h->max_egress));
	if (c->allow[0] != '\0' && e != EGRESS_ALLOWLIST)
		return WHY("allow only applies with egress allowlist");
	if (each_item(c->allow, REG_ALLOW_MAX, pattern_ok, NULL, bad,
	    sizeof(bad)) == -1)
		return WHY("allow: expected host names or *.names, at most %d, "
		    "got \"%.64s\"", REG_ALLOW_MAX, bad);
	if (each_item(c->secrets, 64, secret_ok, &sa, bad, sizeof(bad)) == -1)
		return WHY("secret \"%.32s\" is not one this host's sandboxes "
		    "may use", bad);
	return check_unique(cfg, c, h, &a, mac, why, len);
}

bool
reg_owned(const struct moat_sandbox *x, const struct moat_host *h)
{
	return x->registered_by != NULL && strcmp(x->registered_by, h->name) == 0;
}

const struct moat_host *
admit_host_by_key(const struct moat_config *cfg, const unsigned char key[32])
{
	size_t i;

	for (i = 0; i < cfg->nhosts; i++)
		if (memcmp(cfg->hosts[i].key, key, 32) == 0)
			return &cfg->hosts[i];
	return NULL;
}
