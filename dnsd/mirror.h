/*
 * mirror.h -- what dnsd has put into each sandbox's allowlist set, and
 * until when.
 *
 * In allowlist mode every answer must reach the guest only once its
 * addresses are in the sandbox's set for at least the TTL the guest is
 * told.  The privileged side confirms each addition; the mirror remembers
 * each confirmed (sandbox, address) with the earliest moment its element
 * can expire, so a cache hit whose addresses are still covered needs no
 * round trip.  It only ever errs towards asking again: entries are
 * evicted, never invented, and a reload forgets them all.
 */
#ifndef MOAT_DNSD_MIRROR_H
#define MOAT_DNSD_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ranges.h"

struct mirror;

struct mirror	*mirror_new(size_t slots);	/* rounded up to 2^n */
void		 mirror_free(struct mirror *);
/*
 * An addition of a to sandbox's set went out as request id, for its
 * element to live until planned_ms: until its confirmation, a covers
 * nothing (re-adding replaces an element's timeout).
 */
void		 mirror_sent(struct mirror *, const char *sandbox,
		    const struct moat_addr *a, uint32_t id, uint64_t planned_ms);
/* Request id was confirmed: if it is still the last one sent for a, its
 * element lives at least until expires_ms. */
void		 mirror_acked(struct mirror *, const char *sandbox,
		    const struct moat_addr *a, uint32_t id, uint64_t expires_ms);
/* Does every one of the n addresses live at least until until_ms? */
bool		 mirror_covers(const struct mirror *, const char *sandbox,
		    const struct moat_addr *a, size_t n, uint64_t until_ms);
/*
 * The request in flight that adds every one of the n addresses (the last
 * one sent for each) and makes them live at least until until_ms, or 0:
 * an answer that needs no more can wait for its confirmation instead of
 * sending one more addition.
 */
uint32_t	 mirror_inflight(const struct mirror *, const char *sandbox,
		    const struct moat_addr *a, size_t n, uint64_t until_ms);
/*
 * The latest moment any addition of the n addresses was planned to last
 * (sent or confirmed): answers rely on their elements until then, so a
 * later addition, which resets an element's timeout, must not end sooner.
 * 0: none known.
 */
uint64_t	 mirror_promised(const struct mirror *, const char *sandbox,
		    const struct moat_addr *a, size_t n);
/* Forget what the sets hold (a reload or a flush may have emptied them);
 * promises are kept. */
void		 mirror_clear(struct mirror *);
/*
 * A reload, sandbox by sandbox: judge(sandbox, arg) says what became of
 * its set.  MIRROR_KEEP: nothing; MIRROR_RECHECK: the set is kept but
 * its next answers must go through the privileged side again (as
 * mirror_clear, for that sandbox); MIRROR_GONE: the set was deleted, so
 * its entries and promises go.  Returns the entries touched.
 */
enum mirror_fate { MIRROR_KEEP = 0, MIRROR_RECHECK, MIRROR_GONE };
size_t		 mirror_forget(struct mirror *, enum mirror_fate (*judge)(
		    const char *sandbox, void *arg), void *arg);

#endif
