/*
 * parent_kwatch.h -- the parent's watch of the kernel state beside the
 * tables (parent_kwatch.c): the moat bridge's ports' isolation, its
 * addresses, the routes that could lead guests' traffic past the
 * uplink, IPv4 and IPv6 forwarding and the ICMP sysctls that keep
 * refusals immediate.
 */
#ifndef GATEWAYD_KWATCH_H
#define GATEWAYD_KWATCH_H

#include <stdbool.h>
#include <stdio.h>

struct gw;
struct ctl_req;

void	kwatch_start(struct gw *);
void	kwatch_stop(void);
/* The link, address and route notifications' socket, or -1. */
int	kwatch_fd(void);
void	kwatch_readable(struct gw *);
/* Compare now; found says why ("timer", "notification"). */
void	kwatch_check(struct gw *, const char *found);
/* Something differs from what gatewayd set. */
bool	kwatch_drifting(void);
/* Lines for ctl status and series for the metrics, beside the tables'. */
void	kwatch_status(struct ctl_req *);
void	kwatch_status_json(struct ctl_req *);
void	kwatch_metrics_objects(FILE *);

#endif
