/*
 * query.c -- the life of one query once it is read: parse, who asks,
 * rate, special names, policy, the cache, forwarding on a miss; and for
 * an allowlist sandbox, the set update that must be acknowledged before
 * the guest sees the answer (resolver.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ev.h"
#include "json.h"
#include "log.h"
#include "resolver.h"
#include "tlist.h"

#define SETADD_MS	2000
#define SET_TIMEOUT_MIN	60	/* seconds: floor of a set element */
#define LOG_PER_SEC	20

static const uint8_t uad_name[] = "\023use-application-dns\003net";

struct pending {		/* an answer waiting for IPC_SET_ACK */
	struct tlink	 t;
	uint32_t	 id;
	struct client	 c;
	uint8_t		*wire;
	size_t		 len;
	uint64_t	 expires_ms;	/* its elements live at least until */
	uint64_t	 tmo;		/* the timeout asked for */
	uint32_t	 gen;		/* of the allow list that judged it */
	bool		 mirrored;	/* recorded in the mirror when acked */
	size_t		 naddr;
	struct moat_addr addr[DNSD_MAX_ADDRS];
};

static struct {
	uint32_t	 ipc_id;
	struct tlist	 pend;
	double		 log_tokens;
	uint64_t	 log_last;
} Q;

/* Lines about guests' queries are capped so a guest cannot flood the
 * log; what is suppressed is counted and reported with the stats. */
static int
log_budget(void)
{
	uint64_t now = ev_now();

	Q.log_tokens += (double)(now - Q.log_last) * LOG_PER_SEC / 1000.0;
	if (Q.log_tokens > LOG_PER_SEC)
		Q.log_tokens = LOG_PER_SEC;
	Q.log_last = now;
	if (Q.log_tokens < 1.0) {
		R.c.log_suppressed++;
		return 0;
	}
	Q.log_tokens -= 1.0;
	return 1;
}

static const char *
qtype_str(uint16_t t, char *buf, size_t len)
{
	char *s = ldns_rr_type2str(t);

	snprintf(buf, len, "%s", s ? s : "?");
	free(s);
	return buf;
}

/* --- set updates ----------------------------------------------------- */

/* The longest TTL the guest is told for an address of the answer. */
static uint32_t
answer_told_ttl(const struct answer *a, uint32_t age)
{
	uint32_t max = 0, t;
	size_t i;

	for (i = 0; i < ldns_rr_list_rr_count(a->an); i++) {
		const ldns_rr *rr = ldns_rr_list_rr(a->an, i);

		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_A &&
		    ldns_rr_get_type(rr) != LDNS_RR_TYPE_AAAA)
			continue;
		t = ldns_rr_ttl(rr);
		t = t > age ? t - age : 0;
		if (t > max)
			max = t;
	}
	return max;
}

/* The timeout of the answer's set elements. */
static uint32_t
answer_addr_ttl(const struct answer *a, uint32_t age)
{
	uint32_t max = answer_told_ttl(a, age);

	/* The element outlives every TTL the guest was told, so the guest
	 * asks again (and refreshes it) before it expires.  One second more:
	 * ages are whole seconds, so a later cache hit may be told up to a
	 * second more than the exact time left, and the element must still
	 * cover it. */
	if (max < SET_TIMEOUT_MIN)
		max = SET_TIMEOUT_MIN;
	max += 1;
	return max > DNSD_TTL_MAX ? DNSD_TTL_MAX : max;
}


/*
 * Are the answer's addresses already in the set for as long as the guest
 * will use them?  Then no round trip is needed.  Past half of the element's
 * timeout the answer goes through the parent again, which refreshes it
 * long before it can lapse under a guest that keeps asking.
 */
static uint64_t
setadd_until(const struct answer *a, uint32_t age)
{
	uint64_t told = (uint64_t)answer_told_ttl(a, age) * 1000;
	uint64_t half = (uint64_t)answer_addr_ttl(a, age) * 1000 / 2;

	return ev_now() + (told > half ? told : half);
}

static bool
setadd_covered(const struct client *c, const struct answer *a, uint32_t age)
{
	return mirror_covers(R.mirror, c->sandbox, a->addr, a->naddr,
	    setadd_until(a, age));
}

/* How long the answer's elements must live, in ms from now: for the TTL
 * told, and never less than earlier answers with the same addresses were
 * promised (an addition resets an existing element's timeout). */
static uint64_t
setadd_timeout(const struct client *c, const struct answer *a, uint32_t age)
{
	uint64_t now = ev_now(), t = (uint64_t)answer_addr_ttl(a, age) * 1000;
	uint64_t p = mirror_promised(R.mirror, c->sandbox, a->addr, a->naddr);

	return p > now + t ? p - now : t;
}

static int
setadd_send(const struct client *c, const struct moat_addr *addr, size_t n,
    uint64_t tmo, uint32_t id)
{
	static union {
		struct ipc_set_add m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;

	memset(&u.m, 0, sizeof(u.m));
	snprintf(u.m.sandbox, sizeof(u.m.sandbox), "%s", c->sandbox);
	u.m.timeout_ms = (uint32_t)tmo;
	u.m.naddr = (uint32_t)n;
	u.m.gen = R.gen;
	u.m.plain = !c->named || c->plain;
	if (c->named) {
		u.m.nports = c->nports;
		memcpy(u.m.ports, c->ports, c->nports * sizeof(c->ports[0]));
	}
	memcpy(u.m.addr, addr, n * sizeof(struct moat_addr));
	return ipc_send(R.ipcfd, IPC_SET_ADD, id, &u.m,
	    sizeof(u.m) + n * sizeof(struct moat_addr));
}

static void
pending_free(struct pending *p)
{
	tlist_del(&p->t);
	client_done(&p->c);
	free(p->wire);
	free(p);
}

/*
 * Concurrent answers with the same addresses share one addition: while a
 * request that makes them live long enough is in flight, the answer waits
 * for its confirmation (same id, nothing of its own to record) instead
 * of sending another, which would also keep the mirror from ever seeing
 * its last request confirmed under a steady stream of answers.
 */
static bool
setadd_join(struct client *c, const struct answer *a, uint32_t age,
    uint8_t *wire, size_t len)
{
	struct pending *p;
	uint32_t id = mirror_inflight(R.mirror, c->sandbox, a->addr, a->naddr,
	    setadd_until(a, age));

	if (id == 0)
		return false;
	R.c.set_joined++;
	p = xcalloc(1, sizeof(*p));
	p->id = id;
	/* Its own addresses and gen, should it have to ask again. */
	p->tmo = setadd_timeout(c, a, age);
	p->gen = R.gen;
	p->naddr = a->naddr;
	memcpy(p->addr, a->addr, a->naddr * sizeof(a->addr[0]));
	client_move(&p->c, c);
	p->wire = wire;
	p->len = len;
	tlist_add(&Q.pend, &p->t, ev_now() + SETADD_MS);
	return true;
}

/* Park the answer until the privileged side has opened the addresses. */
static void
setadd_park_addrs(struct client *c, const struct moat_addr *addr,
    size_t naddr, uint64_t tmo, uint8_t *wire, size_t len)
{
	struct pending *p;
	uint32_t id;

	if ((id = ++Q.ipc_id) == 0)	/* 0 names no request (mirror.h) */
		id = ++Q.ipc_id;

	if (setadd_send(c, addr, naddr, tmo, id) == -1) {
		log_warn("sandbox %s: set update not sent", c->sandbox);
		R.c.set_fail++;
		free(wire);
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	R.c.set_adds++;
	p = xcalloc(1, sizeof(*p));
	p->id = id;
	/* The kernel starts the timeout when it adds the element, after
	 * this moment: measured from here it is never overestimated. */
	p->expires_ms = ev_now() + tmo;
	p->tmo = tmo;
	p->gen = R.gen;
	p->naddr = naddr;
	memcpy(p->addr, addr, naddr * sizeof(addr[0]));
	/* The mirror knows addresses alone: a name with ports of its own
	 * asks every time (the parent still never cuts a promise short). */
	p->mirrored = !c->named;
	for (size_t i = 0; p->mirrored && i < naddr; i++)
		mirror_sent(R.mirror, c->sandbox, &addr[i], id,
		    p->expires_ms);
	client_move(&p->c, c);
	p->wire = wire;
	p->len = len;
	tlist_add(&Q.pend, &p->t, ev_now() + SETADD_MS);
}

static void
setadd_park(struct client *c, const struct answer *a, uint32_t age,
    uint8_t *wire, size_t len)
{
	setadd_park_addrs(c, a->addr, a->naddr, setadd_timeout(c, a, age),
	    wire, len);
}

static void refuse(struct client *, const char *, const char *,
    enum ipc_dns_why);
static void name_ports(struct client *, const struct sbpolicy *);

/*
 * Refused, but judged by an allow list this resolver has since replaced:
 * a change narrowed the sandbox meanwhile, and the parent refuses what
 * the list before it judged (it sent the new list first, so it is here).
 * Judge the name again by the list in force, as a query asked now would
 * be: still allowed, ask again under the new list; taken away, refused;
 * never SERVFAIL for a change of list.  False if the list is the one
 * that judged it (then the refusal stands).
 */
static bool
setadd_rejudge(struct pending *p)
{
	struct moat_addr peer;
	struct sbpolicy *sb;
	enum verdict v;

	if (p->gen == R.gen)
		return false;
	R.c.set_rejudged++;
	if (addr_from_sockaddr(&p->c.ss, &peer) == -1 ||
	    (sb = policy_sandbox(R.pol, &peer)) == NULL) {
		refuse(&p->c, "?", "source is not a sandbox", IPC_DNS_WHY_NONE);
		return true;
	}
	snprintf(p->c.sandbox, sizeof(p->c.sandbox), "%s", sb->sb->name);
	if ((v = policy_check(sb, p->c.q.name, p->c.q.namelen)) != V_ALLOW) {
		refuse(&p->c, p->c.sandbox, verdict_reason(v),
		    v == V_DENY_NONE ? IPC_DNS_WHY_EGRESS : IPC_DNS_WHY_LIST);
		return true;
	}
	p->c.allowlist = sb->egress == EGRESS_ALLOWLIST;
	if (!p->c.allowlist) {		/* open now: no set to wait for */
		client_send(&p->c, p->wire, p->len);
		client_done(&p->c);
		return true;
	}
	p->c.named = false;
	if (sb->named_ports)
		name_ports(&p->c, sb);
	setadd_park_addrs(&p->c, p->addr, p->naddr, p->tmo, p->wire, p->len);
	p->wire = NULL;			/* the new request has it */
	return true;
}

void
setadd_acked(uint32_t id, int32_t status)
{
	struct tlink *l, *next;
	struct pending *p;
	bool any = false;

	for (l = Q.pend.head; l != NULL; l = next) {
		next = l->next;
		p = TL_ENTRY(l, struct pending, t);
		if (p->id != id)
			continue;
		any = true;
		if (status >= 0 && p->mirrored && (size_t)status == p->naddr)
			for (size_t i = 0; i < p->naddr; i++)
				mirror_acked(R.mirror, p->c.sandbox,
				    &p->addr[i], id, p->expires_ms);
		if (status >= 0)
			client_send(&p->c, p->wire, p->len);
		else if (setadd_rejudge(p))
			;
		else {
			/* Fail closed: an answer the firewall would not
			 * honour is worse than an honest SERVFAIL. */
			R.c.set_fail++;
			log_warnx("sandbox %s: set update refused; SERVFAIL",
			    p->c.sandbox);
			respond(&p->c, LDNS_RCODE_SERVFAIL, 0, NULL);
		}
		pending_free(p);
	}
	if (!any)
		log_debug("set ack %u for nothing pending (timed out)", id);
}

/* What a rendering depends on besides the entry: its age, the client's
 * size limit and EDNS, and the header flags echoed from the query. */
static uint64_t
memo_key(const struct client *c, uint32_t age)
{
	return (uint64_t)age << 32 | (uint64_t)c->q.maxlen << 8 |
	    (uint64_t)c->q.edns << 2 | (uint64_t)ldns_pkt_rd(c->q.pkt) << 1 |
	    (uint64_t)ldns_pkt_cd(c->q.pkt);
}

static const ldns_rdf *
asked_name(const struct client *c)
{
	return ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(c->q.pkt), 0));
}

/* A cache hit asked the same way as the last one in the same second is
 * answered from the last rendering with the client's ID patched in. */
static uint8_t *
memo_get(const struct memo *m, const struct client *c, uint32_t age,
    size_t *len)
{
	const ldns_rdf *n = asked_name(c);
	uint8_t *wire;

	if (m == NULL || m->wire == NULL || m->key != memo_key(c, age) ||
	    m->qlen != ldns_rdf_size(n) ||
	    memcmp(m->q, ldns_rdf_data(n), m->qlen) != 0 ||
	    (wire = malloc(m->len)) == NULL)
		return NULL;
	memcpy(wire, m->wire, m->len);
	LDNS_ID_SET(wire, c->q.id);
	*len = m->len;
	return wire;
}

static void
memo_put(struct memo *m, const struct client *c, uint32_t age,
    const uint8_t *wire, size_t len)
{
	const ldns_rdf *n = asked_name(c);

	if (m == NULL || len > DNSD_EDNS_SIZE ||
	    ldns_rdf_size(n) > sizeof(m->q))
		return;
	free(m->wire);
	m->wire = xmalloc(len);
	memcpy(m->wire, wire, len);
	m->len = len;
	m->key = memo_key(c, age);
	m->qlen = ldns_rdf_size(n);
	memcpy(m->q, ldns_rdf_data(n), m->qlen);
}

/* Hand an answer (fresh, or from the cache age seconds old with its memo)
 * to a guest. */
void
deliver(struct client *c, const struct answer *a, uint32_t age,
    struct memo *memo)
{
	uint8_t *wire;
	size_t len;
	char name[LDNS_MAX_DOMAINLEN * 4 + 8];

	if (a->rcode == LDNS_RCODE_NOERROR && a->an != NULL &&
	    ldns_rr_list_rr_count(a->an) > 0)
		names_report(c->sandbox, IPC_DNS_RESOLVED, IPC_DNS_WHY_NONE,
		    &c->q);
	if (a->removed > 0 && log_budget())
		log_info("sandbox %s: %s: %zu private record(s) removed "
		    "(rebinding)", c->sandbox, dq_name(&c->q, name,
		    sizeof(name)), a->removed);
	if ((wire = memo_get(memo, c, age, &len)) == NULL) {
		wire = resp_build(&c->q, a->rcode, a->an, a->ns, age, a->ede,
		    a->ede ? "private address removed by moat" : NULL, &len);
		if (wire != NULL)
			memo_put(memo, c, age, wire, len);
	}
	if (wire == NULL) {
		respond(c, LDNS_RCODE_SERVFAIL, 0, NULL);
		return;
	}
	if (c->allowlist && a->naddr > 0 && R.ipcfd != -1) {
		if (c->named) {
			setadd_park(c, a, age, wire, len);
			return;
		}
		if (!setadd_covered(c, a, age)) {
			if (!setadd_join(c, a, age, wire, len))
				setadd_park(c, a, age, wire, len);
			return;
		}
		R.c.set_skipped++;
	}
	client_send(c, wire, len);
	free(wire);
	client_done(c);
}

/* --- queries --------------------------------------------------------- */

static void
query_error(struct client *c, enum dq_status st, const uint8_t *buf,
    size_t len)
{
	static const ldns_pkt_rcode rc[] = {
		[DQ_FORMERR] = LDNS_RCODE_FORMERR,
		[DQ_NOTIMP] = LDNS_RCODE_NOTIMPL,
	};
	uint8_t *wire;
	size_t wlen;

	if (st == DQ_DROP) {
		R.c.dropped++;
		client_done(c);
		return;
	}
	if (st == DQ_BADVERS && c->q.pkt != NULL) {
		respond(c, (ldns_pkt_rcode)16, 0, NULL);	/* BADVERS */
		return;
	}
	if (st == DQ_NOTIMP && c->q.pkt != NULL) {
		R.c.notimp++;
		respond(c, LDNS_RCODE_NOTIMPL, 0, NULL);
		return;
	}
	R.c.formerr++;
	if ((wire = resp_error(buf, len, st == DQ_NOTIMP ? rc[DQ_NOTIMP] :
	    rc[DQ_FORMERR], &wlen)) != NULL) {
		client_send(c, wire, wlen);
		free(wire);
	}
	client_done(c);
}

/* Under gatewayd, refusals and rebinding removals also go to its audit
 * log. */
static void
audit(const char *event, const char *sandbox, const char *name,
    const char *qtype, const char *reason)
{
	struct json j = JSON_INIT;

	if (R.opts->ipc_fd == -1 || R.ipcfd == -1)
		return;
	json_begin(&j);
	json_kstr(&j, "event", event);
	json_kstr(&j, "sandbox", sandbox);
	json_kstr(&j, "name", name);
	json_kstr(&j, "qtype", qtype);
	json_kstr(&j, "reason", reason);
	json_end(&j);
	if (j.len <= IPC_MAX_PAYLOAD)
		(void)ipc_send(R.ipcfd, IPC_AUDIT, 0, j.buf, j.len);
	json_free(&j);
}

/*
 * The EDE text of a refusal, for an agent reading its own error: which
 * sandbox, which name, and for a name the allow list lacks, who can
 * change that.  name as dq_name wrote it (printable, the root's dot
 * dropped here).
 */
static const char *
told(const char *who, char *name, const char *reason, enum ipc_dns_why why,
    char *buf, size_t len)
{
	size_t n = strlen(name);

	if (n > 1 && name[n - 1] == '.')
		name[--n] = '\0';
	/* The whole command, even for a 253-character name: a cut one
	 * names another host.  It fits a 1232-byte answer. */
	if (why == IPC_DNS_WHY_LIST)
		snprintf(buf, len, "sandbox %s may not resolve %s (%s); ask the "
		    "operator: gatewayd ctl allow %s %s", who, name, reason,
		    who, name);
	else if (why == IPC_DNS_WHY_EGRESS)
		snprintf(buf, len, "sandbox %s may not resolve %s (%s)", who,
		    name, reason);
	else
		snprintf(buf, len, "%s", reason);
	return buf;
}

static void
refuse(struct client *c, const char *who, const char *reason,
    enum ipc_dns_why why)
{
	char name[LDNS_MAX_DOMAINLEN * 4 + 8], t[16];
	char text[LDNS_MAX_DOMAINLEN * 8 + 256];

	R.c.refused++;
	dq_name(&c->q, name, sizeof(name));
	names_report(who, IPC_DNS_REFUSED, why, &c->q);
	qtype_str(c->q.qtype, t, sizeof(t));
	if (log_budget()) {
		log_info("sandbox %s: refused %s %s: %s", who, t, name,
		    reason);
		audit("dns-refused", who, name, t, reason);
	}
	respond(c, LDNS_RCODE_REFUSED, EDE_BLOCKED, told(who, name, reason,
	    why, text, sizeof(text)));
}

/* What the allow list opens for the name asked: the one decision
 * (admit_name_ports), on the name as text.  Only a name that an entry
 * with ports of its own covers is marked. */
static void
name_ports(struct client *c, const struct sbpolicy *sb)
{
	char name[LDNS_MAX_DOMAINLEN * 4 + 8];
	size_t n;
	int np;

	dq_name(&c->q, name, sizeof(name));
	n = strlen(name);
	if (n > 1 && name[n - 1] == '.')
		name[n - 1] = '\0';
	np = admit_name_ports(sb->sb, name, &c->plain, c->ports);
	c->named = np > 0;
	c->nports = (uint8_t)np;
}

/* --rate for every sandbox if given, else moat.conf's rate for this one. */
static bool
sandbox_ratelimit(struct sbpolicy *sb)
{
	double qps = R.opts->qps, burst = R.opts->burst;

	if (qps < 0)
		config_dns_rate(R.cfg, sb->sb, &qps, &burst);
	if (qps > 0 && burst < 1)
		burst = 1;
	return policy_ratelimit(sb, ev_now(), qps, burst);
}

void
handle_query(struct client *c, const uint8_t *buf, size_t len)
{
	struct moat_addr peer;
	struct sbpolicy *sb;
	struct centry *e;
	enum dq_status st;
	enum verdict v;
	uint64_t now_s = ev_now() / 1000;

	R.c.queries++;
	if ((st = dq_parse(buf, len, c->conn != NULL, &c->q)) != DQ_OK) {
		query_error(c, st, buf, len);
		return;
	}
	if (addr_from_sockaddr(&c->ss, &peer) == -1 ||
	    (sb = policy_sandbox(R.pol, &peer)) == NULL) {
		R.c.unknown_src++;
		refuse(c, "?", "source is not a sandbox", IPC_DNS_WHY_NONE);
		return;
	}
	snprintf(c->sandbox, sizeof(c->sandbox), "%s", sb->sb->name);
	c->allowlist = sb->egress == EGRESS_ALLOWLIST;
	if (!sandbox_ratelimit(sb)) {
		R.c.ratelimited++;
		sb->dropped++;
		client_done(c);
		return;
	}
	if (c->q.namelen == sizeof(uad_name) &&
	    memcmp(c->q.name, uad_name, sizeof(uad_name)) == 0) {
		/* Firefox's canary: NXDOMAIN turns its own DoH off. */
		R.c.uad++;
		respond(c, LDNS_RCODE_NXDOMAIN, 0, NULL);
		return;
	}
	if ((v = policy_check(sb, c->q.name, c->q.namelen)) != V_ALLOW) {
		refuse(c, c->sandbox, verdict_reason(v), v == V_DENY_NONE ?
		    IPC_DNS_WHY_EGRESS : IPC_DNS_WHY_LIST);
		return;
	}
	c->named = false;
	if (c->allowlist && sb->named_ports)
		name_ports(c, sb);
	if (c->q.qtype == LDNS_RR_TYPE_AAAA && !sb->v6) {
		/* This guest has no IPv6: an empty answer, at once, so that
		 * happy eyeballs does not wait for one. */
		R.c.aaaa_empty++;
		respond(c, LDNS_RCODE_NOERROR, 0, NULL);
		return;
	}
	if ((e = cache_get(R.cache, c->q.name, c->q.namelen, c->q.qtype,
	    now_s)) != NULL) {
		deliver(c, &e->a, (uint32_t)(now_s - e->stored), &e->memo);
		return;
	}
	fwd_start(c);
}

/* The log's budget starts full: the first lines after a start are the
 * ones an operator looks for. */
void
query_init(void)
{
	Q.log_last = ev_now();
	Q.log_tokens = LOG_PER_SEC;
}

/* No acknowledgement in time: fail closed. */
void
query_expire(uint64_t now)
{
	struct tlink *l;

	while ((l = Q.pend.head) != NULL && l->deadline <= now) {
		struct pending *p = TL_ENTRY(l, struct pending, t);

		R.c.set_fail++;
		log_warnx("sandbox %s: no set ack in %d ms; SERVFAIL",
		    p->c.sandbox, SETADD_MS);
		respond(&p->c, LDNS_RCODE_SERVFAIL, 0, NULL);
		pending_free(p);
	}
}

uint64_t
query_next(void)
{
	return tlist_next(&Q.pend, NULL);
}

void
query_close_all(void)
{
	struct tlink *l;

	while ((l = Q.pend.head) != NULL)
		pending_free(TL_ENTRY(l, struct pending, t));
}
