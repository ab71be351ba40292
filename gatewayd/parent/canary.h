/*
 * parent_canary.h -- the canary: a sandbox of gatewayd's own, a network
 * namespace on the bridge from which containment-check scans the policy
 * in force (parent_canary.c).
 */
#ifndef GATEWAYD_CANARY_H
#define GATEWAYD_CANARY_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdio.h>

struct gw;
struct ctl_req;

void	canary_start(struct gw *);
void	canary_stop(void);
/* The running scan's output, or -1. */
int	canary_fd(void);
void	canary_readable(struct gw *);
int	canary_timeout(const struct gw *, int timeout);	/* ms, -1 */
void	canary_tick(struct gw *);
/* true: pid was the canary's scan, now accounted for. */
bool	canary_reaped(struct gw *, pid_t, int status);
void	canary_status(struct ctl_req *);
void	canary_metrics(FILE *, const struct gw *);
/* The sandbox name whose refusals are the canary's own, or NULL. */
const char *canary_sandbox(const struct gw *);

#endif
