/*
 * budget.h -- per-secret request budgets: counts per calendar minute and
 * per UTC day, charged all-or-nothing for one request.
 *
 * gatewayd's parent keeps the counters, so they outlive a reload and a
 * proxy restart; a proxy run on its own keeps its own.
 */
#ifndef MOAT_BUDGET_H
#define MOAT_BUDGET_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "ipc.h"

struct budget_ctr {
	char		 name[IPC_NAME_LEN];
	int64_t		 minute, day;		/* window numbers */
	uint64_t	 nminute, nday;		/* requests in them */
};

struct budget_set {
	struct budget_ctr *v;
	size_t		 n;
};

/* Charge one request to every named secret that has a budget in cfg, or
 * to none if any is spent (then ack says which, the window and the
 * seconds until it ends).  Names cfg does not know are not charged.
 * Returns ack->status: 0 charged, 1 spent. */
int	budget_charge(struct budget_set *, const struct moat_config *,
	    const char *const *names, size_t n, time_t now,
	    struct ipc_budget_ack *ack);
/* Requests counted in the current minute and day. */
void	budget_usage(const struct budget_set *, const char *name, time_t now,
	    uint64_t *minute, uint64_t *day);
void	budget_set_free(struct budget_set *);

#endif
