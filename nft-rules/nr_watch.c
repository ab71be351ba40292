/*
 * nr_watch.c -- what a program that holds moat's tables needs to watch
 * them: the portid its own changes carry, and the base chains of other
 * tables that a packet meets before moat's.  Reading a notification is
 * nr_event.c's.
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
