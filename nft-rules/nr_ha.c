/*
 * nr_ha.c -- the gate of an active/standby pair: table "inet moat_ha".
 *
 * A box of a pair forwards only while keepalived says it is MASTER or
 * BACKUP.  In any other state (just started, FAULT, STOP) the gate is
 * shut: its forward chain drops every packet, and its output chain
 * drops what the proxy and dnsd send, so that nothing a guest asks for
 * leaves the box.  The gate is a table of its own, so replacing the
 * policy (reload) never touches it, and it is not owned by the netlink
 * socket: it stays as it was when gatewayd dies.  Each change replaces
 * the whole table in one transaction (ensure, delete, create), so no
 * packet ever sees half a gate.
 */
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

/* Before moat's own filter chains; a drop anywhere ends the packet. */
#define HA_PRIO		(-10)

static void
ha_table(struct nl_batch *b, uint16_t type, uint16_t flags, const char *what)
{
	struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;

	if (t == NULL)
		fatalx("out of memory");
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, NFTR_HA_TABLE);
	nlh = batch_msg(b, type, NFPROTO_INET, flags, what);
	nftnl_table_nlmsg_build_payload(nlh, t);
	batch_next(b);
	nftnl_table_free(t);
}

static void
ha_chain(struct nl_batch *b, const char *name, uint32_t hook)
{
	struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh;
	char desc[64];

	if (c == NULL)
		fatalx("out of memory");
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NFTR_HA_TABLE);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, "filter");
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, HA_PRIO);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
	snprintf(desc, sizeof(desc), "chain %s %s", NFTR_HA_TABLE, name);
	nlh = batch_msg(b, NFT_MSG_NEWCHAIN, NFPROTO_INET,
	    NLM_F_CREATE | NLM_F_EXCL, desc);
	nftnl_chain_nlmsg_build_payload(nlh, c);
	batch_next(b);
	nftnl_chain_free(c);
}

/* One "drop" rule, matching the socket's owner when has_uid. */
static void
ha_drop(struct nl_batch *b, const char *chain, bool has_uid, uint32_t uid)
{
	struct nr_table t = { .family = NFPROTO_INET, .fname = "inet" };
	struct nr_chain c = { .name = (char *)chain };
	struct nlmsghdr *nlh;
	struct nr_rb rb;
	char desc[128];

	rb_begin(&rb, &t, &c);
	nftnl_rule_set_str(rb.r, NFTNL_RULE_TABLE, NFTR_HA_TABLE);
	if (has_uid)
		rb_skuid(&rb, uid);
	rb_verdict(&rb, NF_DROP, NULL);
	rb_end(&rb);
	snprintf(desc, sizeof(desc), "rule in %s %s: %s", NFTR_HA_TABLE,
	    chain, c.rules[0].text);
	nlh = batch_msg(b, NFT_MSG_NEWRULE, NFPROTO_INET,
	    NLM_F_CREATE | NLM_F_APPEND, desc);
	nftnl_rule_nlmsg_build_payload(nlh, c.rules[0].nl);
	batch_next(b);
	nftnl_rule_free(c.rules[0].nl);
	free(c.rules[0].text);
	free(c.rules);
}

int
nftr_ha_gate(struct nftr_ctx *ctx, bool open, const struct nftr_opts *o)
{
	struct nl_batch *b = batch_new(ctx, false);
	int r;

	ha_delete_to_batch(b);
	ha_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL,
	    "table inet " NFTR_HA_TABLE " (create)");
	ha_chain(b, "forward", NF_INET_FORWARD);
	ha_chain(b, "output", NF_INET_LOCAL_OUT);
	if (!open) {
		ha_drop(b, "forward", false, 0);
		if (o->has_proxy_uid)
			ha_drop(b, "output", true, o->proxy_uid);
		if (o->has_dns_uid)
			ha_drop(b, "output", true, o->dns_uid);
	}
	r = batch_run(b, true);
	batch_free(b);
	return r;
}

/* "Create if missing" then "delete": succeeds whether it exists or not. */
void
ha_delete_to_batch(struct nl_batch *b)
{
	ha_table(b, NFT_MSG_NEWTABLE, NLM_F_CREATE, "table inet "
	    NFTR_HA_TABLE " (ensure)");
	ha_table(b, NFT_MSG_DELTABLE, 0, "table inet " NFTR_HA_TABLE
	    " (delete)");
}

int
nftr_ha_remove(struct nftr_ctx *ctx)
{
	struct nl_batch *b = batch_new(ctx, false);
	int r;

	ha_delete_to_batch(b);
	r = batch_run(b, true);
	batch_free(b);
	return r;
}
