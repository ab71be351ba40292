/*
 * metrics.h -- Prometheus text of what gatewayd knows (parent_metrics.c)
 * and the unprivileged process that serves it (metrics.c).
 */
#ifndef GATEWAYD_METRICS_H
#define GATEWAYD_METRICS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define METRICS_USER	"moat-mon"

/* What a scraper's request head asks for. */
enum mreq { MREQ_MORE, MREQ_METRICS, MREQ_NOT_FOUND, MREQ_BAD };
enum mreq metrics_request(const char *head, size_t len);
void	metrics_main(int listenfd, int ipc, pid_t parent)
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
