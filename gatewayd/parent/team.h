/*
 * team.h -- a team-shared host: members' sandboxes and secrets (team.c,
 * secret.c, attach.c).
 */
#ifndef GW_PARENT_TEAM_H
#define GW_PARENT_TEAM_H

#include "gw.h"

/* --- team-shared host (parent/team.c, parent/secret.c) --- */

/* provision's verbs run by gatewayd for members of group moat. */
void	team_provision(struct ctl_req *);	/* create|start|stop|destroy */
/* The same with the descriptors the client attached to its request. */
void	team_provision_fds(struct ctl_req *, const int *fds, size_t nfds);
void	team_secret(struct ctl_req *);		/* secret set|list */
void	secret_attach(struct ctl_req *);	/* secret attach|detach */
void	team_list(struct ctl_req *);		/* provision list, filtered */
bool	team_is_admin(const struct moat_config *, uid_t, const char *user);
char	*team_config_warnings(const struct moat_config *,
	    const struct moat_errors *);	/* malloc'ed lines, or NULL */

#endif
