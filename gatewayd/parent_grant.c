/*
 * parent_grant.c -- `gatewayd ctl allow SANDBOX NAME... [--for DURATION]
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
 * drop-in first, and only if the whole configuration loads with it.
 *
 * Who: root and gateway.admin_group grant anything; a member grants on
 * their own sandboxes only what gateway.member_allow covers, and may take
 * back any grant of their own sandboxes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "dropin.h"
#include "gatewayd.h"
#include "json.h"
#include "log.h"
#include "parent_ctflows.h"
#include "smallfile.h"

#define DROPIN_MAX	(64 * 1024)

struct grant_req {
	struct moat_sandbox *sb;
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

/* --- the allow list in force ------------------------------------------- */

static void
list_add(struct moat_strlist *l, const char *name)
{
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = xstrdup(name);
}

static bool
list_del(struct moat_strlist *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], name) == 0) {
			free(l->v[i]);
			memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) *
			    sizeof(*l->v));
			l->n--;
			return true;
		}
	return false;
}

/* The sandbox in cfg, to change its list (config_sandbox_by_name is
 * for readers). */
static struct moat_sandbox *
sandbox_rw(struct moat_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (strcmp(cfg->sandboxes[i].name, name) == 0)
			return &cfg->sandboxes[i];
	return NULL;
}

/* --- grants for a while ---------------------------------------------------- */

static void	grant_forward(struct gw *, const char *, const char *, uint32_t);

static size_t
grants_of(const struct gw *gw, const char *sandbox)
{
	size_t i, n = 0;

	for (i = 0; i < gw->ngrants; i++)
		n += strcmp(gw->grants[i].sandbox, sandbox) == 0;
	return n;
}

/* The grant of name given as from ("@LIST" or ""); from NULL: any. */
static struct gw_grant *
grant_find(struct gw *gw, const char *sandbox, const char *name,
    const char *from)
{
	size_t i;

	for (i = 0; i < gw->ngrants; i++)
		if (strcmp(gw->grants[i].sandbox, sandbox) == 0 &&
		    strcmp(gw->grants[i].name, name) == 0 && (from == NULL ||
		    strcmp(gw->grants[i].from, from) == 0))
			return &gw->grants[i];
	return NULL;
}

/* Another grant of x's name to x's sandbox, which keeps it in force. */
static struct gw_grant *
grant_other(struct gw *gw, const struct gw_grant *x)
{
	size_t i;

	for (i = 0; i < gw->ngrants; i++)
		if (&gw->grants[i] != x &&
		    strcmp(gw->grants[i].sandbox, x->sandbox) == 0 &&
		    strcmp(gw->grants[i].name, x->name) == 0)
			return &gw->grants[i];
	return NULL;
}

/* A grant of name, with or without ports of its own. */
static struct gw_grant *
grant_of_name(struct gw *gw, const char *sandbox, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < gw->ngrants; i++)
		if (strcmp(gw->grants[i].sandbox, sandbox) == 0 &&
		    config_allow_namelen(gw->grants[i].name) == n &&
		    strncmp(gw->grants[i].name, name, n) == 0)
			return &gw->grants[i];
	return NULL;
}

static void
grant_drop(struct gw *gw, struct gw_grant *x)
{
	size_t i = (size_t)(x - gw->grants);

	free(x->name);
	memmove(&gw->grants[i], &gw->grants[i + 1], (gw->ngrants - i - 1) *
	    sizeof(*gw->grants));
	gw->ngrants--;
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

void
grants_overlay(struct gw *gw, struct moat_config *cfg)
{
	struct moat_sandbox *sb;
	size_t i;

	for (i = 0; i < gw->ngrants; i++) {
		struct gw_grant *x = &gw->grants[i];

		sb = sandbox_rw(cfg, x->sandbox);
		x->next_gone = sb == NULL || sb->egress != EGRESS_ALLOWLIST;
		x->next_added = !x->next_gone &&
		    !config_strlist_has(&sb->allow, x->name);
		if (x->next_added)
			list_add(&sb->allow, x->name);
	}
}

void
grants_commit(struct gw *gw)
{
	size_t i = 0;

	while (i < gw->ngrants) {
		struct gw_grant *x = &gw->grants[i];

		if (x->next_gone) {
			log_info("grant of %s to %s ends: the sandbox is gone "
			    "or no longer in allowlist mode", x->name,
			    x->sandbox);
			grant_drop(gw, x);
			continue;
		}
		x->added = x->next_added;
		i++;
	}
	kept_prune(gw->cfg);
}

int
grants_timeout(const struct gw *gw, int timeout)
{
	uint64_t now = gw_mono_ms(), next = UINT64_MAX;
	size_t i;

	for (i = 0; i < gw->ngrants; i++)
		if (gw->grants[i].until_ms < next)
			next = gw->grants[i].until_ms;
	if (next == UINT64_MAX)
		return timeout;
	next = next <= now ? 0 : next - now;
	if (timeout >= 0 && (uint64_t)timeout < next)
		return timeout;
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

/* Names were taken away from sb in force: empty its set; children next,
 * and then cut_narrowed. */
static void
narrowed(struct gw *gw, const char *sandbox)
{
	policy_flush_sandbox(gw, sandbox);
	if (gw->promises != NULL)
		promises_forget(gw->promises, sandbox);
}

/* Cut the flows of sandboxes grants narrowed, as a reload that narrows
 * them does (policy_cut_narrowed judges them the same way): what a grant
 * opened closes with it, spliced or direct, either family. */
static void
cut_narrowed(struct gw *gw, const char *const *sandboxes, size_t n)
{
	int cut = policy_cut_narrowed(gw->cfg, sandboxes, n);

	if (cut == -1)
		log_warnx("grants narrowed %s%s: its flows could not be cut",
		    sandboxes[0], n > 1 ? " and others" : "");
	else
		log_info("grants narrowed %s%s: %d flow(s) cut", sandboxes[0],
		    n > 1 ? " and others" : "", cut);
}

void
grants_tick(struct gw *gw)
{
	uint64_t now = gw_mono_ms();
	struct moat_sandbox *sb;
	const char **changed = NULL;
	size_t i = 0, j, n = 0;
	struct timespec t0, t1;

	/* Each turn of the loop takes the conntrack events that came, so a
	 * grant's end finds the list of flows to cut ready. */
	ctflows_tick();
	clock_gettime(CLOCK_MONOTONIC, &t0);

	while (i < gw->ngrants) {
		struct gw_grant *x = &gw->grants[i];

		if (x->until_ms > now) {
			i++;
			continue;
		}
		audit_event(gw, "grant-expired", "sandbox", x->sandbox, "name",
		    x->name, "by", x->by, NULL);
		sb = sandbox_rw(gw->cfg, x->sandbox);
		if (x->added && grant_other(gw, x) != NULL)
			grant_other(gw, x)->added = true;	/* it stays */
		else if (x->added && sb != NULL &&
		    list_del(&sb->allow, x->name)) {
			narrowed(gw, x->sandbox);
			for (j = 0; j < n && changed[j] != sb->name; j++)
				;
			if (j == n) {
				changed = xreallocarray(changed, n + 1,
				    sizeof(*changed));
				changed[n++] = sb->name;
			}
		}
		log_info("grant of %s to %s expired", x->name, x->sandbox);
		grant_drop(gw, x);
	}
	if (n > 0) {
		proc_reload_sandboxes(gw, changed, n);
		cut_narrowed(gw, changed, n);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		log_info("grants ended: %zu sandbox(es) narrowed in %.1f ms", n,
		    (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	}
	free(changed);
}

void
grants_free(struct gw *gw)
{
	size_t i;

	for (i = 0; i < gw->ngrants; i++)
		free(gw->grants[i].name);
	free(gw->grants);
	gw->grants = NULL;
	gw->ngrants = 0;
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
		ctl_reply(r, "error: %.260s: %s; nothing changed\n", arg, why);
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
	g->sb = sandbox_rw(r->gw->cfg, sandbox);
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
	const char *conf = r->gw->cfg->path, *slash = strrchr(conf, '/');
	char *want;

	if (slash == NULL)
		xasprintf(&want, "sandboxes.d/%s.conf", sb->name);
	else
		xasprintf(&want, "%.*s/sandboxes.d/%s.conf",
		    (int)(slash - conf), conf, sb->name);
	if (sb->where.file == NULL || strcmp(sb->where.file, want) != 0) {
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

/*
 * Change the drop-in's allow list: add and del as dropin_allow_edit takes
 * them (found[i]: del[i] was there).  With write false, only find out.
 * Written, checked, and *loaded the configuration loaded with it.
 */
static int
dropin_change(struct ctl_req *r, const struct moat_sandbox *sb,
    const char *const *add, size_t nadd, const char *const *del, size_t ndel,
    bool *found, bool write, struct moat_config **loaded)
{
	char *path, *text, *out, *errors = NULL, why[256];
	size_t len;
	int rc = -1;

	if ((path = dropin_path(r, sb, false)) == NULL)
		return -1;
	if ((text = read_small_file(path, DROPIN_MAX, &len)) == NULL) {
		ctl_reply(r, "error: %s: cannot read it\n", path);
		free(path);
		return -1;
	}
	out = dropin_allow_edit(text, add, nadd, del, ndel, found, why,
	    sizeof(why));
	if (out == NULL)
		ctl_reply(r, "error: %s: %s; nothing changed\n", path, why);
	else if (!write)
		rc = 0;
	else if (dropin_replace_checked(r->gw->cfg->path, path, out,
	    &errors, loaded) == -1)
		ctl_reply(r, "%serror: %s not changed: the configuration "
		    "would not load with it\n", errors ? errors : "", path);
	else
		rc = 0;
	free(errors);
	free(out);
	free(text);
	free(path);
	return rc;
}

/*
 * sb's list in force becomes base (its file's list, as loaded) with the
 * grants for a while laid over it; the set is emptied if that loses a
 * name (true: then cut_narrowed once the children have the list).
 */
static bool
list_replace(struct gw *gw, struct moat_sandbox *sb,
    const struct moat_strlist *base)
{
	struct moat_strlist l = { NULL, 0 };
	bool lost = false;
	size_t i;

	for (i = 0; i < base->n; i++)
		list_add(&l, base->v[i]);
	for (i = 0; i < gw->ngrants; i++) {
		struct gw_grant *x = &gw->grants[i];

		if (strcmp(x->sandbox, sb->name) != 0)
			continue;
		x->added = !config_strlist_has(&l, x->name);
		if (x->added)
			list_add(&l, x->name);
	}
	for (i = 0; i < sb->allow.n && !lost; i++)
		lost = !config_strlist_has(&l, sb->allow.v[i]);
	for (i = 0; i < sb->allow.n; i++)
		free(sb->allow.v[i]);
	free(sb->allow.v);
	sb->allow = l;
	if (lost)
		narrowed(gw, sb->name);
	return lost;
}

/* The file's list as the configuration just loaded has it. */
static bool
list_from(struct gw *gw, struct moat_sandbox *sb, struct moat_config *loaded)
{
	const struct moat_sandbox *f = config_sandbox_by_name(loaded,
	    sb->name);
	struct moat_strlist none = { NULL, 0 };
	bool lost;

	lost = list_replace(gw, sb, f != NULL ? &f->allow : &none);
	config_free(loaded);
	return lost;
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

	if (gw->ngrants + g->n > GW_GRANTS_MAX ||
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
			gw->grants = xreallocarray(gw->grants, gw->ngrants + 1,
			    sizeof(*gw->grants));
			x = &gw->grants[gw->ngrants++];
			memset(x, 0, sizeof(*x));
			snprintf(x->sandbox, sizeof(x->sandbox), "%s",
			    g->sb->name);
			x->name = xstrdup(g->names[i]);
			memcpy(x->from, from, sizeof(x->from));
			x->added = !config_strlist_has(&g->sb->allow, x->name);
			if (x->added)
				list_add(&g->sb->allow, x->name);
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
	if (dropin_change(r, g->sb, add, n, NULL, 0, NULL, true,
	    &loaded) == -1)
		return -1;
	for (i = 0; i < n; i++)
		kept_add(r, g->sb->name, add[i]);
	for (i = 0; i < g->n; i++)
		if (!g->listed[i] && grant_of_name(r->gw, g->sb->name,
		    g->names[i]) != NULL)
			ctl_reply(r, "note: %s was granted for a while; now it "
			    "is in %s's file too (the grant ending takes "
			    "nothing away)\n", g->names[i], g->sb->name);
	/* The file has them now: a grant for a while of one of them takes
	 * nothing away when it expires.  (The file may have lost a name by
	 * hand since it was loaded: then what it opened closes.) */
	if (list_from(r->gw, g->sb, loaded))
		cut_narrowed(r->gw, (const char *const *)&g->sb->name, 1);
	return 0;
}

/*
 * A sandbox's set allowp_NAME exists only while some entry of its list
 * has ports of its own (nr_policy.c): the first such grant has the
 * kernel make it, by the same incremental update a reload sends (only
 * that sandbox's objects change).  Failing that, the names with ports
 * stay closed (their additions are refused), never wider.
 */
static void
ports_set_made(struct ctl_req *r, const struct moat_sandbox *sb, bool had)
{
	char err[512];

	if (had || !config_allow_has_ports(&sb->allow))
		return;
	if (policy_apply(r->gw, r->gw->cfg, err, sizeof(err)) == 0)
		return;
	log_warnx("grant to %s: its set for names with ports could not be "
	    "made: %s", sb->name, err);
	ctl_reply(r, "warning: the kernel refused %s's set for names with "
	    "ports of their own (%s); they stay closed until a reload "
	    "succeeds\n", sb->name, err);
}

void
ctl_allow(struct ctl_req *r)
{
	struct grant_req g;
	char until[32];
	struct tm tm;
	time_t t;
	size_t i;
	bool had;

	if (parse(r, true, &g) == -1 || !may_grant(r, &g) ||
	    to_entries(r, &g) == -1) {
		req_free(&g);
		return;
	}
	had = config_allow_has_ports(&g.sb->allow);
	if ((g.secs > 0 ? allow_for_a_while(r, &g) :
	    allow_for_good(r, &g)) == -1) {
		req_free(&g);
		return;
	}
	ports_set_made(r, g.sb, had);
	proc_reload_sandboxes(r->gw, (const char *const *)&g.sb->name, 1);
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
		(void)dropin_change(r, g->sb, NULL, 0, stay, n, found, false,
		    NULL);
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
	struct moat_strlist rest = { NULL, 0 };
	struct gw_grant *x;
	size_t i, j, ndel = 0, nnamed = 0;
	bool lost, granted;
	char *path;

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
		if (dropin_change(r, g.sb, NULL, 0, del, ndel, found, false,
		    NULL) == -1)
			goto out;
	}
	for (i = 0; i < ndel; i++) {
		in_file |= found[i];
		for (j = 0, granted = false; j < r->gw->ngrants && !granted; j++)
			granted = grant_asked(&r->gw->grants[j], g.sb, &del[i],
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
	if (in_file && dropin_change(r, g.sb, NULL, 0, del, ndel, found, true,
	    &loaded) == -1)
		goto out;
	if (in_file)
		kept_forget(g.sb->name, del, ndel, nnamed);
	/* Without the file: the list in force less what grants added (the
	 * grants that stay add theirs again, list_replace). */
	for (i = 0; loaded == NULL && i < g.sb->allow.n; i++) {
		x = grant_find(r->gw, g.sb->name, g.sb->allow.v[i], NULL);
		for (granted = false, j = 0; x != NULL && j < r->gw->ngrants;
		    j++)
			granted |= r->gw->grants[j].added && strcmp(
			    r->gw->grants[j].sandbox, g.sb->name) == 0 &&
			    strcmp(r->gw->grants[j].name, x->name) == 0;
		if (!granted)
			list_add(&rest, g.sb->allow.v[i]);
	}
	for (i = 0; i < r->gw->ngrants;)
		if (grant_asked(&r->gw->grants[i], g.sb, del, ndel, nnamed)) {
			grant_forward(r->gw, g.sb->name, r->gw->grants[i].name,
			    0);		/* it ends on the other box too */
			grant_drop(r->gw, &r->gw->grants[i]);
		} else
			i++;
	if (loaded != NULL)
		lost = list_from(r->gw, g.sb, loaded);
	else {
		lost = list_replace(r->gw, g.sb, &rest);
		for (i = 0; i < rest.n; i++)
			free(rest.v[i]);
		free(rest.v);
	}
	proc_reload_sandboxes(r->gw, (const char *const *)&g.sb->name, 1);
	if (lost)
		cut_narrowed(r->gw, (const char *const *)&g.sb->name, 1);
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
	if (gw->ngrants == 0)
		return 0;
	v = xcalloc(gw->ngrants, sizeof(*v));
	for (i = 0; i < gw->ngrants; i++) {
		ms = gw->grants[i].until_ms;
		v[i].sandbox = gw->grants[i].sandbox;
		v[i].n = 1;
		v[i].left = ms <= now ? 0 : (long)((ms - now + 999) / 1000);
	}
	qsort(v, gw->ngrants, sizeof(*v), sum_cmp);
	for (i = 0; i < gw->ngrants; i++) {
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
	for (i = 0; i < r->gw->ngrants; i++) {
		const struct gw_grant *x = &r->gw->grants[i];

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

	for (i = 0; i < gw->ngrants; i++) {
		const struct gw_grant *x = &gw->grants[i];

		if ((sandbox != NULL && strcmp(x->sandbox, sandbox) != 0) ||
		    x->until_ms <= now ||
		    (own_only && strcmp(x->from, PEER_FROM) == 0))
			continue;
		left = (x->until_ms - now + 999) / 1000;
		grant_forward(gw, x->sandbox, x->name, left > IPC_HA_GRANT_MAX_S ?
		    IPC_HA_GRANT_MAX_S : (uint32_t)left);
	}
}

/* x goes as if it expired; true if sb's list lost its name (the caller
 * empties sb's sets, without sending that on). */
static bool
peer_end(struct gw *gw, struct moat_sandbox *sb, struct gw_grant *x)
{
	bool lost = false;

	if (x->added && grant_other(gw, x) != NULL)
		grant_other(gw, x)->added = true;	/* it stays */
	else if (x->added)
		lost = list_del(&sb->allow, x->name);
	grant_drop(gw, x);
	return lost;
}

/* The children take sb's new list; what it lost is closed and cut. */
static void
peer_changed(struct gw *gw, struct moat_sandbox *sb, bool lost, bool had)
{
	const char *why;
	char err[512];

	if (!had && config_allow_has_ports(&sb->allow) &&
	    policy_apply(gw, gw->cfg, err, sizeof(err)) == -1)
		log_warnx("grant to %s from the other box: its set for names "
		    "with ports could not be made: %s", sb->name, err);
	if (lost)
		(void)policy_flush_peer(gw, sb->name, &why);
	proc_reload_sandboxes(gw, (const char *const *)&sb->name, 1);
	if (lost)
		cut_narrowed(gw, (const char *const *)&sb->name, 1);
}

/* The other box's grants for sb end (its whole state follows). */
void
grants_peer_state(struct gw *gw, const char *sandbox)
{
	struct moat_sandbox *sb = sandbox_rw(gw->cfg, sandbox);
	bool lost = false, any = false;
	size_t i = 0;

	if (sb == NULL)
		return;
	while (i < gw->ngrants)
		if (strcmp(gw->grants[i].sandbox, sandbox) == 0 &&
		    strcmp(gw->grants[i].from, PEER_FROM) == 0) {
			lost |= peer_end(gw, sb, &gw->grants[i]);
			any = true;
		} else
			i++;
	if (any)
		peer_changed(gw, sb, lost, true);
}

/* A grant the other box made: recorded here as root's `ctl allow SANDBOX
 * ENTRY --for SECS` would be, from PEER_FROM; the elements its name
 * opens are admitted as any other.  An ungrant ends every grant for a
 * while of the entry here (narrowing only).  0, or -1 with why. */
int
grants_peer(struct gw *gw, const struct ipc_ha_grant *m, const char **why)
{
	struct moat_sandbox *sb = sandbox_rw(gw->cfg, m->sandbox);
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	char w[384], *v;
	struct gw_grant *x;
	bool had, lost = false, any = false;
	size_t i;

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
	had = config_allow_has_ports(&sb->allow);
	if (m->secs == 0) {
		i = 0;
		while (i < gw->ngrants)
			if (strcmp(gw->grants[i].sandbox, sb->name) == 0 &&
			    strcmp(gw->grants[i].name, v) == 0) {
				lost |= peer_end(gw, sb, &gw->grants[i]);
				any = true;
			} else
				i++;
		free(v);
		if (any)
			peer_changed(gw, sb, lost, had);
		return 0;
	}
	if ((x = grant_find(gw, sb->name, v, PEER_FROM)) == NULL) {
		if (gw->ngrants >= GW_GRANTS_MAX ||
		    grants_of(gw, sb->name) >= GW_GRANTS_PER_SANDBOX) {
			free(v);
			*why = "too many grants";
			return -1;
		}
		gw->grants = xreallocarray(gw->grants, gw->ngrants + 1,
		    sizeof(*gw->grants));
		x = &gw->grants[gw->ngrants++];
		memset(x, 0, sizeof(*x));
		snprintf(x->sandbox, sizeof(x->sandbox), "%s", sb->name);
		x->name = v;
		snprintf(x->from, sizeof(x->from), "%s", PEER_FROM);
		x->added = !config_strlist_has(&sb->allow, x->name);
		if (x->added)
			list_add(&sb->allow, x->name);
		if (config_named_ports(&sb->allow, p) == -1) {
			if (x->added)
				list_del(&sb->allow, x->name);
			grant_drop(gw, x);
			*why = "too many distinct ports";
			return -1;
		}
	} else
		free(v);
	x->until_ms = gw_mono_ms() + (uint64_t)m->secs * 1000;
	x->until = time(NULL) + m->secs;
	x->since = time(NULL);
	x->uid = 0;
	snprintf(x->by, sizeof(x->by), "ha-peer");
	peer_changed(gw, sb, false, had);
	return 0;
}
