/*
 * parent/refused.c -- `gatewayd ctl refused` and `gatewayd ctl names`:
 * what each sandbox was refused (names by dnsd, addresses and ports by
 * the kernel and the proxy) and which names it resolved, grouped, with
 * counts and times, in bounded memory (seen.h).
 *
 * The parent only reads what its children already send it: dnsd's
 * IPC_DNS_NAME for names, the nflog reader's and the proxy's audit events
 * for the rest.  Views exist only for configured sandboxes and are pruned
 * at each reload.
 *
 * A name is what a guest chose: every output shows it through
 * seen_shown() or the JSON writer, and --as-allow lists only names the
 * config loader takes as allow entries (seen_as_allow).  Text puts names
 * first and folds the kernel's refusals of many ports of one address.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gw.h"
#include "commit.h"
#include "ctl.h"
#include "refused.h"
#include "canary.h"
#include "json.h"
#include "log.h"

/* A view exists only for a configured sandbox (pruned at each reload):
 * found by a binary search, the configuration's linear one only for a
 * sandbox's first entry. */
static bool
known(struct gw *gw, struct seen_set *set, const char *sandbox)
{
	return seen_find(set, sandbox) != NULL ||
	    config_sandbox_by_name(gw->cfg, sandbox) != NULL;
}

void
refused_dns_name(struct gw *gw, const struct ipc_dns_name *m)
{
	static const enum seen_why whys[IPC_DNS_WHY_MAX] = {
		[IPC_DNS_WHY_NONE] = SEEN_WHY_NONE,
		[IPC_DNS_WHY_LIST] = SEEN_WHY_LIST,
		[IPC_DNS_WHY_EGRESS] = SEEN_WHY_EGRESS_NONE,
	};

	if (!known(gw, m->kind == IPC_DNS_RESOLVED ? &refused_of(gw)->seen_names :
	    &refused_of(gw)->seen_refused, m->sandbox))
		return;
	if (m->kind == IPC_DNS_RESOLVED)
		seen_add(&refused_of(gw)->seen_names, m->sandbox, m->name, SEEN_DNS,
		    SEEN_WHY_NONE, m->count, time(NULL));
	else
		seen_add(&refused_of(gw)->seen_refused, m->sandbox, m->name, SEEN_DNS,
		    whys[m->reason], m->count, time(NULL));
}

/* line: an audit line as written, the child's name stamped as source. */
void
refused_audit(struct gw *gw, const char *line)
{
	char sandbox[IPC_NAME_LEN], what[SEEN_WHAT_LEN];
	enum seen_source src;
	enum seen_why why;

	if (seen_parse_audit(line, sandbox, sizeof(sandbox), what,
	    sizeof(what), &src, &why) &&
	    known(gw, &refused_of(gw)->seen_refused, sandbox))
		seen_add(&refused_of(gw)->seen_refused, sandbox, what, src, why, 1,
		    time(NULL));
}

static bool
configured(void *arg, const char *sandbox)
{
	return config_sandbox_by_name(arg, sandbox) != NULL;
}

void
refused_prune(struct gw *gw)
{
	seen_prune(&refused_of(gw)->seen_refused, configured, gw->cfg);
	seen_prune(&refused_of(gw)->seen_names, configured, gw->cfg);
	seen_limit(&refused_of(gw)->seen_refused, gw->cfg->nsandboxes);
	seen_limit(&refused_of(gw)->seen_names, gw->cfg->nsandboxes);
}

void
refused_free(struct gw *gw)
{
	seen_clear(&refused_of(gw)->seen_refused);
	seen_clear(&refused_of(gw)->seen_names);
}

int
gw_duration(const char *s, long *secs)
{
	static const struct { char unit; long mul; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	char *end;
	long n;
	size_t i;

	n = strtol(s, &end, 10);
	if (end == s || n <= 0 || n > 366L * 86400)
		return -1;
	if (*end == '\0') {
		*secs = n;
		return 0;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (end[0] == units[i].unit && end[1] == '\0' &&
		    n <= 366L * 86400 / units[i].mul) {
			*secs = n * units[i].mul;
			return 0;
		}
	return -1;
}

/* --- the verbs ----------------------------------------------------------- */

struct seen_args {
	const char	*sandbox;	/* NULL: every one the caller may see */
	long		 since;		/* seconds, 0: all */
	int		 kind;		/* enum seen_source, -1: every one */
	bool		 as_allow;
};

static int
parse_kind(const char *s)
{
	int k;

	for (k = 0; k < SEEN_NSOURCES; k++)
		if (strcmp(s, seen_source_str(k)) == 0)
			return k;
	return -1;
}

static int
usage(struct ctl_req *r, bool names)
{
	if (names)
		ctl_reply(r, "error: usage: names SANDBOX [--since DURATION] "
		    "[--as-allow | --json]\n");
	else
		ctl_reply(r, "error: usage: refused [SANDBOX] [--since DURATION] "
		    "[--kind dns|proxy|kernel] [--json]\n");
	return -1;
}

static int
parse_args(struct ctl_req *r, bool names, struct seen_args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->kind = -1;
	for (i = 1; i < r->argc; i++) {
		if (strcmp(r->argv[i], "--since") == 0 && i + 1 < r->argc) {
			if (gw_duration(r->argv[++i], &a->since) == -1) {
				ctl_reply(r, "error: --since: expected a duration "
				    "such as 90s, 10m, 2h or 1d, got \"%s\"\n",
				    r->argv[i]);
				return -1;
			}
		} else if (!names && strcmp(r->argv[i], "--kind") == 0 &&
		    i + 1 < r->argc) {
			if ((a->kind = parse_kind(r->argv[++i])) == -1) {
				ctl_reply(r, "error: --kind: expected dns, proxy "
				    "or kernel\n");
				return -1;
			}
		} else if (names && strcmp(r->argv[i], "--as-allow") == 0)
			a->as_allow = true;
		else if (r->argv[i][0] != '-' && a->sandbox == NULL)
			a->sandbox = r->argv[i];
		else
			return usage(r, names);
	}
	if (names && a->sandbox == NULL)
		return usage(r, names);
	if (a->as_allow && r->json) {
		ctl_reply(r, "error: --as-allow and --json are two outputs; "
		    "choose one\n");
		return -1;
	}
	return 0;
}

/* The sandbox, if the caller may see it: one answer for missing and not
 * yours, as everywhere in the control protocol. */
static bool
visible(struct ctl_req *r, const char *name)
{
	const struct moat_sandbox *sb = config_sandbox_by_name(r->gw->cfg,
	    name);

	return sb != NULL && ctl_may_see(r, sb->owner);
}

static int
by_last_desc(const void *a, const void *b)
{
	const struct seen_entry *x = *(const struct seen_entry *const *)a;
	const struct seen_entry *y = *(const struct seen_entry *const *)b;

	if (x->last != y->last)
		return x->last < y->last ? 1 : -1;
	return strcmp(x->what, y->what);
}

static int
by_what(const void *a, const void *b)
{
	return strcmp((*(const struct seen_entry *const *)a)->what,
	    (*(const struct seen_entry *const *)b)->what);
}

static const char *
stamp(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

/* The view's entries since the cutoff, sorted; malloc'ed, *n of them. */
static const struct seen_entry **
entries(const struct seen_view *v, time_t cutoff, int kind, bool alpha,
    size_t *n)
{
	const struct seen_entry **e = xreallocarray(NULL, v->n + 1,
	    sizeof(*e));
	size_t i;

	*n = 0;
	for (i = 0; i < v->n; i++)
		if (v->e[i].last >= cutoff &&
		    (kind == -1 || v->e[i].source == kind))
			e[(*n)++] = &v->e[i];
	qsort(e, *n, sizeof(*e), alpha ? by_what : by_last_desc);
	return e;
}

static void
show_json(struct ctl_req *r, const struct seen_view *v,
    const struct seen_args *a, time_t cutoff, bool *first)
{
	const struct seen_entry **e;
	char f[32], l[32], dst[SEEN_WHAT_LEN];
	size_t i, n;

	e = entries(v, cutoff, a->kind, false, &n);
	ctl_reply(r, "%s{\"sandbox\":\"%s\",\"dropped\":%llu,\"entries\":[",
	    *first ? "" : ",", v->sandbox, (unsigned long long)v->dropped);
	for (i = 0; i < n; i++) {
		ctl_reply(r, "%s{\"what\":", i ? "," : "");
		ctl_reply_jstr(r, e[i]->what);
		snprintf(dst, sizeof(dst), "%.*s", (int)seen_dst_len(e[i]),
		    e[i]->what);
		ctl_reply(r, ",\"destination\":");
		ctl_reply_jstr(r, dst);
		ctl_reply(r, ",\"count\":%llu,\"first\":\"%s\",\"last\":\"%s\","
		    "\"source\":\"%s\",\"reason\":\"%s\"}",
		    (unsigned long long)e[i]->count,
		    stamp(e[i]->first, f, sizeof(f)),
		    stamp(e[i]->last, l, sizeof(l)),
		    seen_source_str(e[i]->source), seen_why_str(e[i]->why));
	}
	ctl_reply(r, "]}");
	*first = false;
	free(e);
}

static void
row(struct ctl_req *r, const char *sandbox, const char *what,
    uint64_t count, time_t first, time_t last, const char *source,
    const char *reason)
{
	char f[32], l[32], *shown = seen_shown(what);

	ctl_reply(r, "%-16s %-40s %7llu %-20s %-20s %-6s %s\n", sandbox, shown,
	    (unsigned long long)count, stamp(first, f, sizeof(f)),
	    stamp(last, l, sizeof(l)), source, reason);
	free(shown);
}

static bool
same_dst(const struct seen_entry *x, const struct seen_entry *y)
{
	size_t n = seen_dst_len(x);

	return n == seen_dst_len(y) && strncmp(x->what, y->what, n) == 0;
}

/* The kernel refused at least this many ports of one destination: one
 * row for them all. */
#define FOLD_MIN	4

/* The kernel's entries for e[i]'s destination, not yet shown, as one row
 * if there are FOLD_MIN or more: a scan of a guest's own gateway is one
 * line, not hundreds. */
static void
fold(struct ctl_req *r, const char *sandbox, const struct seen_entry **e,
    size_t n, size_t i, bool *done)
{
	const struct seen_entry *x = e[i];
	char what[SEEN_WHAT_LEN + 32];
	uint64_t count = 0;
	time_t first = x->first, last = x->last;
	size_t j, ports = 0;	/* counted first, then shown */
	bool mixed = false;

	for (j = i; j < n; j++)
		if (!done[j] && e[j]->source == SEEN_KERNEL && same_dst(x, e[j]))
			ports++;
	if (ports < FOLD_MIN) {
		/* A few ports are read better one per row. */
		for (j = i; j < n; j++)
			if (!done[j] && e[j]->source == SEEN_KERNEL &&
			    same_dst(x, e[j])) {
				done[j] = true;
				row(r, sandbox, e[j]->what, e[j]->count,
				    e[j]->first, e[j]->last,
				    seen_source_str(e[j]->source),
				    seen_why_str(e[j]->why));
			}
		return;
	}
	for (j = i; j < n; j++) {
		if (done[j] || e[j]->source != SEEN_KERNEL || !same_dst(x, e[j]))
			continue;
		done[j] = true;
		count += e[j]->count;
		first = e[j]->first < first ? e[j]->first : first;
		last = e[j]->last > last ? e[j]->last : last;
		mixed |= e[j]->why != x->why;
	}
	snprintf(what, sizeof(what), "%.*s: %zu ports", (int)seen_dst_len(x),
	    x->what, ports);
	row(r, sandbox, what, count, first, last, seen_source_str(SEEN_KERNEL),
	    mixed ? "several reasons" : seen_why_str(x->why));
}

/* The kernel's refusals towards other guests, when they reach FOLD_MIN
 * addresses or more (a guest sweeping its own network, as
 * containment-check does): one row for them all. */
static void
fold_guests(struct ctl_req *r, const char *sandbox,
    const struct seen_entry **e, size_t n, bool *done)
{
	uint64_t count = 0;
	time_t first = 0, last = 0;
	size_t i, j, addrs = 0;
	char what[64];

	for (i = 0; i < n; i++) {
		if (e[i]->source != SEEN_KERNEL || e[i]->why != SEEN_WHY_GUEST)
			continue;
		for (j = 0; j < i; j++)
			if (e[j]->source == SEEN_KERNEL &&
			    e[j]->why == SEEN_WHY_GUEST && same_dst(e[i], e[j]))
				break;
		addrs += j == i;
	}
	if (addrs < FOLD_MIN)
		return;
	for (i = 0; i < n; i++) {
		if (e[i]->source != SEEN_KERNEL || e[i]->why != SEEN_WHY_GUEST)
			continue;
		done[i] = true;
		count += e[i]->count;
		first = first == 0 || e[i]->first < first ? e[i]->first : first;
		last = e[i]->last > last ? e[i]->last : last;
	}
	snprintf(what, sizeof(what), "other guests: %zu addresses", addrs);
	row(r, sandbox, what, count, first, last, seen_source_str(SEEN_KERNEL),
	    seen_why_str(SEEN_WHY_GUEST));
}

/* Names first (dnsd's and the proxy's), most recent first; then the
 * kernel's refusals, folded per destination (and those towards other
 * guests into one row when there are many). */
static void
show_text(struct ctl_req *r, const struct seen_view *v,
    const struct seen_args *a, time_t cutoff, size_t per, bool *first)
{
	const struct seen_entry **e;
	size_t i, n;
	bool *done;

	e = entries(v, cutoff, a->kind, false, &n);
	done = xreallocarray(NULL, n + 1, sizeof(*done));
	memset(done, 0, (n + 1) * sizeof(*done));
	if (*first)
		ctl_reply(r, "%-16s %-40s %7s %-20s %-20s %-6s %s\n", "SANDBOX",
		    "WHAT", "COUNT", "FIRST", "LAST", "SOURCE", "REASON");
	for (i = 0; i < n; i++)
		if (e[i]->source != SEEN_KERNEL)
			row(r, v->sandbox, e[i]->what, e[i]->count, e[i]->first,
			    e[i]->last, seen_source_str(e[i]->source),
			    seen_why_str(e[i]->why));
	fold_guests(r, v->sandbox, e, n, done);
	for (i = 0; i < n; i++)
		if (e[i]->source == SEEN_KERNEL && !done[i])
			fold(r, v->sandbox, e, n, i, done);
	if (v->dropped > 0)
		ctl_reply(r, "%s: %llu older entr%s dropped (the view keeps "
		    "the %d most recent)\n", v->sandbox,
		    (unsigned long long)v->dropped, v->dropped == 1 ? "y" :
		    "ies", (int)per);
	*first = false;
	free(done);
	free(e);
}

/* Only names the config loader takes as allow entries go in the list;
 * the rest follow as escaped comments (seen_as_allow), so pasting the
 * output can never write a setting a guest chose. */
static void
show_allow(struct ctl_req *r, const struct seen_view *v, time_t cutoff)
{
	const struct seen_entry **e;
	const char **what;
	char *text;
	size_t i, n;

	e = entries(v, cutoff, -1, true, &n);
	what = xreallocarray(NULL, n + 1, sizeof(*what));
	for (i = 0; i < n; i++)
		what[i] = e[i]->what;
	text = seen_as_allow(what, n);
	ctl_reply(r, "%s", text);
	free(text);
	free(what);
	free(e);
}

/* The canary's refusals are its own scans probing the policy: in a list
 * of every sandbox, one line says how many (ctl refused canary lists
 * them); JSON leaves them out unless asked for by name. */
static void
show_canary(struct ctl_req *r, const struct seen_view *v,
    const struct seen_args *a, time_t cutoff, bool *first)
{
	const struct seen_entry **e;
	unsigned long long count = 0;
	size_t i, n;

	if (r->json)
		return;
	e = entries(v, cutoff, a->kind, false, &n);
	for (i = 0; i < n; i++)
		count += e[i]->count;
	free(e);
	if (n == 0)
		return;
	if (*first)
		ctl_reply(r, "%-16s %-40s %7s %-20s %-20s %-6s %s\n", "SANDBOX",
		    "WHAT", "COUNT", "FIRST", "LAST", "SOURCE", "REASON");
	ctl_reply(r, "%-16s %-40s %7llu (the canary's own scans: ctl refused "
	    "%s lists them)\n", v->sandbox, "(folded)", count, v->sandbox);
	*first = false;
}

static void
show(struct ctl_req *r, struct seen_set *set, bool names)
{
	struct seen_args a;
	struct seen_view *v, empty;
	time_t cutoff;
	bool first = true;
	size_t i;

	if (parse_args(r, names, &a) == -1)
		return;
	if (a.sandbox != NULL && !visible(r, a.sandbox)) {
		ctl_reply(r, "error: no sandbox %s (or not yours)\n", a.sandbox);
		return;
	}
	cutoff = a.since > 0 ? time(NULL) - a.since : 0;
	if (r->json)
		ctl_reply(r, "[");
	for (i = 0; i < set->n || (a.sandbox != NULL && i == 0); i++) {
		if (a.sandbox != NULL) {
			if ((v = seen_find(set, a.sandbox)) == NULL) {
				memset(&empty, 0, sizeof(empty));
				snprintf(empty.sandbox, sizeof(empty.sandbox),
				    "%s", a.sandbox);
				v = &empty;
			}
		} else if (!visible(r, (v = &set->v[i])->sandbox))
			continue;
		if (a.as_allow)
			show_allow(r, v, cutoff);
		else if (!names && a.sandbox == NULL &&
		    canary_sandbox(r->gw) != NULL &&
		    strcmp(v->sandbox, canary_sandbox(r->gw)) == 0)
			show_canary(r, v, &a, cutoff, &first);
		else if (r->json)
			show_json(r, v, &a, cutoff, &first);
		else
			show_text(r, v, &a, cutoff, seen_per(set), &first);
		if (a.sandbox != NULL)
			break;
	}
	ctl_reply(r, r->json ? "]\nok\n" : "ok\n");
}

void
ctl_refused(struct ctl_req *r)
{
	show(r, &refused_of(r->gw)->seen_refused, false);
}

void
ctl_names(struct ctl_req *r)
{
	show(r, &refused_of(r->gw)->seen_names, true);
}

static void
refused_on_commit(struct gw *gw, const struct gw_commit *c)
{
	(void)c;
	refused_prune(gw);
}

const struct gw_module refused_module = {
	.on_commit = refused_on_commit,
	.name = "refused",
	.size = sizeof(struct gw_refused),
	.stop = refused_free,
};
