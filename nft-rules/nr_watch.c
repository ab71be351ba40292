/*
 * nr_watch.c -- what a program that holds moat's tables needs to watch
 * them: the portid its own changes carry, one nf_tables notification read
 * as plain values (a pure function over the message), and the base
 * chains of other tables that a packet meets before moat's.
 */
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

uint32_t
nftr_portid(const struct nftr_ctx *ctx)
{
	return ctx->portid;
}

/* Each kind of notification: where its table's name and its own name
 * are.  Every kind keeps the table's name in attribute 1. */
static const struct {
	uint16_t	 msg;
	const char	*kind;
	uint16_t	 name_attr;	/* 0: none (a table) */
	bool		 deleted;
} kinds[] = {
	{ NFT_MSG_NEWTABLE, "table", 0, false },
	{ NFT_MSG_DELTABLE, "table", 0, true },
	{ NFT_MSG_NEWCHAIN, "chain", NFTA_CHAIN_NAME, false },
	{ NFT_MSG_DELCHAIN, "chain", NFTA_CHAIN_NAME, true },
	{ NFT_MSG_NEWRULE, "rule", NFTA_RULE_CHAIN, false },
	{ NFT_MSG_DELRULE, "rule", NFTA_RULE_CHAIN, true },
	{ NFT_MSG_NEWSET, "set", NFTA_SET_NAME, false },
	{ NFT_MSG_DELSET, "set", NFTA_SET_NAME, true },
	{ NFT_MSG_NEWSETELEM, "element", NFTA_SET_ELEM_LIST_SET, false },
	{ NFT_MSG_DELSETELEM, "element", NFTA_SET_ELEM_LIST_SET, true },
	{ NFT_MSG_NEWOBJ, "object", NFTA_OBJ_NAME, false },
	{ NFT_MSG_DELOBJ, "object", NFTA_OBJ_NAME, true },
	{ NFT_MSG_NEWFLOWTABLE, "flowtable", NFTA_FLOWTABLE_NAME, false },
	{ NFT_MSG_DELFLOWTABLE, "flowtable", NFTA_FLOWTABLE_NAME, true },
	{ NFT_MSG_NEWGEN, "generation", 0, false },
};

struct ev_attrs {
	const struct nlattr *a[8];
};

static int
ev_attr(const struct nlattr *a, void *data)
{
	struct ev_attrs *v = data;
	uint16_t t = mnl_attr_get_type(a);

	if (t >= 1 && t <= 3 &&
	    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
		v->a[t] = a;
	return MNL_CB_OK;
}

/* Validated as NUL-terminated within the message (ev_attr). */
static void
copy_name(char *dst, size_t len, const struct nlattr *a)
{
	snprintf(dst, len, "%s", a ? mnl_attr_get_str(a) : "");
}

int
nftr_event_parse(const void *buf, size_t len, struct nftr_event *ev)
{
	const struct nlmsghdr *nlh = buf;
	const struct nfgenmsg *nfg;
	struct ev_attrs v;
	uint16_t msg;
	size_t i;

	memset(ev, 0, sizeof(*ev));
	if (len < sizeof(*nlh) || nlh->nlmsg_len < NLMSG_HDRLEN +
	    sizeof(*nfg) || nlh->nlmsg_len > len ||
	    NFNL_SUBSYS_ID(nlh->nlmsg_type) != NFNL_SUBSYS_NFTABLES)
		return -1;
	msg = NFNL_MSG_TYPE(nlh->nlmsg_type);
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].msg == msg)
			break;
	if (i == sizeof(kinds) / sizeof(kinds[0]))
		return -1;
	nfg = mnl_nlmsg_get_payload(nlh);
	ev->portid = nlh->nlmsg_pid;
	ev->family = nfg->nfgen_family;
	ev->kind = kinds[i].kind;
	ev->deleted = kinds[i].deleted;
	ev->gen = msg == NFT_MSG_NEWGEN;
	if (ev->gen)
		return 0;
	memset(&v, 0, sizeof(v));
	if (mnl_attr_parse(nlh, sizeof(*nfg), ev_attr, &v) < 0 ||
	    v.a[1] == NULL)
		return -1;
	copy_name(ev->table, sizeof(ev->table), v.a[1]);
	if (kinds[i].name_attr != 0)
		copy_name(ev->name, sizeof(ev->name), v.a[kinds[i].name_attr]);
	return 0;
}

const char *
nftr_family_name(int family)
{
	switch (family) {
	case NFPROTO_INET:	return "inet";
	case NFPROTO_IPV4:	return "ip";
	case NFPROTO_IPV6:	return "ip6";
	case NFPROTO_BRIDGE:	return "bridge";
	case NFPROTO_ARP:	return "arp";
	case NFPROTO_NETDEV:	return "netdev";
	}
	return "unknown";
}

/* ---- other tables' base chains -------------------------------------- */

/* ip, ip6 and inet chains register at the same IPv4/IPv6 hooks and run
 * in one order of priority; bridge chains at the bridge's. */
static int
hook_class(int family)
{
	return family == NFPROTO_IPV4 || family == NFPROTO_IPV6 ||
	    family == NFPROTO_INET ? NFPROTO_INET : family;
}

static const char *
hook_name(uint32_t hook)
{
	static const char *const names[] = { "prerouting", "input",
	    "forward", "output", "postrouting", "ingress" };

	return hook < sizeof(names) / sizeof(names[0]) ? names[hook] : "?";
}

struct foreign {
	const struct nftr_ruleset *rs;
	char		*what;
	size_t		 len;
	int		 n;
};

/* Moat's base chain on this hook that runs after prio and before any
 * other of moat's that also does, or NULL. */
static const struct nr_chain *
moat_after(const struct nftr_ruleset *rs, int class, uint32_t hook,
    int32_t prio, const struct nr_table **tp)
{
	const struct nr_chain *best = NULL;
	int32_t bp = 0, p;
	size_t i, j;

	for (i = 0; i < rs->ntables; i++) {
		const struct nr_table *t = &rs->tables[i];

		if (hook_class(t->family) != class)
			continue;
		for (j = 0; j < t->nchains; j++) {
			const struct nftnl_chain *c = t->chains[j]->nl;

			if (!nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM) ||
			    nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM) != hook)
				continue;
			p = nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO);
			if (p > prio && (best == NULL || p < bp)) {
				best = t->chains[j];
				bp = p;
				*tp = t;
			}
		}
	}
	return best;
}

static int
foreign_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct foreign *f = arg;
	struct nftnl_chain *c = nftnl_chain_alloc();
	const struct nr_chain *m;
	const struct nr_table *mt = NULL;
	const char *table;
	uint32_t family, hook;
	int32_t prio;

	if (c == NULL || nftnl_chain_nlmsg_parse(nlh, c) == -1)
		fatalx("%s: cannot parse", __func__);
	table = nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE);
	family = nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY);
	if (!nftnl_chain_is_set(c, NFTNL_CHAIN_HOOKNUM) ||
	    (family == NFPROTO_INET && (strcmp(table, NFTR_TABLE) == 0 ||
	    strcmp(table, NFTR_HA_TABLE) == 0)) ||
	    (family == NFPROTO_BRIDGE && strcmp(table, NFTR_TABLE) == 0))
		goto out;
	hook = nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM);
	prio = nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO);
	m = moat_after(f->rs, hook_class((int)family), hook, prio, &mt);
	if (m == NULL)
		goto out;
	if (f->n++ == 0)
		snprintf(f->what, f->len, "chain %s %s %s hooks %s at priority "
		    "%d, before %s %s %s (%d)", nftr_family_name((int)family),
		    table, nftnl_chain_get_str(c, NFTNL_CHAIN_NAME),
		    hook_name(hook), prio, mt->fname, NFTR_TABLE,
		    m->name, nftnl_chain_get_s32(m->nl, NFTNL_CHAIN_PRIO));
out:
	nftnl_chain_free(c);
	return MNL_CB_OK;
}

int
nftr_foreign_hooks(struct nftr_ctx *ctx, const struct nftr_ruleset *rs,
    char *what, size_t len)
{
	struct foreign f = { rs, what, len, 0 };
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	if (len > 0)
		what[0] = '\0';
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETCHAIN, NFPROTO_UNSPEC,
	    NLM_F_DUMP | NLM_F_ACK, ctx->seq++);
	if (nl_dump(ctx, nlh, foreign_cb, &f) == -1)
		return -1;
	return f.n;
}
