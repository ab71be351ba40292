/*
 * hostnet.h -- following the host's IPv6 networks (hostnet.c).
 */
#ifndef GW_PARENT_HOSTNET_H
#define GW_PARENT_HOSTNET_H

#include "gw.h"

/* Follow the host's IPv6 networks (parent/hostnet.c): the policy's set
 * lan6 gets a network the moment an interface gains it, without a
 * reload.  fd -1 when not following. */
struct hostnet;
void	hostnet_start(struct gw *);
void	hostnet_readable(struct gw *);
void	hostnet_stop(struct gw *);

#endif
