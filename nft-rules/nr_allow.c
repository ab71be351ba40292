/*
 * nr_allow.c -- the one privileged path by which a DNS answer opens an
 * allowlist set: gatewayd's parent and dnsd's own parent (when dnsd runs
 * alone) both call nftr_allow_add for every IPC_SET_ADD the resolver
 * sends, so the decision cannot differ between them.
 *
 * In order: the admission (admit_set_add: an allowlist sandbox, public
 * IPv4 only, a capped timeout; admit_set_ports: only ports an entry of
 * the sandbox names, for a name with ports of its own); an addition the
 * resolver judged by an allow list older than the sandbox's last
 * narrowing gets nothing (frozen: the caller compares the generations);
 * each timeout is raised to what was already promised for the address
 * (promises_plan), so a short answer never cuts a longer one
 * short; then one acked transaction to the kernel (each address alone
 * and/or with each port: admit_elems), and the promise is recorded only
 * once the kernel took it.  The status is the number of elements added.
 */
#include <stdio.h>
#include <time.h>

#include "admit.h"
#include "log.h"
#include "nftrules.h"
#include "promise.h"

/* Each element's address and svc, as promises_plan takes them. */
static void
elems_split(const struct admit_elem *e, size_t n, struct moat_addr *a,
    uint32_t *svc)
{
	size_t i;

	for (i = 0; i < n; i++) {
		a[i] = e[i].addr;
		svc[i] = e[i].svc;
	}
}

int
nftr_allow_add(struct nftr_ctx *nft, struct promises *p,
    const struct moat_config *cfg, const char *sandbox,
    const struct moat_addr *addrs, size_t naddr, bool plain,
    const struct moat_port *ports, size_t nports, uint32_t timeout_ms,
    bool frozen, uint64_t now_ms, struct nftr_allow_stats *st)
{
	static struct admit_elem el[NFTR_ALLOW_MAX * (1 + MOAT_NAME_PORTS_MAX)];
	static struct moat_addr ea[NFTR_ALLOW_MAX * (1 + MOAT_NAME_PORTS_MAX)];
	static uint32_t svc[NFTR_ALLOW_MAX * (1 + MOAT_NAME_PORTS_MAX)];
	static uint32_t tmo[NFTR_ALLOW_MAX * (1 + MOAT_NAME_PORTS_MAX)];
	struct moat_addr ok[NFTR_ALLOW_MAX];
	uint32_t timeout = timeout_ms;
	static time_t last;	/* a guest must not flood the log */
	size_t ne;
	int n, rc;

	if (naddr > NFTR_ALLOW_MAX)
		naddr = NFTR_ALLOW_MAX;
	if (nports > MOAT_NAME_PORTS_MAX)
		nports = MOAT_NAME_PORTS_MAX;
	n = admit_set_add(cfg, sandbox, addrs, naddr, ok, &timeout);
	if (n >= 0 && !admit_set_ports(cfg, sandbox, plain, ports, nports))
		n = -1;		/* a port no entry of the sandbox names */
	if (n > 0 && frozen)	/* judged by an allow list since narrowed */
		n = -1;
	if (n < 0) {
		st->refused += naddr;
		return -1;
	}
	st->refused += naddr - (size_t)n;
	if (n == 0)
		return 0;
	ne = admit_elems(ok, (size_t)n, plain, ports, nports, el);
	elems_split(el, ne, ea, svc);
	if (promises_plan(p, sandbox, ea, svc, ne, timeout, now_ms,
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
		rc = (int)ne;
	else if ((rc = nftr_set_add_elems(nft, sandbox, el, ne, tmo)) == -1)
		log_warnx("allowlist %s: %s", sandbox, nftr_error(nft));
	if (rc > 0) {
		st->added += (uint64_t)rc;
		promises_commit(p, sandbox, ea, svc, ne, tmo, now_ms);
	}
	return rc;
}
