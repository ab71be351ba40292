/*
 * proc.h -- the children: start, watch, restart, reconfigure (proc.c).
 */
#ifndef GW_PARENT_PROC_H
#define GW_PARENT_PROC_H

#include "gw.h"

void	proc_init(struct gw *);
/* The parent's end of a child's channel (or a draining worker's): the
 * old one closed, the new one (or -1) watched on the loop. */
void	proc_ipc_set(struct gw *, struct gw_proc *, int fd);
void	proc_drain_ipc_set(struct gw *, int slot, int fd);
/* A worker's channel moves to draining slot, still watched. */
void	proc_to_drain(struct gw *, struct gw_proc *, int slot);
void	proc_start_all(struct gw *);
void	proc_stop_all(struct gw *);
void	proc_reaped(struct gw *, pid_t, int status);
void	proc_ipc_readable(struct gw *, enum gw_proc_id);
/* After a reload: each child gets the new configuration from the parent
 * (they hold no privilege to read root-only files any more), with what
 * the change d means for it.  dnsd takes it in place (IPC_CONF); the
 * nflog reader is started again.  A proxy worker takes the new sandboxes
 * and secrets in place when nothing else changed (d->basis); otherwise it
 * is told to drain its open connections while a new one takes the
 * listening socket. */
void	proc_reload(struct gw *, const struct gw_delta *d);
/* A grant changed the allow lists of the n sandboxes named in gw->cfg
 * itself: dnsd and every proxy worker take each list alone
 * (IPC_CONF_ALLOW); nothing is restarted and no other sandbox is
 * touched. */
void	proc_reload_sandboxes(struct gw *, const char *const *names, size_t n);
void	proc_drain_readable(struct gw *, int slot);
void	proc_kill(struct gw *, enum gw_proc_id, const char *why);
const char *proc_label(struct gw *, const struct gw_proc *);	/* "proxy 1" */
/* The configuration as printed for children, in a sealed memfd. */
int	proc_config_memfd(struct gw *);
int	gw_sealed_memfd(const char *name, const char *text, size_t len);

#include "ev.h"

struct gw_procs {
	struct proc_watch {
		struct ev	 ev;
		struct gw	*gw;
		int		 slot;
		bool		 drain;
	}		 proc[PROC_MAX], drain[GW_MAX_DRAINING];
};

#endif
