/*
 * parent/kwatch_net.h -- the kernel watch's reading of the bridge's
 * addresses and the routes (parent/kwatch_net.c).
 */
#ifndef GATEWAYD_KWATCH_NET_H
#define GATEWAYD_KWATCH_NET_H

#include <stdbool.h>
#include <stddef.h>

#include <libmnl/libmnl.h>

#define KWN_MAX		16	/* objects reported at once */
#define KWN_OBJLEN	160

struct moat_config;

struct kwn {
	const struct moat_config *cfg;	/* in */
	int	 bridge, uplink;	/* in: their indexes, 0 for none */
	bool	 gw4, gw6;		/* the gateway's addresses seen */
	bool	 dflt[2];		/* an IPv4, IPv6 default route by the
					 * uplink seen */
	char	 obj[KWN_MAX][KWN_OBJLEN];	/* what is drift */
	size_t	 n;
};

/* One message of an address (kwn_addr) or route (kwn_route) dump, data
 * a struct kwn; any other message is passed over.  Always MNL_CB_OK. */
int	kwn_addr(const struct nlmsghdr *, void *data);
int	kwn_route(const struct nlmsghdr *, void *data);

#endif
