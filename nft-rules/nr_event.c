/*
 * nr_event.c -- one nf_tables notification read as plain values: who made
 * the change (the sender's netlink portid), to what kind of object, in
 * which table.  A pure function over the message's bytes (fuzzed:
 * fuzz/fuzz_nftevent.c); anything it cannot read whole is refused.
 */
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include <libmnl/libmnl.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "nftrules.h"

/* Linux 6.3's destroy commands (a delete that does not fail when the
 * object is missing); older headers lack them. */
enum {
	NR_MSG_DESTROYTABLE = 26, NR_MSG_DESTROYCHAIN, NR_MSG_DESTROYRULE,
	NR_MSG_DESTROYSET, NR_MSG_DESTROYSETELEM, NR_MSG_DESTROYOBJ,
	NR_MSG_DESTROYFLOWTABLE,
};

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
	{ NR_MSG_DESTROYTABLE, "table", 0, true },
	{ NR_MSG_DESTROYCHAIN, "chain", NFTA_CHAIN_NAME, true },
	{ NR_MSG_DESTROYRULE, "rule", NFTA_RULE_CHAIN, true },
	{ NR_MSG_DESTROYSET, "set", NFTA_SET_NAME, true },
	{ NR_MSG_DESTROYSETELEM, "element", NFTA_SET_ELEM_LIST_SET, true },
	{ NR_MSG_DESTROYOBJ, "object", NFTA_OBJ_NAME, true },
	{ NR_MSG_DESTROYFLOWTABLE, "flowtable", NFTA_FLOWTABLE_NAME, true },
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
	/* libmnl walks attributes up to the aligned end: a length that is
	 * not aligned (never the kernel's) would let it read past buf. */
	if (len < sizeof(*nlh) || nlh->nlmsg_len < NLMSG_HDRLEN +
	    sizeof(*nfg) || nlh->nlmsg_len > len ||
	    MNL_ALIGN(nlh->nlmsg_len) != nlh->nlmsg_len ||
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
