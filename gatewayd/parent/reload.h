/*
 * reload.h -- re-reading the configuration and what a change means (reload.c).
 */
#ifndef GW_PARENT_RELOAD_H
#define GW_PARENT_RELOAD_H

#include "gw.h"

/* parent/reload.c: the change, once */
void	conf_delta(struct gw *, const struct moat_config *old,
	    const struct moat_config *ncfg, struct gw_delta *);
void	conf_delta_free(struct gw_delta *);
/* The secret files' identities, now, in cfg's order; *n of them. */
struct gw_secret_id *conf_secret_ids(const struct moat_config *, size_t *n);
/* The IPC_CONF_ALLOW of a sandbox's allow list in gw->cfg, in buf
 * (IPC_MAX_PAYLOAD bytes, aligned), with generation gen (>= 1); its
 * length, or 0 if there is no such sandbox or its list does not fit one
 * message. */
size_t	conf_allow_msg(const struct gw *, const char *sandbox, uint32_t gen,
	    void *buf);
/* Re-read the configuration and commit it (gw_commit): 0, or -1 with
 * *errors (malloc'ed) saying why the policy in force stays. */
int	gw_reload(struct gw *, char **errors);
/* gw_reload as a transaction's check (lib/cfgtxn.h), arg the gw: every
 * verb that writes the configuration keeps its files only if the new
 * configuration loads and applies. */
int	gw_reload_check(void *gw, const char *conf_path, char **errors);
/* Does the nflog reader's view (sandboxes' names, addresses, MACs, the
 * bridge) differ between a and b? */
bool	gw_nflog_view_changed(const struct moat_config *a,
	    const struct moat_config *b);
void	gw_log_warnings(const struct moat_config *, const struct moat_errors *);


struct gw_reload {
	time_t		 last_reload;
	unsigned	 reloads, reload_failures;
	double		 reload_ms;	/* the last reload took */
	unsigned	 commits;	/* gw_commit, since start */
	double		 commit_ms;	/* the last one took */
	struct {		/* config_print of cfg, for children's memfds */
		const struct moat_config *of;	/* printed from, */
		unsigned	 commits;	/* at this many commits */
		char		*text;
		size_t		 len;
	}		 cfgtext;
};
static inline struct gw_reload *reload_of(const struct gw *gw)
{ return gw_mod(gw, MOD_RELOAD); }

#endif
