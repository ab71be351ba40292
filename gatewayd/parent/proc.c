/*
 * parent/proc.c -- gatewayd's children: start, watch, restart with
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
#include "../control/control.h"
#include "../nflog/nflog.h"
#include "../harepl/harepl.h"
#include "../ha_arp/ha_arp.h"
#include "../register/register.h"
#include "gw.h"
#include "proc.h"
#include "reload.h"
#include "dnsd.h"
#include "proxy.h"
#include "audit.h"
#include "reg.h"
#include "ctl.h"
#include "policy.h"
#include "metrics.h"
#include "ha.h"
#include "secretfile.h"
#include "../signer/signer.h"
#include "ipc.h"
#include "../metrics/metrics.h"
#include "web.h"
#include "nftrules.h"
#include "ev.h"
#include "log.h"
#include "privdrop.h"
#include "sockmap.h"

#define BACKOFF_MIN	1
#define BACKOFF_MAX	60
#define STABLE_AFTER	60	/* seconds up before backoff resets */


static int start_nflog(struct gw *, int ipc);
static int start_control(struct gw *, int ipc);
static int start_register(struct gw *, int ipc);
static int start_metrics(struct gw *, int ipc);
static int start_ha_recv(struct gw *, int ipc);
static int start_ha_send(struct gw *, int ipc);
static int start_ha_arp(struct gw *, int ipc);
static int start_web(struct gw *, int ipc);
static void child_signals(void);
static void child_fds(int *, int);
static int start_exec(struct gw *, enum gw_proc_id, int ipc);

static gw_dispatch_fn audit_dispatch, control_dispatch;

/* Each child's role: how it starts (NULL: exec'ed, start_exec), which
 * messages it may send (anything else gets it killed), and the one
 * function that handles them, next to the code that speaks to it. */
static const struct role {
	const char	*name;
	int		(*start)(struct gw *, int ipc);
	uint64_t	 may_send;	/* bit mask of IPC types */
	gw_dispatch_fn	*dispatch;
} roles[PROC_MAX] = {
	[PROC_NFLOG] = { "nflog", start_nflog, 1u << IPC_AUDIT,
	    audit_dispatch },
	[PROC_DNSD] = { "dnsd", NULL, (1u << IPC_AUDIT) | (1u << IPC_SET_ADD) |
	    (1u << IPC_DNS_DROPPED) | (1u << IPC_CONF_ACK) |
	    (1u << IPC_DNS_NAME), dnsd_dispatch },
	[PROC_PROXY] = { "proxy", NULL, (1u << IPC_AUDIT) |
	    (1u << IPC_BUDGET_REQ) | (UINT64_C(1) << IPC_PROXY_TLS),
	    proxy_dispatch },
	[PROC_CONTROL] = { "control", start_control, (1u << IPC_CTL_REQ) |
	    (1u << IPC_CTL_GONE), control_dispatch },
	[PROC_REGISTER] = { "register", start_register, 1u << IPC_REG_REQ,
	    reg_dispatch },
	[PROC_METRICS] = { "metrics", start_metrics, 0, NULL },	/* sends nothing */
	[PROC_HA_RECV] = { "ha-recv", start_ha_recv, (1u << IPC_REG_REQ) |
	    (1u << IPC_SET_ADD) | (1u << IPC_HA_SPENT) | (1u << IPC_HA_FLUSH) |
	    (1u << IPC_HA_GRANT) | (1u << IPC_HA_QUARANTINE),
	    harepl_recv_dispatch },
	[PROC_HA_SEND] = { "ha-send", start_ha_send, (1u << IPC_AUDIT) |
	    (1u << IPC_HA_SNAP), harepl_send_dispatch },
	[PROC_HA_ARP] = { "ha-arp", start_ha_arp, 1u << IPC_HA_ARP,
	    ha_arp_dispatch },
	[PROC_WEB] = { "web", start_web, 1u << IPC_WEB_REQ, web_dispatch },
};
_Static_assert(IPC_TYPE_MAX <= 64, "may_send holds one bit per IPC type");

/* Every proxy worker has the proxy's role: the same name, the same
 * messages. */
static const struct role *
role(enum gw_proc_id id)
{
	return &roles[PROC_IS_PROXY(id) ? PROC_PROXY : id];
}

/* "proxy 1" for a worker, else the child's name: for the log. */
const char *
proc_label(struct gw *gw, const struct gw_proc *p)
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

	proxy_of(gw)->nworkers = config_proxy_workers(gw->cfg);
	for (w = 0; w < GW_PROXY_MAX; w++)
		gw->procs[PROC_PROXY + w].enabled = !gw->opts.no_children &&
		    w < proxy_of(gw)->nworkers;
}

/* --- the parent's ends of the children's channels, on the loop --------- */

static void
on_ipc(struct ev *e, uint32_t events)
{
	struct proc_watch *w = e->arg;

	(void)events;
	if (w->drain)
		proc_drain_readable(w->gw, w->slot);
	else if (w->gw->procs[w->slot].ipc != -1)
		proc_ipc_readable(w->gw, (enum gw_proc_id)w->slot);
}

static void
watch(struct gw *gw, struct proc_watch *w, int slot, bool drain, int fd)
{
	ev_del(&w->ev);
	w->gw = gw;
	w->slot = slot;
	w->drain = drain;
	if (fd != -1 && ev_add(&w->ev, fd, EPOLLIN, on_ipc, w) == -1)
		log_warn("watching a child's channel");
}

void
proc_ipc_set(struct gw *gw, struct gw_proc *p, int fd)
{
	struct gw_procs *st = gw_mod(gw, MOD_PROC);
	int slot = (int)(p - gw->procs);

	/* Off the loop before it is closed: a child may hold the same
	 * channel open, and epoll would go on reporting it. */
	ev_del(&st->proc[slot].ev);
	if (p->ipc != -1 && p->ipc != fd)
		close(p->ipc);
	p->ipc = fd;
	watch(gw, &st->proc[slot], slot, false, fd);
}

void
proc_drain_ipc_set(struct gw *gw, int slot, int fd)
{
	struct gw_procs *st = gw_mod(gw, MOD_PROC);

	ev_del(&st->drain[slot].ev);
	if (gw->draining[slot].ipc != -1 && gw->draining[slot].ipc != fd)
		close(gw->draining[slot].ipc);
	gw->draining[slot].ipc = fd;
	watch(gw, &st->drain[slot], slot, true, fd);
}

void
proc_to_drain(struct gw *gw, struct gw_proc *p, int slot)
{
	struct gw_procs *st = gw_mod(gw, MOD_PROC);
	int fd = p->ipc;

	ev_del(&st->proc[p - gw->procs].ev);
	p->ipc = -1;
	proc_drain_ipc_set(gw, slot, fd);
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
	gw->procs[PROC_REGISTER].enabled = reg_of(gw)->regfd != -1;
	/* And only gateway.metrics.listen serves metrics. */
	gw->procs[PROC_METRICS].enabled = metrics_of(gw)->metricsfd != -1;
	/* And only a box of a pair with gateway.ha.peer replicates. */
	gw->procs[PROC_HA_RECV].enabled = ha_of(gw)->hafd != -1;
	gw->procs[PROC_HA_SEND].enabled = ha_of(gw)->hafd != -1;
	/* And gateway.ha.uplink_address has the split-brain watch read the
	 * uplink's ARP, as the refusal log, whatever -X says. */
	gw->procs[PROC_HA_ARP].enabled = ha_dup_watch(gw) != NULL;
	/* And only gateway.web.listen has a web console. */
	gw->procs[PROC_WEB].enabled = web_enabled();
	pool_enable(gw);
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
	proc_ipc_set(gw, p, fds[0]);
	p->started = time(NULL);
	p->restart_at = 0;
	log_info("%s started, pid %d", proc_label(gw, p), (int)pid);
	if (PROC_IS_PROXY(id) && proxy_send_secrets(gw, fds[0]) == -1)
		proc_kill(gw, id, "its secrets could not be sent");
	return;
later:
	p->restart_at = time(NULL) + p->backoff_s;
	p->backoff_s = p->backoff_s * 2 > BACKOFF_MAX ? BACKOFF_MAX :
	    p->backoff_s * 2;
}

/* In a new child: the parent's blocked signals (kept for its signalfd)
 * and ignored SIGPIPE must not be inherited, or SIGTERM would not stop
 * the child; nor its copy of the web console's login links and
 * sessions, which only the parent may hold. */
static void
child_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	ev_forget();
	web_forget();	/* the web console's links and sessions: not ours */
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
	log_warnx("%s (pid %d): %s; killing it", proc_label(gw, p), (int)p->pid,
	    why);
	audit_event(gw, "child-killed", "child", p->name, "reason", why, NULL);
	kill(p->pid, SIGKILL);
	proc_ipc_set(gw, p, -1);
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
		proc_ipc_set(gw, &gw->procs[i], -1);
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
			proc_drain_ipc_set(gw, i, -1);
			gw->draining[i].pid = -1;
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
	proc_ipc_set(gw, p, -1);
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
	log_warnx("%s (pid %d) %s; restarting in %us", proc_label(gw, p), (int)pid,
	    how, p->backoff_s);
	snprintf(worker, sizeof(worker), "%d", (int)(p - gw->procs - PROC_PROXY));
	audit_event(gw, "child-restart", "child", p->name, "status", how,
	    "restart_in_s", next, PROC_IS_PROXY(p - gw->procs) ? "worker" : NULL,
	    worker, NULL);
	p->backoff_s = p->backoff_s * 2 > BACKOFF_MAX ? BACKOFF_MAX :
	    p->backoff_s * 2;
}

static void
proc_tick(struct gw *gw, time_t now)
{
	int i;

	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].enabled && gw->procs[i].pid <= 0 &&
		    gw->procs[i].restart_at != 0 && now >= gw->procs[i].restart_at)
			proc_start(gw, (enum gw_proc_id)i);
}

static int
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

void
proc_reload(struct gw *gw, const struct gw_delta *d)
{
	dnsd_reconfigure(gw);
	if (d->nflog_view)
		proc_restart(gw, PROC_NFLOG);
	if (gw->opts.no_children)
		return;
	pool_enable(gw);
	proxy_reload(gw, d);
}

/* Only sandboxes' allow lists changed (grants, gw_commit): the
 * nflog reader (which knows sandboxes by address) is left alone; dnsd
 * and every proxy worker take each sandbox's list alone. */
void
proc_reload_sandboxes(struct gw *gw, const char *const *names, size_t n)
{
	struct gw_proc *p = &gw->procs[PROC_DNSD];
	size_t i;

	for (i = 0; p->pid > 0 && p->ipc != -1 && i < n; i++)
		if (dnsd_allow(gw, names[i]) == -1) {
			dnsd_reconfigure(gw);
			break;
		}
	if (p->pid > 0 && p->ipc == -1)
		proc_restart(gw, PROC_DNSD);
	for (i = 0; !gw->opts.no_children && i < n; i++)
		proxy_allow(gw, names[i]);
}

/* The nflog reader sends only audit events. */
static void
audit_dispatch(struct gw *gw, struct gw_proc *p, int fd, const struct gw_msg *m)
{
	audit_child(gw, p, m->data, m->len);
}

/* The control process's requests, to the control module wired in
 * gw_run (it sits above this one). */
static void
control_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	ctl_of(gw)->on_ctl_msg(gw, m->h, m->data, m->len, m->fds, m->nfds);
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
		proc_ipc_set(gw, p, -1);
		return;
	}
	if (n == -2) {
		proc_kill(gw, id, err);
		return;
	}
	if (!(role(id)->may_send & (UINT64_C(1) << h.type)) ||
	    !fds_fit(&h, buf.raw, nfds)) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		snprintf(err, sizeof(err), "sent %s, which its role may not "
		    "(or with the wrong descriptors)", ipc_type_name(h.type));
		proc_kill(gw, id, err);
		return;
	}
	if (role(id)->dispatch != NULL) {
		struct gw_msg m = { &h, buf.raw, (size_t)n, fds, nfds };

		role(id)->dispatch(gw, p, p->ipc, &m);
	}
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
		int keep[2] = { ctl_of(gw)->ctlfd, ipc };

		child_signals();
		child_fds(keep, 2);
		control_main(3, 4, parent);
	}
	/* A new control process knows none of the old one's clients. */
	ctl_of(gw)->ctl_gen++;
	ctl_of(gw)->ctl_followers = 0;
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
		int keep[2] = { reg_of(gw)->regfd, ipc };

		child_signals();
		child_fds(keep, 2);
		regproc_main(3, 4, parent, &pem);
	}
	reg_pem_wipe(&pem);
	return pid;
}

/* Replication's receiving process: the registration process's code on
 * gateway.ha.listen, with this box's certificate and key (harepl.h). */
static int
start_ha_recv(struct gw *gw, int ipc)
{
	struct reg_pem pem;
	pid_t pid, parent = getpid();

	if (harepl_pem_read(gw, &pem) == -1)
		return -1;
	if ((pid = fork()) == -1)
		log_warn("ha-recv: fork");
	if (pid == 0) {
		int keep[2] = { ha_of(gw)->hafd, ipc };

		child_signals();
		child_fds(keep, 2);
		harepl_recv_main(3, 4, parent, &pem);
	}
	reg_pem_wipe(&pem);
	return pid;
}

/* Its sending process: the IPC end, the certificate and key, the other
 * box's address and pin; no listening socket. */
static int
start_ha_send(struct gw *gw, int ipc)
{
	struct reg_pem pem;
	pid_t pid, parent = getpid();

	if (harepl_pem_read(gw, &pem) == -1)
		return -1;
	if ((pid = fork()) == -1)
		log_warn("ha-send: fork");
	if (pid == 0) {
		child_signals();
		child_fds(&ipc, 1);
		harepl_send_main(3, parent, &pem, gw->cfg->gw.ha_peer,
		    gw->cfg->gw.ha_peer_key);
	}
	reg_pem_wipe(&pem);
	return pid;
}

/* The split-brain watch's ARP reader gets the uplink's packet socket,
 * opened and bound here for each incarnation (the parent keeps no copy:
 * it reads no ARP), its IPC end and what to watch. */
static int
start_ha_arp(struct gw *gw, int ipc)
{
	const struct ha_arp_watch *w = ha_dup_watch(gw);
	pid_t pid, parent = getpid();
	int fd;

	if (w == NULL || (fd = ha_arp_socket(w)) == -1)
		return -1;
	if ((pid = fork()) == -1)
		log_warn("ha-arp: fork");
	if (pid == 0) {
		int keep[2] = { fd, ipc };

		child_signals();
		child_fds(keep, 2);
		ha_arp_child(3, 4, w, parent);
	}
	close(fd);
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
		int keep[2] = { metrics_of(gw)->metricsfd, ipc };

		child_signals();
		child_fds(keep, 2);
		metrics_main(3, 4, parent, gw->cfg->gw.metrics_allow,
		    gw->cfg->gw.nmetrics_allow);
	}
	metrics_of(gw)->metrics_sent = 0;	/* a new one has no rendering yet */
	return pid;
}

/* The web console gets the listener the parent bound, its certificate
 * and key and the pages in memory; the parent's copy is wiped at once. */
static int
start_web(struct gw *gw, int ipc)
{
	struct web_boot b;
	pid_t pid, parent = getpid();

	if (web_boot_prepare(gw, &b) == -1)
		return -1;
	if ((pid = fork()) == -1)
		log_warn("web: fork");
	if (pid == 0) {
		int keep[2] = { b.listen, ipc };

		child_signals();
		child_fds(keep, 2);
		web_main(3, 4, parent, &b);
	}
	web_boot_wipe(&b);
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
bound_socket_on(struct gw *gw, const struct moat_addr *a, int type,
    uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_to_sockaddr(a, port, &ss);
	int fd, one = 1;
	bool v6 = a->family == AF_INET6;

	/* dnsd's are made as its user: the policy knows its answers by uid. */
	if ((fd = socket_as(port == 53 ? NFTR_DNS_USER : NULL, a->family,
	    type | SOCK_CLOEXEC)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* In a pair keepalived puts the address on the master only; the
	 * gateway's IPv6 address may come to the bridge after this. */
	if ((v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
	    sizeof(one)) == -1) ||
	    ((gw->cfg->gw.ha || v6) && setsockopt(fd, IPPROTO_IP, IP_FREEBIND,
	    &one, sizeof(one)) == -1) ||
	    bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    (type == SOCK_STREAM && listen(fd, 1024) == -1)) {
		log_warn("bind %s port %u", type == SOCK_STREAM ? "tcp" : "udp",
		    port);
		close(fd);
		return -1;
	}
	return fd;
}

static int
bound_socket(struct gw *gw, int type, uint16_t port)
{
	return bound_socket_on(gw, &gw->cfg->gw.address, type, port);
}

static int
ensure_sockets(struct gw *gw, enum gw_proc_id id)
{
	const struct moat_addr *a6 = &gw->cfg->gw.ipv6_address;

	if (id == PROC_DNSD) {
		if (dnsd_of(gw)->dns_udp == -1)
			dnsd_of(gw)->dns_udp = bound_socket(gw, SOCK_DGRAM, 53);
		if (dnsd_of(gw)->dns_tcp == -1)
			dnsd_of(gw)->dns_tcp = bound_socket(gw, SOCK_STREAM, 53);
		/* With gateway.ipv6, dnsd answers on its IPv6 address too. */
		if (gw->cfg->gw.ipv6 && dnsd_of(gw)->dns_udp6 == -1)
			dnsd_of(gw)->dns_udp6 = bound_socket_on(gw, a6, SOCK_DGRAM, 53);
		if (gw->cfg->gw.ipv6 && dnsd_of(gw)->dns_tcp6 == -1)
			dnsd_of(gw)->dns_tcp6 = bound_socket_on(gw, a6, SOCK_STREAM, 53);
		return dnsd_of(gw)->dns_udp == -1 || dnsd_of(gw)->dns_tcp == -1 ? -1 : 0;
	}
	return pool_sockets(&gw->cfg->gw, proxy_of(gw)->nworkers,
	    &proxy_of(gw)->proxy4, &proxy_of(gw)->proxy6);
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
	proxy_of(gw)->signer_pid[w] = pid;
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
	if (reload_of(gw)->cfgtext.text == NULL || reload_of(gw)->cfgtext.of != gw->cfg ||
	    reload_of(gw)->cfgtext.commits != reload_of(gw)->commits) {
		free(reload_of(gw)->cfgtext.text);
		reload_of(gw)->cfgtext.text = NULL;
		if ((fp = open_memstream(&reload_of(gw)->cfgtext.text,
		    &reload_of(gw)->cfgtext.len)) == NULL)
			return NULL;
		config_print(fp, gw->cfg);
		if (fclose(fp) != 0) {
			free(reload_of(gw)->cfgtext.text);
			reload_of(gw)->cfgtext.text = NULL;
			return NULL;
		}
		reload_of(gw)->cfgtext.of = gw->cfg;
		reload_of(gw)->cfgtext.commits = reload_of(gw)->commits;
	}
	*len = reload_of(gw)->cfgtext.len;
	return reload_of(gw)->cfgtext.text;
}

int
proc_config_memfd(struct gw *gw)
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
	char prog[1024], *argv[32];
	char smarg[8], peersarg[8];
	int argc = 0, fds[7], nfds = 0, signer = -1, conf, smfd;
	unsigned w = id - PROC_PROXY;
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/%s", gw->opts.bindir,
	    id == PROC_DNSD ? "dnsd" : "moat-proxy");
	if (access(prog, X_OK) == -1) {
		log_warn("%s: cannot run %s", gw->procs[id].name, prog);
		return -1;
	}
	if (ensure_sockets(gw, id) == -1)
		return -1;
	if (id == PROC_DNSD) {
		/* It starts with the config in force, as gen 0. */
		policy_dns_thaw(gw);
		dnsd_of(gw)->dns_gen = 0;
	}
	if ((conf = proc_config_memfd(gw)) == -1) {
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
		fds[nfds++] = dnsd_of(gw)->dns_udp;		/* fd 4 */
		fds[nfds++] = dnsd_of(gw)->dns_tcp;		/* fd 5 */
		argv[argc++] = "--udp-fd";
		argv[argc++] = "4";
		argv[argc++] = "--tcp-fd";
		argv[argc++] = "5";
	} else {
		if (start_signer(gw, id - PROC_PROXY, &signer) == -1) {
			close(conf);
			return -1;
		}
		fds[nfds++] = proxy_of(gw)->proxy4.fds[w];	/* fd 4 */
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
	if (gw->opts.verbose > 0)	/* -v: dnsd and the proxy log debug too */
		argv[argc++] = "-vv";
	fds[nfds++] = conf;				/* fd 6 */
	argv[argc++] = "--config-fd";
	argv[argc++] = "6";
	if (id != PROC_DNSD && w < proxy_of(gw)->proxy6.n) {
		fds[nfds++] = proxy_of(gw)->proxy6.fds[w];	/* fd 7 */
		argv[argc++] = "--listen-fd";
		argv[argc++] = "7";
	}
	if (id != PROC_DNSD && (smfd = sockmap_fd()) != -1) {
		fds[nfds++] = smfd;			/* fd 7 or 8 */
		snprintf(smarg, sizeof(smarg), "%d", 2 + nfds);
		argv[argc++] = "--sockmap-fd";
		argv[argc++] = smarg;
		fds[nfds++] = sockmap_peers_fd();	/* fd 8 or 9 */
		snprintf(peersarg, sizeof(peersarg), "%d", 2 + nfds);
		argv[argc++] = "--sockmap-peers-fd";
		argv[argc++] = peersarg;
	}
	if (id == PROC_DNSD && dnsd_of(gw)->dns_udp6 != -1 && dnsd_of(gw)->dns_tcp6 != -1) {
		fds[nfds++] = dnsd_of(gw)->dns_udp6;		/* fd 7 */
		fds[nfds++] = dnsd_of(gw)->dns_tcp6;		/* fd 8 */
		argv[argc++] = "--udp6-fd";
		argv[argc++] = "7";
		argv[argc++] = "--tcp6-fd";
		argv[argc++] = "8";
	}
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

/* Children due for a restart. */
static uint64_t
proc_due(const struct gw *gw)
{
	int ms = proc_next_timeout((struct gw *)gw, time(NULL));

	return gw_due_in(ms);
}

static void
proc_timer(struct gw *gw)
{
	proc_tick(gw, time(NULL));
}

static void
proc_state_init(void *state)
{
	struct gw_procs *st = state;
	size_t i;

	for (i = 0; i < PROC_MAX; i++)
		st->proc[i].ev.fd = -1;
	for (i = 0; i < GW_MAX_DRAINING; i++)
		st->drain[i].ev.fd = -1;
}

const struct gw_module proc_module = {
	.name = "proc",
	.size = sizeof(struct gw_procs),
	.init = proc_state_init,
	.due = proc_due,
	.timer = proc_timer,
	.stop = proc_stop_all,
};
