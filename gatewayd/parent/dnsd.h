/*
 * dnsd.h -- the parent's side of dnsd (dnsd.c).
 */
#ifndef GW_PARENT_DNSD_H
#define GW_PARENT_DNSD_H

#include "gw.h"

/* parent/dnsd.c */
gw_dispatch_fn dnsd_dispatch;
void	dnsd_reconfigure(struct gw *);	/* a reload's configuration, in place */
int	dnsd_allow(struct gw *, const char *sandbox);	/* -1: send it all */

struct gw_dnsd {
	int		 dns_udp, dns_tcp;	/* bound by the parent */
	int		 dns_udp6, dns_tcp6;	/* gateway.ipv6, or -1 */
	uint32_t	 dns_gen;	/* dnsd reconfigurations sent */
	struct gw_dnsdrop {		/* dnsd's queries over the rate */
		char		 sandbox[IPC_NAME_LEN];
		uint64_t	 count;
	}		*dnsdrops;
	size_t		 ndnsdrops;
};
static inline struct gw_dnsd *dnsd_of(const struct gw *gw)
{ return gw_mod(gw, MOD_DNSD); }

#endif
