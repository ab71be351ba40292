/*
 * admit.c -- the one admission decision (see admit.h).
 */
#include <netinet/in.h>
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "log.h"

static const char *const whys[] = {
	[ADMIT_OK] = "admitted",
	[ADMIT_NOT_SANDBOX] = "source is not a sandbox",
	[ADMIT_NONE] = "sandbox egress is none",
	[ADMIT_SANDBOX_NET] = "an address of the sandbox network",
	[ADMIT_HOST] = "an address of the gateway host",
	[ADMIT_IPV6] = "an IPv6 address (the sandbox has no IPv6 egress)",
	[ADMIT_HOST_NET] = "an address on a network of the gateway host",
	[ADMIT_PRIVATE] = "a private address",
	[ADMIT_PORT] = "a port not in the sandbox's allow_ports",
};

const char *
admit_why_str(enum admit_why w)
{
	return (size_t)w < sizeof(whys) / sizeof(whys[0]) ? whys[w] : "?";
}

bool
admit_exception_applies(const struct moat_exception *x,
    const struct moat_sandbox *sb)
{
	size_t i;

	if (sb == NULL || sb->egress == EGRESS_NONE)
		return false;
	if (!x->sandboxes_given)
		return sb->egress == EGRESS_OPEN;
	for (i = 0; i < x->sandboxes.n; i++)
		if (strcmp(x->sandboxes.v[i], sb->name) == 0)
			return true;
	return false;
}

bool
admit_exception_covers(const struct moat_exception *x,
    const struct moat_addr *a, int proto, uint16_t port)
{
	size_t i;

	if (!prefix_contains(&x->to, a))
		return false;
	if (x->proto != 0 && x->proto != proto)
		return false;
	if (x->nports == 0)
		return true;
	for (i = 0; i < x->nports; i++)
		if (x->ports[i] == port)
			return true;
	return false;
}

static bool
port_in(const struct moat_port *p, size_t n, int proto, uint16_t port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i].proto == proto && p[i].port == port)
			return true;
	return false;
}

bool
admit_port_allowed(const struct moat_sandbox *sb, int proto, uint16_t port)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	int n;

	if (port_in(sb->allow_ports, sb->nallow_ports, proto, port))
		return true;
	n = config_named_ports(&sb->allow, p);
	return n > 0 && port_in(p, (size_t)n, proto, port);
}

/* Does entry (name or "*.name", maybe with ":PORTS") cover name?  "*.x"
 * covers x's subdomains, not x, as dnsd matches it. */
static bool
entry_covers(const char *entry, const char *name)
{
	size_t el = config_allow_namelen(entry), nl = strlen(name);

	if (el >= 2 && strncmp(entry, "*.", 2) == 0)
		return nl > el - 1 && strncmp(name + nl - (el - 1), entry + 1,
		    el - 1) == 0;
	return el == nl && strncmp(entry, name, nl) == 0;
}

int
admit_name_ports(const struct moat_sandbox *sb, const char *name,
    bool *plain, struct moat_port *out)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	size_t i, j, n = 0;
	int m;

	*plain = false;
	for (i = 0; i < sb->allow.n; i++) {
		if (!entry_covers(sb->allow.v[i], name))
			continue;
		if ((m = config_allow_ports(sb->allow.v[i], p)) == 0)
			*plain = true;
		for (j = 0; j < (size_t)m && n < MOAT_NAME_PORTS_MAX; j++)
			if (!port_in(out, n, p[j].proto, p[j].port))
				out[n++] = p[j];
	}
	return (int)n;
}

bool
admit_name_port(const struct moat_sandbox *sb, const char *name, int proto,
    uint16_t port)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	bool plain;
	int n;

	if (sb->egress != EGRESS_ALLOWLIST)
		return sb->egress == EGRESS_OPEN;
	n = admit_name_ports(sb, name, &plain, p);
	return (plain && port_in(sb->allow_ports, sb->nallow_ports, proto,
	    port)) || port_in(p, (size_t)n, proto, port);
}

size_t
admit_elems(const struct moat_addr *a, size_t n, bool plain,
    const struct moat_port *p, size_t np, struct admit_elem *out)
{
	size_t i, j, k = 0;

	for (i = 0; i < n; i++) {
		if (plain) {
			out[k].addr = a[i];
			out[k++].svc = 0;
		}
		for (j = 0; j < np; j++) {
			out[k].addr = a[i];
			out[k++].svc = ADMIT_SVC(p[j].proto, p[j].port);
		}
	}
	return k;
}

bool
admit_set_ports(const struct moat_config *cfg, const char *sandbox,
    bool plain, const struct moat_port *p, size_t np)
{
	const struct moat_sandbox *sb = config_sandbox_by_name(cfg, sandbox);
	struct moat_port named[MOAT_NAME_PORTS_MAX];
	size_t i;
	int n;

	if (sb == NULL || (!plain && np == 0))
		return false;
	if (np == 0)
		return true;
	if ((n = config_named_ports(&sb->allow, named)) < 0)
		n = 0;
	for (i = 0; i < np; i++)
		if (!port_in(named, (size_t)n, p[i].proto, p[i].port))
			return false;
	return true;
}

static bool
exception_admits(const struct moat_config *cfg, const struct moat_sandbox *sb,
    const struct moat_addr *a, int proto, uint16_t port)
{
	size_t i;

	for (i = 0; i < cfg->gw.nexceptions; i++)
		if (admit_exception_applies(&cfg->gw.exceptions[i], sb) &&
		    admit_exception_covers(&cfg->gw.exceptions[i], a, proto,
		    port))
			return true;
	return false;
}

/* Whatever the networks are, they hold the guests and the gateway: its
 * IPv4 network and address, and with gateway.ipv6 the guests' /64 and
 * the gateway's IPv6 address. */
static bool
in_sandbox_net(const struct moat_config *cfg, const struct moat_addr *a)
{
	const struct moat_gateway *gw = &cfg->gw;

	return prefix_contains(&gw->network, a) ||
	    addr_cmp(a, &gw->address) == 0 || (gw->ipv6 &&
	    (prefix_contains(&gw->ipv6_network, a) ||
	    addr_cmp(a, &gw->ipv6_address) == 0));
}

/* IPv4 for every sandbox; IPv6 for a sandbox with an IPv6 address
 * (config_sandbox_addr6), which reaches public IPv6 as it reaches public
 * IPv4. */
static bool
family_admitted(const struct moat_config *cfg, const struct moat_sandbox *sb,
    const struct moat_addr *a)
{
	struct moat_addr a6;

	return a->family == AF_INET || (a->family == AF_INET6 &&
	    config_sandbox_addr6(cfg, sb, &a6));
}

/* IPv6: on one of the host's own networks (a LAN with a global prefix,
 * the policy's lan6), which no private range covers. */
static bool
on_host_net6(const struct admit_host *host, const struct moat_addr *a)
{
	size_t i;

	for (i = 0; host != NULL && host->plen != NULL && i < host->n; i++) {
		struct moat_prefix net = { host->v[i], host->plen[i] };
		int bit;

		if (host->v[i].family != AF_INET6 || net.plen >= 128)
			continue;
		for (bit = net.plen; bit < 128; bit++)
			net.addr.a[bit / 8] &= (uint8_t)~(0x80 >> (bit % 8));
		if (prefix_contains(&net, a))
			return true;
	}
	return false;
}

/* IPv6: in one of the site's own prefixes (gateway.ipv6.site_prefixes),
 * which lan6 holds too. */
static bool
on_site6(const struct moat_config *cfg, const struct moat_addr *a)
{
	size_t i;

	for (i = 0; i < cfg->gw.nipv6_site; i++)
		if (prefix_contains(&cfg->gw.ipv6_site[i], a))
			return true;
	return false;
}

bool
admit_private(const struct moat_rangeset *priv, const struct moat_addr *a)
{
	struct moat_addr u = *a, v4;

	addr_unmap(&u);
	if (addr_nat64_v4(&u, &v4))
		return rangeset_contains(priv, &v4);
	return rangeset_contains(priv, &u);
}

/* The guests' networks and the gateway, for an address itself or, in
 * NAT64's well-known prefix, for the IPv4 address it carries: the
 * translator would take 64:ff9b::<gateway> to the gateway. */
static bool
in_sandbox_net_or_nat64(const struct moat_config *cfg,
    const struct moat_addr *a)
{
	struct moat_addr v4;

	return in_sandbox_net(cfg, a) ||
	    (addr_nat64_v4(a, &v4) && in_sandbox_net(cfg, &v4));
}

static bool
host_has_or_nat64(const struct admit_host *host, const struct moat_addr *a)
{
	struct moat_addr v4;

	return admit_host_has(host, a) ||
	    (addr_nat64_v4(a, &v4) && admit_host_has(host, &v4));
}

enum admit_why
admit_addr(const struct moat_config *cfg, const struct moat_sandbox *sb,
    const struct admit_host *host, const struct moat_addr *addr, int proto,
    uint16_t port)
{
	struct moat_addr a = *addr;

	if (sb == NULL)
		return ADMIT_NOT_SANDBOX;
	if (sb->egress == EGRESS_NONE)
		return ADMIT_NONE;
	addr_unmap(&a);
	if (in_sandbox_net_or_nat64(cfg, &a))
		return ADMIT_SANDBOX_NET;
	if (host != NULL && (host_has_or_nat64(host, &a) ||
	    admit_host_has(host, addr)))
		return ADMIT_HOST;
	/* 64:ff9b::<IPv4> stays IPv6 here: only a sandbox with IPv6. */
	if (!family_admitted(cfg, sb, &a))
		return ADMIT_IPV6;
	if (a.family == AF_INET6 && (on_host_net6(host, &a) ||
	    on_site6(cfg, &a)))
		return ADMIT_HOST_NET;
	/* Exceptions match the address as written: one for 10.1.2.3 does
	 * not open 64:ff9b::10.1.2.3. */
	if (exception_admits(cfg, sb, &a, proto, port))
		return ADMIT_OK;
	if (admit_private(cfg->private, &a))
		return ADMIT_PRIVATE;
	if (sb->egress == EGRESS_ALLOWLIST &&
	    !admit_port_allowed(sb, proto, port))
		return ADMIT_PORT;
	return ADMIT_OK;
}

static bool
allows_all_of(const struct moat_strlist *n, const struct moat_strlist *o)
{
	size_t i, j;

	/* Unchanged, the usual case: one pass. */
	for (i = 0; i < o->n && i < n->n; i++)
		if (strcmp(o->v[i], n->v[i]) != 0)
			break;
	for (; i < o->n; i++) {
		for (j = 0; j < n->n; j++)
			if (strcmp(o->v[i], n->v[j]) == 0)
				break;
		if (j == n->n)
			return false;
	}
	return true;
}

bool
admit_set_kept(const struct moat_sandbox *old, const struct moat_sandbox *new)
{
	return old != NULL && new != NULL && strcmp(old->name, new->name) == 0 &&
	    old->egress == EGRESS_ALLOWLIST && new->egress == EGRESS_ALLOWLIST &&
	    allows_all_of(&new->allow, &old->allow);
}

static int
sb_namecmp(const void *a, const void *b)
{
	const struct moat_sandbox *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

void
admit_pair_sandboxes(const struct moat_config *old,
    const struct moat_config *new, void (*fn)(const struct moat_sandbox *,
    const struct moat_sandbox *, void *), void *arg)
{
	const struct moat_sandbox **idx, *const *hit, *key;
	struct moat_sandbox probe;
	size_t i, n = 0;

	idx = xcalloc(new->nsandboxes + 1, sizeof(*idx));
	for (i = 0; i < new->nsandboxes; i++)
		if (new->sandboxes[i].name != NULL)
			idx[n++] = &new->sandboxes[i];
	qsort(idx, n, sizeof(*idx), sb_namecmp);
	for (i = 0; i < old->nsandboxes; i++) {
		if (old->sandboxes[i].name == NULL)
			continue;
		probe.name = old->sandboxes[i].name;
		key = &probe;
		hit = bsearch(&key, idx, n, sizeof(*idx), sb_namecmp);
		fn(&old->sandboxes[i], hit ? *hit : NULL, arg);
	}
	free(idx);
}

int
admit_set_add(const struct moat_config *cfg, const char *sandbox,
    const struct moat_addr *in, size_t n, struct moat_addr *ok,
    uint32_t *timeout_ms)
{
	const struct moat_sandbox *sb = config_sandbox_by_name(cfg, sandbox);
	size_t i;
	int k = 0;

	if (sb == NULL || sb->egress != EGRESS_ALLOWLIST)
		return -1;
	if (*timeout_ms > ADMIT_SET_TIMEOUT_MAX_MS)
		*timeout_ms = ADMIT_SET_TIMEOUT_MAX_MS;
	/* As admit_addr judges a flow's address, without exceptions (which
	 * the policy applies by rule, never through the sets). */
	for (i = 0; i < n; i++)
		if (family_admitted(cfg, sb, &in[i]) &&
		    !in_sandbox_net_or_nat64(cfg, &in[i]) &&
		    !admit_private(cfg->private, &in[i]))
			ok[k++] = in[i];
	return k;
}

void
admit_host_add(struct admit_host *h, const struct moat_addr *a)
{
	admit_host_add_net(h, a, a->family == AF_INET6 ? 128 : 32);
}

void
admit_host_add_net(struct admit_host *h, const struct moat_addr *a,
    unsigned plen)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (addr_cmp(&h->v[i], a) == 0) {
			h->plen[i] = (uint8_t)plen;
			return;
		}
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->v = xreallocarray(h->v, h->cap, sizeof(*h->v));
		h->plen = xreallocarray(h->plen, h->cap, sizeof(*h->plen));
	}
	h->plen[h->n] = (uint8_t)plen;
	h->v[h->n++] = *a;
}

void
admit_host_del(struct admit_host *h, const struct moat_addr *a)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (addr_cmp(&h->v[i], a) == 0) {
			h->plen[i] = h->plen[h->n - 1];
			h->v[i] = h->v[--h->n];
			return;
		}
}

bool
admit_host_has(const struct admit_host *h, const struct moat_addr *a)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (addr_cmp(&h->v[i], a) == 0)
			return true;
	return false;
}

void
admit_host_free(struct admit_host *h)
{
	free(h->v);
	free(h->plen);
	memset(h, 0, sizeof(*h));
}
