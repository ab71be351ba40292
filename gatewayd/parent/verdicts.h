/*
 * verdicts.h -- each guest's own containment verdict, as its serial
 * console's reader recorded it, and the quarantine of a guest that
 * reported a breach (parent_verdict.c).
 */
#ifndef GATEWAYD_VERDICTS_H
#define GATEWAYD_VERDICTS_H

#include <stdbool.h>
#include <stdio.h>

struct gw;
struct ctl_req;
struct moat_config;

/* Read the quarantine list kept in gateway.state_dir. */
void	verdicts_start(struct gw *);
int	verdicts_timeout(int timeout);			/* ms, -1 */
void	verdicts_tick(struct gw *);
/* A configuration about to be applied: every quarantined sandbox in it
 * gets egress "none".  Called on each load before the policy goes in. */
void	verdicts_overlay(struct moat_config *);
/* What the overlay of a view of file made its own (gw_effective_free). */
void	verdicts_overlay_free(struct moat_config *,
	    const struct moat_config *file);
/* ctl sandboxes: the sandbox's fields, JSON (",\"verdict\":...") or
 * text (", verdict ..."). */
void	verdicts_sandbox(struct ctl_req *, const char *sandbox);
/* ctl status: the oldest guest verdict and the quarantined guests. */
void	verdicts_status(struct ctl_req *);
void	verdicts_metrics(FILE *, const struct gw *);
/* ctl clear-quarantine NAME (admins). */
void	ctl_clear_quarantine(struct ctl_req *);
/* From the other box of a pair (IPC_HA_QUARANTINE): 0 taken (or nothing
 * to change), -1 refused with why. */
int	verdicts_peer(struct gw *, const char *sandbox, bool on,
	    const char **why);
/* To the other box, when the link is made: each sandbox's quarantine. */
void	verdicts_snapshot(struct gw *);
void	verdicts_stop_all(void);

#endif
