/*
 * ha.h -- an active/standby pair: the role, the split-brain watch, replication
 * (ha.c, ha_dup.c, harepl.c).
 */
#ifndef GW_PARENT_HA_H
#define GW_PARENT_HA_H

#include "gw.h"

/* The role of a box in an active/standby pair (ha.c). */
enum gw_ha_role { HA_UNKNOWN, HA_MASTER, HA_BACKUP, HA_FAULT };
int	ha_start(struct gw *, char *err, size_t errlen);
void	ha_stop(struct gw *);
void	ha_dup_start(struct gw *);	/* parent/ha_dup.c */
void	ha_dup_stop(struct gw *);
enum { HA_DUP_NONE = 0, HA_DUP_UNCONFIRMED, HA_DUP_CONFIRMED };
int	ha_dup_state(const struct gw *, char *mac, size_t, time_t *first);
int	ha_dup_timeout(const struct gw *, int timeout);	/* ms, -1 */
void	ha_dup_tick(struct gw *);
/* What the ha-arp process watches, or NULL: no watch. */
const struct ha_arp_watch *ha_dup_watch(const struct gw *);
gw_dispatch_fn ha_arp_dispatch;	/* its IPC_HA_ARP */
void	ctl_ha(struct ctl_req *);	/* ha master|backup|fault */
void	ha_status(struct ctl_req *);
int	ha_gate_again(struct gw *);	/* the gate as the role wants it */
/* parent/harepl.c: replication between the boxes of a pair. */
int	harepl_listen(struct gw *);	/* bind gateway.ha.listen */
int	harepl_pem_read(const struct gw *, struct reg_pem *);
void	harepl_forward(struct gw *, int type, const void *, size_t);
/* The same whatever this box's role: an operator's grants. */
void	harepl_forward_any(struct gw *, int type, const void *, size_t);
/* The whole state to the other box (harepl.h), while master. */
void	harepl_snapshot(struct gw *);
void	harepl_status(struct ctl_req *);
gw_dispatch_fn harepl_recv_dispatch, harepl_send_dispatch;
void	ha_metrics(FILE *, const struct gw *);

struct ha_dup;
struct gw_ha {
	/* gateway.ha as read at start, the role keepalived last gave
	 * (enum gw_ha_role) and since when. */
	bool		 ha_on;
	int		 ha_role;
	time_t		 ha_since;
	struct ha_dup	*ha_dup;	/* split-brain watch, or NULL */
	/* Replication to and from the other box (harepl.c). */
	int		 hafd;		/* gateway.ha.listen, or -1 */
	uint64_t	 ha_queued, ha_dropped;	/* to the sender */
	uint64_t	 ha_received, ha_refused, ha_unknown;
};
static inline struct gw_ha *ha_of(const struct gw *gw)
{ return gw_mod(gw, MOD_HA); }

#endif
