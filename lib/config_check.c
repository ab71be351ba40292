/*
 * config_check.c -- checks that need more than one value: a sandbox
 * against the gateway as it is read, and uniqueness, references and
 * overlaps once every file is read.
 */
#include <arpa/inet.h>
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "log.h"
#include "secretfile.h"

/* Keys that only mean something with one egress mode. */
static void
check_egress_keys(struct loader *ld, const config_setting_t *grp,
    const struct moat_sandbox *x, const char *ctx)
{
	if (x->allow.n > 0 && x->egress != EGRESS_ALLOWLIST)
		serr(ld, config_setting_get_member(grp, "allow"), "%s: allow "
		    "only applies with egress = \"allowlist\" (egress is \"%s\")",
		    ctx, egress_name(x->egress));
	{
		struct moat_port p[MOAT_NAME_PORTS_MAX];

		if (config_named_ports(&x->allow, p) == -1)
			serr(ld, config_setting_get_member(grp, "allow"),
			    "%s: allow: at most %d distinct ports among the "
			    "names with ports of their own (\"NAME:tcp/PORT\")",
			    ctx, MOAT_NAME_PORTS_MAX);
	}
	if (x->bypass.n > 0 && !x->inspect)
		serr(ld, config_setting_get_member(grp, "bypass"), "%s: bypass "
		    "only applies with inspect = true", ctx);
	if (config_setting_get_member(grp, "allow_ports") != NULL &&
	    x->egress != EGRESS_ALLOWLIST)
		serr(ld, config_setting_get_member(grp, "allow_ports"), "%s: "
		    "allow_ports only applies with egress = \"allowlist\" "
		    "(egress is \"%s\")", ctx, egress_name(x->egress));
}

/* Per-sandbox checks that need only the sandbox and the gateway.  Keys
 * are judged against egress only when every key was read (keys_ok): after
 * a typo such as "egres", egress is not what the user meant, and the
 * unknown key is the one error worth showing. */
void
check_sandbox(struct loader *ld, const config_setting_t *grp,
    const struct moat_sandbox *x, const char *ctx, bool keys_ok)
{
	const struct moat_gateway *gw = &ld->cfg->gw;
	const config_setting_t *a = config_setting_get_member(grp, "address");
	struct moat_addr bcast;
	char net[64];

	if (keys_ok)
		check_egress_keys(ld, grp, x, ctx);
	if (x->reverify_interval > 0 &&
	    x->reverify_interval < MOAT_REVERIFY_MIN)
		serr(ld, config_setting_get_member(grp, "reverify_interval"),
		    "%s: reverify_interval: expected 0 (first boot only) or "
		    "at least %d seconds, got %u", ctx, MOAT_REVERIFY_MIN,
		    x->reverify_interval);
	if (a == NULL || x->address.family != AF_INET ||
	    gw->network.addr.family != AF_INET)
		return;
	bcast = gw->network.addr;
	{
		uint32_t m = gw->network.plen == 0 ? ~0u :
		    (1u << (32 - gw->network.plen)) - 1, v;
		memcpy(&v, bcast.a, 4);
		v = htonl(ntohl(v) | m);
		memcpy(bcast.a, &v, 4);
	}
	prefix_fmt(&gw->network, net, sizeof(net));
	if (!prefix_contains(&gw->network, &x->address))
		serr(ld, a, "%s: address: expected an address inside "
		    "gateway.network %s", ctx, net);
	else if (addr_cmp(&x->address, &gw->network.addr) == 0 ||
	    addr_cmp(&x->address, &bcast) == 0)
		serr(ld, a, "%s: address: the network and broadcast addresses "
		    "of %s cannot be a sandbox's", ctx, net);
	else if (addr_cmp(&x->address, &gw->address) == 0)
		serr(ld, a, "%s: address: that is the gateway's own address",
		    ctx);
}

/* --- cross-checks ----------------------------------------------------- */

/* Keys of one field of every sandbox, for finding a value used twice. */
enum ukind { U_STR, U_MAC, U_ADDR };

struct ukey {
	const void	*p;
	enum ukind	 kind;
};

static int
ukeycmp(const void *x, const void *y)
{
	const struct ukey *a = x, *b = y;

	if (a->kind == U_MAC)
		return memcmp(a->p, b->p, 6);
	if (a->kind == U_ADDR)
		return addr_cmp(a->p, b->p);
	return strcmp(a->p, b->p);
}

static bool
ukeys_repeat(struct ukey *k, size_t n)
{
	size_t i;

	qsort(k, n, sizeof(*k), ukeycmp);
	for (i = 1; i < n; i++)
		if (ukeycmp(&k[i - 1], &k[i]) == 0)
			return true;
	return false;
}

/* Whether two sandboxes share a name, MAC, tap or address, found by
 * sorting: with thousands of sandboxes, comparing every pair would be
 * most of the time a reload takes. */
static bool
any_shared(const struct moat_config *cfg)
{
	static const uint8_t zero[6];
	struct ukey *k = xcalloc(cfg->nsandboxes + 1, sizeof(*k));
	const struct moat_sandbox *a;
	size_t i, n, f;
	bool rep = false;

	for (f = 0; f < 4 && !rep; f++) {
		for (i = n = 0; i < cfg->nsandboxes; i++) {
			a = &cfg->sandboxes[i];
			if (f == 0 && a->name)
				k[n++] = (struct ukey){ a->name, U_STR };
			else if (f == 1 && memcmp(a->mac, zero, 6) != 0)
				k[n++] = (struct ukey){ a->mac, U_MAC };
			else if (f == 2 && a->tap[0])
				k[n++] = (struct ukey){ a->tap, U_STR };
			else if (f == 3 && a->address.family)
				k[n++] = (struct ukey){ &a->address, U_ADDR };
		}
		rep = ukeys_repeat(k, n);
	}
	free(k);
	return rep;
}

static void
check_unique(struct loader *ld)
{
	struct moat_config *cfg = ld->cfg;
	static const uint8_t zero[6];
	struct moat_sandbox *a, *b;
	size_t i, j;
	char mac[18];
	bool pairs = any_shared(cfg);

	for (i = 0; i < cfg->nsandboxes; i++) {
		a = &cfg->sandboxes[i];
		if (a->tap[0] && (strcmp(a->tap, cfg->gw.bridge) == 0 ||
		    strcmp(a->tap, cfg->gw.uplink) == 0))
			adderr(ld, a->where.file, a->where.line, "sandbox \"%s\": "
			    "tap: \"%s\" is the bridge or uplink interface",
			    a->name ? a->name : "?", a->tap);
		for (j = 0; pairs && j < i; j++) {
			b = &cfg->sandboxes[j];
#define DUP(what, cond, val)						\
			if (cond)						\
				adderr(ld, a->where.file, a->where.line,	\
				    "sandbox \"%s\": %s \"%s\" is already used by "	\
				    "sandbox \"%s\" (%s:%d)", a->name ? a->name	\
				    : "?", what, val, b->name ? b->name : "?",	\
				    b->where.file, b->where.line)
			DUP("name", a->name && b->name &&
			    strcmp(a->name, b->name) == 0, a->name);
			snprintf(mac, sizeof(mac),
			    "%02x:%02x:%02x:%02x:%02x:%02x", a->mac[0],
			    a->mac[1], a->mac[2], a->mac[3], a->mac[4], a->mac[5]);
			DUP("mac", memcmp(a->mac, zero, 6) != 0 &&
			    memcmp(a->mac, b->mac, 6) == 0, mac);
			DUP("tap", a->tap[0] && strcmp(a->tap, b->tap) == 0,
			    a->tap);
			if (a->address.family && addr_cmp(&a->address,
			    &b->address) == 0) {
				char ab[INET6_ADDRSTRLEN];
				addr_fmt(&a->address, ab, sizeof(ab));
				DUP("address", 1, ab);
			}
#undef DUP
		}
	}
}

static void
check_secrets(struct loader *ld)
{
	struct moat_config *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->nsecrets; i++)
		for (j = 0; j < i; j++) {
			struct moat_secret *a = &cfg->secrets[i],
			    *b = &cfg->secrets[j];
			if (a->name && b->name && strcmp(a->name, b->name) == 0)
				adderr(ld, a->where.file, a->where.line, "secret "
				    "\"%s\": name is already used (%s:%d)",
				    a->name, b->where.file, b->where.line);
			if (a->placeholder && b->placeholder &&
			    (strstr(a->placeholder, b->placeholder) ||
			    strstr(b->placeholder, a->placeholder)))
				adderr(ld, a->where.file, a->where.line, "secret "
				    "\"%s\": placeholder must differ from secret "
				    "\"%s\"'s and not contain it", a->name ?
				    a->name : "?", b->name ? b->name : "?");
		}
}

static bool check_values;

void
config_check_values(bool on)
{
	check_values = on;
}

/* A value holding a placeholder (secretfile.h), when the caller asked for
 * the values to be read.  A file that cannot be read is left to the check
 * of its key and to the proxy's start, which report it. */
static void
check_secret_values(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	const struct moat_secret *x, *o;
	char buf[SECRET_FILE_MAX + 2], err[512];
	size_t i, len;

	if (!check_values || ld->normalised)
		return;
	for (i = 0; i < cfg->nsecrets; i++) {
		x = &cfg->secrets[i];
		if (x->file == NULL || secret_file_read(x, buf, &len, err,
		    sizeof(err)) == -1)
			continue;
		if ((o = secret_value_placeholder(cfg, buf, len)) != NULL)
			adderr(ld, x->where.file, x->where.line, "secret \"%s\": "
			    "its value (%s) contains the placeholder of secret "
			    "\"%s\"; a value may hold no placeholder, or the "
			    "proxy would send that secret in its place",
			    x->name ? x->name : "?", x->file,
			    o->name ? o->name : "?");
	}
	explicit_bzero(buf, sizeof(buf));
}

/* A sandbox with an owner may carry only secrets its owner may use, so a
 * hand-edited drop-in cannot hand one user's key to another's guest. */
static void
check_secret_owners(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	const struct moat_sandbox *x;
	const struct moat_secret *sec;
	size_t i, j;

	for (i = 0; i < cfg->nsandboxes; i++) {
		x = &cfg->sandboxes[i];
		for (j = 0; x->owner != NULL && j < x->secrets.n; j++) {
			sec = config_secret_by_name(cfg, x->secrets.v[j]);
			if (sec == NULL || sec->owner == NULL ||
			    secret_usable_by(sec, x->owner))
				continue;
			adderr(ld, x->where.file, x->where.line, "sandbox \"%s\": "
			    "secrets: \"%s\" belongs to %s and is not shared "
			    "with %s (the sandbox's owner)", x->name ? x->name :
			    "?", sec->name, sec->owner, x->owner);
		}
	}
}

static void
check_quotas(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->nquotas; i++)
		for (j = 0; j < i; j++)
			if (cfg->quotas[i].user && cfg->quotas[j].user &&
			    strcmp(cfg->quotas[i].user, cfg->quotas[j].user) == 0)
				adderr(ld, cfg->quotas[i].where.file,
				    cfg->quotas[i].where.line, "quota %zu: user "
				    "\"%s\" already has a quota (%s:%d)", i + 1,
				    cfg->quotas[i].user, cfg->quotas[j].where.file,
				    cfg->quotas[j].where.line);
}

/* An exception names the sandboxes it applies to; egress "none" means
 * the gateway's DNS and proxy only, so no exception may name one. */
static void
check_exception_names(struct loader *ld, const struct moat_exception *x,
    size_t i)
{
	const struct moat_sandbox *sb;
	size_t j;

	for (j = 0; j < x->sandboxes.n; j++) {
		sb = config_sandbox_by_name(ld->cfg, x->sandboxes.v[j]);
		if (sb == NULL)
			adderr(ld, x->where.file, x->sandbox_lines[j],
			    "exception %zu: sandboxes: expected the name of a "
			    "sandbox, got \"%s\"", i + 1, x->sandboxes.v[j]);
		else if (sb->egress == EGRESS_NONE)
			adderr(ld, x->where.file, x->sandbox_lines[j],
			    "exception %zu: sandboxes: \"%s\" has egress = "
			    "\"none\", which no exception may open (expected "
			    "an open or allowlist sandbox)", i + 1,
			    x->sandboxes.v[j]);
	}
}

static void
check_exceptions(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;
	size_t i;

	for (i = 0; i < gw->nexceptions; i++) {
		if (gw->exceptions[i].to.plen > 0 && gw->network.plen > 0 &&
		    prefix_overlaps(&gw->exceptions[i].to, &gw->network))
			adderr(ld, gw->exceptions[i].where.file,
			    gw->exceptions[i].where.line, "exception %zu: to: "
			    "must not overlap gateway.network (guests and the "
			    "gateway are never an exception)", i + 1);
		check_exception_names(ld, &gw->exceptions[i], i);
	}
}

static void
check_network(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;
	size_t i;

	for (i = 0; i < gw->ntreat_as_public; i++)
		if (gw->network.plen > 0 &&
		    prefix_overlaps(&gw->treat_as_public[i], &gw->network))
			adderr(ld, ld->cfg->path, 1, "gateway: treat_as_public: "
			    "must not overlap gateway.network");
	if (gw->uplink[0] && strcmp(gw->uplink, gw->bridge) == 0)
		adderr(ld, ld->cfg->path, 1, "gateway: uplink and bridge must "
		    "be different interfaces");
}

/* Hosts apart: a name and a key each their own, pools that do not
 * overlap (a host may claim any free address of its pool). */
static void
check_hosts_apart(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	const struct moat_host *h, *o;
	size_t i, j;

	for (i = 0; i < cfg->nhosts; i++)
		for (j = 0; j < i; j++) {
			h = &cfg->hosts[i];
			o = &cfg->hosts[j];
			if (h->name && o->name && strcmp(h->name, o->name) == 0)
				adderr(ld, h->where.file, h->where.line, "host "
				    "\"%s\": name: already used by the host on "
				    "line %d", h->name, o->where.line);
			else if (memcmp(h->key, o->key, sizeof(h->key)) == 0)
				adderr(ld, h->where.file, h->where.line, "host "
				    "\"%s\": key: the same as host \"%s\"'s (line "
				    "%d)", h->name, o->name, o->where.line);
			else if (h->pool.plen > 0 && o->pool.plen > 0 &&
			    prefix_overlaps(&h->pool, &o->pool))
				adderr(ld, h->where.file, h->where.line, "host "
				    "\"%s\": pool: overlaps host \"%s\"'s (line %d)",
				    h->name, o->name, o->where.line);
		}
}

static int
egress_rank(enum moat_egress e)
{
	return e == EGRESS_NONE ? 0 : e == EGRESS_ALLOWLIST ? 1 : 2;
}

/* A sandbox on a host's trunk is that host's: its address in the host's
 * pool, and within the host's limits (max_egress, secrets), however its
 * drop-in got there -- so that lowering a host's limits cannot leave a
 * sandbox it registered wider than it may be. */
static void
check_host_sandbox(struct loader *ld, const struct moat_sandbox *x)
{
	const struct moat_config *cfg = ld->cfg;
	const struct moat_host *h = NULL;
	size_t i, j;

	if (x->trunk[0] == '\0' || x->name == NULL)
		return;
	for (i = 0; i < cfg->nhosts && h == NULL; i++)
		if (strcmp(x->trunk, cfg->hosts[i].trunk) == 0 &&
		    prefix_contains(&cfg->hosts[i].pool, &x->address))
			h = &cfg->hosts[i];
	if (h == NULL) {
		adderr(ld, x->where.file, x->where.line, "sandbox \"%s\": trunk: "
		    "expected the trunk of the host in hosts = whose pool holds "
		    "its address, got \"%s\"", x->name, x->trunk);
		return;
	}
	if (egress_rank(x->egress) > egress_rank(h->max_egress))
		adderr(ld, x->where.file, x->where.line, "sandbox \"%s\": egress: "
		    "\"%s\" is wider than host \"%s\"'s max_egress \"%s\"",
		    x->name, egress_name(x->egress), h->name,
		    egress_name(h->max_egress));
	for (i = 0; i < x->secrets.n; i++) {
		for (j = 0; j < h->secrets.n; j++)
			if (strcmp(x->secrets.v[i], h->secrets.v[j]) == 0)
				break;
		if (j == h->secrets.n)
			adderr(ld, x->where.file, x->where.line, "sandbox \"%s\": "
			    "secrets: \"%s\" is not among host \"%s\"'s secrets",
			    x->name, x->secrets.v[i], h->name);
	}
}

/* A separate box: each host's pool inside gateway.network, its secrets
 * defined; the registration endpoint off the sandbox network (guests
 * must never reach it); a sandbox's trunk one of the hosts'. */
static void check_listen(struct loader *, const char *, const char *,
    const char *, const struct moat_where *, const char *);

static void
check_hosts(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	const struct moat_gateway *gw = &cfg->gw;
	const struct moat_host *h;
	char net[64];
	size_t i, j;

	check_hosts_apart(ld);
	prefix_fmt(&gw->network, net, sizeof(net));
	for (i = 0; i < cfg->nhosts; i++) {
		h = &cfg->hosts[i];
		if (gw->network.plen > 0 && h->pool.addr.family == AF_INET &&
		    (!prefix_contains(&gw->network, &h->pool.addr) ||
		    h->pool.plen < gw->network.plen))
			adderr(ld, h->where.file, h->where.line, "host \"%s\": "
			    "pool: expected a network inside gateway.network %s",
			    h->name ? h->name : "?", net);
		for (j = 0; j < h->secrets.n; j++)
			if (config_secret_by_name(cfg, h->secrets.v[j]) == NULL)
				adderr(ld, h->where.file, h->where.line, "host "
				    "\"%s\": secrets: expected the name of a "
				    "secret defined in \"secrets\", got \"%s\"",
				    h->name ? h->name : "?", h->secrets.v[j]);
	}
	for (i = 0; i < cfg->nsandboxes; i++)
		check_host_sandbox(ld, &cfg->sandboxes[i]);
	check_listen(ld, "gateway.registration", "the registration endpoint",
	    gw->reg_listen, &gw->reg_where, "192.168.100.1:7443");
}

/* A listener for the management network only ("ADDR:PORT"): never every
 * address, never one a guest could reach on the sandbox side. */
static void
check_listen(struct loader *ld, const char *key, const char *what,
    const char *v, const struct moat_where *w, const char *example)
{
	const struct moat_gateway *gw = &ld->cfg->gw;
	const char *colon;
	struct moat_addr a;
	char host[64], net[64];

	if (v == NULL || (colon = strrchr(v, ':')) == NULL)
		return;
	prefix_fmt(&gw->network, net, sizeof(net));
	snprintf(host, sizeof(host), "%.*s", (int)(colon - v), v);
	if (host[0] == '[' && strlen(host) > 2 && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if (addr_parse(host, &a) == -1 || strlen(colon + 1) > 5 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strtol(colon + 1, NULL, 10) < 1 || strtol(colon + 1, NULL, 10) > 65535)
		adderr(ld, w->file, w->line, "%s: listen: expected an IP address "
		    "and a port 1-65535 like \"%s\", got \"%s\"", key, example,
		    v);
	else if (memcmp(a.a, (uint8_t[16]){ 0 }, a.family == AF_INET ? 4 : 16)
	    == 0)
		adderr(ld, w->file, w->line, "%s: listen: expected the gateway's "
		    "address on the management network, not \"%s\" (every "
		    "address, the sandbox side's among them)", key, host);
	else if (a.family == AF_INET && gw->network.plen > 0 &&
	    prefix_contains(&gw->network, &a))
		adderr(ld, w->file, w->line, "%s: listen: expected an address on "
		    "the management network, not inside gateway.network %s "
		    "(guests must never reach %s)", key, net, what);
	else if (a.family == AF_INET6 && gw->ipv6_network.plen > 0 &&
	    prefix_contains(&gw->ipv6_network, &a))
		adderr(ld, w->file, w->line, "%s: listen: expected an address on "
		    "the management network, not inside gateway.ipv6's network %s "
		    "(guests must never reach %s)", key, prefix_fmt(
		    &gw->ipv6_network, net, sizeof(net)), what);
}

static void
check_metrics(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;

	const struct moat_where *w = &gw->metrics_allow_where;
	char net[64], p[64];
	size_t i;

	check_listen(ld, "gateway.metrics", "the metrics endpoint",
	    gw->metrics_listen, &gw->metrics_where, "192.168.100.1:9477");
	if (w->line == 0)
		return;
	if (gw->metrics_listen == NULL)
		adderr(ld, w->file, w->line, "gateway.metrics: allow: expected "
		    "only with listen (it names who may scrape the listener)");
	prefix_fmt(&gw->network, net, sizeof(net));
	for (i = 0; i < gw->nmetrics_allow; i++)
		if (gw->network.plen > 0 && prefix_overlaps(&gw->network,
		    &gw->metrics_allow[i]))
			adderr(ld, w->file, w->line, "gateway.metrics: allow: "
			    "expected scrapers on the management network, not "
			    "\"%s\" (it overlaps gateway.network %s, where "
			    "guests are)", prefix_fmt(&gw->metrics_allow[i], p,
			    sizeof(p)), net);
}

/* The web console: on a management address like the metrics, and a
 * certificate comes with its key or not at all. */
static void
check_web(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;
	const struct moat_where *w = &gw->web_where;

	check_listen(ld, "gateway.web", "the web console", gw->web_listen,
	    w, "192.168.100.1:8443");
	if ((gw->web_cert == NULL) != (gw->web_key == NULL))
		adderr(ld, w->file, w->line, "gateway.web: expected cert and key "
		    "together, or neither (then a certificate of its own is "
		    "made at first start)");
	if (gw->web_listen == NULL && gw->web_cert != NULL)
		adderr(ld, w->file, w->line, "gateway.web: cert: expected only "
		    "with listen (the console is off without it)");
}

/* Replication between the boxes of a pair needs all five keys: an
 * address to listen on, the other box's, its key's pin, and this box's
 * certificate and key; or none of them (no replication). */
static void
check_ha(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;
	int n = (gw->ha_listen != NULL) + (gw->ha_peer != NULL) +
	    gw->ha_has_peer_key + (gw->ha_cert != NULL) + (gw->ha_key != NULL);

	if (n == 0)
		return;
	if (n != 5)
		adderr(ld, gw->ha_where.file, gw->ha_where.line, "gateway.ha: "
		    "expected listen, peer, peer_key, cert and key together "
		    "(replication to the other box of the pair), or none of "
		    "them");
	else if (!gw->ha)
		adderr(ld, gw->ha_where.file, gw->ha_where.line, "gateway.ha: "
		    "peer: replication needs enabled = true");
	check_listen(ld, "gateway.ha", "the replication endpoint",
	    gw->ha_listen, &gw->ha_listen_where, "192.168.200.1:7444");
}

void
check_all(struct loader *ld)
{
	check_ha(ld);
	check_hosts(ld);
	check_unique(ld);
	check_secrets(ld);
	check_secret_values(ld);
	check_secret_owners(ld);
	check_quotas(ld);
	check_exceptions(ld);
	check_network(ld);
	check_metrics(ld);
	check_web(ld);
}
