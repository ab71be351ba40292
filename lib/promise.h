/*
 * promise.h -- what the privileged parent (gatewayd's, or dnsd's when it
 * runs alone) has promised each sandbox's allowlist sets: per (sandbox,
 * address (IPv4 or IPv6), svc), the latest moment an element it added lives until; svc
 * is 0 for the address alone (set allow_<sandbox>) or ADMIT_SVC(proto,
 * port) for the address with a port (set allowp_<sandbox>; the IPv6
 * sets are allow6_ and allowp6_), and svc[]
 * NULL below means 0 for each.
 *
 * An addition resets an existing element's timeout, so a short-TTL answer
 * could cut short an element that an earlier answer was promised for
 * longer (a dnsd that restarted has forgotten that promise).  The parent
 * therefore never sends a timeout that ends before what it has already
 * promised for the address: it raises it to the promise.  Memory is
 * bounded (PROMISE_MAX entries, PROMISE_PER_SANDBOX per sandbox); expired
 * entries are pruned as they are met; a sandbox's entries go when a
 * reload deletes its set.  When the table is full the addition is
 * refused (the answer gets SERVFAIL): a promise that could not be
 * recorded could not be kept.
 */
#ifndef MOAT_PROMISE_H
#define MOAT_PROMISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ranges.h"

#define PROMISE_MAX		(1u << 18)
#define PROMISE_PER_SANDBOX	16384u

struct promises;

struct promises *promises_new(size_t max, size_t per_sandbox);
void	promises_free(struct promises *);
/*
 * The timeouts to send for n addresses (IPv4 or IPv6; others are left
 * at timeout_ms) asked for timeout_ms at now_ms: each raised to what is
 * still promised for it.  -1 if an address has no entry and none can be
 * made (table full); nothing is recorded then.
 */
int	promises_plan(struct promises *, const char *sandbox,
	    const struct moat_addr *a, const uint32_t *svc, size_t n,
	    uint32_t timeout_ms, uint64_t now_ms, uint32_t *out_ms);
/* The kernel took them: record now_ms + out_ms[i] (now_ms measured
 * before sending, so the record never exceeds the real expiry). */
void	promises_commit(struct promises *, const char *sandbox,
	    const struct moat_addr *a, const uint32_t *svc, size_t n,
	    const uint32_t *out_ms, uint64_t now_ms);
/* The ms still promised for a alone (svc 0), 0 if none. */
uint64_t promises_left(struct promises *, const char *sandbox,
	    const struct moat_addr *a, uint64_t now_ms);
/* A reload from old to new: forget the sandboxes whose sets it deleted
 * (admit_set_kept). */
void	promises_reload(struct promises *, const struct moat_config *old,
	    const struct moat_config *new);
void	promises_forget(struct promises *, const char *sandbox);
size_t	promises_count(const struct promises *);

#endif
