/*
 * policy.h -- the policy in the kernel, allowlist additions, the flows a change
 * cuts (policy.c).
 */
#ifndef GW_PARENT_POLICY_H
#define GW_PARENT_POLICY_H

#include "gw.h"

/* --- policy (parent/policy.c) --- */

void	policy_refusals(const struct moat_config *);
bool	policy_refusals_state(const struct moat_config *, char *, size_t);
int	policy_apply(struct gw *, const struct moat_config *, char *err,
	    size_t errlen);
/* A set addition dnsd judged by an allow list older than the sandbox's
 * last narrowing is refused; one judged by the new list (its gen is
 * later) is not, so the sandbox's other names never stop resolving.
 * freeze at the narrowing, before the new list is sent (it marks the
 * last gen sent); thaw once dnsd has acknowledged the newest one, or a
 * new dnsd starts (gens start again from 0); frozen per set-add. */
void	policy_dns_freeze(struct gw *, const char *sandbox);
void	policy_dns_thaw(struct gw *);
bool	policy_dns_frozen(const struct gw *, const char *sandbox,
	    uint32_t gen);
/* Take over what the kernel's allowlist sets hold as promised (start). */
void	policy_promises_seed(struct gw *);
/* Replace moat's tables with the policy in force, whole (not a delta
 * from what gatewayd believes the kernel holds): the repair of drift. */
int	policy_reapply(struct gw *, char *err, size_t errlen);
/* Its allow list lost a name: empty its set, and refuse dnsd's additions
 * judged by the list before. */
void	policy_flush_sandbox(struct gw *, const char *sandbox);
int	policy_flush_peer(struct gw *, const char *sandbox, const char **why);
/* Empty the allowlist sets of sandboxes whose allow list lost a name. */
void	policy_flush_narrowed(struct gw *, const struct moat_config *old,
	    const struct moat_config *new);
/* Delete conntrack entries of sandboxes whose egress narrowed or that
 * were removed between old and new.  Returns entries deleted or -1. */
int	policy_cut_flows(const struct moat_config *old,
	    const struct moat_config *new);
/* The same, after grants narrowed the lists of these sandboxes of cfg in
 * place (an expiry, an unallow). */
int	policy_cut_narrowed(const struct moat_config *cfg,
	    const char *const *sandboxes, size_t n);
/* Each sandbox's live flows, proxied and direct, both families, from
 * the kernel's conntrack events; -1 when they are not known. */
int	policy_live_flows(const struct moat_config *, uint32_t *counts);
int	policy_counters(struct gw *, bool json, char **out);	/* malloc'ed text */
/* dnsd's IPC_SET_ADD, decided by nftr_allow_add, answered on p->ipc. */
/* Admit and add a set addition (dnsd's, or the other box's): what
 * nftr_allow_add returns. */
int	policy_set_add(struct gw *, const struct ipc_set_add *);
int	policy_set_add_peer(struct gw *, const struct ipc_set_add *);
void	policy_set_add_request(struct gw *, struct gw_proc *, uint32_t id,
	    const struct ipc_set_add *);
typedef void policy_counter_fn(void *arg, const char *family, const char *name,
    const char *what, uint64_t packets);
int	policy_counters_each(struct gw *, policy_counter_fn *, void *arg);

struct gw_policy {
	uint64_t	 set_adds, set_refused;
	struct promises	*promises;	/* lib/promise.h */
	struct gw_dns_frozen {		/* narrowed at gen, sorted by */
		char		*sandbox;	/* name, until dnsd acks */
		uint32_t	 gen;		/* the newest gen */
	}		*dns_frozen;
	size_t		 ndns_frozen;
	uint64_t	 ctflows_next;	/* next drain of conntrack events */
	bool		 quiet;		/* a commit from the other box:
					   flushes not sent back */
};
static inline struct gw_policy *policy_of(const struct gw *gw)
{ return gw_mod(gw, MOD_POLICY); }

#endif
