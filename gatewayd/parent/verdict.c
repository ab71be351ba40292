/*
 * parent_verdict.c -- what each guest says of its own containment, and
 * the quarantine of a guest that reports a breach.
 *
 * A guest runs containment-check at first boot and then on a timer, and
 * prints its verdict on its serial console.  The console's reader (an
 * unprivileged process per guest, see provision) parses those lines and
 * keeps a fixed record, guests/NAME/verdict.rec under gateway.state_dir:
 * the latest verdict, the host's time of it, and the lines it refused.
 * The parent reads only that record (its size, magic and ranges checked),
 * never the console's text.  A record that is not one is counted.
 *
 * Every new verdict is audited.  NOT CONTAINED is logged as an alert and,
 * for a sandbox with quarantine_on_breach, the sandbox is quarantined: its
 * egress is "none" in every configuration the parent applies from then
 * on, through the one reload path (the policy, cut flows, dnsd and the
 * proxy alike), until an admin runs `ctl clear-quarantine NAME`.  The
 * quarantine list and what was already acted on are kept in
 * guest-verdicts under gateway.state_dir, so a restart changes neither.
 *
 * A guest's verdict is its own claim: "contained" says that the check
 * inside ran and found nothing, as far as the guest can be trusted; a
 * guest that says NOT CONTAINED can only have itself quarantined.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gw.h"
#include "audit.h"
#include "commit.h"
#include "ctl.h"
#include "ha.h"
#include "ipc.h"
#include "reload.h"
#include "log.h"
#include "verdict.h"
#include "verdicts.h"

#define VERDICT_POLL_S	5		/* how often the records are read */
#define VERDICT_STATE	"guest-verdicts"

struct gv {
	char		 name[64];
	struct verdict_rec rec;		/* the last valid record read */
	bool		 have;
	bool		 bad;		/* its record is not one (counted) */
	int64_t		 acted;		/* the time of the verdict acted on */
	uint32_t	 rejected;	/* refused lines already audited */
	bool		 quarantined;
	bool		 q_peer;	/* by the other box of a pair only */
	int64_t		 q_since;
};

static struct {
	struct gv	*v;
	size_t		 n;
	time_t		 due;
	uint64_t	 invalid;	/* records that were not one */
	bool		 reload;	/* a quarantine change waits for it */
	char		*state_dir;
} V;

static const char *const rej_names[] = { "forged", "overlong", "escaped" };

static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < sizeof(((struct gv *)0)->name) &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

static struct gv *
gv_find(const char *name)
{
	size_t i;

	for (i = 0; i < V.n; i++)
		if (strcmp(V.v[i].name, name) == 0)
			return &V.v[i];
	return NULL;
}

static struct gv *
gv_get(const char *name)
{
	struct gv *g = gv_find(name);

	if (g != NULL || !name_ok(name))
		return g;
	V.v = xreallocarray(V.v, V.n + 1, sizeof(*V.v));
	g = &V.v[V.n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	return g;
}

/* --- the state file ------------------------------------------------------ */

/* "NAME QUARANTINED ACTED REJECTED SINCE", numbers in decimal
 * (QUARANTINED: 0 no, 1 yes, 2 yes, by the other box of the pair);
 * written by this process only, and still checked field by field. */
static int
state_line(char *line)
{
	char *f[5], *save = NULL, *end;
	long long v[4];
	struct gv *g;
	int i;

	for (i = 0; i < 5; i++)
		if ((f[i] = strtok_r(i ? NULL : line, " \n", &save)) == NULL)
			return -1;
	if (strtok_r(NULL, " \n", &save) != NULL || !name_ok(f[0]))
		return -1;
	for (i = 0; i < 4; i++) {
		errno = 0;
		v[i] = strtoll(f[i + 1], &end, 10);
		if (errno != 0 || *end != '\0' || v[i] < 0)
			return -1;
	}
	if ((g = gv_get(f[0])) == NULL || v[0] > 2 || v[2] > UINT32_MAX)
		return -1;
	g->quarantined = v[0] >= 1;
	g->q_peer = v[0] == 2;
	g->acted = v[1];
	g->rejected = (uint32_t)v[2];
	g->q_since = v[3];
	return 0;
}

static void
state_load(void)
{
	char *path, line[256];
	FILE *f;
	int n = 0;

	xasprintf(&path, "%s/%s", V.state_dir, VERDICT_STATE);
	if ((f = fopen(path, "re")) == NULL) {
		if (errno != ENOENT)
			log_warn("%s", path);
		free(path);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL)
		if (++n > 100000 || state_line(line) == -1) {
			log_warnx("%s:%d: not a guest verdict state line; "
			    "the rest is ignored", path, n);
			break;
		}
	fclose(f);
	free(path);
}

static void
state_save(void)
{
	char *path, *tmp;
	size_t i;
	FILE *f;
	int fd;

	xasprintf(&path, "%s/%s", V.state_dir, VERDICT_STATE);
	xasprintf(&tmp, "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		log_warn("%s", tmp);
		if (fd != -1)
			close(fd);
		goto out;
	}
	for (i = 0; i < V.n; i++)
		fprintf(f, "%s %d %lld %u %lld\n", V.v[i].name,
		    V.v[i].quarantined ? V.v[i].q_peer ? 2 : 1 : 0,
		    (long long)V.v[i].acted,
		    V.v[i].rejected, (long long)V.v[i].q_since);
	if (fflush(f) == EOF || fsync(fileno(f)) == -1) {
		log_warn("%s", tmp);
		fclose(f);
		unlink(tmp);
		goto out;
	}
	fclose(f);
	if (rename(tmp, path) == -1) {
		log_warn("rename %s", tmp);
		unlink(tmp);
	}
out:
	free(path);
	free(tmp);
}

/* --- reading and acting --------------------------------------------------- */

void
verdicts_start(struct gw *gw)
{
	free(V.state_dir);
	V.state_dir = xstrdup(gw->cfg->gw.state_dir);
	state_load();
	V.due = 0;
}

static bool
is_quarantined(const char *name)
{
	struct gv *g = gv_find(name);

	return g != NULL && g->quarantined;
}

/* An exception that names a quarantined sandbox: the configuration the
 * children load refuses an exception for a sandbox at egress "none", so
 * the view gets a copy of the exceptions without those names (one left
 * naming no sandbox is left out: it would apply to none).  The names
 * are the file's, shared. */
static void
overlay_exceptions(struct moat_config *cfg)
{
	struct moat_exception *v;
	size_t i, j, n = 0;
	bool any = false;

	for (i = 0; i < cfg->gw.nexceptions && !any; i++)
		for (j = 0; j < cfg->gw.exceptions[i].sandboxes.n && !any; j++)
			any = is_quarantined(cfg->gw.exceptions[i].sandboxes.v[j]);
	if (!any)
		return;
	v = xcalloc(cfg->gw.nexceptions, sizeof(*v));
	for (i = 0; i < cfg->gw.nexceptions; i++) {
		struct moat_exception x = cfg->gw.exceptions[i];

		if (x.sandboxes_given) {
			x.sandboxes.v = xcalloc(x.sandboxes.n + 1,
			    sizeof(*x.sandboxes.v));
			x.sandboxes.n = 0;
			for (j = 0; j < cfg->gw.exceptions[i].sandboxes.n; j++)
				if (!is_quarantined(cfg->gw.exceptions[i].
				    sandboxes.v[j]))
					x.sandboxes.v[x.sandboxes.n++] =
					    cfg->gw.exceptions[i].sandboxes.v[j];
			if (x.sandboxes.n == 0) {
				free(x.sandboxes.v);
				continue;
			}
		}
		v[n++] = x;
	}
	cfg->gw.exceptions = v;
	cfg->gw.nexceptions = n;
}

void
verdicts_overlay_free(struct moat_config *cfg, const struct moat_config *file)
{
	size_t i;

	if (cfg->gw.exceptions == file->gw.exceptions)
		return;
	for (i = 0; i < cfg->gw.nexceptions; i++)
		if (cfg->gw.exceptions[i].sandboxes_given)
			free(cfg->gw.exceptions[i].sandboxes.v);
	free(cfg->gw.exceptions);
}

void
verdicts_overlay(struct moat_config *cfg)
{
	struct gv *g;
	size_t i;

	overlay_exceptions(cfg);

	/* Its allow list goes with its allowlist mode: the configuration
	 * the children are sent must load, and allow applies only with
	 * egress "allowlist".  The list is the file's, still shared. */
	for (i = 0; i < cfg->nsandboxes; i++)
		if ((g = gv_find(cfg->sandboxes[i].name)) != NULL &&
		    g->quarantined) {
			cfg->sandboxes[i].egress = EGRESS_NONE;
			cfg->sandboxes[i].allow.v = NULL;
			cfg->sandboxes[i].allow.n = 0;
		}
}

static uint32_t
rejected_sum(const struct verdict_rec *r)
{
	return r->rejected[0] + r->rejected[1] + r->rejected[2];
}

/* The record of one guest: 1 read, 0 none (yet), -1 not a record. */
static int
record_read(const char *name, struct verdict_rec *rec)
{
	struct stat st;
	char *path;
	int rc;

	xasprintf(&path, "%s/guests/%s/verdict.rec", V.state_dir, name);
	if (lstat(path, &st) == -1 && errno == ENOENT)
		rc = 0;
	else
		rc = verdict_rec_read(path, rec) == 0 ? 1 : -1;
	free(path);
	return rc;
}

static void
act_rejected(struct gw *gw, struct gv *g)
{
	char c[3][16];
	int i;

	for (i = 0; i < 3; i++)
		snprintf(c[i], sizeof(c[i]), "%u", g->rec.rejected[i]);
	log_warnx("guest %s: %u console line(s) refused as verdicts so far "
	    "(forged %s, overlong %s, escaped %s)", g->name,
	    rejected_sum(&g->rec), c[0], c[1], c[2]);
	audit_event(gw, "guest-verdict-refused", "sandbox", g->name,
	    "forged", c[0], "overlong", c[1], "escaped", c[2], NULL);
	g->rejected = rejected_sum(&g->rec);
}

/* To the other box of a pair, master or backup: this box quarantined
 * the sandbox, or holds no quarantine of its own for it. */
static void
forward(struct gw *gw, const char *name, bool on)
{
	struct ipc_ha_quarantine m;

	memset(&m, 0, sizeof(m));
	if (strlen(name) >= sizeof(m.sandbox))
		return;		/* not a configured sandbox's name */
	memcpy(m.sandbox, name, strlen(name));
	m.on = on;
	harepl_forward_any(gw, IPC_HA_QUARANTINE, &m, sizeof(m));
}

static void
act_verdict(struct gw *gw, const struct moat_sandbox *sb, struct gv *g)
{
	const char *w = verdict_word((enum verdict)g->rec.verdict);
	char at[24];

	snprintf(at, sizeof(at), "%lld", (long long)g->rec.at);
	g->acted = g->rec.at;
	audit_event(gw, "guest-verdict", "sandbox", g->name, "verdict", w,
	    "at", at, NULL);
	if (g->rec.verdict != VERDICT_NOT_CONTAINED) {
		log_info("guest %s reports: %s", g->name, w);
		return;
	}
	log_warnx("ALERT: guest %s reports NOT CONTAINED: its own "
	    "containment-check found a way out (see its console log)%s",
	    g->name, sb->quarantine_on_breach ? g->quarantined ?
	    "; it is quarantined already" : "; quarantining it (egress "
	    "\"none\")" : "");
	if (!sb->quarantine_on_breach || (g->quarantined && !g->q_peer))
		return;
	if (!g->quarantined)
		g->q_since = (int64_t)time(NULL);
	g->quarantined = true;
	g->q_peer = false;	/* now this box's own */
	audit_event(gw, "quarantine", "sandbox", g->name, "reason",
	    "guest reported NOT CONTAINED", "egress", "none", NULL);
	forward(gw, g->name, true);
	V.reload = true;
}

/* A quarantine (or its end) is a change of the policy in force: the
 * files with the quarantines and then the grants over them (gw_commit). */
static void
apply_reload(struct gw *gw)
{
	struct gw_commit c = { .why = "quarantine" };
	char err[512];

	if (gw_commit(gw, NULL, &c, err, sizeof(err)) == 0)
		V.reload = false;
	else
		log_warnx("ALERT: a guest's quarantine waits: the kernel "
		    "refused the change (%s); trying again in %d s", err,
		    VERDICT_POLL_S);
}

static void
tick_one(struct gw *gw, const struct moat_sandbox *sb, bool *dirty)
{
	struct verdict_rec rec;
	struct gv *g;
	int r;

	if ((g = gv_get(sb->name)) == NULL)
		return;
	if ((r = record_read(sb->name, &rec)) == -1) {
		if (!g->bad) {
			V.invalid++;
			log_warnx("guest %s: its verdict record is not one; "
			    "ignored", sb->name);
		}
		g->bad = true;
		return;
	}
	g->bad = false;
	if (r == 0)
		return;
	g->rec = rec;
	g->have = true;
	if (rejected_sum(&rec) != g->rejected) {
		if (rejected_sum(&rec) > g->rejected)
			act_rejected(gw, g);
		g->rejected = rejected_sum(&rec);
		*dirty = true;
	}
	if (rec.verdict != VERDICT_NONE && rec.at != g->acted) {
		act_verdict(gw, sb, g);
		*dirty = true;
	}
}

int
verdicts_timeout(int timeout)
{
	time_t now = time(NULL);
	int ms = V.due <= now ? 0 : (int)(V.due - now) * 1000;

	if (V.state_dir == NULL)
		return timeout;
	return timeout == -1 || ms < timeout ? ms : timeout;
}

void
verdicts_tick(struct gw *gw)
{
	time_t now = time(NULL);
	bool dirty = false;
	size_t i;

	if (V.state_dir == NULL || now < V.due)
		return;
	V.due = now + VERDICT_POLL_S;
	for (i = 0; i < gw->cfg->nsandboxes; i++)
		tick_one(gw, &gw->cfg->sandboxes[i], &dirty);
	if (dirty)
		state_save();
	if (V.reload)
		apply_reload(gw);
}

/* --- what is shown --------------------------------------------------------- */

void
verdicts_sandbox(struct ctl_req *r, const char *sandbox)
{
	const struct gv *g = gv_find(sandbox);
	bool have = g != NULL && g->have && g->rec.verdict != VERDICT_NONE;
	long long age = have ? (long long)time(NULL) - g->rec.at : 0;

	if (r->json) {
		ctl_reply(r, ",\"verdict\":");
		ctl_reply_jstr(r, have ? verdict_word((enum verdict)
		    g->rec.verdict) : NULL);
		if (have)
			ctl_reply(r, ",\"verdict_at\":%lld,\"verdict_age\":%lld",
			    (long long)g->rec.at, age);
		else
			ctl_reply(r, ",\"verdict_at\":null,\"verdict_age\":null");
		ctl_reply(r, ",\"quarantined\":%s", g != NULL &&
		    g->quarantined ? "true" : "false");
		return;
	}
	if (have)
		ctl_reply(r, ", verdict %s %llds ago", verdict_word(
		    (enum verdict)g->rec.verdict), age);
	if (g != NULL && g->quarantined)
		ctl_reply(r, ", QUARANTINED%s", g->q_peer ? " (by the other "
		    "box)" : "");
}

void
verdicts_status(struct ctl_req *r)
{
	const struct gv *old = NULL;
	size_t i, n = 0, nq = 0;

	for (i = 0; i < V.n; i++) {
		const struct gv *g = &V.v[i];
		const struct moat_sandbox *sb =
		    config_sandbox_by_name(r->gw->cfg, g->name);

		/* A member counts only their own sandboxes' guests. */
		if (sb == NULL || !ctl_may_see(r, sb->owner))
			continue;
		nq += g->quarantined;
		if (!g->have || g->rec.verdict == VERDICT_NONE)
			continue;
		n++;
		if (old == NULL || g->rec.at < old->rec.at)
			old = g;
	}
	if (r->json) {
		ctl_reply(r, "\"guests\":{\"verdicts\":%zu,\"oldest\":", n);
		ctl_reply_jstr(r, old ? old->name : NULL);
		if (old != NULL)
			ctl_reply(r, ",\"oldest_age\":%lld", (long long)time(NULL) -
			    old->rec.at);
		else
			ctl_reply(r, ",\"oldest_age\":null");
		ctl_reply(r, ",\"quarantined\":%zu,\"invalid_records\":%llu},",
		    nq, (unsigned long long)V.invalid);
		return;
	}
	if (old != NULL)
		ctl_reply(r, "guests     %zu with a verdict, the oldest %llds "
		    "ago (%s), %zu quarantined\n", n, (long long)time(NULL) -
		    old->rec.at, old->name, nq);
	else
		ctl_reply(r, "guests     no verdict yet, %zu quarantined\n", nq);
}

/* contained 1, NOT CONTAINED 0, error -1: an alert on "< 1" sees both. */
static int
verdict_value(uint32_t v)
{
	return v == VERDICT_CONTAINED ? 1 : v == VERDICT_NOT_CONTAINED ? 0 :
	    -1;
}

void
verdicts_metrics(FILE *fp, const struct gw *gw)
{
	time_t now = time(NULL);
	const struct gv *g;
	size_t i;
	int k;

	fputs("# HELP moat_guest_verdict Each guest's latest verdict on its "
	    "own containment: 1 contained, 0 NOT CONTAINED, -1 the check "
	    "failed.\n# TYPE moat_guest_verdict gauge\n", fp);
	for (i = 0; i < V.n; i++)
		if ((g = &V.v[i])->have && g->rec.verdict != VERDICT_NONE &&
		    config_sandbox_by_name(gw->cfg, g->name) != NULL)
			fprintf(fp, "moat_guest_verdict{sandbox=\"%s\"} %d\n",
			    g->name, verdict_value(g->rec.verdict));
	fputs("# HELP moat_guest_verdict_age_seconds Seconds since each "
	    "guest last reported a verdict.\n"
	    "# TYPE moat_guest_verdict_age_seconds gauge\n", fp);
	for (i = 0; i < V.n; i++)
		if ((g = &V.v[i])->have && g->rec.verdict != VERDICT_NONE &&
		    config_sandbox_by_name(gw->cfg, g->name) != NULL)
			fprintf(fp, "moat_guest_verdict_age_seconds{sandbox="
			    "\"%s\"} %lld\n", g->name, (long long)(now -
			    g->rec.at));
	fputs("# HELP moat_guest_quarantined 1 while a guest is quarantined "
	    "after reporting NOT CONTAINED.\n"
	    "# TYPE moat_guest_quarantined gauge\n", fp);
	for (i = 0; i < V.n; i++)
		if (config_sandbox_by_name(gw->cfg, V.v[i].name) != NULL)
			fprintf(fp, "moat_guest_quarantined{sandbox=\"%s\"} "
			    "%d\n", V.v[i].name, V.v[i].quarantined);
	fputs("# HELP moat_guest_verdict_lines_refused_total Console lines "
	    "that carried the verdict tag and were refused, by reason.\n"
	    "# TYPE moat_guest_verdict_lines_refused_total counter\n", fp);
	for (i = 0; i < V.n; i++)
		if ((g = &V.v[i])->have &&
		    config_sandbox_by_name(gw->cfg, g->name) != NULL)
			for (k = 0; k < 3; k++)
				fprintf(fp, "moat_guest_verdict_lines_refused_total"
				    "{sandbox=\"%s\",reason=\"%s\"} %u\n",
				    g->name, rej_names[k], g->rec.rejected[k]);
	fputs("# HELP moat_guest_verdict_records_invalid_total Verdict records "
	    "that were not one (size, magic or range).\n"
	    "# TYPE moat_guest_verdict_records_invalid_total counter\n", fp);
	fprintf(fp, "moat_guest_verdict_records_invalid_total %llu\n",
	    (unsigned long long)V.invalid);
}

void
ctl_clear_quarantine(struct ctl_req *r)
{
	struct gw_commit c = { .why = "clear-quarantine" };
	struct gv *g;
	char err[512];

	if (r->argc != 2 || !name_ok(r->argv[1])) {
		ctl_reply(r, "error: usage: clear-quarantine SANDBOX\n");
		return;
	}
	if ((g = gv_find(r->argv[1])) == NULL || !g->quarantined) {
		ctl_reply(r, "error: %s is not quarantined; nothing changed\n",
		    r->argv[1]);
		return;
	}
	g->quarantined = false;
	g->q_peer = false;
	state_save();
	audit_event(r->gw, "quarantine-cleared", "sandbox", g->name, "by",
	    r->user, NULL);
	forward(r->gw, g->name, false);
	log_info("quarantine of %s cleared by %s", g->name, r->user);
	if (gw_commit(r->gw, NULL, &c, err, sizeof(err)) == 0) {
		ctl_reply(r, "quarantine of %s cleared: its egress is the "
		    "configuration's again\nok\n", g->name);
		return;
	}
	ctl_reply(r, "error: quarantine of %s cleared, but the kernel refused "
	    "the change (%s): it keeps egress \"none\" until a reload "
	    "succeeds\n", g->name, err);
}

/*
 * The other box of a pair quarantined a sandbox (on), or holds no
 * quarantine of its own for it (off).  On narrows and is always taken; off
 * ends only a quarantine that came from there, never one of this box's
 * own: the other box can add a quarantine here, not lift one.
 */
int
verdicts_peer(struct gw *gw, const char *name, bool on, const char **why)
{
	struct gw_commit c = { .why = on ? "quarantine" : "clear-quarantine",
	    .from_peer = true };
	char err[512];
	struct gv *g;

	if (V.state_dir == NULL) {
		*why = "this box keeps no guest verdicts";
		return -1;
	}
	if (!name_ok(name) || (g = gv_get(name)) == NULL) {
		*why = "not a sandbox name";
		return -1;
	}
	if (on == g->quarantined && (on || !g->q_peer))
		return 0;		/* nothing changes */
	if (!on && !g->q_peer)
		return 0;		/* ours: it stays */
	if (on) {
		g->quarantined = g->q_peer = true;
		g->q_since = (int64_t)time(NULL);
		log_warnx("ALERT: sandbox %s quarantined by the other box of the "
		    "pair (egress \"none\")", name);
		audit_event(gw, "quarantine", "sandbox", name, "reason",
		    "the other box quarantined it", "egress", "none", NULL);
	} else {
		g->quarantined = g->q_peer = false;
		log_info("quarantine of %s ended by the other box of the pair",
		    name);
		audit_event(gw, "quarantine-cleared", "sandbox", name, "by",
		    "ha-peer", NULL);
	}
	state_save();
	if (gw_commit(gw, NULL, &c, err, sizeof(err)) == -1) {
		log_warnx("ALERT: a quarantine from the other box waits: the "
		    "kernel refused the change (%s); trying again in %d s", err,
		    VERDICT_POLL_S);
		V.reload = true;
	}
	return 0;
}

void
verdicts_snapshot(struct gw *gw)
{
	const struct gv *g;
	size_t i;

	if (V.state_dir == NULL)
		return;
	for (i = 0; i < gw->cfg->nsandboxes; i++) {
		g = gv_find(gw->cfg->sandboxes[i].name);
		forward(gw, gw->cfg->sandboxes[i].name, g != NULL &&
		    g->quarantined && !g->q_peer);
	}
}

void
verdicts_stop_all(void)
{
	free(V.v);
	free(V.state_dir);
	memset(&V, 0, sizeof(V));
}

static void
verdicts_mod_stop(struct gw *gw)
{
	(void)gw;
	verdicts_stop_all();
}

/* The guests' records are read every few seconds. */
static uint64_t
verdicts_due(const struct gw *gw)
{
	int ms = verdicts_timeout(-1);

	(void)gw;
	return gw_due_in(ms);
}

const struct gw_module verdicts_module = {
	.name = "verdicts",
	.size = sizeof(char),
	.stop = verdicts_mod_stop,
	.due = verdicts_due,
	.timer = verdicts_tick,
	.status = verdicts_status,
	.metrics = verdicts_metrics,
};
