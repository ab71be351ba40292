/*
 * metrics.h -- what the parent renders for the metrics process (metrics.c,
 * metrics_series.c).
 */
#ifndef GW_PARENT_METRICS_H
#define GW_PARENT_METRICS_H

#include "gw.h"

int	metrics_listen(struct gw *);	/* bind gateway.metrics.listen */
char	*metrics_render(struct gw *, size_t *len);
/* A reload: bind a new or moved metrics.listen before the policy goes in
 * (-1 and err: refused), let go of it if the reload is refused after
 * all, and put it and metrics.allow to use once the new config is in. */
int	metrics_reload_check(struct gw *, const struct moat_config *,
	    char *err, size_t errlen);
void	metrics_reload_abort(void);
void	metrics_reload(struct gw *, const struct moat_config *old);
/* A label value of our own text, escaped as the exposition format asks. */
void	metrics_lvalue(FILE *, const char *);

/* parent/reload.c */

struct metrics;
struct gw_metrics {
	struct metrics	*metrics;
	int		 metricsfd;	/* metrics.listen, or -1 */
	time_t		 metrics_due;	/* next rendering */
	time_t		 metrics_sent;	/* to the metrics process */
};
static inline struct gw_metrics *metrics_of(const struct gw *gw)
{ return gw_mod(gw, MOD_METRICS); }

#endif
