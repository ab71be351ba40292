/*
 * ranges.c -- the canonical table of non-public address ranges and an
 * interval set built from it.
 *
 * The table follows IANA's IPv4 and IPv6 special-purpose address
 * registries: every range that is not globally reachable, plus the ranges
 * that embed IPv4 (NAT64, 6to4, Teredo) and everything outside 2000::/3.
 * Internally addresses are 128-bit integers so both families share one
 * interval arithmetic; IPv4 values simply stay below 2^32.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ranges.h"

typedef unsigned __int128 u128;

static const struct moat_range private_table[] = {
	{ "0.0.0.0/8",		"this network" },
	{ "10.0.0.0/8",		"private-use" },
	{ "100.64.0.0/10",	"shared address space (CGNAT)" },
	{ "127.0.0.0/8",	"loopback" },
	{ "169.254.0.0/16",	"link-local (cloud metadata)" },
	{ "172.16.0.0/12",	"private-use" },
	{ "192.0.0.0/24",	"IETF protocol assignments" },
	{ "192.0.2.0/24",	"documentation (TEST-NET-1)" },
	{ "192.88.99.0/24",	"deprecated 6to4 relay anycast" },
	{ "192.168.0.0/16",	"private-use" },
	{ "198.18.0.0/15",	"benchmarking" },
	{ "198.51.100.0/24",	"documentation (TEST-NET-2)" },
	{ "203.0.113.0/24",	"documentation (TEST-NET-3)" },
	{ "224.0.0.0/4",	"multicast" },
	{ "240.0.0.0/4",	"reserved, limited broadcast" },
	{ "::/128",		"unspecified" },
	{ "::1/128",		"loopback" },
	{ "::/96",		"IPv4-compatible (deprecated)" },
	{ "::ffff:0:0/96",	"IPv4-mapped" },
	{ "64:ff9b::/96",	"NAT64 well-known prefix" },
	{ "64:ff9b:1::/48",	"NAT64 local-use" },
	{ "100::/64",		"discard-only" },
	{ "2001::/23",		"IETF protocol assignments (Teredo, ...)" },
	{ "2001:db8::/32",	"documentation" },
	{ "2002::/16",		"6to4" },
	{ "3fff::/20",		"documentation" },
	{ "5f00::/16",		"segment routing SIDs" },
	{ "fc00::/7",		"unique local" },
	{ "fe80::/10",		"link-local" },
	{ "fec0::/10",		"site-local (deprecated)" },
	{ "ff00::/8",		"multicast" },
	{ "::/3",		"outside global unicast 2000::/3" },
	{ "4000::/2",		"outside global unicast 2000::/3" },
	{ "8000::/1",		"outside global unicast 2000::/3" },
};

struct ival {
	u128	lo, hi;
};

struct moat_rangeset {
	struct moat_interval *v[2];	/* [0] IPv4, [1] IPv6 */
	size_t	 n[2];
	struct ival *iv[2];		/* same intervals as integers */
};

const struct moat_range *
ranges_private_table(size_t *n)
{
	*n = sizeof(private_table) / sizeof(private_table[0]);
	return private_table;
}

static int
famidx(int family)
{
	return family == AF_INET6 ? 1 : 0;
}

static int
fambits(int family)
{
	return family == AF_INET6 ? 128 : 32;
}

static u128
addr_to_u128(const struct moat_addr *a)
{
	u128 v = 0;
	int i, len = a->family == AF_INET6 ? 16 : 4;

	for (i = 0; i < len; i++)
		v = (v << 8) | a->a[i];
	return v;
}

static void
u128_to_addr(u128 v, int family, struct moat_addr *a)
{
	int i, len = family == AF_INET6 ? 16 : 4;

	memset(a, 0, sizeof(*a));
	a->family = family;
	for (i = len - 1; i >= 0; i--) {
		a->a[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

static u128
hostmask(int family, int plen)
{
	int host = fambits(family) - plen;

	if (host <= 0)
		return 0;
	if (host >= 128)
		return ~(u128)0;
	return ((u128)1 << host) - 1;
}

int
prefix_parse(const char *s, struct moat_prefix *p)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	long plen;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash != NULL)
		*slash++ = '\0';
	if (addr_parse(buf, &p->addr) == -1)
		return -1;
	if (slash == NULL) {
		p->plen = fambits(p->addr.family);
		return 0;
	}
	if (*slash < '0' || *slash > '9' || strlen(slash) > 3)
		return -1;
	errno = 0;
	plen = strtol(slash, &end, 10);
	if (*end != '\0' || plen < 0 || plen > fambits(p->addr.family))
		return -1;
	p->plen = (int)plen;
	if (addr_to_u128(&p->addr) & hostmask(p->addr.family, p->plen))
		return -1;
	return 0;
}

char *
prefix_fmt(const struct moat_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	snprintf(buf, len, "%s/%d", addr_fmt(&p->addr, a, sizeof(a)), p->plen);
	return buf;
}

int
addr_cmp(const struct moat_addr *a, const struct moat_addr *b)
{
	u128 x, y;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	x = addr_to_u128(a);
	y = addr_to_u128(b);
	return x < y ? -1 : x > y;
}

static void
prefix_ival(const struct moat_prefix *p, struct ival *iv)
{
	iv->lo = addr_to_u128(&p->addr);
	iv->hi = iv->lo | hostmask(p->addr.family, p->plen);
}

bool
prefix_contains(const struct moat_prefix *p, const struct moat_addr *a)
{
	struct ival iv;
	u128 v;

	if (p->addr.family != a->family)
		return false;
	prefix_ival(p, &iv);
	v = addr_to_u128(a);
	return v >= iv.lo && v <= iv.hi;
}

bool
prefix_overlaps(const struct moat_prefix *p, const struct moat_prefix *q)
{
	struct ival a, b;

	if (p->addr.family != q->addr.family)
		return false;
	prefix_ival(p, &a);
	prefix_ival(q, &b);
	return a.lo <= b.hi && b.lo <= a.hi;
}

static int
ival_cmp(const void *x, const void *y)
{
	const struct ival *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Sort and merge overlapping or adjacent intervals in place. */
static size_t
ival_normalise(struct ival *v, size_t n)
{
	size_t i, out = 0;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), ival_cmp);
	for (i = 1; i < n; i++) {
		if (v[i].lo <= v[out].hi ||
		    (v[out].hi != ~(u128)0 && v[i].lo == v[out].hi + 1)) {
			if (v[i].hi > v[out].hi)
				v[out].hi = v[i].hi;
		} else
			v[++out] = v[i];
	}
	return out + 1;
}

/* Remove [cut.lo, cut.hi] from every interval; the result may grow by one. */
static size_t
ival_subtract(struct ival **vp, size_t n, struct ival cut)
{
	struct ival *v = *vp, *out;
	size_t i, m = 0;

	out = xreallocarray(NULL, n + 1, sizeof(*out));
	for (i = 0; i < n; i++) {
		if (cut.hi < v[i].lo || cut.lo > v[i].hi) {
			out[m++] = v[i];
			continue;
		}
		if (cut.lo > v[i].lo)
			out[m++] = (struct ival){ v[i].lo, cut.lo - 1 };
		if (cut.hi < v[i].hi)
			out[m++] = (struct ival){ cut.hi + 1, v[i].hi };
	}
	free(v);
	*vp = out;
	return m;
}

struct moat_rangeset *
rangeset_new_private(const struct moat_prefix *pub, size_t npub)
{
	return rangeset_new_deny(pub, npub, NULL, 0);
}

struct moat_rangeset *
rangeset_new_deny(const struct moat_prefix *pub, size_t npub,
    const struct moat_prefix *deny, size_t ndeny)
{
	struct moat_rangeset *rs;
	struct moat_prefix p;
	struct ival iv;
	size_t i, ntab, f;
	const struct moat_range *tab = ranges_private_table(&ntab);

	rs = xcalloc(1, sizeof(*rs));
	for (i = 0; i < ntab; i++) {
		if (prefix_parse(tab[i].cidr, &p) == -1)
			fatalx("%s: bad built-in range %s", __func__,
			    tab[i].cidr);
		f = famidx(p.addr.family);
		rs->iv[f] = xreallocarray(rs->iv[f], rs->n[f] + 1,
		    sizeof(struct ival));
		prefix_ival(&p, &rs->iv[f][rs->n[f]++]);
	}
	for (f = 0; f < 2; f++)
		rs->n[f] = ival_normalise(rs->iv[f], rs->n[f]);
	for (i = 0; i < npub; i++) {
		f = famidx(pub[i].addr.family);
		prefix_ival(&pub[i], &iv);
		rs->n[f] = ival_subtract(&rs->iv[f], rs->n[f], iv);
	}
	for (i = 0; i < ndeny; i++) {
		f = famidx(deny[i].addr.family);
		rs->iv[f] = xreallocarray(rs->iv[f], rs->n[f] + 1,
		    sizeof(struct ival));
		prefix_ival(&deny[i], &rs->iv[f][rs->n[f]++]);
		rs->n[f] = ival_normalise(rs->iv[f], rs->n[f]);
	}
	for (f = 0; f < 2; f++) {
		rs->v[f] = xcalloc(rs->n[f], sizeof(struct moat_interval));
		for (i = 0; i < rs->n[f]; i++) {
			int fam = f ? AF_INET6 : AF_INET;
			u128_to_addr(rs->iv[f][i].lo, fam, &rs->v[f][i].lo);
			u128_to_addr(rs->iv[f][i].hi, fam, &rs->v[f][i].hi);
		}
	}
	return rs;
}

void
rangeset_free(struct moat_rangeset *rs)
{
	int f;

	if (rs == NULL)
		return;
	for (f = 0; f < 2; f++) {
		free(rs->v[f]);
		free(rs->iv[f]);
	}
	free(rs);
}

bool
rangeset_contains(const struct moat_rangeset *rs, const struct moat_addr *a)
{
	size_t lo = 0, hi, mid;
	int f;
	u128 v;

	if (a->family != AF_INET && a->family != AF_INET6)
		return true;	/* unknown family: treat as private, fail closed */
	f = famidx(a->family);
	hi = rs->n[f];
	v = addr_to_u128(a);
	while (lo < hi) {	/* first interval with lo > v */
		mid = lo + (hi - lo) / 2;
		if (rs->iv[f][mid].lo <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && v <= rs->iv[f][lo - 1].hi;
}

const struct moat_interval *
rangeset_intervals(const struct moat_rangeset *rs, int family, size_t *n)
{
	int f = famidx(family);

	*n = rs->n[f];
	return rs->v[f];
}
