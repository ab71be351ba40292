/*
 * policy.h -- which sandbox asks, and may it have this name.
 *
 * A policy is built from the config once (and again on reload) and is then
 * read-only.  Sandboxes are found by source address through a hash table;
 * names are matched in wire format (lower-cased, uncompressed, as ldns
 * produces them) so that a label containing a dot can never be mistaken
 * for two labels.  Each sandbox has two hash sets: exact names and the
 * suffixes of its "*.suffix" patterns.  A lookup hashes the whole name
 * once and then each proper suffix once: its cost depends on the number of
 * labels in the query, never on the length of the allow list.
 */
#ifndef DNSD_POLICY_H
#define DNSD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct nameset;

struct nameset *nameset_new(size_t hint);
void	 nameset_free(struct nameset *);
/* Add a name in wire format (copied).  Duplicates are ignored. */
void	 nameset_add(struct nameset *, const uint8_t *wire, size_t len);
bool	 nameset_has(const struct nameset *, const uint8_t *wire, size_t len);
size_t	 nameset_count(const struct nameset *);

/* Convert a config pattern ("pypi.org", "*.github.test") to lower-case
 * wire format.  Returns the wire length, or 0 if the name is unusable.
 * *wild is set for "*." patterns and the wire then holds the suffix. */
size_t	 pattern_to_wire(const char *pattern, uint8_t *wire, size_t cap,
	    bool *wild);

struct sbpolicy {
	const struct moat_sandbox *sb;	/* points into the config */
	size_t		 index;		/* in cfg->sandboxes */
	enum moat_egress egress;
	struct nameset	*exact;
	struct nameset	*wild;		/* "*.x" stored as "x" */
	bool		 named_ports;	/* some entry has ports of its own */
	bool		 v6;		/* has IPv6: AAAA answers forwarded */
	/* Per-sandbox query rate limit: a token bucket. */
	double		 tokens;
	uint64_t	 last_ms;
	uint64_t	 dropped;	/* over the rate, since last reported */
};

struct policy;

struct policy *policy_new(const struct moat_config *);
/* The sandbox at index changed its allow list (in the configuration the
 * policy points into): its name sets are built again; its rate state
 * stays. */
void	 policy_update(struct policy *, size_t index);
void	 policy_free(struct policy *);
/* The sandbox whose address is addr (IPv4 or IPv4-mapped, or the IPv6
 * address config_sandbox_addr6 gives it), or NULL. */
struct sbpolicy *policy_sandbox(const struct policy *,
	    const struct moat_addr *addr);
size_t	 policy_nsandboxes(const struct policy *);
struct sbpolicy *policy_sandbox_at(const struct policy *, size_t i);

enum verdict {
	V_ALLOW = 0,	/* open, or on the allow list */
	V_DENY_NONE,	/* egress "none" */
	V_DENY_LIST,	/* allowlist, name not on it */
};
/* name: lower-case wire format (ldns_dname2canonical). */
enum verdict policy_check(const struct sbpolicy *, const uint8_t *name,
	    size_t len);
const char *verdict_reason(enum verdict);

/* Token bucket: true if a query may go, false if over the rate. */
bool	 policy_ratelimit(struct sbpolicy *, uint64_t now_ms, double qps,
	    double burst);

#endif
