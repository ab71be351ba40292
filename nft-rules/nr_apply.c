/*
 * nr_apply.c -- the transactions: probe, apply (replace moat's tables),
 * flush, and adding addresses to an allowlist set.  Built on the batches
 * of nr_netlink.c, which never calls back up here.
 */
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <sys/socket.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

#ifndef NFT_TABLE_F_PERSIST
#define NFT_TABLE_F_PERSIST	0x4
#endif

#define CREATE	(NLM_F_CREATE | NLM_F_EXCL)

/* Allowlist elements found in the kernel before apply, to keep. */
struct nr_carry {
	struct nftnl_set **sets;
	size_t		 n;
};

static void
msg_table(struct nl_batch *b, const struct nr_table *t, uint16_t type,
    uint16_t flags, bool setflags, uint32_t tflags, const char *what)
{
	struct nftnl_table *nt = nftnl_table_alloc();
	struct nlmsghdr *nlh;
	char desc[128];

	if (nt == NULL)
		fatalx("out of memory");
	nftnl_table_set_str(nt, NFTNL_TABLE_NAME, NFTR_TABLE);
	if (setflags)
		nftnl_table_set_u32(nt, NFTNL_TABLE_FLAGS, tflags);
	snprintf(desc, sizeof(desc), "table %s %s (%s)", t->fname, NFTR_TABLE,
	    what);
	nlh = batch_msg(b, type, t->family, flags, desc);
	nftnl_table_nlmsg_build_payload(nlh, nt);
	batch_next(b);
	nftnl_table_free(nt);
}

static void
msg_counter(struct nl_batch *b, const struct nr_table *t, const char *name)
{
	struct nftnl_obj *o = nftnl_obj_alloc();
	struct nlmsghdr *nlh;
	char desc[128];

	if (o == NULL)
		fatalx("out of memory");
	nftnl_obj_set_u32(o, NFTNL_OBJ_FAMILY, (uint32_t)t->family);
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, NFTR_TABLE);
	nftnl_obj_set_str(o, NFTNL_OBJ_NAME, name);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	snprintf(desc, sizeof(desc), "counter %s", name);
	nlh = batch_msg(b, NFT_MSG_NEWOBJ, t->family, CREATE, desc);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	batch_next(b);
	nftnl_obj_free(o);
}

/* Elements go in messages of at most a few kilobytes each. */
static void
msg_elems(struct nl_batch *b, int family, struct nftnl_set *s,
    const char *what)
{
	struct nftnl_set_elems_iter *it;
	struct nlmsghdr *nlh;
	int more;

	if ((it = nftnl_set_elems_iter_create(s)) == NULL)
		fatalx("out of memory");
	if (nftnl_set_elems_iter_cur(it) == NULL) {
		nftnl_set_elems_iter_destroy(it);
		return;
	}
	do {
		nlh = batch_msg(b, NFT_MSG_NEWSETELEM, family, CREATE, what);
		more = nftnl_set_elems_nlmsg_build_payload_iter(nlh, it);
		batch_next(b);
	} while (more > 0);
	nftnl_set_elems_iter_destroy(it);
}

static struct nftnl_set *
carry_find(struct nr_carry *carry, const char *name)
{
	size_t i;

	for (i = 0; carry && i < carry->n; i++)
		if (strcmp(nftnl_set_get_str(carry->sets[i], NFTNL_SET_NAME),
		    name) == 0)
			return carry->sets[i];
	return NULL;
}

static void
table_to_batch(struct nl_batch *b, const struct nr_table *t,
    uint32_t tflags, struct nr_carry *carry)
{
	struct nlmsghdr *nlh;
	struct nftnl_set *old;
	char desc[600];
	size_t i, j;

	msg_table(b, t, NFT_MSG_NEWTABLE, CREATE, true, tflags, "create");
	for (i = 0; i < t->ncounters; i++)
		msg_counter(b, t, t->counters[i]);
	for (i = 0; i < t->nsets; i++) {
		snprintf(desc, sizeof(desc), "set %s", t->sets[i]->name);
		nlh = batch_msg(b, NFT_MSG_NEWSET, t->family, CREATE, desc);
		nftnl_set_nlmsg_build_payload(nlh, t->sets[i]->nl);
		batch_next(b);
	}
	for (i = 0; i < t->nchains; i++) {
		snprintf(desc, sizeof(desc), "chain %s", t->chains[i]->name);
		nlh = batch_msg(b, NFT_MSG_NEWCHAIN, t->family, CREATE, desc);
		nftnl_chain_nlmsg_build_payload(nlh, t->chains[i]->nl);
		batch_next(b);
	}
	for (i = 0; i < t->nsets; i++) {
		snprintf(desc, sizeof(desc), "elements of set %s",
		    t->sets[i]->name);
		msg_elems(b, t->family, t->sets[i]->nl, desc);
		if ((old = carry_find(carry, t->sets[i]->name)) != NULL) {
			snprintf(desc, sizeof(desc), "kept elements of set %s",
			    t->sets[i]->name);
			msg_elems(b, t->family, old, desc);
		}
	}
	for (i = 0; i < t->nchains; i++) {
		const struct nr_chain *c = t->chains[i];

		for (j = 0; j < c->nrules; j++) {
			snprintf(desc, sizeof(desc), "rule in chain %s: %s",
			    c->name, c->rules[j].text);
			nlh = batch_msg(b, NFT_MSG_NEWRULE, t->family,
			    NLM_F_CREATE | NLM_F_APPEND, desc);
			nftnl_rule_nlmsg_build_payload(nlh, c->rules[j].nl);
			batch_next(b);
		}
	}
}

/* Delete whatever moat table exists: "create if missing" (a no-op on an
 * existing table, as no flags are sent) then "delete" always succeeds. */
static void
delete_table(struct nl_batch *b, const struct nr_table *t)
{
	msg_table(b, t, NFT_MSG_NEWTABLE, NLM_F_CREATE, false, 0, "ensure");
	msg_table(b, t, NFT_MSG_DELTABLE, 0, false, 0, "delete old");
}

void
ruleset_to_batch(struct nl_batch *b, const struct nftr_ruleset *rs,
    uint32_t tflags, struct nr_carry *carry)
{
	size_t i;

	for (i = 0; i < rs->ntables; i++)
		delete_table(b, &rs->tables[i]);
	for (i = 0; i < rs->ntables; i++)
		table_to_batch(b, &rs->tables[i], tflags, carry);
}

size_t
nftr_ruleset_nmsgs(const struct nftr_ruleset *rs)
{
	size_t i, j, n = 2;

	for (i = 0; i < rs->ntables; i++) {
		const struct nr_table *t = &rs->tables[i];

		n += 3 + t->ncounters + t->nsets + t->nchains;
		for (j = 0; j < t->nchains; j++)
			n += t->chains[j]->nrules;
	}
	return n;
}

/* ---- carrying allowlist elements over ------------------------------- */

static int
set_names_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nftnl_set_list *l = arg;
	struct nftnl_set *s = nftnl_set_alloc();

	if (s == NULL)
		fatalx("out of memory");
	if (nftnl_set_nlmsg_parse(nlh, s) == -1) {
		nftnl_set_free(s);
		return MNL_CB_ERROR;
	}
	nftnl_set_list_add_tail(s, l);
	return MNL_CB_OK;
}

static int
elems_cb(const struct nlmsghdr *nlh, void *arg)
{
	return nftnl_set_elems_nlmsg_parse(nlh, arg) == -1 ?
	    MNL_CB_ERROR : MNL_CB_OK;
}

/* The elements of one kernel set, with their remaining time as the new
 * timeout; NULL if the set is gone or empty. */
static struct nftnl_set *
carry_set(struct nftr_ctx *ctx, const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nftnl_set *s = nftnl_set_alloc(), *keep;
	struct nftnl_set_elems_iter *it;
	struct nftnl_set_elem *e, *k;
	struct nlmsghdr *nlh;

	if (s == NULL || (keep = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, name);
	nftnl_set_set_str(keep, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(keep, NFTNL_SET_NAME, name);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET,
	    NLM_F_DUMP | NLM_F_ACK, ctx->seq++);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	if (nl_dump(ctx, nlh, elems_cb, s) == -1 ||
	    (it = nftnl_set_elems_iter_create(s)) == NULL) {
		nftnl_set_free(s);
		nftnl_set_free(keep);
		return NULL;
	}
	/* _next() returns the current element, then advances. */
	while ((e = nftnl_set_elems_iter_next(it)) != NULL) {
		uint32_t len;
		const void *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY,
		    &len);
		uint64_t left = nftnl_set_elem_is_set(e,
		    NFTNL_SET_ELEM_EXPIRATION) ?
		    nftnl_set_elem_get_u64(e, NFTNL_SET_ELEM_EXPIRATION) : 0;

		if (key == NULL || left == 0)
			continue;
		if ((k = nftnl_set_elem_alloc()) == NULL)
			fatalx("out of memory");
		nftnl_set_elem_set(k, NFTNL_SET_ELEM_KEY, key, len);
		nftnl_set_elem_set_u64(k, NFTNL_SET_ELEM_TIMEOUT, left);
		nftnl_set_elem_add(keep, k);
	}
	nftnl_set_elems_iter_destroy(it);
	nftnl_set_free(s);
	return keep;
}

static void
carry_free(struct nr_carry *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		nftnl_set_free(c->sets[i]);
	free(c->sets);
	c->sets = NULL;
	c->n = 0;
}

/* For each allow_* set that exists now and in the new ruleset. */
static int
carry_collect(struct nftr_ctx *ctx, const struct nftr_ruleset *rs,
    struct nr_carry *carry)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nftnl_set_list *l = nftnl_set_list_alloc();
	struct nftnl_set_list_iter *it;
	struct nftnl_set *s, *req = nftnl_set_alloc(), *keep;
	struct nlmsghdr *nlh;
	struct nr_table *t = NULL;
	size_t i;

	if (l == NULL || req == NULL)
		fatalx("out of memory");
	for (i = 0; i < rs->ntables; i++)
		if (rs->tables[i].family == NFPROTO_INET)
			t = (struct nr_table *)&rs->tables[i];
	nftnl_set_set_str(req, NFTNL_SET_TABLE, NFTR_TABLE);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSET, NFPROTO_INET,
	    NLM_F_DUMP | NLM_F_ACK, ctx->seq++);
	nftnl_set_nlmsg_build_payload(nlh, req);
	nftnl_set_free(req);
	if (t == NULL || nl_dump(ctx, nlh, set_names_cb, l) == -1) {
		nftnl_set_list_free(l);
		/* No inet table yet: nothing to keep. */
		return t == NULL || errno == ENOENT ? 0 : -1;
	}
	it = nftnl_set_list_iter_create(l);
	while (it && (s = nftnl_set_list_iter_next(it)) != NULL) {
		const char *name = nftnl_set_get_str(s, NFTNL_SET_NAME);
		struct nr_set *ns = model_find_set(t, name);

		if (ns == NULL || !ns->dynamic ||
		    (keep = carry_set(ctx, name)) == NULL)
			continue;
		carry->sets = xreallocarray(carry->sets, carry->n + 1,
		    sizeof(*carry->sets));
		carry->sets[carry->n++] = keep;
	}
	nftnl_set_list_iter_destroy(it);
	nftnl_set_list_free(l);
	return 0;
}

/* ---- the public transactions ---------------------------------------- */

static int
ensure_probed(struct nftr_ctx *ctx)
{
	unsigned f;

	return ctx->probed ? 0 : nftr_probe(ctx, NULL, &f);
}

int
nftr_apply(struct nftr_ctx *ctx, const struct nftr_ruleset *rs)
{
	struct nr_carry carry = { NULL, 0 };
	struct nl_batch *b;
	int r;

	if (ensure_probed(ctx) == -1)
		return -1;
	if (carry_collect(ctx, rs, &carry) == -1) {
		carry_free(&carry);
		return -1;
	}
	b = batch_new(ctx, false);
	ruleset_to_batch(b, rs, table_flags(ctx), &carry);
	r = batch_run(b, true);
	batch_free(b);
	carry_free(&carry);
	ctx->applied = r == 0 ? rs : NULL;
	return r;
}

int
nftr_flush(struct nftr_ctx *ctx)
{
	static const struct nr_table tables[] = {
		{ .family = NFPROTO_INET, .fname = "inet" },
		{ .family = NFPROTO_BRIDGE, .fname = "bridge" },
	};
	struct nl_batch *b = batch_new(ctx, false);
	size_t i;
	int r;

	ctx->applied = NULL;
	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		delete_table(b, &tables[i]);
	ha_delete_to_batch(b);
	r = batch_run(b, true);
	batch_free(b);
	return r;
}

int
nftr_set_add(struct nftr_ctx *ctx, const char *sandbox,
    const struct moat_addr *addrs, size_t n, uint32_t timeout_ms)
{
	return nftr_set_add_each(ctx, sandbox, addrs, n, &timeout_ms, false);
}

int
nftr_set_add_each(struct nftr_ctx *ctx, const char *sandbox,
    const struct moat_addr *addrs, size_t n, const uint32_t *timeouts_ms,
    bool each)
{
	struct nftnl_set *s;
	struct nftnl_set_elem *e;
	struct nl_batch *b;
	char name[256], desc[300];
	size_t i;
	int added = 0, r;

	if (nftr_set_name(sandbox, name, sizeof(name)) == -1) {
		nl_seterr(ctx, "sandbox name \"%s\" is not usable", sandbox);
		return -1;
	}
	for (i = 0; i < (each ? n : 1); i++)
		if (timeouts_ms[i] == 0) {
			nl_seterr(ctx, "allowlist elements need a timeout");
			return -1;
		}
	if ((s = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, name);
	for (i = 0; i < n; i++) {
		if (addrs[i].family != AF_INET)
			continue;
		if ((e = nftnl_set_elem_alloc()) == NULL)
			fatalx("out of memory");
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, addrs[i].a, 4);
		/* Both: a new element gets the timeout, an existing one has
		 * its expiry reset to it. */
		nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT,
		    timeouts_ms[each ? i : 0]);
		nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_EXPIRATION,
		    timeouts_ms[each ? i : 0]);
		nftnl_set_elem_add(s, e);
		added++;
	}
	if (added == 0) {
		nftnl_set_free(s);
		return 0;
	}
	snprintf(desc, sizeof(desc), "elements of set %s", name);
	b = batch_new(ctx, false);
	{
		struct nftnl_set_elems_iter *it =
		    nftnl_set_elems_iter_create(s);
		struct nlmsghdr *nlh;
		int more;

		if (it == NULL)
			fatalx("out of memory");
		do {
			nlh = batch_msg(b, NFT_MSG_NEWSETELEM, NFPROTO_INET,
			    NLM_F_CREATE, desc);
			more = nftnl_set_elems_nlmsg_build_payload_iter(nlh,
			    it);
			batch_next(b);
		} while (more > 0);
		nftnl_set_elems_iter_destroy(it);
	}
	r = batch_run(b, true);
	batch_free(b);
	nftnl_set_free(s);
	return r == -1 ? -1 : added;
}

#define ELEM_KEY_MAX	24	/* ipv6_addr . inet_proto . inet_service */

static uint32_t
addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

/* The key of e in its set: the address, or address . proto . port with
 * each part in registers of 4 bytes, as the rule loads them. */
static uint32_t
elem_key(const struct admit_elem *e, uint8_t key[ELEM_KEY_MAX])
{
	uint16_t port = ADMIT_SVC_PORT(e->svc);
	uint32_t al = addr_len(e->addr.family);

	memset(key, 0, ELEM_KEY_MAX);
	memcpy(key, e->addr.a, al);
	if (e->svc == 0)
		return al;
	key[al] = (uint8_t)ADMIT_SVC_PROTO(e->svc);
	key[al + 4] = (uint8_t)(port >> 8);	/* network order */
	key[al + 5] = (uint8_t)port;
	return al + 8;
}

/* The sets of a sandbox, by family and ports: allow_, allowp_, allow6_,
 * allowp6_.  -1 if the name does not fit. */
static int
set_name_of(const char *sandbox, int family, bool ports, char *buf,
    size_t len)
{
	if (family == AF_INET6)
		return nftr_set6_name(sandbox, ports, buf, len);
	return ports ? nftr_ports_set_name(sandbox, buf, len) :
	    nftr_set_name(sandbox, buf, len);
}

/* Append to b the elements of e of family that go to set name (ports:
 * those with a port); how many. */
static int
elems_to_batch(struct nl_batch *b, const char *name, int family, bool ports,
    const struct admit_elem *e, size_t n, const uint32_t *tmo)
{
	struct nftnl_set_elems_iter *it;
	struct nftnl_set *s;
	struct nftnl_set_elem *x;
	struct nlmsghdr *nlh;
	char desc[300];
	uint8_t key[ELEM_KEY_MAX];
	size_t i;
	int added = 0, more;

	if ((s = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, name);
	for (i = 0; i < n; i++) {
		if (e[i].addr.family != family || (e[i].svc != 0) != ports)
			continue;
		if ((x = nftnl_set_elem_alloc()) == NULL)
			fatalx("out of memory");
		nftnl_set_elem_set(x, NFTNL_SET_ELEM_KEY, key,
		    elem_key(&e[i], key));
		/* Both: a new element gets the timeout, an existing one has
		 * its expiry reset to it. */
		nftnl_set_elem_set_u64(x, NFTNL_SET_ELEM_TIMEOUT, tmo[i]);
		nftnl_set_elem_set_u64(x, NFTNL_SET_ELEM_EXPIRATION, tmo[i]);
		nftnl_set_elem_add(s, x);
		added++;
	}
	snprintf(desc, sizeof(desc), "elements of set %s", name);
	if (added > 0) {
		if ((it = nftnl_set_elems_iter_create(s)) == NULL)
			fatalx("out of memory");
		do {
			nlh = batch_msg(b, NFT_MSG_NEWSETELEM, NFPROTO_INET,
			    NLM_F_CREATE, desc);
			more = nftnl_set_elems_nlmsg_build_payload_iter(nlh,
			    it);
			batch_next(b);
		} while (more > 0);
		nftnl_set_elems_iter_destroy(it);
	}
	nftnl_set_free(s);
	return added;
}

int
nftr_set_add_elems(struct nftr_ctx *ctx, const char *sandbox,
    const struct admit_elem *e, size_t n, const uint32_t *timeouts_ms)
{
	static const int fam[] = { AF_INET, AF_INET6 };
	char name[256];
	struct nl_batch *b;
	size_t i, f;
	int added = 0, r;

	for (i = 0; i < n; i++)
		if (timeouts_ms[i] == 0) {
			nl_seterr(ctx, "allowlist elements need a timeout");
			return -1;
		}
	b = batch_new(ctx, false);
	/* Four sets, and only those an element goes to are named: a
	 * sandbox without IPv6 has no allow6_ set. */
	for (f = 0; f < 4; f++) {
		if (set_name_of(sandbox, fam[f / 2], f % 2, name,
		    sizeof(name)) == -1) {
			batch_free(b);
			nl_seterr(ctx, "sandbox name \"%s\" is not usable",
			    sandbox);
			return -1;
		}
		added += elems_to_batch(b, name, fam[f / 2], f % 2, e, n,
		    timeouts_ms);
	}
	r = added > 0 ? batch_run(b, true) : 0;
	batch_free(b);
	return r == -1 ? -1 : added;
}

/* The elements of one of sandbox's sets (ports: allowp_, keys address .
 * proto . port), to fn; how many, 0 if the set does not exist. */
static int
elems_of(struct nftr_ctx *ctx, const char *name, int family, bool ports,
    void (*fn)(const struct admit_elem *, uint64_t, void *), void *arg)
{
	uint32_t al = addr_len(family);
	struct nftnl_set *s;
	struct nftnl_set_elems_iter *it;
	struct nftnl_set_elem *e;
	struct admit_elem x;
	const uint8_t *key;
	uint32_t len;
	int n = 0;

	/* carry_set reads them the same way, for nftr_apply. */
	if ((s = carry_set(ctx, name)) == NULL)
		return errno == ENOENT ? 0 : -1;
	if ((it = nftnl_set_elems_iter_create(s)) == NULL)
		fatalx("out of memory");
	while ((e = nftnl_set_elems_iter_next(it)) != NULL) {
		key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
		if (key == NULL || len != (ports ? al + 8 : al))
			continue;
		memset(&x, 0, sizeof(x));
		x.addr.family = family;
		memcpy(x.addr.a, key, al);
		if (ports)
			x.svc = ADMIT_SVC(key[al], (uint16_t)(key[al + 4] <<
			    8 | key[al + 5]));
		fn(&x, nftnl_set_elem_get_u64(e, NFTNL_SET_ELEM_TIMEOUT), arg);
		n++;
	}
	nftnl_set_elems_iter_destroy(it);
	nftnl_set_free(s);
	return n;
}

int
nftr_set_elems(struct nftr_ctx *ctx, const char *sandbox,
    void (*fn)(const struct admit_elem *, uint64_t, void *), void *arg)
{
	static const int fam[] = { AF_INET, AF_INET6 };
	char name[256];
	size_t f;
	int n = 0, m;

	for (f = 0; f < 4; f++) {
		if (set_name_of(sandbox, fam[f / 2], f % 2, name,
		    sizeof(name)) == -1 ||
		    (m = elems_of(ctx, name, fam[f / 2], f % 2, fn, arg)) == -1)
			return -1;
		n += m;
	}
	return n;
}

/* Does the ruleset this context applied last have set name? */
static bool
applied_set(const struct nftr_ctx *ctx, const char *name)
{
	size_t i;

	for (i = 0; i < ctx->applied->ntables; i++)
		if (ctx->applied->tables[i].family == NFPROTO_INET)
			return model_find_set((struct nr_table *)
			    &ctx->applied->tables[i], name) != NULL;
	return false;
}

/*
 * Empty every set of sandbox the ruleset applied last holds, in one
 * transaction.  A sandbox has two to four sets, and a transaction that
 * fails (on a set that does not exist) costs the kernel as long as an
 * RCU grace period, 10 to 16 ms each on a loaded 2-core machine, which
 * made up most of what an unallow cost.  -1 when the kernel's sets are
 * not the ones applied (the caller then empties them one by one).
 */
static int
flush_applied(struct nftr_ctx *ctx, const char *sandbox)
{
	static const int fam[] = { AF_INET, AF_INET6 };
	struct nftnl_set *s;
	struct nl_batch *b;
	struct nlmsghdr *nlh;
	char name[256], desc[4][300];
	size_t f, n = 0;
	int r;

	if (ctx->applied == NULL)
		return -1;
	if ((s = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	b = batch_new(ctx, false);
	for (f = 0; f < 4; f++) {
		if (set_name_of(sandbox, fam[f / 2], f % 2, name,
		    sizeof(name)) == -1 || !applied_set(ctx, name)) {
			if (f == 0)
				break;		/* not an allowlist sandbox */
			continue;
		}
		nftnl_set_set_str(s, NFTNL_SET_NAME, name);
		snprintf(desc[f], sizeof(desc[f]), "flush set %s", name);
		nlh = batch_msg(b, NFT_MSG_DELSETELEM, NFPROTO_INET, 0,
		    desc[f]);
		nftnl_set_elems_nlmsg_build_payload(nlh, s);
		batch_next(b);
		n++;
	}
	r = n > 0 ? batch_run(b, true) : -1;
	batch_free(b);
	nftnl_set_free(s);
	return r;
}

int
nftr_set_flush(struct nftr_ctx *ctx, const char *sandbox)
{
	struct nftnl_set *s;
	struct nlmsghdr *nlh;
	struct nl_batch *b;
	static const int fam[] = { AF_INET, AF_INET6 };
	char name[256], desc[4][300];
	size_t f;
	int r = 0;

	if (flush_applied(ctx, sandbox) == 0)
		return 0;
	if ((s = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	/* allow_ first, which every allowlist sandbox has; then allowp_
	 * (only when some entry has ports of its own) and the IPv6 sets
	 * (only with IPv6): a set that does not exist is nothing to empty. */
	for (f = 0; f < 4 && r == 0; f++) {
		if (set_name_of(sandbox, fam[f / 2], f % 2, name,
		    sizeof(name)) == -1) {
			nl_seterr(ctx, "sandbox name \"%s\" is not usable",
			    sandbox);
			r = -1;
			break;
		}
		nftnl_set_set_str(s, NFTNL_SET_NAME, name);
		snprintf(desc[f], sizeof(desc[f]), "flush set %s", name);
		b = batch_new(ctx, false);
		/* A deletion that names no element empties the set. */
		nlh = batch_msg(b, NFT_MSG_DELSETELEM, NFPROTO_INET, 0,
		    desc[f]);
		nftnl_set_elems_nlmsg_build_payload(nlh, s);
		batch_next(b);
		if (batch_run(b, true) == -1 && (f == 0 || errno != ENOENT))
			r = -1;
		batch_free(b);
	}
	nftnl_set_free(s);
	return r;
}

/* Replace the elements of budget set name with the addresses of family:
 * the flush and the additions are one transaction, so no packet sees the
 * set between them. */
static int
budget_fill(struct nftr_ctx *ctx, const char *name, int family,
    const struct moat_addr *addrs, size_t n, const uint32_t *timeouts_ms)
{
	struct nftnl_set *s;
	struct nftnl_set_elem *e;
	struct nftnl_set_elems_iter *it;
	struct nlmsghdr *nlh;
	struct nl_batch *b;
	char flush[64], elems[64];
	size_t i;
	int more, r;

	if ((s = nftnl_set_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, name);
	snprintf(flush, sizeof(flush), "flush set %s", name);
	snprintf(elems, sizeof(elems), "elements of set %s", name);
	b = batch_new(ctx, false);
	nlh = batch_msg(b, NFT_MSG_DELSETELEM, NFPROTO_INET, 0, flush);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	batch_next(b);
	for (i = 0; i < n; i++) {
		if (addrs[i].family != family || timeouts_ms[i] == 0)
			continue;
		if ((e = nftnl_set_elem_alloc()) == NULL)
			fatalx("out of memory");
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, addrs[i].a,
		    addr_len(family));
		nftnl_set_elem_set_u64(e, NFTNL_SET_ELEM_TIMEOUT,
		    timeouts_ms[i]);
		nftnl_set_elem_add(s, e);
	}
	if ((it = nftnl_set_elems_iter_create(s)) == NULL)
		fatalx("out of memory");
	while (nftnl_set_elems_iter_cur(it) != NULL) {
		nlh = batch_msg(b, NFT_MSG_NEWSETELEM, NFPROTO_INET,
		    NLM_F_CREATE, elems);
		more = nftnl_set_elems_nlmsg_build_payload_iter(nlh, it);
		batch_next(b);
		if (more <= 0)
			break;
	}
	nftnl_set_elems_iter_destroy(it);
	r = batch_run(b, true);
	batch_free(b);
	nftnl_set_free(s);
	return r;
}

/* budget_spent, then budget_spent6, which the policy has only with
 * gateway.ipv6: without it, no IPv6 address may be asked for. */
int
nftr_budget_set(struct nftr_ctx *ctx, const struct moat_addr *addrs,
    size_t n, const uint32_t *timeouts_ms)
{
	bool v6 = false;
	size_t i;

	for (i = 0; i < n; i++)
		v6 |= addrs[i].family == AF_INET6 && timeouts_ms[i] != 0;
	if (budget_fill(ctx, NFTR_BUDGET_SPENT, AF_INET, addrs, n,
	    timeouts_ms) == -1)
		return -1;
	if (budget_fill(ctx, NFTR_BUDGET_SPENT6, AF_INET6, addrs, n,
	    timeouts_ms) == -1 && (v6 || errno != ENOENT))
		return -1;
	return 0;
}

/* ---- probe ---------------------------------------------------------- */

static void
probe_table(struct nl_batch *b, const char *name, uint32_t flags,
    const char *what)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;

	if (t == NULL)
		fatalx("out of memory");
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, name);
	nftnl_table_set_u32(t, NFTNL_TABLE_FLAGS, flags);
	nlh = batch_msg(b, NFT_MSG_NEWTABLE, NFPROTO_INET,
	    NLM_F_CREATE | NLM_F_ACK, what);
	nftnl_table_nlmsg_build_payload(nlh, t);
	batch_next(b);
	nftnl_table_free(t);
}

/* One never-committed transaction: table flags first (optional
 * features), then, if given, the whole ruleset (required). */
int
nftr_probe(struct nftr_ctx *ctx, const struct nftr_ruleset *rs,
    unsigned *features)
{
	struct nl_batch *b;
	char name[64];
	int r = 0;

	*features = 0;
	snprintf(name, sizeof(name), "moat_probe_%u", ctx->portid);
	b = batch_new(ctx, false);
	probe_table(b, name, NFT_TABLE_F_OWNER, "table flag owner");
	snprintf(name, sizeof(name), "moat_probe2_%u", ctx->portid);
	probe_table(b, name, NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST,
	    "table flag persist");
	if (rs)
		ruleset_to_batch(b, rs, 0, NULL);
	b->last->nlmsg_flags |= NLM_F_ACK;
	if (batch_send(b) == -1) {
		batch_free(b);
		return -1;
	}
	r = probe_recv(b, features);
	batch_free(b);
	/* Tests stand in for a kernel that gives tables no owner (before
	 * 5.12, or no persist before 6.9): there anyone with CAP_NET_ADMIN
	 * may change moat's tables, which is what gatewayd's watch is for. */
	if (getenv("MOAT_TEST_NO_TABLE_OWNER") != NULL) {
		log_warnx("MOAT_TEST_NO_TABLE_OWNER is set: moat's tables get "
		    "no owner, and any program may change them (tests only)");
		*features &= ~(unsigned)(NFTR_F_OWNER | NFTR_F_PERSIST);
	}
	ctx->features = *features;
	ctx->probed = true;
	return r;
}

/* owner without persist would make the policy vanish when the process
 * that applied it exits: fail open.  Use both or neither. */
uint32_t
table_flags(struct nftr_ctx *ctx)
{
	unsigned both = NFTR_F_OWNER | NFTR_F_PERSIST;

	if ((ctx->features & both) == both)
		return NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST;
	return 0;
}
