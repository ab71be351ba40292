/*
 * parent/attach.c -- `secret attach SANDBOX NAME` and `secret detach
 * SANDBOX NAME`: put a secret's name in (or take it out of) a sandbox's
 * `secrets` list in its drop-in, keeping every other setting and comment,
 * through the same all-or-nothing write as every verb that edits the
 * configuration; the reload it ends in takes the new binding in place.
 *
 * The sandbox's owner (or an admin) may attach a secret they own or that
 * is shared with them, and detach any.  The answer gives the line to put
 * in the guest's environment: the placeholder reaches a guest only
 * through its environment, which provision writes at create.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfgtxn.h"
#include "conftext.h"
#include "gw.h"
#include "reload.h"
#include "audit.h"
#include "ctl.h"
#include "team.h"
#include "log.h"
#include "secretfile.h"
#include "smallfile.h"

#define DROPIN_MAX	65536

/* May the caller put secret s on a sandbox of theirs? */
static bool
may_use(const struct ctl_req *r, const struct moat_secret *s)
{
	return r->admin || (s->owner != NULL && strcmp(s->owner, r->user) ==
	    0) || config_strlist_has(&s->shared_with, r->user);
}

/* The sandbox's drop-in, with its secrets list changed; staged in t. */
static int
stage(struct ctl_req *r, struct cfgtxn *t, const struct moat_sandbox *sb,
    const char *name, bool attach)
{
	const char *path = sb->where.file, *one[1] = { name };
	struct stat st;
	char *text, *out;
	bool found;
	int rc = -1;

	if (path == NULL || strcmp(path, r->gw->cfg->path) == 0) {
		ctl_refuse(r, sb->name, "sandbox \"%s\" is defined in %s, not in "
		    "a drop-in of its own: an administrator edits its secrets "
		    "there", sb->name, r->gw->cfg->path);
		return -1;
	}
	if ((text = read_small_file(path, DROPIN_MAX, NULL)) == NULL ||
	    stat(path, &st) == -1) {
		ctl_refuse(r, sb->name, "cannot read %s", path);
		free(text);
		return -1;
	}
	/* Only the one entry changes; the rest of the list, comments
	 * included, stays as written. */
	out = conftext_list_edit(text, "secrets", attach ? one : NULL,
	    attach ? 1 : 0, attach ? NULL : one, attach ? 0 : 1, &found);
	if (out == NULL)
		ctl_refuse(r, sb->name, "%s is not in a form this verb can "
		    "edit; an administrator edits it", path);
	else if (!attach && !found)
		ctl_refuse(r, sb->name, "%s no longer lists secret \"%s\" "
		    "(changed since the last reload)", path, name);
	else if (cfgtxn_stage_write(t, path, out, strlen(out),
	    st.st_mode & 07777, st.st_uid, st.st_gid) == -1)
		ctl_refuse(r, sb->name, "cannot write %s", path);
	else
		rc = 0;
	free(out);
	free(text);
	return rc;
}

static void
change(struct ctl_req *r, const char *sbname, const char *name, bool attach)
{
	const struct moat_sandbox *sb = config_sandbox_by_name(r->gw->cfg,
	    sbname);
	const struct moat_secret *s = config_secret_by_name(r->gw->cfg, name);
	char *errors = NULL, *placeholder, var[80], uid[16];
	const char *mine[1];
	struct cfgtxn *t;

	if (sb == NULL || !ctl_may_see(r, sb->owner)) {
		ctl_refuse(r, sbname, "no sandbox %s (or not yours)", sbname);
		return;
	}
	/* One answer for a secret that is missing and one that is someone
	 * else's, in both directions: detach looks only at the sandbox's
	 * own list, which its owner already sees. */
	if (attach && (s == NULL || !may_use(r, s))) {
		ctl_refuse(r, sbname, "no secret \"%s\" you may attach: it must "
		    "be yours or shared with you (secret list shows them)",
		    name);
		return;
	}
	if (!attach && (s == NULL || !config_strlist_has(&sb->secrets,
	    name))) {
		ctl_refuse(r, sbname, "sandbox %s does not hold secret \"%s\"",
		    sbname, name);
		return;
	}
	if (attach && config_strlist_has(&sb->secrets, name)) {
		ctl_refuse(r, sbname, "sandbox %s already holds secret \"%s\"",
		    sbname, name);
		return;
	}
	placeholder = xstrdup(s->placeholder);	/* a reload frees s */
	secret_env_name(name, var, sizeof(var));
	mine[0] = sb->where.file;
	t = cfgtxn_begin(r->gw->cfg->path);
	if (stage(r, t, sb, name, attach) == 0) {
		if (cfgtxn_commit_and_check(t, gw_reload_check, r->gw,
		    &errors) == -1) {
			ctl_reply_errors(r, errors, mine, 1);
			ctl_refuse(r, sbname, "secret \"%s\" not %s: the "
			    "configuration would not load with it; nothing was "
			    "changed", name, attach ? "attached" : "detached");
		} else {
			snprintf(uid, sizeof(uid), "%u", (unsigned)r->uid);
			audit_event(r->gw, attach ? "secret-attach" :
			    "secret-detach", "uid", uid, "user", r->user,
			    "sandbox", sbname, "secret", name, NULL);
			if (attach)
				ctl_reply(r, "secret %s attached to %s; put this "
				    "in the guest's environment:\n%s='%s'\nok\n",
				    name, sbname, var, placeholder);
			else
				ctl_reply(r, "secret %s detached from %s; its "
				    "placeholder (%s) no longer works there\nok\n",
				    name, sbname, var);
		}
	}
	cfgtxn_end(t);
	free(errors);
	free(placeholder);
}

/* secret attach|detach SANDBOX NAME */
void
secret_attach(struct ctl_req *r)
{
	bool attach = strcmp(r->argv[1], "attach") == 0;

	if (r->argc != 4) {
		ctl_refuse(r, NULL, "usage: secret %s SANDBOX NAME", r->argv[1]);
		return;
	}
	change(r, r->argv[2], r->argv[3], attach);
}
