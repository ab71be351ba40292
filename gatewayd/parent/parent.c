/*
 * parent.c -- gatewayd's parent: start-up and the event loop.
 *
 * Start-up order: load and validate the config, apply the policy (fail
 * closed: no policy, no daemon), open the audit log and control socket,
 * then start the children (the control process among them).  Stopping
 * leaves the policy in the kernel; only `nft-rules flush` removes it.
 */
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "ev.h"
#include "gw.h"
#include "commit.h"
#include "proc.h"
#include "reload.h"
#include "dnsd.h"
#include "proxy.h"
#include "audit.h"
#include "reg.h"
#include "ctl.h"
#include "policy.h"
#include "refused.h"
#include "grant.h"
#include "network.h"
#include "drift.h"
#include "hostnet.h"
#include "egress.h"
#include "metrics.h"
#include "ha.h"
#include "log.h"
#include "../metrics/metrics.h"
#include "nftrules.h"
#include "owner.h"
#include "verdicts.h"
#include "web.h"
#include "canary.h"

static void
on_signal(struct gw *gw, int sfd)
{
	struct signalfd_siginfo si;
	char *errors;
	pid_t pid;
	int status;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			log_info("SIGHUP: reloading");
			if (gw_reload(gw, &errors) == -1 && errors != NULL)
				log_warnx("%s", errors);
			free(errors);
			break;
		case SIGUSR1:
			audit_reopen(gw);
			break;
		case SIGTERM:
		case SIGINT:
			gw->quit = true;
			break;
		case SIGCHLD:
			/* Stops too: a console's child runs as a guest's uid,
			 * which may stop it for ever (ctl_job_stopped). */
			while ((pid = waitpid(-1, &status, WNOHANG |
			    WUNTRACED)) > 0)
				if (WIFSTOPPED(status))
					ctl_job_stopped(gw, pid);
				else if (!ctl_job_reaped(gw, pid, status) &&
				    !canary_reaped(gw, pid, status))
					proc_reaped(gw, pid, status);
			break;
		}
	}
}

/* Each module's timer, armed from its record before every wait: the
 * loop names no module. */
static struct mod_timer {
	struct ev_timer	 t;
	struct gw	*gw;
	size_t		 i;
} timers[MOD_MAX];

static void
on_timer(void *arg)
{
	struct mod_timer *m = arg;

	gw_modules[m->i]->timer(m->gw);
}

static void
arm_timers(struct gw *gw)
{
	uint64_t due;
	size_t i;

	for (i = 0; i < MOD_MAX; i++) {
		if (gw_modules[i]->due == NULL)
			continue;
		timers[i].gw = gw;
		timers[i].i = i;
		if ((due = gw_modules[i]->due(gw)) == 0)
			ev_timer_del(&timers[i].t);
		else if (timers[i].t.slot == 0 || timers[i].t.when != due)
			ev_timer_set(&timers[i].t, due, on_timer, &timers[i]);
	}
}

static void
on_signalfd(struct ev *e, uint32_t events)
{
	(void)events;
	on_signal(e->arg, e->fd);
}

static void
loop(struct gw *gw, int sfd)
{
	struct ev sig;

	if (ev_add(&sig, sfd, EPOLLIN, on_signalfd, gw) == -1)
		fatal("epoll: signals");
	while (!gw->quit) {
		arm_timers(gw);
		if (ev_run_once(-1) == -1 && errno != EINTR)
			fatal("epoll");
	}
	ev_del(&sig);
}

/* Journals recovery refused, kept until the audit log is open.  Their
 * names are anyone's (a planted file): kept apart from the reasons. */
struct refused_journals {
	char	**journal;
	char	**why;
	size_t	  n;
};

static void
journal_refused(void *arg, const char *journal, const char *why)
{
	struct refused_journals *r = arg;

	if (r->n >= 64)
		return;
	r->journal = xreallocarray(r->journal, r->n + 1, sizeof(char *));
	r->why = xreallocarray(r->why, r->n + 1, sizeof(char *));
	r->journal[r->n] = xstrdup(journal);
	r->why[r->n++] = xstrdup(why);
}

static void
journals_audit(struct gw *gw, struct refused_journals *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		audit_event(gw, "config-journal-refused", "journal",
		    r->journal[i], "reason", r->why[i], NULL);
		free(r->journal[i]);
		free(r->why[i]);
	}
	free(r->journal);
	free(r->why);
	memset(r, 0, sizeof(*r));
}

/* A verb that was killed halfway through writing the configuration is
 * undone before anything reads it: the files are as they were before
 * that verb, never half of its change.  Its journal may lie in the state
 * folder (a new secret's value), which moat.conf names. */
static void
recover_changes(struct gw *gw, struct refused_journals *refused)
{
	char *state_dir = cfgtxn_state_dir(gw->opts.conf);

	if (state_dir == NULL)
		log_warnx("%s: cannot read gateway.state_dir from it: a "
		    "change cut short there is not undone", gw->opts.conf);
	if (cfgtxn_recover(gw->opts.conf, state_dir, journal_refused,
	    refused) == -1)
		log_warnx("an unfinished configuration change could not be "
		    "undone (see above); starting with the files as they are");
	free(state_dir);
}

static int
startup(struct gw *gw)
{
	struct refused_journals refused = { NULL, NULL, 0 };
	struct moat_errors errs;
	struct group *gr;
	char err[1024];

	/* Only one gatewayd changes this namespace's tables, files and
	 * gate: a second one stops here, having changed nothing (no
	 * journal recovered either). */
	if (owner_claim(err, sizeof(err)) == -1) {
		log_warnx("%s; not starting", err);
		return -1;
	}
	recover_changes(gw, &refused);
	gw->file = net_config_load(gw->opts.conf, &errs);
	if (gw->file == NULL) {
		config_errors_print(stderr, &errs);
		log_warnx("%s: configuration invalid (%zu errors); not starting",
		    gw->opts.conf, errs.n);
		config_errors_free(&errs);
		return -1;
	}
	gw_log_warnings(gw->file, &errs);
	config_errors_free(&errs);
	gw->cfg = gw_effective(gw, gw->file);	/* no grants yet */
	gr = getgrnam(GW_GROUP);
	gw->moat_gid = gr ? gr->gr_gid : (gid_t)-1;
	if (gw->moat_gid == (gid_t)-1)
		log_warnx("no group %s: only root may use the control socket",
		    GW_GROUP);
	if ((gw->nft = nftr_ctx_new()) == NULL) {
		log_warnx("cannot open netlink to nf_tables");
		return -1;
	}
	/* 0711: each guest's QEMU user passes through to its own folder,
	 * 0710 root:its group; nobody may list this one.  Before the
	 * policy: applying it records the sysctls it changes there. */
	mkdir(gw->cfg->gw.state_dir, 0711);
	/* A box of a pair shuts its gate before anything else: nothing is
	 * forwarded while the policy goes in, nor if it fails to. */
	if (ha_start(gw, err, sizeof(err)) == -1) {
		log_warnx("%s; not starting", err);
		return -1;
	}
	/* A quarantine outlives a restart: the policy in force is made
	 * again with the quarantines read. */
	verdicts_start(gw);
	gw_effective_free(gw->cfg, gw->file);
	gw->cfg = gw_effective(gw, gw->file);
	if (policy_apply(gw, gw->cfg, err, sizeof(err)) == -1) {
		log_warnx("applying the policy failed: %s; not starting", err);
		return -1;
	}
	policy_promises_seed(gw);
	/* The modules after the policy, in the table's order: the audit
	 * log, the host's networks, the gateway's own network (forwarding
	 * is never on unfiltered), the drift watch, the listeners. */
	if (gw_modules_start(gw) == -1)
		return -1;
	journals_audit(gw, &refused);
	return 0;
}

int
gw_run(struct gw_opts *opts)
{
	static struct gw gw;
	int sfd;

	gw.opts = *opts;
	gw.nlfd = -1;
	gw.started = time(NULL);
	ctl_of(&gw)->on_ctl_msg = ctl_message;
	audit_of(&gw)->on_audit_line = ctl_log_line;
	log_init("gatewayd", !opts->foreground, opts->verbose + 1);
	if (geteuid() != 0)
		log_warnx("not running as root: applying the policy will "
		    "probably fail");
	if ((sfd = ev_signals_fd(true, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		fatal("signalfd");
	if (ev_init() == -1)
		fatal("epoll");
	if (startup(&gw) == -1)
		return 1;
	if (!opts->foreground && daemon(0, 0) == -1)
		fatal("daemon");
	proc_init(&gw);
	refused_prune(&gw);		/* sizes the views for the sandboxes */
	audit_event(&gw, "start", "config", gw.cfg->path, NULL);
	proc_start_all(&gw);
	log_info("running: %zu sandboxes, control socket %s",
	    gw.cfg->nsandboxes, gw.opts.sock);
	loop(&gw, sfd);
	gw.quit = true;
	gw_modules_stop(&gw);
	nftr_ruleset_free(gw.applied);
	nftr_ctx_free(gw.nft);
	gw_effective_free(gw.cfg, gw.file);
	config_free(gw.file);
	gw_modules_free(&gw);
	log_info("stopped; the policy stays in the kernel");
	return 0;
}
