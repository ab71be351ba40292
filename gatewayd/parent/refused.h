/*
 * refused.h -- what sandboxes were refused and resolved (refused.c).
 */
#ifndef GW_PARENT_REFUSED_H
#define GW_PARENT_REFUSED_H

#include "gw.h"

/* --- what sandboxes were refused and resolved (parent/refused.c) --- */

void	refused_dns_name(struct gw *, const struct ipc_dns_name *);
/* An audit line from a child (its source stamped): kept if a refusal. */
void	refused_audit(struct gw *, const char *line);
void	refused_prune(struct gw *);	/* after a reload */
void	refused_free(struct gw *);
void	ctl_refused(struct ctl_req *);	/* refused [SANDBOX] [--since D] */
void	ctl_names(struct ctl_req *);	/* names SANDBOX [--as-allow] */
/* "90s", "10m", "2h", "1d" or plain seconds, at most a year; -1 if not. */
int	gw_duration(const char *, long *secs);

struct gw_refused {
	struct seen_set	 seen_refused;	/* ctl refused */
	struct seen_set	 seen_names;	/* ctl names */
};
static inline struct gw_refused *refused_of(const struct gw *gw)
{ return gw_mod(gw, MOD_REFUSED); }

#endif
