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
#include "gatewayd.h"
#include "log.h"
#include "metrics.h"
#include "nftrules.h"
#include "owner.h"
#include "parent_canary.h"
#include "parent_kwatch.h"

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

enum { FD_SIG, FD_RTNL, FD_NFT, FD_LINK, FD_CANARY, FD_DRAIN0, FD_PROC0 = FD_DRAIN0 + GW_MAX_DRAINING };

static void
loop(struct gw *gw, int sfd)
{
	struct pollfd pfd[FD_PROC0 + PROC_MAX];
	int i, timeout;

	while (!gw->quit) {
		pfd[FD_SIG] = (struct pollfd){ sfd, POLLIN, 0 };
		pfd[FD_RTNL] = (struct pollfd){ hostnet_fd(gw), POLLIN, 0 };
		pfd[FD_NFT] = (struct pollfd){ drift_fd(gw), POLLIN, 0 };
		pfd[FD_LINK] = (struct pollfd){ kwatch_fd(), POLLIN, 0 };
		pfd[FD_CANARY] = (struct pollfd){ canary_fd(), POLLIN, 0 };
		for (i = 0; i < GW_MAX_DRAINING; i++)
			pfd[FD_DRAIN0 + i] = (struct pollfd){ gw->draining[i].ipc,
			    POLLIN, 0 };
		for (i = 0; i < PROC_MAX; i++)
			pfd[FD_PROC0 + i] = (struct pollfd){ gw->procs[i].ipc,
			    POLLIN, 0 };
		timeout = canary_timeout(gw, drift_timeout(gw, ha_dup_timeout(gw,
		    egress_timeout(gw, grants_timeout(gw, proc_next_timeout(gw,
		    time(NULL)))))));
		i = metrics_next_timeout(gw, time(NULL));
		if (i != -1 && (timeout == -1 || i < timeout))
			timeout = i;
		if (poll(pfd, FD_PROC0 + PROC_MAX, timeout) == -1 &&
		    errno != EINTR)
			fatal("poll");
		if (pfd[FD_SIG].revents)
			on_signal(gw, sfd);
		if (pfd[FD_RTNL].revents)
			hostnet_readable(gw);
		if (pfd[FD_NFT].revents)
			drift_readable(gw);
		if (pfd[FD_LINK].revents)
			kwatch_readable(gw);
		if (pfd[FD_CANARY].revents)
			canary_readable(gw);
		for (i = 0; i < GW_MAX_DRAINING; i++)
			if (pfd[FD_DRAIN0 + i].revents && gw->draining[i].ipc != -1)
				proc_drain_readable(gw, i);
		for (i = 0; i < PROC_MAX; i++)
			if (pfd[FD_PROC0 + i].revents && gw->procs[i].ipc != -1)
				proc_ipc_readable(gw, (enum gw_proc_id)i);
		proc_tick(gw, time(NULL));
		metrics_tick(gw, time(NULL));
		grants_tick(gw);
		egress_tick(gw);
		ha_dup_tick(gw);
		drift_tick(gw);
		canary_tick(gw);
	}
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
	gw->cfg = net_config_load(gw->opts.conf, &errs);
	if (gw->cfg == NULL) {
		config_errors_print(stderr, &errs);
		log_warnx("%s: configuration invalid (%zu errors); not starting",
		    gw->opts.conf, errs.n);
		config_errors_free(&errs);
		return -1;
	}
	gw_log_warnings(gw->cfg, &errs);
	config_errors_free(&errs);
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
	if (policy_apply(gw, gw->cfg, err, sizeof(err)) == -1) {
		log_warnx("applying the policy failed: %s; not starting", err);
		return -1;
	}
	policy_promises_seed(gw);
	hostnet_start(gw);
	/* The network after the policy: forwarding is never on unfiltered. */
	net_walk(gw->cfg, true, &gw->net);
	net_log(&gw->net);
	audit_open(gw);
	journals_audit(gw, &refused);
	drift_start(gw);
	kwatch_start(gw);
	canary_start(gw);
	if (control_listen(gw) == -1 || reg_listen(gw) == -1 ||
	    harepl_listen(gw) == -1 || metrics_listen(gw) == -1)
		return -1;
	return 0;
}

int
gw_run(struct gw_opts *opts)
{
	static struct gw gw;
	int sfd;

	gw.opts = *opts;
	gw.auditfd = gw.ctlfd = gw.nlfd = -1;
	gw.dns_udp = gw.dns_tcp = gw.regfd = gw.metricsfd = gw.hafd = -1;
	gw.dns_udp6 = gw.dns_tcp6 = -1;
	gw.started = time(NULL);
	gw.on_ctl_msg = ctl_message;
	gw.on_audit_line = ctl_log_line;
	log_init("gatewayd", !opts->foreground, opts->verbose + 1);
	if (geteuid() != 0)
		log_warnx("not running as root: applying the policy will "
		    "probably fail");
	if ((sfd = ev_signals_fd(true, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		fatal("signalfd");
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
	proc_stop_all(&gw);
	ha_stop(&gw);
	hostnet_stop(&gw);
	drift_stop(&gw);
	kwatch_stop();
	canary_stop();
	ha_dup_stop(&gw);
	pool_close(&gw);
	egress_stop(&gw);
	audit_event(&gw, "stop", "policy", "left in place", NULL);
	control_unlink(&gw);
	audit_close(&gw);
	nftr_ruleset_free(gw.applied);
	nftr_ctx_free(gw.nft);
	config_free(gw.cfg);
	free(gw.dnsdrops);
	free(gw.hoststats);
	free(gw.cfgtext.text);
	free(gw.secret_ids);
	refused_free(&gw);
	grants_free(&gw);
	if (gw.regfd != -1)
		close(gw.regfd);
	if (gw.metricsfd != -1)
		close(gw.metricsfd);
	if (gw.hafd != -1)
		close(gw.hafd);
	metrics_free(gw.metrics);
	log_info("stopped; the policy stays in the kernel");
	return 0;
}
