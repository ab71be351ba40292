/*
 * config.c -- load moat.conf and sandboxes.d/NAME.conf into one validated
 * struct moat_config.
 *
 * Parsing is driven by tables of {key, type, required, setter}: walk()
 * rejects unknown keys, wrong types and missing keys for every group, and
 * the setters validate values.  Cross-checks (uniqueness, references,
 * addresses inside the network) run once everything is read.  Every error
 * is "file:line: context: what was expected"; any error discards the whole
 * model so nothing is ever half-applied.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "pathmatch.h"

#define MAX_ERRORS	100

struct loader {
	struct moat_config	*cfg;
	struct moat_errors	*errs;
	const char		*file;	/* current file, owned by cfg->files */
	const char		*buf;	/* main file's text, if given in memory */
	const char		*secrets_dir;	/* secrets.d beside the main file */
	bool			 normalised;	/* from gatewayd: no files read */
};

enum ktype { K_STR, K_INT, K_BOOL, K_STRLIST, K_INTLIST, K_GROUP, K_GROUPLIST };

struct key;
typedef void (*setter)(struct loader *, const config_setting_t *, void *obj,
    const char *ctx, const struct key *);

struct key {
	const char	*name;
	enum ktype	 type;
	int		 required;
	setter		 set;
	size_t		 off;		/* field for the generic setters */
};

/* --- errors ------------------------------------------------------------- */

static void
adderr(struct loader *ld, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
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
static void
addwarn(struct loader *ld, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
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

static const char *
sfile(struct loader *ld, const config_setting_t *s)
{
	const char *f = s ? config_setting_source_file(s) : NULL;

	return f ? f : ld->file;
}

static int
sline(const config_setting_t *s)
{
	int line = s ? (int)config_setting_source_line(s) : 0;

	return line > 0 ? line : 1;	/* a file's root group has no line */
}

#define serr(ld, s, ...) \
	adderr((ld), sfile((ld), (s)), sline(s), __VA_ARGS__)

static void
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

/* --- value validators ------------------------------------------------- */

static bool
ifname_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IFNAMSIZ || strcmp(s, ".") == 0 ||
	    strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s) ||
		    !isprint((unsigned char)*s))
			return false;
	return true;
}

static bool
ident_valid(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max || !isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
		    *s == '-' || *s == '_'))
			return false;
	return true;
}

static bool
username_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32 || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' ||
		    *s == '.'))
			return false;
	return true;
}

bool
config_username_valid(const char *s)
{
	return username_valid(s);
}

static bool
label_valid(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '-' ||
		    s[i] == '_'))
			return false;
	return true;
}

/* A fully qualified host name: two or more labels, not an address. */
bool
hostname_valid(const char *s)
{
	const char *dot, *last = s;
	size_t n = strlen(s), labels = 0;
	struct moat_addr a;

	if (n == 0 || n > 253 || addr_parse(s, &a) == 0)
		return false;
	for (;;) {
		dot = strchr(s, '.');
		if (!label_valid(s, dot ? (size_t)(dot - s) : strlen(s)))
			return false;
		labels++;
		last = s;
		if (dot == NULL)
			break;
		s = dot + 1;
	}
	/* An all-numeric last label would make this an address look-alike. */
	for (; *last; last++)
		if (!isdigit((unsigned char)*last))
			return labels >= 2;
	return false;
}

bool
hostpattern_valid(const char *s)
{
	if (strncmp(s, "*.", 2) == 0)
		return hostname_valid(s + 2);
	return hostname_valid(s);
}

/* Lower-case and drop one trailing dot, in place. */
static void
hostname_normalise(char *s)
{
	size_t n = strlen(s);

	if (n > 1 && s[n - 1] == '.')
		s[n - 1] = '\0';
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

static bool
token_valid(const char *s)	/* an HTTP header field name (RFC 9110 token) */
{
	if (*s == '\0' || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return false;
	return true;
}

static bool
placeholder_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 8 || n > 256)
		return false;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s))
			return false;
	return true;
}

static int
mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (strlen(s) != 17 || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0],
	    &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (!isxdigit((unsigned char)s[i * 3]) ||
		    !isxdigit((unsigned char)s[i * 3 + 1]))
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

/* --- the table walker ------------------------------------------------- */

static const char *
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

static bool
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
		    config_setting_get_member(grp, keys[k].name) == NULL)
			serr(ld, grp, "%s: missing \"%s\" (%s)", ctx,
			    keys[k].name, ktype_name(keys[k].type));
}

static void
walk(struct loader *ld, const config_setting_t *grp, const struct key *keys,
    size_t nkeys, void *obj, const char *ctx)
{
	walk_opt(ld, grp, keys, nkeys, obj, ctx, NULL);
}

#define FIELD(obj, k, type)	((type *)((char *)(obj) + (k)->off))

/* --- generic setters -------------------------------------------------- */

static void
set_ifname(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const char *v = config_setting_get_string(s);

	if (!ifname_valid(v)) {
		serr(ld, s, "%s: %s: expected an interface name of 1 to %d "
		    "characters without '/', ':' or spaces, got \"%s\"", ctx,
		    k->name, IFNAMSIZ - 1, v);
		return;
	}
	snprintf(FIELD(obj, k, char), IFNAMSIZ, "%s", v);
}

static void
set_bool(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	*FIELD(obj, k, bool) = config_setting_get_bool(s) != 0;
}

static void
set_port(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 1 || v > 65535) {
		serr(ld, s, "%s: %s: expected a port from 1 to 65535, got %lld",
		    ctx, k->name, v);
		return;
	}
	*FIELD(obj, k, uint16_t) = (uint16_t)v;
}

/* Bounded counts: the limits live here so that each key's error says
 * what it accepts. */
static const struct { const char *name; long long min, max; } counts[] = {
	{ "tcp_per_sandbox", 1, 1024 },
	{ "tcp_lifetime", 1, 3600 },
	{ "per_sandbox", 1, 65535 },
	{ "audit_max_kb", 64, 16777216 },
};

static void
set_count(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);
	size_t i;

	for (i = 0; strcmp(counts[i].name, k->name) != 0; i++)
		;
	if (v < counts[i].min || v > counts[i].max) {
		serr(ld, s, "%s: %s: expected %lld to %lld, got %lld", ctx,
		    k->name, counts[i].min, counts[i].max, v);
		return;
	}
	*FIELD(obj, k, unsigned) = (unsigned)v;
}

static void
set_owner(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const char *v = config_setting_get_string(s);

	if (!username_valid(v)) {
		serr(ld, s, "%s: %s: expected a local user name, got \"%s\"",
		    ctx, k->name, v);
		return;
	}
	free(*FIELD(obj, k, char *));
	*FIELD(obj, k, char *) = xstrdup(v);
}

/* A list of host names or "*.name" patterns, normalised and de-duplicated. */
static void
set_hostlist(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k, bool wildcards)
{
	struct moat_strlist *l = FIELD(obj, k, struct moat_strlist);
	const config_setting_t *e;
	char *v;
	size_t i, j;
	int n = config_setting_length(s);

	for (i = 0; i < (size_t)n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = xstrdup(config_setting_get_string(e));
		hostname_normalise(v);
		if (wildcards && strncmp(v, "*.", 2) == 0 &&
		    label_valid(v + 2, strlen(v + 2)) &&
		    strchr(v + 2, '.') == NULL) {
			serr(ld, e, "%s: %s: wildcard \"%s\" is too broad: it "
			    "covers a whole top-level domain", ctx, k->name, v);
			free(v);
			continue;
		}
		if (!(wildcards ? hostpattern_valid(v) : hostname_valid(v))) {
			serr(ld, e, "%s: %s: expected a fully qualified host "
			    "name%s, got \"%s\"", ctx, k->name, wildcards ?
			    " or \"*.\" followed by one" : "",
			    config_setting_get_string(e));
			free(v);
			continue;
		}
		for (j = 0; j < l->n; j++)
			if (strcmp(l->v[j], v) == 0)
				break;
		if (j < l->n) {
			serr(ld, e, "%s: %s: \"%s\" is listed twice", ctx,
			    k->name, v);
			free(v);
			continue;
		}
		l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
		l->v[l->n++] = v;
	}
}

static void
set_patterns(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	set_hostlist(ld, s, obj, ctx, k, true);
}

static void
set_hosts(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	set_hostlist(ld, s, obj, ctx, k, false);
}

/* --- gateway ---------------------------------------------------------- */

static bool
network_is_private(const struct moat_prefix *net)
{
	static const char *const ok[] = { "10.0.0.0/8", "172.16.0.0/12",
	    "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15" };
	struct moat_prefix p;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (prefix_parse(ok[i], &p) == 0 && p.plen <= net->plen &&
		    prefix_contains(&p, &net->addr))
			return true;
	return false;
}

static void
set_network(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	if (prefix_parse(v, &gw->network) == -1 ||
	    gw->network.addr.family != AF_INET || strchr(v, '/') == NULL) {
		serr(ld, s, "%s: network: expected an IPv4 network like "
		    "\"10.77.0.0/24\" with no host bits set, got \"%s\"", ctx, v);
		goto bad;
	}
	if (gw->network.plen < 8 || gw->network.plen > 29) {
		serr(ld, s, "%s: network: expected a prefix length from /8 to "
		    "/29, got /%d", ctx, gw->network.plen);
		goto bad;
	}
	/* A public sandbox network would make every guest look like the
	 * internet to whatever judges addresses by the private table. */
	if (!network_is_private(&gw->network)) {
		serr(ld, s, "%s: network: expected a private range such as "
		    "10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16, got \"%s\" "
		    "(public)", ctx, v);
		goto bad;
	}
	gw->address = gw->network.addr;
	gw->address.a[3] |= 1;		/* the first host address */
	return;
bad:
	memset(&gw->network, 0, sizeof(gw->network));
}

static void
set_prefixes(struct loader *ld, const config_setting_t *s,
    struct moat_prefix **out, size_t *nout, const char *ctx,
    const char *name)
{
	const config_setting_t *e;
	const char *v;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		*out = xreallocarray(*out, *nout + 1, sizeof(**out));
		if (prefix_parse(v, &(*out)[*nout]) == -1) {
			serr(ld, e, "%s: %s: expected an address or prefix like "
			    "\"203.0.113.0/24\" or \"2001:db8::/32\" with no host "
			    "bits set, got \"%s\"", ctx, name, v);
			continue;
		}
		(*nout)++;
	}
}

static void
set_treat(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;

	set_prefixes(ld, s, &gw->treat_as_public, &gw->ntreat_as_public, ctx,
	    k->name);
}

static void
set_upstream(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const config_setting_t *e;
	const char *v;
	int i, n = config_setting_length(s);

	if (n == 0)
		serr(ld, s, "%s: upstream: expected at least one resolver "
		    "address", ctx);
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		gw->upstream = xreallocarray(gw->upstream, gw->nupstream + 1,
		    sizeof(*gw->upstream));
		if (addr_parse(v, &gw->upstream[gw->nupstream]) == -1) {
			serr(ld, e, "%s: upstream: expected an IPv4 or IPv6 "
			    "address, got \"%s\"", ctx, v);
			continue;
		}
		gw->nupstream++;
	}
}

static void
set_limit(struct loader *, const config_setting_t *, void *, const char *,
    const struct key *);

static void
set_cache_size(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 4096 || v > 1073741824) {
		serr(ld, s, "%s: cache_size: expected 4096 to 1073741824 bytes, "
		    "got %lld", ctx, v);
		return;
	}
	((struct moat_gateway *)obj)->dns_cache_size = (long)v;
}

static const struct key dns_keys[] = {
	{ "upstream", K_STRLIST, 1, set_upstream, 0 },
	{ "tcp_per_sandbox", K_INT, 0, set_count,
	    offsetof(struct moat_gateway, dns_tcp_per_sandbox) },
	{ "tcp_lifetime", K_INT, 0, set_count,
	    offsetof(struct moat_gateway, dns_tcp_lifetime) },
	{ "rate", K_INT, 0, set_limit, offsetof(struct moat_gateway, dns_rate) },
	{ "burst", K_INT, 0, set_limit,
	    offsetof(struct moat_gateway, dns_burst) },
	{ "cache_size", K_INT, 0, set_cache_size, 0 },
};

static void
set_upstream_ca(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);
	struct stat st;

	if (v[0] != '/') {
		serr(ld, s, "%s: upstream_ca: expected an absolute path, got "
		    "\"%s\"", ctx, v);
		return;
	}
	if (!ld->normalised && (stat(v, &st) == -1 || !S_ISREG(st.st_mode))) {
		serr(ld, s, "%s: upstream_ca: expected a readable PEM file, "
		    "cannot use %s", ctx, v);
		return;
	}
	free(gw->proxy_upstream_ca);
	gw->proxy_upstream_ca = xstrdup(v);
}

static const struct key proxy_keys[] = {
	{ "port", K_INT, 0, set_port, offsetof(struct moat_gateway, proxy_port) },
	{ "upstream_ca", K_STR, 0, set_upstream_ca, 0 },
	{ "intercept", K_BOOL, 0, set_bool,
	    offsetof(struct moat_gateway, intercept) },
	{ "per_sandbox", K_INT, 0, set_count,
	    offsetof(struct moat_gateway, proxy_per_sandbox) },
};

static void
set_dns(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, dns_keys, sizeof(dns_keys) / sizeof(dns_keys[0]), obj,
	    "gateway.dns");
}

static void
set_proxy(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, proxy_keys, sizeof(proxy_keys) / sizeof(proxy_keys[0]), obj,
	    "gateway.proxy");
}

static void
set_exc_to(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const char *v = config_setting_get_string(s);

	if (prefix_parse(v, &x->to) == -1) {
		serr(ld, s, "%s: to: expected an address or prefix like "
		    "\"192.168.1.50/32\" with no host bits set, got \"%s\"", ctx,
		    v);
		x->to.plen = -1;
	}
}

static void
set_exc_proto(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const char *v = config_setting_get_string(s);

	if (strcmp(v, "tcp") == 0)
		x->proto = IPPROTO_TCP;
	else if (strcmp(v, "udp") == 0)
		x->proto = IPPROTO_UDP;
	else if (strcmp(v, "any") == 0)
		x->proto = 0;
	else
		serr(ld, s, "%s: proto: expected \"tcp\", \"udp\" or \"any\", "
		    "got \"%s\"", ctx, v);
}

static void
set_exc_ports(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const config_setting_t *e;
	long long v;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_int64(e);
		if (v < 1 || v > 65535) {
			serr(ld, e, "%s: ports: expected ports from 1 to 65535, "
			    "got %lld", ctx, v);
			continue;
		}
		x->ports = xreallocarray(x->ports, x->nports + 1,
		    sizeof(*x->ports));
		x->ports[x->nports++] = (uint16_t)v;
	}
}

/* Names are checked against the sandboxes once every file is read
 * (check_exceptions): drop-ins come after the main file. */
static void
set_exc_sandboxes(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_exception *x = obj;
	const config_setting_t *e;
	int i, n = config_setting_length(s);

	x->sandboxes_given = true;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		x->sandboxes.v = xreallocarray(x->sandboxes.v,
		    x->sandboxes.n + 1, sizeof(char *));
		x->sandbox_lines = xreallocarray(x->sandbox_lines,
		    x->sandboxes.n + 1, sizeof(int));
		x->sandbox_lines[x->sandboxes.n] =
		    config_setting_source_line(e);
		x->sandboxes.v[x->sandboxes.n++] =
		    xstrdup(config_setting_get_string(e));
	}
}

static const struct key exception_keys[] = {
	{ "to", K_STR, 1, set_exc_to, 0 },
	{ "proto", K_STR, 0, set_exc_proto, 0 },
	{ "ports", K_INTLIST, 0, set_exc_ports, 0 },
	{ "sandboxes", K_STRLIST, 0, set_exc_sandboxes, 0 },
};

static void
set_exceptions(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	struct moat_exception *x;
	const config_setting_t *e;
	char c[64];
	int i, n = config_setting_length(s);

	gw->exceptions = xcalloc((size_t)n, sizeof(*gw->exceptions));
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		x = &gw->exceptions[gw->nexceptions++];
		where(ld, e, &x->where);
		snprintf(c, sizeof(c), "exception %d", i + 1);
		walk(ld, e, exception_keys, sizeof(exception_keys) /
		    sizeof(exception_keys[0]), x, c);
		if (x->nports > 0 && x->proto == 0 &&
		    config_setting_get_member(e, "ports") != NULL)
			serr(ld, e, "%s: ports need proto = \"tcp\" or \"udp\"",
			    c);
		if (x->to.plen == 0)
			serr(ld, e, "%s: to: a /0 exception would open every "
			    "private range; name the hosts instead", c);
	}
}

static void
set_state_dir(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	if (v[0] != '/' || strlen(v) >= PATH_MAX) {
		serr(ld, s, "%s: state_dir: expected an absolute path, got "
		    "\"%s\"", ctx, v);
		return;
	}
	free(gw->state_dir);
	gw->state_dir = xstrdup(v);
}

static void
set_nflog(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	long long v = config_setting_get_int64(s);

	if (v < 0 || v > 65535) {
		serr(ld, s, "%s: nflog_group: expected 0 to 65535, got %lld",
		    ctx, v);
		return;
	}
	gw->nflog_group = (uint16_t)v;
}

static void
set_admin_group(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	const char *v = config_setting_get_string(s);

	/* Group names follow the same rules as user names. */
	if (!username_valid(v)) {
		serr(ld, s, "%s: admin_group: expected a local group name, got "
		    "\"%s\"", ctx, v);
		return;
	}
	free(gw->admin_group);
	gw->admin_group = xstrdup(v);
}

static void
set_refusal_rate(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_gateway *gw = obj;
	long long v = config_setting_get_int64(s);

	/* Below 1,000/s the cap itself would silence refusals of one guest. */
	if (v < 1000 || v > 10000000) {
		serr(ld, s, "%s: global_rate: expected 1000 to 10000000 "
		    "(ICMP errors per second), got %lld", ctx, v);
		return;
	}
	gw->refusal_rate = (uint32_t)v;
}

static const struct key refusal_keys[] = {
	{ "fast", K_BOOL, 0, set_bool, offsetof(struct moat_gateway, fast_refusals) },
	{ "global_rate", K_INT, 0, set_refusal_rate, 0 },
};

static void
set_refusals(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	walk(ld, s, refusal_keys, sizeof(refusal_keys) / sizeof(refusal_keys[0]),
	    obj, "gateway.refusals");
}

static const struct key gateway_keys[] = {
	{ "uplink", K_STR, 1, set_ifname, offsetof(struct moat_gateway, uplink) },
	{ "network", K_STR, 1, set_network, 0 },
	{ "bridge", K_STR, 0, set_ifname, offsetof(struct moat_gateway, bridge) },
	{ "dns", K_GROUP, 1, set_dns, 0 },
	{ "proxy", K_GROUP, 0, set_proxy, 0 },
	{ "treat_as_public", K_STRLIST, 0, set_treat, 0 },
	{ "exceptions", K_GROUPLIST, 0, set_exceptions, 0 },
	{ "state_dir", K_STR, 0, set_state_dir, 0 },
	{ "nflog_group", K_INT, 0, set_nflog, 0 },
	{ "admin_group", K_STR, 0, set_admin_group, 0 },
	{ "refusals", K_GROUP, 0, set_refusals, 0 },
	{ "audit_max_kb", K_INT, 0, set_count,
	    offsetof(struct moat_gateway, audit_max_kb) },
	{ "manage_network", K_BOOL, 0, set_bool,
	    offsetof(struct moat_gateway, manage_network) },
};

/* --- secrets ---------------------------------------------------------- */

static void
set_sec_name(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_secret *x = obj;
	const char *v = config_setting_get_string(s);

	if (!ident_valid(v, 32)) {
		serr(ld, s, "%s: name: expected 1 to 32 of a-z, 0-9, '-' and "
		    "'_', starting with a letter or digit, got \"%s\"", ctx, v);
		return;
	}
	free(x->name);
	x->name = xstrdup(v);
}

static void
set_sec_file(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_secret *x = obj;
	const char *v = config_setting_get_string(s);
	struct stat st;

	if (v[0] != '/') {
		serr(ld, s, "%s: file: expected an absolute path, got \"%s\"",
		    ctx, v);
		return;
	}
	x->file = xstrdup(v);
	if (ld->normalised)	/* checked by the parent that sent it */
		return;
	if (lstat(v, &st) == -1 && errno == EACCES && geteuid() != 0) {
		addwarn(ld, sfile(ld, s), sline(s), "%s: file: %s is not "
		    "readable by uid %u; not checked (gatewayd reads it as "
		    "root)", ctx, v, (unsigned)geteuid());
		return;
	}
	if (lstat(v, &st) == -1) {
		serr(ld, s, "%s: file: cannot read %s: %s", ctx, v,
		    strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		serr(ld, s, "%s: file: %s must be a regular file (not a "
		    "symbolic link or device)", ctx, v);
		return;
	}
	if (st.st_uid != 0 || (st.st_mode & 077) != 0)
		serr(ld, s, "%s: file: %s must be mode 0600 owned by root, "
		    "is %04o owned by uid %u", ctx, v,
		    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
}

static void
set_sec_str(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const char *v = config_setting_get_string(s);
	bool header = strcmp(k->name, "header") == 0;

	if (header ? !token_valid(v) : !placeholder_valid(v)) {
		if (header)
			serr(ld, s, "%s: header: expected an HTTP header name "
			    "like \"Authorization\", got \"%s\"", ctx, v);
		else
			serr(ld, s, "%s: placeholder: expected 8 to 256 "
			    "printable characters without spaces", ctx);
		return;
	}
	free(*FIELD(obj, k, char *));
	*FIELD(obj, k, char *) = xstrdup(v);
}

static void
set_users(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_strlist *l = FIELD(obj, k, struct moat_strlist);
	const config_setting_t *e;
	const char *v;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		if (!username_valid(v)) {
			serr(ld, e, "%s: %s: expected local user names, got "
			    "\"%s\"", ctx, k->name, v);
			continue;
		}
		l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
		l->v[l->n++] = xstrdup(v);
	}
}

/* requests = [ "GET /repos/acme/x", ... ]: each rule checked by the
 * matcher that will apply it. */
static void
set_sec_requests(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_secret *x = obj;
	const config_setting_t *e;
	char err[512];
	int i, n = config_setting_length(s);

	if (n == 0 || n > 64) {
		serr(ld, s, "%s: requests: expected 1 to 64 rules like "
		    "\"GET /repos/acme/*\" (leave the key out to allow every "
		    "request)", ctx);
		return;
	}
	x->has_requests = true;
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		if (pm_rule_check(config_setting_get_string(e), err,
		    sizeof(err)) < 0) {
			serr(ld, e, "%s: requests: %s", ctx, err);
			continue;
		}
		x->requests.v = xreallocarray(x->requests.v, x->requests.n + 1,
		    sizeof(char *));
		x->requests.v[x->requests.n++] =
		    xstrdup(config_setting_get_string(e));
	}
}

static void
set_budget_n(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 1 || v > 1000000000) {
		serr(ld, s, "%s: budget: %s: expected 1 to 1000000000 requests "
		    "(leave it out for no limit), got %lld", ctx, k->name, v);
		return;
	}
	*FIELD(obj, k, long) = (long)v;
}

static const struct key budget_keys[] = {
	{ "requests_per_minute", K_INT, 0, set_budget_n,
	    offsetof(struct moat_secret, per_minute) },
	{ "requests_per_day", K_INT, 0, set_budget_n,
	    offsetof(struct moat_secret, per_day) },
};

static void
set_sec_budget(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	if (config_setting_length(s) == 0)
		serr(ld, s, "%s: budget: expected requests_per_minute or "
		    "requests_per_day", ctx);
	walk(ld, s, budget_keys, sizeof(budget_keys) / sizeof(budget_keys[0]),
	    obj, ctx);
}

static const struct key secret_keys[] = {
	{ "name", K_STR, 1, set_sec_name, 0 },
	{ "file", K_STR, 1, set_sec_file, 0 },
	{ "hosts", K_STRLIST, 1, set_hosts,
	    offsetof(struct moat_secret, hosts) },
	{ "header", K_STR, 0, set_sec_str, offsetof(struct moat_secret, header) },
	{ "placeholder", K_STR, 1, set_sec_str,
	    offsetof(struct moat_secret, placeholder) },
	{ "owner", K_STR, 0, set_owner, offsetof(struct moat_secret, owner) },
	{ "shared_with", K_STRLIST, 0, set_users,
	    offsetof(struct moat_secret, shared_with) },
	{ "requests", K_STRLIST, 0, set_sec_requests, 0 },
	{ "budget", K_GROUP, 0, set_sec_budget, 0 },
};

/* --- sandboxes -------------------------------------------------------- */

static void
set_sb_name(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const char *v = config_setting_get_string(s);

	if (!ident_valid(v, 32)) {
		serr(ld, s, "%s: name: expected 1 to 32 of a-z, 0-9, '-' and "
		    "'_', starting with a letter or digit, got \"%s\"", ctx, v);
		return;
	}
	free(x->name);
	x->name = xstrdup(v);
}

static void
set_sb_mac(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	static const uint8_t zero[6];
	const char *v = config_setting_get_string(s);

	if (mac_parse(v, x->mac) == -1) {
		serr(ld, s, "%s: mac: expected a MAC address like "
		    "\"52:54:00:00:00:0a\", got \"%s\"", ctx, v);
		return;
	}
	if ((x->mac[0] & 1) || memcmp(x->mac, zero, 6) == 0)
		serr(ld, s, "%s: mac: expected a unicast, non-zero MAC address, "
		    "got \"%s\"", ctx, v);
}

static void
set_sb_address(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const char *v = config_setting_get_string(s);

	if (addr_parse(v, &x->address) == -1 || x->address.family != AF_INET) {
		serr(ld, s, "%s: address: expected an IPv4 address like "
		    "\"10.77.0.10\", got \"%s\"", ctx, v);
		memset(&x->address, 0, sizeof(x->address));
	}
}

static void
set_sb_egress(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const char *v = config_setting_get_string(s);

	if (strcmp(v, "open") == 0)
		x->egress = EGRESS_OPEN;
	else if (strcmp(v, "allowlist") == 0)
		x->egress = EGRESS_ALLOWLIST;
	else if (strcmp(v, "none") == 0)
		x->egress = EGRESS_NONE;
	else
		serr(ld, s, "%s: egress: expected \"open\", \"allowlist\" or "
		    "\"none\", got \"%s\"", ctx, v);
}

static void
set_sb_secrets(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const config_setting_t *e;
	const char *v;
	size_t j;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		for (j = 0; j < x->secrets.n; j++)
			if (strcmp(x->secrets.v[j], v) == 0)
				break;
		if (j < x->secrets.n) {
			serr(ld, e, "%s: secrets: \"%s\" is listed twice", ctx,
			    v);
			continue;
		}
		if (config_secret_by_name(ld->cfg, v) == NULL) {
			serr(ld, e, "%s: secrets: expected the name of a secret "
			    "defined in \"secrets\", got \"%s\"", ctx, v);
			continue;
		}
		x->secrets.v = xreallocarray(x->secrets.v, x->secrets.n + 1,
		    sizeof(char *));
		x->secrets.v[x->secrets.n++] = xstrdup(v);
	}
}

static void
set_sb_ports(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_sandbox *x = obj;
	const config_setting_t *e;
	const char *v;
	char proto[4], tail;
	unsigned port;
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = config_setting_get_string(e);
		if (sscanf(v, "%3[a-z]/%u%c", proto, &port, &tail) != 2 ||
		    (strcmp(proto, "tcp") != 0 && strcmp(proto, "udp") != 0) ||
		    port < 1 || port > 65535 || v[4] == '0') {
			serr(ld, e, "%s: allow_ports: expected \"tcp/PORT\" or "
			    "\"udp/PORT\" with a port from 1 to 65535, got "
			    "\"%s\"", ctx, v);
			continue;
		}
		x->allow_ports = xreallocarray(x->allow_ports,
		    x->nallow_ports + 1, sizeof(*x->allow_ports));
		x->allow_ports[x->nallow_ports].proto = proto[0] == 't' ?
		    IPPROTO_TCP : IPPROTO_UDP;
		x->allow_ports[x->nallow_ports++].port = (uint16_t)port;
	}
	if (n == 0)
		serr(ld, s, "%s: allow_ports: expected at least one port",
		    ctx);
}

static const struct key sandbox_keys[] = {
	{ "name", K_STR, 1, set_sb_name, 0 },
	{ "mac", K_STR, 1, set_sb_mac, 0 },
	{ "address", K_STR, 1, set_sb_address, 0 },
	{ "tap", K_STR, 1, set_ifname, offsetof(struct moat_sandbox, tap) },
	{ "egress", K_STR, 1, set_sb_egress, 0 },
	{ "allow", K_STRLIST, 0, set_patterns,
	    offsetof(struct moat_sandbox, allow) },
	{ "secrets", K_STRLIST, 0, set_sb_secrets, 0 },
	{ "owner", K_STR, 0, set_owner, offsetof(struct moat_sandbox, owner) },
	{ "inspect", K_BOOL, 0, set_bool, offsetof(struct moat_sandbox, inspect) },
	{ "bypass", K_STRLIST, 0, set_patterns,
	    offsetof(struct moat_sandbox, bypass) },
	{ "dns_rate", K_INT, 0, set_limit, offsetof(struct moat_sandbox, dns_rate) },
	{ "dns_burst", K_INT, 0, set_limit,
	    offsetof(struct moat_sandbox, dns_burst) },
	{ "allow_ports", K_STRLIST, 0, set_sb_ports, 0 },
};

/* Per-sandbox checks that need only the sandbox and the gateway. */
static void
check_sandbox(struct loader *ld, const config_setting_t *grp,
    const struct moat_sandbox *x, const char *ctx)
{
	const struct moat_gateway *gw = &ld->cfg->gw;
	const config_setting_t *a = config_setting_get_member(grp, "address");
	struct moat_addr bcast;
	char net[64];

	if (x->allow.n > 0 && x->egress != EGRESS_ALLOWLIST)
		serr(ld, config_setting_get_member(grp, "allow"), "%s: allow "
		    "only applies with egress = \"allowlist\" (egress is \"%s\")",
		    ctx, egress_name(x->egress));
	if (x->bypass.n > 0 && !x->inspect)
		serr(ld, config_setting_get_member(grp, "bypass"), "%s: bypass "
		    "only applies with inspect = true", ctx);
	if (config_setting_get_member(grp, "allow_ports") != NULL &&
	    x->egress != EGRESS_ALLOWLIST)
		serr(ld, config_setting_get_member(grp, "allow_ports"), "%s: "
		    "allow_ports only applies with egress = \"allowlist\" "
		    "(egress is \"%s\")", ctx, egress_name(x->egress));
	if (a == NULL || x->address.family != AF_INET ||
	    gw->network.addr.family != AF_INET)
		return;
	bcast = gw->network.addr;
	{
		uint32_t m = gw->network.plen == 0 ? ~0u :
		    (1u << (32 - gw->network.plen)) - 1, v;
		memcpy(&v, bcast.a, 4);
		v = htonl(ntohl(v) | m);
		memcpy(bcast.a, &v, 4);
	}
	prefix_fmt(&gw->network, net, sizeof(net));
	if (!prefix_contains(&gw->network, &x->address))
		serr(ld, a, "%s: address: expected an address inside "
		    "gateway.network %s", ctx, net);
	else if (addr_cmp(&x->address, &gw->network.addr) == 0 ||
	    addr_cmp(&x->address, &bcast) == 0)
		serr(ld, a, "%s: address: the network and broadcast addresses "
		    "of %s cannot be a sandbox's", ctx, net);
	else if (addr_cmp(&x->address, &gw->address) == 0)
		serr(ld, a, "%s: address: that is the gateway's own address",
		    ctx);
}

/*
 * One named entry of a list, or one drop-in file: its message context
 * ("sandbox \"web\"", or "sandbox 3" while unnamed), its keys walked, and
 * a drop-in's name taken from, and checked against, its file name.
 */
static void
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

static void
load_sandbox(struct loader *ld, const config_setting_t *grp,
    const char *default_name)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_sandbox *x;
	char ctx[96];

	if (cfg->nsandboxes >= MOAT_MAX_SANDBOXES) {
		serr(ld, grp, "too many sandboxes (at most %d)",
		    MOAT_MAX_SANDBOXES);
		return;
	}
	cfg->sandboxes = xreallocarray(cfg->sandboxes, cfg->nsandboxes + 1,
	    sizeof(*cfg->sandboxes));
	x = &cfg->sandboxes[cfg->nsandboxes++];
	memset(x, 0, sizeof(*x));
	x->dns_rate = x->dns_burst = -1;
	where(ld, grp, &x->where);
	load_entry(ld, grp, "sandbox", cfg->nsandboxes, default_name,
	    sandbox_keys, sizeof(sandbox_keys) / sizeof(sandbox_keys[0]), x,
	    &x->name, ctx, sizeof(ctx));
	check_sandbox(ld, grp, x, ctx);
	if (x->nallow_ports == 0 && x->egress == EGRESS_ALLOWLIST) {
		x->allow_ports = xcalloc(2, sizeof(*x->allow_ports));
		x->allow_ports[0] = (struct moat_port){ IPPROTO_TCP, 80 };
		x->allow_ports[1] = (struct moat_port){ IPPROTO_TCP, 443 };
		x->nallow_ports = 2;
	}
}

/* --- top level -------------------------------------------------------- */

static void
load_gateway(struct loader *ld, const config_setting_t *s)
{
	walk(ld, s, gateway_keys, sizeof(gateway_keys) / sizeof(gateway_keys[0]),
	    &ld->cfg->gw, "gateway");
}

static void
load_secret(struct loader *ld, const config_setting_t *e,
    const char *default_name)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_secret *x;
	char ctx[96];

	if (cfg->nsecrets >= MOAT_MAX_SANDBOXES) {
		serr(ld, e, "too many secrets (at most %d)", MOAT_MAX_SANDBOXES);
		return;
	}
	cfg->secrets = xreallocarray(cfg->secrets, cfg->nsecrets + 1,
	    sizeof(*cfg->secrets));
	x = &cfg->secrets[cfg->nsecrets++];
	memset(x, 0, sizeof(*x));
	where(ld, e, &x->where);
	x->dropin = default_name != NULL;
	load_entry(ld, e, "secret", cfg->nsecrets, default_name, secret_keys,
	    sizeof(secret_keys) / sizeof(secret_keys[0]), x, &x->name, ctx,
	    sizeof(ctx));
	if (x->header == NULL)
		x->header = xstrdup("Authorization");
}

static void
load_secrets(struct loader *ld, const config_setting_t *s)
{
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++)
		load_secret(ld, config_setting_get_elem(s, (unsigned int)i),
		    NULL);
}

/* --- quotas ----------------------------------------------------------- */

static void
set_quota_user(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	struct moat_quota *q = obj;
	const char *v = config_setting_get_string(s);

	if (strcmp(v, "*") != 0 && !username_valid(v)) {
		serr(ld, s, "%s: user: expected a local user name or \"*\", "
		    "got \"%s\"", ctx, v);
		return;
	}
	free(q->user);
	q->user = xstrdup(v);
}

static void
set_limit(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	long long v = config_setting_get_int64(s);

	if (v < 0 || v > 1000000) {
		serr(ld, s, "%s: %s: expected 0 to 1000000, got %lld", ctx,
		    k->name, v);
		return;
	}
	*FIELD(obj, k, long) = (long)v;
}

static const struct key quota_keys[] = {
	{ "user", K_STR, 1, set_quota_user, 0 },
	{ "sandboxes", K_INT, 0, set_limit,
	    offsetof(struct moat_quota, sandboxes) },
	{ "cpus", K_INT, 0, set_limit, offsetof(struct moat_quota, cpus) },
	{ "memory_mb", K_INT, 0, set_limit,
	    offsetof(struct moat_quota, memory_mb) },
	{ "disk_gb", K_INT, 0, set_limit, offsetof(struct moat_quota, disk_gb) },
};

static void
load_quotas(struct loader *ld, const config_setting_t *s)
{
	struct moat_config *cfg = ld->cfg;
	struct moat_quota *q;
	const config_setting_t *e;
	char ctx[64];
	int i, n = config_setting_length(s);

	cfg->quotas = xcalloc((size_t)n, sizeof(*cfg->quotas));
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		q = &cfg->quotas[cfg->nquotas++];
		q->sandboxes = q->cpus = q->memory_mb = q->disk_gb = -1;
		where(ld, e, &q->where);
		snprintf(ctx, sizeof(ctx), "quota %d", i + 1);
		walk(ld, e, quota_keys, sizeof(quota_keys) /
		    sizeof(quota_keys[0]), q, ctx);
	}
}

static void
load_sandboxes(struct loader *ld, const config_setting_t *s)
{
	int i, n = config_setting_length(s);

	for (i = 0; i < n; i++)
		load_sandbox(ld, config_setting_get_elem(s, (unsigned int)i),
		    NULL);
}

static void load_dropins(struct loader *, const char *,
    void (*)(struct loader *, const config_setting_t *, const char *));

static const struct {
	const char	*name;
	enum ktype	 type;
	int		 required;
	void		(*load)(struct loader *, const config_setting_t *);
} top_keys[] = {
	{ "gateway", K_GROUP, 1, load_gateway },
	{ "secrets", K_GROUPLIST, 0, load_secrets },
	{ "sandboxes", K_GROUPLIST, 0, load_sandboxes },
	{ "quotas", K_GROUPLIST, 0, load_quotas },
};

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

	ld->file = addfile(ld->cfg, path);
	config_init(lc);
	if (ld->buf != NULL) {
		ok = config_read_string(lc, ld->buf);
		ld->buf = NULL;		/* drop-ins always come from files */
	} else
		ok = config_read_file(lc, path);
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
	size_t t, nt = sizeof(top_keys) / sizeof(top_keys[0]);
	int i, n;

	if (read_file(ld, &lc, path) == -1)
		return -1;
	root = config_root_setting(&lc);
	n = config_setting_length(root);
	/* Secrets first, drop-ins included: sandboxes refer to them wherever
	 * they appear. */
	for (t = 0; t < nt; t++) {
		if (top_keys[t].load == load_sandboxes && ld->secrets_dir) {
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
			    "gateway, secrets, sandboxes, quotas)",
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
static void
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
	qsort(names, n, sizeof(char *), namecmp);	/* stable order */
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

/* --- cross-checks ----------------------------------------------------- */

static void
check_unique(struct loader *ld)
{
	struct moat_config *cfg = ld->cfg;
	static const uint8_t zero[6];
	struct moat_sandbox *a, *b;
	size_t i, j;
	char mac[18];

	for (i = 0; i < cfg->nsandboxes; i++) {
		a = &cfg->sandboxes[i];
		if (a->tap[0] && (strcmp(a->tap, cfg->gw.bridge) == 0 ||
		    strcmp(a->tap, cfg->gw.uplink) == 0))
			adderr(ld, a->where.file, a->where.line, "sandbox \"%s\": "
			    "tap: \"%s\" is the bridge or uplink interface",
			    a->name ? a->name : "?", a->tap);
		for (j = 0; j < i; j++) {
			b = &cfg->sandboxes[j];
#define DUP(what, cond, val)						\
			if (cond)						\
				adderr(ld, a->where.file, a->where.line,	\
				    "sandbox \"%s\": %s \"%s\" is already used by "	\
				    "sandbox \"%s\" (%s:%d)", a->name ? a->name	\
				    : "?", what, val, b->name ? b->name : "?",	\
				    b->where.file, b->where.line)
			DUP("name", a->name && b->name &&
			    strcmp(a->name, b->name) == 0, a->name);
			snprintf(mac, sizeof(mac),
			    "%02x:%02x:%02x:%02x:%02x:%02x", a->mac[0],
			    a->mac[1], a->mac[2], a->mac[3], a->mac[4], a->mac[5]);
			DUP("mac", memcmp(a->mac, zero, 6) != 0 &&
			    memcmp(a->mac, b->mac, 6) == 0, mac);
			DUP("tap", a->tap[0] && strcmp(a->tap, b->tap) == 0,
			    a->tap);
			if (a->address.family && addr_cmp(&a->address,
			    &b->address) == 0) {
				char ab[INET6_ADDRSTRLEN];
				addr_fmt(&a->address, ab, sizeof(ab));
				DUP("address", 1, ab);
			}
#undef DUP
		}
	}
}

static void
check_secrets(struct loader *ld)
{
	struct moat_config *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->nsecrets; i++)
		for (j = 0; j < i; j++) {
			struct moat_secret *a = &cfg->secrets[i],
			    *b = &cfg->secrets[j];
			if (a->name && b->name && strcmp(a->name, b->name) == 0)
				adderr(ld, a->where.file, a->where.line, "secret "
				    "\"%s\": name is already used (%s:%d)",
				    a->name, b->where.file, b->where.line);
			if (a->placeholder && b->placeholder &&
			    (strstr(a->placeholder, b->placeholder) ||
			    strstr(b->placeholder, a->placeholder)))
				adderr(ld, a->where.file, a->where.line, "secret "
				    "\"%s\": placeholder must differ from secret "
				    "\"%s\"'s and not contain it", a->name ?
				    a->name : "?", b->name ? b->name : "?");
		}
}

/* A sandbox with an owner may carry only secrets its owner may use, so a
 * hand-edited drop-in cannot hand one user's key to another's guest. */
static void
check_secret_owners(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	const struct moat_sandbox *x;
	const struct moat_secret *sec;
	size_t i, j;

	for (i = 0; i < cfg->nsandboxes; i++) {
		x = &cfg->sandboxes[i];
		for (j = 0; x->owner != NULL && j < x->secrets.n; j++) {
			sec = config_secret_by_name(cfg, x->secrets.v[j]);
			if (sec == NULL || sec->owner == NULL ||
			    secret_usable_by(sec, x->owner))
				continue;
			adderr(ld, x->where.file, x->where.line, "sandbox \"%s\": "
			    "secrets: \"%s\" belongs to %s and is not shared "
			    "with %s (the sandbox's owner)", x->name ? x->name :
			    "?", sec->name, sec->owner, x->owner);
		}
	}
}

static void
check_quotas(struct loader *ld)
{
	const struct moat_config *cfg = ld->cfg;
	size_t i, j;

	for (i = 0; i < cfg->nquotas; i++)
		for (j = 0; j < i; j++)
			if (cfg->quotas[i].user && cfg->quotas[j].user &&
			    strcmp(cfg->quotas[i].user, cfg->quotas[j].user) == 0)
				adderr(ld, cfg->quotas[i].where.file,
				    cfg->quotas[i].where.line, "quota %zu: user "
				    "\"%s\" already has a quota (%s:%d)", i + 1,
				    cfg->quotas[i].user, cfg->quotas[j].where.file,
				    cfg->quotas[j].where.line);
}

/* An exception names the sandboxes it applies to; egress "none" means
 * the gateway's DNS and proxy only, so no exception may name one. */
static void
check_exception_names(struct loader *ld, const struct moat_exception *x,
    size_t i)
{
	const struct moat_sandbox *sb;
	size_t j;

	for (j = 0; j < x->sandboxes.n; j++) {
		sb = config_sandbox_by_name(ld->cfg, x->sandboxes.v[j]);
		if (sb == NULL)
			adderr(ld, x->where.file, x->sandbox_lines[j],
			    "exception %zu: sandboxes: expected the name of a "
			    "sandbox, got \"%s\"", i + 1, x->sandboxes.v[j]);
		else if (sb->egress == EGRESS_NONE)
			adderr(ld, x->where.file, x->sandbox_lines[j],
			    "exception %zu: sandboxes: \"%s\" has egress = "
			    "\"none\", which no exception may open (expected "
			    "an open or allowlist sandbox)", i + 1,
			    x->sandboxes.v[j]);
	}
}

static void
check_exceptions(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;
	size_t i;

	for (i = 0; i < gw->nexceptions; i++) {
		if (gw->exceptions[i].to.plen > 0 && gw->network.plen > 0 &&
		    prefix_overlaps(&gw->exceptions[i].to, &gw->network))
			adderr(ld, gw->exceptions[i].where.file,
			    gw->exceptions[i].where.line, "exception %zu: to: "
			    "must not overlap gateway.network (guests and the "
			    "gateway are never an exception)", i + 1);
		check_exception_names(ld, &gw->exceptions[i], i);
	}
}

static void
check_network(struct loader *ld)
{
	struct moat_gateway *gw = &ld->cfg->gw;
	size_t i;

	for (i = 0; i < gw->ntreat_as_public; i++)
		if (gw->network.plen > 0 &&
		    prefix_overlaps(&gw->treat_as_public[i], &gw->network))
			adderr(ld, ld->cfg->path, 1, "gateway: treat_as_public: "
			    "must not overlap gateway.network");
	if (gw->uplink[0] && strcmp(gw->uplink, gw->bridge) == 0)
		adderr(ld, ld->cfg->path, 1, "gateway: uplink and bridge must "
		    "be different interfaces");
}

static void
set_defaults(struct moat_config *cfg)
{
	snprintf(cfg->gw.bridge, sizeof(cfg->gw.bridge), "moat0");
	cfg->gw.proxy_port = 3128;
	cfg->gw.intercept = true;
	cfg->gw.manage_network = true;
	cfg->gw.nflog_group = 77;
	cfg->gw.fast_refusals = true;
	cfg->gw.refusal_rate = 100000;
	cfg->gw.audit_max_kb = 65536;
	cfg->gw.dns_tcp_per_sandbox = 8;
	cfg->gw.dns_tcp_lifetime = 30;
	cfg->gw.proxy_per_sandbox = 64;
	cfg->gw.state_dir = xstrdup("/var/lib/moat");
	cfg->gw.dns_rate = 500;
	cfg->gw.dns_burst = -1;
	cfg->gw.dns_cache_size = 8L << 20;
}

static struct moat_config *
load(const char *path, const char *buf, const char *sandboxes_dir,
    bool normalised, struct moat_errors *errs)
{
	struct moat_config *cfg = xcalloc(1, sizeof(*cfg));
	struct loader ld = { cfg, errs, path, buf, NULL, normalised };
	char *dir = NULL, *sdir = NULL;
	const char *slash = strrchr(path, '/');

	memset(errs, 0, sizeof(*errs));
	cfg->path = xstrdup(path);
	set_defaults(cfg);
	/* In-memory configs (fuzzing, unit tests) have no drop-ins of
	 * secrets: nothing beside a name that is not a file. */
	if (buf == NULL) {
		if (slash == NULL)
			sdir = xstrdup("secrets.d");
		else
			xasprintf(&sdir, "%.*s/secrets.d", (int)(slash - path),
			    path);
		ld.secrets_dir = sdir;
	}
	if (load_main(&ld, path) == 0 && !normalised) {
		if (sandboxes_dir == NULL) {
			if (slash == NULL)
				dir = xstrdup("sandboxes.d");
			else
				xasprintf(&dir, "%.*s/sandboxes.d",
				    (int)(slash - path), path);
			sandboxes_dir = dir;
		}
		load_dropins(&ld, sandboxes_dir, load_sandbox);
	}
	free(dir);
	free(sdir);
	check_unique(&ld);
	check_secrets(&ld);
	check_secret_owners(&ld);
	check_quotas(&ld);
	check_exceptions(&ld);
	check_network(&ld);
	if (errs->n > 0) {
		config_free(cfg);
		return NULL;
	}
	/* The sandbox network is denied whatever it is: dnsd strips it
	 * from answers, set-adds refuse it, the proxy never dials it. */
	cfg->private = rangeset_new_deny(cfg->gw.treat_as_public,
	    cfg->gw.ntreat_as_public, &cfg->gw.network, 1);
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

/* --- freeing ---------------------------------------------------------- */

static void
strlist_free(struct moat_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

void
config_free(struct moat_config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nsandboxes; i++) {
		struct moat_sandbox *x = &cfg->sandboxes[i];
		free(x->name);
		free(x->owner);
		strlist_free(&x->allow);
		strlist_free(&x->secrets);
		strlist_free(&x->bypass);
		free(x->allow_ports);
	}
	for (i = 0; i < cfg->nsecrets; i++) {
		struct moat_secret *x = &cfg->secrets[i];
		free(x->name);
		free(x->file);
		free(x->header);
		free(x->placeholder);
		free(x->owner);
		strlist_free(&x->hosts);
		strlist_free(&x->shared_with);
		strlist_free(&x->requests);
	}
	for (i = 0; i < cfg->nquotas; i++)
		free(cfg->quotas[i].user);
	free(cfg->quotas);
	free(cfg->gw.admin_group);
	for (i = 0; i < cfg->gw.nexceptions; i++) {
		free(cfg->gw.exceptions[i].ports);
		strlist_free(&cfg->gw.exceptions[i].sandboxes);
		free(cfg->gw.exceptions[i].sandbox_lines);
	}
	for (i = 0; i < cfg->nfiles; i++)
		free(cfg->files[i]);
	free(cfg->gw.exceptions);
	free(cfg->gw.treat_as_public);
	free(cfg->gw.upstream);
	free(cfg->gw.state_dir);
	free(cfg->gw.proxy_upstream_ca);
	free(cfg->sandboxes);
	free(cfg->secrets);
	free(cfg->files);
	free(cfg->path);
	rangeset_free(cfg->private);
	free(cfg);
}

void
config_errors_free(struct moat_errors *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		free(e->msg[i]);
	free(e->msg);
	e->msg = NULL;
	e->n = 0;
	for (i = 0; i < e->nwarn; i++)
		free(e->warn[i]);
	free(e->warn);
	e->warn = NULL;
	e->nwarn = 0;
}

void
config_errors_print(FILE *fp, const struct moat_errors *e)
{
	size_t i;

	for (i = 0; i < e->n; i++)
		fprintf(fp, "%s\n", e->msg[i]);
}

void
config_warnings_print(FILE *fp, const struct moat_errors *e)
{
	size_t i;

	for (i = 0; i < e->nwarn; i++)
		fprintf(fp, "%s\n", e->warn[i]);
}

/* --- lookups ---------------------------------------------------------- */

void
config_dns_rate(const struct moat_config *cfg, const struct moat_sandbox *sb,
    double *qps, double *burst)
{
	long r = cfg->gw.dns_rate, b = cfg->gw.dns_burst;

	if (sb != NULL && sb->dns_rate >= 0) {
		r = sb->dns_rate;
		b = -1;
	}
	if (sb != NULL && sb->dns_burst >= 0)
		b = sb->dns_burst;
	*qps = (double)r;
	*burst = b >= 0 ? (double)b : 2.0 * (double)r;
}

const struct moat_sandbox *
config_sandbox_by_name(const struct moat_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (cfg->sandboxes[i].name &&
		    strcmp(cfg->sandboxes[i].name, name) == 0)
			return &cfg->sandboxes[i];
	return NULL;
}

const struct moat_sandbox *
config_sandbox_by_addr(const struct moat_config *cfg,
    const struct moat_addr *a)
{
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (addr_cmp(&cfg->sandboxes[i].address, a) == 0)
			return &cfg->sandboxes[i];
	return NULL;
}

const struct moat_secret *
config_secret_by_name(const struct moat_config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nsecrets; i++)
		if (cfg->secrets[i].name &&
		    strcmp(cfg->secrets[i].name, name) == 0)
			return &cfg->secrets[i];
	return NULL;
}

const struct moat_quota *
config_quota_for(const struct moat_config *cfg, const char *user)
{
	const struct moat_quota *dflt = NULL;
	size_t i;

	for (i = 0; i < cfg->nquotas; i++) {
		if (cfg->quotas[i].user == NULL)
			continue;
		if (strcmp(cfg->quotas[i].user, user) == 0)
			return &cfg->quotas[i];
		if (strcmp(cfg->quotas[i].user, "*") == 0)
			dflt = &cfg->quotas[i];
	}
	return dflt;
}

bool
secret_usable_by(const struct moat_secret *x, const char *user)
{
	size_t i;

	if (x->owner != NULL && strcmp(x->owner, user) == 0)
		return true;
	for (i = 0; i < x->shared_with.n; i++)
		if (strcmp(x->shared_with.v[i], user) == 0)
			return true;
	return false;
}

const char *
egress_name(enum moat_egress e)
{
	static const char *names[] = {
		[EGRESS_OPEN] = "open",
		[EGRESS_ALLOWLIST] = "allowlist",
		[EGRESS_NONE] = "none",
	};
	return (unsigned)e < 3 ? names[e] : "?";
}
