/*
 * nr_verify.c -- read moat's tables back from the kernel and compare
 * them with the ruleset.
 *
 * Both sides are reduced to the same canonical lines (one per table,
 * counter, set, element, chain and rule, rules numbered within their
 * chain, expressions as libnftnl prints them) and compared as sorted
 * lists: anything missing, extra, changed or reordered shows up as a
 * "-expected" / "+found" pair.  The comparison is on bytecode, but what
 * is printed is nft syntax: each expected line carries the policy's own
 * text, a found line borrows it when its bytecode is one the policy
 * makes, and anything else is spelled out as far as it can be.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

#ifndef NFT_TABLE_F_PERSIST
#define NFT_TABLE_F_PERSIST	0x4
#endif

struct line {
	char	*key;		/* canonical: what is compared */
	char	*show;		/* nft syntax: what is printed */
	char	*text;		/* rules: the policy's nft text of the rule */
	char	*chain;		/* rules: "FAMILY CHAIN", compared in order */
};

struct lines {
	struct line *v;
	size_t	  n, cap;
};

static void lines_add(struct lines *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
static void lines_show(struct lines *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
lines_add(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->n].key = s;
	l->v[l->n].show = NULL;
	l->v[l->n].text = NULL;
	l->v[l->n].chain = NULL;
	l->n++;
}

/* The nft syntax of the line just added. */
static void
lines_show(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	free(l->v[l->n - 1].show);
	l->v[l->n - 1].show = s;
}

static void
lines_free(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].show);
		free(l->v[i].text);
		free(l->v[i].chain);
	}
	free(l->v);
}

static const char *
flags_text(uint32_t f, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", f ? " { flags " : "",
	    (f & NFT_TABLE_F_DORMANT) ? "dormant " : "",
	    (f & NFT_TABLE_F_OWNER) ? "owner " : "",
	    (f & NFT_TABLE_F_PERSIST) ? "persist " : "",
	    f ? "}" : "");
	return buf;
}

char *
canon_rule(const struct nftnl_rule *r)
{
	struct nftnl_expr_iter *it = nftnl_expr_iter_create(r);
	struct nftnl_expr *e;
	struct nr_buf b = { 0 };
	char tmp[1024];

	if (it == NULL)
		fatalx("out of memory");
	while ((e = nftnl_expr_iter_next(it)) != NULL) {
		nftnl_expr_snprintf(tmp, sizeof(tmp), e, NFTNL_OUTPUT_DEFAULT,
		    0);
		buf_add(&b, "[ %s %s]", nftnl_expr_get_str(e, NFTNL_EXPR_NAME),
		    tmp);
	}
	nftnl_expr_iter_destroy(it);
	return buf_take(&b);
}

static void
hex(char *out, const uint8_t *p, uint32_t len)
{
	static const char digits[] = "0123456789abcdef";
	uint32_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * len] = '\0';
}

struct elem_arg {
	struct lines	*l;
	const char	*prefix;
	const char	*show;		/* "inet moat SET" */
	bool		 ipv4;		/* keyed on ipv4_addr: shown dotted */
};

static const char *
verdict_text(int v)
{
	return v == NF_ACCEPT ? "accept" : v == NF_DROP ? "drop" :
	    v == NFT_RETURN ? "return" : v == NFT_JUMP ? "jump" :
	    v == NFT_GOTO ? "goto" : "continue";
}

static int
elem_line(struct nftnl_set_elem *e, void *arg)
{
	struct elem_arg *a = arg;
	uint32_t len = 0;
	const uint8_t *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
	char k[2 * 64 + 1] = "";
	uint32_t flags = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS) ?
	    nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS) : 0;

	const char *ch = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_CHAIN) ?
	    nftnl_set_elem_get_str(e, NFTNL_SET_ELEM_CHAIN) : "";
	char shown[2 * 64 + 3];
	int v;

	if (key && len <= 64)
		hex(k, key, len);
	if (a->ipv4 && key && len == 4)
		inet_ntop(AF_INET, key, shown, sizeof(shown));
	else
		snprintf(shown, sizeof(shown), "0x%.*s", (int)sizeof(shown) - 3,
		    k);
	if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_VERDICT)) {
		v = (int)nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_VERDICT);
		lines_add(a->l, "%s %s flags %u : verdict %d %s", a->prefix, k,
		    flags, v, ch);
		lines_show(a->l, "element %s { %s : %s%s%s }", a->show, shown,
		    verdict_text(v), ch[0] ? " " : "", ch);
		return 0;
	}
	lines_add(a->l, "%s %s flags %u", a->prefix, k, flags);
	lines_show(a->l, "element %s { %s }", a->show, shown);
	return 0;
}

/* nft's name of a data type (its datatype.h numbers), for the ones a
 * set may be keyed on. */
static const char *
type_name(uint32_t t)
{
	static const struct { uint32_t t; const char *name; } names[] = {
		{ 1, "verdict" }, { 7, "ipv4_addr" }, { 8, "ipv6_addr" },
		{ 9, "ether_addr" }, { 12, "inet_proto" },
		{ 13, "inet_service" }, { 19, "mark" }, { 20, "iface_index" },
		{ 24, "uid" }, { 25, "gid" }, { 41, "ifname" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].t == t)
			return names[i].name;
	return NULL;
}

/* "ipv4_addr . ifname": a concatenation packs one type per 6 bits, the
 * first type highest. */
static void
key_text(uint32_t type, char *buf, size_t len)
{
	uint32_t part[6];
	size_t n = 0, used = 0;
	const char *name;

	do
		part[n++] = type & ((1u << NR_TYPE_BITS) - 1);
	while ((type >>= NR_TYPE_BITS) != 0 && n < 6);
	buf[0] = '\0';
	while (n-- > 0 && used < len) {
		name = type_name(part[n]);
		used += (size_t)(name ? snprintf(buf + used, len - used, "%s%s",
		    used ? " . " : "", name) : snprintf(buf + used, len - used,
		    "%stype %u", used ? " . " : "", part[n]));
	}
}

/* A set's declaration in nft syntax, as the kernel or the policy has it:
 * "map inet moat sandboxes { type ipv4_addr : verdict; flags constant; }". */
static void
set_show(struct lines *l, const char *fname, const struct nftnl_set *s,
    const char *exprs)
{
	uint32_t flags = nftnl_set_get_u32(s, NFTNL_SET_FLAGS), dt;
	char key[128], data[128] = "", fl[64] = "";

	key_text(nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE), key, sizeof(key));
	if (flags & NFT_SET_MAP) {
		dt = nftnl_set_get_u32(s, NFTNL_SET_DATA_TYPE);
		if (dt == NFT_DATA_VERDICT)
			snprintf(data, sizeof(data), " : verdict");
		else {
			data[0] = ' ', data[1] = ':', data[2] = ' ';
			key_text(dt, data + 3, sizeof(data) - 3);
		}
	}
	snprintf(fl, sizeof(fl), "%s%s%s%s", flags & NFT_SET_CONSTANT ?
	    ", constant" : "", flags & NFT_SET_INTERVAL ? ", interval" : "",
	    flags & NFT_SET_TIMEOUT ? ", timeout" : "", flags & NFT_SET_EVAL ?
	    ", dynamic" : "");
	lines_show(l, "%s %s %s %s { type %s%s;%s%s%s%s%s }", flags & NFT_SET_MAP ?
	    "map" : "set", fname, NFTR_TABLE, nftnl_set_get_str(s,
	    NFTNL_SET_NAME), key, data, fl[0] ? " flags " : "", fl[0] ? fl + 2 :
	    "", fl[0] ? ";" : "", exprs, exprs[0] ? ";" : "");
}

/* The names of a set's expressions (" counter"): whether its elements
 * carry counters is part of the policy; their values are not, and are
 * never compared (elem_line leaves them out). */
static int
set_expr_name(struct nftnl_expr *e, void *arg)
{
	buf_add(arg, " %s", nftnl_expr_get_str(e, NFTNL_EXPR_NAME));
	return 0;
}

/*
 * A set and, with elems, its elements.  either: a set with one element
 * per sandbox, which gatewayd makes without the flag constant so that it
 * can change one sandbox in place, and nft-rules apply with it; both are
 * the policy, so the flag is left out of what is compared.
 */
static void
set_lines(struct lines *l, const char *fname, struct nftnl_set *s,
    bool elems, bool either)
{
	const char *name = nftnl_set_get_str(s, NFTNL_SET_NAME);
	uint32_t flags = nftnl_set_get_u32(s, NFTNL_SET_FLAGS);
	char prefix[400], show[400];
	struct elem_arg a = { l, prefix, show, nftnl_set_get_u32(s,
	    NFTNL_SET_KEY_TYPE) == NR_TYPE_IPADDR };
	struct nr_buf ex = { 0 };
	char *exprs;

	nftnl_set_expr_foreach(s, set_expr_name, &ex);
	exprs = buf_take(&ex);
	lines_add(l, "set %s %s flags 0x%x key %u/%u data %u%s%s", fname, name,
	    either ? flags & ~(uint32_t)NFT_SET_CONSTANT : flags,
	    nftnl_set_get_u32(s, NFTNL_SET_KEY_TYPE),
	    nftnl_set_get_u32(s, NFTNL_SET_KEY_LEN),
	    (flags & NFT_SET_MAP) ? nftnl_set_get_u32(s, NFTNL_SET_DATA_TYPE) :
	    0, exprs[0] ? " expr" : "", exprs);
	set_show(l, fname, s, exprs);
	free(exprs);
	if (!elems)
		return;
	snprintf(prefix, sizeof(prefix), "elem %s %s", fname, name);
	snprintf(show, sizeof(show), "%s %s %s", fname, NFTR_TABLE, name);
	nftnl_set_elem_foreach(s, elem_line, &a);
}

static void
chain_line(struct lines *l, const char *fname, const struct nftnl_chain *c)
{
	const char *name = nftnl_chain_get_str(c, NFTNL_CHAIN_NAME);

	if (!nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM)) {
		lines_add(l, "chain %s %s", fname, name);
		lines_show(l, "chain %s %s %s", fname, NFTR_TABLE, name);
		return;
	}
	lines_add(l, "chain %s %s type %s hook %u prio %d policy %u", fname,
	    name, nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE),
	    nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM),
	    nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO),
	    nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY));
	lines_show(l, "chain %s %s %s { type %s hook %u priority %d; policy "
	    "%s; }", fname, NFTR_TABLE, name,
	    nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE),
	    nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM),
	    nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO),
	    nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY) == NF_DROP ? "drop" :
	    "accept");
}

/* A rule the policy does not make, in nft syntax where that is plain
 * (a verdict, a counter); otherwise its bytecode as a comment. */
static char *
decompile(const struct nftnl_rule *r, const char *canon)
{
	struct nftnl_expr_iter *it = nftnl_expr_iter_create(r);
	struct nftnl_expr *e;
	struct nr_buf b = { 0 };
	const char *name;
	bool plain = true;

	if (it == NULL)
		fatalx("out of memory");
	while (plain && (e = nftnl_expr_iter_next(it)) != NULL) {
		name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
		if (strcmp(name, "counter") == 0)
			buf_add(&b, "%scounter", b.len ? " " : "");
		else if (strcmp(name, "immediate") == 0 &&
		    nftnl_expr_is_set(e, NFTNL_EXPR_IMM_VERDICT)) {
			int v = (int)nftnl_expr_get_u32(e,
			    NFTNL_EXPR_IMM_VERDICT);
			const char *ch = nftnl_expr_is_set(e,
			    NFTNL_EXPR_IMM_CHAIN) ? nftnl_expr_get_str(e,
			    NFTNL_EXPR_IMM_CHAIN) : "";
			buf_add(&b, "%s%s%s%s", b.len ? " " : "",
			    verdict_text(v), ch[0] ? " " : "", ch);
		} else
			plain = false;
	}
	nftnl_expr_iter_destroy(it);
	if (!plain) {
		free(buf_take(&b));
		b = (struct nr_buf){ 0 };
		buf_add(&b, "# not in the policy, bytecode: %s", canon);
	}
	return buf_take(&b);
}

static void
rule_line(struct lines *l, const char *fname, const char *chain, size_t i,
    const struct nftnl_rule *r, const char *text)
{
	char *c = canon_rule(r);

	/* Compared in their chain's order, not sorted (diff_rules). */
	lines_add(l, "%s", c);
	xasprintf(&l->v[l->n - 1].chain, "%s %s", fname, chain);
	if (text != NULL) {
		lines_show(l, "rule %s %s %s #%zu: %s", fname, NFTR_TABLE,
		    chain, i, text);
		l->v[l->n - 1].text = xstrdup(text);
	} else {
		char *d = decompile(r, c);
		lines_show(l, "rule %s %s %s #%zu: %s (handle %llu)", fname,
		    NFTR_TABLE, chain, i, d, (unsigned long long)
		    nftnl_rule_get_u64(r, NFTNL_RULE_HANDLE));
		free(d);
	}
	free(c);
}

static void
expected_lines(struct lines *l, const struct nftr_ruleset *rs,
    uint32_t tflags)
{
	size_t i, j, k;

	for (i = 0; i < rs->ntables; i++) {
		const struct nr_table *t = &rs->tables[i];

		char fl[64];

		lines_add(l, "table %s flags 0x%x", t->fname, tflags);
		lines_show(l, "table %s %s%s", t->fname, NFTR_TABLE,
		    flags_text(tflags, fl, sizeof(fl)));
		for (j = 0; j < t->ncounters; j++) {
			lines_add(l, "counter %s %s", t->fname,
			    t->counters[j]);
			lines_show(l, "counter %s %s %s", t->fname, NFTR_TABLE,
			    t->counters[j]);
		}
		for (j = 0; j < t->nsets; j++)
			set_lines(l, t->fname, t->sets[j]->nl,
			    !t->sets[j]->dynamic, t->sets[j]->per_sandbox);
		for (j = 0; j < t->nchains; j++) {
			const struct nr_chain *c = t->chains[j];

			chain_line(l, t->fname, c->nl);
			if (c->hook != NULL)
				lines_show(l, "chain %s %s %s { %s }", t->fname,
				    NFTR_TABLE, c->name, c->hook);
			for (k = 0; k < c->nrules; k++)
				rule_line(l, t->fname, c->name, k,
				    c->rules[k].nl, c->rules[k].text);
		}
	}
}

/* ---- the kernel's side ---------------------------------------------- */

struct kdump {
	struct lines	*l;
	const struct nr_table *t;	/* the policy's: text of known rules */
	const char	*fname;
	int		 family;
	struct nftr_ctx	*ctx;
	char		 chain[256];	/* rule numbering */
	size_t		 idx;
	char		**dynsets;	/* allow_* sets: no elements */
	size_t		 ndynsets;
	char		**sets;		/* every set, for element dumps */
	size_t		 nsets;
};

static int
table_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct kdump *k = arg;
	struct nftnl_table *t = nftnl_table_alloc();

	if (t == NULL || nftnl_table_nlmsg_parse(nlh, t) == -1)
		fatalx("%s: cannot parse", __func__);
	uint32_t f = nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS) &
	    ~NFT_TABLE_F_OWNER;
	char fl[64];

	lines_add(k->l, "table %s flags 0x%x", k->fname, f);
	lines_show(k->l, "table %s %s%s", k->fname, NFTR_TABLE,
	    flags_text(f, fl, sizeof(fl)));
	nftnl_table_free(t);
	return MNL_CB_OK;
}

static int
obj_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct kdump *k = arg;
	struct nftnl_obj *o = nftnl_obj_alloc();

	if (o == NULL || nftnl_obj_nlmsg_parse(nlh, o) == -1)
		fatalx("%s: cannot parse", __func__);
	if (strcmp(nftnl_obj_get_str(o, NFTNL_OBJ_TABLE), NFTR_TABLE) == 0) {
		const char *what = nftnl_obj_get_u32(o, NFTNL_OBJ_TYPE) ==
		    NFT_OBJECT_COUNTER ? "counter" : "object";
		lines_add(k->l, "%s %s %s", what, k->fname,
		    nftnl_obj_get_str(o, NFTNL_OBJ_NAME));
		lines_show(k->l, "%s %s %s %s", what, k->fname, NFTR_TABLE,
		    nftnl_obj_get_str(o, NFTNL_OBJ_NAME));
	}
	nftnl_obj_free(o);
	return MNL_CB_OK;
}

static int
set_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct kdump *k = arg;
	struct nftnl_set *s = nftnl_set_alloc();
	const struct nr_set *mine;

	if (s == NULL || nftnl_set_nlmsg_parse(nlh, s) == -1)
		fatalx("%s: cannot parse", __func__);
	mine = model_find_set((struct nr_table *)k->t, nftnl_set_get_str(s,
	    NFTNL_SET_NAME));
	set_lines(k->l, k->fname, s, false, mine != NULL && mine->per_sandbox);
	k->sets = xreallocarray(k->sets, k->nsets + 1, sizeof(char *));
	k->sets[k->nsets++] = xstrdup(nftnl_set_get_str(s, NFTNL_SET_NAME));
	nftnl_set_free(s);
	return MNL_CB_OK;
}

static int
elem_cb(const struct nlmsghdr *nlh, void *arg)
{
	return nftnl_set_elems_nlmsg_parse(nlh, arg) == -1 ?
	    MNL_CB_ERROR : MNL_CB_OK;
}

static int
chain_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct kdump *k = arg;
	struct nftnl_chain *c = nftnl_chain_alloc();

	if (c == NULL || nftnl_chain_nlmsg_parse(nlh, c) == -1)
		fatalx("%s: cannot parse", __func__);
	if (strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), NFTR_TABLE) == 0)
		chain_line(k->l, k->fname, c);
	nftnl_chain_free(c);
	return MNL_CB_OK;
}

/* The policy's text for a rule whose bytecode it makes in this chain, at
 * any position: a moved rule then reads as the same rule elsewhere. */
static const char *
known_text(const struct nr_table *t, const char *chain,
    const struct nftnl_rule *r)
{
	const char *text = NULL;
	char *want, *got = canon_rule(r);
	size_t i, j;

	for (i = 0; i < t->nchains && text == NULL; i++) {
		const struct nr_chain *c = t->chains[i];
		if (strcmp(c->name, chain) != 0)
			continue;
		for (j = 0; j < c->nrules && text == NULL; j++) {
			want = canon_rule(c->rules[j].nl);
			if (strcmp(want, got) == 0)
				text = c->rules[j].text;
			free(want);
		}
	}
	free(got);
	return text;
}

static int
rule_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct kdump *k = arg;
	struct nftnl_rule *r = nftnl_rule_alloc();
	const char *chain;

	if (r == NULL || nftnl_rule_nlmsg_parse(nlh, r) == -1)
		fatalx("%s: cannot parse", __func__);
	if (strcmp(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), NFTR_TABLE) != 0)
		goto out;
	chain = nftnl_rule_get_str(r, NFTNL_RULE_CHAIN);
	if (strcmp(chain, k->chain) != 0) {
		snprintf(k->chain, sizeof(k->chain), "%s", chain);
		k->idx = 0;
	}
	rule_line(k->l, k->fname, chain, k->idx++, r, known_text(k->t, chain,
	    r));
out:
	nftnl_rule_free(r);
	return MNL_CB_OK;
}

/* GET request for this table; objects are filtered by table name. */
static int
kdump_one(struct kdump *k, uint16_t type, bool dump,
    int (*cb)(const struct nlmsghdr *, void *))
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	nlh = nftnl_nlmsg_build_hdr(buf, type, (uint16_t)k->family,
	    (dump ? NLM_F_DUMP : 0) | NLM_F_ACK, k->ctx->seq++);
	switch (type) {
	case NFT_MSG_GETTABLE:
		mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, NFTR_TABLE);
		break;
	case NFT_MSG_GETOBJ:
		mnl_attr_put_strz(nlh, NFTA_OBJ_TABLE, NFTR_TABLE);
		break;
	case NFT_MSG_GETSET:
		mnl_attr_put_strz(nlh, NFTA_SET_TABLE, NFTR_TABLE);
		break;
	case NFT_MSG_GETCHAIN:
		mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, NFTR_TABLE);
		break;
	case NFT_MSG_GETRULE:
		mnl_attr_put_strz(nlh, NFTA_RULE_TABLE, NFTR_TABLE);
		break;
	}
	return nl_dump(k->ctx, nlh, cb, k);
}

static bool
is_dynamic(const struct nr_table *t, const char *set)
{
	const struct nr_set *s = model_find_set((struct nr_table *)t, set);

	/* A set we do not expect: show its elements so the diff does. */
	return s ? s->dynamic : false;
}

static int
kernel_table(struct nftr_ctx *ctx, const struct nr_table *t,
    struct lines *l)
{
	struct kdump k = { .l = l, .t = t, .fname = t->fname,
	    .family = t->family, .ctx = ctx };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	size_t i;
	int r = 0;

	if (kdump_one(&k, NFT_MSG_GETTABLE, false, table_cb) == -1)
		return errno == ENOENT ? 0 : -1;
	if (kdump_one(&k, NFT_MSG_GETOBJ, true, obj_cb) == -1 ||
	    kdump_one(&k, NFT_MSG_GETSET, true, set_cb) == -1 ||
	    kdump_one(&k, NFT_MSG_GETCHAIN, true, chain_cb) == -1 ||
	    kdump_one(&k, NFT_MSG_GETRULE, true, rule_cb) == -1)
		r = -1;
	for (i = 0; r == 0 && i < k.nsets; i++) {
		struct nftnl_set *s = nftnl_set_alloc();
		struct nlmsghdr *nlh;
		char prefix[400], show[400];
		const struct nr_set *mine = model_find_set((struct nr_table *)t,
		    k.sets[i]);
		struct elem_arg a = { l, prefix, show, mine != NULL &&
		    nftnl_set_get_u32(mine->nl, NFTNL_SET_KEY_TYPE) ==
		    NR_TYPE_IPADDR };

		if (s == NULL)
			fatalx("out of memory");
		if (is_dynamic(t, k.sets[i])) {
			nftnl_set_free(s);
			continue;
		}
		nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
		nftnl_set_set_str(s, NFTNL_SET_NAME, k.sets[i]);
		nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM,
		    (uint16_t)t->family, NLM_F_DUMP | NLM_F_ACK, ctx->seq++);
		nftnl_set_elems_nlmsg_build_payload(nlh, s);
		if (nl_dump(ctx, nlh, elem_cb, s) == -1)
			r = -1;
		snprintf(prefix, sizeof(prefix), "elem %s %s", t->fname,
		    k.sets[i]);
		snprintf(show, sizeof(show), "%s %s %s", t->fname, NFTR_TABLE,
		    k.sets[i]);
		nftnl_set_elem_foreach(s, elem_line, &a);
		nftnl_set_free(s);
	}
	for (i = 0; i < k.nsets; i++)
		free(k.sets[i]);
	free(k.sets);
	return r;
}

static int
cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->key,
	    ((const struct line *)b)->key);
}

static void
print_line(FILE *out, char sign, const struct line *x)
{
	if (out != NULL)
		fprintf(out, "%c%s\n", sign, x->show ? x->show : x->key);
}

/* Merge two sorted lists; print what only one side has. */
static int
diff(const struct lines *want, const struct lines *got, FILE *out)
{
	size_t i = 0, j = 0;
	int drift = 0, c;

	while (i < want->n || j < got->n) {
		if (i == want->n)
			c = 1;
		else if (j == got->n)
			c = -1;
		else
			c = strcmp(want->v[i].key, got->v[j].key);
		if (c == 0) {
			i++, j++;
			continue;
		}
		drift = 1;
		print_line(out, c < 0 ? '-' : '+', c < 0 ? &want->v[i] :
		    &got->v[j]);
		if (c < 0)
			i++;
		else
			j++;
	}
	return drift;
}

/* The rules of one chain, in order: a run of lines (a chain's rules are
 * added, and dumped by the kernel, one chain after the other). */
struct seq {
	const struct line *v;
	size_t		 n;
	bool		 used;
};

static size_t
runs_of(const struct lines *l, struct seq **out)
{
	struct seq *r = xcalloc(l->n + 1, sizeof(*r));
	size_t i, n = 0;

	for (i = 0; i < l->n; i++) {
		if (n == 0 || strcmp(r[n - 1].v->chain, l->v[i].chain) != 0)
			r[n++] = (struct seq){ &l->v[i], 0, false };
		r[n - 1].n++;
	}
	*out = r;
	return n;
}

static int
seq_cmp(const void *a, const void *b)
{
	return strcmp(((const struct seq *)a)->v->chain,
	    ((const struct seq *)b)->v->chain);
}

#define LCS_MAX_CELLS	(4u << 20)

/*
 * One chain's rules, policy against kernel, as the shortest edit: a rule
 * deleted by hand is one "-" line, one inserted one "+" line, and the
 * rules around them, in the same order, are not drift.  A moved rule is
 * a "-" where it belongs and a "+" where it is.  (Past LCS_MAX_CELLS the
 * chains are compared position by position.)
 */
static int
diff_chain(const struct seq *a, const struct seq *b, FILE *out)
{
	size_t i, j, w = b->n + 1;
	uint32_t *t;
	int drift = 0;

	if ((a->n + 1) * w > LCS_MAX_CELLS) {
		for (i = 0; i < a->n || i < b->n; i++)
			if (i >= a->n || i >= b->n ||
			    strcmp(a->v[i].key, b->v[i].key) != 0) {
				drift = 1;
				if (i < a->n)
					print_line(out, '-', &a->v[i]);
				if (i < b->n)
					print_line(out, '+', &b->v[i]);
			}
		return drift;
	}
	t = xcalloc((a->n + 1) * w, sizeof(*t));
	for (i = a->n; i-- > 0;)
		for (j = b->n; j-- > 0;)
			t[i * w + j] = strcmp(a->v[i].key, b->v[j].key) == 0 ?
			    t[(i + 1) * w + j + 1] + 1 :
			    t[(i + 1) * w + j] > t[i * w + j + 1] ?
			    t[(i + 1) * w + j] : t[i * w + j + 1];
	for (i = j = 0; i < a->n || j < b->n;) {
		if (i < a->n && j < b->n &&
		    strcmp(a->v[i].key, b->v[j].key) == 0)
			i++, j++;
		else if (j == b->n || (i < a->n &&
		    t[(i + 1) * w + j] >= t[i * w + j + 1])) {
			print_line(out, '-', &a->v[i++]);
			drift = 1;
		} else {
			print_line(out, '+', &b->v[j++]);
			drift = 1;
		}
	}
	free(t);
	return drift;
}

/* Every chain's rules: the policy's chains in order, then any chain
 * only the kernel has. */
static int
diff_rules(const struct lines *want, const struct lines *got, FILE *out)
{
	static const struct seq none;
	struct seq *a, *b, *m;
	size_t na = runs_of(want, &a), nb = runs_of(got, &b), i;
	int drift = 0;

	qsort(b, nb, sizeof(*b), seq_cmp);
	for (i = 0; i < na; i++) {
		m = bsearch(&a[i], b, nb, sizeof(*b), seq_cmp);
		drift |= diff_chain(&a[i], m ? m : &none, out);
		if (m != NULL)
			m->used = true;
	}
	for (i = 0; i < nb; i++)
		if (!b[i].used)
			drift |= diff_chain(&none, &b[i], out);
	free(a);
	free(b);
	return drift;
}

/* Move the rules out of l into r, keeping their order. */
static void
split_rules(struct lines *l, struct lines *r)
{
	size_t i, n = 0;

	for (i = 0; i < l->n; i++) {
		if (l->v[i].chain == NULL) {
			l->v[n++] = l->v[i];
			continue;
		}
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 256;
			r->v = xreallocarray(r->v, r->cap, sizeof(*r->v));
		}
		r->v[r->n++] = l->v[i];
	}
	l->n = n;
}

int
nftr_verify(struct nftr_ctx *ctx, const struct nftr_ruleset *rs, FILE *out)
{
	struct lines want = { 0 }, got = { 0 }, wrules = { 0 }, grules = { 0 };
	unsigned f;
	size_t i;
	int r = 0;

	if (!ctx->probed && nftr_probe(ctx, NULL, &f) == -1)
		return -1;
	expected_lines(&want, rs, table_flags(ctx) & ~NFT_TABLE_F_OWNER);
	for (i = 0; i < rs->ntables && r == 0; i++)
		r = kernel_table(ctx, &rs->tables[i], &got);
	if (r == 0) {
		split_rules(&want, &wrules);
		split_rules(&got, &grules);
		qsort(want.v, want.n, sizeof(*want.v), cmp_line);
		qsort(got.v, got.n, sizeof(*got.v), cmp_line);
		r = diff(&want, &got, out);
		r |= diff_rules(&wrules, &grules, out);
	}
	lines_free(&want);
	lines_free(&got);
	lines_free(&wrules);
	lines_free(&grules);
	return r;
}

static int
owner_cb(const struct nlmsghdr *nlh, void *arg)
{
	bool *owned = arg;
	struct nftnl_table *t = nftnl_table_alloc();

	if (t == NULL || nftnl_table_nlmsg_parse(nlh, t) == -1)
		fatalx("%s: cannot parse", __func__);
	if (nftnl_table_get_u32(t, NFTNL_TABLE_FLAGS) & NFT_TABLE_F_OWNER)
		*owned = true;
	nftnl_table_free(t);
	return MNL_CB_OK;
}

int
nftr_owned(struct nftr_ctx *ctx)
{
	static const uint16_t families[] = { NFPROTO_INET, NFPROTO_BRIDGE };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	bool owned = false;
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETTABLE, families[i],
		    NLM_F_ACK, ctx->seq++);
		mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, NFTR_TABLE);
		if (nl_dump(ctx, nlh, owner_cb, &owned) == -1 && errno != ENOENT)
			return -1;
	}
	return owned;
}
