/*
 * parent/policy.c -- the parent's privileged network work: apply the policy
 * through nft-rules' library, open allowlist addresses for dnsd, read the
 * refusal counters, and cut conntrack entries that a reload forbids.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/object.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admit.h"
#include "gw.h"
#include "commit.h"
#include "dnsd.h"
#include "policy.h"
#include "network.h"
#include "egress.h"
#include "ha.h"
#include "json.h"
#include "log.h"
#include "nftrules.h"
#include "ctflows.h"
#include "refusals.h"

static int policy_update(struct gw *, struct nftr_ruleset *);

int
policy_apply(struct gw *gw, const struct moat_config *cfg, char *err,
    size_t errlen)
{
	struct nftr_opts opts = { .mode = NFTR_MODE_GATEWAY,
	    .incremental = true };
	struct nftr_ruleset *rs;
	int rc;

	if (gw->nft == NULL && (gw->nft = nftr_ctx_new()) == NULL) {
		snprintf(err, errlen, "cannot open netlink to nf_tables");
		return -1;
	}
	nftr_opts_users(&opts);
	if ((rs = nftr_build(cfg, &opts, err, errlen)) == NULL)
		return -1;
	/* Fail closed: refuse to run on a kernel that lacks a feature the
	 * policy needs, rather than run with part of it. */
	if (!gw->probed && nftr_probe(gw->nft, rs, &gw->features) == -1) {
		snprintf(err, errlen, "kernel lacks a feature the policy needs: "
		    "%s", nftr_error(gw->nft));
		nftr_ruleset_free(rs);
		return -1;
	}
	gw->probed = true;
	egress_before_apply(gw, gw->cfg);
	rc = policy_update(gw, rs);
	if (rc == -1)
		snprintf(err, errlen, "%s", nftr_error(gw->nft));
	if (rc == 0) {
		policy_refusals(cfg);
		egress_after_apply(gw, cfg);
	}
	return rc;
}

/* The same apply a reload makes, but whole: the kernel's tables may
 * differ from gw->applied in ways no delta from it would mend. */
int
policy_reapply(struct gw *gw, char *err, size_t errlen)
{
	int rc;

	gw->policy_full = true;
	rc = policy_apply(gw, gw->cfg, err, errlen);
	gw->policy_full = false;
	return rc;
}

/*
 * Send the kernel only what changed since the ruleset it holds, so that
 * one sandbox added or changed leaves every other sandbox's allowlist
 * set alone; nft-rules replaces everything where that is not safe.  The
 * ruleset applied is kept for the next reload.
 */
static int
policy_update(struct gw *gw, struct nftr_ruleset *rs)
{
	struct nftr_update_stats st;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (nftr_update(gw->nft, gw->policy_full ? NULL : gw->applied, rs,
	    &st) == -1) {
		nftr_ruleset_free(rs);
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("policy: %s, %zu message(s) in %.2f ms%s%s",
	    st.full ? "replaced" : st.nmsgs ? "updated" : "unchanged",
	    st.nmsgs, (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, st.full ? ": " : "",
	    st.full ? st.why : "");
	nftr_ruleset_free(gw->applied);
	gw->applied = rs;
	return 0;
}

/* Record a value gatewayd is about to change, for --teardown.  A later
 * change (a reload with another global_rate) records moat's own value;
 * the record is replayed backwards, so the first value found wins. */
static void
refusals_record(const struct moat_config *cfg, const char *name, long now,
    long want)
{
	if (now >= 0 && now != want)	/* -1: no IPv6 here */
		net_undo_sysctl(cfg, name, now);
}

/*
 * Refusals must reach a guest at once, whatever its rate: lift the
 * kernel's per-host ICMP limit (refusals.h).  A failure leaves the policy
 * in force and refusals slow, so it is a warning, shown by ctl status.
 * The values it replaces go to network.undo: `gatewayd --teardown` sets
 * them back.
 */
void
policy_refusals(const struct moat_config *cfg)
{
	struct refusal_sysctls now, want;
	char err[256];

	if (cfg->gw.fast_refusals && refusals_read(&now, err, sizeof(err)) == 0) {
		refusals_want(&cfg->gw, &want);
		refusals_record(cfg, "net.ipv4.icmp_ratelimit",
		    now.v4_ratelimit, want.v4_ratelimit);
		refusals_record(cfg, "net.ipv6.icmp.ratelimit",
		    now.v6_ratelimit, want.v6_ratelimit);
		refusals_record(cfg, "net.ipv4.icmp_msgs_per_sec",
		    now.msgs_per_sec, want.msgs_per_sec);
		refusals_record(cfg, "net.ipv4.icmp_msgs_burst",
		    now.msgs_burst, want.msgs_burst);
	}
	if (refusals_apply(&cfg->gw, err, sizeof(err)) == -1)
		log_warnx("refusals stay rate-limited by the kernel: %s", err);
}

/* One line for ctl status: are refusals immediate right now, and why not. */
bool
policy_refusals_state(const struct moat_config *cfg, char *buf, size_t len)
{
	struct refusal_sysctls now;
	char why[200];

	if (refusals_read(&now, why, sizeof(why)) == -1) {
		snprintf(buf, len, "%s", why);
		return false;
	}
	if (refusals_fast(&cfg->gw, &now, why, sizeof(why))) {
		snprintf(buf, len, "immediate (per-host ICMP limit off; "
		    "global cap %ld/s, burst %ld)", now.msgs_per_sec,
		    now.msgs_burst);
		return true;
	}
	snprintf(buf, len, "RATE-LIMITED: %s%s", why, cfg->gw.fast_refusals ?
	    "" : " (refusals.fast = false)");
	return false;
}

/*
 * A sandbox still in allowlist mode whose allow list lost a name: empty
 * its set, or the addresses of the name taken away would stay open until
 * their timeouts ran out (its flows are cut too, policy_cut_flows).  The
 * next answer of each name still allowed puts its addresses back.  Sets
 * that keep their elements are those admit_set_kept says.
 */
static void
flush_if_narrowed(const struct moat_sandbox *o, const struct moat_sandbox *n,
    void *arg)
{
	struct gw *gw = arg;

	if (n == NULL || o->egress != EGRESS_ALLOWLIST ||
	    n->egress != EGRESS_ALLOWLIST || admit_set_kept(o, n))
		return;
	policy_flush_sandbox(gw, n->name);
}

/* The other box of a pair empties its sets too (harepl.h): what a grant
 * opened there closes with it. */
void
policy_flush_sandbox(struct gw *gw, const char *sandbox)
{
	struct ipc_ha_flush m;

	policy_dns_freeze(gw, sandbox);
	if (nftr_set_flush(gw->nft, sandbox) == -1)
		log_warnx("allowlist %s: narrowed, but its set could not be "
		    "emptied: %s", sandbox, nftr_error(gw->nft));
	else
		log_info("allowlist %s: narrowed; its set emptied", sandbox);
	memset(&m, 0, sizeof(m));
	snprintf(m.sandbox, sizeof(m.sandbox), "%s", sandbox);
	if (!policy_of(gw)->quiet)
		harepl_forward(gw, IPC_HA_FLUSH, &m, sizeof(m));
}

/* The master emptied sandbox's sets, or sends them whole next: empty
 * ours, and forget what was promised for them (their elements, if any
 * are still owed, come again).  Only an allowlist sandbox of this box's
 * own configuration; nothing is sent on.  0, or -1 with why. */
int
policy_flush_peer(struct gw *gw, const char *sandbox, const char **why)
{
	const struct moat_sandbox *sb = config_sandbox_by_name(gw->cfg,
	    sandbox), *f = gw->file != NULL ? config_sandbox_by_name(gw->file,
	    sandbox) : NULL;

	/* Quarantined here (its file says allowlist, egress "none" is in
	 * force): it has nothing to empty, and its elements are refused. */
	if (sb != NULL && sb->egress == EGRESS_NONE && f != NULL &&
	    f->egress == EGRESS_ALLOWLIST)
		return 0;
	if (sb == NULL || sb->egress != EGRESS_ALLOWLIST) {
		*why = "not an allowlist sandbox here";
		return -1;
	}
	if (nftr_set_flush(gw->nft, sandbox) == -1) {
		log_warnx("allowlist %s: the other box emptied it, but its set "
		    "could not be emptied: %s", sandbox, nftr_error(gw->nft));
		*why = "could not be emptied";
		return -1;
	}
	if (policy_of(gw)->promises != NULL)
		promises_forget(policy_of(gw)->promises, sandbox);
	return 0;
}

void
policy_flush_narrowed(struct gw *gw, const struct moat_config *old,
    const struct moat_config *new)
{
	admit_pair_sandboxes(old, new, flush_if_narrowed, gw);
}

static int
frozencmp(const void *a, const void *b)
{
	return strcmp(((const struct gw_dns_frozen *)a)->sandbox,
	    ((const struct gw_dns_frozen *)b)->sandbox);
}

static struct gw_dns_frozen *
frozen_find(const struct gw *gw, const char *sandbox)
{
	struct gw_dns_frozen key = { (char *)sandbox, 0 };

	if (policy_of(gw)->ndns_frozen == 0)
		return NULL;
	return bsearch(&key, policy_of(gw)->dns_frozen, policy_of(gw)->ndns_frozen,
	    sizeof(*policy_of(gw)->dns_frozen), frozencmp);
}

/* Every gen sent so far carried the list before this narrowing. */
void
policy_dns_freeze(struct gw *gw, const char *sandbox)
{
	struct gw_dns_frozen *f;

	if ((f = frozen_find(gw, sandbox)) != NULL) {
		f->gen = dnsd_of(gw)->dns_gen;
		return;
	}
	policy_of(gw)->dns_frozen = xreallocarray(policy_of(gw)->dns_frozen, policy_of(gw)->ndns_frozen + 1,
	    sizeof(*policy_of(gw)->dns_frozen));
	policy_of(gw)->dns_frozen[policy_of(gw)->ndns_frozen++] = (struct gw_dns_frozen){
	    xstrdup(sandbox), dnsd_of(gw)->dns_gen };
	qsort(policy_of(gw)->dns_frozen, policy_of(gw)->ndns_frozen, sizeof(*policy_of(gw)->dns_frozen),
	    frozencmp);
}

void
policy_dns_thaw(struct gw *gw)
{
	size_t i;

	for (i = 0; i < policy_of(gw)->ndns_frozen; i++)
		free(policy_of(gw)->dns_frozen[i].sandbox);
	free(policy_of(gw)->dns_frozen);
	policy_of(gw)->dns_frozen = NULL;
	policy_of(gw)->ndns_frozen = 0;
}

/* gen counts up from 0 with each dnsd (dnsd_reconfigure, dnsd_allow):
 * judged by a list sent no later than the narrowing, so by the old one. */
bool
policy_dns_frozen(const struct gw *gw, const char *sandbox, uint32_t gen)
{
	const struct gw_dns_frozen *f = frozen_find(gw, sandbox);

	return f != NULL && gen <= f->gen;
}

struct seed {
	struct gw	*gw;
	const char	*sandbox;
	uint64_t	 now_ms;	/* before the dump: never overestimates */
};

static void
seed_one(const struct admit_elem *e, uint64_t left_ms, void *arg)
{
	struct seed *sd = arg;
	uint32_t out = left_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)left_ms;

	promises_commit(policy_of(sd->gw)->promises, sd->sandbox, &e->addr, &e->svc, 1,
	    &out, sd->now_ms);
}

/*
 * At start: the elements the kernel's allowlist sets still hold were
 * promised by an earlier gatewayd (the policy outlives it, and the first
 * apply carries them over).  Take those promises over, so that a restart
 * of gatewayd cannot cut them short either.
 */
uint64_t
gw_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
policy_promises_seed(struct gw *gw)
{
	struct seed sd = { gw, NULL, 0 };
	size_t i;
	int n, total = 0;

	if (policy_of(gw)->promises == NULL)
		policy_of(gw)->promises = promises_new(PROMISE_MAX, PROMISE_PER_SANDBOX);
	for (i = 0; i < gw->cfg->nsandboxes; i++) {
		if (gw->cfg->sandboxes[i].egress != EGRESS_ALLOWLIST)
			continue;
		sd.sandbox = gw->cfg->sandboxes[i].name;
		sd.now_ms = gw_mono_ms();
		if ((n = nftr_set_elems(gw->nft, sd.sandbox, seed_one, &sd)) > 0)
			total += n;
		else if (n == -1)
			log_warnx("allowlist %s: its elements could not be read: "
			    "%s", sd.sandbox, nftr_error(gw->nft));
	}
	if (total > 0)
		log_info("allowlists: %d element(s) already in the sets, "
		    "promised until they expire", total);
}

/* dnsd asks to open addresses for a sandbox: the same admission check
 * dnsd's own parent applies (admit_set_add: only that sandbox's own set,
 * only in allowlist mode, only public IPv4, the timeout capped).  No
 * timeout sent ends before one this parent already promised for the same
 * address (promise.h), whatever dnsd remembers. */
static int
set_add(struct gw *gw, const struct ipc_set_add *m, bool frozen)
{
	struct nftr_allow_stats st = { 0, 0 };
	int rc;

	if (policy_of(gw)->promises == NULL)
		policy_of(gw)->promises = promises_new(PROMISE_MAX, PROMISE_PER_SANDBOX);
	rc = nftr_allow_add(gw->nft, policy_of(gw)->promises, gw->cfg, m->sandbox,
	    m->addr, m->naddr, m->plain, m->ports, m->nports, m->timeout_ms,
	    frozen, gw_mono_ms(), &st);
	policy_of(gw)->set_adds += st.added;
	policy_of(gw)->set_refused += st.refused;
	return rc;
}

int
policy_set_add(struct gw *gw, const struct ipc_set_add *m)
{
	return set_add(gw, m, policy_dns_frozen(gw, m->sandbox, m->gen));
}

/* The other box's element: its gen counts that box's resolver's lists,
 * not ours, so our resolver's freeze does not judge it (a whole state's
 * elements carry gen 0).  Its order against that box's narrowings is
 * kept by the link: a flush there comes before anything added after it. */
int
policy_set_add_peer(struct gw *gw, const struct ipc_set_add *m)
{
	return set_add(gw, m, false);
}

void
policy_set_add_request(struct gw *gw, struct gw_proc *p, uint32_t id,
    const struct ipc_set_add *m)
{
	struct ipc_set_ack ack;

	ack.status = policy_set_add(gw, m);
	if (ipc_send(p->ipc, IPC_SET_ACK, id, &ack, sizeof(ack)) == -1)
		log_warn("%s: set-ack", p->name);
	/* Acknowledged: the other box of a pair gets it too. */
	if (ack.status > 0)
		harepl_forward(gw, IPC_SET_ADD, m, sizeof(*m) +
		    m->naddr * sizeof(m->addr[0]));
}

/* --- counters ------------------------------------------------------------ */

struct counters {
	char	*text;
	size_t	 len;
	FILE	*fp;
	const char *family;
	bool	 json;
	size_t	 n;		/* counters written so far */
	policy_counter_fn *each;	/* or, instead of text, this */
	void	*arg;
};

/* A counter's description: its name is reused across families (inet and
 * bridge both have "guest", "spoof", "ipv6"), so match on both. */
static const char *
counter_what(const char *family, const char *name)
{
	const struct nftr_reason *r;
	size_t i, n;

	r = nftr_reasons(&n);
	for (i = 0; i < n; i++)
		if (strcmp(r[i].family, family) == 0 &&
		    strcmp(r[i].name, name) == 0)
			return r[i].what;
	return "";
}

static void
counter_print(struct counters *c, const char *name, uint64_t pkts,
    uint64_t bytes)
{
	const char *what = counter_what(c->family, name);
	char *en, *ew;

	if (!c->json) {
		fprintf(c->fp, "%-6s %-10s %10llu packets %12llu bytes  %s\n",
		    c->family, name, (unsigned long long)pkts,
		    (unsigned long long)bytes, what);
		return;
	}
	en = json_escape(name);
	ew = json_escape(what);
	fprintf(c->fp, "%s{\"family\":\"%s\",\"name\":\"%s\",\"packets\":%llu,"
	    "\"bytes\":%llu,\"description\":\"%s\"}", c->n ? "," : "",
	    c->family, en, (unsigned long long)pkts,
	    (unsigned long long)bytes, ew);
	free(en);
	free(ew);
}

static int
obj_cb(const struct nlmsghdr *nlh, void *data)
{
	struct counters *c = data;
	struct nftnl_obj *o = nftnl_obj_alloc();

	if (o == NULL)
		return MNL_CB_ERROR;
	if (nftnl_obj_nlmsg_parse(nlh, o) == 0 &&
	    nftnl_obj_get_u32(o, NFTNL_OBJ_TYPE) == NFT_OBJECT_COUNTER &&
	    strcmp(nftnl_obj_get_str(o, NFTNL_OBJ_TABLE), NFTR_TABLE) == 0) {
		if (c->each != NULL)
			c->each(c->arg, c->family,
			    nftnl_obj_get_str(o, NFTNL_OBJ_NAME),
			    counter_what(c->family,
			    nftnl_obj_get_str(o, NFTNL_OBJ_NAME)),
			    nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS));
		else
			counter_print(c, nftnl_obj_get_str(o, NFTNL_OBJ_NAME),
			    nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_PKTS),
			    nftnl_obj_get_u64(o, NFTNL_OBJ_CTR_BYTES));
		c->n++;
	}
	nftnl_obj_free(o);
	return MNL_CB_OK;
}

static int
dump_counters(struct mnl_socket *nl, uint16_t family, struct counters *c)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct nftnl_obj *o;

	c->family = family == NFPROTO_BRIDGE ? "bridge" : "inet";
	uint32_t seq = (uint32_t)time(NULL), portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int rc;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETOBJ, family, NLM_F_DUMP,
	    seq);
	if ((o = nftnl_obj_alloc()) == NULL)
		return -1;
	nftnl_obj_set_str(o, NFTNL_OBJ_TABLE, NFTR_TABLE);
	nftnl_obj_set_u32(o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
	nftnl_obj_nlmsg_build_payload(nlh, o);
	nftnl_obj_free(o);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		rc = mnl_cb_run(buf, (size_t)n, seq, portid, obj_cb, c);
		if (rc <= MNL_CB_STOP)
			return rc == MNL_CB_STOP ? 0 : (errno == ENOENT ? 0 : -1);
	}
	return -1;
}

static int
counters_dump(struct counters *c)
{
	struct mnl_socket *nl;
	int rc = -1;

	if ((nl = mnl_socket_open(NETLINK_NETFILTER)) != NULL &&
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == 0)
		rc = dump_counters(nl, NFPROTO_INET, c) == 0 &&
		    dump_counters(nl, NFPROTO_BRIDGE, c) == 0 ? 0 : -1;
	if (nl != NULL)
		mnl_socket_close(nl);
	return rc;
}

/* Each refusal counter of the policy's tables, for the metrics. */
int
policy_counters_each(struct gw *gw, policy_counter_fn *each, void *arg)
{
	struct counters c = { NULL, 0, NULL, NULL, false, 0, each, arg };

	return counters_dump(&c);
}

int
policy_counters(struct gw *gw, bool json, char **out)
{
	struct counters c = { NULL, 0, NULL, NULL, json, 0, NULL, NULL };
	int rc;

	if ((c.fp = open_memstream(&c.text, &c.len)) == NULL)
		return -1;
	rc = counters_dump(&c);
	fclose(c.fp);
	if (rc == -1) {
		free(c.text);
		return -1;
	}
	*out = c.text;
	return 0;
}

/* --- cutting flows on reload --------------------------------------------- */

static int
egress_rank(enum moat_egress e)
{
	return e == EGRESS_OPEN ? 2 : e == EGRESS_ALLOWLIST ? 1 : 0;
}

/* The new config lets this old sandbox do less than before (or it is
 * gone, or moved): its existing flows must be judged again. */
static bool
narrowed(const struct moat_sandbox *o, const struct moat_config *new)
{
	const struct moat_sandbox *n = config_sandbox_by_name(new, o->name);
	size_t i;

	if (n == NULL || addr_cmp(&n->address, &o->address) != 0 ||
	    memcmp(n->mac, o->mac, 6) != 0)
		return true;
	if (egress_rank(n->egress) < egress_rank(o->egress))
		return true;
	if (n->egress == EGRESS_ALLOWLIST && o->egress == EGRESS_ALLOWLIST)
		for (i = 0; i < o->allow.n; i++)
			if (!config_strlist_has(&n->allow, o->allow.v[i]))
				return true;
	return false;
}

struct ct_cut {
	struct mnl_socket	*nl;
	const struct moat_config *old, *new;
	const char *const	*narrowed;	/* narrowed in place (grants) */
	size_t			 nnarrowed;
	struct moat_addr	*only;		/* their addresses, both families */
	size_t			 nonly;
	char			*dels;		/* copies of refused tuples */
	uint8_t			*fams;		/* the family of each */
	size_t			 dlen, nd;
};

/* The original direction of a flow: source, destination, protocol and
 * destination port (0 where the protocol has none). */
struct ct_flow {
	struct moat_addr	 src, dst;
	int			 proto;
	uint16_t		 dport;
};

static void
ct_tuple_ip(const struct nlattr *ip, struct ct_flow *f)
{
	const struct nlattr *b;

	mnl_attr_for_each_nested(b, ip) {
		struct moat_addr *a = NULL;

		uint16_t t = mnl_attr_get_type(b);
		bool v6 = t == CTA_IP_V6_SRC || t == CTA_IP_V6_DST;

		if (t == CTA_IP_V4_SRC || t == CTA_IP_V6_SRC)
			a = &f->src;
		else if (t == CTA_IP_V4_DST || t == CTA_IP_V6_DST)
			a = &f->dst;
		if (a == NULL || mnl_attr_get_payload_len(b) != (v6 ? 16 : 4))
			continue;
		a->family = v6 ? AF_INET6 : AF_INET;
		memcpy(a->a, mnl_attr_get_payload(b), v6 ? 16 : 4);
	}
}

static int
ct_tuple(const struct nlattr *tuple, struct ct_flow *f)
{
	const struct nlattr *a, *b;
	uint16_t port;

	memset(f, 0, sizeof(*f));
	mnl_attr_for_each_nested(a, tuple) {
		if (mnl_attr_get_type(a) == CTA_TUPLE_IP)
			ct_tuple_ip(a, f);
		if (mnl_attr_get_type(a) != CTA_TUPLE_PROTO)
			continue;
		mnl_attr_for_each_nested(b, a) {
			if (mnl_attr_get_type(b) == CTA_PROTO_NUM &&
			    mnl_attr_get_payload_len(b) >= 1)
				f->proto = *(const uint8_t *)
				    mnl_attr_get_payload(b);
			if (mnl_attr_get_type(b) == CTA_PROTO_DST_PORT &&
			    mnl_attr_get_payload_len(b) == 2) {
				memcpy(&port, mnl_attr_get_payload(b), 2);
				f->dport = ntohs(port);
			}
		}
	}
	return (f->src.family == AF_INET || f->src.family == AF_INET6) &&
	    f->dst.family == f->src.family ? 0 : -1;
}

/* A sandbox whose list a grant narrowed in place (old is new then). */
static bool
narrowed_in_place(const struct ct_cut *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->nnarrowed; i++)
		if (strcmp(c->narrowed[i], name) == 0)
			return true;
	return false;
}

/* Would the new policy let this guest's flow start now?  The same
 * admission function the proxy and the compiler use (admit_addr); the
 * set of an allowlist sandbox is runtime state, so a sandbox whose list
 * shrank loses all its flows (narrowed), by a reload or by a grant. */
static bool
flow_refused(const struct ct_cut *c, const struct ct_flow *f)
{
	const struct moat_sandbox *o = config_sandbox_by_addr(c->old, &f->src);
	const struct moat_sandbox *n;
	const struct moat_gateway *gw = &c->new->gw;

	if (o == NULL && (n = config_sandbox_by_addr(c->new, &f->src)) == NULL)
		return false;		/* not a guest's flow */
	if (o != NULL && (narrowed(o, c->new) || narrowed_in_place(c, o->name)))
		return true;
	n = config_sandbox_by_addr(c->new, &f->src);
	if (n == NULL)
		return true;
	if (addr_cmp(&f->dst, &gw->address) == 0 || (gw->ipv6 &&
	    addr_cmp(&f->dst, &gw->ipv6_address) == 0))
		return !(f->dport == 53 && (f->proto == IPPROTO_UDP ||
		    f->proto == IPPROTO_TCP)) && !(f->proto == IPPROTO_TCP &&
		    f->dport == gw->proxy_port);
	return admit_addr(c->new, n, NULL, &f->dst, f->proto, f->dport) !=
	    ADMIT_OK;
}

/* Grants narrowed some sandboxes and nothing else changed: only their
 * flows can be refused now, and only theirs are judged, so that a grant's
 * end costs what that sandbox's flows cost, not every guest's. */
static bool
from_only(const struct ct_cut *c, const struct ct_flow *f)
{
	size_t i;

	if (c->only == NULL)
		return true;
	for (i = 0; i < c->nonly; i++)
		if (addr_cmp(&c->only[i], &f->src) == 0)
			return true;
	return false;
}

/* One entry: keep a copy of its tuple if the new policy refuses it. */
static void
ct_judge(const struct nlattr *a, uint8_t family, void *data)
{
	struct ct_cut *c = data;
	struct ct_flow f;
	size_t al;

	(void)family;
	if (ct_tuple(a, &f) == -1 || !from_only(c, &f) ||
	    !flow_refused(c, &f))
		return;
	al = MNL_ALIGN(a->nla_len);
	c->dels = xreallocarray(c->dels, c->dlen + al, 1);
	memset(c->dels + c->dlen, 0, al);
	memcpy(c->dels + c->dlen, a, a->nla_len);
	c->dlen += al;
	c->fams = xreallocarray(c->fams, c->nd + 1, 1);
	c->fams[c->nd++] = (uint8_t)f.src.family;
}

static int
ct_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nfgenmsg *nfg = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;

	ctflows_seen(nlh);
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg)) {
		if (mnl_attr_get_type(a) != CTA_TUPLE_ORIG)
			continue;
		ct_judge(a, nfg->nfgen_family, data);
	}
	return MNL_CB_OK;
}

static uint32_t ct_seq;

/* family: of the tuple a deletion names; AF_UNSPEC dumps both. */
static struct nlmsghdr *
ct_hdr(char *buf, uint16_t type, uint16_t flags, uint32_t seq, uint8_t family)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nfgenmsg *nfg;

	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = family;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = 0;
	return nlh;
}

/* Delete each refused flow by its tuple, one acknowledged request at a
 * time; the number deleted, or -1 when the socket failed. */
static int
ct_delete_all(struct ct_cut *c)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	const struct nlattr *a;
	size_t off = 0;
	int deleted = 0;
	size_t k = 0;
	ssize_t n;

	while (off < c->dlen) {
		a = (const struct nlattr *)(c->dels + off);
		off += MNL_ALIGN(a->nla_len);
		nlh = ct_hdr(buf, IPCTNL_MSG_CT_DELETE, NLM_F_ACK, ++ct_seq,
		    c->fams[k++]);
		memcpy(mnl_nlmsg_get_payload_tail(nlh), a, a->nla_len);
		nlh->nlmsg_len += MNL_ALIGN(a->nla_len);
		if (mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len) < 0 ||
		    (n = mnl_socket_recvfrom(c->nl, buf, sizeof(buf))) <= 0)
			return -1;
		if (mnl_cb_run(buf, (size_t)n, ct_seq, 0, NULL, NULL) >= 0) {
			deleted++;
			ctflows_gone(a);
		} else if (errno == ENOENT)
			ctflows_gone(a);	/* gone already */
	}
	return deleted;
}

/* Dump both families' conntrack tables, judging every entry (and giving
 * it to the list of flows to start it again); 0 or -1. */
static int
ct_dump(struct ct_cut *c)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	ssize_t n;
	int r = -1;

	log_info("conntrack: the whole table walked (the list of flows is "
	    "not complete)");
	ctflows_walk_begin();
	/* Both families: a guest's IPv6 flows are judged as its IPv4. */
	nlh = ct_hdr(buf, IPCTNL_MSG_CT_GET, NLM_F_DUMP, ++ct_seq, AF_UNSPEC);
	if (mnl_socket_sendto(c->nl, nlh, nlh->nlmsg_len) < 0) {
		ctflows_walked(false);
		return -1;
	}
	while ((n = mnl_socket_recvfrom(c->nl, buf, sizeof(buf))) > 0)
		if ((r = mnl_cb_run(buf, (size_t)n, ct_seq,
		    mnl_socket_get_portid(c->nl), ct_cb, c)) <= MNL_CB_STOP)
			break;
	ctflows_walked(n > 0 && r == MNL_CB_STOP);
	return n > 0 && r == MNL_CB_STOP ? 0 : -1;
}

/*
 * Judge every conntrack entry of both families and delete each flow c
 * refuses; the number deleted, or -1.  The entries are those the
 * parent's list holds (parent_ctflows.h) when it holds them all, else a
 * dump of the kernel's whole table, which fills the list again.
 *
 * The socket stays open from one commit to the next: closing a netfilter
 * netlink socket cost 3 to 17 ms on a loaded 2-core machine, as much as
 * the rest of a narrowing.  One that failed is closed, so that no reply
 * left in it meets the next request.
 */
static int
cut_flows(struct ct_cut *c)
{
	static struct mnl_socket *nl;
	int rc = -1, dumped = 0;

	if (nl == NULL && ((nl = mnl_socket_open2(NETLINK_NETFILTER,
	    SOCK_CLOEXEC)) == NULL || mnl_socket_bind(nl, 0,
	    MNL_SOCKET_AUTOPID) < 0)) {
		if (nl != NULL)
			mnl_socket_close(nl);
		nl = NULL;
		goto out;
	}
	c->nl = nl;
	if (ctflows_ready())
		ctflows_each(ct_judge, c);
	else
		dumped = ct_dump(c);
	/* What a broken dump judged is cut all the same. */
	rc = ct_delete_all(c);
	if (dumped == -1)
		rc = -1;
out:
	if (rc == -1 && nl != NULL) {
		mnl_socket_close(nl);
		nl = NULL;
	}
	free(c->dels);
	free(c->fams);
	return rc;
}

struct ct_live {
	struct moat_addr	*addrs;		/* two a sandbox: IPv4, IPv6 */
	size_t			 n;		/* sandboxes */
	uint32_t		*counts;
};

static void
ct_live_one(const struct nlattr *a, uint8_t family, void *data)
{
	struct ct_live *l = data;
	struct ct_flow f;
	size_t i;

	(void)family;
	if (ct_tuple(a, &f) == -1)
		return;
	for (i = 0; i < 2 * l->n; i++)
		if (l->addrs[i].family != 0 &&
		    (addr_cmp(&l->addrs[i], &f.src) == 0 ||
		    addr_cmp(&l->addrs[i], &f.dst) == 0))
			l->counts[i / 2]++;
}

/*
 * Each sandbox's live flows (ctflows.h) in counts (cfg->nsandboxes of
 * them): those whose original source or destination is one of its
 * addresses, proxied (to the gateway's proxy) or direct alike; -1 when
 * the list of flows is not complete (events lost or off).
 */
int
policy_live_flows(const struct moat_config *cfg, uint32_t *counts)
{
	struct ct_live l = { .n = cfg->nsandboxes, .counts = counts };
	size_t i;

	memset(counts, 0, cfg->nsandboxes * sizeof(*counts));
	if (!ctflows_ready())
		return -1;
	l.addrs = xcalloc(2 * l.n + 1, sizeof(*l.addrs));
	for (i = 0; i < l.n; i++) {
		l.addrs[2 * i] = cfg->sandboxes[i].address;
		if (!config_sandbox_addr6(cfg, &cfg->sandboxes[i],
		    &l.addrs[2 * i + 1]))
			memset(&l.addrs[2 * i + 1], 0, sizeof(l.addrs[0]));
	}
	ctflows_each_live(ct_live_one, &l);
	free(l.addrs);
	return 0;
}

/* Cut every flow the new policy refuses: a removed exception, a shrunk
 * treat_as_public, a narrowed sandbox.  Each conntrack entry is judged on
 * its own, so there is no cap on how many sources a reload may touch. */
int
policy_cut_flows(const struct moat_config *old, const struct moat_config *new)
{
	struct ct_cut c = { .old = old, .new = new };

	return cut_flows(&c);
}

/* The same cut after grants narrowed these sandboxes' lists in cfg in
 * place (an expiry, an unallow): the reload's judgement with those
 * sandboxes taken as narrowed. */
int
policy_cut_narrowed(const struct moat_config *cfg, const char *const *names,
    size_t n)
{
	struct ct_cut c = { .old = cfg, .new = cfg, .narrowed = names,
	    .nnarrowed = n };
	const struct moat_sandbox *sb;
	size_t i;
	int rc;

	c.only = xcalloc(2 * n + 1, sizeof(*c.only));
	for (i = 0; i < n; i++) {
		if ((sb = config_sandbox_by_name(cfg, names[i])) == NULL)
			continue;
		c.only[c.nonly++] = sb->address;
		if (config_sandbox_addr6(cfg, sb, &c.only[c.nonly]))
			c.nonly++;
	}
	rc = cut_flows(&c);
	free(c.only);
	return rc;
}

/* The sets of sandboxes whose allow list lost a name are emptied; what
 * was promised to sets a change deleted or emptied is void. */
static void
policy_on_commit(struct gw *gw, const struct gw_commit *c)
{
	policy_flush_narrowed(gw, c->old, c->new);
	if (policy_of(gw)->promises != NULL)
		promises_reload(policy_of(gw)->promises, c->old, c->new);
}

/* The conntrack events are read from the loop as they arrive (a commit
 * takes what waits too, first); this timer makes the listening socket,
 * and after a loss walks the table again: every second until the list
 * is trusted, then every 10 s, only to notice. */
static uint64_t
policy_due(const struct gw *gw)
{
	if (policy_of(gw)->ctflows_next == 0)
		policy_of(gw)->ctflows_next = gw_mono_ms();
	return policy_of(gw)->ctflows_next;
}

static void
policy_timer(struct gw *gw)
{
	ctflows_tick();
	policy_of(gw)->ctflows_next = gw_mono_ms() + (ctflows_on_loop() &&
	    ctflows_ready() ? 10000 : 1000);
}

static void
policy_stop(struct gw *gw)
{
	(void)gw;
	ctflows_free();
}

/* What the state holds: the narrowings dnsd has not acknowledged. */
static void
policy_state_free(void *state)
{
	struct gw_policy *st = state;
	size_t i;

	for (i = 0; i < st->ndns_frozen; i++)
		free(st->dns_frozen[i].sandbox);
	free(st->dns_frozen);
	st->dns_frozen = NULL;
	st->ndns_frozen = 0;
}

const struct gw_module policy_module = {
	.free = policy_state_free,
	.on_commit = policy_on_commit,
	.due = policy_due,
	.timer = policy_timer,
	.stop = policy_stop,
	.name = "policy",
	.size = sizeof(struct gw_policy),
};
