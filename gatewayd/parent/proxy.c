/*
 * parent/proxy.c -- the parent's side of its proxy workers: their secret
 * values (read here as root, sent over IPC), what a change of
 * configuration means for each worker (taken in place or drained; a
 * grant's allow list alone), the workers still draining, and the messages
 * a worker may send (audit events, budget requests).
 */
#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gw.h"
#include "proc.h"
#include "reload.h"
#include "proxy.h"
#include "audit.h"
#include "budgets.h"
#include "ctl.h"
#include "ipc.h"
#include "log.h"
#include "secretfile.h"

/* A secret's value as it goes to a proxy, read here as root. */
union secret_msg {
	struct ipc_conf_secret m;
	uint8_t raw[IPC_MAX_PAYLOAD];
};

/* Read s's value into u; its message's length, or 0. */
static size_t
secret_read(const struct moat_secret *s, union secret_msg *u)
{
	char err[256];
	size_t len;

	memset(&u->m, 0, sizeof(u->m));
	snprintf(u->m.name, sizeof(u->m.name), "%s", s->name);
	if (secret_file_read(s, u->m.value, &len, err, sizeof(err)) == -1) {
		log_warnx("proxy: %s", err);
		return 0;
	}
	u->m.len = (uint32_t)len;
	return sizeof(u->m) + len;
}

/*
 * The proxy's secret values: read here, as root, and sent at its start, in
 * the configuration's order.  The proxy never opens a secret file.  The
 * files' identities are taken first if no worker has values yet, so that
 * a reload knows which ones to send again (conf_delta).
 */
int
proxy_send_secrets(struct gw *gw, int fd)
{
	static union secret_msg u;
	size_t i, len;
	int rc = 0;

	if (proxy_of(gw)->secret_ids == NULL)
		proxy_of(gw)->secret_ids = conf_secret_ids(gw->cfg, &proxy_of(gw)->nsecret_ids);
	for (i = 0; rc == 0 && i < gw->cfg->nsecrets; i++) {
		if ((len = secret_read(&gw->cfg->secrets[i], &u)) == 0)
			rc = -1;
		else if ((rc = ipc_send(fd, IPC_CONF_SECRET, 0, &u.m,
		    len)) == -1)
			log_warn("proxy: sending secret %s",
			    gw->cfg->secrets[i].name);
	}
	explicit_bzero(&u, sizeof(u));
	return rc;
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
	proc_drain_ipc_set(gw, old, -1);
	return old;
}

/* The names of one kind of change, as many IPC_CONF_CHANGED as they
 * take.  0 or -1. */
static int
send_changed(int ipc, uint8_t kind, char *const *names, size_t n)
{
	static union {
		struct ipc_conf_changed m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	size_t i = 0, off, len;

	while (i < n) {
		memset(&u.m, 0, sizeof(u.m));
		u.m.kind = kind;
		for (off = 0; i < n; i++, off += len) {
			len = strlen(names[i]) + 1;
			if (sizeof(u.m) + off + len > sizeof(u.raw))
				break;
			memcpy(u.m.names + off, names[i], len);
		}
		u.m.len = (uint32_t)off;
		if (ipc_send(ipc, IPC_CONF_CHANGED, 0, &u.m,
		    sizeof(u.m) + off) == -1)
			return -1;
	}
	return 0;
}

/*
 * A change to one worker: what changed (IPC_CONF_CHANGED), then the new
 * configuration (IPC_CONF, a memfd of its own: a shared one would share
 * its read offset) and whether to take it in place; without a memfd if
 * none can be made, which only drains.  flags: IPC_CONF_*.
 */
static int
send_conf(struct gw *gw, int ipc, const struct gw_delta *d, uint8_t how,
    uint8_t flags)
{
	struct ipc_conf m = { 1, how, flags, { 0, 0 } };
	int conf, rc;

	if (send_changed(ipc, IPC_CHANGED_SANDBOX, d->sandboxes,
	    d->nsandboxes) == -1 || send_changed(ipc, IPC_CHANGED_SECRET,
	    d->secrets, d->nsecrets) == -1)
		return -1;
	if ((conf = proc_config_memfd(gw)) == -1) {
		m.how = IPC_CONF_DRAIN;
		return ipc_send(ipc, IPC_CONF, 0, &m, sizeof(m));
	}
	rc = ipc_send_fds(ipc, IPC_CONF, 0, &m, sizeof(m), &conf, 1);
	close(conf);
	return rc;
}

/* The values a change sends again, each read once for every worker
 * (values[i] for d->values[i]); false if one cannot be read, and then
 * the workers drain, as for any change they cannot take in place. */
static bool
values_read(struct gw *gw, const struct gw_delta *d, union secret_msg *v,
    size_t *len)
{
	size_t i;

	for (i = 0; i < d->nvalues; i++)
		if ((len[i] = secret_read(&gw->cfg->secrets[d->values[i]],
		    &v[i])) == 0)
			return false;
	return true;
}

static void
log_kept(struct gw *gw, const struct gw_proc *p, const struct gw_delta *d)
{
	if (d->nvalues > 0)
		log_info("%s: %zu new secret value(s) sent, reconfigured in "
		    "place", proc_label(gw, p), d->nvalues);
	else if (d->secret_defs)
		log_info("%s: secret definitions changed, reconfigured in "
		    "place", proc_label(gw, p));
	else
		log_info("%s: only sandboxes changed, reconfigured in place",
		    proc_label(gw, p));
}

/*
 * A change reaches a worker: with the new configuration it cuts every open
 * connection the new one no longer allows (its sandbox removed or changed,
 * its address refused).  When only sandboxes and secrets changed
 * (d->basis) and every new value could be read, it goes on in place,
 * keeping its connections and its signer: each secret that is new or
 * whose file changed is sent to it first, as its value (IPC_CONF_SECRET);
 * the worker takes them with the configuration, cutting only the
 * connections that could carry an old value or binding.  Otherwise it
 * drains them and finishes, and a new one takes its listening socket at
 * once (proc_tick).
 */
static void
reload_worker(struct gw *gw, enum gw_proc_id id, const struct gw_delta *d,
    const union secret_msg *v, const size_t *len, bool keep)
{
	struct gw_proc *p = &gw->procs[id];
	uint8_t flags = (d->basis ? IPC_CONF_BASIS : 0) |
	    (d->secret_defs ? IPC_CONF_SECRETS : 0);
	size_t i;
	int slot;

	if (p->pid > 0) {
		keep = keep && p->enabled;
		if (keep && d->nvalues > 0)
			flags |= IPC_CONF_SECRETS;
		for (i = 0; keep && i < d->nvalues; i++)
			if (ipc_send(p->ipc, IPC_CONF_SECRET, 0, &v[i].m,
			    len[i]) == -1) {
				proc_kill(gw, id, "a secret's new value could "
				    "not be sent");
				return;
			}
		if (send_conf(gw, p->ipc, d, keep ? IPC_CONF_KEEP :
		    IPC_CONF_DRAIN, flags) == -1)
			kill(p->pid, SIGTERM);
		else if (keep) {
			log_kept(gw, p, d);
			return;
		}
		slot = drain_slot(gw);
		gw->draining[slot].pid = p->pid;
		proc_to_drain(gw, p, slot);
		gw->draining[slot].worker = (int)(id - PROC_PROXY);
		gw->draining[slot].since = time(NULL);
		p->pid = -1;
	}
	p->restart_at = p->enabled ? time(NULL) : 0;
}

static bool
any_worker(const struct gw *gw)
{
	int w;

	for (w = 0; w < GW_PROXY_MAX; w++)
		if (gw->procs[PROC_PROXY + w].pid > 0)
			return true;
	return false;
}

/* Every worker, and every one still draining, gets the new configuration
 * (gw->cfg) and what the change d means for it (reload_worker).  The new
 * values are read once for all of them and wiped after. */
void
proxy_reload(struct gw *gw, const struct gw_delta *d)
{
	union secret_msg *v = xcalloc(d->nvalues + 1, sizeof(*v));
	size_t *len = xcalloc(d->nvalues + 1, sizeof(*len));
	uint8_t flags = (d->basis ? IPC_CONF_BASIS : 0) |
	    (d->secret_defs ? IPC_CONF_SECRETS : 0);
	bool keep = !d->basis && any_worker(gw) && values_read(gw, d, v, len);
	int w;

	/* Workers still draining cut what the new configuration refuses. */
	for (w = 0; w < GW_MAX_DRAINING; w++)
		if (gw->draining[w].pid > 0 && gw->draining[w].ipc != -1)
			(void)send_conf(gw, gw->draining[w].ipc, d,
			    IPC_CONF_DRAIN, flags);
	for (w = 0; w < GW_PROXY_MAX; w++)
		reload_worker(gw, (enum gw_proc_id)(PROC_PROXY + w), d, v, len,
		    keep);
	explicit_bzero(v, (d->nvalues + 1) * sizeof(*v));
	free(v);
	free(len);
	/* What the workers have now (those started from here on read the
	 * files anew, and a later change sends what changed since). */
	free(proxy_of(gw)->secret_ids);
	proxy_of(gw)->nsecret_ids = d->nids;
	proxy_of(gw)->secret_ids = xcalloc(d->nids + 1, sizeof(*proxy_of(gw)->secret_ids));
	if (d->nids > 0)
		memcpy(proxy_of(gw)->secret_ids, d->ids, d->nids * sizeof(*d->ids));
}

/* A grant: one sandbox's allow list to every worker, running or draining;
 * each takes it alone, cutting only that sandbox's connections to names
 * it no longer allows.  A list too long for one message goes as a change
 * of that sandbox alone. */
void
proxy_allow(struct gw *gw, const char *sandbox)
{
	static union {
		struct ipc_conf_allow m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	size_t len = conf_allow_msg(gw, sandbox, 1, &u);
	struct gw_delta d;
	char *one;
	int w, fd, n = 0;

	if (len == 0) {
		memset(&d, 0, sizeof(d));
		one = xstrdup(sandbox);
		d.sandboxes = &one;
		d.nsandboxes = 1;
		d.ids = proxy_of(gw)->secret_ids;		/* nothing of them changes */
		d.nids = proxy_of(gw)->nsecret_ids;
		proxy_of(gw)->secret_ids = NULL;
		proxy_reload(gw, &d);
		free(d.ids);
		free(one);
		return;
	}
	for (w = 0; w < GW_MAX_DRAINING; w++)
		if (gw->draining[w].pid > 0 && gw->draining[w].ipc != -1)
			(void)ipc_send(gw->draining[w].ipc, IPC_CONF_ALLOW, 0,
			    &u.m, len);
	for (w = 0; w < GW_PROXY_MAX; w++) {
		struct gw_proc *p = &gw->procs[PROC_PROXY + w];

		if (p->pid <= 0 || (fd = p->ipc) == -1)
			continue;
		if (ipc_send(fd, IPC_CONF_ALLOW, 0, &u.m, len) == -1) {
			log_warn("%s: sending %s's allow list", proc_label(gw,
			    p), sandbox);
			proc_restart(gw, (enum gw_proc_id)(PROC_PROXY + w));
		} else
			n++;
	}
	log_info("proxy: sandbox %s's allow list sent alone to %d worker(s)",
	    sandbox, n);
}

/* What a proxy worker, running or draining, may send: audit events and
 * budget requests (the role's table in parent/proc.c admits no other). */
/* A worker's TLS counters: what moved since its last report goes into
 * the totals.  A pid not seen yet is a new process, counting from 0. */
static void
tls_counters(struct gw *gw, const struct ipc_proxy_tls *m)
{
	struct gw_proxy *px = proxy_of(gw);
	struct gw_proxy_tls *w = NULL, *spare = NULL;
	struct ipc_proxy_tls *l;
	size_t i;

	for (i = 0; i < 2 * GW_PROXY_MAX && w == NULL; i++) {
		if (px->tls_workers[i].pid == m->pid)
			w = &px->tls_workers[i];
		else if (spare == NULL && (px->tls_workers[i].pid == 0 ||
		    kill((pid_t)px->tls_workers[i].pid, 0) == -1))
			spare = &px->tls_workers[i];	/* unused, or gone */
	}
	if (w == NULL) {
		w = spare != NULL ? spare : &px->tls_workers[0];
		memset(w, 0, sizeof(*w));
		w->pid = m->pid;
	}
	l = &w->last;
#define MOVED(f) (m->f >= l->f ? m->f - l->f : m->f)
	px->tls.resumed += MOVED(resumed);
	px->tls.full += MOVED(full);
	px->tls.conns += MOVED(conns);
	px->tls.ktls_send += MOVED(ktls_send);
	px->tls.ktls_recv += MOVED(ktls_recv);
#undef MOVED
	px->tls.ktls_kernel = m->ktls_kernel;
	px->tls.pid = 1;		/* in the totals: a worker reported */
	*l = *m;
}

/* ctl status: upstream sessions resumed, and whether the kernel carries
 * TLS records. */
static const char *
ktls_state(const struct ipc_proxy_tls *t)
{
	if (t->pid == 0)
		return "not known yet";
	if (!t->ktls_kernel)
		return "not available (fallback: user space)";
	if (t->ktls_send + t->ktls_recv > 0)
		return "in use";
	return "available, not used by any connection yet";
}

static void
proxy_status(struct ctl_req *r)
{
	const struct ipc_proxy_tls *t = &proxy_of(r->gw)->tls;

	if (r->json) {
		ctl_reply(r, "\"tls\":{\"upstream_resumed\":%llu,"
		    "\"upstream_full\":%llu,\"kernel_tls\":\"%s\","
		    "\"kernel_tls_send\":%llu,\"kernel_tls_recv\":%llu,"
		    "\"connections\":%llu},",
		    (unsigned long long)t->resumed,
		    (unsigned long long)t->full, !t->pid ? "unknown" :
		    !t->ktls_kernel ? "unavailable" : t->ktls_send +
		    t->ktls_recv > 0 ? "in use" : "available",
		    (unsigned long long)t->ktls_send,
		    (unsigned long long)t->ktls_recv,
		    (unsigned long long)t->conns);
		return;
	}
	ctl_reply(r, "tls        %llu upstream handshake(s) resumed, %llu in "
	    "full\nktls       kernel TLS: %s (%llu of %llu TLS sides send "
	    "with it, %llu receive)\n", (unsigned long long)t->resumed,
	    (unsigned long long)t->full, ktls_state(t),
	    (unsigned long long)t->ktls_send, (unsigned long long)t->conns,
	    (unsigned long long)t->ktls_recv);
}

static void
proxy_metrics(FILE *fp, const struct gw *gw)
{
	const struct ipc_proxy_tls *t = &proxy_of(gw)->tls;

	fprintf(fp, "# HELP moat_proxy_upstream_tls_resumed_total Upstream "
	    "TLS handshakes that resumed a session.\n"
	    "# TYPE moat_proxy_upstream_tls_resumed_total counter\n"
	    "moat_proxy_upstream_tls_resumed_total %llu\n"
	    "# HELP moat_proxy_upstream_tls_full_total Upstream TLS "
	    "handshakes in full (no session resumed).\n"
	    "# TYPE moat_proxy_upstream_tls_full_total counter\n"
	    "moat_proxy_upstream_tls_full_total %llu\n"
	    "# HELP moat_proxy_kernel_tls Whether the kernel can carry TLS "
	    "records (1), or they stay in user space (0).\n"
	    "# TYPE moat_proxy_kernel_tls gauge\n"
	    "moat_proxy_kernel_tls %u\n"
	    "# HELP moat_proxy_tls_sides_total TLS connection sides (guest "
	    "or upstream) the proxy set up.\n"
	    "# TYPE moat_proxy_tls_sides_total counter\n"
	    "moat_proxy_tls_sides_total %llu\n"
	    "# HELP moat_proxy_ktls_sides_total Of them, those whose records "
	    "the kernel sent or received.\n"
	    "# TYPE moat_proxy_ktls_sides_total counter\n"
	    "moat_proxy_ktls_sides_total{direction=\"send\"} %llu\n"
	    "moat_proxy_ktls_sides_total{direction=\"recv\"} %llu\n",
	    (unsigned long long)t->resumed, (unsigned long long)t->full,
	    t->ktls_kernel, (unsigned long long)t->conns,
	    (unsigned long long)t->ktls_send,
	    (unsigned long long)t->ktls_recv);
}

void
proxy_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	if (m->h->type == IPC_AUDIT)
		audit_child(gw, p, m->data, m->len);
	else if (m->h->type == IPC_PROXY_TLS)
		tls_counters(gw, (const struct ipc_proxy_tls *)m->data);
	else if (m->h->type == IPC_BUDGET_REQ)
		gw_budget_answer(gw, fd, m->h->id,
		    (const struct ipc_budget_req *)m->data);
}

/* A draining worker's messages; anything else, or its end, closes it. */
void
proc_drain_readable(struct gw *gw, int slot)
{
	static union {
		struct ipc_budget_req m;	/* aligned for it */
		char raw[IPC_MAX_PAYLOAD + 1];
	} u;
	char *buf = u.raw;
	struct ipc_hdr h;
	char err[256];
	ssize_t n;

	n = ipc_recv(gw->draining[slot].ipc, &h, buf, IPC_MAX_PAYLOAD, err,
	    sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0 && (h.type == IPC_AUDIT || h.type == IPC_BUDGET_REQ ||
	    h.type == IPC_PROXY_TLS)) {
		struct gw_msg m = { &h, buf, (size_t)n, NULL, 0 };

		proxy_dispatch(gw, &gw->procs[PROC_PROXY +
		    gw->draining[slot].worker], gw->draining[slot].ipc, &m);
		return;
	}
	if (n == -2 || n > 0)		/* malformed, or not its to send */
		kill(gw->draining[slot].pid, SIGKILL);
	proc_drain_ipc_set(gw, slot, -1);
}

static void
proxy_stop(struct gw *gw)
{
	pool_close(&proxy_of(gw)->proxy4, &proxy_of(gw)->proxy6);
	free(proxy_of(gw)->secret_ids);
	proxy_of(gw)->secret_ids = NULL;
}

const struct gw_module proxy_module = {
	.name = "proxy",
	.size = sizeof(struct gw_proxy),
	.stop = proxy_stop,
	.status = proxy_status,
	.metrics = proxy_metrics,
};
