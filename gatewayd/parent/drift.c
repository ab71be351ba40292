/*
 * parent/drift.c -- the parent watches its own kernel state.
 *
 * Two ways in, one check.  The parent listens to nf_tables notifications
 * (NFNLGRP_NFTABLES) on a non-blocking socket of its own; a change to
 * "inet moat", "bridge moat" or the gate "inet moat_ha" that another
 * program made runs the check at once.  The check also runs every
 * gateway.verify.interval seconds, and at once when the kernel says
 * notifications were lost (ENOBUFS), so that a missed one costs at most
 * an interval.
 *
 * The check is nft-rules' own verify (nftr_verify, the comparison
 * `nft-rules verify` prints) of the kernel against gw->applied, the
 * ruleset gatewayd committed, plus a look for another table whose base
 * chain runs before one of moat's on the same hook.  Drift in moat's
 * tables is logged, audited ("policy-drift", naming the first object
 * that differs), counted in moat_policy_drift and shown by ctl status;
 * with gateway.verify.repair the policy in force is applied again, whole,
 * by the apply a reload uses, and audited as "policy-repaired".  Another
 * table is reported, never touched.
 *
 * Telling our own changes apart: every notification carries the netlink
 * portid of the socket whose transaction made it (the kernel fills it in
 * from the sending socket; another process cannot send with ours), and
 * every change gatewayd makes goes through one socket, gw->nft.  Events
 * with that portid are ours, whenever they are read; no window around our
 * own commits is needed, and a change someone else slips in during one
 * still counts.  Portid 0 is the kernel itself: elements of timeout sets
 * expiring are not drift.
 *
 * With the table flag owner (Linux 5.12, persist 6.9) the kernel already
 * refuses every other program's change to moat's tables; the watch then
 * catches what that cannot: another table, and gatewayd's own bugs.
 */
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>

#include "gw.h"
#include "audit.h"
#include "ctl.h"
#include "policy.h"
#include "drift.h"
#include "metrics.h"
#include "ha.h"
#include "ev.h"
#include "log.h"
#include "nftrules.h"
#include "kwatch.h"

#define DRIFT_RCVBUF	(8 << 20)	/* a whole ruleset replaced */

struct drift {
	struct ev	 ev;
	struct gw	*gw;
	struct mnl_socket *nl;		/* NULL: the timer alone */
	uint32_t	 self;		/* gw->nft's portid */
	time_t		 due;		/* next timed check */
	bool		 pending;	/* another's change: check now */
	bool		 missed;	/* notifications were lost */
	bool		 gate;		/* the HA gate was changed */
	char		 event[640];	/* the first such change */
	char		 what[512];	/* moat's tables differ: the first
					 * difference; "" when they match */
	char		 foreign[512];	/* a table hooked before ours, "" */
	time_t		 verified;	/* last check that could read */
	time_t		 since;		/* what, since */
	uint64_t	 repairs;
	/* The policy a repair could not make the kernel match: applying it
	 * again would change nothing but the sets it empties, so it is not
	 * repaired again until another policy is committed. */
	const struct nftr_ruleset *futile;
	char		 buf[65536];
};

/* Its module state: the watch, or NULL before it starts. */
static struct drift **
drift_slot(const struct gw *gw)
{
	return gw_mod(gw, MOD_DRIFT);
}

static bool
ours(const struct gw *gw, const struct nftr_event *ev)
{
	if (ev->family == NFPROTO_INET && strcmp(ev->table,
	    NFTR_HA_TABLE) == 0)
		return ha_of(gw)->ha_on;
	return (ev->family == NFPROTO_INET || ev->family == NFPROTO_BRIDGE) &&
	    strcmp(ev->table, NFTR_TABLE) == 0;
}

static void
on_readable(struct ev *e, uint32_t events)
{
	struct drift *d = e->arg;

	(void)events;
	drift_readable(d->gw);
}

void
drift_start(struct gw *gw)
{
	struct drift *d = xcalloc(1, sizeof(*d));
	unsigned groups = 1u << (NFNLGRP_NFTABLES - 1);
	int size = DRIFT_RCVBUF;

	(*drift_slot(gw)) = d;
	d->gw = gw;
	d->ev.fd = -1;
	d->self = nftr_portid(gw->nft);
	if ((d->nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) == NULL || mnl_socket_bind(d->nl, groups,
	    MNL_SOCKET_AUTOPID) == -1) {
		log_warn("nf_tables notifications: cannot follow them; drift is "
		    "found by the timed check alone");
		if (d->nl != NULL)
			mnl_socket_close(d->nl);
		d->nl = NULL;
		return;
	}
	/* Root may pass the limit: a ruleset replaced is thousands of
	 * notifications, and an overrun only costs a check. */
	(void)setsockopt(mnl_socket_get_fd(d->nl), SOL_SOCKET, SO_RCVBUFFORCE,
	    &size, sizeof(size));
	if (ev_add(&d->ev, mnl_socket_get_fd(d->nl), EPOLLIN, on_readable,
	    d) == -1)
		log_warn("nf_tables notifications: watching");
}

void
drift_stop(struct gw *gw)
{
	if ((*drift_slot(gw)) == NULL)
		return;
	ev_del(&(*drift_slot(gw))->ev);
	if ((*drift_slot(gw))->nl != NULL)
		mnl_socket_close((*drift_slot(gw))->nl);
	free((*drift_slot(gw)));
	(*drift_slot(gw)) = NULL;
}

/* nftr_verify's diff, kept to its first line; how many lines in *n.
 * 1 drift, 0 none, -1 the kernel could not be read. */
static int
compare(struct gw *gw, char *first, size_t len, size_t *n)
{
	char *text = NULL, *p, *nl;
	size_t tlen = 0;
	FILE *fp;
	int r;

	first[0] = '\0';
	*n = 0;
	if (gw->applied == NULL)
		return 0;
	if ((fp = open_memstream(&text, &tlen)) == NULL)
		fatal("open_memstream");
	r = nftr_verify(gw->nft, gw->applied, fp);
	fclose(fp);
	for (p = text; r == 1 && p != NULL && *p != '\0'; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		if (*n == 0)
			snprintf(first, len, "%s", p);
		++*n;
	}
	free(text);
	return r;
}

static void
repair(struct gw *gw, struct drift *d, const char *object)
{
	char err[512], again[512];
	size_t n;

	if (policy_reapply(gw, err, sizeof(err)) == -1) {
		log_warnx("policy drift: repairing it failed: %s; it stays "
		    "reported", err);
		return;
	}
	if (compare(gw, again, sizeof(again), &n) != 0) {
		log_warnx("policy drift: the policy was applied again but the "
		    "kernel still differs (%s); not repaired again until the "
		    "policy changes", again);
		d->futile = gw->applied;
		return;
	}
	d->repairs++;
	d->what[0] = '\0';
	log_info("policy drift repaired: the committed policy is in the "
	    "kernel again");
	audit_event(gw, "policy-repaired", "object", object, NULL);
}

static void
foreign_check(struct gw *gw, struct drift *d)
{
	char what[sizeof(d->foreign)];
	int n = nftr_foreign_hooks(gw->nft, gw->applied, what, sizeof(what));

	if (n == -1 || strcmp(what, d->foreign) == 0)
		return;
	if (n > 0) {
		log_warnx("policy drift: %s: another table may accept or "
		    "change guests' packets first", what);
		audit_event(gw, "policy-drift", "object", what, "reason",
		    "another table may accept guests' packets first", NULL);
	} else {
		log_info("policy drift: no other table hooks before moat's "
		    "now (was: %s)", d->foreign);
		audit_event(gw, "policy-drift-cleared", "object", d->foreign,
		    NULL);
	}
	snprintf(d->foreign, sizeof(d->foreign), "%s", what);
}

/* The HA gate is not in gw->applied: a change to it is put back by
 * gating again as the role wants. */
static void
gate_check(struct gw *gw, struct drift *d)
{
	if (!d->gate)
		return;
	d->gate = false;
	if (!gw->cfg->gw.verify_repair)
		return;
	if (ha_gate_again(gw) == -1)
		log_warnx("policy drift: the gate of gateway.ha could not be "
		    "put back: %s", nftr_error(gw->nft));
	else
		audit_event(gw, "policy-repaired", "object", "table inet "
		    NFTR_HA_TABLE, NULL);
}

static void
check(struct gw *gw, const char *found)
{
	struct drift *d = (*drift_slot(gw));
	char first[sizeof(d->what)];
	const char *object;
	size_t n;
	int r;

	d->due = time(NULL) + gw->cfg->gw.verify_interval;
	kwatch_check(gw, found);
	r = compare(gw, first, sizeof(first), &n);
	foreign_check(gw, d);
	object = d->event[0] ? d->event : first;
	if (d->event[0] != '\0' || (r == 1 && strcmp(first, d->what) != 0)) {
		log_warnx("policy drift (%s): %s%s%s; %zu line(s) differ from "
		    "the committed policy", found, object, r == 1 && object !=
		    first ? ": " : "", r == 1 && object != first ? first : "",
		    n);
		audit_event(gw, "policy-drift", "object", object, "found",
		    found, "difference", r == 1 ? first : r == 0 ? "none" :
		    "unknown (the tables could not be read)", NULL);
	}
	gate_check(gw, d);
	d->pending = d->missed = false;
	if (r == -1) {
		log_warnx("policy drift: the kernel's tables could not be read: "
		    "%s", nftr_error(gw->nft));
		d->event[0] = '\0';
		return;
	}
	d->verified = time(NULL);
	if (r == 0)
		d->futile = NULL;
	if (r == 0 && d->what[0] != '\0') {
		log_info("policy drift: the kernel matches the committed "
		    "policy again");
		audit_event(gw, "policy-drift-cleared", "object", d->what, NULL);
		d->what[0] = '\0';
	}
	if (r == 1) {
		if (d->what[0] == '\0')
			d->since = time(NULL);
		snprintf(d->what, sizeof(d->what), "%s", first);
		if (gw->cfg->gw.verify_repair && d->futile != gw->applied)
			repair(gw, d, object);
	}
	d->event[0] = '\0';
}

static void
on_event(struct gw *gw, struct drift *d, const struct nlmsghdr *nlh)
{
	struct nftr_event ev;

	if (nftr_event_parse(nlh, nlh->nlmsg_len, &ev) == -1 || ev.gen)
		return;
	/* Our own commit (a reload) may have put back what drifted. */
	if (ev.portid == d->self) {
		if (d->what[0] != '\0' && ours(gw, &ev))
			d->pending = true;
		return;
	}
	if (ev.portid == 0 && strcmp(ev.kind, "element") == 0)
		return;
	if (!ours(gw, &ev)) {
		/* Another table's chain: it may hook before ours. */
		if (strcmp(ev.kind, "chain") == 0 ||
		    strcmp(ev.kind, "table") == 0)
			d->pending = true;
		return;
	}
	if (strcmp(ev.table, NFTR_HA_TABLE) == 0)
		d->gate = true;
	if (d->event[0] == '\0')
		snprintf(d->event, sizeof(d->event), "%s %s %s %s%s%s "
		    "(netlink portid %u)", ev.deleted ? "delete" : "add",
		    ev.kind, nftr_family_name(ev.family), ev.table,
		    ev.name[0] ? " " : "", ev.name, ev.portid);
	d->pending = true;
}

void
drift_readable(struct gw *gw)
{
	struct drift *d = (*drift_slot(gw));
	const struct nlmsghdr *nlh;
	ssize_t n;
	int len;

	for (;;) {
		n = mnl_socket_recvfrom(d->nl, d->buf, sizeof(d->buf));
		if (n == -1 && errno == ENOBUFS) {
			d->missed = true;
			continue;
		}
		if (n == -1 && errno != EAGAIN && errno != EINTR)
			log_warn("nf_tables notifications");
		if (n <= 0)
			break;
		len = (int)n;
		for (nlh = (const struct nlmsghdr *)d->buf; mnl_nlmsg_ok(nlh,
		    len); nlh = mnl_nlmsg_next(nlh, &len))
			on_event(gw, d, nlh);
	}
	if (d->missed)
		check(gw, "notifications lost");
	else if (d->pending)
		check(gw, "notification");
}

/* The interval is read from the configuration in force: a reload that
 * changes it takes effect at the next check (at once if it was off). */
static int
drift_timeout(const struct gw *gw, int timeout)
{
	const struct drift *d = (*drift_slot(gw));
	time_t now = time(NULL);
	int ms;

	if (d == NULL || gw->cfg->gw.verify_interval == 0)
		return timeout;
	ms = d->due <= now ? 0 : (int)(d->due - now) * 1000;
	return timeout == -1 || ms < timeout ? ms : timeout;
}

static void
drift_tick(struct gw *gw)
{
	struct drift *d = (*drift_slot(gw));

	if (d == NULL || gw->cfg->gw.verify_interval == 0 ||
	    time(NULL) < d->due)
		return;
	log_debug("verify: comparing the kernel's tables with the policy "
	    "(timer)");
	check(gw, "timer");
}

void
drift_status(struct ctl_req *r)
{
	const struct drift *d = *drift_slot(r->gw);
	const struct moat_gateway *g = &r->gw->cfg->gw;
	char every[32];
	long long age;

	if (d == NULL)
		return;
	age = d->verified ? (long long)(time(NULL) - d->verified) : -1;
	if (r->json) {
		ctl_reply(r, "\"verify\":{\"interval\":%u,\"repair\":%s,"
		    "\"events\":%s,\"last\":%lld,\"drift\":%s,\"object\":",
		    g->verify_interval, g->verify_repair ? "true" : "false",
		    d->nl ? "true" : "false", (long long)d->verified,
		    d->what[0] || d->foreign[0] ? "true" : "false");
		ctl_reply_jstr(r, d->what[0] ? d->what : NULL);
		ctl_reply(r, ",\"since\":%lld,\"foreign\":", d->what[0] ?
		    (long long)d->since : 0LL);
		ctl_reply_jstr(r, d->foreign[0] ? d->foreign : NULL);
		ctl_reply(r, ",\"repairs\":%llu},",
		    (unsigned long long)d->repairs);
		kwatch_status_json(r);
		return;
	}
	if (g->verify_interval > 0)
		snprintf(every, sizeof(every), "every %us", g->verify_interval);
	else
		snprintf(every, sizeof(every), "timer off");
	if (age >= 0)
		ctl_reply(r, "verify     %s, %llds ago (%s%s, repair %s, %llu "
		    "repaired)\n", d->what[0] || d->foreign[0] ||
		    kwatch_drifting() ? "DRIFT" :
		    "matches the policy", age, every, d->nl ? ", on "
		    "notifications" : "", g->verify_repair ? "on" : "off",
		    (unsigned long long)d->repairs);
	else
		ctl_reply(r, "verify     %s (%s%s)\n", kwatch_drifting() ?
		    "DRIFT beside the tables, not compared yet" : "not yet",
		    every, d->nl ? ", on notifications" : "");
	if (d->what[0])
		ctl_reply(r, "drift      %s (for %llds)\n", d->what,
		    (long long)(time(NULL) - d->since));
	if (d->foreign[0])
		ctl_reply(r, "drift      %s: another table may accept guests' "
		    "packets first\n", d->foreign);
	kwatch_status(r);
}

void
drift_metrics(FILE *fp, const struct gw *gw)
{
	const struct drift *d = (*drift_slot(gw));

	if (d == NULL)
		return;
	fputs("# HELP moat_policy_drift 1 while the kernel's tables differ "
	    "from the committed policy or another table hooks before moat's "
	    "(the object as a label of moat_policy_drift_object).\n"
	    "# TYPE moat_policy_drift gauge\n", fp);
	fprintf(fp, "moat_policy_drift %d\n", d->what[0] || d->foreign[0] ||
	    kwatch_drifting());
	fputs("# HELP moat_policy_drift_object What drifted, one series per "
	    "object; none when nothing did.\n"
	    "# TYPE moat_policy_drift_object gauge\n", fp);
	if (d->what[0]) {
		fputs("moat_policy_drift_object{kind=\"moat\",object=\"", fp);
		metrics_lvalue(fp, d->what);
		fputs("\"} 1\n", fp);
	}
	if (d->foreign[0]) {
		fputs("moat_policy_drift_object{kind=\"foreign\",object=\"", fp);
		metrics_lvalue(fp, d->foreign);
		fputs("\"} 1\n", fp);
	}
	kwatch_metrics_objects(fp);
	fprintf(fp, "# HELP moat_policy_verified_timestamp_seconds When the "
	    "kernel's tables were last compared with the policy (0: never).\n"
	    "# TYPE moat_policy_verified_timestamp_seconds gauge\n"
	    "moat_policy_verified_timestamp_seconds %lld\n"
	    "# HELP moat_policy_repairs_total Drifts repaired by applying the "
	    "policy again.\n# TYPE moat_policy_repairs_total counter\n"
	    "moat_policy_repairs_total %llu\n", (long long)d->verified,
	    (unsigned long long)d->repairs);
}

static int
drift_start_mod(struct gw *gw)
{
	drift_start(gw);
	return 0;
}

static uint64_t
drift_due(const struct gw *gw)
{
	int ms = drift_timeout(gw, -1);

	return gw_due_in(ms);
}

const struct gw_module drift_module = {
	.name = "drift",
	.size = sizeof(struct drift *),
	.start = drift_start_mod,
	.stop = drift_stop,
	.due = drift_due,
	.timer = drift_tick,
	.status = drift_status,
	.metrics = drift_metrics,
};
