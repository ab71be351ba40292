/*
 * parent/metrics_series.c -- the parent's count of its children's audit events
 * per (child, event, sandbox, secret), for the metrics.  Label values are
 * taken only when they are plain words; the table is a fixed size, and
 * events of series past it are counted together, so nothing a guest or a
 * compromised child sends can grow it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc.h"
#include "log.h"
#include "../metrics/metrics.h"

#define LABEL_MAX	64
#define SLOTS		(METRICS_MAX_SERIES * 2)	/* open addressing */

struct mseries {
	char		 source[16];
	char		 event[32];
	char		 sandbox[IPC_NAME_LEN];
	char		 secret[IPC_NAME_LEN];
	uint64_t	 n;
	bool		 used;
};

struct metrics {
	struct mseries	*slot;		/* SLOTS of them */
	size_t		 n;
	uint64_t	 dropped;	/* events of series past the bound */
};

struct metrics *
metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	m->slot = xcalloc(SLOTS, sizeof(*m->slot));
	return m;
}

void
metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	free(m->slot);
	free(m);
}

size_t
metrics_nseries(const struct metrics *m)
{
	return m->n;
}

static bool
word_ok(const char *v, size_t n)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
	    "UVWXYZ0123456789.:_-";
	size_t i;

	if (n == 0 || n >= LABEL_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (v[i] == '\0' || strchr(ok, v[i]) == NULL)
			return false;
	return true;
}

void
metrics_label(const char *json, size_t len, const char *key, char *out,
    size_t outlen)
{
	char pat[40];
	const char *p, *v, *end = json + len;
	size_t n;

	out[0] = '\0';
	n = (size_t)snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	if ((p = memmem(json, len, pat, n)) == NULL)
		return;
	v = p + n;
	for (p = v; p < end && *p != '"' && *p != '\\'; p++)
		;
	n = (size_t)(p - v);
	if (p >= end || *p != '"' || !word_ok(v, n) || n >= outlen)
		snprintf(out, outlen, "other");
	else
		snprintf(out, outlen, "%.*s", (int)n, v);
}

static uint64_t
fnv(const struct mseries *k)
{
	const char *parts[4] = { k->source, k->event, k->sandbox, k->secret };
	uint64_t h = 1469598103934665603ULL;
	const char *p;
	int i;

	for (i = 0; i < 4; i++) {
		for (p = parts[i]; *p != '\0'; p++)
			h = (h ^ (uint8_t)*p) * 1099511628211ULL;
		h = (h ^ 0xff) * 1099511628211ULL;
	}
	return h;
}

static bool
same(const struct mseries *a, const struct mseries *b)
{
	return strcmp(a->source, b->source) == 0 &&
	    strcmp(a->event, b->event) == 0 &&
	    strcmp(a->sandbox, b->sandbox) == 0 &&
	    strcmp(a->secret, b->secret) == 0;
}

void
metrics_count(struct metrics *m, const char *source, const char *json,
    size_t len)
{
	struct mseries k;
	size_t i;

	memset(&k, 0, sizeof(k));
	snprintf(k.source, sizeof(k.source), "%s", source);
	metrics_label(json, len, "event", k.event, sizeof(k.event));
	metrics_label(json, len, "sandbox", k.sandbox, sizeof(k.sandbox));
	metrics_label(json, len, "secret", k.secret, sizeof(k.secret));
	if (k.event[0] == '\0')
		return;
	for (i = fnv(&k) % SLOTS; m->slot[i].used; i = (i + 1) % SLOTS)
		if (same(&m->slot[i], &k)) {
			m->slot[i].n++;
			return;
		}
	if (m->n >= METRICS_MAX_SERIES) {
		m->dropped++;
		return;
	}
	k.used = true;
	k.n = 1;
	m->slot[i] = k;
	m->n++;
}

void
metrics_series_print(FILE *fp, const struct metrics *m)
{
	const struct mseries *s;
	size_t i;

	fputs("# HELP moat_events_total Audit events of gatewayd's children "
	    "(dnsd, proxy, nflog), by sandbox and secret.\n"
	    "# TYPE moat_events_total counter\n", fp);
	for (i = 0; i < SLOTS; i++) {
		s = &m->slot[i];
		if (s->used)
			fprintf(fp, "moat_events_total{source=\"%s\",event=\"%s\","
			    "sandbox=\"%s\",secret=\"%s\"} %llu\n", s->source,
			    s->event, s->sandbox, s->secret,
			    (unsigned long long)s->n);
	}
	fputs("# HELP moat_events_dropped_total Events not counted per series: "
	    "the table of series is full.\n"
	    "# TYPE moat_events_dropped_total counter\n", fp);
	fprintf(fp, "moat_events_dropped_total %llu\n",
	    (unsigned long long)m->dropped);
}
