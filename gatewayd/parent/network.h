/*
 * network.h -- the gateway's own network (network.c; rtnetlink in rtnl.c).
 */
#ifndef GW_PARENT_NETWORK_H
#define GW_PARENT_NETWORK_H

#include "gw.h"

/* --- the gateway's own network (parent/network.c; rtnetlink in parent/rtnl.c) --- */

#define GW_NET_MAX	16
struct gw_net_item {
	char	 what[48];		/* "bridge moat0", "forwarding up0" */
	char	 state[160];		/* "created", "on", "missing ..." */
	bool	 warn;
};
struct gw_net {
	bool			 managed;	/* gateway.manage_network */
	size_t			 n;
	unsigned		 warnings;
	struct gw_net_item	 item[GW_NET_MAX];
};

/* Walk bridge, address, forwarding and uplink; with apply (and
 * manage_network) make what is missing, else only report it. */
struct moat_config *net_config_load(const char *path, struct moat_errors *);
void	net_walk(const struct moat_config *, bool apply, struct gw_net *);
void	net_log(const struct gw_net *);
void	net_print_warnings(FILE *, const struct gw_net *);
void	net_status(struct ctl_req *, const struct gw_net *);
/* gatewayd --teardown; refused while a gatewayd answers on sock. */
int	net_teardown(const struct moat_config *, const char *sock);
/* Record a sysctl's value before gatewayd changes it (one of the ICMP
 * rate limits, refusals.h), for --teardown to set back. */
void	net_undo_sysctl(const struct moat_config *, const char *name, long old);

struct gw_network {
	struct gw_net	 net;		/* last walk, for ctl status */
};
static inline struct gw_network *network_of(const struct gw *gw)
{ return gw_mod(gw, MOD_NETWORK); }

#endif
