/*
 * commit.c -- the one path by which the policy in force changes
 * (commit.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admit.h"
#include "ctflows.h"
#include "gw.h"
#include "commit.h"
#include "grant.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "reload.h"
#include "verdicts.h"

struct moat_config *
gw_effective(struct gw *gw, const struct moat_config *file)
{
	struct moat_config *e = xmalloc(sizeof(*e));

	/* A view of file: its sandboxes copied, each sharing file's
	 * strings until the grants give it an allow list of its own. */
	*e = *file;
	e->sandboxes = NULL;
	if (file->nsandboxes > 0) {
		e->sandboxes = xreallocarray(NULL, file->nsandboxes,
		    sizeof(*e->sandboxes));
		memcpy(e->sandboxes, file->sandboxes, file->nsandboxes *
		    sizeof(*e->sandboxes));
	}
	/* A quarantined guest's sandbox first (egress none): its grants
	 * then lay nothing over it. */
	verdicts_overlay(e);
	grants_lay_over(gw, e);
	return e;
}

void
gw_effective_free(struct moat_config *e, const struct moat_config *file)
{
	size_t i, j;

	if (e == NULL)
		return;
	for (i = 0; i < e->nsandboxes; i++) {
		struct moat_strlist *l = &e->sandboxes[i].allow;

		if (l->v == file->sandboxes[i].allow.v)
			continue;
		for (j = 0; j < l->n; j++)
			free(l->v[j]);
		free(l->v);
	}
	verdicts_overlay_free(e, file);
	free(e->sandboxes);
	free(e);
}

/* The sandboxes whose allow list is not the same in a and b, two views
 * of one file: what a change of grants alone changed. */
static size_t
allow_changed(const struct moat_config *a, const struct moat_config *b,
    const char ***out)
{
	const char **v = NULL;
	size_t i, j, n = 0;
	bool same;

	for (i = 0; i < b->nsandboxes; i++) {
		const struct moat_strlist *x = &a->sandboxes[i].allow;
		const struct moat_strlist *y = &b->sandboxes[i].allow;

		same = x->n == y->n;
		for (j = 0; same && j < y->n; j++)
			same = config_strlist_has(x, y->v[j]);
		if (same)
			continue;
		v = xreallocarray(v, n + 1, sizeof(*v));
		v[n++] = b->sandboxes[i].name;
	}
	*out = v;
	return n;
}

static void
widened_pair(const struct moat_sandbox *o, const struct moat_sandbox *n,
    void *arg)
{
	struct moat_sandbox probe;
	bool *only = arg;
	size_t i;

	if (!*only)
		return;
	if (n == NULL) {
		*only = false;
		return;
	}
	for (i = 0; i < o->allow.n && *only; i++)
		*only = config_strlist_has(&n->allow, o->allow.v[i]);
	probe = *n;
	probe.allow = o->allow;
	*only = *only && config_sandbox_same(o, &probe);
}

/* Did old -> new only let sandboxes do more?  Then no flow is cut. */
static bool
only_widened(const struct moat_config *old, const struct moat_config *new,
    bool basis)
{
	bool only = !basis && old->nsandboxes == new->nsandboxes;

	admit_pair_sandboxes(old, new, widened_pair, &only);
	return only;
}

static double
ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Whether a sandbox's egress mode differs between a and b, two views of
 * one file (a quarantine or its end): then dnsd and the proxy must take
 * the whole change, not an allow list alone. */
static bool
egress_changed(const struct moat_config *a, const struct moat_config *b)
{
	size_t i;

	if (a == NULL || a->nsandboxes != b->nsandboxes)
		return true;
	for (i = 0; i < b->nsandboxes; i++)
		if (a->sandboxes[i].egress != b->sandboxes[i].egress)
			return true;
	return false;
}

int
gw_commit(struct gw *gw, struct moat_config *file, struct gw_commit *c,
    char *err, size_t errlen)
{
	struct moat_config *base = file != NULL ? file : gw->file;
	struct moat_config *old = gw->cfg, *oldfile = gw->file, *next;
	struct gw_reload *st = reload_of(gw);
	struct gw_delta d;
	struct timespec t0;
	const char **changed = NULL;
	size_t i, nchanged = 0;
	bool widened, whole;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	next = gw_effective(gw, base);
	/* 1. The kernel, all or nothing. */
	if (policy_apply(gw, next, err, errlen) == -1) {
		gw_effective_free(next, base);
		return -1;
	}
	gw->cfg = next;
	gw->file = base;
	st->commits++;
	c->old = old;
	c->new = next;
	c->file_changed = file != NULL;
	/* 2. What each module keeps of the policy follows it. */
	policy_of(gw)->quiet = c->from_peer;
	for (i = 0; i < MOD_MAX; i++)
		if (gw_modules[i]->on_commit != NULL)
			gw_modules[i]->on_commit(gw, c);
	policy_of(gw)->quiet = false;
	/* 3. The children: before the flows are cut, so that dnsd answers
	 * from the new lists by the time the conntrack walk ends.  A change
	 * of grants alone sends the lists that changed; a new file, or a
	 * sandbox's egress mode changed (a quarantine), the whole delta. */
	whole = file != NULL || egress_changed(old, next);
	if (!whole) {
		nchanged = allow_changed(old, next, &changed);
		if (nchanged > 0)
			proc_reload_sandboxes(gw, changed, nchanged);
		widened = only_widened(old, next, false);
	} else {
		conf_delta(gw, old, next, &d);
		d.nflog_view = gw_nflog_view_changed(old, next);
		widened = st->reloads > 0 && only_widened(old, next, d.basis);
		proc_reload(gw, &d);
		conf_delta_free(&d);
	}
	/* 4. What the new policy refuses is cut, whoever opened it: after a
	 * change of grants alone, only the flows of the sandboxes whose
	 * list changed can be refused. */
	ctflows_tick();
	if (widened)
		c->cut = 0;
	else if (!whole)
		c->cut = policy_cut_narrowed(next, changed, nchanged);
	else
		c->cut = policy_cut_flows(old, next);
	if (c->cut == -1)
		log_warnx("%s: the flows the change refuses could not all be "
		    "cut", c->why);
	else if (!widened && nchanged > 0)
		log_info("grants narrowed %s%s: %d flow(s) cut", changed[0],
		    nchanged > 1 ? " and others" : "", c->cut);
	gw_effective_free(old, oldfile);
	if (file != NULL)
		config_free(oldfile);
	c->old = NULL;
	/* 5. */
	c->ms = ms_since(&t0);
	st->commit_ms = c->ms;
	if (!widened && nchanged > 0)
		log_info("grants ended: %zu sandbox(es) narrowed in %.1f ms",
		    nchanged, c->ms);
	free(changed);
	log_debug("commit (%s): %.1f ms, %d flow(s) cut", c->why, c->ms,
	    c->cut);
	return 0;
}
