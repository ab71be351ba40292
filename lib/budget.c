/*
 * budget.c -- per-secret request budgets (see budget.h).
 *
 * Sliding windows, so that no 60 seconds carry more than a minute's
 * budget and no 24 hours more than a day's, wherever a window starts
 * (fixed calendar windows let twice a budget through across an edge).
 * The minute is counted by whole seconds, exactly: a request at second t
 * counts until second t + 60.  The day is counted by minutes and errs on
 * the strict side: a request in minute m counts while any second of that
 * minute is less than 24 hours old.  Memory per secret is fixed (a ring
 * of 60 and one of 1,444 slots) whatever the budget.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "log.h"

struct window {
	const char	*name;
	size_t		 nslots;
	int64_t		 unit;		/* seconds per slot */
	int64_t		 span;		/* seconds a request counts for, at
					 * most, after its slot's start */
};

/* A request in a second slot counts for 60 s; one in a minute slot while
 * its last second is under a day old: 86,400 + 59 s after the minute's
 * start. */
static const struct window w_minute = { "minute", BUDGET_SEC_SLOTS, 1, 60 };
static const struct window w_day = { "day", BUDGET_MIN_SLOTS, 60,
    86400 + 59 };

static struct budget_ctr *
find(const struct budget_set *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (strcmp(b->v[i].name, name) == 0)
			return &b->v[i];
	return NULL;
}

static struct budget_ctr *
get(struct budget_set *b, const char *name)
{
	struct budget_ctr *c = find(b, name);

	if (c != NULL)
		return c;
	b->v = xreallocarray(b->v, b->n + 1, sizeof(*b->v));
	c = &b->v[b->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	return c;
}

/* Does the slot still count at now?  A slot ahead of now (the clock went
 * back) counts: the strict side. */
static bool
live(const struct window *w, const struct budget_slot *sl, time_t now)
{
	return sl->n > 0 && sl->at * w->unit + w->span > (int64_t)now;
}

static uint64_t
count(const struct window *w, const struct budget_slot *ring, time_t now)
{
	uint64_t n = 0;
	size_t i;

	if (ring == NULL)
		return 0;
	for (i = 0; i < w->nslots; i++)
		if (live(w, &ring[i], now))
			n += ring[i].n;
	return n;
}

static void
charge(const struct window *w, struct budget_slot *ring, time_t now)
{
	int64_t at = (int64_t)now / w->unit;
	struct budget_slot *sl = &ring[(size_t)(at % (int64_t)w->nslots)];

	if (sl->at < at || !live(w, sl, now)) {	/* a slot from an earlier lap */
		sl->at = at;
		sl->n = 0;
	}
	sl->n++;
}

static int
by_at(const void *a, const void *b)
{
	const struct budget_slot *x = a, *y = b;

	return (x->at > y->at) - (x->at < y->at);
}

/* Seconds until the count at now falls below limit: the oldest slots age
 * out first. */
static uint32_t
retry_after(const struct window *w, const struct budget_slot *ring,
    time_t now, uint64_t limit)
{
	struct budget_slot *v = xcalloc(w->nslots, sizeof(*v));
	uint64_t total = 0, gone = 0;
	int64_t wait = 1;
	size_t i, n = 0;

	for (i = 0; i < w->nslots; i++)
		if (live(w, &ring[i], now)) {
			v[n++] = ring[i];
			total += ring[i].n;
		}
	qsort(v, n, sizeof(*v), by_at);
	for (i = 0; i < n && total - gone >= limit; i++) {
		gone += v[i].n;
		wait = v[i].at * w->unit + w->span - (int64_t)now;
	}
	free(v);
	return wait < 1 ? 1 : wait > UINT32_MAX ? UINT32_MAX : (uint32_t)wait;
}

static int
spent(struct ipc_budget_ack *ack, const char *name, const struct window *w,
    uint32_t retry)
{
	ack->status = 1;
	snprintf(ack->secret, sizeof(ack->secret), "%s", name);
	snprintf(ack->window, sizeof(ack->window), "%s", w->name);
	ack->retry_after = retry;
	return 1;
}

int
budget_charge(struct budget_set *b, const struct moat_config *cfg,
    const char *const *names, size_t n, time_t now,
    struct ipc_budget_ack *ack)
{
	const struct moat_secret *s;
	struct budget_ctr *c;
	size_t i, pass;

	memset(ack, 0, sizeof(*ack));
	for (pass = 0; pass < 2; pass++) {	/* check all, then charge */
		for (i = 0; i < n; i++) {
			s = config_secret_by_name(cfg, names[i]);
			if (s == NULL || (s->per_minute == 0 && s->per_day == 0))
				continue;
			c = get(b, names[i]);
			if (s->per_minute && c->sec == NULL)
				c->sec = xcalloc(w_minute.nslots,
				    sizeof(*c->sec));
			if (s->per_day && c->min == NULL)
				c->min = xcalloc(w_day.nslots, sizeof(*c->min));
			if (pass == 1) {
				if (s->per_minute)
					charge(&w_minute, c->sec, now);
				if (s->per_day)
					charge(&w_day, c->min, now);
			} else if (s->per_minute && count(&w_minute, c->sec,
			    now) >= (uint64_t)s->per_minute)
				return spent(ack, s->name, &w_minute,
				    retry_after(&w_minute, c->sec, now,
				    (uint64_t)s->per_minute));
			else if (s->per_day && count(&w_day, c->min, now) >=
			    (uint64_t)s->per_day)
				return spent(ack, s->name, &w_day,
				    retry_after(&w_day, c->min, now,
				    (uint64_t)s->per_day));
		}
	}
	return 0;
}

void
budget_usage(const struct budget_set *b, const char *name, time_t now,
    uint64_t *minute, uint64_t *day)
{
	const struct budget_ctr *c = find(b, name);

	*minute = c != NULL ? count(&w_minute, c->sec, now) : 0;
	*day = c != NULL ? count(&w_day, c->min, now) : 0;
}

void
budget_set_free(struct budget_set *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		free(b->v[i].sec);
		free(b->v[i].min);
	}
	free(b->v);
	b->v = NULL;
	b->n = 0;
}
