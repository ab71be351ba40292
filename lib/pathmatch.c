/*
 * pathmatch.c -- request rules: normal form of a path and segment globs
 * (see pathmatch.h).
 */
#include <stdio.h>
#include <string.h>

#include "hex.h"
#include "pathmatch.h"

struct seg {
	const char	*p;
	size_t		 len;
};

static bool
unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* Bytes a path or query may hold raw (RFC 3986 pchar, plus '/' and,
 * in a query, '?').  Anything else is sent escaped by real clients. */
static bool
pchar(unsigned char c, bool query)
{
	return unreserved(c) || (c != 0 && strchr("!$&'()*+,;=:@/",
	    c) != NULL) || (query && c == '?');
}

/* Decode unreserved escapes of s into out; other escapes keep upper-case
 * hex.  An encoded '/' or '\\' (in a path), a malformed escape or a byte
 * outside pchar is refused.  Length or -1. */
static int
norm_chars(const char *s, size_t len, char *out, size_t cap, bool query)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, o = 0;
	int hi, lo, v;

	for (i = 0; i < len; i++) {
		if (o + 4 > cap)
			return -1;
		if (s[i] != '%') {
			if (!pchar((unsigned char)s[i], query))
				return -1;
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= len || (hi = hex_digit(s[i + 1])) < 0 ||
		    (lo = hex_digit(s[i + 2])) < 0)
			return -1;
		v = hi * 16 + lo;
		i += 2;
		if (!query && (v == '/' || v == '\\'))
			return -1;
		if (unreserved((unsigned char)v)) {
			out[o++] = (char)v;
			continue;
		}
		out[o++] = '%';
		out[o++] = hex[v >> 4];
		out[o++] = hex[v & 15];
	}
	out[o] = '\0';
	return (int)o;
}

/* An encoded '%' that starts another escape, as "%252e" (also spelled
 * "%25%32%65"): an origin that decodes twice reads another path. */
static bool
double_escape(const char *norm, size_t len)
{
	const char *p = norm;

	while ((p = memmem(p, len - (size_t)(p - norm), "%25", 3)) != NULL) {
		if ((size_t)(p - norm) + 5 <= len && hex_digit(p[3]) >= 0 &&
		    hex_digit(p[4]) >= 0)
			return true;
		p += 3;
	}
	return false;
}

/* ".", ".." and their Tomcat-style "..;x" forms, the ';' also encoded
 * (normal form: "%3B"). */
static bool
dot_segment(const char *p, size_t len)
{
	const char *semi = memchr(p, ';', len);
	const char *esc = memmem(p, len, "%3B", 3);

	if (esc != NULL && (semi == NULL || esc < semi))
		semi = esc;
	if (semi != NULL)
		len = (size_t)(semi - p);
	return (len == 1 && p[0] == '.') ||
	    (len == 2 && p[0] == '.' && p[1] == '.');
}

/* Split a normalised path into segments; the last may be empty (a
 * trailing slash), no other.  Count or -1. */
static int
split(const char *path, size_t len, struct seg *v, bool pattern)
{
	size_t i = 1, start;
	int n = 0;

	if (len == 0 || path[0] != '/')
		return -1;
	if (len == 1)
		return 0;	/* "/" */
	for (;;) {
		start = i;
		while (i < len && path[i] != '/')
			i++;
		if (n >= PM_MAX_SEGS)
			return -1;
		v[n].p = path + start;
		v[n].len = i - start;
		if (dot_segment(v[n].p, v[n].len))
			return -1;
		if (v[n].len == 0 && (i < len || pattern))
			return -1;
		n++;
		if (i >= len)
			return n;
		i++;		/* the slash */
		if (i == len) {	/* trailing slash: one empty segment */
			if (pattern || n >= PM_MAX_SEGS)
				return -1;
			v[n].p = path + i;
			v[n].len = 0;
			return n + 1;
		}
	}
}

int
pm_normalise(const char *target, size_t len, char *out, size_t cap,
    const char **query, size_t *qlen)
{
	struct seg v[PM_MAX_SEGS];
	const char *q = memchr(target, '?', len);
	size_t plen = q ? (size_t)(q - target) : len;
	int n;

	*query = NULL;
	*qlen = 0;
	if (q != NULL) {
		*query = q + 1;
		*qlen = len - plen - 1;
	}
	if (memchr(target, '#', len) != NULL || cap < 2)
		return -1;
	if ((n = norm_chars(target, plen, out, cap, false)) < 0 ||
	    double_escape(out, (size_t)n))
		return -1;
	if (split(out, (size_t)n, v, false) < 0)
		return -1;
	return n;
}

static bool
seg_eq(const struct seg *a, const struct seg *b)
{
	return a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

static bool
is_star(const struct seg *s, size_t n)
{
	return s->len == n && memcmp(s->p, "**", n) == 0;
}

/* Glob over segments: "*" is one segment, "**" any run of them.  The
 * classic one-backtrack-point walk, linear in practice and never worse
 * than the product of the lengths. */
static bool
match_segs(const struct seg *pat, int np, const struct seg *s, int ns)
{
	int p = 0, i = 0, star_p = -1, star_i = 0;

	while (i < ns) {
		if (p < np && is_star(&pat[p], 2)) {
			star_p = p++;
			star_i = i;
		} else if (p < np && (is_star(&pat[p], 1) ? s[i].len > 0 :
		    seg_eq(&pat[p], &s[i]))) {
			p++;
			i++;
		} else if (star_p >= 0) {
			p = star_p + 1;
			i = ++star_i;
		} else
			return false;
	}
	while (p < np && is_star(&pat[p], 2))
		p++;
	return p == np;
}

/* Glob over characters: '*' is any run. */
static bool
match_chars(const char *pat, size_t np, const char *s, size_t ns)
{
	size_t p = 0, i = 0, star_i = 0;
	bool star = false;
	size_t star_p = 0;

	while (i < ns) {
		if (p < np && pat[p] == '*') {
			star = true;
			star_p = p++;
			star_i = i;
		} else if (p < np && pat[p] == s[i]) {
			p++;
			i++;
		} else if (star) {
			p = star_p + 1;
			i = ++star_i;
		} else
			return false;
	}
	while (p < np && pat[p] == '*')
		p++;
	return p == np;
}

/* The parts of a rule: method, path, query (NULL if none). */
struct rule {
	const char	*method;
	size_t		 mlen;
	const char	*path;
	size_t		 plen;
	const char	*query;
	size_t		 qlen;
};

static int
rule_split(const char *rule, struct rule *r, char *err, size_t errlen)
{
	const char *sp = strchr(rule, ' '), *q;
	size_t i;

	if (sp == NULL || sp == rule || sp[1] != '/') {
		snprintf(err, errlen, "expected \"METHOD /path\" like \"GET "
		    "/repos/acme/*\", got \"%s\"", rule);
		return -1;
	}
	r->method = rule;
	r->mlen = (size_t)(sp - rule);
	if (r->mlen > PM_MAX_METHOD) {
		snprintf(err, errlen, "method of at most %d letters expected",
		    PM_MAX_METHOD);
		return -1;
	}
	for (i = 0; i < r->mlen; i++)
		if (!(rule[i] >= 'A' && rule[i] <= 'Z') && !(r->mlen == 1 &&
		    rule[i] == '*')) {
			snprintf(err, errlen, "method: expected upper-case "
			    "letters like GET, or *, got \"%.*s\"",
			    (int)r->mlen, rule);
			return -1;
		}
	r->path = sp + 1;
	q = strchr(r->path, '?');
	r->plen = q ? (size_t)(q - r->path) : strlen(r->path);
	r->query = q ? q + 1 : NULL;
	r->qlen = q ? strlen(q + 1) : 0;
	return 0;
}

/* Wildcards only as whole segments. */
static int
check_segs(const struct seg *v, int n, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < n; i++)
		if (memchr(v[i].p, '*', v[i].len) != NULL &&
		    !is_star(&v[i], 1) && !is_star(&v[i], 2)) {
			snprintf(err, errlen, "'*' and '**' stand for whole "
			    "segments; got \"%.*s\"", (int)v[i].len, v[i].p);
			return -1;
		}
	return 0;
}

int
pm_rule_check(const char *rule, char *err, size_t errlen)
{
	char norm[PM_MAX_PATH];
	struct seg v[PM_MAX_SEGS];
	struct rule r;
	int n;

	if (rule_split(rule, &r, err, errlen) < 0)
		return -1;
	if (r.plen >= PM_MAX_PATH || r.qlen >= PM_MAX_PATH) {
		snprintf(err, errlen, "pattern longer than %d bytes",
		    PM_MAX_PATH - 1);
		return -1;
	}
	n = norm_chars(r.path, r.plen, norm, sizeof(norm), false);
	if (n < 0 || (size_t)n != r.plen || memcmp(norm, r.path, r.plen) != 0 ||
	    (n = split(norm, (size_t)n, v, true)) < 0) {
		snprintf(err, errlen, "path \"%.*s\": expected '/'-separated "
		    "segments in normal form (no \".\", \"..\" or empty "
		    "segment, no trailing '/', no escape of a letter, digit or "
		    "-._~, no encoded '/')", (int)r.plen, r.path);
		return -1;
	}
	if (check_segs(v, n, err, errlen) < 0)
		return -1;
	if (r.query != NULL && (norm_chars(r.query, r.qlen, norm, sizeof(norm),
	    true) != (int)r.qlen || memcmp(norm, r.query, r.qlen) != 0)) {
		snprintf(err, errlen, "query \"%s\": expected printable URI "
		    "characters in normal form", r.query);
		return -1;
	}
	return 0;
}

bool
pm_rule_match(const char *rule, const char *method, size_t mlen,
    const char *path, size_t plen, const char *query, size_t qlen)
{
	struct seg pv[PM_MAX_SEGS], sv[PM_MAX_SEGS];
	char qn[PM_MAX_PATH], err[8];
	struct rule r;
	int np, ns, qn_len;

	if (pm_rule_check(rule, err, sizeof(err)) < 0 ||
	    rule_split(rule, &r, err, sizeof(err)) < 0)
		return false;
	if (!(r.mlen == 1 && r.method[0] == '*') &&
	    (r.mlen != mlen || memcmp(r.method, method, mlen) != 0))
		return false;
	if ((np = split(r.path, r.plen, pv, true)) < 0 ||
	    (ns = split(path, plen, sv, false)) < 0)
		return false;
	if (!match_segs(pv, np, sv, ns))
		return false;
	if (r.query == NULL)
		return true;
	if ((qn_len = norm_chars(query ? query : "", qlen, qn, sizeof(qn),
	    true)) < 0)
		return false;
	return match_chars(r.query, r.qlen, qn, (size_t)qn_len);
}
