/*
 * budget.h -- per-secret request budgets: at most requests_per_minute in
 * any 60 seconds and requests_per_day in any 24 hours (sliding windows),
 * charged all-or-nothing for one request.
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

/* Requests counted per second for the minute, per minute for the day: a
 * ring of slots, each the unit it counts and how many fell in it. */
#define BUDGET_SEC_SLOTS	60
#define BUDGET_MIN_SLOTS	1444	/* the minutes a day's window touches */
struct budget_slot {
	int64_t		 at;		/* second or minute since the epoch */
	uint64_t	 n;
};

struct budget_ctr {
	char		 name[IPC_NAME_LEN];
	struct budget_slot *sec;	/* BUDGET_SEC_SLOTS, once a minute
					 * budget is charged */
	struct budget_slot *min;	/* BUDGET_MIN_SLOTS, for a day's */
};

struct budget_set {
	struct budget_ctr *v;
	size_t		 n;
};

/* Charge one request to every named secret that has a budget in cfg, or
 * to none if any is spent (then ack says which, the window and the
 * seconds until enough of its requests have aged out for one more).
 * Names cfg does not know are not charged.  Returns ack->status: 0
 * charged, 1 spent. */
int	budget_charge(struct budget_set *, const struct moat_config *,
	    const char *const *names, size_t n, time_t now,
	    struct ipc_budget_ack *ack);
/* Requests counted in the last 60 seconds and the last 24 hours. */
void	budget_usage(const struct budget_set *, const char *name, time_t now,
	    uint64_t *minute, uint64_t *day);
void	budget_set_free(struct budget_set *);

#endif
