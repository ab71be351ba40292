/*
 * config_load.c -- read moat.conf, secrets.d/ and sandboxes.d/ with
 * libconfig into one validated struct moat_config.
 *
 * Parsing is driven by the tables of {key, type, required, setter} in
 * config_schema.c: walk() rejects unknown keys, wrong types and missing
 * keys for every group, and the setters validate values.  Cross-checks
 * (config_check.c) run once everything is read.  Every error is
 * "file:line: context: what was expected"; any error discards the whole
 * model so nothing is ever half-applied.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_int.h"
#include "confpath.h"
#include "log.h"

#define MAX_ERRORS	100

/* --- errors ------------------------------------------------------------- */

void
adderr(struct loader *ld, const char *file, int line, const char *fmt, ...)
{
	struct moat_errors *e = ld->errs;
	char *msg, *full;
	va_list ap;

	if (e->n >= MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	if (e->n == MAX_ERRORS - 1)
		xasprintf(&full, "%s: too many errors, stopping", file);
	else if (line <= 0)	/* about the whole file: no line to name */
		xasprintf(&full, "%s: %s", file, msg);
	else
		xasprintf(&full, "%s:%d: %s", file, line, msg);
	free(msg);
	e->msg = xreallocarray(e->msg, e->n + 1, sizeof(char *));
	e->msg[e->n++] = full;
}

/* Something valid that may not be what was meant, or that this caller
 * cannot check (a secret file a non-root user may not read). */
void
addwarn(struct loader *ld, const char *file, int line, const char *fmt, ...)
{
	struct moat_errors *e = ld->errs;
	char *msg, *full;
	va_list ap;

	if (e->nwarn >= MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	xasprintf(&full, "%s:%d: warning: %s", file, line, msg);
	free(msg);
	e->warn = xreallocarray(e->warn, e->nwarn + 1, sizeof(char *));
	e->warn[e->nwarn++] = full;
}

const char *
sfile(struct loader *ld, const config_setting_t *s)
{
	const char *f = s ? config_setting_source_file(s) : NULL;

	return f ? f : ld->file;
}

int
sline(const config_setting_t *s)
{
	int line = s ? (int)config_setting_source_line(s) : 0;

	return line > 0 ? line : 1;	/* a file's root group has no line */
}

void
where(struct loader *ld, const config_setting_t *s, struct moat_where *w)
{
	const char *f = sfile(ld, s);
	size_t i;

	w->file = ld->file;
	for (i = 0; i < ld->cfg->nfiles; i++)
		if (strcmp(ld->cfg->files[i], f) == 0)
			w->file = ld->cfg->files[i];
	w->line = sline(s);
}

/* --- the table walker ------------------------------------------------- */

const char *
ktype_name(enum ktype t)
{
	static const char *names[] = {
		[K_STR] = "a string in double quotes",
		[K_INT] = "an integer",
		[K_BOOL] = "true or false",
		[K_STRLIST] = "a list of strings like [ \"a\", \"b\" ]",
		[K_INTLIST] = "a list of integers like [ 80, 443 ]",
		[K_GROUP] = "a group in braces { ... }",
		[K_GROUPLIST] = "a list of groups like ( { ... }, { ... } )",
	};
	return names[t];
}

bool
ktype_ok(const config_setting_t *s, enum ktype t)
{
	int ct = config_setting_type(s), i, n, et;

	switch (t) {
	case K_STR:
		return ct == CONFIG_TYPE_STRING;
	case K_INT:
		return ct == CONFIG_TYPE_INT || ct == CONFIG_TYPE_INT64;
	case K_BOOL:
		return ct == CONFIG_TYPE_BOOL;
	case K_GROUP:
		return ct == CONFIG_TYPE_GROUP;
	case K_STRLIST:
	case K_INTLIST:
	case K_GROUPLIST:
		if (ct != CONFIG_TYPE_ARRAY && ct != CONFIG_TYPE_LIST)
			return false;
		et = t == K_STRLIST ? CONFIG_TYPE_STRING :
		    t == K_INTLIST ? CONFIG_TYPE_INT : CONFIG_TYPE_GROUP;
		n = config_setting_length(s);
		for (i = 0; i < n; i++) {
			int e = config_setting_type(config_setting_get_elem(s,
			    (unsigned int)i));
			if (e != et && !(et == CONFIG_TYPE_INT &&
			    e == CONFIG_TYPE_INT64))
				return false;
		}
		return true;
	}
	return false;
}

/* Is a one edit (a letter missing, added, changed or two swapped) away
 * from b?  An unknown key that close to a required one is a typo of it. */
static bool
near_miss(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i = 0;

	if (la > lb)
		return near_miss(b, a);
	if (lb - la > 1)
		return false;
	while (i < la && a[i] == b[i])
		i++;
	if (la == lb)
		return i == la || strcmp(a + i + 1, b + i + 1) == 0 ||
		    (i + 1 < la && a[i] == b[i + 1] && a[i + 1] == b[i] &&
		    strcmp(a + i + 2, b + i + 2) == 0);
	return strcmp(a + i, b + i + 1) == 0;
}

/* Was a misspelling of key given in grp?  Then "unknown key" says it,
 * and "missing" would be the same mistake told twice. */
static bool
misspelt(const config_setting_t *grp, const struct key *keys, size_t nkeys,
    const char *key)
{
	const char *name;
	size_t k;
	int i, n = config_setting_length(grp);

	for (i = 0; i < n; i++) {
		name = config_setting_name(config_setting_get_elem(grp,
		    (unsigned int)i));
		for (k = 0; k < nkeys; k++)
			if (strcmp(keys[k].name, name) == 0)
				break;
		if (k == nkeys && near_miss(name, key))
			return true;
	}
	return false;
}

/* Check every member of grp against keys and call the setters.  A key
 * named in optional is not required even if the table says so. */
static void
walk_opt(struct loader *ld, const config_setting_t *grp, const struct key *keys,
    size_t nkeys, void *obj, const char *ctx, const char *optional)
{
	const config_setting_t *m;
	char expect[512];
	size_t i, k, len;
	int n = config_setting_length(grp);

	for (i = 0; i < (size_t)n; i++) {
		m = config_setting_get_elem(grp, (unsigned int)i);
		for (k = 0; k < nkeys; k++)
			if (strcmp(keys[k].name, config_setting_name(m)) == 0)
				break;
		if (k == nkeys) {
			expect[0] = '\0';
			for (k = 0, len = 0; k < nkeys; k++)
				len += (size_t)snprintf(expect + len,
				    sizeof(expect) - len, "%s%s", k ? ", " : "",
				    keys[k].name);
			serr(ld, m, "%s: unknown key \"%s\" (expected one of: "
			    "%s)", ctx, config_setting_name(m), expect);
			continue;
		}
		if (!ktype_ok(m, keys[k].type)) {
			serr(ld, m, "%s: %s: expected %s", ctx, keys[k].name,
			    ktype_name(keys[k].type));
			continue;
		}
		keys[k].set(ld, m, obj, ctx, &keys[k]);
	}
	for (k = 0; k < nkeys; k++)
		if (keys[k].required && (optional == NULL ||
		    strcmp(optional, keys[k].name) != 0) &&
		    config_setting_get_member(grp, keys[k].name) == NULL &&
		    !misspelt(grp, keys, nkeys, keys[k].name))
			serr(ld, grp, "%s: missing \"%s\" (%s)", ctx,
			    keys[k].name, ktype_name(keys[k].type));
}

void
walk(struct loader *ld, const config_setting_t *grp, const struct key *keys,
    size_t nkeys, void *obj, const char *ctx)
{
	walk_opt(ld, grp, keys, nkeys, obj, ctx, NULL);
}

/* --- files ----------------------------------------------------------- */

/*
 * One named entry of a list, or one drop-in file: its message context
 * ("sandbox \"web\"", or "sandbox 3" while unnamed), its keys walked, and
 * a drop-in's name taken from, and checked against, its file name.
 */
void
load_entry(struct loader *ld, const config_setting_t *grp, const char *kind,
    size_t index, const char *default_name, const struct key *keys,
    size_t nkeys, void *obj, char **namep, char *ctx, size_t ctxlen)
{
	const config_setting_t *nm = config_setting_get_member(grp, "name");

	if (nm != NULL && config_setting_type(nm) == CONFIG_TYPE_STRING)
		snprintf(ctx, ctxlen, "%s \"%s\"", kind,
		    config_setting_get_string(nm));
	else if (default_name != NULL)
		snprintf(ctx, ctxlen, "%s \"%s\"", kind, default_name);
	else
		snprintf(ctx, ctxlen, "%s %zu", kind, index);
	if (default_name != NULL && nm == NULL)
		*namep = xstrdup(default_name);
	walk_opt(ld, grp, keys, nkeys, obj, ctx, default_name ? "name" : NULL);
	if (default_name != NULL && *namep != NULL &&
	    strcmp(*namep, default_name) != 0)
		serr(ld, nm, "%s: name: expected \"%s\" to match the file name "
		    "%s.conf", ctx, *namep, default_name);
}
static const char *
addfile(struct moat_config *cfg, const char *path)
{
	cfg->files = xreallocarray(cfg->files, cfg->nfiles + 1, sizeof(char *));
	cfg->files[cfg->nfiles] = xstrdup(path);
	return cfg->files[cfg->nfiles++];
}

static int
read_file(struct loader *ld, config_t *lc, const char *path)
{
	int ok;

	FILE *fp = NULL;
	char line[128];

	ld->file = addfile(ld->cfg, path);
	ld->first_line[0] = '\0';
	config_init(lc);
	if (ld->buf != NULL) {
		ok = config_read_string(lc, ld->buf);
		ld->buf = NULL;		/* drop-ins always come from files */
	} else if ((fp = fopen(path, "re")) == NULL) {
		adderr(ld, path, 0, "cannot read file: %s", strerror(errno));
		config_destroy(lc);
		return -1;
	} else {
		/* The first line, for the registration mark (config.h), from
		 * the same open as the parse. */
		if (fgets(line, sizeof(line), fp) != NULL)
			snprintf(ld->first_line, sizeof(ld->first_line), "%s",
			    line);
		rewind(fp);
		ok = config_read(lc, fp);
		fclose(fp);
	}
	if (ok == CONFIG_TRUE)
		return 0;
	if (config_error_type(lc) == CONFIG_ERR_FILE_IO)
		adderr(ld, path, 0, "cannot read file: %s", strerror(errno));
	else
		adderr(ld, config_error_file(lc) ? config_error_file(lc) : path,
		    config_error_line(lc), "syntax error: expected libconfig "
		    "syntax such as key = \"value\"; (parser: %s)",
		    config_error_text(lc));
	config_destroy(lc);
	return -1;
}

/* Returns -1 if the file could not be parsed at all. */
static int
load_main(struct loader *ld, const char *path)
{
	config_t lc;
	config_setting_t *root, *m;
	const struct top_key *top_keys = config_top_keys;
	size_t t, nt = config_ntop_keys;
	int i, n;

	if (read_file(ld, &lc, path) == -1)
		return -1;
	root = config_root_setting(&lc);
	n = config_setting_length(root);
	/* Secrets first, drop-ins included: sandboxes refer to them wherever
	 * they appear. */
	for (t = 0; t < nt; t++) {
		if (strcmp(top_keys[t].name, "sandboxes") == 0 &&
		    ld->secrets_dir) {
			const char *file = ld->file;
			load_dropins(ld, ld->secrets_dir, load_secret);
			ld->file = file;
		}
		m = config_setting_get_member(root, top_keys[t].name);
		if (m == NULL) {
			if (top_keys[t].required)
				adderr(ld, path, 1, "missing \"%s\" (%s)",
				    top_keys[t].name, ktype_name(top_keys[t].type));
			continue;
		}
		if (!ktype_ok(m, top_keys[t].type)) {
			serr(ld, m, "%s: expected %s", top_keys[t].name,
			    ktype_name(top_keys[t].type));
			continue;
		}
		top_keys[t].load(ld, m);
	}
	for (i = 0; i < n; i++) {
		m = config_setting_get_elem(root, (unsigned int)i);
		for (t = 0; t < nt; t++)
			if (strcmp(top_keys[t].name, config_setting_name(m)) == 0)
				break;
		if (t == nt)
			serr(ld, m, "unknown key \"%s\" (expected one of: "
			    "gateway, secrets, sandboxes, quotas, hosts, box)",
			    config_setting_name(m));
	}
	config_destroy(&lc);
	return 0;
}

static int
namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* sandboxes.d/NAME.conf and secrets.d/NAME.conf: one object per file,
 * its keys at top level, named after the file by default. */
void
load_dropins(struct loader *ld, const char *dir,
    void (*fn)(struct loader *, const config_setting_t *, const char *))
{
	config_t lc;
	struct dirent *de;
	char **names = NULL, *path, *stem;
	size_t i, n = 0, len;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		if (errno != ENOENT)
			adderr(ld, dir, 0, "cannot read directory: %s",
			    strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 6 ||
		    strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;	/* editor and provision temp files */
		names = xreallocarray(names, n + 1, sizeof(char *));
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 1)	/* stable order; qsort may not be given NULL */
		qsort(names, n, sizeof(char *), namecmp);
	for (i = 0; i < n; i++) {
		xasprintf(&path, "%s/%s", dir, names[i]);
		stem = xstrdup(names[i]);
		stem[strlen(stem) - 5] = '\0';
		if (read_file(ld, &lc, path) == 0) {
			if (!ident_valid(stem, 32))
				adderr(ld, path, 1, "file name: expected NAME.conf "
				    "where NAME is 1 to 32 of a-z, 0-9, '-', '_'");
			else
				fn(ld, config_root_setting(&lc), stem);
			config_destroy(&lc);
		}
		free(stem);
		free(path);
		free(names[i]);
	}
	free(names);
}

static struct moat_config *
load(const char *path, const char *buf, const char *sandboxes_dir,
    bool normalised, struct moat_errors *errs)
{
	struct moat_config *cfg = xcalloc(1, sizeof(*cfg));
	struct loader ld = { .cfg = cfg, .errs = errs, .file = path, .buf = buf,
	    .normalised = normalised };
	char *dir = NULL, *sdir = NULL;
	memset(errs, 0, sizeof(*errs));
	cfg->path = xstrdup(path);
	set_defaults(cfg);
	/* In-memory configs (fuzzing, unit tests) have no drop-ins of
	 * secrets: nothing beside a name that is not a file. */
	if (buf == NULL) {
		sdir = confpath_dir(path, "secrets.d");
		ld.secrets_dir = sdir;
	}
	if (load_main(&ld, path) == 0 && !normalised) {
		if (sandboxes_dir == NULL) {
			dir = confpath_dir(path, "sandboxes.d");
			sandboxes_dir = dir;
		}
		load_dropins(&ld, sandboxes_dir, load_sandbox);
	}
	free(dir);
	free(sdir);
	load_canary(&ld);
	check_all(&ld);
	if (errs->n > 0) {
		config_free(cfg);
		return NULL;
	}
	/* The sandbox networks are denied whatever they are: dnsd strips
	 * them from answers, set-adds refuse them, the proxy never dials
	 * them (a delegated global /64 is not the internet either). */
	{
		struct moat_prefix deny[2] = { cfg->gw.network,
		    cfg->gw.ipv6_network };

		cfg->private = rangeset_new_deny(cfg->gw.treat_as_public,
		    cfg->gw.ntreat_as_public, deny, cfg->gw.ipv6 ? 2 : 1);
	}
	return cfg;
}

struct moat_config *
config_load(const char *path, const char *sandboxes_dir,
    struct moat_errors *errs)
{
	return load(path, NULL, sandboxes_dir, false, errs);
}

struct moat_config *
config_load_buffer(const char *name, const char *text,
    const char *sandboxes_dir, struct moat_errors *errs)
{
	return load(name, text, sandboxes_dir, false, errs);
}

struct moat_config *
config_load_normalised(const char *name, int fd, struct moat_errors *errs)
{
	struct moat_config *cfg;
	size_t len = 0, cap = 65536;
	char *text = xmalloc(cap);
	ssize_t n;

	while ((n = read(fd, text + len, cap - len - 1)) > 0)
		if ((len += (size_t)n) == cap - 1)
			text = xreallocarray(text, 2, cap), cap *= 2;
	if (n < 0) {
		free(text);
		return NULL;
	}
	text[len] = '\0';
	cfg = load(name, text, NULL, true, errs);
	free(text);
	return cfg;
}

