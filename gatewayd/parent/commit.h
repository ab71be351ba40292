/*
 * commit.h -- the one path by which what sandboxes may reach changes
 * (commit.c).
 *
 * The policy in force (gw->cfg) is a value: the configuration as loaded
 * from the files (gw->file, never changed after it is loaded) with the
 * grants for a while laid over it (grant.c), and a quarantined guest's
 * sandbox at egress "none" (verdict.c).  A reload, `ctl allow` and
 * `unallow`, a grant expiring, the other box's grants, a registration, a
 * quarantine, an egress budget spent (egress.c): each changes one of
 * those inputs and calls gw_commit, which computes the new value and puts
 * it in force in the same order every time:
 *
 *   1. the kernel, in one nf_tables transaction (refused: nothing changed);
 *   2. every module's on_commit (gw.h): the grants of sandboxes gone, the
 *      allowlist sets of narrowed sandboxes emptied (and the other box
 *      told), what was promised to them void, the refusal views, the
 *      gateway's network and the metrics listener after a file change;
 *   3. the children: dnsd and the proxy workers take only the allow lists
 *      that changed, or, after a file change, the new configuration in
 *      place (a worker drains only when more than its sandboxes and
 *      secrets changed);
 *   4. every flow the new policy refuses is cut (conntrack, both
 *      families, the proxy's spliced connections included), unless the
 *      change only widened;
 *   5. the count and the time of the commit, for ctl status and the
 *      metrics.
 *
 * The caller audits the change with its own event (reload, allow,
 * unallow, grant-expired, ...), which names who asked.
 */
#ifndef GW_PARENT_COMMIT_H
#define GW_PARENT_COMMIT_H

#include "gw.h"

struct gw_commit {
	const char		*why;		/* for the log: "reload", ... */
	bool			 from_peer;	/* the other box's change: not
						   sent back to it */
	/* Set by gw_commit, for the modules' on_commit: */
	const struct moat_config *old;		/* the policy before */
	const struct moat_config *new;		/* and now */
	bool			 file_changed;
	int			 cut;		/* flows cut, -1: could not */
	double			 ms;		/* the whole commit took */
};

/*
 * Put in force file (a configuration just loaded, which gw_commit then
 * owns) or, if NULL, the files in force, with the grants over it.  0; or
 * -1 with err when the kernel refused it, and nothing changed (file is
 * still the caller's).
 */
int	gw_commit(struct gw *, struct moat_config *file, struct gw_commit *,
	    char *err, size_t errlen);
/* The effective policy of file with the grants over it, and its end. */
struct moat_config *gw_effective(struct gw *, const struct moat_config *file);
void	gw_effective_free(struct moat_config *, const struct moat_config *file);

#endif
