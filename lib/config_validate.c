/*
 * config_validate.c -- value validators, and the setters that check one
 * value against its key's row and store it at the row's offset.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "log.h"

/* --- value validators ------------------------------------------------- */

/* A plausible interface name: what the kernel takes (1 to IFNAMSIZ - 1
 * bytes, not "." or "..") narrowed to the characters interfaces are
 * really named with, so that a pattern ("eth*") or a stray quote is an
 * error here rather than a rule that matches nothing. */
bool
ifname_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IFNAMSIZ || strcmp(s, ".") == 0 ||
	    strcmp(s, "..") == 0)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789-_.") == n;
}

bool
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

bool
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

bool
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
	return hostpattern_why(s, NULL, 0);
}

/*
 * The one rule for allow lists (the config, provision --allow, a KVM
 * host's registration): a host name, or "*." and a host name of two or
 * more labels.  "*.com" would open a whole top-level domain, so it is
 * refused, and the reason says so.
 */
bool
hostpattern_why(const char *s, char *why, size_t len)
{
	const char *name = strncmp(s, "*.", 2) == 0 ? s + 2 : s;

	if (hostname_valid(name))
		return true;
	if (why == NULL)
		return false;
	if (name != s && label_valid(name, strlen(name)) &&
	    strspn(name, "0123456789") != strlen(name))
		snprintf(why, len, "wildcard \"%s\" is too broad: it covers the "
		    "whole top-level domain \"%s\" (a wildcard needs at least "
		    "two labels after \"*.\", like \"*.example.%s\")", s, name,
		    name);
	else
		snprintf(why, len, "expected a fully qualified host name or "
		    "\"*.\" followed by one, got \"%s\"", s);
	return false;
}

/* Lower-case and drop one trailing dot, in place. */
void
hostname_normalise(char *s)
{
	size_t n = strlen(s);

	if (n > 1 && s[n - 1] == '.')
		s[n - 1] = '\0';
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

bool
token_valid(const char *s)	/* an HTTP header field name (RFC 9110 token) */
{
	if (*s == '\0' || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return false;
	return true;
}

bool
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

int
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


bool
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

/* --- generic setters -------------------------------------------------- */

void
set_ifname(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const char *v = config_setting_get_string(s);

	if (!ifname_valid(v)) {
		serr(ld, s, "%s: %s: expected an interface name of 1 to %d "
		    "letters, digits, '-', '_' or '.', got \"%s\"", ctx,
		    k->name, IFNAMSIZ - 1, v);
		return;
	}
	snprintf(FIELD(obj, k, char), IFNAMSIZ, "%s", v);
}

void
set_bool(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	*FIELD(obj, k, bool) = config_setting_get_bool(s) != 0;
}

void
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

/* Every bounded integer key: config_ranges says its range, the unit
 * named in the error and the field's width. */
void
set_int(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const struct irange *r = config_ranges;
	long long v = config_setting_get_int64(s);

	while (strcmp(r->key, k->name) != 0)
		r++;
	if (v < r->min || v > r->max) {
		serr(ld, s, "%s: %s: expected %lld to %lld%s, got %lld", ctx,
		    k->name, r->min, r->max, r->unit, v);
		return;
	}
	if (r->size == sizeof(uint16_t))
		*FIELD(obj, k, uint16_t) = (uint16_t)v;
	else if (r->size == sizeof(unsigned))
		*FIELD(obj, k, unsigned) = (unsigned)v;
	else
		*FIELD(obj, k, long) = (long)v;
}

/* A string naming one of the key's words in config_words; the error
 * lists them all. */
void
set_word(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const struct kword *w = config_words;
	const char *v = config_setting_get_string(s);
	char expect[256];
	size_t i, n, len = 0;

	while (strcmp(w->key, k->name) != 0)
		w++;
	for (n = 0; w[n].key != NULL && strcmp(w[n].key, k->name) == 0; n++)
		if (strcmp(v, w[n].word) == 0) {
			*FIELD(obj, k, int) = w[n].value;
			return;
		}
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(expect + len, sizeof(expect) - len,
		    "%s\"%s\"", i == 0 ? "" : i + 1 == n ? " or " : ", ",
		    w[i].word);
	serr(ld, s, "%s: %s: expected %s, got \"%s\"", ctx, k->name, expect,
	    v);
}

/* The name of a secret or a sandbox. */
void
set_name(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	const char *v = config_setting_get_string(s);

	if (!ident_valid(v, 32)) {
		serr(ld, s, "%s: name: expected 1 to 32 of a-z, 0-9, '-' and "
		    "'_', starting with a letter or digit, got \"%s\"", ctx, v);
		return;
	}
	free(*FIELD(obj, k, char *));
	*FIELD(obj, k, char *) = xstrdup(v);
}

void
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

bool
config_allow_entry(char *v, char *why, size_t whylen)
{
	char orig[300];

	/* Checked as normalised, named as written (hostpattern_why). */
	snprintf(orig, sizeof(orig), "%s", v);
	hostname_normalise(v);
	if (hostpattern_valid(v))
		return true;
	if (hostpattern_why(orig, why, whylen))
		hostpattern_why("", why, whylen);
	return false;
}

/* "*.x" covers x's subdomains (not x itself), as dnsd and the proxy
 * match it. */
static bool
pattern_covers(const char *pat, const char *name)
{
	size_t pl, nl = strlen(name);

	if (strncmp(pat, "*.", 2) != 0)
		return strcmp(pat, name) == 0;
	pl = strlen(pat + 1);		/* ".x" */
	return nl > pl && strcmp(name + nl - pl, pat + 1) == 0;
}

bool
config_allow_covers(const struct moat_strlist *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (pattern_covers(l->v[i], name))
			return true;
	return false;
}

/* "@NAME" in a list: its names, each once (a name both listed and in the
 * list is fine); an unknown or bad list is an error at e's line. */
static void
expand_list(struct loader *ld, const config_setting_t *e,
    struct moat_strlist *l, const char *v, const char *ctx,
    const struct key *k)
{
	struct moat_strlist got = { NULL, 0 };
	char err[768];
	size_t i, j;

	if (config_allow_list(ld->cfg->path, v, &got, err, sizeof(err)) == -1) {
		serr(ld, e, "%s: %s: %s", ctx, k->name, err);
		for (i = 0; i < got.n; i++)
			free(got.v[i]);
		free(got.v);
		return;
	}
	for (i = 0; i < got.n; i++) {
		for (j = 0; j < l->n; j++)
			if (strcmp(l->v[j], got.v[i]) == 0)
				break;
		if (j < l->n) {
			free(got.v[i]);
			continue;
		}
		l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
		l->v[l->n++] = got.v[i];
	}
	free(got.v);
}

/* A list of host names or "*.name" patterns, normalised and de-duplicated. */
static void
set_hostlist(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k, bool wildcards,
    bool (*entry)(char *, char *, size_t))
{
	struct moat_strlist *l = FIELD(obj, k, struct moat_strlist);
	const config_setting_t *e;
	char *v, why[384];
	size_t i, j;
	int n = config_setting_length(s);
	bool lists = false;

	for (i = 0; i < (size_t)n; i++) {
		e = config_setting_get_elem(s, (unsigned int)i);
		v = xstrdup(config_setting_get_string(e));
		if (wildcards && v[0] == '@') {
			expand_list(ld, e, l, v, ctx, k);
			lists = true;
			free(v);
			continue;
		}
		if (wildcards ? !entry(v, why, sizeof(why)) :
		    (hostname_normalise(v), !hostname_valid(v))) {
			if (!wildcards)
				snprintf(why, sizeof(why), "expected a fully "
				    "qualified host name, got \"%s\"",
				    config_setting_get_string(e));
			serr(ld, e, "%s: %s: %s", ctx, k->name, why);
			free(v);
			continue;
		}
		for (j = 0; j < l->n; j++)
			if (strcmp(l->v[j], v) == 0)
				break;
		if (j < l->n) {
			if (!lists)	/* else it may come from a list */
				serr(ld, e, "%s: %s: \"%s\" is listed twice",
				    ctx, k->name, v);
			free(v);
			continue;
		}
		l->v = xreallocarray(l->v, l->n + 1, sizeof(char *));
		l->v[l->n++] = v;
	}
}

void
set_patterns(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	set_hostlist(ld, s, obj, ctx, k, true, config_allow_entry);
}

/* A sandbox's allow: patterns, each may have ports of its own. */
void
set_allow(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	set_hostlist(ld, s, obj, ctx, k, true, config_allow_entry_ports);
}

void
set_hosts(struct loader *ld, const config_setting_t *s, void *obj,
    const char *ctx, const struct key *k)
{
	set_hostlist(ld, s, obj, ctx, k, false, NULL);
}


void
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

void
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

