/*
 * parent_rtnl.h -- the parent's rtnetlink requests (parent_rtnl.c).
 * Lookups return 1 found, 0 not found, -1 error (errno); changes return 0
 * or -1 (errno).
 */
#ifndef GATEWAYD_RTNL_H
#define GATEWAYD_RTNL_H

#include <stdbool.h>
#include <stdint.h>

struct rtnl;

struct rtnl_link {
	int	 index;
	bool	 up;
	bool	 bridge;
};

struct rtnl	*rtnl_open(void);
void		 rtnl_close(struct rtnl *);
int	rtnl_link_get(struct rtnl *, const char *name, struct rtnl_link *);
int	rtnl_bridge_add(struct rtnl *, const char *name);
int	rtnl_link_set_up(struct rtnl *, int index, bool up);
int	rtnl_link_del(struct rtnl *, int index);
int	rtnl_addr4_has(struct rtnl *, int index, const uint8_t addr[4], int plen);
int	rtnl_addr4_add(struct rtnl *, int index, const uint8_t addr[4], int plen);
int	rtnl_addr4_del(struct rtnl *, int index, const uint8_t addr[4], int plen);
/* An IPv4 default route out of the link (any table). */
int	rtnl_default_route_via(struct rtnl *, int index);

#endif
