/*
 * grant.h -- grants: allow and unallow (grant.c).
 */
#ifndef GW_PARENT_GRANT_H
#define GW_PARENT_GRANT_H

#include "gw.h"

/* --- grants: allow and unallow (parent/grant.c) --- */

/* A grant for a while (--for): kept in memory, laid over the files'
 * configuration at every commit until it expires. */
struct gw_grant {
	char		 sandbox[IPC_NAME_LEN];
	char		*name;		/* normalised, checked */
	uint64_t	 until_ms;	/* gw_mono_ms() */
	time_t		 until;		/* the same, wall clock, for ctl */
	char		 by[33];
	uid_t		 uid;		/* who granted it */
	time_t		 since;		/* when */
	char		 from[IPC_NAME_LEN + 1];	/* "@LIST" it came
					   with, or "" for a name given */
};
#define GW_GRANTS_MAX		4096
#define GW_GRANTS_PER_SANDBOX	64

void	ctl_allow(struct ctl_req *);
void	ctl_unallow(struct ctl_req *);
void	ctl_grants(struct ctl_req *);
/* For the metrics: each sandbox with live grants for a while, how many,
 * and the seconds until the soonest ends; *out malloc'ed, sorted by name. */
struct grant_sum {
	const char	*sandbox;	/* in gw->grants: valid until it changes */
	size_t		 n;
	long		 left;
};
size_t	grants_sums(const struct gw *, struct grant_sum **out);
/* Lay the grants over e, a view of the files' configuration
 * (gw_effective): each allowlist sandbox's list gets its grants' names,
 * in a list of its own. */
void	grants_lay_over(struct gw *, struct moat_config *e);
/* Grants for a while on both boxes of a pair (harepl.h): the other box's
 * grant or ungrant taken, its grants for a sandbox ended before its whole
 * state, and ours for a sandbox sent as part of ours. */
int	grants_peer(struct gw *, const struct ipc_ha_grant *, const char **why);
void	grants_peer_state(struct gw *, const char *sandbox);
void	grants_snapshot(struct gw *, const char *sandbox, bool own_only);
void	grants_free(struct gw *);

struct gw_grants {
	struct gw_grant	*grants;
	size_t		 ngrants;
	bool		 retry;		/* the kernel refused a change of
					   grants: try it again */
};
static inline struct gw_grants *grants_of_gw(const struct gw *gw)
{ return gw_mod(gw, MOD_GRANTS); }

#endif
