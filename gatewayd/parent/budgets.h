/*
 * budgets.h -- secrets' request budgets (budget.c).
 */
#ifndef GW_PARENT_BUDGETS_H
#define GW_PARENT_BUDGETS_H

#include "gw.h"

/* parent.c */
/* parent/budget.c: answer the proxy's IPC_BUDGET_REQ on fd. */
void	gw_budget_answer(struct gw *, int fd, uint32_t id,
	    const struct ipc_budget_req *);
time_t	gw_budget_now(const struct gw *);

struct gw_budgets {
	struct budget_set budgets;	/* per secret, kept across reloads */
};
static inline struct gw_budgets *budgets_of(const struct gw *gw)
{ return gw_mod(gw, MOD_BUDGETS); }

#endif
