/*
 * sandbox.h -- what the proxy does to itself: no core dumps, an
 * unprivileged user, no_new_privs, and a seccomp allowlist.
 */
#ifndef MOAT_PROXY_SANDBOX_H
#define MOAT_PROXY_SANDBOX_H

void	sandbox_nodump(void);
/* As root: become user (NULL: "nobody").  Always: no_new_privs. */
void	sandbox_drop(const char *user);
/* Default-kill filter of the calls the event loop makes. */
void	sandbox_seccomp(void);
/* Raise the descriptor limit to its hard limit; returns it. */
int	sandbox_maxfiles(void);

#endif
