/*
 * gw.h -- the root parent's shared state: the configuration in force, the
 * kernel handle, the children, and the table of its modules (module.c).
 *
 * Process model (the parent touches no hostile input; keys stay where
 * the network is not; messages are typed and size-checked, and each
 * child may send only the types its entry in roles[] lists):
 *
 *   parent (root, CAP_NET_ADMIN)  applies the policy, binds every socket,
 *        |                        owns the audit log, reads the config,
 *        |                        the secret files and the CA; parses no
 *        |                        guest bytes and no control requests,
 *        |                        only typed IPC
 *        +-- nflog     forked, moat-log: the kernel's refusal log from a
 *        |             socket the parent bound; one IPC_AUDIT per refusal
 *        +-- dnsd      exec'ed, moat-dns: guests' DNS on sockets handed
 *        |             over; IPC_SET_ADD for what allowed names resolve to
 *        +-- proxy     exec'ed (moat-proxy), moat-proxy, one per worker:
 *        |    |        gets each secret's value over IPC (IPC_CONF_SECRET)
 *        |    |        and never opens a file
 *        |    +-- signer  moat-ca: holds the CA key, signs its worker's leaves
 *        +-- control   forked, moat-ctl: parses control requests, sends
 *        |             one IPC_CTL_REQ each (control/control.c)
 *        +-- register  forked, moat-reg: a separate box's TLS endpoint for
 *        |             KVM hosts; one IPC_REG_REQ per line (register/)
 *        +-- metrics   forked, moat-mon: answers scrapers from the latest
 *        |             rendering the parent sends (metrics/)
 *        +-- ha-recv   forked, moat-reg: replication from the other box
 *        +-- ha-send   forked, moat-reg: replication to the other box
 *        |             (harepl/send.c)
 *        +-- ha-arp    forked, moat-log: the split-brain watch's ARP probes
 *                      and their answers (ha_arp/ha_arp.c)
 *
 * Every child drops to its own user and seccomp list (lib/sandbox.c).
 * Children that die are restarted with backoff; the kernel policy stays
 * in place throughout (fail closed).  docs/architecture.md has the same
 * picture with every message.
 */
#ifndef GW_PARENT_GW_H
#define GW_PARENT_GW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "budget.h"
#include "config.h"
#include "ipc.h"
#include "promise.h"

#include "../gatewayd.h"
#include "../control/control.h"
#include "seen.h"

/* --- children (parent/proc.c) --- */

/* The proxy is a pool: worker i is PROC_PROXY + i. */
enum gw_proc_id { PROC_NFLOG = 0, PROC_DNSD, PROC_PROXY,
    PROC_CONTROL = PROC_PROXY + GW_PROXY_MAX, PROC_REGISTER, PROC_METRICS,
    PROC_HA_RECV, PROC_HA_SEND, PROC_HA_ARP, PROC_WEB, PROC_MAX };
#define PROC_IS_PROXY(id)	((id) >= PROC_PROXY && (id) < PROC_CONTROL)

struct gw_proc {
	const char	*name;
	pid_t		 pid;
	int		 ipc;		/* parent's end, -1 when down */
	unsigned	 restarts;
	unsigned	 backoff_s;	/* next restart delay */
	time_t		 started;
	time_t		 restart_at;	/* 0 = not scheduled */
	bool		 enabled;
	bool		 expected;	/* we stopped it: restart at once */
};

/*
 * What a reload changed, decided once, in the parent, by comparing the
 * configuration in force with the new one (conf_delta, parent/reload.c);
 * each child is told what it means for it (proc_reload).  Names are the
 * delta's own copies.
 */
struct gw_delta {
	bool		 basis;		/* more than sandboxes and secrets */
	bool		 secret_defs;	/* a secret came, went or was redefined */
	char		**sandboxes;	/* in both, with other settings */
	size_t		 nsandboxes;
	char		**secrets;	/* redefined, removed, new, or whose
					 * file changed: whose connections go */
	size_t		 nsecrets;
	size_t		*values;	/* new config's secrets whose value goes
					 * to the proxy: new, or file changed */
	size_t		 nvalues;
	struct gw_secret_id *ids;	/* the new config's secret files */
	size_t		 nids;
	bool		 nflog_view;	/* what the nflog reader knows of
					 * sandboxes (names, addresses,
					 * MACs, the bridge) changed */
};

/* A secret file's identity when its value was read for the proxy: a
 * reload sends again the values of those whose identity changed. */
struct gw_secret_id {
	char		 name[IPC_NAME_LEN];
	bool		 ok;		/* stat succeeded */
	uint64_t	 dev, ino, size;
	int64_t		 mtime_s;
	long		 mtime_ns;
};

struct gw;
/* One message from a child, already checked against its role: each
 * role's dispatch function (roles[] in parent/proc.c) lives beside the
 * code that speaks to that child; fd is the channel to answer on. */
struct gw_msg {
	const struct ipc_hdr	*h;
	void			*data;
	size_t			 len;
	int			*fds;
	size_t			 nfds;
};
typedef void gw_dispatch_fn(struct gw *, struct gw_proc *, int fd,
    const struct gw_msg *);
/*
 * The parent's modules (module.c).  Each keeps its own state, reached
 * with its accessor (audit_of(gw), grants_of(gw), ...) and allocated on
 * first use; its record says what it does at start, at stop, after every
 * commit of the policy, and when its timer is due.  The parent's loop
 * and the commit path walk the table; neither names a module.
 */
enum gw_mod_id {
	MOD_AUDIT, MOD_CTL, MOD_POLICY, MOD_DNSD, MOD_PROXY, MOD_RELOAD,
	MOD_HOSTNET, MOD_NETWORK, MOD_KWATCH, MOD_DRIFT, MOD_GRANTS, MOD_EGRESS,
	MOD_BUDGETS, MOD_REG, MOD_HA, MOD_METRICS, MOD_WEB, MOD_VERDICTS,
	MOD_SOCKMAP, MOD_CANARY, MOD_REFUSED, MOD_PROC,
	MOD_MAX
};

struct gw_commit;
struct ctl_req;
struct reg_pem;
struct gw_module {
	const char	*name;
	size_t		 size;		/* of its state */
	void		(*init)(void *state);	/* after zeroing it */
	void		(*free)(void *state);	/* at exit */
	/* At start, once the policy is in and before the children: -1
	 * stops gatewayd. */
	int		(*start)(struct gw *);
	void		(*stop)(struct gw *);
	/* The policy in force changed (gw_commit): what the module keeps
	 * of it follows. */
	void		(*on_commit)(struct gw *, const struct gw_commit *);
	/* When its timer is next due, on gw_mono_ms()'s scale (0: not
	 * armed), and what to do then. */
	uint64_t	(*due)(const struct gw *);
	void		(*timer)(struct gw *);
	/* Its part of `ctl status` (text, or a JSON member and a comma
	 * with --json) and of the metrics. */
	void		(*status)(struct ctl_req *);
	void		(*metrics)(FILE *, const struct gw *);
};

extern const struct gw_module *const gw_modules[MOD_MAX];

/* CLOCK_MONOTONIC in milliseconds: the modules' timers, promises, set
 * additions (policy.c). */
uint64_t gw_mono_ms(void);
/* A module's due time ms from now, on that scale; 0 (not armed) if ms
 * is -1. */
uint64_t gw_due_in(int ms);

/* Module id's state, allocated (zeroed, then its init) on first use. */
void	*gw_mod(const struct gw *, enum gw_mod_id);
int	 gw_modules_start(struct gw *);
void	 gw_modules_stop(struct gw *);
void	 gw_modules_free(struct gw *);
void	 gw_modules_status(struct ctl_req *);
void	 gw_modules_metrics(FILE *, const struct gw *);

/* A proxy worker replaced by a new one, finishing its connections. */
struct gw_draining {
	pid_t	 pid;
	int	 ipc;
	int	 worker;
	time_t	 since;
};

struct gw {
	struct gw_opts		 opts;
	struct moat_config	*file;		/* as loaded, never changed */
	struct moat_config	*cfg;		/* the policy in force: file with
					   the grants over it (commit.h) */
	struct nftr_ctx		*nft;
	struct nftr_ruleset	*applied;	/* in the kernel, for deltas */
	bool			 probed;
	unsigned		 features;	/* NFTR_F_* */
	bool			 policy_full;	/* policy_reapply: no delta */
	struct gw_proc		 procs[PROC_MAX];
	struct gw_draining	 draining[GW_MAX_DRAINING];
	int			 nlfd;		/* nflog socket, kept for restarts */
	gid_t			 moat_gid;	/* (gid_t)-1 if no such group */
	time_t			 started;
	bool			 quit;
	void			*mod[MOD_MAX];	/* gw_mod() */
};

#endif
