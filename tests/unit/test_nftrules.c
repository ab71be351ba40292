/*
 * test_nftrules.c -- nft-rules without a kernel: golden renders, netlink
 * round trips of every object, determinism, and the shape of the policy
 * (nothing on the per-packet path grows with the number of sandboxes).
 *
 * Golden files live in nft-rules/golden/; run with NFTR_GOLDEN_UPDATE=1
 * to rewrite them after a deliberate change, then review the diff.
 */
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"
#include "nr_int.h"

static struct moat_config *
load_file(const char *path)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg = config_load(path, NULL, &errs);

	if (cfg == NULL)
		config_errors_print(stderr, &errs);
	config_errors_free(&errs);
	assert_non_null(cfg);
	return cfg;
}

static struct moat_config *
load_text(const char *text)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg = config_load_buffer("test.conf", text,
	    "/nonexistent", &errs);

	if (cfg == NULL)
		config_errors_print(stderr, &errs);
	config_errors_free(&errs);
	assert_non_null(cfg);
	return cfg;
}

static char *
render(const struct nftr_ruleset *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	nftr_render(f, rs);
	fclose(f);
	return buf;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (f == NULL)
		return NULL;
	if (getdelim(&buf, &len, '\0', f) < 0) {
		free(buf);
		buf = strdup("");
	}
	fclose(f);
	return buf;
}

/* Owners' uids without the machine's user database: alice 1001, bob
 * 1002, root 0; nobody else has an account. */
static int
fake_owner_uid(const char *name, uint32_t *uid)
{
	static const struct { const char *name; uint32_t uid; } users[] = {
		{ "alice", 1001 }, { "bob", 1002 }, { "root", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++)
		if (strcmp(users[i].name, name) == 0) {
			*uid = users[i].uid;
			return 0;
		}
	return -1;
}

/* The host's IPv6 networks, whatever the machine has (v6.conf). */
static int
fake_lan6(const char *bridge, struct moat_prefix **v, size_t *n)
{
	static const char *const nets[] = { "2001:db8:1::/64", "fd00:5::/64" };
	size_t i;

	*n = sizeof(nets) / sizeof(nets[0]);
	*v = calloc(*n, sizeof(**v));
	for (i = 0; i < *n; i++)
		assert_int_equal(prefix_parse(nets[i], &(*v)[i]), 0);
	return 0;
}

static void
golden(const char *conf, enum nftr_mode mode, const char *want_path)
{
	/* Fixed uids so the golden output chain does not depend on the
	 * users of the machine running the test. */
	struct nftr_opts opts = { .mode = mode, .has_proxy_uid = true,
	    .proxy_uid = 990, .has_dns_uid = true, .dns_uid = 991,
	    .owner_uid = fake_owner_uid, .lan6 = fake_lan6 };
	struct moat_config *cfg = load_file(conf);
	struct nftr_ruleset *rs;
	char err[256], *got, *want;

	rs = nftr_build(cfg, &opts, err, sizeof(err));
	assert_non_null(rs);
	got = render(rs);
	if (getenv("NFTR_GOLDEN_UPDATE")) {
		FILE *f = fopen(want_path, "w");

		assert_non_null(f);
		fputs(got, f);
		fclose(f);
	}
	want = slurp(want_path);
	assert_non_null(want);
	assert_string_equal(want, got);
	free(want);
	free(got);
	nftr_ruleset_free(rs);
	config_free(cfg);
}

static void
test_golden_demo(void **state)
{
	golden("examples/demo.conf", NFTR_MODE_GATEWAY,
	    "nft-rules/golden/demo.nft");
}

static void
test_golden_full(void **state)
{
	golden("nft-rules/golden/full.conf", NFTR_MODE_GATEWAY,
	    "nft-rules/golden/full.nft");
}

/* gateway.ipv6: the guests' IPv6 sets and rules (with it off, the other
 * goldens show none of them). */
static void
test_golden_v6(void **state)
{
	golden("nft-rules/golden/v6.conf", NFTR_MODE_GATEWAY,
	    "nft-rules/golden/v6.nft");
}

static void
test_golden_host_only(void **state)
{
	golden("nft-rules/golden/full.conf", NFTR_MODE_HOST_ONLY,
	    "nft-rules/golden/full-host.nft");
}

static void
test_golden_box(void **state)
{
	golden("nft-rules/golden/box.conf", NFTR_MODE_GATEWAY,
	    "nft-rules/golden/box.nft");
}

/* A separate box with per-host trunks: everything that applies to the
 * sandbox side applies to every trunk (one lookup in sb_ifs, never the
 * bridge alone), and a trunked sandbox's address is accepted only from
 * its own trunk, with one rule whatever the number of sandboxes. */
static void
test_trunks(void **state)
{
	static const char *want[] = {
		"iifname != @sb_ifs meta nfproto ipv4 ip saddr 10.77.0.0/24 goto drop_spoof",
		"iifname @sb_ifs meta nfproto ipv4 ip saddr != 10.77.0.0/24 goto drop_spoof",
		"iifname @sb_ifs meta nfproto ipv6 goto drop_ipv6",
		"meta nfproto ipv4 ip saddr @trunked ip saddr . iifname != @sb_trunk goto drop_spoof",
		"iifname @sb_ifs goto guest_in",
		"iifname @sb_ifs goto guest_fwd",
		"oifname @sb_ifs goto to_guest",
		"oifname @sb_ifs goto refuse_guest",
		"10.77.0.21 . \"trA\"",
		"10.77.0.33 . \"trB\"",
	};
	struct moat_config *cfg = load_file("nft-rules/golden/box.conf");
	struct nftr_ruleset *rs = nftr_build(cfg, NULL, NULL, 0);
	char *text = render(rs);
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(text, want[i]) == NULL)
			fail_msg("missing: %s", want[i]);
	assert_null(strstr(text, "iifname \"sb0\""));
	assert_null(strstr(text, "oifname \"sb0\""));
	/* c1 has no trunk: from any sandbox-side interface. */
	assert_null(strstr(text, "10.77.0.40 . "));
	free(text);
	nftr_ruleset_free(rs);
	config_free(cfg);
}

/* Every rule, set (with elements) and chain survives being written as a
 * netlink message and parsed back, as the kernel's echo would be. */
static void
roundtrip_rule(const struct nftnl_rule *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 4], *a, *b;
	struct nlmsghdr *nlh;
	struct nftnl_rule *back = nftnl_rule_alloc();

	/* libnftnl writes some names without their NUL (the kernel takes
	 * the attribute length) but parses them as C strings. */
	memset(buf, 0, sizeof(buf));
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWRULE, NFPROTO_INET, 0, 1);
	nftnl_rule_nlmsg_build_payload(nlh, (struct nftnl_rule *)r);
	assert_int_equal(nftnl_rule_nlmsg_parse(nlh, back), 0);
	a = canon_rule(r);
	b = canon_rule(back);
	/* ... which for objref names a whole number of words long reads
	 * into the next attribute: compare those rules up to the name. */
	if (strncmp(a, "[ objref", 8) == 0)
		assert_memory_equal(a, b, strcspn(a, "]") - 1);
	else
		assert_string_equal(a, b);
	assert_true(strlen(a) > 0);
	free(a);
	free(b);
	nftnl_rule_free(back);
}

static struct nftnl_set_elem *
elem_copy(struct nftnl_set_elem *e)
{
	static const uint16_t attrs[] = { NFTNL_SET_ELEM_KEY,
	    NFTNL_SET_ELEM_FLAGS, NFTNL_SET_ELEM_VERDICT, NFTNL_SET_ELEM_CHAIN };
	struct nftnl_set_elem *c = nftnl_set_elem_alloc();
	const void *v;
	uint32_t len;
	size_t i;

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (nftnl_set_elem_is_set(e, attrs[i])) {
			v = nftnl_set_elem_get(e, attrs[i], &len);
			nftnl_set_elem_set(c, attrs[i], v, len);
		}
	return c;
}

static void
roundtrip_set(const struct nr_set *s)
{
	char buf[MNL_SOCKET_BUFFER_SIZE * 4];
	struct nlmsghdr *nlh;
	struct nftnl_set *back = nftnl_set_alloc();
	struct nftnl_set_elems_iter *it, *bi;
	struct nftnl_set_elem *e;
	int n = 0;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWSET, NFPROTO_INET, 0, 1);
	nftnl_set_nlmsg_build_payload(nlh, s->nl);
	assert_int_equal(nftnl_set_nlmsg_parse(nlh, back), 0);
	assert_string_equal(nftnl_set_get_str(back, NFTNL_SET_NAME), s->name);
	assert_int_equal(nftnl_set_get_u32(back, NFTNL_SET_FLAGS),
	    nftnl_set_get_u32(s->nl, NFTNL_SET_FLAGS));
	assert_int_equal(nftnl_set_get_u32(back, NFTNL_SET_KEY_LEN),
	    nftnl_set_get_u32(s->nl, NFTNL_SET_KEY_LEN));
	nftnl_set_free(back);
	if (s->nelems == 0)
		return;

	/* One element per message: libnftnl numbers the list entries when
	 * it builds and wants NFTA_LIST_ELEM when it parses, as the kernel
	 * sends them. */
	it = nftnl_set_elems_iter_create(s->nl);
	while ((e = nftnl_set_elems_iter_next(it)) != NULL) {
		struct nftnl_set *one = nftnl_set_alloc();
		struct nftnl_set_elem *got;
		uint32_t la, lb;
		const void *ka, *kb;

		nftnl_set_set_str(one, NFTNL_SET_TABLE, "moat");
		nftnl_set_set_str(one, NFTNL_SET_NAME, s->name);
		nftnl_set_elem_add(one, elem_copy(e));
		back = nftnl_set_alloc();
		nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_NEWSETELEM,
		    NFPROTO_INET, 0, 1);
		nftnl_set_elems_nlmsg_build_payload(nlh, one);
		if (nftnl_set_elems_nlmsg_parse(nlh, back) != 0)
			fail_msg("set %s: element does not parse back",
			    s->name);
		bi = nftnl_set_elems_iter_create(back);
		got = nftnl_set_elems_iter_cur(bi);
		assert_non_null(got);
		ka = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &la);
		kb = nftnl_set_elem_get(got, NFTNL_SET_ELEM_KEY, &lb);
		assert_int_equal(la, lb);
		assert_memory_equal(ka, kb, la);
		nftnl_set_elems_iter_destroy(bi);
		nftnl_set_free(back);
		nftnl_set_free(one);
		n++;
	}
	nftnl_set_elems_iter_destroy(it);
	/* Interval sets have an end element per range, not shown alone. */
	assert_true(n >= (int)s->nelems && n <= 2 * (int)s->nelems);
}

static void
roundtrip_tables(struct nftr_ruleset *rs, size_t *nrules)
{
	size_t i, j, k;

	for (i = 0; i < rs->ntables; i++) {
		struct nr_table *t = &rs->tables[i];

		for (j = 0; j < t->nsets; j++)
			roundtrip_set(t->sets[j]);
		for (j = 0; j < t->nchains; j++)
			for (k = 0; k < t->chains[j]->nrules; k++, (*nrules)++)
				roundtrip_rule(t->chains[j]->rules[k].nl);
	}
}

static void
test_roundtrip(void **state)
{
	struct moat_config *cfg = load_file("nft-rules/golden/full.conf");
	struct nftr_ruleset *rs;
	char err[256];
	size_t nrules = 0;

	rs = nftr_build(cfg, NULL, err, sizeof(err));
	assert_non_null(rs);
	assert_int_equal(rs->ntables, 2);
	roundtrip_tables(rs, &nrules);
	assert_true(nrules > 40);
	nftr_ruleset_free(rs);
	config_free(cfg);
	/* The separate box's sets: sb_ifs, trunked, sb_trunk (a concat). */
	cfg = load_file("nft-rules/golden/box.conf");
	rs = nftr_build(cfg, NULL, err, sizeof(err));
	assert_non_null(rs);
	nrules = 0;
	roundtrip_tables(rs, &nrules);
	assert_non_null(model_find_set(&rs->tables[0], "sb_trunk"));
	nftr_ruleset_free(rs);
	config_free(cfg);
}


static void
test_deterministic(void **state)
{
	struct moat_config *cfg = load_file("examples/demo.conf");
	struct nftr_ruleset *a, *b;
	char err[256], *ta, *tb;

	a = nftr_build(cfg, NULL, err, sizeof(err));
	b = nftr_build(cfg, NULL, err, sizeof(err));
	ta = render(a);
	tb = render(b);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	nftr_ruleset_free(a);
	nftr_ruleset_free(b);
	config_free(cfg);
}

static char *
config_with(size_t n)
{
	char *s = NULL, *t;
	size_t i;

	xasprintf(&s, "gateway: { uplink = \"up0\"; network = \"10.77.0.0/16\";"
	    " bridge = \"moat0\"; dns: { upstream = [ \"9.9.9.9\" ]; }; "
	    "proxy: { port = 3128; intercept = true; }; };\nsandboxes = (");
	for (i = 0; i < n; i++) {
		xasprintf(&t, "%s%s{ name = \"s%zu\"; mac = \"52:54:00:00:%02zx:"
		    "%02zx\"; address = \"10.77.%zu.%zu\"; tap = \"mt-%zu\"; "
		    "egress = \"%s\"; }", s, i ? "," : "", i, (i + 2) / 256,
		    (i + 2) % 256, (i + 2) / 256, (i + 2) % 256, i,
		    i % 3 == 0 ? "allowlist" : i % 3 == 1 ? "open" : "none");
		free(s);
		s = t;
	}
	xasprintf(&t, "%s);\n", s);
	free(s);
	return t;
}

static size_t
chain_rules(struct nftr_ruleset *rs, const char *fam, const char *chain)
{
	size_t i;

	for (i = 0; i < rs->ntables; i++)
		if (strcmp(rs->tables[i].fname, fam) == 0) {
			struct nr_chain *c = model_find_chain(&rs->tables[i],
			    chain);

			assert_non_null(c);
			return c->nrules;
		}
	fail();
	return 0;
}

/* The chains every packet walks have the same rules for 3 sandboxes as
 * for 300: per-sandbox decisions are set and map lookups. */
static void
test_flat_per_packet(void **state)
{
	static const char *hot[][2] = {
		{ "inet", "raw_pre" }, { "inet", "nat_pre" },
		{ "inet", "input" }, { "inet", "guest_in" },
		{ "inet", "forward" }, { "inet", "guest_fwd" },
		{ "inet", "to_guest" }, { "inet", "nat_post" },
		{ "inet", "acct_local" },
		{ "bridge", "prerouting" }, { "bridge", "from_guest" },
		{ "bridge", "forward" },
	};
	char *small = config_with(3), *big = config_with(300), err[256];
	struct moat_config *cs = load_text(small), *cb = load_text(big);
	struct nftr_ruleset *rs = nftr_build(cs, NULL, err, sizeof(err));
	struct nftr_ruleset *rb = nftr_build(cb, NULL, err, sizeof(err));
	size_t i;

	assert_non_null(rs);
	assert_non_null(rb);
	for (i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
		assert_int_equal(chain_rules(rs, hot[i][0], hot[i][1]),
		    chain_rules(rb, hot[i][0], hot[i][1]));
	/* One allowlist set and chain per allowlist sandbox. */
	assert_non_null(model_find_set(&rb->tables[0], "allow_s297"));
	assert_null(model_find_set(&rb->tables[0], "allow_s298"));
	nftr_ruleset_free(rs);
	nftr_ruleset_free(rb);
	config_free(cs);
	config_free(cb);
	free(small);
	free(big);
}

static int
count_exprs(struct nftnl_expr *e, void *arg)
{
	assert_string_equal(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "counter");
	(*(int *)arg)++;
	return 0;
}

/* Traffic accounting: four sets, each with one counted element per
 * sandbox; built for gatewayd (incremental) they stay changeable in
 * place and keep their counter, so one sandbox more is four elements. */
static void
test_accounting(void **state)
{
	static const char *sets[] = { "acct_out", "acct_new_out", "acct_in",
	    "acct_new_in" };
	struct nftr_opts inc = { .incremental = true };
	char *text = config_with(5), err[256];
	struct moat_config *cfg = load_text(text);
	struct nftr_ruleset *rs = nftr_build(cfg, NULL, err, sizeof(err));
	struct nftr_ruleset *ri = nftr_build(cfg, &inc, err, sizeof(err));
	size_t i;

	assert_non_null(rs);
	assert_non_null(ri);
	for (i = 0; i < 4; i++) {
		struct nr_set *s = model_find_set(&rs->tables[0], sets[i]);
		struct nr_set *si = model_find_set(&ri->tables[0], sets[i]);
		int n = 0;

		assert_non_null(s);
		assert_non_null(si);
		assert_int_equal(s->nelems, 5);
		assert_false(s->dynamic);
		nftnl_set_expr_foreach(s->nl, count_exprs, &n);
		assert_int_equal(n, 1);
		assert_non_null(strstr(s->decl, "flags constant; counter;"));
		assert_string_equal(si->decl, "type ipv4_addr; counter;");
		assert_int_equal(nftnl_set_get_u32(si->nl, NFTNL_SET_FLAGS) &
		    NFT_SET_CONSTANT, 0);
	}
	assert_null(model_find_chain(&rs->tables[0], "acct_pre"));
	assert_null(model_find_chain(&rs->tables[0], "acct_post"));
	assert_int_equal(chain_rules(rs, "inet", "acct_local"), 2);
	nftr_ruleset_free(rs);
	nftr_ruleset_free(ri);
	config_free(cfg);
	free(text);
}

static void
test_set_name(void **state)
{
	char buf[32], big[300];

	assert_int_equal(nftr_set_name("web", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "allow_web");
	assert_int_equal(nftr_set_name("a b", buf, sizeof(buf)), -1);
	assert_int_equal(nftr_set_name("x;flush ruleset", buf, sizeof(buf)),
	    -1);
	assert_int_equal(nftr_set_name("", buf, sizeof(buf)), -1);
	assert_int_equal(nftr_set_name("abcdefghijklmnopqrstuvwxyz0123", buf,
	    sizeof(buf)), -1);		/* does not fit */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(nftr_set_name(big, buf, sizeof(buf)), -1);
}

/* Every refusal reason has a counter and a chain that logs with its
 * prefix to the configured group, and refusals of guests' traffic are
 * rejects with admin-prohibited. */
static void
test_reasons(void **state)
{
	struct moat_config *cfg = load_file("nft-rules/golden/full.conf");
	struct nftr_ruleset *rs = nftr_build(cfg, NULL, NULL, 0);
	const struct nftr_reason *r;
	char *text = render(rs), want[200];
	size_t n, i;

	r = nftr_reasons(&n);
	for (i = 0; i < n; i++) {
		if (strcmp(r[i].name, "ra") == 0)
			continue;	/* only with gateway.ipv6 (v6.nft) */
		snprintf(want, sizeof(want), "counter name \"%s\" log prefix "
		    "\"moat:%s \" group 5 %s", r[i].name, r[i].name,
		    r[i].reject ? "reject with icmpx admin-prohibited" : "drop");
		assert_non_null(strstr(text, want));
	}
	free(text);
	nftr_ruleset_free(rs);
	config_free(cfg);
}

/* gateway.host_access: new connections from the host to a guest pass
 * from root and, by default, from each owner to their own guests only;
 * "root" has no owners' set, "all" no check at all. */
static char *
render_access(const char *access)
{
	struct nftr_opts opts = { .owner_uid = fake_owner_uid };
	struct moat_config *cfg = load_file("examples/demo.conf");
	struct nftr_ruleset *rs;
	char *text;

	if (access != NULL)
		cfg->gw.host_access = strcmp(access, "root") == 0 ?
		    HOST_ACCESS_ROOT : HOST_ACCESS_ALL;
	rs = nftr_build(cfg, &opts, NULL, 0);
	assert_non_null(rs);
	text = render(rs);
	nftr_ruleset_free(rs);
	config_free(cfg);
	return text;
}

static void
test_host_access(void **state)
{
	static const char *want[] = {
		"meta nfproto ipv4 ip daddr 10.77.0.0/24 ip daddr != 10.77.0.1 "
		    "ct state new goto host_out",
		"meta skuid 0 accept",
		"meta nfproto ipv4 meta skuid . ip daddr @host_owners accept",
		"goto refuse_hostuser",
		"1001 . 10.77.0.10",
		"1002 . 10.77.0.11",
	};
	char *text = render_access(NULL);
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(text, want[i]) == NULL)
			fail_msg("missing: %s", want[i]);
	free(text);
	text = render_access("root");
	assert_non_null(strstr(text, "goto host_out"));
	assert_null(strstr(text, "host_owners"));
	free(text);
	text = render_access("all");
	assert_null(strstr(text, "host_out"));
	free(text);
}

/* An nf_tables notification as the kernel sends one. */
static size_t
event_msg(char *buf, uint16_t msg, int family, uint32_t portid,
    const char *table, uint16_t name_attr, const char *name)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | msg;
	nlh->nlmsg_pid = portid;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = (uint8_t)family;
	if (table != NULL)
		mnl_attr_put_strz(nlh, 1, table);
	if (name != NULL)
		mnl_attr_put_strz(nlh, name_attr, name);
	return nlh->nlmsg_len;
}

/* The watch's reading of notifications: who, what, where; anything else
 * (another subsystem, a short or overlong message, a table name that is
 * not a string) is refused, never half read. */
static void
test_event_parse(void **state)
{
	char buf[1024];
	struct nftr_event ev;
	size_t n;

	(void)state;
	n = event_msg(buf, NFT_MSG_DELRULE, NFPROTO_INET, 4242, "moat",
	    NFTA_RULE_CHAIN, "guest_fwd");
	assert_int_equal(nftr_event_parse(buf, n, &ev), 0);
	assert_int_equal(ev.portid, 4242);
	assert_int_equal(ev.family, NFPROTO_INET);
	assert_string_equal(ev.kind, "rule");
	assert_true(ev.deleted);
	assert_string_equal(ev.table, "moat");
	assert_string_equal(ev.name, "guest_fwd");
	n = event_msg(buf, NFT_MSG_NEWCHAIN, NFPROTO_BRIDGE, 7, "moat",
	    NFTA_CHAIN_NAME, "ports");
	assert_int_equal(nftr_event_parse(buf, n, &ev), 0);
	assert_string_equal(ev.kind, "chain");
	assert_false(ev.deleted);
	assert_string_equal(ev.name, "ports");
	n = event_msg(buf, NFT_MSG_DELTABLE, NFPROTO_INET, 7, "moat", 0, NULL);
	assert_int_equal(nftr_event_parse(buf, n, &ev), 0);
	assert_string_equal(ev.kind, "table");
	assert_string_equal(ev.name, "");
	/* Linux 6.3's destroy (28: NFT_MSG_DESTROYRULE) is a deletion. */
	n = event_msg(buf, 28, NFPROTO_INET, 7, "moat", NFTA_RULE_CHAIN,
	    "guest_fwd");
	assert_int_equal(nftr_event_parse(buf, n, &ev), 0);
	assert_string_equal(ev.kind, "rule");
	assert_true(ev.deleted);
	n = event_msg(buf, NFT_MSG_NEWGEN, NFPROTO_UNSPEC, 7, NULL, 0, NULL);
	assert_int_equal(nftr_event_parse(buf, n, &ev), 0);
	assert_true(ev.gen);
	/* Refused: cut short, no table, another subsystem. */
	n = event_msg(buf, NFT_MSG_NEWRULE, NFPROTO_INET, 7, "moat",
	    NFTA_RULE_CHAIN, "guest_fwd");
	assert_int_equal(nftr_event_parse(buf, n - 4, &ev), -1);
	assert_int_equal(nftr_event_parse(buf, 8, &ev), -1);
	n = event_msg(buf, NFT_MSG_NEWRULE, NFPROTO_INET, 7, NULL, 0, NULL);
	assert_int_equal(nftr_event_parse(buf, n, &ev), -1);
	n = event_msg(buf, NFT_MSG_NEWRULE, NFPROTO_INET, 7, "moat", 0, NULL);
	((struct nlmsghdr *)buf)->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) |
	    NFT_MSG_NEWRULE;
	assert_int_equal(nftr_event_parse(buf, n, &ev), -1);
	/* A length that is not aligned: libmnl would read up to the
	 * aligned end, past the bytes given (found by fuzz_nftevent). */
	n = event_msg(buf, NFT_MSG_NEWTABLE, NFPROTO_INET, 7, "moat", 0, NULL);
	((struct nlmsghdr *)buf)->nlmsg_len = (uint32_t)n - 1;
	assert_int_equal(nftr_event_parse(buf, n - 1, &ev), -1);
	/* A table name without its NUL. */
	n = event_msg(buf, NFT_MSG_NEWTABLE, NFPROTO_INET, 7, "moat", 0, NULL);
	buf[n - 4] = 'x';
	buf[n - 3] = 'x';
	buf[n - 2] = 'x';
	buf[n - 1] = 'x';
	assert_int_equal(nftr_event_parse(buf, n, &ev), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_demo),
		cmocka_unit_test(test_golden_full),
		cmocka_unit_test(test_golden_host_only),
		cmocka_unit_test(test_golden_box),
		cmocka_unit_test(test_trunks),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_flat_per_packet),
		cmocka_unit_test(test_accounting),
		cmocka_unit_test(test_set_name),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_golden_v6),
		cmocka_unit_test(test_host_access),
		cmocka_unit_test(test_event_parse),
	};

	log_init("test_nftrules", 0, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
