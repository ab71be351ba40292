/*
 * policy.c -- sandboxes by address, and names by hash (see policy.h).
 */
#include <sys/socket.h>
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "log.h"
#include "policy.h"

struct nsent {
	struct nsent	*next;
	uint64_t	 hash;
	size_t		 len;
	uint8_t		 wire[];
};

struct nameset {
	struct nsent	**b;
	size_t		  nb;		/* power of two */
	size_t		  n;
	uint64_t	  seed;
};

/* FNV-1a over the bytes, started from a per-set random seed so that a
 * guest cannot aim queries at one chain.  Chains only ever hold names
 * from the config, so even a bad seed costs little. */
static uint64_t
hash_bytes(uint64_t seed, const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static uint64_t
random_seed(void)
{
	uint64_t s;

	arc4random_buf(&s, sizeof(s));
	return s;
}

struct nameset *
nameset_new(size_t hint)
{
	struct nameset *s = xcalloc(1, sizeof(*s));

	s->nb = 16;
	while (s->nb < hint * 2)
		s->nb <<= 1;
	s->b = xcalloc(s->nb, sizeof(*s->b));
	s->seed = random_seed();
	return s;
}

void
nameset_free(struct nameset *s)
{
	struct nsent *e, *next;
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->nb; i++)
		for (e = s->b[i]; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	free(s->b);
	free(s);
}

bool
nameset_has(const struct nameset *s, const uint8_t *wire, size_t len)
{
	uint64_t h = hash_bytes(s->seed, wire, len);
	const struct nsent *e;

	for (e = s->b[h & (s->nb - 1)]; e != NULL; e = e->next)
		if (e->hash == h && e->len == len &&
		    memcmp(e->wire, wire, len) == 0)
			return true;
	return false;
}

void
nameset_add(struct nameset *s, const uint8_t *wire, size_t len)
{
	uint64_t h = hash_bytes(s->seed, wire, len);
	struct nsent *e;
	size_t i;

	if (nameset_has(s, wire, len))
		return;
	e = xmalloc(sizeof(*e) + len);
	e->hash = h;
	e->len = len;
	memcpy(e->wire, wire, len);
	i = h & (s->nb - 1);
	e->next = s->b[i];
	s->b[i] = e;
	s->n++;
}

size_t
nameset_count(const struct nameset *s)
{
	return s->n;
}

size_t
pattern_to_wire(const char *pattern, uint8_t *wire, size_t cap, bool *wild)
{
	ldns_rdf *d = NULL;
	size_t len = 0;

	*wild = strncmp(pattern, "*.", 2) == 0;
	if (*wild)
		pattern += 2;
	if (*pattern == '\0' || strchr(pattern, '*') != NULL ||
	    strchr(pattern, '\\') != NULL)
		return 0;
	if (ldns_str2rdf_dname(&d, pattern) != LDNS_STATUS_OK)
		return 0;
	ldns_dname2canonical(d);
	if (ldns_rdf_size(d) <= cap) {
		len = ldns_rdf_size(d);
		memcpy(wire, ldns_rdf_data(d), len);
	}
	ldns_rdf_deep_free(d);
	return len;
}

/* --- sandboxes ------------------------------------------------------- */

struct policy {
	const struct moat_config *cfg;	/* the sandboxes point into it */
	struct sbpolicy	 *sb;
	size_t		  nsb;
	size_t		 *byaddr;	/* open addressing: index + 1, 0 empty */
	size_t		  nbyaddr;
	uint64_t	  seed;
};

static size_t
addr_slot(const struct policy *p, const uint8_t v4[4])
{
	return hash_bytes(p->seed, v4, 4) & (p->nbyaddr - 1);
}

static void
sbpolicy_init(struct sbpolicy *sp, const struct moat_config *cfg,
    const struct moat_sandbox *sb, size_t i)
{
	uint8_t wire[LDNS_MAX_DOMAINLEN + 2];
	struct moat_addr a6;
	size_t j, len;
	bool wild;

	sp->sb = sb;
	sp->index = i;
	sp->egress = sb->egress;
	sp->v6 = config_sandbox_addr6(cfg, sb, &a6);
	sp->exact = nameset_new(sb->allow.n);
	sp->wild = nameset_new(sb->allow.n);
	sp->named_ports = config_allow_has_ports(&sb->allow);
	for (j = 0; j < sb->allow.n; j++) {
		char name[LDNS_MAX_DOMAINLEN + 8];

		/* "NAME:tcp/22": the name is matched here, its ports are
		 * looked up for the answer (query.c). */
		snprintf(name, sizeof(name), "%.*s",
		    (int)config_allow_namelen(sb->allow.v[j]), sb->allow.v[j]);
		len = pattern_to_wire(name, wire, sizeof(wire), &wild);
		if (len == 0) {
			/* The loader validated every pattern; this is only
			 * a second line of defence. */
			log_warnx("sandbox %s: allow pattern \"%s\" ignored",
			    sb->name, sb->allow.v[j]);
			continue;
		}
		nameset_add(wild ? sp->wild : sp->exact, wire, len);
	}
}

struct policy *
policy_new(const struct moat_config *cfg)
{
	struct policy *p = xcalloc(1, sizeof(*p));
	size_t i, k;

	p->seed = random_seed();
	p->cfg = cfg;
	p->nsb = cfg->nsandboxes;
	p->sb = xcalloc(p->nsb ? p->nsb : 1, sizeof(*p->sb));
	p->nbyaddr = 16;
	while (p->nbyaddr < p->nsb * 2)
		p->nbyaddr <<= 1;
	p->byaddr = xcalloc(p->nbyaddr, sizeof(*p->byaddr));
	for (i = 0; i < p->nsb; i++) {
		const struct moat_sandbox *sb = &cfg->sandboxes[i];

		sbpolicy_init(&p->sb[i], cfg, sb, i);
		if (sb->address.family != AF_INET)
			continue;
		for (k = addr_slot(p, sb->address.a); p->byaddr[k] != 0;
		    k = (k + 1) & (p->nbyaddr - 1))
			;
		p->byaddr[k] = i + 1;
	}
	return p;
}

void
policy_update(struct policy *p, size_t i)
{
	struct sbpolicy *sp = &p->sb[i];
	double tokens = sp->tokens;
	uint64_t last = sp->last_ms, dropped = sp->dropped;

	nameset_free(sp->exact);
	nameset_free(sp->wild);
	sbpolicy_init(sp, p->cfg, sp->sb, i);
	sp->tokens = tokens;
	sp->last_ms = last;
	sp->dropped = dropped;
}

void
policy_free(struct policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nsb; i++) {
		nameset_free(p->sb[i].exact);
		nameset_free(p->sb[i].wild);
	}
	free(p->sb);
	free(p->byaddr);
	free(p);
}

/* A guest's IPv6 address holds the host part of its IPv4 address in its
 * low 32 bits (config_sandbox_addr6): the IPv4 address it stands for, to
 * be confirmed against the sandbox found. */
static bool
v6_to_v4(const struct policy *p, const struct moat_addr *a6,
    struct moat_addr *a4)
{
	const struct moat_gateway *gw = &p->cfg->gw;
	uint32_t net, host, m;

	if (!gw->ipv6 || !prefix_contains(&gw->ipv6_network, a6) ||
	    gw->network.plen <= 0)
		return false;
	m = gw->network.plen >= 32 ? 0 : ~0u >> gw->network.plen;
	memcpy(&net, gw->network.addr.a, 4);
	memcpy(&host, &a6->a[12], 4);
	net = htonl((ntohl(net) & ~m) | (ntohl(host) & m));
	memset(a4, 0, sizeof(*a4));
	a4->family = AF_INET;
	memcpy(a4->a, &net, 4);
	return true;
}

struct sbpolicy *
policy_sandbox(const struct policy *p, const struct moat_addr *addr)
{
	struct moat_addr a = *addr, six;
	struct sbpolicy *sp;
	size_t k, i;

	addr_unmap(&a);
	if (a.family == AF_INET6) {
		/* Only the one address config_sandbox_addr6 gives it. */
		if (!v6_to_v4(p, &a, &six) ||
		    (sp = policy_sandbox(p, &six)) == NULL || !sp->v6 ||
		    !config_sandbox_addr6(p->cfg, sp->sb, &six) ||
		    addr_cmp(&six, &a) != 0)
			return NULL;
		return sp;
	}
	if (a.family != AF_INET)
		return NULL;
	for (k = addr_slot(p, a.a); (i = p->byaddr[k]) != 0;
	    k = (k + 1) & (p->nbyaddr - 1))
		if (memcmp(p->sb[i - 1].sb->address.a, a.a, 4) == 0)
			return &p->sb[i - 1];
	return NULL;
}

size_t
policy_nsandboxes(const struct policy *p)
{
	return p->nsb;
}

struct sbpolicy *
policy_sandbox_at(const struct policy *p, size_t i)
{
	return i < p->nsb ? &p->sb[i] : NULL;
}

/* "*.example.com" covers every name strictly below example.com, at any
 * depth, so only proper suffixes are looked up in the wildcard set. */
static bool
wild_match(const struct sbpolicy *sp, const uint8_t *name, size_t len)
{
	size_t off = 0;

	while (off < len && name[off] != 0) {
		off += (size_t)name[off] + 1;
		if (off >= len)
			return false;
		if (nameset_has(sp->wild, name + off, len - off))
			return true;
	}
	return false;
}

enum verdict
policy_check(const struct sbpolicy *sp, const uint8_t *name, size_t len)
{
	switch (sp->egress) {
	case EGRESS_OPEN:
		return V_ALLOW;
	case EGRESS_NONE:
		return V_DENY_NONE;
	case EGRESS_ALLOWLIST:
		break;
	}
	if (nameset_has(sp->exact, name, len) || wild_match(sp, name, len))
		return V_ALLOW;
	return V_DENY_LIST;
}

const char *
verdict_reason(enum verdict v)
{
	static const char *const reasons[] = {
		[V_ALLOW] = "allowed",
		[V_DENY_NONE] = "egress none",
		[V_DENY_LIST] = "not on the allow list",
	};

	return reasons[v];
}

bool
policy_ratelimit(struct sbpolicy *sp, uint64_t now_ms, double qps,
    double burst)
{
	if (qps <= 0)
		return true;
	if (sp->last_ms == 0)
		sp->tokens = burst;
	else if (now_ms > sp->last_ms)
		sp->tokens += (double)(now_ms - sp->last_ms) * qps / 1000.0;
	if (sp->tokens > burst)
		sp->tokens = burst;
	sp->last_ms = now_ms;
	if (sp->tokens < 1.0)
		return false;
	sp->tokens -= 1.0;
	return true;
}
