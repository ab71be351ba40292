/*
 * parent_proc.c -- gatewayd's children: start, watch, restart with
 * backoff, and the parent's side of their IPC.
 *
 * Every message from a child is typed and size-checked by lib/ipc.c; a
 * child that sends anything malformed, or a message its role may not
 * send, is killed and logged (it is the sender that is broken or
 * compromised, never the parent).
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "control.h"
#include "register.h"
#include "gatewayd.h"
#include "secretfile.h"
#include "signer.h"
#include "ipc.h"
#include "metrics.h"
#include "nftrules.h"
#include "log.h"
#include "privdrop.h"

#define BACKOFF_MIN	1
#define BACKOFF_MAX	60
#define STABLE_AFTER	60	/* seconds up before backoff resets */


static int start_nflog(struct gw *, int ipc);
static int start_control(struct gw *, int ipc);
static int start_register(struct gw *, int ipc);
static int start_metrics(struct gw *, int ipc);
static void handle_audit(struct gw *, struct gw_proc *, const char *, size_t);
static void child_signals(void);
static void child_fds(int *, int);
static int start_exec(struct gw *, enum gw_proc_id, int ipc);
static int config_memfd(struct gw *);

static const struct role {
	const char	*name;
	int		(*start)(struct gw *, int ipc);
	unsigned	 may_send;	/* bit mask of IPC types */
} roles[PROC_MAX] = {
	[PROC_NFLOG] = { "nflog", start_nflog, 1u << IPC_AUDIT },
	[PROC_DNSD] = { "dnsd", NULL, (1u << IPC_AUDIT) | (1u << IPC_SET_ADD) |
	    (1u << IPC_DNS_DROPPED) | (1u << IPC_DNS_CONFIG_ACK) |
	    (1u << IPC_DNS_NAME) },
	[PROC_PROXY] = { "proxy", NULL, (1u << IPC_AUDIT) |
	    (1u << IPC_BUDGET_REQ) },
	[PROC_CONTROL] = { "control", start_control, (1u << IPC_CTL_REQ) |
	    (1u << IPC_CTL_GONE) },
	[PROC_REGISTER] = { "register", start_register, 1u << IPC_REG_REQ },
	[PROC_METRICS] = { "metrics", start_metrics, 0 },	/* sends nothing */
};

/* Every proxy worker has the proxy's role: the same name, the same
 * messages. */
static const struct role *
role(enum gw_proc_id id)
{
	return &roles[PROC_IS_PROXY(id) ? PROC_PROXY : id];
}

/* "proxy 1" for a worker, else the child's name: for the log. */
static const char *
label(struct gw *gw, const struct gw_proc *p)
{
	static char buf[32];
	int id = (int)(p - gw->procs);

	if (!PROC_IS_PROXY(id))
		return p->name;
	snprintf(buf, sizeof(buf), "proxy %d", id - PROC_PROXY);
	return buf;
}

/* The workers the configuration asks for are enabled, the rest not. */
static void
pool_enable(struct gw *gw)
{
	unsigned w;

	gw->nworkers = config_proxy_workers(gw->cfg);
	for (w = 0; w < GW_PROXY_MAX; w++)
		gw->procs[PROC_PROXY + w].enabled = !gw->opts.no_children &&
		    w < gw->nworkers;
}

void
proc_init(struct gw *gw)
{
	int i;

	for (i = 0; i < GW_MAX_DRAINING; i++) {
		gw->draining[i].pid = -1;
		gw->draining[i].ipc = -1;
	}
	for (i = 0; i < PROC_MAX; i++) {
		gw->procs[i].name = role((enum gw_proc_id)i)->name;
		gw->procs[i].pid = -1;
		gw->procs[i].ipc = -1;
		gw->procs[i].backoff_s = BACKOFF_MIN;
		gw->procs[i].enabled = !gw->opts.no_children;
	}
	gw->procs[PROC_NFLOG].enabled = true;	/* the audit needs it */
	gw->procs[PROC_CONTROL].enabled = true;	/* and so does ctl */
	/* Only a separate box with gateway.registration listens. */
	gw->procs[PROC_REGISTER].enabled = gw->regfd != -1;
	/* And only gateway.metrics.listen serves metrics. */
	gw->procs[PROC_METRICS].enabled = gw->metricsfd != -1;
	pool_enable(gw);
}

/* One secret's value, read here as root, to a proxy.  0 or -1. */
static int
send_secret(int fd, const struct moat_secret *s)
{
	static union {
		struct ipc_secret m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	char err[256];
	size_t len;
	int rc = -1;

	memset(&u.m, 0, sizeof(u.m));
	snprintf(u.m.name, sizeof(u.m.name), "%s", s->name);
	if (secret_file_read(s, u.m.value, &len, err, sizeof(err)) == -1)
		log_warnx("proxy: %s", err);
	else if (fd == -1)	/* only checked */
		rc = 0;
	else {
		u.m.len = (uint32_t)len;
		if ((rc = ipc_send(fd, IPC_SECRET, 0, &u.m,
		    sizeof(u.m) + len)) == -1)
			log_warn("proxy: sending secret %s", s->name);
	}
	explicit_bzero(&u, sizeof(u));
	return rc;
}

/*
 * The proxy's secret values: read here, as root, and sent at its start, in
 * the configuration's order.  The proxy never opens a secret file.
 */
static int
send_secrets(struct gw *gw, int fd)
{
	size_t i;

	for (i = 0; i < gw->cfg->nsecrets; i++)
		if (send_secret(fd, &gw->cfg->secrets[i]) == -1)
			return -1;
	return 0;
}

/*
 * What a proxy is started on besides its sandboxes and secrets: the rest
 * of the configuration (with the number of workers).  Secret values are
 * followed by each secret file's identity and age, one line each by name
 * (secret_ids), taken before its value is read, so a file changed
 * meanwhile only makes the next reload send it again.  No value is kept
 * here.
 */
static char *
proxy_basis(const struct moat_config *cfg)
{
	return config_text_but_sandboxes_secrets(cfg);
}

static char *
secret_ids(const struct moat_config *cfg)
{
	char *buf = NULL;
	size_t i, len = 0;
	struct stat st;
	FILE *fp;

	if ((fp = open_memstream(&buf, &len)) == NULL)
		fatalx("out of memory");
	for (i = 0; i < cfg->nsecrets; i++) {
		if (stat(cfg->secrets[i].file, &st) == -1)
			fprintf(fp, "%s -\n", cfg->secrets[i].name);
		else
			fprintf(fp, "%s %ju %ju %jd.%09ld %jd\n",
			    cfg->secrets[i].name, (uintmax_t)st.st_dev,
			    (uintmax_t)st.st_ino, (intmax_t)st.st_mtim.tv_sec,
			    st.st_mtim.tv_nsec, (intmax_t)st.st_size);
	}
	if (fclose(fp) != 0)
		fatalx("out of memory");
	return buf;
}

/* Does had (secret_ids) hold the same line for secret name as ids? */
static bool
same_id(const char *ids, const char *had, const char *name)
{
	size_t nl = strlen(name), la, lb;
	const char *a = NULL, *b = NULL, *p;

	for (p = ids; *p != '\0'; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0'))
		if (strncmp(p, name, nl) == 0 && p[nl] == ' ')
			a = p;
	for (p = had; *p != '\0'; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0'))
		if (strncmp(p, name, nl) == 0 && p[nl] == ' ')
			b = p;
	if (a == NULL || b == NULL)
		return false;
	la = strcspn(a, "\n");
	lb = strcspn(b, "\n");
	return la == lb && memcmp(a, b, la) == 0;
}

/* Can every secret that is new or whose file changed since the worker
 * got its values be read now?  If not, the worker drains instead, as for
 * any reload it cannot take in place. */
static bool
changed_secrets_readable(const struct gw *gw, const char *ids,
    const char *had)
{
	size_t i;

	for (i = 0; i < gw->cfg->nsecrets; i++)
		if (!same_id(ids, had, gw->cfg->secrets[i].name) &&
		    send_secret(-1, &gw->cfg->secrets[i]) == -1)
			return false;
	return true;
}

static void
proc_start(struct gw *gw, enum gw_proc_id id)
{
	struct gw_proc *p = &gw->procs[id];
	int fds[2];
	pid_t pid;

	if (ipc_pair(fds) == -1) {
		log_warn("%s: socketpair", p->name);
		goto later;
	}
	pid = role(id)->start ? role(id)->start(gw, fds[1]) :
	    start_exec(gw, id, fds[1]);
	close(fds[1]);
	if (pid <= 0) {
		close(fds[0]);
		goto later;
	}
	p->pid = pid;
	p->ipc = fds[0];
	p->started = time(NULL);
	p->restart_at = 0;
	log_info("%s started, pid %d", label(gw, p), (int)pid);
	if (PROC_IS_PROXY(id)) {
		free(p->basis);
		free(p->defs);
		free(p->secret_ids);
		p->basis = proxy_basis(gw->cfg);
		p->defs = config_text_but_sandboxes(gw->cfg);
		p->secret_ids = secret_ids(gw->cfg);
	}
	if (PROC_IS_PROXY(id) && send_secrets(gw, fds[0]) == -1)
		proc_kill(gw, id, "its secrets could not be sent");
	return;
later:
	p->restart_at = time(NULL) + p->backoff_s;
	p->backoff_s = p->backoff_s * 2 > BACKOFF_MAX ? BACKOFF_MAX :
	    p->backoff_s * 2;
}

/* In a new child: the parent's blocked signals (kept for its signalfd)
 * and ignored SIGPIPE must not be inherited, or SIGTERM would not stop
 * the child. */
static void
child_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
}

void
proc_start_all(struct gw *gw)
{
	int i;

	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].enabled && gw->procs[i].pid <= 0)
			proc_start(gw, (enum gw_proc_id)i);
}

void
proc_kill(struct gw *gw, enum gw_proc_id id, const char *why)
{
	struct gw_proc *p = &gw->procs[id];

	if (p->pid <= 0)
		return;
	log_warnx("%s (pid %d): %s; killing it", label(gw, p), (int)p->pid,
	    why);
	audit_event(gw, "child-killed", "child", p->name, "reason", why, NULL);
	kill(p->pid, SIGKILL);
	if (p->ipc != -1)
		close(p->ipc);
	p->ipc = -1;
}

void
proc_restart(struct gw *gw, enum gw_proc_id id)
{
	struct gw_proc *p = &gw->procs[id];

	if (p->pid <= 0)
		return;
	p->expected = true;
	kill(p->pid, SIGTERM);
}

void
proc_stop_all(struct gw *gw)
{
	int i, status;

	for (i = 0; i < GW_MAX_DRAINING; i++)
		if (gw->draining[i].pid > 0) {
			kill(gw->draining[i].pid, SIGKILL);
			waitpid(gw->draining[i].pid, &status, 0);
			gw->draining[i].pid = -1;
		}

	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].pid > 0)
			kill(gw->procs[i].pid, SIGTERM);
	for (i = 0; i < PROC_MAX; i++) {
		if (gw->procs[i].pid <= 0)
			continue;
		/* Children get two seconds to go, then they are killed. */
		for (int t = 0; t < 20; t++) {
			if (waitpid(gw->procs[i].pid, &status, WNOHANG) != 0)
				break;
			usleep(100000);
			if (t == 19) {
				kill(gw->procs[i].pid, SIGKILL);
				waitpid(gw->procs[i].pid, &status, 0);
			}
		}
		gw->procs[i].pid = -1;
		if (gw->procs[i].ipc != -1)
			close(gw->procs[i].ipc);
		gw->procs[i].ipc = -1;
	}
}

void
proc_reaped(struct gw *gw, pid_t pid, int status)
{
	struct gw_proc *p = NULL;
	char how[64], next[16], worker[16];
	time_t now = time(NULL);
	int i;

	for (i = 0; i < GW_MAX_DRAINING; i++)
		if (gw->draining[i].pid == pid) {	/* an old proxy is done */
			if (gw->draining[i].ipc != -1)
				close(gw->draining[i].ipc);
			gw->draining[i].pid = -1;
			gw->draining[i].ipc = -1;
			log_info("proxy worker %d (pid %d) finished draining",
			    gw->draining[i].worker, (int)pid);
			return;
		}
	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].pid == pid)
			p = &gw->procs[i];
	if (p == NULL)
		return;
	if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "killed by signal %d",
		    WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "exited with status %d",
		    WEXITSTATUS(status));
	if (now - p->started >= STABLE_AFTER)
		p->backoff_s = BACKOFF_MIN;
	p->pid = -1;
	if (p->ipc != -1)
		close(p->ipc);
	p->ipc = -1;
	if (gw->quit)
		return;
	if (p->expected) {
		p->expected = false;
		p->restart_at = now;
		return;
	}
	p->restarts++;
	p->restart_at = now + p->backoff_s;
	snprintf(next, sizeof(next), "%u", p->backoff_s);
	log_warnx("%s (pid %d) %s; restarting in %us", label(gw, p), (int)pid,
	    how, p->backoff_s);
	snprintf(worker, sizeof(worker), "%d", (int)(p - gw->procs - PROC_PROXY));
	audit_event(gw, "child-restart", "child", p->name, "status", how,
	    "restart_in_s", next, PROC_IS_PROXY(p - gw->procs) ? "worker" : NULL,
	    worker, NULL);
	p->backoff_s = p->backoff_s * 2 > BACKOFF_MAX ? BACKOFF_MAX :
	    p->backoff_s * 2;
}

void
proc_tick(struct gw *gw, time_t now)
{
	int i;

	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].enabled && gw->procs[i].pid <= 0 &&
		    gw->procs[i].restart_at != 0 && now >= gw->procs[i].restart_at)
			proc_start(gw, (enum gw_proc_id)i);
}

int
proc_next_timeout(struct gw *gw, time_t now)
{
	int i, best = -1, ms;

	for (i = 0; i < PROC_MAX; i++) {
		if (!gw->procs[i].enabled || gw->procs[i].pid > 0 ||
		    gw->procs[i].restart_at == 0)
			continue;
		ms = gw->procs[i].restart_at <= now ? 0 :
		    (int)(gw->procs[i].restart_at - now) * 1000;
		if (best == -1 || ms < best)
			best = ms;
	}
	return best;
}

/* A free draining slot, or the oldest drain's, ended. */
static int
drain_slot(struct gw *gw)
{
	int i, old = 0;

	for (i = 0; i < GW_MAX_DRAINING; i++) {
		if (gw->draining[i].pid <= 0)
			return i;
		if (gw->draining[i].since < gw->draining[old].since)
			old = i;
	}
	kill(gw->draining[old].pid, SIGKILL);
	if (gw->draining[old].ipc != -1)
		close(gw->draining[old].ipc);
	return old;
}

/* IPC_RELOAD to a proxy with the new configuration attached (a memfd of
 * its own: a shared one would share its read offset); without one if the
 * memfd cannot be made, which only drains. */
static int
send_reload(struct gw *gw, int ipc, uint32_t how)
{
	int conf = config_memfd(gw), rc;

	if (conf == -1)
		return ipc_send(ipc, IPC_RELOAD, IPC_RELOAD_DRAIN, NULL, 0);
	rc = ipc_send_fds(ipc, IPC_RELOAD, how, NULL, 0, &conf, 1);
	close(conf);
	return rc;
}

/*
 * A reload reaches a worker: with the new configuration it cuts every open
 * connection the new one no longer allows.  When only sandboxes and
 * secrets changed for it (proxy_basis: the rest of the configuration, the
 * number of workers with it) it goes on in place, keeping its connections
 * and its signer.  Each secret that is new or whose file changed
 * (secret_ids) is sent to it first, as its value (IPC_SECRET); the worker
 * keeps them aside and takes them with the reload, cutting only the
 * connections that could carry an old value or binding (reconfigure in
 * moat-proxy).  Otherwise it drains them and finishes, and a new one takes
 * its listening socket at once (proc_tick).
 */
static void
reload_worker(struct gw *gw, enum gw_proc_id id, const char *basis,
    const char *defs, const char *ids)
{
	struct gw_proc *p = &gw->procs[id];
	bool keep;
	size_t i, nsent = 0;
	int slot;

	if (p->pid > 0) {
		keep = p->enabled && p->basis != NULL && p->secret_ids != NULL &&
		    strcmp(basis, p->basis) == 0 &&
		    changed_secrets_readable(gw, ids, p->secret_ids);
		for (i = 0; keep && i < gw->cfg->nsecrets; i++) {
			if (same_id(ids, p->secret_ids, gw->cfg->secrets[i].name))
				continue;
			if (send_secret(p->ipc, &gw->cfg->secrets[i]) == -1) {
				proc_kill(gw, id, "a secret's new value could "
				    "not be sent");
				return;
			}
			nsent++;
		}
		if (send_reload(gw, p->ipc, keep ? IPC_RELOAD_KEEP :
		    IPC_RELOAD_DRAIN) == -1)
			kill(p->pid, SIGTERM);
		else if (keep) {
			free(p->secret_ids);
			p->secret_ids = xstrdup(ids);
			if (nsent > 0)
				log_info("%s: %zu new secret value(s) sent, "
				    "reconfigured in place", label(gw, p),
				    nsent);
			else if (p->defs == NULL || strcmp(defs, p->defs) != 0)
				log_info("%s: secret definitions changed, "
				    "reconfigured in place", label(gw, p));
			else
				log_info("%s: only sandboxes changed, "
				    "reconfigured in place", label(gw, p));
			free(p->defs);
			p->defs = xstrdup(defs);
			return;
		}
		slot = drain_slot(gw);
		gw->draining[slot].pid = p->pid;
		gw->draining[slot].ipc = p->ipc;
		gw->draining[slot].worker = (int)(id - PROC_PROXY);
		gw->draining[slot].since = time(NULL);
		p->pid = -1;
		p->ipc = -1;
	}
	p->restart_at = p->enabled ? time(NULL) : 0;
}

/*
 * dnsd takes a reload in place: the new configuration goes to it in a
 * fresh sealed memfd, as at its start, and it swaps its policy while
 * keeping its cache and what it knows of the sets wherever the reload
 * left them true (IPC_DNS_CONFIG).  A dnsd that cannot be told, or that
 * answers it could not (handle_dns_config_ack), is restarted with it.
 */
static void
dnsd_reconfigure(struct gw *gw)
{
	struct gw_proc *p = &gw->procs[PROC_DNSD];
	struct ipc_dns_config m;
	int fd;

	if (p->pid <= 0)
		return;		/* it starts with the new configuration */
	if (p->ipc == -1 || (fd = config_memfd(gw)) == -1) {
		proc_restart(gw, PROC_DNSD);
		return;
	}
	if (++gw->dns_gen == 0)
		gw->dns_gen = 1;
	m.gen = gw->dns_gen;
	if (ipc_send_fds(p->ipc, IPC_DNS_CONFIG, 0, &m, sizeof(m), &fd,
	    1) == -1) {
		log_warn("dnsd: sending the new configuration; restarting it");
		proc_restart(gw, PROC_DNSD);
	}
	close(fd);
}

static void
handle_dns_config_ack(struct gw *gw, const struct ipc_dns_config_ack *m)
{
	if (m->status == 0) {
		log_info("dnsd took the new configuration in place");
		if (m->gen == gw->dns_gen)
			policy_dns_thaw(gw);
		return;
	}
	/* A later configuration is on its way; its answer decides. */
	if (m->gen != gw->dns_gen)
		return;
	log_warnx("dnsd could not take the new configuration; restarting it");
	proc_restart(gw, PROC_DNSD);
}

static void reload_children(struct gw *, bool nflog, bool dnsd);

void
proc_reload(struct gw *gw)
{
	reload_children(gw, true, true);
}

/* One sandbox's allow list to dnsd alone; -1 if it does not fit one
 * message (then the whole configuration goes). */
static int
dnsd_allow(struct gw *gw, const char *sandbox)
{
	static union {
		struct ipc_dns_allow m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	const struct moat_sandbox *sb = config_sandbox_by_name(gw->cfg,
	    sandbox);
	size_t i, off = 0, len;

	if (sb == NULL || sb->allow.n > IPC_DNS_ALLOW_MAX)
		return -1;
	memset(&u.m, 0, sizeof(u.m));
	for (i = 0; i < sb->allow.n; i++) {
		len = strlen(sb->allow.v[i]) + 1;
		if (sizeof(u.m) + off + len > sizeof(u.raw))
			return -1;
		memcpy(u.m.names + off, sb->allow.v[i], len);
		off += len;
	}
	if (++gw->dns_gen == 0)
		gw->dns_gen = 1;
	u.m.gen = gw->dns_gen;
	snprintf(u.m.sandbox, sizeof(u.m.sandbox), "%s", sb->name);
	u.m.len = (uint32_t)off;
	if (ipc_send(gw->procs[PROC_DNSD].ipc, IPC_DNS_ALLOW, 0, &u.m,
	    sizeof(u.m) + off) == -1) {
		log_warn("dnsd: sending %s's allow list; restarting it", sandbox);
		proc_restart(gw, PROC_DNSD);
	} else
		log_info("dnsd: sandbox %s's allow list sent alone (%zu names)",
		    sb->name, sb->allow.n);
	return 0;
}

/* Only sandboxes' allow lists changed, in gw->cfg itself (a grant): the
 * nflog reader (which knows sandboxes by address) is left alone; dnsd
 * takes each sandbox's list alone, and every proxy worker the new
 * configuration in place. */
void
proc_reload_sandboxes(struct gw *gw, const char *const *names, size_t n)
{
	struct gw_proc *p = &gw->procs[PROC_DNSD];
	size_t i;

	gw->cfgtext.of = NULL;		/* the same struct, changed */
	for (i = 0; p->pid > 0 && p->ipc != -1 && i < n; i++)
		if (dnsd_allow(gw, names[i]) == -1) {
			dnsd_reconfigure(gw);
			break;
		}
	if (p->pid > 0 && p->ipc == -1)
		proc_restart(gw, PROC_DNSD);
	reload_children(gw, false, false);
}

static void
reload_children(struct gw *gw, bool nflog, bool dnsd)
{
	char *basis, *defs, *ids;
	int w;

	if (dnsd)
		dnsd_reconfigure(gw);
	if (nflog)
		proc_restart(gw, PROC_NFLOG);
	if (gw->opts.no_children)
		return;
	pool_enable(gw);
	/* Workers still draining cut what the new configuration refuses. */
	for (w = 0; w < GW_MAX_DRAINING; w++)
		if (gw->draining[w].pid > 0 && gw->draining[w].ipc != -1)
			(void)send_reload(gw, gw->draining[w].ipc,
			    IPC_RELOAD_DRAIN);
	basis = proxy_basis(gw->cfg);	/* the same for every worker */
	defs = config_text_but_sandboxes(gw->cfg);	/* for the log */
	ids = secret_ids(gw->cfg);
	for (w = 0; w < GW_PROXY_MAX; w++)
		reload_worker(gw, (enum gw_proc_id)(PROC_PROXY + w), basis,
		    defs, ids);
	free(basis);
	free(defs);
	free(ids);
}

void
proc_drain_readable(struct gw *gw, int slot)
{
	static char buf[IPC_MAX_PAYLOAD + 1];
	struct ipc_hdr h;
	char err[256];
	ssize_t n;

	n = ipc_recv(gw->draining[slot].ipc, &h, buf, IPC_MAX_PAYLOAD, err,
	    sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && h.type == IPC_AUDIT) {
		handle_audit(gw, &gw->procs[PROC_PROXY +
		    gw->draining[slot].worker], buf, (size_t)n);
		return;
	}
	if (n > 0 && h.type == IPC_BUDGET_REQ) {	/* a draining proxy's */
		struct ipc_budget_req m;

		memcpy(&m, buf, sizeof(m));
		gw_budget_answer(gw, gw->draining[slot].ipc, h.id, &m);
		return;
	}
	if (n == -2 || n > 0)		/* malformed, or not its to send */
		kill(gw->draining[slot].pid, SIGKILL);
	close(gw->draining[slot].ipc);
	gw->draining[slot].ipc = -1;
}

/* dnsd asks to open addresses for a sandbox: the same admission check
 * dnsd's own parent applies (admit_set_add: only that sandbox's own set,
 * only in allowlist mode, only public IPv4, the timeout capped).  No
 * timeout sent ends before one this parent already promised for the same
 * address (promise.h), whatever dnsd remembers. */
static void
handle_set_add(struct gw *gw, struct gw_proc *p, uint32_t id,
    const struct ipc_set_add *m)
{
	struct nftr_allow_stats st = { 0, 0 };
	struct ipc_set_ack ack;

	if (gw->promises == NULL)
		gw->promises = promises_new(PROMISE_MAX, PROMISE_PER_SANDBOX);
	ack.status = nftr_allow_add(gw->nft, gw->promises, gw->cfg, m->sandbox,
	    m->addr, m->naddr, m->timeout_ms, policy_dns_frozen(gw, m->sandbox),
	    gw_mono_ms(), &st);
	gw->set_adds += st.added;
	gw->set_refused += st.refused;
	if (ipc_send(p->ipc, IPC_SET_ACK, id, &ack, sizeof(ack)) == -1)
		log_warn("%s: set-ack", p->name);
}

/* Stamp the source so that a child cannot pass itself off as another: a
 * child's own "source" key is dropped when it names the child itself and
 * renamed otherwise. */
static void
handle_audit(struct gw *gw, struct gw_proc *p, const char *json, size_t len)
{
	char self[64], stamp[64], *body, *line, *k;
	size_t n;

	/* A proxy worker's lines say which worker: "source":"proxy","worker":N */
	if (PROC_IS_PROXY(p - gw->procs))
		snprintf(stamp, sizeof(stamp), "\"%s\",\"worker\":%d", p->name,
		    (int)(p - gw->procs - PROC_PROXY));
	else
		snprintf(stamp, sizeof(stamp), "\"%s\"", p->name);
	n = (size_t)snprintf(self, sizeof(self), "{\"source\":\"%s\",", p->name);
	if (len > n && strncmp(json, self, n) == 0) {
		json += n - 1;		/* keep a "{" */
		len -= n - 1;
	}
	body = xmalloc(len + 1);
	memcpy(body, json, len);
	body[len] = '\0';
	while ((k = strstr(body, "\"source\":")) != NULL)
		memcpy(k + 1, "SOURCE", 6);	/* not ours to say */
	while ((k = strstr(body, "\"worker\":")) != NULL)
		memcpy(k + 1, "WORKER", 6);
	if (len <= 2)	/* "{}" */
		xasprintf(&line, "{\"source\":%s}", stamp);
	else
		xasprintf(&line, "{\"source\":%s,%s", stamp, body + 1);
	audit_write_to(gw, line, AUDIT_SYSLOG_LIMITED);	/* mostly refusals */
	if (gw->metrics != NULL)
		metrics_count(gw->metrics, p->name, body, len);
	refused_audit(gw, line);
	free(line);
	free(body);
}

/* Queries dnsd dropped over a sandbox's rate: kept per sandbox name for
 * `ctl counters`, for the sandboxes the configuration has. */
static void
handle_dns_dropped(struct gw *gw, const struct ipc_dns_dropped *m)
{
	size_t i;

	if (config_sandbox_by_name(gw->cfg, m->sandbox) == NULL)
		return;
	for (i = 0; i < gw->ndnsdrops; i++)
		if (strcmp(gw->dnsdrops[i].sandbox, m->sandbox) == 0)
			break;
	if (i == gw->ndnsdrops) {
		if (gw->ndnsdrops >= MOAT_MAX_SANDBOXES)
			return;
		gw->dnsdrops = xreallocarray(gw->dnsdrops, gw->ndnsdrops + 1,
		    sizeof(*gw->dnsdrops));
		snprintf(gw->dnsdrops[i].sandbox, sizeof(gw->dnsdrops[i].sandbox),
		    "%s", m->sandbox);
		gw->dnsdrops[i].count = 0;
		gw->ndnsdrops++;
	}
	gw->dnsdrops[i].count += m->count;
}

/* A request from the control process must come with the client's
 * connection and exactly the descriptors it says the client attached. */
static bool
fds_fit(const struct ipc_hdr *h, const void *payload, size_t nfds)
{
	if (h->type == IPC_CTL_REQ)
		return nfds == 1U + ((const struct ipc_ctl_req *)payload)->nfds;
	return nfds == 0;
}

void
proc_ipc_readable(struct gw *gw, enum gw_proc_id id)
{
	struct gw_proc *p = &gw->procs[id];
	static union {
		struct ipc_set_add m;
		char raw[IPC_MAX_PAYLOAD + 1];
	} buf;
	int fds[IPC_MAX_FDS];
	struct ipc_hdr h;
	char err[256];
	size_t nfds, i;
	ssize_t n;

	n = ipc_recv_fds(p->ipc, &h, &buf, IPC_MAX_PAYLOAD, fds,
	    id == PROC_CONTROL ? IPC_MAX_FDS : 0, &nfds, err, sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if ((n == 0 && h.type == 0) || n == -1) {
		/* the child went away; SIGCHLD follows */
		close(p->ipc);
		p->ipc = -1;
		return;
	}
	if (n == -2) {
		proc_kill(gw, id, err);
		return;
	}
	if (!(role(id)->may_send & (1u << h.type)) ||
	    !fds_fit(&h, buf.raw, nfds)) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		snprintf(err, sizeof(err), "sent %s, which its role may not "
		    "(or with the wrong descriptors)", ipc_type_name(h.type));
		proc_kill(gw, id, err);
		return;
	}
	if (h.type == IPC_SET_ADD)
		handle_set_add(gw, p, h.id, &buf.m);
	else if (h.type == IPC_DNS_DROPPED)
		handle_dns_dropped(gw, (const struct ipc_dns_dropped *)buf.raw);
	else if (h.type == IPC_DNS_CONFIG_ACK)
		handle_dns_config_ack(gw, (const struct ipc_dns_config_ack *)
		    (void *)buf.raw);
	else if (h.type == IPC_AUDIT)
		handle_audit(gw, p, buf.raw, (size_t)n);
	else if (h.type == IPC_DNS_NAME)
		refused_dns_name(gw, (const struct ipc_dns_name *)(void *)
		    buf.raw);
	else if (h.type == IPC_CTL_REQ || h.type == IPC_CTL_GONE)
		gw->on_ctl_msg(gw, &h, buf.raw, (size_t)n, fds, nfds);
	else if (h.type == IPC_BUDGET_REQ)
		gw_budget_answer(gw, p->ipc, h.id,
		    (const struct ipc_budget_req *)(void *)buf.raw);
	else if (h.type == IPC_REG_REQ)
		reg_message(gw, p->ipc, (const struct ipc_reg_req *)(void *)
		    buf.raw);
}

/* --- starting ---------------------------------------------------------- */

static int
start_nflog(struct gw *gw, int ipc)
{
	pid_t pid, parent = getpid();

	if (gw->nlfd == -1) {
		gw->nlfd = nflog_open(gw->cfg->gw.nflog_group);
		if (gw->nlfd == -1)
			return -1;
	}
	if ((pid = fork()) == -1) {
		log_warn("nflog: fork");
		return -1;
	}
	if (pid == 0) {
		int keep[2] = { gw->nlfd, ipc };

		child_signals();
		/* Only the nflog socket and the IPC end survive: an inherited
		 * nf_tables socket would carry root's rights into the child. */
		child_fds(keep, 2);
		nflog_child(3, 4, gw->cfg, parent);
	}
	return pid;
}

/* The control process gets the listening control socket, bound here,
 * and its IPC end; nothing else. */
static int
start_control(struct gw *gw, int ipc)
{
	pid_t pid, parent = getpid();

	if ((pid = fork()) == -1) {
		log_warn("control: fork");
		return -1;
	}
	if (pid == 0) {
		int keep[2] = { gw->ctlfd, ipc };

		child_signals();
		child_fds(keep, 2);
		control_main(3, 4, parent);
	}
	/* A new control process knows none of the old one's clients. */
	gw->ctl_gen++;
	gw->ctl_followers = 0;
	return pid;
}

/* The registration process gets the listening socket the parent bound,
 * its IPC end and the box's certificate and key in memory, read here;
 * the parent's copy is wiped at once. */
static int
start_register(struct gw *gw, int ipc)
{
	struct reg_pem pem;
	pid_t pid, parent = getpid();

	if (reg_pem_read(gw, &pem) == -1)
		return -1;
	if ((pid = fork()) == -1)
		log_warn("register: fork");
	if (pid == 0) {
		int keep[2] = { gw->regfd, ipc };

		child_signals();
		child_fds(keep, 2);
		regproc_main(3, 4, parent, &pem);
	}
	reg_pem_wipe(&pem);
	return pid;
}

/* The metrics process gets the listening socket the parent bound on the
 * management network, and each rendering as a sealed memory file. */
static int
start_metrics(struct gw *gw, int ipc)
{
	pid_t pid, parent = getpid();

	if ((pid = fork()) == -1)
		log_warn("metrics: fork");
	if (pid == 0) {
		int keep[2] = { gw->metricsfd, ipc };

		child_signals();
		child_fds(keep, 2);
		metrics_main(3, 4, parent);
	}
	gw->metrics_sent = 0;	/* a new one has no rendering yet */
	return pid;
}

/* Put fds at 3, 4, ... in the child, close everything else. */
static void
child_fds(int *fds, int n)
{
	int i, high[8];

	for (i = 0; i < n; i++)
		high[i] = fcntl(fds[i], F_DUPFD, 64);
	for (i = 0; i < n; i++) {
		dup2(high[i], 3 + i);	/* dup2 clears close-on-exec */
		close(high[i]);
	}
	close_range((unsigned)(3 + n), ~0U, 0);
}

/* A socket on the gateway's sandbox-side address, bound once by the
 * parent (port 53 needs privilege the children do not have) and handed to
 * every incarnation of the child. */
static int
bound_socket(struct gw *gw, int type, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_to_sockaddr(&gw->cfg->gw.address, port, &ss);
	int fd, one = 1;

	/* dnsd's are made as its user: the policy knows its answers by uid. */
	if ((fd = socket_as(port == 53 ? "moat-dns" : NULL, AF_INET,
	    type | SOCK_CLOEXEC)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    (type == SOCK_STREAM && listen(fd, 1024) == -1)) {
		log_warn("bind %s port %u", type == SOCK_STREAM ? "tcp" : "udp",
		    port);
		close(fd);
		return -1;
	}
	return fd;
}

static int
ensure_sockets(struct gw *gw, enum gw_proc_id id)
{
	if (id == PROC_DNSD) {
		if (gw->dns_udp == -1)
			gw->dns_udp = bound_socket(gw, SOCK_DGRAM, 53);
		if (gw->dns_tcp == -1)
			gw->dns_tcp = bound_socket(gw, SOCK_STREAM, 53);
		return gw->dns_udp == -1 || gw->dns_tcp == -1 ? -1 : 0;
	}
	return pool_sockets(gw);
}

/*
 * The proxy's signer: the CA key is read here, forked into the signer
 * and freed at once, so that of gatewayd's processes only the signer
 * holds it.  A new signer comes with every new proxy; the old one exits
 * when its proxy closes their socket.
 */
static int
start_signer(struct gw *gw, unsigned w, int *fd)
{
	struct ca ca;
	pid_t pid;

	if (ca_open(gw->cfg->gw.state_dir, &ca) == -1)
		return -1;
	pid = signer_fork(&ca, SIGNER_USER, fd);
	ca_close(&ca);
	if (pid == -1)
		return -1;
	gw->signer_pid[w] = pid;
	log_info("signer of proxy worker %u started, pid %d", w, (int)pid);
	return 0;
}

/*
 * The configuration a child runs with: the parent's own, validated and
 * normalised (every sandbox inline), in a sealed memfd.  The child reads
 * it from there and never opens /etc/moat, so it cannot see a file newer
 * than the one the parent checked, and its root start-up parses nothing
 * a group member wrote.  Each receiver gets a memfd of its own (a shared
 * one shares its read offset), but the text is printed once per
 * configuration: at 5,000 sandboxes a print takes about 11 ms, and a
 * reload tells dnsd and every proxy worker, draining ones included.
 */
static const char *
config_text(struct gw *gw, size_t *len)
{
	FILE *fp;

	/* Keyed on the reload count too: a later configuration can be
	 * allocated where a freed one was. */
	if (gw->cfgtext.text == NULL || gw->cfgtext.of != gw->cfg ||
	    gw->cfgtext.reloads != gw->reloads) {
		free(gw->cfgtext.text);
		gw->cfgtext.text = NULL;
		if ((fp = open_memstream(&gw->cfgtext.text,
		    &gw->cfgtext.len)) == NULL)
			return NULL;
		config_print(fp, gw->cfg);
		if (fclose(fp) != 0) {
			free(gw->cfgtext.text);
			gw->cfgtext.text = NULL;
			return NULL;
		}
		gw->cfgtext.of = gw->cfg;
		gw->cfgtext.reloads = gw->reloads;
	}
	*len = gw->cfgtext.len;
	return gw->cfgtext.text;
}

static int
config_memfd(struct gw *gw)
{
	const char *text;
	size_t len;

	if ((text = config_text(gw, &len)) == NULL)
		return -1;
	return gw_sealed_memfd("moat.conf", text, len);
}

/* text in a memory file sealed against every change, read from its
 * start: what a child gets cannot change under it, nor can it write. */
int
gw_sealed_memfd(const char *name, const char *text, size_t len)
{
	size_t off = 0;
	ssize_t n;
	int fd;

	if ((fd = memfd_create(name, MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1)
		return -1;
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == -1 ||
	    lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
start_exec(struct gw *gw, enum gw_proc_id id, int ipc)
{
	char prog[1024], *argv[28];
	int argc = 0, fds[4], nfds = 0, signer = -1, conf;
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/%s", gw->opts.bindir,
	    id == PROC_DNSD ? "dnsd" : "moat-proxy");
	if (access(prog, X_OK) == -1) {
		log_warn("%s: cannot run %s", gw->procs[id].name, prog);
		return -1;
	}
	if (ensure_sockets(gw, id) == -1)
		return -1;
	if (id == PROC_DNSD)
		policy_dns_thaw(gw);	/* it starts with the config */
	if ((conf = config_memfd(gw)) == -1) {
		log_warn("%s: configuration memfd", gw->procs[id].name);
		return -1;
	}
	fds[nfds++] = ipc;				/* fd 3 */
	argv[argc++] = prog;
	argv[argc++] = "-d";
	argv[argc++] = "-c";
	argv[argc++] = (char *)gw->cfg->path;
	argv[argc++] = "--ipc-fd";
	argv[argc++] = "3";
	argv[argc++] = id == PROC_DNSD ? "-u" : "--user";
	argv[argc++] = id == PROC_DNSD ? "moat-dns" : "moat-proxy";
	if (id == PROC_DNSD) {
		fds[nfds++] = gw->dns_udp;		/* fd 4 */
		fds[nfds++] = gw->dns_tcp;		/* fd 5 */
		argv[argc++] = "--udp-fd";
		argv[argc++] = "4";
		argv[argc++] = "--tcp-fd";
		argv[argc++] = "5";
	} else {
		if (start_signer(gw, id - PROC_PROXY, &signer) == -1) {
			close(conf);
			return -1;
		}
		fds[nfds++] = gw->proxy_fds[id - PROC_PROXY];	/* fd 4 */
		fds[nfds++] = signer;			/* fd 5 */
		argv[argc++] = "--listen-fd";
		argv[argc++] = "4";
		argv[argc++] = "--signer-fd";
		argv[argc++] = "5";
		if (gw->opts.upstream_ca != NULL) {
			argv[argc++] = "--upstream-ca";
			argv[argc++] = (char *)gw->opts.upstream_ca;
		}
	}
	fds[nfds++] = conf;				/* fd 6 */
	argv[argc++] = "--config-fd";
	argv[argc++] = "6";
	argv[argc] = NULL;
	if ((pid = fork()) == -1)
		log_warn("%s: fork", gw->procs[id].name);
	if (pid == 0) {
		child_signals();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		child_fds(fds, nfds);
		execv(prog, argv);
		_exit(127);
	}
	if (signer != -1)
		close(signer);	/* the signer ends when the proxy does */
	close(conf);
	return pid;
}
