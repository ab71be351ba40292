/*
 * nr_delta.c -- move the kernel from the ruleset this context last
 * applied to a new one with one transaction holding only the difference,
 * so that adding, changing or removing one sandbox touches only its own
 * objects: every other sandbox's allowlist set keeps its elements, and an
 * unchanged ruleset sends nothing at all.
 *
 * Objects are matched by name (by position where the two lists agree,
 * as they do around one changed sandbox, so the cost is a walk of the
 * lists, not a search).  A chain whose rules differ is flushed and
 * refilled; a set whose elements differ gets the elements deleted and
 * added, matched by their nft text; an interval set that is not constant
 * (the host's IPv6 networks, lan6, which follow the host's interfaces) is
 * emptied and refilled in the same transaction, so no packet sees it half
 * done.  Anything else that differs (table layout, counters, a base
 * chain's hook, a set's type or flags, the elements of a constant set) is
 * not worth being clever about: the whole ruleset is replaced, as
 * nftr_apply does.  So is
 * everything when the kernel does not give moat's tables an owner, since
 * then another process may have changed them behind the old model.
 *
 * Order inside the transaction follows the references: elements that
 * point at chains go first, then rules (which use sets and chains), then
 * the chains and sets themselves; creation runs the other way round.
 */
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

#ifndef NFT_TABLE_F_OWNER
#define NFT_TABLE_F_OWNER	0x2
#endif

#define CREATE	(NLM_F_CREATE | NLM_F_EXCL)

/* One object matched by name across the two rulesets; NULL where it is
 * absent on that side. */
struct pair {
	const char	*name;
	const void	*old, *new;
};

struct pairs {
	struct pair	*v;
	size_t		 n;
	const void	**n2o;		/* by index in the new table */
};

struct named {
	const char	*name;
	const void	*obj;
	size_t		 idx;
	int		 side;		/* 0 old, 1 new */
};

static int
namedcmp(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : x->side - y->side;
}

static void
pair_add(struct pairs *p, const char *name, const void *o, const void *n)
{
	p->v[p->n++] = (struct pair){ name, o, n };
}

/* The lengths of the common head and tail of two name lists: a policy
 * keeps config order, so one sandbox changed leaves a small middle. */
static void
common_ends(const char *const *a, size_t na, const char *const *b, size_t nb,
    size_t *head, size_t *tail)
{
	size_t h = 0, t = 0;

	while (h < na && h < nb && strcmp(a[h], b[h]) == 0)
		h++;
	while (t < na - h && t < nb - h &&
	    strcmp(a[na - 1 - t], b[nb - 1 - t]) == 0)
		t++;
	*head = h;
	*tail = t;
}

/* Pair up two lists of uniquely named objects: the common ends by
 * position, the middle by sorting it. */
static void
pair_up(struct pairs *p, const char *const *on, const void *const *oo,
    size_t no, const char *const *nn, const void *const *no2, size_t nnew)
{
	struct named *v;
	size_t i, h, t, m = 0;

	p->v = xcalloc(no + nnew + 1, sizeof(*p->v));
	p->n2o = xcalloc(nnew + 1, sizeof(*p->n2o));
	p->n = 0;
	common_ends(on, no, nn, nnew, &h, &t);
	for (i = 0; i < h; i++) {
		pair_add(p, nn[i], oo[i], no2[i]);
		p->n2o[i] = oo[i];
	}
	for (i = 0; i < t; i++) {
		pair_add(p, nn[nnew - 1 - i], oo[no - 1 - i], no2[nnew - 1 - i]);
		p->n2o[nnew - 1 - i] = oo[no - 1 - i];
	}
	v = xcalloc(no + nnew - 2 * (h + t) + 1, sizeof(*v));
	for (i = h; i < no - t; i++)
		v[m++] = (struct named){ on[i], oo[i], i, 0 };
	for (i = h; i < nnew - t; i++)
		v[m++] = (struct named){ nn[i], no2[i], i, 1 };
	qsort(v, m, sizeof(*v), namedcmp);
	for (i = 0; i < m; i++) {
		if (v[i].side == 1) {
			pair_add(p, v[i].name, NULL, v[i].obj);
			continue;
		}
		if (i + 1 < m && v[i + 1].side == 1 &&
		    strcmp(v[i].name, v[i + 1].name) == 0) {
			pair_add(p, v[i].name, v[i].obj, v[i + 1].obj);
			p->n2o[v[i + 1].idx] = v[i].obj;
			i++;
		} else
			pair_add(p, v[i].name, v[i].obj, NULL);
	}
	free(v);
}

static void
pair_chains(struct pairs *p, const struct nr_table *o, const struct nr_table *n)
{
	const char **on = xcalloc(o->nchains + 1, sizeof(char *));
	const char **nn = xcalloc(n->nchains + 1, sizeof(char *));
	size_t i;

	for (i = 0; i < o->nchains; i++)
		on[i] = o->chains[i]->name;
	for (i = 0; i < n->nchains; i++)
		nn[i] = n->chains[i]->name;
	pair_up(p, on, (const void *const *)o->chains, o->nchains, nn,
	    (const void *const *)n->chains, n->nchains);
	free(on);
	free(nn);
}

static void
pair_sets(struct pairs *p, const struct nr_table *o, const struct nr_table *n)
{
	const char **on = xcalloc(o->nsets + 1, sizeof(char *));
	const char **nn = xcalloc(n->nsets + 1, sizeof(char *));
	size_t i;

	for (i = 0; i < o->nsets; i++)
		on[i] = o->sets[i]->name;
	for (i = 0; i < n->nsets; i++)
		nn[i] = n->sets[i]->name;
	pair_up(p, on, (const void *const *)o->sets, o->nsets, nn,
	    (const void *const *)n->sets, n->nsets);
	free(on);
	free(nn);
}

static int
strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- comparing ------------------------------------------------------ */

static bool
rules_equal(const struct nr_chain *a, const struct nr_chain *b)
{
	size_t i;

	if (a->nrules != b->nrules)
		return false;
	for (i = 0; i < a->nrules; i++)
		if (strcmp(a->rules[i].text, b->rules[i].text) != 0)
			return false;
	return true;
}

static bool
hooks_equal(const struct nr_chain *a, const struct nr_chain *b)
{
	if (a->hook == NULL || b->hook == NULL)
		return a->hook == b->hook;
	return strcmp(a->hook, b->hook) == 0;
}

static bool
elems_equal(const struct nr_set *a, const struct nr_set *b)
{
	size_t i;

	if (a->nelems != b->nelems)
		return false;
	for (i = 0; i < a->nelems; i++)
		if (strcmp(a->elems[i], b->elems[i]) != 0)
			return false;
	return true;
}

/* Elements can change in place only where each has its own text (no
 * interval halves) and the kernel lets them change (not constant). */
static bool
elems_mutable(const struct nr_set *s)
{
	uint32_t f = nftnl_set_get_u32(s->nl, NFTNL_SET_FLAGS);

	return (f & (NFT_SET_CONSTANT | NFT_SET_INTERVAL)) == 0 &&
	    s->nnle == s->nelems;
}

/* An interval set the kernel lets change: refilled whole (its elements
 * come in halves, which cannot be matched one by one). */
static bool
elems_refillable(const struct nr_set *s)
{
	uint32_t f = nftnl_set_get_u32(s->nl, NFTNL_SET_FLAGS);

	return (f & (NFT_SET_CONSTANT | NFT_SET_INTERVAL)) ==
	    NFT_SET_INTERVAL && !s->map;
}

static const char *
sets_comparable(const struct nr_set *a, const struct nr_set *b)
{
	if (strcmp(a->decl, b->decl) != 0 || a->map != b->map ||
	    a->dynamic != b->dynamic ||
	    nftnl_set_get_u32(a->nl, NFTNL_SET_FLAGS) !=
	    nftnl_set_get_u32(b->nl, NFTNL_SET_FLAGS))
		return "a set changed its type or flags";
	if (!a->dynamic && !elems_equal(a, b) &&
	    (!elems_mutable(a) || !elems_mutable(b)) &&
	    (!elems_refillable(a) || !elems_refillable(b)))
		return "a constant set changed its elements";
	return NULL;
}

static const char *
tables_comparable(const struct nr_table *o, const struct nr_table *n,
    const struct pairs *chains, const struct pairs *sets)
{
	const char *why;
	size_t i;

	if (o->family != n->family)
		return "the tables differ";
	if (o->ncounters != n->ncounters)
		return "the counters differ";
	for (i = 0; i < o->ncounters; i++)
		if (strcmp(o->counters[i], n->counters[i]) != 0)
			return "the counters differ";
	for (i = 0; i < chains->n; i++) {
		const struct nr_chain *a = chains->v[i].old, *b = chains->v[i].new;

		if ((a && a->hook) || (b && b->hook))
			if (a == NULL || b == NULL || !hooks_equal(a, b))
				return "a base chain changed its hook";
	}
	for (i = 0; i < sets->n; i++)
		if (sets->v[i].old && sets->v[i].new && (why = sets_comparable(
		    sets->v[i].old, sets->v[i].new)) != NULL)
			return why;
	return NULL;
}

/* ---- messages ------------------------------------------------------- */

static void
msg_flush_chain(struct nl_batch *b, const struct nr_table *t,
    const struct nr_chain *c)
{
	struct nftnl_rule *r = nftnl_rule_alloc();
	struct nlmsghdr *nlh;
	char desc[300];

	if (r == NULL)
		fatalx("out of memory");
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, (uint32_t)t->family);
	nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NFTR_TABLE);
	nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, c->name);
	snprintf(desc, sizeof(desc), "flush chain %s", c->name);
	nlh = batch_msg(b, NFT_MSG_DELRULE, t->family, 0, desc);
	nftnl_rule_nlmsg_build_payload(nlh, r);
	batch_next(b);
	nftnl_rule_free(r);
}

static void
msg_del_chain(struct nl_batch *b, const struct nr_table *t,
    const struct nr_chain *c)
{
	struct nftnl_chain *nc = nftnl_chain_alloc();
	struct nlmsghdr *nlh;
	char desc[300];

	if (nc == NULL)
		fatalx("out of memory");
	nftnl_chain_set_u32(nc, NFTNL_CHAIN_FAMILY, (uint32_t)t->family);
	nftnl_chain_set_str(nc, NFTNL_CHAIN_TABLE, NFTR_TABLE);
	nftnl_chain_set_str(nc, NFTNL_CHAIN_NAME, c->name);
	snprintf(desc, sizeof(desc), "delete chain %s", c->name);
	nlh = batch_msg(b, NFT_MSG_DELCHAIN, t->family, 0, desc);
	nftnl_chain_nlmsg_build_payload(nlh, nc);
	batch_next(b);
	nftnl_chain_free(nc);
}

/* An empty set object naming s, to carry elements or a deletion. */
static struct nftnl_set *
set_ref(const struct nr_table *t, const struct nr_set *s)
{
	struct nftnl_set *ns = nftnl_set_alloc();

	if (ns == NULL)
		fatalx("out of memory");
	nftnl_set_set_u32(ns, NFTNL_SET_FAMILY, (uint32_t)t->family);
	nftnl_set_set_str(ns, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(ns, NFTNL_SET_NAME, s->name);
	return ns;
}

static void
msg_del_set(struct nl_batch *b, const struct nr_table *t,
    const struct nr_set *s)
{
	struct nftnl_set *ns = set_ref(t, s);
	struct nlmsghdr *nlh;
	char desc[300];

	snprintf(desc, sizeof(desc), "delete set %s", s->name);
	nlh = batch_msg(b, NFT_MSG_DELSET, t->family, 0, desc);
	nftnl_set_nlmsg_build_payload(nlh, ns);
	batch_next(b);
	nftnl_set_free(ns);
}

static void
msg_new_set(struct nl_batch *b, const struct nr_table *t,
    const struct nr_set *s)
{
	struct nlmsghdr *nlh;
	char desc[300];

	snprintf(desc, sizeof(desc), "set %s", s->name);
	nlh = batch_msg(b, NFT_MSG_NEWSET, t->family, CREATE, desc);
	nftnl_set_nlmsg_build_payload(nlh, s->nl);
	batch_next(b);
}

static void
msg_new_chain(struct nl_batch *b, const struct nr_table *t,
    const struct nr_chain *c)
{
	struct nlmsghdr *nlh;
	char desc[300];

	snprintf(desc, sizeof(desc), "chain %s", c->name);
	nlh = batch_msg(b, NFT_MSG_NEWCHAIN, t->family, CREATE, desc);
	nftnl_chain_nlmsg_build_payload(nlh, c->nl);
	batch_next(b);
}

static void
msg_rules(struct nl_batch *b, const struct nr_table *t,
    const struct nr_chain *c)
{
	struct nlmsghdr *nlh;
	char desc[600];
	size_t j;

	for (j = 0; j < c->nrules; j++) {
		snprintf(desc, sizeof(desc), "rule in chain %s: %s", c->name,
		    c->rules[j].text);
		nlh = batch_msg(b, NFT_MSG_NEWRULE, t->family,
		    NLM_F_CREATE | NLM_F_APPEND, desc);
		nftnl_rule_nlmsg_build_payload(nlh, c->rules[j].nl);
		batch_next(b);
	}
}

/* A copy of what the model put in an element: key, flags, verdict. */
static struct nftnl_set_elem *
elem_copy(struct nftnl_set_elem *e)
{
	struct nftnl_set_elem *c = nftnl_set_elem_alloc();
	const void *key;
	uint32_t len;

	if (c == NULL)
		fatalx("out of memory");
	if ((key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len)) != NULL)
		nftnl_set_elem_set(c, NFTNL_SET_ELEM_KEY, key, len);
	if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS))
		nftnl_set_elem_set_u32(c, NFTNL_SET_ELEM_FLAGS,
		    nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS));
	if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_VERDICT))
		nftnl_set_elem_set_u32(c, NFTNL_SET_ELEM_VERDICT,
		    nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_VERDICT));
	if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_CHAIN))
		nftnl_set_elem_set_str(c, NFTNL_SET_ELEM_CHAIN,
		    nftnl_set_elem_get_str(e, NFTNL_SET_ELEM_CHAIN));
	return c;
}

/* The elements of a that b lacks (matched by text), as copies in a set
 * object; NULL if there are none.  Only the middle that differs is
 * searched: elements are unique, so the common ends hold none of them. */
static struct nftnl_set *
elems_minus(const struct nr_table *t, const struct nr_set *a,
    const struct nr_set *b)
{
	struct nftnl_set *out = NULL;
	const char **bt;
	size_t i, h, tl, nb;

	common_ends((const char *const *)a->elems, a->nelems,
	    (const char *const *)b->elems, b->nelems, &h, &tl);
	nb = b->nelems - h - tl;
	bt = xcalloc(nb + 1, sizeof(char *));
	for (i = 0; i < nb; i++)
		bt[i] = b->elems[h + i];
	qsort(bt, nb, sizeof(char *), strcmp_p);
	for (i = h; i < a->nelems - tl; i++) {
		if (bsearch(&a->elems[i], bt, nb, sizeof(char *),
		    strcmp_p) != NULL)
			continue;
		if (out == NULL)
			out = set_ref(t, a);
		nftnl_set_elem_add(out, elem_copy(a->nle[i]));
	}
	free(bt);
	return out;
}

/* A deletion that names no element empties the set. */
static void
msg_flush_set(struct nl_batch *b, const struct nr_table *t,
    const struct nr_set *s)
{
	struct nftnl_set *ns = set_ref(t, s);
	struct nlmsghdr *nlh;
	char desc[300];

	snprintf(desc, sizeof(desc), "flush set %s", s->name);
	nlh = batch_msg(b, NFT_MSG_DELSETELEM, t->family, 0, desc);
	nftnl_set_elems_nlmsg_build_payload(nlh, ns);
	batch_next(b);
	nftnl_set_free(ns);
}

static void
msg_elems_of(struct nl_batch *b, const struct nr_table *t,
    struct nftnl_set *s, uint16_t type, const char *what, const char *name)
{
	struct nftnl_set_elems_iter *it;
	struct nlmsghdr *nlh;
	char desc[300];
	int more;

	snprintf(desc, sizeof(desc), "%s elements of set %s", what, name);
	if ((it = nftnl_set_elems_iter_create(s)) == NULL)
		fatalx("out of memory");
	if (nftnl_set_elems_iter_cur(it) == NULL) {
		nftnl_set_elems_iter_destroy(it);
		return;
	}
	do {
		nlh = batch_msg(b, type, t->family,
		    type == NFT_MSG_NEWSETELEM ? CREATE : 0, desc);
		more = nftnl_set_elems_nlmsg_build_payload_iter(nlh, it);
		batch_next(b);
	} while (more > 0);
	nftnl_set_elems_iter_destroy(it);
}

/* ---- the transaction ------------------------------------------------ */

static void
delta_removals(struct nl_batch *b, const struct nr_table *t,
    const struct pairs *chains, const struct pairs *sets)
{
	struct nftnl_set *gone;
	size_t i;

	for (i = 0; i < sets->n; i++) {
		const struct nr_set *o = sets->v[i].old, *n = sets->v[i].new;

		if (o == NULL || n == NULL || o->dynamic || elems_equal(o, n))
			continue;
		if (elems_refillable(o)) {
			msg_flush_set(b, t, o);
			continue;
		}
		if ((gone = elems_minus(t, o, n)) == NULL)
			continue;
		msg_elems_of(b, t, gone, NFT_MSG_DELSETELEM, "old", o->name);
		nftnl_set_free(gone);
	}
	for (i = 0; i < chains->n; i++) {
		const struct nr_chain *o = chains->v[i].old, *n = chains->v[i].new;

		if (o != NULL && (n == NULL || !rules_equal(o, n)) &&
		    o->nrules > 0)
			msg_flush_chain(b, t, o);
	}
	for (i = 0; i < chains->n; i++)
		if (chains->v[i].new == NULL)
			msg_del_chain(b, t, chains->v[i].old);
	for (i = 0; i < sets->n; i++)
		if (sets->v[i].new == NULL)
			msg_del_set(b, t, sets->v[i].old);
}

/* Creation in the new table's own order, as table_to_batch does. */
static void
delta_additions(struct nl_batch *b, const struct nr_table *t,
    const struct pairs *chains, const struct pairs *sets)
{
	const struct nr_chain *oc;
	struct nftnl_set *added;
	size_t i;

	for (i = 0; i < t->nsets; i++)
		if (sets->n2o[i] == NULL)
			msg_new_set(b, t, t->sets[i]);
	for (i = 0; i < t->nchains; i++)
		if (chains->n2o[i] == NULL)
			msg_new_chain(b, t, t->chains[i]);
	for (i = 0; i < t->nsets; i++) {
		const struct nr_set *n = t->sets[i], *o;

		o = sets->n2o[i];
		if (o == NULL)
			msg_elems_of(b, t, n->nl, NFT_MSG_NEWSETELEM, "new",
			    n->name);
		else if (!n->dynamic && !elems_equal(o, n) &&
		    elems_refillable(n))
			msg_elems_of(b, t, n->nl, NFT_MSG_NEWSETELEM, "new",
			    n->name);
		else if (!n->dynamic && !elems_equal(o, n)) {
			if ((added = elems_minus(t, n, o)) == NULL)
				continue;
			msg_elems_of(b, t, added, NFT_MSG_NEWSETELEM, "new",
			    n->name);
			nftnl_set_free(added);
		}
	}
	for (i = 0; i < t->nchains; i++) {
		oc = chains->n2o[i];
		if (oc == NULL || !rules_equal(oc, t->chains[i]))
			msg_rules(b, t, t->chains[i]);
	}
}

static void
pairs_free(struct pairs *p)
{
	free(p->n2o);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

/* Append the delta from old to new to b; NULL, or why it cannot be. */
static const char *
delta_to_batch(struct nl_batch *b, const struct nftr_ruleset *old,
    const struct nftr_ruleset *new)
{
	struct pairs chains[2], sets[2];
	const char *why = NULL;
	size_t i;

	if (old->mode != new->mode || old->ntables != new->ntables)
		return "the tables differ";
	for (i = 0; i < new->ntables; i++) {
		pair_chains(&chains[i], &old->tables[i], &new->tables[i]);
		pair_sets(&sets[i], &old->tables[i], &new->tables[i]);
		if (why == NULL)
			why = tables_comparable(&old->tables[i],
			    &new->tables[i], &chains[i], &sets[i]);
	}
	for (i = 0; why == NULL && i < new->ntables; i++)
		delta_removals(b, &old->tables[i], &chains[i], &sets[i]);
	for (i = 0; why == NULL && i < new->ntables; i++)
		delta_additions(b, &new->tables[i], &chains[i], &sets[i]);
	for (i = 0; i < new->ntables; i++) {
		pairs_free(&chains[i]);
		pairs_free(&sets[i]);
	}
	return why;
}

static int
full(struct nftr_ctx *ctx, const struct nftr_ruleset *new,
    struct nftr_update_stats *st, const char *why)
{
	int r;

	st->full = true;
	st->why = why;
	st->nmsgs = nftr_ruleset_nmsgs(new);
	r = nftr_apply(ctx, new);
	return r;
}

int
nftr_update(struct nftr_ctx *ctx, const struct nftr_ruleset *old,
    const struct nftr_ruleset *new, struct nftr_update_stats *stp)
{
	struct nftr_update_stats dummy;
	struct nftr_update_stats *st = stp ? stp : &dummy;
	struct nl_batch *b;
	const char *why;
	int r;

	memset(st, 0, sizeof(*st));
	if (old == NULL || old != ctx->applied)
		return full(ctx, new, st, "no ruleset applied by this context");
	/* Only an owner flag guarantees that nobody else has changed the
	 * tables since old was applied through this socket. */
	if ((table_flags(ctx) & NFT_TABLE_F_OWNER) == 0)
		return full(ctx, new, st, "the kernel gives tables no owner");
	b = batch_new(ctx, false);
	if ((why = delta_to_batch(b, old, new)) != NULL) {
		batch_free(b);
		return full(ctx, new, st, why);
	}
	st->nmsgs = b->ndesc;
	r = batch_run(b, true);
	batch_free(b);
	if (r == -1) {
		/* A refused transaction changed nothing: replace it all. */
		log_warnx("incremental policy update refused (%s); replacing "
		    "the whole policy", nftr_error(ctx));
		return full(ctx, new, st, "the kernel refused the delta");
	}
	ctx->applied = new;
	return 0;
}
