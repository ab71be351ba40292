/*
 * promise.c -- the privileged parent's record of what it promised each
 * allowlist set (promise.h): two chained hash tables, sandboxes by name
 * and (sandbox, address) entries, with a sweep that prunes expired
 * entries a few buckets at a time.
 */
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "log.h"
#include "promise.h"

#define SB_BUCKETS	1024
#define SWEEP_STEP	4	/* buckets pruned per call */
#define NAME_LEN	33	/* sandbox names are at most 32 */

struct psb {
	struct psb	*next;
	size_t		 n;		/* its entries */
	bool		 doomed;	/* its set is gone (reload) */
	char		 name[NAME_LEN];
};

struct pent {
	struct pent	*next;
	struct psb	*sb;
	uint64_t	 until_ms;
	uint8_t		 addr[16];	/* network order; IPv4 in the first 4 */
	bool		 v6;
	uint32_t	 svc;		/* 0, or ADMIT_SVC(proto, port) */
};

struct promises {
	struct psb	*sbs[SB_BUCKETS];
	struct pent	**b;
	size_t		 mask, count, max, per_sb, cursor;
	uint64_t	 last_full_ms;	/* last sweep of the whole table */
	bool		 swept;
};

static uint64_t
hash_name(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* An address as the table keys it: 16 bytes, IPv4 in the first 4 and
 * the rest zero, and its family. */
struct pkey {
	uint8_t		 a[16];
	bool		 v6;
};

static struct pkey
key_of(const struct moat_addr *a)
{
	struct pkey k;

	memset(&k, 0, sizeof(k));
	k.v6 = a->family == AF_INET6;
	memcpy(k.a, a->a, k.v6 ? 16 : 4);
	return k;
}

static uint32_t
fold(const uint8_t a[16], bool v6)
{
	uint32_t w[4];

	memcpy(w, a, 16);
	return w[0] ^ w[1] ^ w[2] ^ w[3] ^ (uint32_t)v6;
}

static size_t
slot(const struct promises *p, const struct psb *sb, const uint8_t addr[16],
    bool v6, uint32_t svc)
{
	uint64_t h = ((uint64_t)(uintptr_t)sb ^ fold(addr, v6) ^
	    (uint64_t)svc << 32) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32 ^ h) & p->mask;
}

struct promises *
promises_new(size_t max, size_t per_sandbox)
{
	struct promises *p = xcalloc(1, sizeof(*p));

	p->mask = 1023;
	p->b = xcalloc(p->mask + 1, sizeof(*p->b));
	p->max = max;
	p->per_sb = per_sandbox;
	return p;
}

static void
sb_unlink(struct promises *p, struct psb *sb)
{
	struct psb **pp = &p->sbs[hash_name(sb->name) % SB_BUCKETS];

	for (; *pp != NULL; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			free(sb);
			return;
		}
}

void
promises_free(struct promises *p)
{
	struct pent *e, *next;
	struct psb *s, *sn;
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i <= p->mask; i++)
		for (e = p->b[i]; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	for (i = 0; i < SB_BUCKETS; i++)
		for (s = p->sbs[i]; s != NULL; s = sn) {
			sn = s->next;
			free(s);
		}
	free(p->b);
	free(p);
}

static struct psb *
sb_find(const struct promises *p, const char *name)
{
	struct psb *sb = p->sbs[hash_name(name) % SB_BUCKETS];

	while (sb != NULL && strcmp(sb->name, name) != 0)
		sb = sb->next;
	return sb;
}

static struct psb *
sb_get(struct promises *p, const char *name)
{
	struct psb *sb = sb_find(p, name);
	size_t h = hash_name(name) % SB_BUCKETS;

	if (sb != NULL)
		return sb;
	sb = xcalloc(1, sizeof(*sb));
	snprintf(sb->name, sizeof(sb->name), "%s", name);
	sb->next = p->sbs[h];
	p->sbs[h] = sb;
	return sb;
}

/* Remove the entries of bucket i that expired by now_ms, or whose
 * sandbox is doomed. */
static void
prune_bucket(struct promises *p, size_t i, uint64_t now_ms)
{
	struct pent **pp = &p->b[i], *e;

	while ((e = *pp) != NULL) {
		if (e->until_ms > now_ms && !e->sb->doomed) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->sb->n--;
		p->count--;
		free(e);
	}
}

static void
sweep_some(struct promises *p, uint64_t now_ms)
{
	size_t k;

	for (k = 0; k < SWEEP_STEP; k++) {
		p->cursor = (p->cursor + 1) & p->mask;
		prune_bucket(p, p->cursor, now_ms);
	}
}

/* The whole table, at most once a second: only when it is full. */
static void
sweep_all(struct promises *p, uint64_t now_ms)
{
	size_t i;

	if (p->swept && now_ms - p->last_full_ms < 1000)
		return;
	p->swept = true;
	p->last_full_ms = now_ms;
	for (i = 0; i <= p->mask; i++)
		prune_bucket(p, i, now_ms);
}

static struct pent *
ent_find(const struct promises *p, const struct psb *sb,
    const struct pkey *k, uint32_t svc)
{
	struct pent *e;

	if (sb == NULL)
		return NULL;
	for (e = p->b[slot(p, sb, k->a, k->v6, svc)]; e != NULL;
	    e = e->next)
		if (e->sb == sb && e->v6 == k->v6 && e->svc == svc &&
		    memcmp(e->addr, k->a, 16) == 0)
			return e;
	return NULL;
}

/* Twice the buckets while the table holds more entries than buckets. */
static void
grow(struct promises *p)
{
	struct pent **old = p->b, *e, *next;
	size_t i, omask = p->mask;

	if (p->count <= p->mask || p->mask + 1 >= p->max)
		return;
	p->mask = omask * 2 + 1;
	p->b = xcalloc(p->mask + 1, sizeof(*p->b));
	for (i = 0; i <= omask; i++)
		for (e = old[i]; e != NULL; e = next) {
			size_t s = slot(p, e->sb, e->addr, e->v6, e->svc);

			next = e->next;
			e->next = p->b[s];
			p->b[s] = e;
		}
	free(old);
}

static bool
addr_ok(const struct moat_addr *a)
{
	return a->family == AF_INET || a->family == AF_INET6;
}

static bool
live(const struct pent *e, uint64_t now_ms)
{
	return e != NULL && e->until_ms > now_ms;
}

int
promises_plan(struct promises *p, const char *sandbox,
    const struct moat_addr *a, const uint32_t *svc, size_t n,
    uint32_t timeout_ms, uint64_t now_ms, uint32_t *out_ms)
{
	struct psb *sb = sb_find(p, sandbox);
	struct pent *e;
	struct pkey k;
	size_t i, need = 0;

	sweep_some(p, now_ms);
	for (i = 0; i < n; i++) {
		out_ms[i] = timeout_ms;
		if (!addr_ok(&a[i]))
			continue;
		k = key_of(&a[i]);
		e = ent_find(p, sb, &k, svc ? svc[i] : 0);
		if (e == NULL)
			need++;
		else if (live(e, now_ms) && e->until_ms - now_ms > timeout_ms)
			out_ms[i] = (uint32_t)(e->until_ms - now_ms);
	}
	if (need == 0)
		return 0;
	if (p->count + need > p->max ||
	    (sb != NULL && sb->n + need > p->per_sb))
		sweep_all(p, now_ms);
	if (p->count + need > p->max || need > p->per_sb ||
	    (sb != NULL && sb->n + need > p->per_sb))
		return -1;
	return 0;
}

void
promises_commit(struct promises *p, const char *sandbox,
    const struct moat_addr *a, const uint32_t *svc, size_t n,
    const uint32_t *out_ms, uint64_t now_ms)
{
	struct psb *sb = NULL;
	struct pent *e;
	struct pkey k;
	uint64_t until;
	size_t i, s;

	for (i = 0; i < n; i++) {
		if (!addr_ok(&a[i]))
			continue;
		if (sb == NULL)
			sb = sb_get(p, sandbox);
		until = now_ms + out_ms[i];
		k = key_of(&a[i]);
		if ((e = ent_find(p, sb, &k, svc ? svc[i] : 0)) != NULL) {
			if (until > e->until_ms)
				e->until_ms = until;
			continue;
		}
		if (p->count >= p->max || sb->n >= p->per_sb)
			continue;	/* promises_plan said there was room */
		e = xcalloc(1, sizeof(*e));
		e->sb = sb;
		memcpy(e->addr, k.a, 16);
		e->v6 = k.v6;
		e->svc = svc ? svc[i] : 0;
		e->until_ms = until;
		s = slot(p, sb, e->addr, e->v6, e->svc);
		e->next = p->b[s];
		p->b[s] = e;
		sb->n++;
		p->count++;
		grow(p);
	}
}

uint64_t
promises_left(struct promises *p, const char *sandbox,
    const struct moat_addr *a, uint64_t now_ms)
{
	struct pent *e;
	struct pkey k;

	if (!addr_ok(a))
		return 0;
	k = key_of(a);
	e = ent_find(p, sb_find(p, sandbox), &k, 0);
	return live(e, now_ms) ? e->until_ms - now_ms : 0;
}

/* Sweep out every doomed sandbox's entries, then the sandboxes. */
static void
drop_doomed(struct promises *p)
{
	struct psb *sb, *next;
	size_t i;

	for (i = 0; i <= p->mask; i++)
		prune_bucket(p, i, 0);
	for (i = 0; i < SB_BUCKETS; i++)
		for (sb = p->sbs[i]; sb != NULL; sb = next) {
			next = sb->next;
			if (sb->doomed)
				sb_unlink(p, sb);
		}
}

void
promises_forget(struct promises *p, const char *sandbox)
{
	struct psb *sb = sb_find(p, sandbox);

	if (sb == NULL)
		return;
	sb->doomed = true;
	drop_doomed(p);
}

static void
doom_unkept(const struct moat_sandbox *o, const struct moat_sandbox *n,
    void *arg)
{
	struct psb *sb = sb_find(arg, o->name);

	if (sb != NULL && !admit_set_kept(o, n))
		sb->doomed = true;
}

void
promises_reload(struct promises *p, const struct moat_config *old,
    const struct moat_config *new)
{
	admit_pair_sandboxes(old, new, doom_unkept, p);
	drop_doomed(p);
}

size_t
promises_count(const struct promises *p)
{
	return p->count;
}
