/*
 * parent/reload.c -- the parent re-reads its configuration: validate it,
 * apply it in one transaction (or keep the old policy), cut the flows it
 * no longer allows, decide once what changed (conf_delta), and tell the
 * children what that means for each.  Called for SIGHUP (parent.c) and
 * for "reload" and "secret set" (parent/ctl.c, parent/secret.c); it calls
 * none of them.  The messages of a change (the IPC_CONF family, ipc.h)
 * are built here or from what is decided here.
 */
#include <sys/stat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admit.h"
#include "gw.h"
#include "commit.h"
#include "proc.h"
#include "reload.h"
#include "proxy.h"
#include "audit.h"
#include "team.h"
#include "policy.h"
#include "refused.h"
#include "grant.h"
#include "network.h"
#include "metrics.h"
#include "log.h"
#include "verdicts.h"

/* --- what changed ---------------------------------------------------------- */

static int
id_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gw_secret_id *)a)->name,
	    ((const struct gw_secret_id *)b)->name);
}

/* Each secret file's identity (device, inode, modification time, size),
 * taken before its value is read, so that a file changed meanwhile only
 * makes the next reload send it again.  Sorted by name. */
struct gw_secret_id *
conf_secret_ids(const struct moat_config *cfg, size_t *n)
{
	struct gw_secret_id *v = xcalloc(cfg->nsecrets + 1, sizeof(*v));
	struct stat st;
	size_t i;

	for (i = 0; i < cfg->nsecrets; i++) {
		snprintf(v[i].name, sizeof(v[i].name), "%s",
		    cfg->secrets[i].name);
		if (stat(cfg->secrets[i].file, &st) == -1)
			continue;
		v[i].ok = true;
		v[i].dev = (uint64_t)st.st_dev;
		v[i].ino = (uint64_t)st.st_ino;
		v[i].size = (uint64_t)st.st_size;
		v[i].mtime_s = (int64_t)st.st_mtim.tv_sec;
		v[i].mtime_ns = st.st_mtim.tv_nsec;
	}
	qsort(v, cfg->nsecrets, sizeof(*v), id_cmp);
	*n = cfg->nsecrets;
	return v;
}

static const struct gw_secret_id *
id_find(const struct gw_secret_id *v, size_t n, const char *name)
{
	struct gw_secret_id key;

	if (v == NULL)
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, v, n, sizeof(*v), id_cmp);
}

static bool
id_same(const struct gw_secret_id *a, const struct gw_secret_id *b)
{
	return a != NULL && b != NULL && a->ok && b->ok && a->dev == b->dev &&
	    a->ino == b->ino && a->size == b->size &&
	    a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns;
}

static void
push(char ***v, size_t *n, const char *name)
{
	*v = xreallocarray(*v, *n + 1, sizeof(**v));
	(*v)[(*n)++] = xstrdup(name);
}

static void
sandbox_pair(const struct moat_sandbox *o, const struct moat_sandbox *n,
    void *arg)
{
	struct gw_delta *d = arg;

	if (n != NULL && !config_sandbox_same(o, n))
		push(&d->sandboxes, &d->nsandboxes, n->name);
}

/* The secrets: each of old's that ncfg lacks or defines otherwise, and
 * each of ncfg's that is new or whose file is not the one the workers'
 * value came from (proxy_of(gw)->secret_ids). */
static void
secrets_delta(struct gw *gw, const struct moat_config *old,
    const struct moat_config *ncfg, struct gw_delta *d)
{
	const struct moat_secret *os, *ns;
	size_t i;
	bool gone;

	d->ids = conf_secret_ids(ncfg, &d->nids);
	d->values = xcalloc(ncfg->nsecrets + 1, sizeof(*d->values));
	for (i = 0; i < old->nsecrets; i++) {
		os = &old->secrets[i];
		ns = config_secret_by_name(ncfg, os->name);
		gone = ns == NULL || !config_secret_same(os, ns);
		d->secret_defs |= gone;
		if (gone)
			push(&d->secrets, &d->nsecrets, os->name);
	}
	for (i = 0; i < ncfg->nsecrets; i++) {
		ns = &ncfg->secrets[i];
		os = config_secret_by_name(old, ns->name);
		if (os == NULL)
			d->secret_defs = true;
		if (os != NULL && id_same(id_find(d->ids, d->nids, ns->name),
		    id_find(proxy_of(gw)->secret_ids, proxy_of(gw)->nsecret_ids, ns->name)))
			continue;
		d->values[d->nvalues++] = i;
		if (os != NULL && config_secret_same(os, ns))
			push(&d->secrets, &d->nsecrets, ns->name);
	}
}

/*
 * What changed from old to ncfg, once for every child: whether anything
 * but sandboxes and secrets did (then the proxy workers drain), which
 * sandboxes in both have other settings, and which secrets changed.
 */
void
conf_delta(struct gw *gw, const struct moat_config *old,
    const struct moat_config *ncfg, struct gw_delta *d)
{
	char *a = config_text_but_sandboxes_secrets(old);
	char *b = config_text_but_sandboxes_secrets(ncfg);

	memset(d, 0, sizeof(*d));
	d->basis = strcmp(a, b) != 0;
	free(a);
	free(b);
	admit_pair_sandboxes(old, ncfg, sandbox_pair, d);
	secrets_delta(gw, old, ncfg, d);
}

void
conf_delta_free(struct gw_delta *d)
{
	size_t i;

	for (i = 0; i < d->nsandboxes; i++)
		free(d->sandboxes[i]);
	for (i = 0; i < d->nsecrets; i++)
		free(d->secrets[i]);
	free(d->sandboxes);
	free(d->secrets);
	free(d->values);
	free(d->ids);
	memset(d, 0, sizeof(*d));
}

/* --- a grant's message ------------------------------------------------------ */

size_t
conf_allow_msg(const struct gw *gw, const char *sandbox, uint32_t gen,
    void *buf)
{
	struct ipc_conf_allow *m = buf;
	const struct moat_sandbox *sb = config_sandbox_by_name(gw->cfg,
	    sandbox);
	size_t i, off = 0, len;

	if (sb == NULL || sb->allow.n > IPC_CONF_ALLOW_MAX)
		return 0;
	memset(m, 0, sizeof(*m));
	for (i = 0; i < sb->allow.n; i++) {
		len = strlen(sb->allow.v[i]) + 1;
		if (sizeof(*m) + off + len > IPC_MAX_PAYLOAD)
			return 0;
		memcpy(m->names + off, sb->allow.v[i], len);
		off += len;
	}
	m->gen = gen;
	snprintf(m->sandbox, sizeof(m->sandbox), "%s", sb->name);
	m->len = (uint32_t)off;
	return sizeof(*m) + off;
}

/* --- the reload ------------------------------------------------------------- */

/* The config's warnings, one log line each (start-up and reload). */
void
gw_log_warnings(const struct moat_config *cfg, const struct moat_errors *errs)
{
	char *text = team_config_warnings(cfg, errs), *line, *save = NULL;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		log_warnx("%s", line);
	free(text);
}

/* Whether what the nflog reader names refusals by differs between A
 * and B: its copy of the configuration is the one it was started with,
 * so it is started again only when that would now name a packet wrong. */
bool
gw_nflog_view_changed(const struct moat_config *a, const struct moat_config *b)
{
	struct moat_addr a6, b6;
	bool ha, hb;
	size_t i;

	if (a->nsandboxes != b->nsandboxes ||
	    strcmp(a->gw.bridge, b->gw.bridge) != 0 ||
	    memcmp(&a->gw.network, &b->gw.network, sizeof(a->gw.network)) ||
	    a->gw.ipv6 != b->gw.ipv6 ||
	    memcmp(&a->gw.ipv6_network, &b->gw.ipv6_network,
	    sizeof(a->gw.ipv6_network)) != 0)
		return true;
	for (i = 0; i < a->nsandboxes; i++) {
		const struct moat_sandbox *x = &a->sandboxes[i];
		const struct moat_sandbox *y = &b->sandboxes[i];

		if (strcmp(x->name, y->name) != 0 ||
		    addr_cmp(&x->address, &y->address) != 0 ||
		    memcmp(x->mac, y->mac, sizeof(x->mac)) != 0)
			return true;
		memset(&a6, 0, sizeof(a6));
		memset(&b6, 0, sizeof(b6));
		ha = config_sandbox_addr6(a, x, &a6);
		hb = config_sandbox_addr6(b, y, &b6);
		if (ha != hb || (ha && addr_cmp(&a6, &b6) != 0))
			return true;
	}
	return false;
}

int
gw_reload(struct gw *gw, char **errors)
{
	struct moat_errors errs;
	struct moat_config *cfg, *old = gw->cfg;
	struct gw_commit c = { .why = "reload" };
	char err[1024], count[16];
	size_t i;

	*errors = NULL;
	cfg = net_config_load(old->path, &errs);
	if (cfg == NULL) {
		*errors = config_errors_text(&errs);
		snprintf(count, sizeof(count), "%zu", errs.n);
		log_warnx("reload refused: %zu error(s) in %s; the previous "
		    "policy stays", errs.n, old->path);
		/* The whole text is for admins; a member who asked sees only
		 * what is about their own files (ctl_reply_errors). */
		for (i = 0; i < errs.n; i++)
			log_warnx("reload refused: %s", errs.msg[i]);
		audit_event(gw, "reload", "result", "refused", "errors", count,
		    "first_error", errs.msg[0], NULL);
		config_errors_free(&errs);
		reload_of(gw)->reload_failures++;
		return -1;
	}
	gw_log_warnings(cfg, &errs);
	config_errors_free(&errs);
	if (metrics_reload_check(gw, cfg, err, sizeof(err)) == -1) {
		xasprintf(errors, "%s\n", err);
		log_warnx("reload refused: %s", err);
		audit_event(gw, "reload", "result", "refused", "error", err, NULL);
		config_free(cfg);
		reload_of(gw)->reload_failures++;
		return -1;
	}
	if (gw_commit(gw, cfg, &c, err, sizeof(err)) == -1) {
		metrics_reload_abort();
		xasprintf(errors, "%s: %s\n", old->path, err);
		log_warnx("reload refused by the kernel: %s", err);
		audit_event(gw, "reload", "result", "refused", "error", err, NULL);
		config_free(cfg);
		reload_of(gw)->reload_failures++;
		return -1;
	}
	reload_of(gw)->reloads++;
	reload_of(gw)->last_reload = time(NULL);
	reload_of(gw)->reload_ms = c.ms;
	snprintf(count, sizeof(count), "%d", c.cut);
	log_info("reloaded %s: %zu sandboxes, %d flow(s) cut", gw->cfg->path,
	    gw->cfg->nsandboxes, c.cut);
	audit_event(gw, "reload", "result", "ok", "flows_cut", count, NULL);
	return 0;
}

int
gw_reload_check(void *gw, const char *conf_path, char **errors)
{
	(void)conf_path;
	return gw_reload(gw, errors);
}

static void
reload_stop(struct gw *gw)
{
	free(reload_of(gw)->cfgtext.text);
	reload_of(gw)->cfgtext.text = NULL;
}

/* Commits of the policy (commit.h), whatever asked for them. */
static void
reload_metrics(FILE *fp, const struct gw *gw)
{
	fputs("# HELP moat_commits_total Changes of the policy in force, "
	    "each through one commit.\n# TYPE moat_commits_total counter\n",
	    fp);
	fprintf(fp, "moat_commits_total %u\n", reload_of(gw)->commits);
	fputs("# HELP moat_last_commit_seconds How long the last commit "
	    "took.\n# TYPE moat_last_commit_seconds gauge\n", fp);
	fprintf(fp, "moat_last_commit_seconds %.6f\n",
	    reload_of(gw)->commit_ms / 1e3);
}

const struct gw_module reload_module = {
	.name = "reload",
	.size = sizeof(struct gw_reload),
	.stop = reload_stop,
	.metrics = reload_metrics,
};
