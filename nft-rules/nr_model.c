/*
 * nr_model.c -- the in-memory ruleset: tables, sets, chains, counters,
 * each held as a libnftnl object plus the nft syntax it renders to.
 */
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"

void
buf_add(struct nr_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL,
		    b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			fatalx("%s: bad format", __func__);
		if (b->s && b->len + (size_t)n < b->cap)
			break;
		b->cap = (b->cap + (size_t)n + 1) * 2;
		b->s = xreallocarray(b->s, b->cap, 1);
	}
	b->len += (size_t)n;
}

char *
buf_take(struct nr_buf *b)
{
	char *s = b->s ? b->s : xstrdup("");

	memset(b, 0, sizeof(*b));
	return s;
}

/* Grow an array of elements of size sz so that one more fits. */
static void *
grow(void *v, size_t n, size_t *cap, size_t sz)
{
	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 8;
	return xreallocarray(v, *cap, sz);
}

struct nr_table *
model_table(struct nftr_ruleset *rs, int family, const char *fname)
{
	struct nr_table *t;

	if (rs->ntables >= sizeof(rs->tables) / sizeof(rs->tables[0]))
		fatalx("%s: too many tables", __func__);
	t = &rs->tables[rs->ntables++];
	memset(t, 0, sizeof(*t));
	t->family = family;
	t->fname = fname;
	t->next_set_id = 1;
	return t;
}

struct nr_chain *
model_chain(struct nr_table *t, const char *name, const char *type,
    int hooknum, int prio, const char *prio_name)
{
	static const char *hooks[][2] = {	/* [hooknum] = {inet, bridge} */
		[NF_INET_PRE_ROUTING] = { "prerouting", "prerouting" },
		[NF_INET_LOCAL_IN] = { "input", "input" },
		[NF_INET_FORWARD] = { "forward", "forward" },
		[NF_INET_LOCAL_OUT] = { "output", "output" },
		[NF_INET_POST_ROUTING] = { "postrouting", "postrouting" },
	};
	struct nr_chain *c;
	struct nr_buf b = { 0 };

	t->chains = grow(t->chains, t->nchains, &t->capchains, sizeof(c));
	c = t->chains[t->nchains++] = xcalloc(1, sizeof(*c));
	c->name = xstrdup(name);
	if ((c->nl = nftnl_chain_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_chain_set_u32(c->nl, NFTNL_CHAIN_FAMILY, (uint32_t)t->family);
	nftnl_chain_set_str(c->nl, NFTNL_CHAIN_TABLE, NFTR_TABLE);
	nftnl_chain_set_str(c->nl, NFTNL_CHAIN_NAME, name);
	if (type == NULL)
		return c;
	nftnl_chain_set_str(c->nl, NFTNL_CHAIN_TYPE, type);
	nftnl_chain_set_u32(c->nl, NFTNL_CHAIN_HOOKNUM, (uint32_t)hooknum);
	nftnl_chain_set_s32(c->nl, NFTNL_CHAIN_PRIO, prio);
	nftnl_chain_set_u32(c->nl, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	buf_add(&b, "type %s hook %s priority %s; policy accept;", type,
	    hooks[hooknum][0], prio_name);
	c->hook = buf_take(&b);
	return c;
}

struct nr_set *
model_set(struct nr_table *t, const char *name, uint32_t keytype,
    uint32_t keylen, uint32_t flags, const char *decl)
{
	struct nr_set *s;

	t->sets = grow(t->sets, t->nsets, &t->capsets, sizeof(s));
	s = t->sets[t->nsets++] = xcalloc(1, sizeof(*s));
	s->name = xstrdup(name);
	s->decl = xstrdup(decl);
	s->map = (flags & NFT_SET_MAP) != 0;
	s->dynamic = (flags & NFT_SET_TIMEOUT) != 0;
	if ((s->nl = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_u32(s->nl, NFTNL_SET_FAMILY, (uint32_t)t->family);
	nftnl_set_set_str(s->nl, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(s->nl, NFTNL_SET_NAME, name);
	nftnl_set_set_u32(s->nl, NFTNL_SET_ID, t->next_set_id++);
	nftnl_set_set_u32(s->nl, NFTNL_SET_FLAGS, flags);
	nftnl_set_set_u32(s->nl, NFTNL_SET_KEY_TYPE, keytype);
	nftnl_set_set_u32(s->nl, NFTNL_SET_KEY_LEN, keylen);
	if (keytype == NR_TYPE_IFNAME) {
		/* nft(8) needs to be told that names are host byte order
		 * to show them (udata TLV: key byte order = host). */
		static const uint8_t ud[] = { 0, 4, 1, 0, 0, 0 };

		nftnl_set_set_data(s->nl, NFTNL_SET_USERDATA, ud, sizeof(ud));
	}
	if (s->map) {
		nftnl_set_set_u32(s->nl, NFTNL_SET_DATA_TYPE, NFT_DATA_VERDICT);
		nftnl_set_set_u32(s->nl, NFTNL_SET_DATA_LEN, 0);
	}
	return s;
}

void
model_set_elem_text(struct nr_set *s, const char *text)
{
	s->elems = grow(s->elems, s->nelems, &s->capelems, sizeof(char *));
	s->elems[s->nelems++] = xstrdup(text);
}

/* Add one element; text may be NULL for elements that are not shown on
 * their own (the closing half of an interval). */
void
model_set_elem(struct nr_set *s, const void *key, uint32_t keylen,
    uint32_t elflags, int verdict, const char *chain, const char *text)
{
	struct nftnl_set_elem *e;

	if ((e = nftnl_set_elem_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, keylen);
	if (elflags)
		nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, elflags);
	if (s->map) {
		nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_VERDICT,
		    (uint32_t)verdict);
		if (chain)
			nftnl_set_elem_set_str(e, NFTNL_SET_ELEM_CHAIN, chain);
	}
	nftnl_set_elem_add(s->nl, e);
	s->nle = grow(s->nle, s->nnle, &s->capnle, sizeof(*s->nle));
	s->nle[s->nnle++] = e;		/* owned by s->nl */
	if (text)
		model_set_elem_text(s, text);
}

/* Give each element of s a counter of its own (the set's "counter"). */
void
model_set_counter(struct nr_set *s)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc("counter")) == NULL)
		fatalx("out of memory");
	nftnl_set_add_expr(s->nl, e);
}

void
model_counter(struct nr_table *t, const char *name)
{
	t->counters = grow(t->counters, t->ncounters, &t->capcounters,
	    sizeof(char *));
	t->counters[t->ncounters++] = xstrdup(name);
}

struct nr_chain *
model_find_chain(struct nr_table *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nchains; i++)
		if (strcmp(t->chains[i]->name, name) == 0)
			return t->chains[i];
	return NULL;
}

/* Newest first: a rule almost always names the set made just before it
 * (a sandbox's allowlist), which keeps building n sandboxes linear. */
struct nr_set *
model_find_set(struct nr_table *t, const char *name)
{
	size_t i;

	for (i = t->nsets; i > 0; i--)
		if (strcmp(t->sets[i - 1]->name, name) == 0)
			return t->sets[i - 1];
	return NULL;
}

static void
chain_free(struct nr_chain *c)
{
	size_t i;

	for (i = 0; i < c->nrules; i++) {
		nftnl_rule_free(c->rules[i].nl);
		free(c->rules[i].text);
	}
	free(c->rules);
	nftnl_chain_free(c->nl);
	free(c->name);
	free(c->hook);
	free(c);
}

static void
set_free(struct nr_set *s)
{
	size_t i;

	for (i = 0; i < s->nelems; i++)
		free(s->elems[i]);
	free(s->elems);
	free(s->nle);
	nftnl_set_free(s->nl);
	free(s->name);
	free(s->decl);
	free(s);
}

void
model_free(struct nftr_ruleset *rs)
{
	struct nr_table *t;
	size_t i, j;

	for (i = 0; i < rs->ntables; i++) {
		t = &rs->tables[i];
		for (j = 0; j < t->nchains; j++)
			chain_free(t->chains[j]);
		for (j = 0; j < t->nsets; j++)
			set_free(t->sets[j]);
		for (j = 0; j < t->ncounters; j++)
			free(t->counters[j]);
		free(t->chains);
		free(t->sets);
		free(t->counters);
	}
	free(rs->source);
	free(rs);
}
