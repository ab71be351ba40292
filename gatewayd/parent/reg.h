/*
 * reg.h -- the parent's side of KVM hosts' registrations (register.c).
 */
#ifndef GW_PARENT_REG_H
#define GW_PARENT_REG_H

#include "gw.h"

/* --- registration of KVM hosts' sandboxes (parent/register.c) --- */
struct reg_pem;
int	reg_listen(struct gw *);	/* bind gateway.registration.listen */
int	gw_listen_tcp(const char *addrport, const char *what);
/* The box's certificate and key for a new registration process. */
int	reg_pem_read(const struct gw *, struct reg_pem *);
int	reg_pem_load(const char *, const char *, const char *,
	    struct reg_pem *);
/* An IPC_REG_REQ from the registration process or, forwarded, from the
 * other box of a pair (shape-checked); the answer goes back on fd.  0 if
 * it was answered "ok". */
int	reg_message(struct gw *, int fd, const struct ipc_reg_req *);
gw_dispatch_fn reg_dispatch;
/* Sandboxes host has registered (drop-ins with its mark). */
size_t	reg_count(const struct gw *, const struct moat_host *);
struct ctl_req;
struct ctl_req;
void	ctl_hosts(struct ctl_req *);	/* gatewayd ctl hosts [--json] */

struct gw_reg {
	int		 regfd;		/* registration, listening, or -1 */
	struct gw_hoststat {		/* per KVM host, kept across reloads */
		char		 name[IPC_NAME_LEN];
		time_t		 last_seen;	/* last authenticated request */
		uint64_t	 refusals;
	}		*hoststats;
	size_t		 nhoststats;
	uint64_t	 reg_unknown;	/* connections with unknown keys */
};
static inline struct gw_reg *reg_of(const struct gw *gw)
{ return gw_mod(gw, MOD_REG); }

#endif
