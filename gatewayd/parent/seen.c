/*
 * parent/seen.c -- bounded views of what sandboxes were refused and
 * resolved (seen.h).  Pure data: no I/O, no globals.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "json.h"
#include "log.h"
#include "seen.h"

static const char *const whys[SEEN_WHY_MAX] = {
	[SEEN_WHY_NONE] = "resolved",
	[SEEN_WHY_LIST] = "not on the allow list",
	[SEEN_WHY_PORT] = "port not in allow_ports",
	[SEEN_WHY_EGRESS_NONE] = "egress none",
	[SEEN_WHY_PRIVATE] = "private address",
	[SEEN_WHY_RULE] = "secret request rule",
	[SEEN_WHY_HOST] = "the gateway host",
	[SEEN_WHY_GUEST] = "another guest",
	[SEEN_WHY_RESOLVER] = "a resolver other than the gateway",
	[SEEN_WHY_BUDGET] = "egress budget spent",
};

static const char *const sources[SEEN_NSOURCES] = {
	[SEEN_DNS] = "dns", [SEEN_KERNEL] = "kernel", [SEEN_PROXY] = "proxy",
};

const char *
seen_why_str(enum seen_why w)
{
	return (unsigned)w < SEEN_WHY_MAX ? whys[w] : "?";
}

const char *
seen_source_str(enum seen_source s)
{
	return (unsigned)s < SEEN_NSOURCES ? sources[s] : "?";
}

/* The view's index for sandbox, or where it would go (*found false). */
static size_t
view_pos(const struct seen_set *set, const char *sandbox, bool *found)
{
	size_t lo = 0, hi = set->n, mid;
	int c;

	*found = false;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(set->v[mid].sandbox, sandbox);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct seen_view *
seen_find(struct seen_set *set, const char *sandbox)
{
	bool found;
	size_t i = view_pos(set, sandbox, &found);

	return found ? &set->v[i] : NULL;
}

static struct seen_view *
view_get(struct seen_set *set, const char *sandbox)
{
	bool found;
	size_t i = view_pos(set, sandbox, &found);

	if (found)
		return &set->v[i];
	set->v = xreallocarray(set->v, set->n + 1, sizeof(*set->v));
	memmove(&set->v[i + 1], &set->v[i], (set->n - i) * sizeof(*set->v));
	memset(&set->v[i], 0, sizeof(set->v[i]));
	snprintf(set->v[i].sandbox, sizeof(set->v[i].sandbox), "%s", sandbox);
	set->n++;
	return &set->v[i];
}

/* An entry for what: the one there is, a new one, or, in a full view,
 * the one met least recently, given over (and counted as dropped). */
static struct seen_entry *
entry_get(struct seen_view *v, size_t per, const char *what, bool *fresh)
{
	size_t i, old = 0;

	*fresh = false;
	for (i = 0; i < v->n; i++)
		if (v->e[i].what[0] == what[0] && strcmp(v->e[i].what, what) == 0)
			return &v->e[i];
	*fresh = true;
	if (v->n < per) {
		if (v->n == v->cap) {
			v->cap = v->cap ? v->cap * 2 : 8;
			if (v->cap > per)
				v->cap = per;
			v->e = xreallocarray(v->e, v->cap, sizeof(*v->e));
		}
		return &v->e[v->n++];
	}
	for (i = 1; i < v->n; i++)
		if (v->e[i].last < v->e[old].last)
			old = i;
	v->dropped++;
	return &v->e[old];
}

void
seen_add(struct seen_set *set, const char *sandbox, const char *what,
    enum seen_source src, enum seen_why why, uint64_t count, time_t now)
{
	struct seen_view *v;
	struct seen_entry *e;
	bool fresh;

	if (sandbox[0] == '\0' || strlen(sandbox) >= sizeof(v->sandbox) ||
	    what[0] == '\0' || count == 0)
		return;
	v = view_get(set, sandbox);
	e = entry_get(v, seen_per(set), what, &fresh);
	if (fresh) {
		memset(e, 0, sizeof(*e));
		snprintf(e->what, sizeof(e->what), "%s", what);
		e->first = now;
	}
	e->source = (uint8_t)src;
	e->why = (uint8_t)why;
	e->count += count;
	e->last = now;
}

size_t
seen_per(const struct seen_set *set)
{
	return set->per ? set->per : SEEN_PER_SANDBOX;
}

static int
by_last_desc(const void *a, const void *b)
{
	const struct seen_entry *x = a, *y = b;

	return x->last < y->last ? 1 : x->last > y->last ? -1 : 0;
}

void
seen_limit(struct seen_set *set, size_t nsandboxes)
{
	size_t i, per = nsandboxes ? SEEN_TOTAL / nsandboxes : SEEN_PER_SANDBOX;
	struct seen_view *v;

	if (per > SEEN_PER_SANDBOX)
		per = SEEN_PER_SANDBOX;
	if (per < SEEN_PER_SANDBOX_MIN)
		per = SEEN_PER_SANDBOX_MIN;
	set->per = per;
	for (i = 0; i < set->n; i++) {
		v = &set->v[i];
		if (v->n <= per)
			continue;
		qsort(v->e, v->n, sizeof(*v->e), by_last_desc);
		v->dropped += v->n - per;
		v->n = v->cap = per;
		v->e = xreallocarray(v->e, per, sizeof(*v->e));
	}
}

void
seen_prune(struct seen_set *set, bool (*keep)(void *, const char *),
    void *arg)
{
	size_t i, j = 0;

	for (i = 0; i < set->n; i++) {
		if (keep(arg, set->v[i].sandbox)) {
			set->v[j++] = set->v[i];
			continue;
		}
		free(set->v[i].e);
	}
	set->n = j;
}

void
seen_clear(struct seen_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		free(set->v[i].e);
	free(set->v);
	set->v = NULL;
	set->n = 0;
}

size_t
seen_bytes(const struct seen_set *set)
{
	size_t i, b = set->n * sizeof(*set->v);

	for (i = 0; i < set->n; i++)
		b += set->v[i].cap * sizeof(*set->v[i].e);
	return b;
}

/* --- audit events ------------------------------------------------------ */

static int
hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

bool
seen_json_field(const char *json, const char *key, char *out, size_t len)
{
	char pat[64];
	const char *p;
	size_t n = 0;
	int c;

	if (len == 0 || snprintf(pat, sizeof(pat), "\"%s\":", key) >=
	    (int)sizeof(pat) || (p = strstr(json, pat)) == NULL)
		return false;
	p += strlen(pat);
	if (*p != '"') {		/* a number */
		while (isdigit((unsigned char)*p) && n + 1 < len)
			out[n++] = *p++;
		out[n] = '\0';
		return n > 0 && !isdigit((unsigned char)*p);
	}
	for (p++; *p != '"'; p++) {
		if (*p == '\0' || n + 1 >= len)
			return false;
		c = (unsigned char)*p;
		if (c == '\\') {
			p++;
			if (*p == 'u' && isxdigit((unsigned char)p[1]) &&
			    isxdigit((unsigned char)p[2]) &&
			    isxdigit((unsigned char)p[3]) &&
			    isxdigit((unsigned char)p[4])) {
				c = (hexval(p[1]) << 12) | (hexval(p[2]) << 8) |
				    (hexval(p[3]) << 4) | hexval(p[4]);
				p += 4;
			} else if (*p == '\0')
				return false;
			else
				c = (unsigned char)*p;
		}
		out[n++] = c >= ' ' && c <= '~' ? (char)c : '?';
	}
	out[n] = '\0';
	return true;
}

/* The kernel's refusal reasons (nft log prefixes) a sandbox's operator
 * can act on; the others (spoofing, IPv6, invalid packets) stay in the
 * audit log only. */
static const struct {
	const char	*reason;
	enum seen_why	 why;
} kernel_whys[] = {
	{ "allowlist", SEEN_WHY_LIST },
	{ "private", SEEN_WHY_PRIVATE },
	{ "none", SEEN_WHY_EGRESS_NONE },
	{ "host", SEEN_WHY_HOST },
	{ "guest", SEEN_WHY_GUEST },
	{ "dns", SEEN_WHY_RESOLVER },
	{ "budget", SEEN_WHY_BUDGET },
};

/* The proxy's refusal reasons, by a phrase each contains; protocol
 * errors (a malformed request, an upstream that failed) are not
 * refusals of the policy and are left out. */
static const struct {
	const char	*phrase;
	enum seen_why	 why;
} proxy_whys[] = {
	{ "allow_ports", SEEN_WHY_PORT },
	{ "not on the allowlist", SEEN_WHY_LIST },
	{ "allowlist needs", SEEN_WHY_LIST },
	{ "egress is none", SEEN_WHY_EGRESS_NONE },
	{ "private address", SEEN_WHY_PRIVATE },
	{ "sandbox network", SEEN_WHY_PRIVATE },
	{ "gateway host", SEEN_WHY_HOST },
};

static bool
parse_kernel(const char *json, char *what, size_t whatlen,
    enum seen_why *why)
{
	char reason[32], dst[64], port[8], proto[16];
	size_t i;
	bool v6;

	if (!seen_json_field(json, "reason", reason, sizeof(reason)) ||
	    !seen_json_field(json, "dst", dst, sizeof(dst)))
		return false;
	for (i = 0; i < sizeof(kernel_whys) / sizeof(kernel_whys[0]); i++)
		if (strcmp(reason, kernel_whys[i].reason) == 0)
			break;
	if (i == sizeof(kernel_whys) / sizeof(kernel_whys[0]))
		return false;
	*why = kernel_whys[i].why;
	/* An IPv6 address with a port is bracketed, so that the address
	 * (seen_dst_len) is found again without guessing. */
	v6 = strchr(dst, ':') != NULL;
	if (!seen_json_field(json, "port", port, sizeof(port)) ||
	    strcmp(port, "0") == 0)
		snprintf(what, whatlen, "%s", dst);
	else if (seen_json_field(json, "proto", proto, sizeof(proto)) &&
	    strcmp(proto, "tcp") != 0)
		snprintf(what, whatlen, "%s%s%s:%s/%s", v6 ? "[" : "", dst,
		    v6 ? "]" : "", port, proto);
	else
		snprintf(what, whatlen, "%s%s%s:%s", v6 ? "[" : "", dst,
		    v6 ? "]" : "", port);
	return true;
}

static bool
parse_proxy(const char *json, bool rule, char *what, size_t whatlen,
    enum seen_why *why)
{
	char reason[256], host[256], port[8];
	size_t i;

	if (!seen_json_field(json, "reason", reason, sizeof(reason)))
		return false;
	if (rule)
		*why = SEEN_WHY_RULE;
	else {
		for (i = 0; i < sizeof(proxy_whys) / sizeof(proxy_whys[0]); i++)
			if (strstr(reason, proxy_whys[i].phrase) != NULL)
				break;
		if (i == sizeof(proxy_whys) / sizeof(proxy_whys[0]))
			return false;
		*why = proxy_whys[i].why;
	}
	if (!seen_json_field(json, "host", host, sizeof(host)) ||
	    host[0] == '\0')
		snprintf(host, sizeof(host), "(no name)");
	/* A name refused is the name; an address or a port refused is
	 * where it was going. */
	if ((*why == SEEN_WHY_PORT || *why == SEEN_WHY_PRIVATE) &&
	    seen_json_field(json, "port", port, sizeof(port)))
		snprintf(what, whatlen, "%s:%s", host, port);
	else
		snprintf(what, whatlen, "%s", host);
	return true;
}

bool
seen_parse_audit(const char *json, char *sandbox, size_t sblen, char *what,
    size_t whatlen, enum seen_source *src, enum seen_why *why)
{
	char event[32], source[16];

	if (!seen_json_field(json, "event", event, sizeof(event)) ||
	    !seen_json_field(json, "source", source, sizeof(source)) ||
	    !seen_json_field(json, "sandbox", sandbox, sblen) ||
	    sandbox[0] == '\0' || strcmp(sandbox, "?") == 0)
		return false;
	if (strcmp(source, "nflog") == 0 && strcmp(event, "refusal") == 0) {
		*src = SEEN_KERNEL;
		return parse_kernel(json, what, whatlen, why);
	}
	if (strcmp(source, "proxy") == 0 && (strcmp(event, "refuse") == 0 ||
	    strcmp(event, "request-refused") == 0)) {
		*src = SEEN_PROXY;
		return parse_proxy(json, event[0] == 'r' && event[1] == 'e' &&
		    event[2] == 'q', what, whatlen, why);
	}
	return false;
}

/* --- printing ------------------------------------------------------------ */

/*
 * Everything a guest chose (a name it resolved, a Host header, an SNI) is
 * data wherever it is shown: in a row of text, a JSON string, a comment.
 * seen_shown() is json_escape's body, so one rule holds for every output:
 * printable ASCII only, '"' and '\' behind a backslash, every other byte
 * as \u00XX.  Nothing a guest sends can end a string, a line or a row.
 */
char *
seen_shown(const char *what)
{
	return json_escape(what);
}

bool
seen_allow_name(const char *what, char *out, size_t len)
{
	char why[384];

	/* A resolved name is a name: "*" is legal in DNS but would widen
	 * the list to a pattern the operator never saw resolved. */
	if (strlen(what) >= len || strchr(what, '*') != NULL ||
	    what[0] == '@')
		return false;
	memcpy(out, what, strlen(what) + 1);
	/* The config loader's own rule for an allow entry (no ports: a
	 * name resolved carries none). */
	return config_allow_entry(out, why, sizeof(why));
}

static int
by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void
buf_add(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = xreallocarray(*buf, *cap, 1);
	}
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

char *
seen_as_allow(const char *const *what, size_t n)
{
	char **ok = xreallocarray(NULL, n + 1, sizeof(*ok)), *buf = NULL, *e;
	char name[SEEN_WHAT_LEN];
	size_t i, nok = 0, len = 0, cap = 0, bad = 0;

	for (i = 0; i < n; i++)
		if (seen_allow_name(what[i], name, sizeof(name)))
			ok[nok++] = xstrdup(name);
	qsort(ok, nok, sizeof(*ok), by_str);
	buf_add(&buf, &len, &cap, "allow = [");
	for (i = 0; i < nok; i++) {
		/* Two spellings of one name ("A.test", "a.test.") are one
		 * entry; the loader refuses a name listed twice. */
		if (i > 0 && strcmp(ok[i], ok[i - 1]) == 0)
			continue;
		buf_add(&buf, &len, &cap, i ? ", \"" : " \"");
		buf_add(&buf, &len, &cap, ok[i]);
		buf_add(&buf, &len, &cap, "\"");
	}
	buf_add(&buf, &len, &cap, " ];\n");
	for (i = 0; i < nok; i++)
		free(ok[i]);
	free(ok);
	for (i = 0; i < n; i++) {
		if (seen_allow_name(what[i], name, sizeof(name)))
			continue;
		if (bad++ == 0)
			buf_add(&buf, &len, &cap, "# left out, not valid allow "
			    "entries (as resolved, escaped):\n");
		e = seen_shown(what[i]);
		buf_add(&buf, &len, &cap, "#   \"");
		buf_add(&buf, &len, &cap, e);
		buf_add(&buf, &len, &cap, "\"\n");
		free(e);
	}
	return buf;
}

size_t
seen_dst_len(const struct seen_entry *e)
{
	const char *c;

	if (e->source != SEEN_KERNEL)
		return strlen(e->what);
	if (e->what[0] == '[' && (c = strchr(e->what, ']')) != NULL)
		return (size_t)(c + 1 - e->what);
	if ((c = strchr(e->what, ':')) != NULL && strchr(c + 1, ':') == NULL)
		return (size_t)(c - e->what);
	return strlen(e->what);
}
