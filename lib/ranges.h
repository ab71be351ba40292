/*
 * ranges.h -- the one canonical table of non-public address ranges
 * (IANA's IPv4 and IPv6 special-purpose registries, every block that is
 * not globally reachable) and fast lookup in it.
 *
 * Addresses are handled as struct moat_addr: family plus 16 bytes in
 * network order (IPv4 uses the first 4).  A rangeset is the private table
 * minus treat_as_public, kept as sorted, disjoint, inclusive intervals per
 * family, so lookup is a binary search and nft-rules can emit the same
 * intervals into an nftables interval set.
 */
#ifndef MOAT_RANGES_H
#define MOAT_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"

struct moat_prefix {
	struct moat_addr addr;	/* host bits are zero */
	int	plen;
};

struct moat_range {		/* one row of the canonical table */
	const char	*cidr;
	const char	*what;
};

struct moat_interval {		/* inclusive [lo, hi], same family */
	struct moat_addr lo, hi;
};

struct moat_rangeset;

/* The canonical table (IPv4 rows then IPv6 rows). */
const struct moat_range	*ranges_private_table(size_t *n);

/* Parse "a.b.c.d", "x::y", "a.b.c.d/n", "x::/n".  Without /n the prefix is
 * a host route.  Host bits set are an error (returns -1). 0 on success. */
int	 prefix_parse(const char *, struct moat_prefix *);
/* Format a prefix into buf; returns buf. */
char	*prefix_fmt(const struct moat_prefix *, char *buf, size_t len);
bool	 prefix_contains(const struct moat_prefix *, const struct moat_addr *);
bool	 prefix_overlaps(const struct moat_prefix *, const struct moat_prefix *);
int	 addr_cmp(const struct moat_addr *, const struct moat_addr *);

/* Private table minus the given public prefixes. */
struct moat_rangeset *rangeset_new_private(const struct moat_prefix *pub,
	    size_t npub);
/* The same plus the deny prefixes, which public prefixes never remove
 * (the config adds the sandbox network, whatever it is). */
struct moat_rangeset *rangeset_new_deny(const struct moat_prefix *pub,
	    size_t npub, const struct moat_prefix *deny, size_t ndeny);
void	 rangeset_free(struct moat_rangeset *);
/* True if addr is in the set.  No unmapping is done: ::ffff:a.b.c.d is
 * private because ::ffff:0:0/96 is.  Callers that want to judge a mapped
 * address by its IPv4 use addr_unmap() first. */
bool	 rangeset_contains(const struct moat_rangeset *,
	    const struct moat_addr *);
/* The intervals of one family, sorted and disjoint. */
const struct moat_interval *rangeset_intervals(const struct moat_rangeset *,
	    int family, size_t *n);

#endif
