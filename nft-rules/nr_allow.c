/*
 * nr_allow.c -- the one privileged path by which a DNS answer opens an
 * allowlist set: gatewayd's parent and dnsd's own parent (when dnsd runs
 * alone) both call nftr_allow_add for every IPC_SET_ADD the resolver
 * sends, so the decision cannot differ between them.
 *
 * In order: the admission (admit_set_add: an allowlist sandbox, public
 * IPv4 only, a capped timeout); a sandbox whose allow list a reload has
 * narrowed and whose resolver has not yet taken the new list gets nothing
 * (frozen); each timeout is raised to what was already promised for the
 * address (promises_plan), so a short answer never cuts a longer one
 * short; then one acked transaction to the kernel, and the promise is
 * recorded only once the kernel took it.
 */
#include <stdio.h>
#include <time.h>

#include "admit.h"
#include "log.h"
#include "nftrules.h"
#include "promise.h"

int
nftr_allow_add(struct nftr_ctx *nft, struct promises *p,
    const struct moat_config *cfg, const char *sandbox,
    const struct moat_addr *addrs, size_t naddr, uint32_t timeout_ms,
    bool frozen, uint64_t now_ms, struct nftr_allow_stats *st)
{
	struct moat_addr ok[NFTR_ALLOW_MAX];
	uint32_t tmo[NFTR_ALLOW_MAX], timeout = timeout_ms;
	static time_t last;	/* a guest must not flood the log */
	int n, rc;

	if (naddr > NFTR_ALLOW_MAX)
		naddr = NFTR_ALLOW_MAX;
	n = admit_set_add(cfg, sandbox, addrs, naddr, ok, &timeout);
	if (n > 0 && frozen)	/* judged by an allow list since narrowed */
		n = -1;
	if (n < 0) {
		st->refused += naddr;
		return -1;
	}
	st->refused += naddr - (size_t)n;
	if (n == 0)
		return 0;
	if (promises_plan(p, sandbox, ok, (size_t)n, timeout, now_ms,
	    tmo) == -1) {
		st->refused += (size_t)n;
		if (time(NULL) - last >= 10) {
			last = time(NULL);
			log_warnx("allowlist %s: too many addresses promised; "
			    "refused", sandbox);
		}
		return -1;
	}
	if (nft == NULL)	/* dnsd --no-nft: decided, nothing to open */
		rc = n;
	else if ((rc = nftr_set_add_each(nft, sandbox, ok, (size_t)n, tmo,
	    true)) == -1)
		log_warnx("allowlist %s: %s", sandbox, nftr_error(nft));
	if (rc > 0) {
		st->added += (uint64_t)rc;
		promises_commit(p, sandbox, ok, (size_t)n, tmo, now_ms);
	}
	return rc;
}
