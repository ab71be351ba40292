/*
 * web.h -- the parent's side of the web console (web.c):
 * its listener and certificate, the login links and sessions, and the
 * control requests moat-web sends for a session.
 */
#ifndef GW_PARENT_WEB_H
#define GW_PARENT_WEB_H

#include <stdbool.h>

#include "gw.h"
#include "../web/web.h"

#define WEB_LINK_S	300		/* a login link is good this long */
#define WEB_LINK_MAX_S	900
#define WEB_SESSION_S	(8 * 3600)	/* a session, from its login */
#define WEB_MAX_LINKS	16
#define WEB_MAX_SESSIONS 32

/* Bind gateway.web.listen and make or read the certificate; 0 if the
 * console is off. */
int	web_listen(struct gw *);
bool	web_enabled(void);
/* gw->cfg is new, old the one it replaced: a listener added, moved or
 * gone, or another certificate, takes effect now (a new web process;
 * the sessions stay).  A new address that cannot be bound leaves the
 * console where it was, logged and audited. */
void	web_reload(struct gw *, const struct moat_config *old);
/* The listener, certificate, key and pages for a new web process; wipe
 * the parent's copy after the fork. */
int	web_boot_prepare(struct gw *, struct web_boot *);
void	web_boot_wipe(struct web_boot *);
gw_dispatch_fn web_dispatch;
/* In a child just forked: wipe its copy of the links and sessions, which
 * are the parent's alone (the web process must not find them in its
 * memory). */
void	web_forget(void);

/* A request of the session's user (uid, gid, verb, words set), checked
 * and answered as the control socket's are, without a connection to
 * compare the credentials with: the session stands for it (parent_ctl.c). */
void	ctl_dispatch_as(struct ctl_req *);

/* gatewayd ctl web-login [--for DURATION] and web-sessions [revoke ID]. */
void	ctl_web_login(struct ctl_req *);
void	ctl_web_sessions(struct ctl_req *);

#endif
