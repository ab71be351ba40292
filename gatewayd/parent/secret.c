/*
 * parent/secret.c -- `gatewayd ctl secret set NAME --host H [--header X]
 * [--share USER]` and `secret list`: members add and rotate their own
 * secrets without root.
 *
 * The value arrives on the line after the request, read by the client
 * from its standard input; it is written once, to a root-only 0600 file
 * (state_dir/secrets/NAME for a new secret, or the file the secret's
 * definition names), and is never echoed, logged or audited.  The buffer
 * that held it is wiped once the request is handled (control.c,
 * parent/ctl.c).  A new secret's definition goes to secrets.d/NAME.conf
 * beside moat.conf, naming the caller as its owner; setting one that
 * exists changes only what the request names (its hosts, and its header
 * and shared_with when given) and keeps every other setting and comment
 * an admin put in its drop-in.
 *
 * The files change all or nothing (lib/cfgtxn.h): if the configuration
 * with them does not load or apply, the old files are put back and the
 * caller is told; the configuration on disk always loads.  The reload
 * restarts or reconfigures the proxy, so new requests use the new value
 * while guests keep their placeholder.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "confpath.h"
#include "conftext.h"
#include "gw.h"
#include "reload.h"
#include "audit.h"
#include "ctl.h"
#include "team.h"
#include "budgets.h"
#include "log.h"
#include "secretfile.h"
#include "smallfile.h"

#define MAX_HOSTS	16
/* A member's own secrets, at most: each is a drop-in every reload loads
 * and checks against every other secret, so without a bound one member
 * could make every reload (and so gatewayd, for everyone) slow. */
#define MEMBER_SECRETS	32

struct secret_req {
	const char	*name;
	const char	*hosts[MAX_HOSTS];
	int		 nhosts;
	const char	*header;
	const char	*share[MAX_HOSTS];
	int		 nshare;
};

static bool
secret_name_ok(const char *s)
{
	return confpath_name_valid(s);
}

static bool
header_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~") == n;
}

/* A header value: printable ASCII, no leading or trailing space. */
static bool
value_ok(const char *v)
{
	size_t i, n = strlen(v);

	if (n == 0 || n > GW_SECRET_MAX || v[0] == ' ' || v[n - 1] == ' ')
		return false;
	for (i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] > 0x7e)
			return false;
	return true;
}

static int
parse_set(struct ctl_req *r, struct secret_req *q)
{
	int i;

	for (i = 2; i < r->argc; i++) {
		const char *a = r->argv[i], *v = i + 1 < r->argc ?
		    r->argv[i + 1] : NULL;
		if (a[0] != '-' && q->name == NULL && secret_name_ok(a)) {
			q->name = a;
			continue;
		}
		if (v == NULL)
			goto usage;
		if (strcmp(a, "--host") == 0 && q->nhosts < MAX_HOSTS &&
		    hostname_valid(v))
			q->hosts[q->nhosts++] = v;
		else if (strcmp(a, "--header") == 0 && header_ok(v))
			q->header = v;
		else if (strcmp(a, "--share") == 0 && q->nshare < MAX_HOSTS &&
		    config_username_valid(v))
			q->share[q->nshare++] = v;
		else
			goto usage;
		i++;
	}
	if (q->name != NULL && q->nhosts > 0)
		return 0;
usage:
	ctl_refuse(r, NULL, "usage: secret set NAME --host HOST [--host HOST] "
	    "[--header NAME] [--share USER] (NAME: a-z, 0-9, '-', '_'; the "
	    "value on standard input)");
	return -1;
}

static int
mkdir_root(const char *dir, mode_t mode)
{
	struct stat st;

	if (mkdir(dir, mode) == -1 && errno != EEXIST)
		return -1;
	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode) || st.st_uid != 0) {
		errno = EPERM;
		return -1;
	}
	return chmod(dir, mode);
}

static char *
placeholder_new(const char *name)
{
	unsigned char rnd[8];
	char *p;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		fatal("getrandom");
	xasprintf(&p, "moat-%s-%02x%02x%02x%02x%02x%02x%02x%02x", name, rnd[0],
	    rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	return p;
}

/* A list's text, [ "a", "b" ]: each value was checked (host and user
 * names), so none holds a quote or a backslash. */
static char *
list_text(const char *const *v, int n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	int i;

	if (fp == NULL)
		fatalx("out of memory");
	fputc('[', fp);
	for (i = 0; i < n; i++)
		fprintf(fp, "%s \"%s\"", i ? "," : "", v[i]);
	fputs(" ]", fp);
	fclose(fp);
	return buf;
}

static char *
dropin_text(const struct secret_req *q, const char *file, const char *header,
    const char *placeholder, const char *owner)
{
	char *buf = NULL, *hosts, *share = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	if (fp == NULL)
		fatalx("out of memory");
	hosts = list_text(q->hosts, q->nhosts);
	fprintf(fp, "# written by gatewayd ctl secret set; the value is in "
	    "%s\nname = \"%s\";\nfile = \"%s\";\nhosts = %s;\nheader = \"%s\";\n"
	    "placeholder = \"%s\";\nowner = \"%s\";\n", file, q->name, file,
	    hosts, header, placeholder, owner);
	if (q->nshare > 0) {
		share = list_text(q->share, q->nshare);
		fprintf(fp, "shared_with = %s;\n", share);
	}
	fclose(fp);
	free(hosts);
	free(share);
	return buf;
}

/* The drop-in as it is on disk with hosts, and header and shared_with
 * when the request names them, set: every other setting an admin added
 * (requests, budget, comments) stays.  NULL if refused. */
static char *
dropin_edit(struct ctl_req *r, const struct secret_req *q, const char *path)
{
	char *text, *next, *val;
	size_t len;

	if ((text = read_small_file(path, 65536, &len)) == NULL) {
		ctl_refuse(r, NULL, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	val = list_text(q->hosts, q->nhosts);
	next = len < 65536 ? conftext_set(text, "hosts", val) : NULL;
	free(val);
	free(text);
	if ((text = next) != NULL && q->header != NULL) {
		xasprintf(&val, "\"%s\"", q->header);
		text = conftext_set(next, "header", val);
		free(val);
		free(next);
	}
	if ((next = text) != NULL && q->nshare > 0) {
		val = list_text(q->share, q->nshare);
		text = conftext_set(next, "shared_with", val);
		free(val);
		free(next);
	}
	if (text == NULL)
		ctl_refuse(r, NULL, "cannot change %s: it is not one setting "
		    "after another; an administrator can edit it by hand", path);
	return text;
}

/* A secret an admin defined in moat.conf keeps its definition; its owner
 * may only replace the value. */
static int
same_hosts(const struct moat_secret *x, const struct secret_req *q)
{
	int i;
	size_t j;

	if ((size_t)q->nhosts != x->hosts.n)
		return 0;
	for (i = 0; i < q->nhosts; i++) {
		for (j = 0; j < x->hosts.n; j++)
			if (strcasecmp(x->hosts.v[j], q->hosts[i]) == 0)
				break;
		if (j == x->hosts.n)
			return 0;
	}
	return 1;
}

static int
stage_file(struct ctl_req *r, struct cfgtxn *t, const char *path,
    const char *data, mode_t mode, uid_t uid, gid_t gid)
{
	if (cfgtxn_stage_write(t, path, data, strlen(data), mode, uid, gid) ==
	    0)
		return 0;
	ctl_refuse(r, NULL, "cannot write %s: %s", path, strerror(errno));
	return -1;
}

/* The value of a secret that exists, and its drop-in (if it has one)
 * edited; the drop-in keeps its mode and owner. */
static int
stage_existing(struct ctl_req *r, const struct secret_req *q,
    const struct moat_secret *old, struct cfgtxn *t)
{
	struct stat st;
	char *text;
	int rc;

	if (!old->dropin) {
		if (!same_hosts(old, q) || (q->header && strcasecmp(q->header,
		    old->header) != 0) || q->nshare > 0) {
			ctl_refuse(r, NULL, "secret \"%s\" is defined in %s: "
			    "only its value can be set here", q->name,
			    old->where.file);
			return -1;
		}
		return stage_file(r, t, old->file, r->body, 0600, 0, 0);
	}
	if ((text = dropin_edit(r, q, old->where.file)) == NULL)
		return -1;
	if (stat(old->where.file, &st) == -1)
		st = (struct stat){ .st_mode = 0644 };
	rc = stage_file(r, t, old->file, r->body, 0600, 0, 0) == -1 ||
	    stage_file(r, t, old->where.file, text, st.st_mode & 07777,
	    st.st_uid, st.st_gid) == -1 ? -1 : 0;
	free(text);
	return rc;
}

/* Another secret's value file is path (the same file under any name):
 * an admin may keep a secret's value in state_dir/secrets under a name
 * that is not the secret's, and a new secret of that name must not
 * replace it. */
static const struct moat_secret *
value_file_used(const struct moat_config *cfg, const char *path)
{
	struct stat a, b;
	bool there = stat(path, &a) == 0;
	size_t i;

	for (i = 0; i < cfg->nsecrets; i++) {
		const char *f = cfg->secrets[i].file;
		if (f != NULL && (strcmp(f, path) == 0 || (there &&
		    stat(f, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)))
			return &cfg->secrets[i];
	}
	return NULL;
}

/* May the caller own one more secret?  Admins: always. */
static bool
below_secret_limit(struct ctl_req *r)
{
	const struct moat_config *cfg = r->gw->cfg;
	size_t i, n = 0;

	if (r->admin)
		return true;
	for (i = 0; i < cfg->nsecrets; i++)
		if (cfg->secrets[i].owner != NULL &&
		    strcmp(cfg->secrets[i].owner, r->user) == 0)
			n++;
	if (n < MEMBER_SECRETS)
		return true;
	ctl_refuse(r, NULL, "secret set: you own %zu secrets, the most a "
	    "member may own is %d; set a new value for one of them, or ask "
	    "an administrator", n, MEMBER_SECRETS);
	return false;
}

/*
 * A member asking for a name they cannot have hears one answer, whether
 * it is another member's secret, an administrator's or a file left in
 * the way: never whose it is or that a secret of that name exists.
 * Secret names are one namespace, so "taken" itself cannot be hidden.
 */
static void
name_taken(struct ctl_req *r, const char *name)
{
	ctl_refuse(r, NULL, "secret set: the name \"%s\" is not available to "
	    "you; choose another name", name);
}

/* A new secret: its value in state_dir/secrets/NAME, its definition in
 * secrets.d/NAME.conf, owned by the caller. */
static int
stage_new(struct ctl_req *r, const struct secret_req *q, struct cfgtxn *t,
    const char *placeholder)
{
	const struct moat_config *cfg = r->gw->cfg;
	char *dir, *file, *ddir, *dpath, *text;
	int rc = -1;

	if (!ctl_may_own(r, NULL) || !below_secret_limit(r))
		return -1;
	xasprintf(&dir, "%s/secrets", cfg->gw.state_dir);
	xasprintf(&file, "%s/%s", dir, q->name);
	ddir = confpath_dir(cfg->path, "secrets.d");
	dpath = confpath_secret(cfg->path, q->name);
	text = dropin_text(q, file, q->header ? q->header : "Authorization",
	    placeholder, r->user);
	if (access(dpath, F_OK) == 0 && !r->admin)
		name_taken(r, q->name);
	else if (access(dpath, F_OK) == 0)
		ctl_refuse(r, NULL, "%s exists but defines no secret \"%s\"; "
		    "choose another name", dpath, q->name);
	else if (value_file_used(cfg, file) != NULL && !r->admin)
		name_taken(r, q->name);
	else if (value_file_used(cfg, file) != NULL)
		ctl_refuse(r, NULL, "%s holds the value of another secret; "
		    "choose another name", file);
	else if (mkdir_root(dir, 0700) == -1 || mkdir_root(ddir, 0755) == -1)
		ctl_refuse(r, NULL, "cannot make %s or %s: %s", dir, ddir,
		    strerror(errno));
	else if (stage_file(r, t, file, r->body, 0600, 0, 0) == 0 &&
	    stage_file(r, t, dpath, text, 0644, 0, 0) == 0)
		rc = 0;
	free(text);
	free(dpath);
	free(ddir);
	free(file);
	free(dir);
	return rc;
}

/* The files staged, which are the caller's to hear about. */
static size_t
staged(const struct cfgtxn *t, const char **v, size_t max)
{
	size_t i, n = cfgtxn_count(t);

	for (i = 0; i < n && i < max; i++)
		v[i] = cfgtxn_path(t, i);
	return i;
}

static void
secret_set(struct ctl_req *r)
{
	struct secret_req q = { NULL };
	const struct moat_secret *old;
	struct cfgtxn *t;
	const char *mine[4];
	char *placeholder = NULL, *errors = NULL, uid[16];
	bool rotated;
	int rc;

	if (parse_set(r, &q) == -1)
		return;
	if (r->body == NULL || !value_ok(r->body)) {
		ctl_refuse(r, NULL, "secret set: expected the value on standard "
		    "input: 1 to %d printable characters on one line",
		    GW_SECRET_MAX);
		return;
	}
	if (secret_value_placeholder(r->gw->cfg, r->body, strlen(r->body))) {
		ctl_refuse(r, NULL, "secret set: the value contains the "
		    "placeholder of a secret; a value may hold no placeholder");
		return;
	}
	old = config_secret_by_name(r->gw->cfg, q.name);
	if (old != NULL && !r->admin && (old->owner == NULL ||
	    strcmp(old->owner, r->user) != 0)) {
		/* The checks a new name meets first, in the same order, so
		 * that no answer tells a taken name from a free one. */
		if (ctl_may_own(r, NULL) && below_secret_limit(r))
			name_taken(r, q.name);
		return;
	}
	rotated = old != NULL;
	placeholder = old ? xstrdup(old->placeholder) : placeholder_new(q.name);
	t = cfgtxn_begin(r->gw->cfg->path);
	rc = old ? stage_existing(r, &q, old, t) : stage_new(r, &q, t,
	    placeholder);
	/* From here on old may be freed: a reload replaces the config. */
	if (rc == 0 && cfgtxn_commit_and_check(t, gw_reload_check, r->gw,
	    &errors) == -1) {
		ctl_reply_errors(r, errors, mine, staged(t, mine, 4));
		ctl_refuse(r, NULL, "secret \"%s\" not set: the configuration "
		    "would not load with it; nothing was changed", q.name);
	} else if (rc == 0) {
		snprintf(uid, sizeof(uid), "%u", (unsigned)r->uid);
		audit_event(r->gw, "secret-set", "uid", uid, "user", r->user,
		    "secret", q.name, "rotated", rotated ? "yes" : "no", NULL);
		ctl_reply(r, "secret %s: placeholder %s\nok\n", q.name,
		    placeholder);
	}
	cfgtxn_end(t);
	free(errors);
	free(placeholder);
}

/* Request rules, and usage against the budget as the parent counts it
 * (the requests it charged in the last 60 seconds and 24 hours). */
static void
secret_list_usage(struct ctl_req *r, const struct moat_secret *x)
{
	uint64_t um, ud;
	size_t j;

	budget_usage(&budgets_of(r->gw)->budgets, x->name, gw_budget_now(r->gw), &um, &ud);
	if (!r->json) {
		if (x->per_minute)
			ctl_reply(r, "  budget %llu/%ld per minute",
			    (unsigned long long)um, x->per_minute);
		if (x->per_day)
			ctl_reply(r, "%s %llu/%ld per day", x->per_minute ?
			    "," : "  budget", (unsigned long long)ud, x->per_day);
		if (x->has_requests)
			ctl_reply(r, "  %zu request rule%s", x->requests.n,
			    x->requests.n == 1 ? "" : "s");
		return;
	}
	ctl_reply(r, ",\"requests\":");
	for (j = 0; j < x->requests.n; j++) {
		ctl_reply(r, j ? "," : "[");
		ctl_reply_jstr(r, x->requests.v[j]);
	}
	ctl_reply(r, x->has_requests ? "]" : "null");
	if (x->per_minute == 0 && x->per_day == 0) {
		ctl_reply(r, ",\"budget\":null");
		return;
	}
	ctl_reply(r, ",\"budget\":{\"requests_per_minute\":%ld,"
	    "\"used_minute\":%llu,\"requests_per_day\":%ld,\"used_day\":%llu}",
	    x->per_minute, (unsigned long long)um, x->per_day,
	    (unsigned long long)ud);
}

/* Secrets the caller owns or that are shared with them (admins: all);
 * names, hosts, placeholders, rules and usage only. */
static void
secret_list_json(struct ctl_req *r, const struct moat_secret *x, bool first)
{
	size_t j;

	ctl_reply(r, "%s{\"name\":", first ? "" : ",");
	ctl_reply_jstr(r, x->name);
	ctl_reply(r, ",\"owner\":");
	ctl_reply_jstr(r, x->owner);
	ctl_reply(r, ",\"header\":");
	ctl_reply_jstr(r, x->header);
	ctl_reply(r, ",\"placeholder\":");
	ctl_reply_jstr(r, x->placeholder);
	ctl_reply(r, ",\"hosts\":[");
	for (j = 0; j < x->hosts.n; j++) {
		ctl_reply(r, j ? "," : "");
		ctl_reply_jstr(r, x->hosts.v[j]);
	}
	ctl_reply(r, "],\"shared_with\":[");
	for (j = 0; j < x->shared_with.n; j++) {
		ctl_reply(r, j ? "," : "");
		ctl_reply_jstr(r, x->shared_with.v[j]);
	}
	ctl_reply(r, "]");
	secret_list_usage(r, x);
	ctl_reply(r, "}");
}

static void
secret_list(struct ctl_req *r)
{
	const struct moat_config *cfg = r->gw->cfg;
	const struct moat_secret *x;
	size_t i, j, shown = 0;

	if (r->json)
		ctl_reply(r, "[");
	for (i = 0; i < cfg->nsecrets; i++) {
		x = &cfg->secrets[i];
		if (!ctl_may_see(r, x->owner) && !secret_usable_by(x, r->user))
			continue;
		if (r->json) {
			secret_list_json(r, x, shown++ == 0);
			continue;
		}
		ctl_reply(r, "%-20s %-10s %-14s %s", x->name,
		    x->owner ? x->owner : "-", x->header, x->placeholder);
		for (j = 0; j < x->hosts.n; j++)
			ctl_reply(r, "%s%s", j ? "," : " ", x->hosts.v[j]);
		secret_list_usage(r, x);
		ctl_reply(r, "\n");
	}
	ctl_reply(r, r->json ? "]\nok\n" : "ok\n");
}

void
team_secret(struct ctl_req *r)
{
	if (r->json && !(r->argc == 2 && strcmp(r->argv[1], "list") == 0))
		ctl_reply(r, "error: only \"secret list\" has --json output\n");
	else if (r->argc >= 2 && strcmp(r->argv[1], "set") == 0)
		secret_set(r);
	else if (r->argc == 2 && strcmp(r->argv[1], "list") == 0)
		secret_list(r);
	else if (r->argc >= 2 && (strcmp(r->argv[1], "attach") == 0 ||
	    strcmp(r->argv[1], "detach") == 0))
		secret_attach(r);
	else
		ctl_refuse(r, NULL, "usage: secret set NAME --host HOST "
		    "[--header NAME] [--share USER] | secret list | secret "
		    "attach|detach SANDBOX NAME");
}
