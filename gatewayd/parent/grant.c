/*
 * parent/grant.c -- `gatewayd ctl allow SANDBOX NAME... [--for DURATION]
 * [--ports tcp/22,...]` and `gatewayd ctl unallow SANDBOX NAME...`.
 *
 * A grant changes one sandbox's allow list in the configuration in force,
 * in place, and dnsd and every proxy worker take the new list in place
 * (proc_reload_sandboxes: each gets that sandbox's list alone): nothing
 * is restarted and no other sandbox is touched.  Widening asks nothing of
 * the kernel: the sandbox's sets fill as dnsd answers the new names.
 * Narrowing (unallow, a grant that expires) empties the sandbox's sets
 * (allow_ and allowp_), as a reload that narrows does, and the proxy cuts
 * the sandbox's connections to names no longer allowed; the next answer of
 * each name still allowed puts its addresses back.
 *
 * A grant --ports opens the names' addresses for exactly those ports
 * instead of the sandbox's allow_ports: the entry "NAME:tcp/22" (moat.conf(5)),
 * in memory or in the file alike.  `unallow NAME` takes every entry of
 * the name, whatever its ports.
 *
 * A grant --for lives in memory only and is laid over every configuration
 * loaded until it expires.  A grant for good is written to the sandbox's
 * drop-in first, and kept only if the whole configuration loads and the
 * gateway applies it.
 *
 * Who: root and gateway.admin_group grant anything; a member grants on
 * their own sandboxes only what gateway.member_allow covers, and may take
 * back any grant of their own sandboxes.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cfgtxn.h"
#include "confpath.h"
#include "conftext.h"
#include "gw.h"
#include "commit.h"
#include "reload.h"
#include "proc.h"
#include "audit.h"
#include "ctl.h"
#include "policy.h"
#include "refused.h"
#include "grant.h"
#include "ha.h"
#include "json.h"
#include "log.h"
#include "smallfile.h"

#define DROPIN_MAX	(64 * 1024)

struct grant_req {
	const struct moat_sandbox *sb;	/* in gw->cfg: found again after a
					   commit (regrab), which frees it */
	char		 sbname[IPC_NAME_LEN];
	struct moat_sandbox gone;	/* sb, if a commit took it away */
	char		*names[IPC_CTL_MAX_ARGS];	/* normalised, ours */
	size_t		 n;
	long		 secs;		/* 0: for good */
	char		 secsbuf[24];	/* as given, for messages */
	char		*lists[IPC_CTL_MAX_ARGS];	/* "@NAME" as given */
	size_t		 nlists;
	size_t		 listed[IPC_CTL_MAX_ARGS];	/* names[i] from
					   lists[listed[i] - 1], or 0 */
	struct moat_port ports[MOAT_NAME_PORTS_MAX];	/* --ports */
	size_t		 nports;
	char		 portsbuf[MOAT_NAME_PORTS_MAX * 10 + 1];
};

static void
req_free(struct grant_req *g)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		free(g->names[i]);
	for (i = 0; i < g->nlists; i++)
		free(g->lists[i]);
	g->n = g->nlists = 0;
}

/* g->sb again, in the policy a commit just put in force. */
static void
regrab(struct gw *gw, struct grant_req *g)
{
	g->sb = config_sandbox_by_name(gw->cfg, g->sbname);
	if (g->sb != NULL)
		return;
	memset(&g->gone, 0, sizeof(g->gone));
	g->gone.name = g->sbname;
	g->gone.egress = EGRESS_ALLOWLIST;
	g->sb = &g->gone;
}

/* --- the allow list in force ------------------------------------------- */

static void
list_add(struct moat_strlist *l, const char *name)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = xstrdup(name);
}

/* --- grants for a while ---------------------------------------------------- */

static void	grant_forward(struct gw *, const char *, const char *, uint32_t);

static size_t
grants_of(const struct gw *gw, const char *sandbox)
{
	size_t i, n = 0;

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++)
		n += strcmp(grants_of_gw(gw)->grants[i].sandbox, sandbox) == 0;
	return n;
}

/* The grant of name given as from ("@LIST" or ""); from NULL: any. */
static struct gw_grant *
grant_find(struct gw *gw, const char *sandbox, const char *name,
    const char *from)
{
	size_t i;

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++)
		if (strcmp(grants_of_gw(gw)->grants[i].sandbox, sandbox) == 0 &&
		    strcmp(grants_of_gw(gw)->grants[i].name, name) == 0 && (from == NULL ||
		    strcmp(grants_of_gw(gw)->grants[i].from, from) == 0))
			return &grants_of_gw(gw)->grants[i];
	return NULL;
}

/* A grant of name, with or without ports of its own. */
static struct gw_grant *
grant_of_name(struct gw *gw, const char *sandbox, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++)
		if (strcmp(grants_of_gw(gw)->grants[i].sandbox, sandbox) == 0 &&
		    config_allow_namelen(grants_of_gw(gw)->grants[i].name) == n &&
		    strncmp(grants_of_gw(gw)->grants[i].name, name, n) == 0)
			return &grants_of_gw(gw)->grants[i];
	return NULL;
}

static void
grant_drop(struct gw *gw, struct gw_grant *x)
{
	size_t i = (size_t)(x - grants_of_gw(gw)->grants);

	free(x->name);
	memmove(&grants_of_gw(gw)->grants[i], &grants_of_gw(gw)->grants[i + 1], (grants_of_gw(gw)->ngrants - i - 1) *
	    sizeof(*grants_of_gw(gw)->grants));
	grants_of_gw(gw)->ngrants--;
}

/* --- grants for good, as ctl grants shows them ------------------------------ */

/*
 * What `allow` wrote to a sandbox's file since gatewayd started, with who
 * and when, for ctl grants only: the file is what grants.  A record goes
 * when unallow takes its entry out, or a reload finds the sandbox or the
 * name gone from it.
 */
struct kept {
	char		 sandbox[IPC_NAME_LEN];
	char		*entry;		/* as written: "NAME[:PORTS]" or "@LIST" */
	char		 by[33];
	uid_t		 uid;
	time_t		 since;
};
static struct kept *kept;
static size_t nkept;

static void
kept_drop(size_t i)
{
	free(kept[i].entry);
	memmove(&kept[i], &kept[i + 1], (nkept - i - 1) * sizeof(*kept));
	nkept--;
}

static void
kept_add(const struct ctl_req *r, const char *sandbox, const char *entry)
{
	struct kept *k;
	size_t i;

	for (i = 0; i < nkept; i++)
		if (strcmp(kept[i].sandbox, sandbox) == 0 &&
		    strcmp(kept[i].entry, entry) == 0)
			kept_drop(i);
	if (nkept >= GW_GRANTS_MAX)	/* bounded: the oldest goes */
		kept_drop(0);
	kept = xreallocarray(kept, nkept + 1, sizeof(*kept));
	k = &kept[nkept++];
	memset(k, 0, sizeof(*k));
	snprintf(k->sandbox, sizeof(k->sandbox), "%s", sandbox);
	k->entry = xstrdup(entry);
	snprintf(k->by, sizeof(k->by), "%s", r->user);
	k->uid = r->uid;
	k->since = time(NULL);
}

/* unallow took these out of sandbox's file: the first nnamed names with
 * whatever ports of their own, the rest lists as named. */
static void
kept_forget(const char *sandbox, const char *const *del, size_t ndel,
    size_t nnamed)
{
	size_t i = 0, j, n;
	bool went;

	while (i < nkept) {
		for (j = 0, went = false; j < ndel && !went &&
		    strcmp(kept[i].sandbox, sandbox) == 0; j++) {
			n = config_allow_namelen(del[j]);
			went = j < nnamed ? config_allow_namelen(kept[i].entry) ==
			    n && strncmp(kept[i].entry, del[j], n) == 0 :
			    strcmp(kept[i].entry, del[j]) == 0;
		}
		if (went)
			kept_drop(i);
		else
			i++;
	}
}

/* After a reload: records of sandboxes gone, or of names their files no
 * longer have (a list's entry is not in the loaded list: it stays). */
static void
kept_prune(const struct moat_config *cfg)
{
	const struct moat_sandbox *sb;
	size_t i = 0;

	while (i < nkept) {
		sb = config_sandbox_by_name(cfg, kept[i].sandbox);
		if (sb == NULL || sb->egress != EGRESS_ALLOWLIST ||
		    (kept[i].entry[0] != '@' &&
		    !config_strlist_has(&sb->allow, kept[i].entry)))
			kept_drop(i);
		else
			i++;
	}
}

/* The allow list of e's sandbox i with the names of its grants for a
 * while added, e's own from here on. */
static void
lay_over_one(struct gw *gw, struct moat_sandbox *sb)
{
	struct moat_strlist l = { NULL, 0 };
	size_t i;

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++) {
		const struct gw_grant *x = &grants_of_gw(gw)->grants[i];

		if (strcmp(x->sandbox, sb->name) != 0 ||
		    config_strlist_has(&sb->allow, x->name) ||
		    config_strlist_has(&l, x->name))
			continue;
		if (l.v == NULL)
			for (size_t j = 0; j < sb->allow.n; j++)
				list_add(&l, sb->allow.v[j]);
		list_add(&l, x->name);
	}
	if (l.v != NULL)
		sb->allow = l;
}

void
grants_lay_over(struct gw *gw, struct moat_config *e)
{
	size_t i;

	if (grants_of_gw(gw)->ngrants == 0)
		return;
	for (i = 0; i < e->nsandboxes; i++)
		if (e->sandboxes[i].egress == EGRESS_ALLOWLIST)
			lay_over_one(gw, &e->sandboxes[i]);
}

/* A grant ends with its sandbox, or with its allowlist mode. */
static void
grants_on_commit(struct gw *gw, const struct gw_commit *c)
{
	const struct moat_sandbox *sb;
	size_t i = 0;

	while (i < grants_of_gw(gw)->ngrants) {
		struct gw_grant *x = &grants_of_gw(gw)->grants[i];

		sb = config_sandbox_by_name(c->new, x->sandbox);
		if (sb != NULL && sb->egress == EGRESS_ALLOWLIST) {
			i++;
			continue;
		}
		log_info("grant of %s to %s ends: the sandbox is gone or no "
		    "longer in allowlist mode", x->name, x->sandbox);
		grant_drop(gw, x);
	}
	kept_prune(gw->file);
}

/* Put the grants as they are now in force (gw_commit); a refusal is
 * logged, and the grants are tried again at the next commit. */
static int
grants_commit(struct gw *gw, const char *why, bool from_peer)
{
	struct gw_commit c = { .why = why, .from_peer = from_peer };
	char err[512];

	if (gw_commit(gw, NULL, &c, err, sizeof(err)) == 0) {
		grants_of_gw(gw)->retry = false;
		return 0;
	}
	/* An ended grant must not stay open: tried again every second
	 * until the kernel takes it. */
	log_warnx("%s: the kernel refused the change: %s; the policy in "
	    "force stays, and the change is tried again", why, err);
	grants_of_gw(gw)->retry = true;
	return -1;
}

static int
grants_timeout(const struct gw *gw, int timeout)
{
	uint64_t now = gw_mono_ms(), next = UINT64_MAX;
	size_t i;

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++)
		if (grants_of_gw(gw)->grants[i].until_ms < next)
			next = grants_of_gw(gw)->grants[i].until_ms;
	if (next == UINT64_MAX)
		return timeout;
	next = next <= now ? 0 : next - now;
	if (timeout >= 0 && (uint64_t)timeout < next)
		return timeout;
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

static void
grants_tick(struct gw *gw)
{
	uint64_t now = gw_mono_ms();
	size_t i = 0;
	bool any = false;

	while (i < grants_of_gw(gw)->ngrants) {
		struct gw_grant *x = &grants_of_gw(gw)->grants[i];

		if (x->until_ms > now) {
			i++;
			continue;
		}
		audit_event(gw, "grant-expired", "sandbox", x->sandbox, "name",
		    x->name, "by", x->by, NULL);
		log_info("grant of %s to %s expired", x->name, x->sandbox);
		grant_drop(gw, x);
		any = true;
	}
	/* What the grants opened and nothing else holds closes, and its
	 * flows are cut (gw_commit). */
	if (any || grants_of_gw(gw)->retry)
		(void)grants_commit(gw, "grant-expired", false);
}
void
grants_free(struct gw *gw)
{
	size_t i;

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++)
		free(grants_of_gw(gw)->grants[i].name);
	free(grants_of_gw(gw)->grants);
	grants_of_gw(gw)->grants = NULL;
	grants_of_gw(gw)->ngrants = 0;
	while (nkept > 0)
		kept_drop(nkept - 1);
	free(kept);
	kept = NULL;
}

static int add_name(struct ctl_req *, struct grant_req *, const char *);

/* --- the request ----------------------------------------------------------- */

static int
usage(struct ctl_req *r, bool allow)
{
	ctl_reply(r, "error: usage: %s\n", allow ?
	    "allow SANDBOX NAME... [--for DURATION] [--ports tcp/443,...]" :
	    "unallow SANDBOX NAME...");
	return -1;
}

/* "@NAME": the names of that baseline list, each checked like any. */
static int
add_list(struct ctl_req *r, struct grant_req *g, const char *arg)
{
	struct moat_strlist l = { NULL, 0 };
	char err[768];
	size_t i;
	int rc = 0;

	if (config_allow_list(r->gw->cfg->path, arg, &l, err, sizeof(err)) ==
	    -1) {
		ctl_reply(r, "error: %s; nothing changed\n", err);
		rc = -1;
	} else if (g->nlists < IPC_CTL_MAX_ARGS)
		g->lists[g->nlists++] = xstrdup(arg);
	for (i = 0; i < l.n; i++) {
		size_t before = g->n;

		if (rc == 0 && add_name(r, g, l.v[i]) == -1)
			rc = -1;
		if (g->n > before)
			g->listed[before] = g->nlists;
		free(l.v[i]);
	}
	free(l.v);
	return rc;
}

static int
add_name(struct ctl_req *r, struct grant_req *g, const char *arg)
{
	char *v, why[384];
	size_t i;

	if (arg[0] == '@')
		return add_list(r, g, arg);
	if (g->n >= IPC_CTL_MAX_ARGS) {
		ctl_reply(r, "error: at most %d names at once; nothing "
		    "changed\n", IPC_CTL_MAX_ARGS);
		return -1;
	}
	v = xstrdup(arg);
	if (!config_allow_entry(v, why, sizeof(why))) {
		char *e = json_escape(arg), *c;

		/* Not a name: escaped as in JSON, so that a quote, a
		 * newline or a terminal escape in it is shown, not done;
		 * the reason quotes it too, its control bytes made '?'. */
		for (c = why; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		ctl_reply(r, "error: %.260s: %s; nothing changed\n", e, why);
		free(e);
		free(v);
		return -1;
	}
	for (i = 0; i < g->n; i++)
		if (strcmp(g->names[i], v) == 0) {
			free(v);
			return 0;
		}
	g->names[g->n++] = v;
	return 0;
}

/* --ports tcp/22,udp/443: as allow_ports spells them, each once. */
static int
parse_ports(struct ctl_req *r, struct grant_req *g, const char *arg)
{
	char why[256];
	int n;

	if (g->nports > 0) {
		ctl_reply(r, "error: --ports given twice; nothing changed\n");
		return -1;
	}
	if ((n = config_ports_parse(arg, strlen(arg), g->ports, why,
	    sizeof(why))) < 0) {
		ctl_reply(r, "error: --ports: %s; nothing changed\n", why);
		return -1;
	}
	g->nports = (size_t)n;
	config_ports_fmt(g->ports, g->nports, g->portsbuf, sizeof(g->portsbuf));
	return 0;
}

static int
parse(struct ctl_req *r, bool allow, struct grant_req *g)
{
	const char *sandbox = NULL;
	int i;

	memset(g, 0, sizeof(*g));
	for (i = 1; i < r->argc; i++) {
		if (allow && strcmp(r->argv[i], "--for") == 0 &&
		    i + 1 < r->argc) {
			snprintf(g->secsbuf, sizeof(g->secsbuf), "%s",
			    r->argv[++i]);
			if (gw_duration(r->argv[i], &g->secs) == -1) {
				ctl_reply(r, "error: --for: expected a duration "
				    "such as 90s, 10m, 2h or 1d (at most a "
				    "year), got \"%.32s\"\n", r->argv[i]);
				return -1;
			}
		} else if (allow && strcmp(r->argv[i], "--ports") == 0 &&
		    i + 1 < r->argc) {
			if (parse_ports(r, g, r->argv[++i]) == -1)
				return -1;
		} else if (r->argv[i][0] == '-')
			return usage(r, allow);
		else if (sandbox == NULL)
			sandbox = r->argv[i];
		else if (add_name(r, g, r->argv[i]) == -1)
			return -1;
	}
	if (sandbox == NULL || g->n == 0)
		return usage(r, allow);
	if (g->nports > 0 && g->nlists > 0) {
		ctl_reply(r, "error: --ports applies to names, not to a list "
		    "(%s); nothing changed\n", g->lists[0]);
		return -1;
	}
	g->sb = config_sandbox_by_name(r->gw->cfg, sandbox);
	if (g->sb != NULL)
		snprintf(g->sbname, sizeof(g->sbname), "%s", g->sb->name);
	if (g->sb == NULL || !ctl_may_see(r, g->sb->owner)) {
		ctl_reply(r, "error: no sandbox %.32s (or not yours)\n", sandbox);
		return -1;
	}
	if (g->sb->egress != EGRESS_ALLOWLIST) {
		ctl_reply(r, "error: sandbox %s has egress \"%s\": %s\n",
		    g->sb->name, egress_name(g->sb->egress),
		    g->sb->egress == EGRESS_OPEN ? "it reaches every public "
		    "name already" : "it reaches nothing; an allow list needs "
		    "egress \"allowlist\" (in its file)");
		return -1;
	}
	return 0;
}

static bool
admit_port_in_allow_ports(const struct moat_sandbox *sb,
    const struct moat_port *p)
{
	size_t i;

	for (i = 0; i < sb->nallow_ports; i++)
		if (sb->allow_ports[i].proto == p->proto &&
		    sb->allow_ports[i].port == p->port)
			return true;
	return false;
}

/*
 * The one decision of who may grant what: root and the admin group
 * anything, a member (on their own sandboxes, checked by parse) only
 * names gateway.member_allow covers, and with --ports only ports among
 * the sandbox's allow_ports: a member narrows what a name opens, never
 * widens it.  false with the refusal replied.
 */
static bool
may_grant(struct ctl_req *r, const struct grant_req *g)
{
	const struct moat_gateway *gwc = &r->gw->cfg->gw;
	size_t i;

	if (r->admin)
		return true;
	for (i = 0; i < g->nports; i++)
		if (!admit_port_in_allow_ports(g->sb, &g->ports[i])) {
			ctl_refuse(r, g->sb->name, "--ports %s: members may "
			    "grant only ports among the sandbox's allow_ports, "
			    "never wider; root%s%s can: gatewayd ctl allow %s "
			    "%s --ports %s", g->portsbuf,
			    gwc->admin_group ? " or a member of group " : "",
			    gwc->admin_group ? gwc->admin_group : "",
			    g->sb->name, g->names[0], g->portsbuf);
			return false;
		}
	for (i = 0; i < g->n; i++)
		if (!config_allow_covers(&gwc->member_allow, g->names[i])) {
			ctl_refuse(r, g->sb->name, "%s is not in gateway."
			    "member_allow, so members may not grant it; root%s%s"
			    " can: gatewayd ctl allow %s %s", g->names[i],
			    gwc->admin_group ? " or a member of group " : "",
			    gwc->admin_group ? gwc->admin_group : "",
			    g->sb->name, g->names[i]);
			return false;
		}
	return true;
}

/* The sandbox's own drop-in, if grants for good may be written there;
 * NULL with the reason replied (unless quiet). */
static char *
dropin_path(struct ctl_req *r, const struct moat_sandbox *sb, bool quiet)
{
	const char *conf = r->gw->cfg->path;
	char *want = confpath_sandbox(conf, sb->name);

	if (want == NULL || sb->where.file == NULL ||
	    strcmp(sb->where.file, want) != 0) {
		if (!quiet)
			ctl_reply(r, "error: sandbox %s is defined in %s, not in a "
		    "file of its own; change its allow list there, or grant "
		    "for a while with --for\n", sb->name,
		    sb->where.file ? sb->where.file : conf);
		free(want);
		return NULL;
	}
	if (sb->registered_by != NULL) {
		if (!quiet)
			ctl_reply(r, "error: sandbox %s was registered by KVM host %s, "
		    "which writes its allow list; grant for a while with "
		    "--for\n", sb->name, sb->registered_by);
		free(want);
		return NULL;
	}
	return want;
}

/* What a change for good must pass before it stays: the whole
 * configuration loads with it (kept, for the file's own list), and the
 * running gateway applies it as a reload does (kernel, children). */
struct for_good {
	struct gw		*gw;
	struct moat_config	*loaded;
	bool			 loads;
};

static int
loads_and_applies(void *arg, const char *conf_path, char **errors)
{
	struct for_good *c = arg;
	struct moat_errors errs;

	if ((c->loaded = config_load(conf_path, NULL, &errs)) == NULL) {
		*errors = config_errors_text(&errs);
		config_errors_free(&errs);
		return -1;
	}
	config_errors_free(&errs);
	c->loads = true;
	config_free(c->loaded);		/* the reload loads it again */
	c->loaded = NULL;
	return gw_reload_check(c->gw, conf_path, errors);
}

/* Replace path (a regular file, its owner and mode kept) with text
 * through the journaled writer: a gatewayd killed halfway is undone at
 * its next start, and a change that does not load and apply is put back,
 * the old file as it was.  0 with *loaded the configuration as loaded,
 * or -1 with the reason replied. */
static int
write_for_good(struct ctl_req *r, const char *path, const char *text,
    struct moat_config **loaded)
{
	struct for_good c = { r->gw, NULL, false };
	char *errors = NULL;
	struct cfgtxn *t;
	struct stat st;
	int rc = -1;

	if (lstat(path, &st) == -1) {
		ctl_reply(r, "error: %s: cannot write it: %s\n", path,
		    strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		ctl_reply(r, "error: %s: cannot write it: not a regular "
		    "file\n", path);
		return -1;
	}
	t = cfgtxn_begin(r->gw->cfg->path);
	if (cfgtxn_stage_write(t, path, text, strlen(text), st.st_mode & 07777,
	    st.st_uid, st.st_gid) == -1)
		ctl_reply(r, "error: %s: cannot write it: %s\n", path,
		    strerror(errno));
	else if (cfgtxn_commit_and_check(t, loads_and_applies, &c,
	    &errors) == 0)
		rc = 0;
	else {
		/* A member sees only the lines about their sandbox's file. */
		ctl_reply_errors(r, errors, &path, 1);
		ctl_reply(r, "error: %s not changed: %s\n", path, c.loads ?
		    "the gateway could not apply the configuration with it" :
		    "the configuration would not load with it");
	}
	cfgtxn_end(t);
	free(errors);
	*loaded = c.loaded;
	return rc;
}

/* The drop-in's text with its allow list changed: add and del as
 * conftext_list_edit takes them (found[i]: del[i] was there).  NULL with
 * the reason replied; *pathp (if not NULL) the file's path. */
static char *
dropin_edited(struct ctl_req *r, const struct moat_sandbox *sb,
    const char *const *add, size_t nadd, const char *const *del, size_t ndel,
    bool *found, char **pathp)
{
	char *path, *text, *out;
	size_t len;

	if ((path = dropin_path(r, sb, false)) == NULL)
		return NULL;
	if ((text = read_small_file(path, DROPIN_MAX, &len)) == NULL) {
		ctl_reply(r, "error: %s: cannot read it\n", path);
		free(path);
		return NULL;
	}
	out = conftext_list_edit(text, "allow", add, nadd, del, ndel, found);
	if (out == NULL)
		ctl_reply(r, "error: %s: cannot read it as a sandbox's file (an "
		    "unterminated string, comment or list, or an allow that is "
		    "not a list of strings); nothing changed\n", path);
	free(text);
	if (pathp != NULL && out != NULL)
		*pathp = path;
	else
		free(path);
	return out;
}

/*
 * Change the drop-in's allow list as dropin_edited does, written, checked
 * and applied (a reload: *sbp is then the sandbox in the configuration in
 * force), and *loaded the configuration loaded with it.
 */
static int
dropin_change(struct ctl_req *r, const struct moat_sandbox **sbp,
    const char *const *add, size_t nadd, const char *const *del, size_t ndel,
    bool *found, struct moat_config **loaded)
{
	char *path = NULL, *out, name[IPC_NAME_LEN];
	int rc = -1;

	snprintf(name, sizeof(name), "%s", (*sbp)->name);
	if ((out = dropin_edited(r, *sbp, add, nadd, del, ndel, found,
	    &path)) == NULL)
		return -1;
	if (write_for_good(r, path, out, loaded) == 0) {
		/* The reload replaced the configuration in force. */
		if ((*sbp = config_sandbox_by_name(r->gw->cfg, name)) != NULL)
			rc = 0;
		else
			ctl_reply(r, "error: sandbox %s is not in the "
			    "configuration any more\n", name);
	}
	free(out);
	free(path);
	return rc;
}

/*
 * With --ports each name becomes the entry "NAME:PORTS" (moat.conf(5)),
 * so that a grant for a while and one written to the file are the same
 * string; the sandbox's names with ports of their own stay within
 * MOAT_NAME_PORTS_MAX distinct ports (one set addition carries them).
 */
static int
to_entries(struct ctl_req *r, struct grant_req *g)
{
	struct moat_strlist l = { NULL, 0 };
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	char *e;
	size_t i;
	int rc;

	if (g->nports == 0)
		return 0;
	for (i = 0; i < g->n; i++) {
		xasprintf(&e, "%s:%s", g->names[i], g->portsbuf);
		free(g->names[i]);
		g->names[i] = e;
	}
	l.v = xcalloc(g->sb->allow.n + g->n, sizeof(*l.v));
	for (i = 0; i < g->sb->allow.n; i++)
		l.v[l.n++] = g->sb->allow.v[i];
	for (i = 0; i < g->n; i++)
		l.v[l.n++] = g->names[i];
	rc = config_named_ports(&l, p);
	free(l.v);
	if (rc == -1) {
		ctl_reply(r, "error: sandbox %s would have more than %d distinct "
		    "ports among its names with ports of their own; nothing "
		    "changed\n", g->sb->name, MOAT_NAME_PORTS_MAX);
		return -1;
	}
	return 0;
}

/* The names of g, without the ports of their own, for people. */
static void
print_names(FILE *fp, const struct grant_req *g, const char *sep)
{
	size_t i;

	for (i = 0; i < g->n; i++)
		fprintf(fp, "%s%.*s", i ? sep : "",
		    (int)config_allow_namelen(g->names[i]), g->names[i]);
}

static void
audit_grant(struct ctl_req *r, const char *event, const struct grant_req *g)
{
	char uid[16], *names = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&names, &len);

	if (fp == NULL)
		fatalx("out of memory");
	print_names(fp, g, ",");
	fclose(fp);
	snprintf(uid, sizeof(uid), "%u", (unsigned)r->uid);
	/* ports: what the names open; an unallow takes all of it. */
	audit_event(r->gw, event, "uid", uid, "user", r->user, "sandbox",
	    g->sb->name, "names", names, "for", g->secs ? g->secsbuf :
	    "permanent", "ports", strcmp(event, "allow") != 0 ? "all" :
	    g->nports ? g->portsbuf : "allow_ports", NULL);
	free(names);
}

static int
allow_for_a_while(struct ctl_req *r, struct grant_req *g)
{
	struct gw *gw = r->gw;
	struct gw_grant *x;
	size_t i;

	if (grants_of_gw(gw)->ngrants + g->n > GW_GRANTS_MAX ||
	    grants_of(gw, g->sb->name) + g->n > GW_GRANTS_PER_SANDBOX) {
		ctl_reply(r, "error: too many grants for a while (at most %d "
		    "per sandbox, %d in all); write them to the sandbox's "
		    "file instead (allow without --for)\n",
		    GW_GRANTS_PER_SANDBOX, GW_GRANTS_MAX);
		return -1;
	}
	for (i = 0; i < g->n; i++) {
		char from[sizeof(x->from)];

		snprintf(from, sizeof(from), "%s", g->listed[i] ?
		    g->lists[g->listed[i] - 1] : "");
		if (grant_of_name(gw, g->sb->name, g->names[i]) == NULL &&
		    config_strlist_has(&g->sb->allow, g->names[i]))
			ctl_reply(r, "note: %s is on %s's allow list from its "
			    "configuration already; the grant adds nothing "
			    "while it stays there\n",
			    g->names[i], g->sb->name);
		/* One grant per name and source: granting a list again
		 * leaves the grants of its names given alone as they are. */
		if ((x = grant_find(gw, g->sb->name, g->names[i], from)) ==
		    NULL) {
			grants_of_gw(gw)->grants = xreallocarray(grants_of_gw(gw)->grants, grants_of_gw(gw)->ngrants + 1,
			    sizeof(*grants_of_gw(gw)->grants));
			x = &grants_of_gw(gw)->grants[grants_of_gw(gw)->ngrants++];
			memset(x, 0, sizeof(*x));
			snprintf(x->sandbox, sizeof(x->sandbox), "%s",
			    g->sb->name);
			x->name = xstrdup(g->names[i]);
			memcpy(x->from, from, sizeof(x->from));
		}
		/* Granted again: the new time counts, longer or shorter. */
		x->until_ms = gw_mono_ms() + (uint64_t)g->secs * 1000;
		x->until = time(NULL) + g->secs;
		x->since = time(NULL);
		x->uid = r->uid;
		snprintf(x->by, sizeof(x->by), "%s", r->user);
		grant_forward(gw, g->sb->name, x->name, (uint32_t)g->secs);
	}
	return 0;
}

/* The file gets the names given and the lists as named ("@pypi"), not
 * the lists' names, so that it follows the lists as they change. */
static int
allow_for_good(struct ctl_req *r, struct grant_req *g)
{
	struct moat_config *loaded = NULL;
	const char *add[2 * IPC_CTL_MAX_ARGS];
	size_t i, n = 0;

	for (i = 0; i < g->n; i++)
		if (!g->listed[i])
			add[n++] = g->names[i];
	for (i = 0; i < g->nlists; i++)
		add[n++] = g->lists[i];
	if (dropin_change(r, &g->sb, add, n, NULL, 0, NULL, &loaded) == -1) {
		config_free(loaded);
		return -1;
	}
	for (i = 0; i < n; i++)
		kept_add(r, g->sb->name, add[i]);
	for (i = 0; i < g->n; i++)
		if (!g->listed[i] && grant_of_name(r->gw, g->sb->name,
		    g->names[i]) != NULL)
			ctl_reply(r, "note: %s was granted for a while; now it "
			    "is in %s's file too (the grant ending takes "
			    "nothing away)\n", g->names[i], g->sb->name);
	/* The file has them now, in force since the reload that checked
	 * it (gw_commit): a grant for a while of one of them takes nothing
	 * away when it expires. */
	config_free(loaded);
	return 0;
}

void
ctl_allow(struct ctl_req *r)
{
	struct grant_req g;
	char until[32];
	struct tm tm;
	time_t t;
	size_t i;

	if (parse(r, true, &g) == -1 || !may_grant(r, &g) ||
	    to_entries(r, &g) == -1) {
		req_free(&g);
		return;
	}
	if ((g.secs > 0 ? allow_for_a_while(r, &g) :
	    allow_for_good(r, &g)) == -1) {
		req_free(&g);
		return;
	}
	if (g.secs > 0 && grants_commit(r->gw, "allow", false) == -1)
		ctl_reply(r, "warning: the kernel refused the change; %s may "
		    "not reach them until a reload succeeds\n", g.sbname);
	regrab(r->gw, &g);
	audit_grant(r, "allow", &g);
	ctl_reply(r, "%s may reach ", g.sb->name);
	for (i = 0; i < g.n; i++)
		ctl_reply(r, "%s%.*s", i ? ", " : "",
		    (int)config_allow_namelen(g.names[i]), g.names[i]);
	if (g.nports > 0)
		ctl_reply(r, " on %s only", g.portsbuf);
	if (g.secs > 0) {
		t = time(NULL) + g.secs;
		gmtime_r(&t, &tm);
		strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
		ctl_reply(r, " for %s (until %s)\nok\n", g.secsbuf, until);
	} else
		ctl_reply(r, " (written to its file)\nok\n");
	req_free(&g);
}

/* Why name, asked to go, is still in sb's list in force: a grant for a
 * while, the sandbox's file by name, or else a list or moat.conf. */
static void
say_stays(struct ctl_req *r, const struct moat_sandbox *sb, const char *name,
    bool by_name_in_file)
{
	struct gw_grant *x = grant_of_name(r->gw, sb->name, name);
	char until[32];
	struct tm tm;

	if (x != NULL) {
		gmtime_r(&x->until, &tm);
		strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
		ctl_reply(r, "%s stays: a grant for a while has it until %s%s%s"
		    "%s\n", name, until, x->from[0] ? " (with " : "",
		    x->from, x->from[0] ? ")" : "");
	} else if (by_name_in_file)
		ctl_reply(r, "%s stays: it is in the sandbox's file\n", name);
	else
		ctl_reply(r, "%s stays: it comes from a list or from moat.conf "
		    "(change it there)\n", name);
}

static bool
in_force(struct ctl_req *r, const struct moat_sandbox *sb, const char *name)
{
	return config_strlist_has(&sb->allow, name) ||
	    grant_of_name(r->gw, sb->name, name) != NULL;
}

/* What went of what g names, then what stays in force, each with why. */
static void
say_unallowed(struct ctl_req *r, const struct grant_req *g)
{
	const char *stay[IPC_CTL_MAX_ARGS];
	bool found[IPC_CTL_MAX_ARGS] = { false };
	size_t i, n = 0, went = 0;
	char *path;

	for (i = 0; i < g->n; i++) {
		if (in_force(r, g->sb, g->names[i])) {
			stay[n++] = g->names[i];
			continue;
		}
		ctl_reply(r, "%s%s", went++ ? ", " : "", g->names[i]);
	}
	ctl_reply(r, went > 0 ? "\n" : "nothing more than before\n");
	if (n > 0 && (path = dropin_path(r, g->sb, true)) != NULL) {
		free(path);
		free(dropin_edited(r, g->sb, NULL, 0, stay, n, found, NULL));
	}
	for (i = 0; i < n; i++)
		say_stays(r, g->sb, stay[i], found[i]);
}

/* A grant of x's that unallow's del asks for: by name (the first nnamed,
 * with whatever ports of its own), or by the list it came with. */
static bool
grant_asked(const struct gw_grant *x, const struct moat_sandbox *sb,
    const char *const *del, size_t ndel, size_t nnamed)
{
	size_t j, n;

	if (strcmp(x->sandbox, sb->name) != 0)
		return false;
	for (j = 0; j < ndel; j++) {
		n = config_allow_namelen(del[j]);
		if (j < nnamed ? config_allow_namelen(x->name) == n &&
		    strncmp(x->name, del[j], n) == 0 :
		    strcmp(x->from, del[j]) == 0)
			return true;
	}
	return false;
}

/*
 * unallow takes away exactly what it names: a name given, with whatever
 * ports of its own, from the sandbox's file and every grant for a while
 * of it; a list "@LIST", its entry in the file and the grants for a while
 * made with it, never its names that the file holds by name, another list
 * or another grant.  What stays in force says why.
 */
void
ctl_unallow(struct ctl_req *r)
{
	struct grant_req g;
	const char *del[2 * IPC_CTL_MAX_ARGS];
	bool found[2 * IPC_CTL_MAX_ARGS] = { false }, in_file = false;
	bool both[2 * IPC_CTL_MAX_ARGS] = { false };
	struct moat_config *loaded = NULL;
	size_t i, j, ndel = 0, nnamed = 0;
	bool lost, granted;
	char *path, *text;

	if (parse(r, false, &g) == -1)
		goto out;
	/* The file's entries asked for: the names given, and the lists as
	 * named, never a list's names. */
	for (i = 0; i < g.n; i++)
		if (!g.listed[i])
			del[nnamed++] = g.names[i];
	ndel = nnamed;
	for (i = 0; i < g.nlists; i++)
		del[ndel++] = g.lists[i];
	if ((path = dropin_path(r, g.sb, true)) != NULL) {
		free(path);
		if ((text = dropin_edited(r, g.sb, NULL, 0, del, ndel, found,
		    NULL)) == NULL)
			goto out;
		free(text);
	}
	for (i = 0; i < ndel; i++) {
		in_file |= found[i];
		for (j = 0, granted = false; j < grants_of_gw(r->gw)->ngrants && !granted; j++)
			granted = grant_asked(&grants_of_gw(r->gw)->grants[j], g.sb, &del[i],
			    1, i < nnamed ? 1 : 0);
		both[i] = granted && found[i];
		if (granted || found[i])
			continue;
		ctl_reply(r, "error: %s is not a grant of %s%s; nothing "
		    "changed\n", del[i], g.sb->name, i < nnamed &&
		    config_strlist_has(&g.sb->allow, del[i]) ? " (it comes "
		    "from a list or from moat.conf: change it there)" : "");
		goto out;
	}
	if (in_file && dropin_change(r, &g.sb, NULL, 0, del, ndel, found,
	    &loaded) == -1) {
		config_free(loaded);
		goto out;
	}
	if (in_file)
		kept_forget(g.sb->name, del, ndel, nnamed);
	config_free(loaded);
	for (i = 0, lost = false; i < grants_of_gw(r->gw)->ngrants;)
		if (grant_asked(&grants_of_gw(r->gw)->grants[i], g.sb, del, ndel, nnamed)) {
			grant_forward(r->gw, g.sb->name, grants_of_gw(r->gw)->grants[i].name,
			    0);		/* it ends on the other box too */
			grant_drop(r->gw, &grants_of_gw(r->gw)->grants[i]);
			lost = true;
		} else
			i++;
	/* The files (as just written and reloaded) with the grants that
	 * stay over them: what these grants alone added goes, and its
	 * flows are cut. */
	if (lost)
		(void)grants_commit(r->gw, "unallow", false);
	regrab(r->gw, &g);
	audit_grant(r, "unallow", &g);
	ctl_reply(r, "%s no longer reaches ", g.sb->name);
	say_unallowed(r, &g);
	for (i = 0; i < ndel; i++)	/* held twice: say that both went */
		if (both[i])
			ctl_reply(r, "%s: its grant for a while ended, and it was "
			    "taken out of the sandbox's file\n", del[i]);
	ctl_reply(r, "ok\n");
out:
	req_free(&g);
}

/* --- ctl grants ------------------------------------------------------------ */

static int
sum_cmp(const void *a, const void *b)
{
	return strcmp(((const struct grant_sum *)a)->sandbox,
	    ((const struct grant_sum *)b)->sandbox);
}

/* One pass and a sort, so that a render costs O(g log g) whatever the
 * number of sandboxes. */
size_t
grants_sums(const struct gw *gw, struct grant_sum **out)
{
	uint64_t now = gw_mono_ms(), ms;
	struct grant_sum *v;
	size_t i, n = 0;
	long left;

	*out = NULL;
	if (grants_of_gw(gw)->ngrants == 0)
		return 0;
	v = xcalloc(grants_of_gw(gw)->ngrants, sizeof(*v));
	for (i = 0; i < grants_of_gw(gw)->ngrants; i++) {
		ms = grants_of_gw(gw)->grants[i].until_ms;
		v[i].sandbox = grants_of_gw(gw)->grants[i].sandbox;
		v[i].n = 1;
		v[i].left = ms <= now ? 0 : (long)((ms - now + 999) / 1000);
	}
	qsort(v, grants_of_gw(gw)->ngrants, sizeof(*v), sum_cmp);
	for (i = 0; i < grants_of_gw(gw)->ngrants; i++) {
		if (n > 0 && strcmp(v[n - 1].sandbox, v[i].sandbox) == 0) {
			left = v[i].left;
			v[n - 1].n++;
			if (left < v[n - 1].left)
				v[n - 1].left = left;
			continue;
		}
		v[n++] = v[i];
	}
	*out = v;
	return n;
}

static const char *
grant_stamp(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

/* One line of ctl grants: a grant for a while, or one for good (left -1,
 * until 0). */
struct grant_row {
	const char	*sandbox, *entry, *from, *by;
	uid_t		 uid;
	time_t		 since, until;
	long		 left;
};

/* One grant as a JSON object; every string escaped (json.h). */
static void
row_json(struct ctl_req *r, const struct grant_row *w, bool first)
{
	struct json j = JSON_INIT;
	char num[24], since[32], until[32], name[300];
	const char *colon = w->entry[0] == '@' ? NULL : strchr(w->entry, ':');

	snprintf(name, sizeof(name), "%.*s",
	    (int)config_allow_namelen(w->entry), w->entry);
	json_begin(&j);
	json_kstr(&j, "sandbox", w->sandbox);
	json_kstr(&j, "entry", w->entry);
	json_kstr(&j, "name", w->entry[0] == '@' ? NULL : name);
	json_kstr(&j, "ports", colon != NULL ? colon + 1 : "allow_ports");
	json_kstr(&j, "list", w->entry[0] == '@' ? w->entry :
	    w->from[0] ? w->from : NULL);
	snprintf(num, sizeof(num), "%u", (unsigned)w->uid);
	json_kraw(&j, "uid", num);
	json_kstr(&j, "user", w->by);
	json_kstr(&j, "since", grant_stamp(w->since, since, sizeof(since)));
	json_kraw(&j, "permanent", w->left < 0 ? "true" : "false");
	json_kstr(&j, "until", w->left < 0 ? NULL :
	    grant_stamp(w->until, until, sizeof(until)));
	snprintf(num, sizeof(num), "%ld", w->left);
	json_kraw(&j, "seconds_left", w->left < 0 ? "null" : num);
	json_end(&j);
	ctl_reply(r, "%s%s", first ? "" : ",", j.buf);
	json_free(&j);
}

/* Printable whatever it holds: names and users are checked where they
 * come in, and escaped here all the same. */
static void
row_text(struct ctl_req *r, const struct grant_row *w, bool first)
{
	char since[32], until[32], left[24];
	char *sb = json_escape(w->sandbox), *e = json_escape(w->entry);
	char *from = json_escape(w->from[0] ? w->from : "-");
	char *by = json_escape(w->by);

	if (first)
		ctl_reply(r, "%-16s %-40s %-12s %-16s %-20s %-20s %s\n",
		    "SANDBOX", "ENTRY", "LIST", "BY", "SINCE", "UNTIL", "LEFT");
	snprintf(left, sizeof(left), "%lds", w->left);
	ctl_reply(r, "%-16s %-40s %-12s %-16s %-20s %-20s %s\n", sb, e, from,
	    by, grant_stamp(w->since, since, sizeof(since)), w->left < 0 ?
	    "forever" : grant_stamp(w->until, until, sizeof(until)),
	    w->left < 0 ? "(in its file)" : left);
	free(sb);
	free(e);
	free(from);
	free(by);
}

static bool
row_show(struct ctl_req *r, const char *want, const struct grant_row *w,
    bool first)
{
	const struct moat_sandbox *sb;

	if (want != NULL && strcmp(w->sandbox, want) != 0)
		return false;
	sb = config_sandbox_by_name(r->gw->cfg, w->sandbox);
	if (sb == NULL || !ctl_may_see(r, sb->owner))
		return false;
	if (r->json)
		row_json(r, w, first);
	else
		row_text(r, w, first);
	return true;
}

/*
 * `ctl grants [SANDBOX]`: every live grant for a while, who made it, when
 * and when it ends; then what `allow` wrote to files since gatewayd
 * started ("forever").  Members see those of their own sandboxes only,
 * as ctl refused shows them.
 */
void
ctl_grants(struct ctl_req *r)
{
	const struct moat_sandbox *sb;
	const char *want = NULL;
	struct grant_row w;
	uint64_t now = gw_mono_ms();
	bool first = true;
	size_t i;

	for (i = 1; i < (size_t)r->argc; i++) {
		if (r->argv[i][0] == '-' || want != NULL) {
			ctl_reply(r, "error: usage: grants [SANDBOX] [--json]\n");
			return;
		}
		want = r->argv[i];
	}
	if (want != NULL && ((sb = config_sandbox_by_name(r->gw->cfg, want)) ==
	    NULL || !ctl_may_see(r, sb->owner))) {
		ctl_reply(r, "error: no sandbox %.32s (or not yours)\n", want);
		return;
	}
	if (r->json)
		ctl_reply(r, "[");
	for (i = 0; i < grants_of_gw(r->gw)->ngrants; i++) {
		const struct gw_grant *x = &grants_of_gw(r->gw)->grants[i];

		w = (struct grant_row){ x->sandbox, x->name, x->from, x->by,
		    x->uid, x->since, x->until, x->until_ms <= now ? 0 :
		    (long)((x->until_ms - now + 999) / 1000) };
		if (row_show(r, want, &w, first))
			first = false;
	}
	for (i = 0; i < nkept; i++) {
		w = (struct grant_row){ kept[i].sandbox, kept[i].entry, "",
		    kept[i].by, kept[i].uid, kept[i].since, 0, -1 };
		if (row_show(r, want, &w, first))
			first = false;
	}
	if (r->json)
		ctl_reply(r, "]\n");
	else if (first)
		ctl_reply(r, "no grants%s%s\n", want ? " of " : "",
		    want ? want : "");
	ctl_reply(r, "ok\n");
}

/* --- grants for a while on both boxes of a pair (harepl.h) ----------------- */

/* What a grant received from the other box is recorded as coming from,
 * as a list's grants are: `unallow SANDBOX @ha-peer` ends them all. */
#define PEER_FROM	"@ha-peer"

/* To the other box: a grant for a while made here, or (secs 0) taken
 * back.  From either role: an operator's grant is on both boxes. */
static void
grant_forward(struct gw *gw, const char *sandbox, const char *entry,
    uint32_t secs)
{
	struct ipc_ha_grant m;

	if (strlen(entry) >= sizeof(m.entry))
		return;
	memset(&m, 0, sizeof(m));
	snprintf(m.sandbox, sizeof(m.sandbox), "%s", sandbox);
	snprintf(m.entry, sizeof(m.entry), "%s", entry);
	m.secs = secs;
	harepl_forward_any(gw, IPC_HA_GRANT, &m, sizeof(m));
}

/* Every grant for a while of sandbox (NULL: of every sandbox) with the
 * time it has left: part of the whole state (harepl_snapshot); own_only:
 * only those made here, which a backup sends on each connection. */
void
grants_snapshot(struct gw *gw, const char *sandbox, bool own_only)
{
	uint64_t now = gw_mono_ms(), left;
	size_t i;

	for (i = 0; i < grants_of_gw(gw)->ngrants; i++) {
		const struct gw_grant *x = &grants_of_gw(gw)->grants[i];

		if ((sandbox != NULL && strcmp(x->sandbox, sandbox) != 0) ||
		    x->until_ms <= now ||
		    (own_only && strcmp(x->from, PEER_FROM) == 0))
			continue;
		left = (x->until_ms - now + 999) / 1000;
		grant_forward(gw, x->sandbox, x->name, left > IPC_HA_GRANT_MAX_S ?
		    IPC_HA_GRANT_MAX_S : (uint32_t)left);
	}
}

/* The other box's grants for sb end (its whole state follows). */
void
grants_peer_state(struct gw *gw, const char *sandbox)
{
	size_t i = 0;
	bool any = false;

	while (i < grants_of_gw(gw)->ngrants)
		if (strcmp(grants_of_gw(gw)->grants[i].sandbox, sandbox) == 0 &&
		    strcmp(grants_of_gw(gw)->grants[i].from, PEER_FROM) == 0) {
			grant_drop(gw, &grants_of_gw(gw)->grants[i]);
			any = true;
		} else
			i++;
	if (any)
		(void)grants_commit(gw, "the other box's grants", true);
}

/* A grant the other box made: recorded here as root's `ctl allow SANDBOX
 * ENTRY --for SECS` would be, from PEER_FROM; the elements its name
 * opens are admitted as any other.  An ungrant ends every grant for a
 * while of the entry here (narrowing only).  0, or -1 with why. */
int
grants_peer(struct gw *gw, const struct ipc_ha_grant *m, const char **why)
{
	const struct moat_sandbox *sb = config_sandbox_by_name(gw->cfg,
	    m->sandbox);
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	struct moat_strlist l = { NULL, 0 };
	char w[384], *v;
	struct gw_grant *x;
	bool any = false;
	size_t i;
	int ports;

	if (sb == NULL || sb->egress != EGRESS_ALLOWLIST) {
		*why = "not an allowlist sandbox here";
		return -1;
	}
	v = xstrdup(m->entry);
	if (!config_allow_entry(v, w, sizeof(w)) || v[0] == '@') {
		free(v);
		*why = "not an allow entry";
		return -1;
	}
	if (m->secs == 0) {
		i = 0;
		while (i < grants_of_gw(gw)->ngrants)
			if (strcmp(grants_of_gw(gw)->grants[i].sandbox, sb->name) == 0 &&
			    strcmp(grants_of_gw(gw)->grants[i].name, v) == 0) {
				grant_drop(gw, &grants_of_gw(gw)->grants[i]);
				any = true;
			} else
				i++;
		free(v);
		if (any)
			(void)grants_commit(gw, "the other box's ungrant", true);
		return 0;
	}
	if ((x = grant_find(gw, sb->name, v, PEER_FROM)) == NULL) {
		if (grants_of_gw(gw)->ngrants >= GW_GRANTS_MAX ||
		    grants_of(gw, sb->name) >= GW_GRANTS_PER_SANDBOX) {
			free(v);
			*why = "too many grants";
			return -1;
		}
		/* The list it would make must still fit the ports' sets. */
		for (i = 0; i < sb->allow.n; i++)
			list_add(&l, sb->allow.v[i]);
		list_add(&l, v);
		ports = config_named_ports(&l, p);
		for (i = 0; i < l.n; i++)
			free(l.v[i]);
		free(l.v);
		if (ports == -1) {
			free(v);
			*why = "too many distinct ports";
			return -1;
		}
		grants_of_gw(gw)->grants = xreallocarray(grants_of_gw(gw)->grants, grants_of_gw(gw)->ngrants + 1,
		    sizeof(*grants_of_gw(gw)->grants));
		x = &grants_of_gw(gw)->grants[grants_of_gw(gw)->ngrants++];
		memset(x, 0, sizeof(*x));
		snprintf(x->sandbox, sizeof(x->sandbox), "%s", sb->name);
		x->name = v;
		snprintf(x->from, sizeof(x->from), "%s", PEER_FROM);
	} else
		free(v);
	x->until_ms = gw_mono_ms() + (uint64_t)m->secs * 1000;
	x->until = time(NULL) + m->secs;
	x->since = time(NULL);
	x->uid = 0;
	snprintf(x->by, sizeof(x->by), "ha-peer");
	(void)grants_commit(gw, "the other box's grant", true);
	return 0;
}

static uint64_t
grants_due(const struct gw *gw)
{
	int ms = grants_timeout(gw, -1);

	if (grants_of_gw(gw)->retry && (ms < 0 || ms > 1000))
		ms = 1000;

	return gw_due_in(ms);
}

const struct gw_module grants_module = {
	.on_commit = grants_on_commit,
	.name = "grants",
	.size = sizeof(struct gw_grants),
	.due = grants_due,
	.timer = grants_tick,
	.stop = grants_free,
};
