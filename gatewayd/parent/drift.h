/*
 * drift.h -- the parent watches its own kernel state (drift.c).
 */
#ifndef GW_PARENT_DRIFT_H
#define GW_PARENT_DRIFT_H

#include "gw.h"

/* Watch moat's own tables (drift.c): nf_tables notifications and
 * a timed comparison (gateway.verify); drift is reported and repaired. */
struct drift;
void	drift_start(struct gw *);
void	drift_readable(struct gw *);
void	drift_status(struct ctl_req *);
void	drift_metrics(FILE *, const struct gw *);
void	drift_stop(struct gw *);

#endif
