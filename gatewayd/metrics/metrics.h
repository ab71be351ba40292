/*
 * metrics.h -- Prometheus text of what gatewayd knows (parent/metrics.c)
 * and the unprivileged process that serves it (metrics.c).
 */
#ifndef GATEWAYD_METRICS_H
#define GATEWAYD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "addr.h"
#include "ranges.h"

#define METRICS_USER	"moat-mon"

/* What a scraper's request head asks for: GET (or HEAD) /metrics, a
 * path that is not there (404), a method other than GET and HEAD (405),
 * or no HTTP/1.x head at all (400). */
enum mreq { MREQ_MORE, MREQ_METRICS, MREQ_HEAD, MREQ_NOT_FOUND,
	MREQ_NOT_ALLOWED, MREQ_BAD };
#define METRICS_HEAD_MAX	2048	/* a longer head is refused (400) */
enum mreq metrics_request(const char *head, size_t len);

/* The listener's slots.  METRICS_CLIENTS connections at once, at most
 * METRICS_PER_SOURCE from one address; the last METRICS_RESERVED slots
 * are taken only by the scrapers metrics.allow names one by one (an
 * address, a /32 or a /128).  A source outside a non-empty allow list
 * is refused before it takes a slot. */
#define METRICS_CLIENTS		16
#define METRICS_RESERVED	4
#define METRICS_PER_SOURCE	4
struct mslot {
	bool		 used;
	bool		 reading;	/* its request head is not complete */
	struct moat_addr src;
	uint64_t	 since;		/* ms, when it was accepted */
};
enum madmit { MADMIT_OK, MADMIT_SOURCE, MADMIT_PER_SOURCE, MADMIT_FULL };
/* Where a new connection from src goes: the index of the slot it takes,
 * which may be one in use (the oldest that has not finished its request
 * head; the caller closes that one first), or -1 with *why saying why it
 * is refused. */
int	metrics_admit(const struct mslot *, size_t nslots,
	    const struct moat_prefix *allow, size_t nallow,
	    const struct moat_addr *src, enum madmit *why);
void	metrics_main(int listenfd, int ipc, pid_t parent,
	    const struct moat_prefix *allow, size_t nallow)
	    __attribute__((noreturn));

/* The parent's counters of its children's audit events, bounded. */
#define METRICS_MAX_SERIES	4096
struct metrics;
struct metrics *metrics_new(void);
void	metrics_free(struct metrics *);
/* Count one audit event from source (a child's role name). */
void	metrics_count(struct metrics *, const char *source, const char *json,
	    size_t len);
/* A label value from one "key":"value" of a child's JSON object, if it
 * is a plain word (letters, digits, ".:_-", at most 63); else "other",
 * or "" when the key is absent. */
void	metrics_label(const char *json, size_t len, const char *key,
	    char *out, size_t outlen);
size_t	metrics_nseries(const struct metrics *);
void	metrics_series_print(FILE *, const struct metrics *);

#endif
