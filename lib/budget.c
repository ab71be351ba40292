/*
 * budget.c -- per-secret request budgets (see budget.h).
 *
 * Fixed windows (the calendar minute, the UTC day) rather than sliding
 * ones: the count is two integers per secret, Retry-After is exact, and
 * the worst burst is twice a budget across a window's edge.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "log.h"

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

/* Roll the counter's windows forward to now. */
static void
roll(struct budget_ctr *c, time_t now)
{
	if (c->minute != (int64_t)(now / 60)) {
		c->minute = (int64_t)(now / 60);
		c->nminute = 0;
	}
	if (c->day != (int64_t)(now / 86400)) {
		c->day = (int64_t)(now / 86400);
		c->nday = 0;
	}
}

static int
spent(struct ipc_budget_ack *ack, const char *name, const char *window,
    uint32_t retry)
{
	ack->status = 1;
	snprintf(ack->secret, sizeof(ack->secret), "%s", name);
	snprintf(ack->window, sizeof(ack->window), "%s", window);
	ack->retry_after = retry > 0 ? retry : 1;
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
			roll(c, now);
			if (pass == 1) {
				c->nminute++;
				c->nday++;
			} else if (s->per_minute &&
			    c->nminute >= (uint64_t)s->per_minute)
				return spent(ack, s->name, "minute",
				    (uint32_t)(60 - now % 60));
			else if (s->per_day && c->nday >= (uint64_t)s->per_day)
				return spent(ack, s->name, "day",
				    (uint32_t)(86400 - now % 86400));
		}
	}
	return 0;
}

void
budget_usage(const struct budget_set *b, const char *name, time_t now,
    uint64_t *minute, uint64_t *day)
{
	const struct budget_ctr *c = find(b, name);

	*minute = c && c->minute == (int64_t)(now / 60) ? c->nminute : 0;
	*day = c && c->day == (int64_t)(now / 86400) ? c->nday : 0;
}

void
budget_set_free(struct budget_set *b)
{
	free(b->v);
	b->v = NULL;
	b->n = 0;
}
