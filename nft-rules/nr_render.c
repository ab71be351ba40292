/*
 * nr_render.c -- the transaction as nft syntax, for review and for
 * `nft -f` (the benchmark loads it to compare).  The output depends only
 * on the config, so it can be diffed against golden files.
 */
#include <stdio.h>

#include "nr_int.h"

static void
render_set(FILE *f, const struct nr_set *s)
{
	size_t i;

	fprintf(f, "\t%s %s {\n\t\t%s\n", s->map ? "map" : "set", s->name,
	    s->decl);
	if (s->nelems > 0) {
		fprintf(f, "\t\telements = {");
		for (i = 0; i < s->nelems; i++)
			fprintf(f, "%s\n\t\t\t%s", i ? "," : "", s->elems[i]);
		fprintf(f, "\n\t\t}\n");
	}
	fprintf(f, "\t}\n");
}

static void
render_chain(FILE *f, const struct nr_chain *c)
{
	size_t i;

	fprintf(f, "\tchain %s {\n", c->name);
	if (c->hook)
		fprintf(f, "\t\t%s\n", c->hook);
	for (i = 0; i < c->nrules; i++)
		fprintf(f, "\t\t%s\n", c->rules[i].text);
	fprintf(f, "\t}\n");
}

static void
render_table(FILE *f, const struct nr_table *t)
{
	size_t i;

	fprintf(f, "table %s %s\ndelete table %s %s\n", t->fname, NFTR_TABLE,
	    t->fname, NFTR_TABLE);
	fprintf(f, "table %s %s {\n", t->fname, NFTR_TABLE);
	for (i = 0; i < t->ncounters; i++)
		fprintf(f, "\tcounter %s {\n\t}\n", t->counters[i]);
	for (i = 0; i < t->nsets; i++)
		if (!t->sets[i]->map)
			render_set(f, t->sets[i]);
	for (i = 0; i < t->nchains; i++)
		if (t->chains[i]->hook == NULL)
			render_chain(f, t->chains[i]);
	for (i = 0; i < t->nsets; i++)
		if (t->sets[i]->map)
			render_set(f, t->sets[i]);
	for (i = 0; i < t->nchains; i++)
		if (t->chains[i]->hook != NULL)
			render_chain(f, t->chains[i]);
	fprintf(f, "}\n");
}

void
nftr_render(FILE *f, const struct nftr_ruleset *rs)
{
	size_t i;

	fprintf(f, "# moat policy for %zu sandbox%s from %s (%s mode)\n",
	    rs->nsandboxes, rs->nsandboxes == 1 ? "" : "es", rs->source,
	    rs->mode == NFTR_MODE_HOST_ONLY ? "host-only" : "gateway");
	fprintf(f, "# One transaction: each table is deleted and recreated "
	    "atomically.\n# nft-rules also sets the table flags owner and "
	    "persist where the kernel\n# has them; nft syntax cannot say so."
	    "\n");
	for (i = 0; i < rs->ntables; i++)
		render_table(f, &rs->tables[i]);
}
