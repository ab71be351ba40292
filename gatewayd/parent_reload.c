/*
 * parent_reload.c -- the parent re-reads its configuration: validate it,
 * apply it in one transaction (or keep the old policy), cut the flows it
 * no longer allows, and start the children again with it.  Called for
 * SIGHUP (parent.c) and for "reload" and "secret set" (parent_ctl.c,
 * parent_secret.c); it calls none of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gatewayd.h"
#include "log.h"

/* The config's warnings, one log line each (start-up and reload). */
void
gw_log_warnings(const struct moat_config *cfg, const struct moat_errors *errs)
{
	char *text = team_config_warnings(cfg, errs), *line, *save = NULL;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		log_warnx("%s", line);
	free(text);
}

int
gw_reload(struct gw *gw, char **errors)
{
	struct moat_errors errs;
	struct moat_config *cfg, *old = gw->cfg;
	char err[1024], count[16];
	struct timespec t0, t1;
	size_t i;
	int cut;

	*errors = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cfg = net_config_load(old->path, &errs);
	if (cfg == NULL) {
		*errors = config_errors_text(&errs);
		snprintf(count, sizeof(count), "%zu", errs.n);
		log_warnx("reload refused: %zu error(s) in %s; the previous "
		    "policy stays", errs.n, old->path);
		/* The whole text is for admins; a member who asked sees only
		 * what is about their own files (ctl_reply_errors). */
		for (i = 0; i < errs.n; i++)
			log_warnx("reload refused: %s", errs.msg[i]);
		audit_event(gw, "reload", "result", "refused", "errors", count,
		    "first_error", errs.msg[0], NULL);
		config_errors_free(&errs);
		gw->reload_failures++;
		return -1;
	}
	gw_log_warnings(cfg, &errs);
	config_errors_free(&errs);
	grants_overlay(gw, cfg);
	if (policy_apply(gw, cfg, err, sizeof(err)) == -1) {
		xasprintf(errors, "%s: %s\n", old->path, err);
		log_warnx("reload refused by the kernel: %s", err);
		audit_event(gw, "reload", "result", "refused", "error", err, NULL);
		config_free(cfg);
		gw->reload_failures++;
		return -1;
	}
	gw->cfg = cfg;
	grants_commit(gw);
	refused_prune(gw);
	policy_flush_narrowed(gw, old, cfg);
	/* What was promised to sets the reload deleted or emptied is void. */
	if (gw->promises != NULL)
		promises_reload(gw->promises, old, cfg);
	net_walk(cfg, true, &gw->net);
	net_log(&gw->net);
	cut = policy_cut_flows(old, cfg);
	snprintf(count, sizeof(count), "%d", cut);
	config_free(old);
	gw->reloads++;
	gw->last_reload = time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	gw->reload_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	log_info("reloaded %s: %zu sandboxes, %d flow(s) cut", cfg->path,
	    cfg->nsandboxes, cut);
	audit_event(gw, "reload", "result", "ok", "flows_cut", count, NULL);
	/* Every child gets the new config: dnsd in place, the nflog reader
	 * restarted at once, the proxy after draining its connections. */
	proc_reload(gw);
	return 0;
}

int
gw_reload_check(void *gw, const char *conf_path, char **errors)
{
	(void)conf_path;
	return gw_reload(gw, errors);
}
