/*
 * reqrule.c -- request rules and budgets of secrets (see reqrule.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "budget.h"
#include "conn.h"
#include "http.h"
#include "log.h"
#include "reqrule.h"

static int rr_ipc = -1;
static uint32_t rr_next_id;
static struct rr_req *rr_waiting;	/* for the parent's answer */
static struct budget_set rr_local;	/* without gatewayd */

void
reqrule_init(int ipcfd)
{
	rr_ipc = ipcfd;
}

static void
add_name(char *list, const char *name)
{
	size_t l = strlen(list);

	snprintf(list + l, RR_NAMES_MAX - l, "%s%s", l ? "," : "", name);
}

/* The path for audits and messages: normal form when it has one, else
 * the raw path, never the query. */
static void
audit_path(struct rr_req *r, const char *path, size_t pathlen,
    const char *norm, int nlen)
{
	const char *q = memchr(path, '?', pathlen);

	if (nlen >= 0)
		snprintf(r->path, sizeof(r->path), "%.*s", nlen, norm);
	else
		snprintf(r->path, sizeof(r->path), "%.*s", (int)(q ? (size_t)(q -
		    path) : pathlen), path);
}

static bool
rules_allow(const struct moat_secret *s, const struct http_head *hd,
    const char *norm, int nlen, const char *q, size_t ql)
{
	size_t i;

	if (!s->has_requests)
		return true;
	for (i = 0; nlen >= 0 && i < s->requests.n; i++)
		if (pm_rule_match(s->requests.v[i], hd->method, hd->methodlen,
		    norm, (size_t)nlen, q, ql))
			return true;
	return false;
}

static void
refuse_rules(struct conn *c, struct rr_req *r, const struct moat_secret *s,
    const char *why)
{
	char msg[1024];
	size_t i, l;

	audit("request-refused", "sandbox", c->sbname, "src", c->src, "host",
	    r->host, "secret", s->name, "method", r->method, "path", r->path,
	    "status", "403", "reason", why, NULL);
	l = (size_t)snprintf(msg, sizeof(msg), "secret \"%s\": %s; its request "
	    "rules allow only:", s->name, why);
	for (i = 0; i < s->requests.n && l < sizeof(msg); i++)
		l += (size_t)snprintf(msg + l, sizeof(msg) - l, "%s %s",
		    i ? "," : "", s->requests.v[i]);
	conn_refuse_http(c, 403, msg);
}

static void
refuse_sidestep(struct conn *c, struct rr_req *r, const char *why)
{
	char msg[512];

	audit("request-refused", "sandbox", c->sbname, "src", c->src, "host",
	    r->host, "secret", r->secrets, "method", r->method, "path", r->path,
	    "status", "403", "reason", why, NULL);
	snprintf(msg, sizeof(msg), "%s (secrets: %s)", why, r->secrets);
	conn_refuse_http(c, 403, msg);
}

/* 429 with Retry-After, then close, as conn_refuse_http does. */
static void
refuse_budget(struct conn *c, struct rr_req *r)
{
	const struct ipc_budget_ack *a = &r->ack;
	const struct moat_secret *s = config_secret_by_name(proxy.cfg,
	    a->secret);
	char retry[16], msg[256], hdr[48];

	snprintf(retry, sizeof(retry), "%u", a->retry_after);
	snprintf(msg, sizeof(msg), "secret \"%s\": budget of %ld requests per "
	    "%s spent; retry in %u s", a->secret, s == NULL ? 0 :
	    strcmp(a->window, "day") == 0 ? s->per_day : s->per_minute,
	    a->window, a->retry_after);
	audit("request-over-budget", "sandbox", c->sbname, "src", c->src,
	    "host", r->host, "secret", a->secret, "method", r->method, "path",
	    r->path, "status", "429", "budget", a->window, "retry_after",
	    retry, NULL);
	snprintf(hdr, sizeof(hdr), "Retry-After: %u\r\n", a->retry_after);
	conn_refuse_http_hdr(c, 429, hdr, msg);
}

/* Ask the parent to charge the budgets (or charge our own).  0 charged,
 * 1 waiting (reqrule_ipc takes the answer), -1 spent or the parent
 * unreachable (answered). */
static int
charge(struct conn *c, struct rr_req *r, struct ipc_budget_req *m)
{
	const char *names[IPC_BUDGET_MAX];
	uint32_t i;

	if (rr_ipc < 0) {
		for (i = 0; i < m->nsecret; i++)
			names[i] = m->secret[i];
		if (budget_charge(&rr_local, proxy.cfg, names, m->nsecret,
		    time(NULL), &r->ack) == 0)
			return 0;
		refuse_budget(c, r);
		return -1;
	}
	r->id = ++rr_next_id;
	audit_flush();	/* gatewayd sees the events before the request */
	if (ipc_send(rr_ipc, IPC_BUDGET_REQ, r->id, m, sizeof(*m)) == -1) {
		log_warn("budget-req");
		conn_refuse(c, 503, "cannot reach gatewayd to charge a budget");
		return -1;
	}
	r->st = RR_WAITING;
	r->c = c;
	r->next = rr_waiting;
	rr_waiting = r;
	return 1;
}

/* For the secrets this head carries: refuse a request that could do more
 * than the rules see, or one the first secret's rules do not allow; list
 * the budgeted ones in m. */
static int
decide(struct conn *c, struct rr_req *r, const struct secrets *ss,
    const struct http_head *hd, const char *path, size_t pathlen,
    const bool *carried, struct ipc_budget_req *m)
{
	char norm[PM_MAX_PATH];
	const struct secret *s;
	const char *q, *why;
	size_t i, ql;
	int nlen;

	nlen = pm_normalise(path, pathlen, norm, sizeof(norm), &q, &ql);
	audit_path(r, path, pathlen, norm, nlen);
	for (i = 0; i < ss->n; i++)
		if (carried[i])
			add_name(r->secrets, ss->v[i].cfg->name);
	if (r->secrets[0] == '\0')
		return 0;
	if ((why = http_sidestep(hd, path, pathlen)) != NULL) {
		refuse_sidestep(c, r, why);
		return -1;
	}
	for (i = 0; i < ss->n; i++) {
		s = &ss->v[i];
		if (!carried[i])
			continue;
		if (!rules_allow(s->cfg, hd, norm, nlen, q, ql)) {
			refuse_rules(c, r, s->cfg, nlen < 0 ? "the path has "
			    "no normal form (\".\", \"..\", \"//\" or an "
			    "encoded '/')" : "the request matches none of "
			    "its rules");
			return -1;
		}
		if (s->cfg->per_minute == 0 && s->cfg->per_day == 0)
			continue;
		if (m->nsecret == IPC_BUDGET_MAX) {	/* never uncounted */
			conn_refuse(c, 403, "more budgeted secrets in one "
			    "request than the proxy can count");
			return -1;
		}
		snprintf(m->secret[m->nsecret++], IPC_NAME_LEN, "%s",
		    s->cfg->name);
	}
	return 0;
}

int
reqrule_check(struct conn *c, struct rr_req *r, const struct secrets *ss,
    const struct http_head *hd, const char *host, const char *path,
    size_t pathlen, const bool *carried)
{
	struct ipc_budget_req m;
	int rc;

	memset(&m, 0, sizeof(m));
	r->st = RR_IDLE;
	r->secrets[0] = '\0';
	r->status = 0;
	r->bytes = 0;
	snprintf(r->method, sizeof(r->method), "%.*s", (int)(hd->methodlen <
	    PM_MAX_METHOD ? hd->methodlen : PM_MAX_METHOD), hd->method);
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->c = c;
	if (decide(c, r, ss, hd, path, pathlen, carried, &m) < 0)
		return -1;
	if (m.nsecret > 0 && (rc = charge(c, r, &m)) != 0)
		return rc;
	r->open = r->secrets[0] != '\0';
	return 0;
}

int
reqrule_answer(struct conn *c, struct rr_req *r)
{
	switch (r->st) {
	case RR_WAITING:
		return 1;
	case RR_SPENT:
		r->st = RR_IDLE;
		refuse_budget(c, r);
		return -1;
	case RR_GRANTED:
		r->st = RR_IDLE;
		r->open = r->secrets[0] != '\0';
		return 0;
	case RR_IDLE:
		break;
	}
	return 0;
}

void
reqrule_status(struct rr_req *r, int status)
{
	if (status >= 200)
		r->status = status;
}

void
reqrule_bytes(struct rr_req *r, size_t n)
{
	r->bytes += n;
}

static void
audit_request(struct rr_req *r, const char *complete)
{
	char status[16], bytes[24];

	if (!r->open || r->c == NULL)
		return;
	r->open = false;
	snprintf(status, sizeof(status), "%d", r->status);
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)r->bytes);
	audit("request", "sandbox", r->c->sbname, "src", r->c->src, "host",
	    r->host, "secret", r->secrets, "method", r->method, "path",
	    r->path, "status", status, "bytes", bytes, "complete", complete,
	    NULL);
}

void
reqrule_done(struct rr_req *r)
{
	audit_request(r, NULL);
}

static void
unlink_waiting(struct rr_req *r)
{
	struct rr_req **p;

	for (p = &rr_waiting; *p != NULL; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	r->next = NULL;
}

void
reqrule_forget(struct rr_req *r)
{
	if (r->st == RR_WAITING)
		unlink_waiting(r);
	r->st = RR_IDLE;
	audit_request(r, "no");
}

void
reqrule_ipc(const struct ipc_hdr *h, const void *p, size_t len)
{
	struct rr_req *r;

	for (r = rr_waiting; r != NULL; r = r->next)
		if (r->id == h->id)
			break;
	if (r == NULL)
		return;		/* its connection closed meanwhile */
	unlink_waiting(r);
	memcpy(&r->ack, p, sizeof(r->ack));
	r->st = r->ack.status == 0 ? RR_GRANTED : RR_SPENT;
	conn_budget_answer(r->c);
}
