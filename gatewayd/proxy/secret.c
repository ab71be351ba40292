/*
 * secret.c -- secret values and the substitutions done with them.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "secret.h"
#include "secretfile.h"

/* --- loading ---------------------------------------------------------- */

static uint8_t *
arena_new(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fatal("mmap");
	(void)madvise(p, len, MADV_DONTDUMP);
	if (mlock(p, len) < 0)
		log_debug("secrets: mlock: %s (values may be swapped)",
		    strerror(errno));
	return p;
}

int
secrets_load_from(struct secrets *ss, const struct moat_config *cfg,
    secret_getter get, void *arg, char *err, size_t errlen)
{
	char buf[SECRET_MAX_LEN + 2];
	const struct moat_secret *o;
	size_t i, len, off = 0, pg = (size_t)sysconf(_SC_PAGESIZE);
	int rc = 0;

	memset(ss, 0, sizeof(*ss));
	ss->n = cfg->nsecrets;
	ss->v = xcalloc(ss->n + 1, sizeof(*ss->v));
	ss->redact = xcalloc(ss->n + 1, sizeof(*ss->redact));
	ss->arenalen = ((ss->n * (SECRET_MAX_LEN + 1)) / pg + 1) * pg;
	ss->arena = arena_new(ss->arenalen);
	for (i = 0; i < ss->n && rc == 0; i++) {
		struct secret *s = &ss->v[i];

		s->cfg = &cfg->secrets[i];
		if ((rc = get(arg, s->cfg, buf, &len, err, errlen)) < 0)
			break;
		if ((o = secret_value_placeholder(cfg, buf, len)) != NULL) {
			snprintf(err, errlen, "secret \"%s\": its value "
			    "contains the placeholder of secret \"%s\"; a value "
			    "may hold no placeholder", s->cfg->name, o->name);
			rc = -1;
			break;
		}
		s->value = (char *)ss->arena + off;
		memcpy(s->value, buf, len);
		s->len = len;
		off += len + 1;
		ss->redact[i] = (struct subst){ s->value, s->len,
		    s->cfg->placeholder, strlen(s->cfg->placeholder) };
		if (len > ss->maxvalue)
			ss->maxvalue = len;
		if (ss->redact[i].tolen > ss->maxph)
			ss->maxph = ss->redact[i].tolen;
	}
	explicit_bzero(buf, sizeof(buf));
	if (rc < 0)
		secrets_wipe(ss);
	return rc;
}

static int
from_file(void *arg, const struct moat_secret *s, char *buf, size_t *len,
    char *err, size_t errlen)
{
	return secret_file_read(s, buf, len, err, errlen);
}

int
secrets_load(struct secrets *ss, const struct moat_config *cfg, char *err,
    size_t errlen)
{
	return secrets_load_from(ss, cfg, from_file, NULL, err, errlen);
}

void
secrets_wipe(struct secrets *ss)
{
	if (ss->arena != NULL) {
		explicit_bzero(ss->arena, ss->arenalen);
		munlock(ss->arena, ss->arenalen);
		munmap(ss->arena, ss->arenalen);
	}
	free(ss->v);
	free(ss->redact);
	memset(ss, 0, sizeof(*ss));
}

/* --- generations -------------------------------------------------------- */

static struct secrets *generations;

struct secrets *
secrets_adopt(struct secrets *ss)
{
	struct secrets *g = xmalloc(sizeof(*g));

	*g = *ss;
	memset(ss, 0, sizeof(*ss));
	g->refs = 1;
	g->next = generations;
	generations = g;
	return g;
}

/* --- values staged ahead of a reload ----------------------------------- */

struct staged {
	char		 name[64];
	uint8_t		*page;		/* locked, not dumped: the value */
	size_t		 pagelen, len;
	struct staged	*next;
};
static struct staged *staged;

int
secrets_stage(const char *name, const char *value, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct staged *st;

	if (len == 0 || len > SECRET_MAX_LEN || strlen(name) >= sizeof(
	    st->name) || secrets_staged(name))
		return -1;
	st = xcalloc(1, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%s", name);
	st->pagelen = (len / pg + 1) * pg;
	st->page = arena_new(st->pagelen);
	memcpy(st->page, value, len);
	st->len = len;
	st->next = staged;
	staged = st;
	return 0;
}

static const struct staged *
staged_by_name(const char *name)
{
	const struct staged *st;

	for (st = staged; st != NULL; st = st->next)
		if (strcmp(st->name, name) == 0)
			return st;
	return NULL;
}

bool
secrets_staged(const char *name)
{
	return staged_by_name(name) != NULL;
}

void
secrets_unstage(void)
{
	struct staged *st;

	while ((st = staged) != NULL) {
		staged = st->next;
		explicit_bzero(st->page, st->pagelen);
		munlock(st->page, st->pagelen);
		munmap(st->page, st->pagelen);
		free(st);
	}
}

/* Each value staged for its name, else the old generation's. */
static int
from_rebuild(void *arg, const struct moat_secret *s, char *buf, size_t *len,
    char *err, size_t errlen)
{
	const struct secrets *old = arg;
	const struct staged *st;
	size_t i;

	if ((st = staged_by_name(s->name)) != NULL) {
		memcpy(buf, st->page, st->len);
		*len = st->len;
		return 0;
	}
	for (i = 0; i < old->n; i++)
		if (strcmp(old->v[i].cfg->name, s->name) == 0) {
			memcpy(buf, old->v[i].value, old->v[i].len);
			*len = old->v[i].len;
			return 0;
		}
	snprintf(err, errlen, "secret \"%s\": no value was sent for it",
	    s->name);
	return -1;
}

struct secrets *
secrets_rebuild(const struct secrets *old, const struct moat_config *cfg,
    char *err, size_t errlen)
{
	struct secrets ss;

	if (secrets_load_from(&ss, cfg, from_rebuild, (void *)old, err,
	    errlen) == -1)
		return NULL;
	return secrets_adopt(&ss);
}

void
secrets_retire(struct secrets *g, struct moat_config *cfg)
{
	if (g->retired != NULL)
		config_free(g->retired);
	g->retired = cfg;
}

struct secrets *
secrets_hold(struct secrets *g)
{
	g->refs++;
	return g;
}

void
secrets_release(struct secrets *g)
{
	struct moat_config *retired;
	struct secrets **pp;

	if (g == NULL || --g->refs > 0)
		return;
	for (pp = &generations; *pp != NULL; pp = &(*pp)->next)
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	retired = g->retired;
	secrets_wipe(g);
	free(g);
	if (retired != NULL)
		config_free(retired);
}

void
secrets_wipe_all(void)
{
	struct secrets *g;

	while ((g = generations) != NULL) {
		generations = g->next;
		if (g->retired != NULL)
			config_free(g->retired);
		secrets_wipe(g);
		free(g);
	}
	secrets_unstage();
}

const struct secret *
secrets_by_name(const struct secrets *ss, const char *name)
{
	size_t i;

	for (i = 0; i < ss->n; i++)
		if (strcmp(ss->v[i].cfg->name, name) == 0)
			return &ss->v[i];
	return NULL;
}

/* --- substitution ----------------------------------------------------- */

static const struct subst *
match_at(const char *p, size_t left, const struct subst *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i].fromlen > 0 && s[i].fromlen <= left &&
		    memcmp(p, s[i].from, s[i].fromlen) == 0)
			return &s[i];
	return NULL;
}

/* One pass over src: at each position the first subst whose from starts
 * there is replaced and the walk goes on after it, so what a replacement
 * wrote is never looked at again.  hits (n entries, may be NULL) counts
 * each subst's replacements. */
static ssize_t
subst_run(const char *src, size_t len, const struct subst *s, size_t n,
    char *dst, size_t cap, int *count, int *hits)
{
	const struct subst *m;
	size_t i = 0, o = 0;
	int c = 0;

	if (hits != NULL)
		memset(hits, 0, n * sizeof(*hits));
	while (i < len) {
		if ((m = match_at(src + i, len - i, s, n)) != NULL) {
			if (cap - o < m->tolen)
				return -1;
			memcpy(dst + o, m->to, m->tolen);
			o += m->tolen;
			i += m->fromlen;
			c++;
			if (hits != NULL)
				hits[m - s]++;
			continue;
		}
		if (o == cap)
			return -1;
		dst[o++] = src[i++];
	}
	if (count != NULL)
		*count = c;
	return (ssize_t)o;
}

ssize_t
subst_all(const char *src, size_t len, const struct subst *s, size_t n,
    char *dst, size_t cap, int *count)
{
	return subst_run(src, len, s, n, dst, cap, count, NULL);
}

static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
b64_encode(const uint8_t *in, size_t len, char *out)
{
	size_t i, o = 0;
	uint32_t v;

	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = b64chars[(v >> 6) & 63];
		out[o++] = b64chars[v & 63];
	}
	if (i < len) {
		v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = b64chars[v >> 18];
		out[o++] = b64chars[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

ssize_t
b64_decode(const char *in, size_t len, uint8_t *out)
{
	size_t i, o = 0, pad = 0;
	uint32_t v = 0;
	const char *p;

	if (len % 4 != 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (in[i] == '=') {
			if (i < len - 2 || (i == len - 2 && in[len - 1] != '='))
				return -1;
			pad++;
			v <<= 6;
		} else if (in[i] != '\0' &&
		    (p = strchr(b64chars, in[i])) != NULL)
			v = v << 6 | (uint32_t)(p - b64chars);
		else
			return -1;
		if (i % 4 == 3) {
			out[o++] = (uint8_t)(v >> 16);
			out[o++] = (uint8_t)(v >> 8);
			out[o++] = (uint8_t)v;
			v = 0;
		}
	}
	return (ssize_t)(o - pad);
}

/* "Basic <b64>": substitute inside the decoded credentials.  Returns the
 * new length, 0 if the value is not Basic or nothing matched inside, -1
 * if it does not fit. */
static ssize_t
subst_basic(const char *src, size_t len, const struct subst *s, size_t n,
    char *dst, size_t cap, int *count, int *hits)
{
	uint8_t dec[3 * 1024], rep[3 * 1024 + 4096];
	ssize_t dl, rl;
	size_t el;

	if (len <= 6 || strncasecmp(src, "Basic ", 6) != 0 ||
	    len - 6 > 4 * 1024)
		return 0;
	if ((dl = b64_decode(src + 6, len - 6, dec)) < 0)
		return 0;
	rl = subst_run((char *)dec, (size_t)dl, s, n, (char *)rep,
	    sizeof(rep), count, hits);
	explicit_bzero(dec, sizeof(dec));
	if (rl < 0 || *count == 0) {
		explicit_bzero(rep, sizeof(rep));
		return rl < 0 ? -1 : 0;
	}
	el = 4 * (((size_t)rl + 2) / 3);
	if (6 + el + 1 > cap) {
		explicit_bzero(rep, sizeof(rep));
		return -1;
	}
	memcpy(dst, src, 6);
	b64_encode(rep, (size_t)rl, dst + 6);
	explicit_bzero(rep, sizeof(rep));
	return (ssize_t)(6 + el);
}

ssize_t
subst_header_hits(const char *src, size_t len, const struct subst *s,
    size_t n, char *dst, size_t cap, int *count, int *hits)
{
	ssize_t r;
	int c = 0;

	if ((r = subst_basic(src, len, s, n, dst, cap, &c, hits)) != 0) {
		if (count != NULL)
			*count = c;
		return r;
	}
	return subst_run(src, len, s, n, dst, cap, count, hits);
}

ssize_t
subst_header(const char *src, size_t len, const struct subst *s, size_t n,
    char *dst, size_t cap, int *count)
{
	return subst_header_hits(src, len, s, n, dst, cap, count, NULL);
}

/* --- what responses are scrubbed of ------------------------------------- */

static bool
holds(const struct moat_sandbox *sb, const char *name)
{
	size_t i;

	for (i = 0; i < sb->secrets.n; i++)
		if (strcmp(sb->secrets.v[i], name) == 0)
			return true;
	return false;
}

void
scrub_init(struct scrub *sc, const struct secrets *ss,
    const struct moat_sandbox *sb)
{
	size_t i;

	sc->n = 0;
	sc->nextra = 0;
	sc->s = xcalloc(ss->n + SCRUB_MAX_EXTRA + 1, sizeof(*sc->s));
	for (i = 0; i < ss->n; i++)
		if (sb == NULL || holds(sb, ss->v[i].cfg->name))
			sc->s[sc->n++] = ss->redact[i];
}

void
scrub_free(struct scrub *sc)
{
	size_t i;

	for (i = 0; i < sc->nextra; i++) {
		explicit_bzero((char *)sc->s[i].from, sc->s[i].fromlen);
		free((char *)sc->s[i].from);
		free((char *)sc->s[i].to);
	}
	free(sc->s);
	memset(sc, 0, sizeof(*sc));
}

static char *
memdup0(const char *p, size_t len)
{
	char *d = xmalloc(len + 1);

	memcpy(d, p, len);
	d[len] = '\0';
	return d;
}

int
scrub_add_basic(struct scrub *sc, const char *sent, size_t sentlen,
    const char *orig, size_t origlen)
{
	size_t i;

	if (sentlen <= 6 || origlen <= 6 || strncasecmp(sent, "Basic ", 6) ||
	    strncasecmp(orig, "Basic ", 6))
		return 0;
	sent += 6, sentlen -= 6, orig += 6, origlen -= 6;
	for (i = 0; i < sc->nextra; i++)
		if (sc->s[i].fromlen == sentlen &&
		    memcmp(sc->s[i].from, sent, sentlen) == 0)
			return 0;
	if (sc->nextra >= SCRUB_MAX_EXTRA)
		return -1;
	memmove(sc->s + 1, sc->s, sc->n * sizeof(*sc->s));
	sc->s[0] = (struct subst){ memdup0(sent, sentlen), sentlen,
	    memdup0(orig, origlen), origlen };
	sc->n++;
	sc->nextra++;
	return 0;
}

/* --- streaming redaction ---------------------------------------------- */

void
redactor_init(struct redactor *r, const struct subst *s, size_t n)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->s = s;
	r->n = n;
	for (i = 0; i < n; i++) {
		if (s[i].fromlen > r->maxfrom)
			r->maxfrom = s[i].fromlen;
		if (s[i].fromlen > 0)
			r->first[(uint8_t)s[i].from[0] / 8] |=
			    (uint8_t)(1 << ((uint8_t)s[i].from[0] % 8));
	}
	for (i = 0; i < 256; i++) {
		if ((r->first[i / 8] & (1 << (i % 8))) == 0)
			continue;
		if (r->nfew == REDACT_FEW) {
			r->nfew = SIZE_MAX;
			break;
		}
		r->few[r->nfew++] = (uint8_t)i;
	}
	if (r->nfew == SIZE_MAX)
		r->nfew = 0;
	r->hold = xmalloc(r->maxfrom + 1);
}

/* perf: a keep-alive connection starts a new stream for every request
 * and every response; its set of values changes only when a new form
 * of a credential was sent, which adds to the set (scrub_add_basic: the
 * array is allocated once, so the same array and count is the same
 * set).  Otherwise the tables stay and only what was held back from the
 * last stream, which may be the start of a secret, is wiped. */
void
redactor_reset(struct redactor *r, const struct subst *s, size_t n)
{
	if (r->hold == NULL || r->s != s || r->n != n) {
		redactor_free(r);
		redactor_init(r, s, n);
		return;
	}
	explicit_bzero(r->hold, r->maxfrom + 1);
	r->holdlen = 0;
}

void
redactor_free(struct redactor *r)
{
	if (r->hold != NULL) {
		explicit_bzero(r->hold, r->maxfrom + 1);
		free(r->hold);
	}
	memset(r, 0, sizeof(*r));
}

/* The most output bytes one input byte can become. */
static size_t
growth(const struct redactor *r)
{
	size_t i, g = 1;

	for (i = 0; i < r->n; i++)
		if (r->s[i].fromlen > 0 &&
		    (r->s[i].tolen + r->s[i].fromlen - 1) / r->s[i].fromlen > g)
			g = (r->s[i].tolen + r->s[i].fromlen - 1) /
			    r->s[i].fromlen;
	return g;
}

size_t
redact_outmax(const struct redactor *r, size_t len)
{
	return (len + r->maxfrom) * growth(r) + 1;
}

size_t
redact_inmax(const struct redactor *r, size_t room)
{
	size_t g = growth(r), len;

	if (room < 1 || (room - 1) / g <= r->maxfrom)
		return 0;
	len = (room - 1) / g - r->maxfrom;
	return len < REDACT_CHUNK ? len : REDACT_CHUNK;
}

/* Could buf[0..left) be the start of some from? */
static bool
prefix_of_any(const uint8_t *p, size_t left, const struct subst *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i].fromlen > left && memcmp(p, s[i].from, left) == 0)
			return true;
	return false;
}

/* The next i' >= i where work[i'] may start a from (wl if none).  With
 * few first bytes, next[] caches each one's next position so that the
 * memchr()s stay linear in the input. */
static size_t
next_candidate(const struct redactor *r, const uint8_t *work, size_t i,
    size_t wl, size_t next[REDACT_FEW])
{
	const uint8_t *q;
	size_t k, best = wl;

	if (r->nfew == 0) {
		while (i < wl &&
		    (r->first[work[i] / 8] & (1 << (work[i] % 8))) == 0)
			i++;
		return i;
	}
	for (k = 0; k < r->nfew; k++) {
		if (next[k] == SIZE_MAX || next[k] < i) {
			q = memchr(work + i, r->few[k], wl - i);
			next[k] = q != NULL ? (size_t)(q - work) : wl;
		}
		if (next[k] < best)
			best = next[k];
	}
	return best;
}

size_t
redact_feed(struct redactor *r, const uint8_t *in, size_t len, uint8_t *out,
    bool final)
{
	uint8_t work[REDACT_CHUNK + SECRET_MAX_LEN + 1];
	const struct subst *m;
	size_t wl, i = 0, o = 0, j, next[REDACT_FEW];
	const uint8_t *w;
	bool held;

	if (r->n == 0 || r->maxfrom == 0) {
		memcpy(out, in, len);
		return len;
	}
	held = r->holdlen > 0;
	if (held) {	/* perf: else match in place, no copy to wipe */
		memcpy(work, r->hold, r->holdlen);
		memcpy(work + r->holdlen, in, len);
		w = work;
	} else
		w = in;
	wl = r->holdlen + len;
	r->holdlen = 0;
	for (j = 0; j < REDACT_FEW; j++)
		next[j] = SIZE_MAX;	/* not looked for yet */
	while (i < wl) {
		/* copy the run that cannot start a value in one go */
		if ((j = next_candidate(r, w, i, wl, next)) > i) {
			memcpy(out + o, w + i, j - i);
			o += j - i;
			i = j;
			continue;
		}
		if ((m = match_at((char *)w + i, wl - i, r->s, r->n))) {
			memcpy(out + o, m->to, m->tolen);
			o += m->tolen;
			i += m->fromlen;
		} else if (!final && prefix_of_any(w + i, wl - i, r->s,
		    r->n)) {
			r->holdlen = wl - i;
			memcpy(r->hold, w + i, r->holdlen);
			break;
		} else
			out[o++] = w[i++];
	}
	if (held)
		explicit_bzero(work, wl);
	return o;
}

/* --- placeholder watching ---------------------------------------------- */

static int
hexv(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Value of n hex digits at p, or -1. */
static long
hexn(const uint8_t *p, size_t n)
{
	long v = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (hexv(p[i]) < 0)
			return -1;
		v = v * 16 + hexv(p[i]);
	}
	return v;
}

size_t
ph_normalize(const uint8_t *in, size_t len, uint8_t *out)
{
	size_t i = 0, o = 0;
	long v;

	while (i < len) {
		if (in[i] == '%' && i + 2 < len && (v = hexn(in + i + 1, 2)) >= 0) {
			out[o++] = (uint8_t)v;
			i += 3;
		} else if (in[i] == '\\' && i + 5 < len && in[i + 1] == 'u' &&
		    (v = hexn(in + i + 2, 4)) >= 0 && v < 0x80) {
			out[o++] = (uint8_t)v;
			i += 6;
		} else if (in[i] == '\\' && i + 3 < len && in[i + 1] == 'x' &&
		    (v = hexn(in + i + 2, 2)) >= 0) {
			out[o++] = (uint8_t)v;
			i += 4;
		} else if (in[i] == '\\' && i + 1 < len) {
			out[o++] = in[i + 1];
			i += 2;
		} else
			out[o++] = in[i++];
	}
	return o;
}

static int
find_raw(const uint8_t *buf, size_t len, const struct subst *nd, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (nd[i].fromlen > 0 &&
		    memmem(buf, len, nd[i].from, nd[i].fromlen) != NULL)
			return (int)i;
	return -1;
}

int
ph_find(const uint8_t *buf, size_t len, const struct subst *nd, size_t n)
{
	uint8_t *norm;
	int r;

	if ((r = find_raw(buf, len, nd, n)) >= 0 || len == 0)
		return r;
	norm = xmalloc(len);
	r = find_raw(norm, ph_normalize(buf, len, norm), nd, n);
	free(norm);
	return r;
}

void
phwatch_init(struct phwatch *w, const struct subst *nd, size_t n)
{
	size_t i, max = 0;

	memset(w, 0, sizeof(*w));
	w->needles = nd;
	w->n = n;
	for (i = 0; i < n; i++)
		if (nd[i].fromlen > max)
			max = nd[i].fromlen;
	w->tailcap = max * 6;	/* "\u0041" is six bytes for one */
	w->tail = xmalloc(w->tailcap + 1);
}

void
phwatch_free(struct phwatch *w)
{
	free(w->tail);
	memset(w, 0, sizeof(*w));
}

int
phwatch_feed(struct phwatch *w, const uint8_t *in, size_t len)
{
	uint8_t *buf;
	size_t bl, keep;
	int r;

	if (w->n == 0 || len == 0)
		return -1;
	bl = w->taillen + len;
	buf = xmalloc(bl);
	memcpy(buf, w->tail, w->taillen);
	memcpy(buf + w->taillen, in, len);
	r = ph_find(buf, bl, w->needles, w->n);
	keep = bl < w->tailcap ? bl : w->tailcap;
	memcpy(w->tail, buf + bl - keep, keep);
	w->taillen = keep;
	free(buf);
	return r;
}
