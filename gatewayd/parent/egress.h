/*
 * egress.h -- egress budgets (egress.c).
 */
#ifndef GW_PARENT_EGRESS_H
#define GW_PARENT_EGRESS_H

#include "gw.h"

/* A sandbox's egress budget in the current window. */
struct gw_egress {
	char		 name[IPC_NAME_LEN];
	char		 owner[IPC_NAME_LEN];	/* "" without one */
	struct moat_addr addr;
	uint64_t	 budget;	/* bytes a window, 0: none */
	uint64_t	 spent;		/* bytes sent this window */
	uint64_t	 last;		/* acct_out's counter at the last read */
	bool		 audited;	/* "egress-budget-spent" this window */
	bool		 in_set;	/* in the kernel's budget_spent */
	bool		 configured;	/* else kept for its total only */
	uint64_t	 replicated;	/* spent as the other box last heard it */
};

/* parent/egress.c: egress budgets.  Around every policy change (cur the
 * configuration in force, cfg the one applied), once a second, and when
 * gatewayd stops. */
void	egress_before_apply(struct gw *, const struct moat_config *cur);
void	egress_after_apply(struct gw *, const struct moat_config *cfg);
/* The other box's total for a sandbox (replication): the larger counts. */
void	egress_merge(struct gw *, const struct ipc_ha_spent *);
void	egress_snapshot(struct gw *);
void	egress_stop(struct gw *);
/* Sandbox i of gw->cfg's budget, or NULL if it has none to show. */
const struct gw_egress *egress_of(const struct gw *, size_t i);

struct gw_egress_state {
	struct gw_egress *egress;
	size_t		 negress;
	int64_t		 egress_window;	/* index of the current one */
	uint64_t	 egress_next_ms;	/* next read, gw_mono_ms() */
	time_t		 egress_saved;
	bool		 egress_loaded, egress_dirty, egress_resync;
	bool		 egress_policy;	/* the policy has budget_spent */
};
static inline struct gw_egress_state *egress_state(const struct gw *gw)
{ return gw_mod(gw, MOD_EGRESS); }

#endif
