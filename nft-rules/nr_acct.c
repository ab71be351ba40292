/*
 * nr_acct.c -- per-sandbox traffic, read back from the counters of the
 * accounting sets' elements (nr_policy.c, accounting()).  One dump per
 * set, whatever the number of sandboxes; addresses are matched to
 * sandboxes through a sorted index, so 5,000 sandboxes cost 20,000
 * binary searches, not a scan each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <libmnl/libmnl.h>
#include <libnftnl/expr.h>
#include <libnftnl/set.h>

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"
#include "nr_nl.h"

struct acct_idx {
	uint8_t		 addr[16];	/* network order: sorts as numbers */
	size_t		 i;		/* in cfg->sandboxes */
};

struct acct_read {
	const struct acct_idx *idx;
	size_t		 n;
	struct nftr_acct *out;
	size_t		 which;		/* index in sets[] */
	uint32_t	 alen;		/* 4, or 16 for the acct6_ sets */
};

/* IPv4 then IPv6 (gateway.ipv6): a guest's two elements of the same
 * kind add up. */
static const char *const sets[] = {
	NFTR_ACCT_OUT, NFTR_ACCT_NEW_OUT, NFTR_ACCT_IN, NFTR_ACCT_NEW_IN,
};
static const char *const sets6[] = {
	NFTR_ACCT6_OUT, NFTR_ACCT6_NEW_OUT, NFTR_ACCT6_IN, NFTR_ACCT6_NEW_IN,
};

static int
idx_cmp(const void *a, const void *b)
{
	return memcmp(((const struct acct_idx *)a)->addr,
	    ((const struct acct_idx *)b)->addr, 16);
}

static void
charge(struct nftr_acct *a, size_t which, uint64_t pkts, uint64_t bytes)
{
	switch (which) {
	case 0:
		a->packets_out += pkts;
		a->bytes_out += bytes;
		break;
	case 1:
		a->conns_out += pkts;
		break;
	case 2:
		a->packets_in += pkts;
		a->bytes_in += bytes;
		break;
	default:
		a->conns_in += pkts;
		break;
	}
}

static int
ctr_of(struct nftnl_expr *e, void *arg)
{
	uint64_t *v = arg;

	if (strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "counter") == 0) {
		v[0] = nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_PACKETS);
		v[1] = nftnl_expr_get_u64(e, NFTNL_EXPR_CTR_BYTES);
	}
	return 0;
}

static int
elem_one(struct nftnl_set_elem *e, void *arg)
{
	struct acct_read *r = arg;
	struct acct_idx key, *hit;
	uint64_t v[2] = { 0, 0 };
	const void *k;
	uint32_t len = 0;

	k = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);
	if (k == NULL || len != r->alen)
		return 0;
	memset(key.addr, 0, sizeof(key.addr));
	memcpy(key.addr, k, len);
	if ((hit = bsearch(&key, r->idx, r->n, sizeof(key), idx_cmp)) == NULL)
		return 0;
	if (nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_EXPR))
		ctr_of((struct nftnl_expr *)nftnl_set_elem_get(e,
		    NFTNL_SET_ELEM_EXPR, NULL), v);
	else
		nftnl_set_elem_expr_foreach(e, ctr_of, v);
	charge(&r->out[hit->i], r->which, v[0], v[1]);
	return 0;
}

static int
elems_cb(const struct nlmsghdr *nlh, void *arg)
{
	return nftnl_set_elems_nlmsg_parse(nlh, arg) == -1 ?
	    MNL_CB_ERROR : MNL_CB_OK;
}

/* One set's elements; a set that does not exist (a policy from before
 * accounting) leaves the sandboxes at zero. */
static int
read_set(struct nftr_ctx *ctx, struct acct_read *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nftnl_set *s = nftnl_set_alloc();
	struct nlmsghdr *nlh;
	int rc = 0;

	if (s == NULL)
		fatalx("out of memory");
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NFTR_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, r->alen == 16 ?
	    sets6[r->which] : sets[r->which]);
	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM, NFPROTO_INET,
	    NLM_F_DUMP | NLM_F_ACK, ctx->seq++);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	if (nl_dump(ctx, nlh, elems_cb, s) == -1)
		rc = errno == ENOENT ? 0 : -1;
	else
		nftnl_set_elem_foreach(s, elem_one, r);
	nftnl_set_free(s);
	return rc;
}

/* The sandboxes' addresses of one family, sorted; how many. */
static size_t
acct_index(const struct moat_config *cfg, bool v6, struct acct_idx *idx)
{
	struct moat_addr a6;
	size_t i, n = 0;

	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_addr *a = &cfg->sandboxes[i].address;

		memset(idx[n].addr, 0, sizeof(idx[n].addr));
		if (v6) {
			if (!config_sandbox_addr6(cfg, &cfg->sandboxes[i], &a6))
				continue;
			memcpy(idx[n].addr, a6.a, 16);
		} else if (a->family == AF_INET)
			memcpy(idx[n].addr, a->a, 4);
		else
			continue;
		idx[n++].i = i;
	}
	qsort(idx, n, sizeof(*idx), idx_cmp);
	return n;
}

int
nftr_acct_read(struct nftr_ctx *ctx, const struct moat_config *cfg,
    struct nftr_acct *out)
{
	struct acct_idx *idx;
	struct acct_read r;
	size_t n, fam;
	int rc = 0;

	memset(out, 0, cfg->nsandboxes * sizeof(*out));
	if (cfg->nsandboxes == 0)
		return 0;
	idx = xcalloc(cfg->nsandboxes, sizeof(*idx));
	for (fam = 0; rc == 0 && fam < (cfg->gw.ipv6 ? 2u : 1u); fam++) {
		n = acct_index(cfg, fam == 1, idx);
		r = (struct acct_read){ idx, n, out, 0, fam == 1 ? 16 : 4 };
		for (r.which = 0; rc == 0 &&
		    r.which < sizeof(sets) / sizeof(sets[0]); r.which++)
			rc = read_set(ctx, &r);
	}
	free(idx);
	return rc;
}
