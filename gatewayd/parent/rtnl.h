/*
 * parent/rtnl.h -- the parent's rtnetlink requests (parent/rtnl.c).
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
/* addr: 4 bytes for AF_INET, 16 for AF_INET6 (added without duplicate
 * address detection). */
int	rtnl_addr_has(struct rtnl *, int index, int family, const uint8_t *addr,
	    int plen);
int	rtnl_addr_add(struct rtnl *, int index, int family, const uint8_t *addr,
	    int plen);
int	rtnl_addr_del(struct rtnl *, int index, int family, const uint8_t *addr,
	    int plen);
/* A default route of family out of the link (any table). */
int	rtnl_default_route_via(struct rtnl *, int family, int index);
/* A default route of family in the main table by gw (4 or 16 bytes) out
 * of the link oif. */
int	rtnl_default_route_add(struct rtnl *, int family, const uint8_t *gw,
	    int oif);

/* The bridge's IPv6 proxy neighbour entries (`ip -6 neigh show proxy`):
 * the addresses the host answers solicitations for with its own MAC.
 * list: *v allocated (free it), *n entries. */
int	rtnl_proxy6_list(struct rtnl *, int index, uint8_t (**v)[16],
	    size_t *n);
int	rtnl_proxy6(struct rtnl *, int index, const uint8_t *addr, bool add);

/* A socket subscribed to the host's IPv6 address changes, not
 * blocking.  drain: 1 some address came or went, 0 none, -1 error. */
struct rtnl_watch;
struct rtnl_watch *rtnl_watch_open(void);
int	rtnl_watch_fd(const struct rtnl_watch *);
int	rtnl_watch_drain(struct rtnl_watch *);
void	rtnl_watch_close(struct rtnl_watch *);

#endif
