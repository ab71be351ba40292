/*
 * cache.h -- filtered upstream answers by (name, type), shared by every
 * sandbox.  Only answers that already went through da_parse's filter are
 * stored, so the cache never holds a private address; the policy check
 * and the set update happen per query, for the sandbox that asks, on hits
 * as on misses.  Memory is capped in bytes: the least recently used entry
 * goes first.  Expired entries are dropped when met.
 */
#ifndef DNSD_CACHE_H
#define DNSD_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "msg.h"

/* The last answer rendered from an entry, for the next guest that asks
 * the same way in the same second: then only the ID differs.  Owned by
 * the cache. */
struct memo {
	uint8_t		*wire;
	size_t		 len;
	uint64_t	 key;		/* age, size, flags of the rendering */
	size_t		 qlen;
	uint8_t		 q[LDNS_MAX_DOMAINLEN + 1];	/* name as asked */
};

struct centry {
	struct answer	 a;
	uint64_t	 stored;	/* monotonic seconds */
	uint64_t	 expires;
	struct memo	 memo;
};

struct cache_stats {
	uint64_t	 hits, misses, inserts, evictions, expired;
	size_t		 entries, bytes, maxbytes;
};

struct cache;

struct cache *cache_new(size_t maxbytes);
void	 cache_free(struct cache *);
/* The live entry for (name, qtype) or NULL.  Valid until the next put. */
struct centry *cache_get(struct cache *, const uint8_t *name,
	    size_t len, uint16_t qtype, uint64_t now);
/* Store a (moved in: *a is cleared) if its ttl is not 0. */
void	 cache_put(struct cache *, const uint8_t *name, size_t len,
	    uint16_t qtype, struct answer *a, uint64_t now);
void	 cache_stats(const struct cache *, struct cache_stats *);

#endif
