/*
 * parent_proxy.c -- the parent's side of its proxy workers: their secret
 * values (read here as root, sent over IPC), what a reload means for each
 * worker (taken in place or drained), the workers still draining, and the
 * messages a worker may send (audit events, budget requests).
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

#include "gatewayd.h"
#include "ipc.h"
#include "log.h"
#include "secretfile.h"

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
int
proxy_send_secrets(struct gw *gw, int fd)
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
char *
proxy_basis(const struct moat_config *cfg)
{
	return config_text_but_sandboxes_secrets(cfg);
}

char *
proxy_secret_ids(const struct moat_config *cfg)
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

/* The last line of ids (proxy_secret_ids) about secret name, or NULL. */
static const char *
id_line(const char *ids, const char *name)
{
	size_t nl = strlen(name), len;
	const char *p, *found = NULL;

	for (p = ids; *p != '\0'; p += len + (p[len] != '\0')) {
		len = strcspn(p, "\n");
		if (strncmp(p, name, nl) == 0 && p[nl] == ' ')
			found = p;
	}
	return found;
}

/* Does had (proxy_secret_ids) hold the same line for secret name as ids? */
static bool
same_id(const char *ids, const char *had, const char *name)
{
	const char *a = id_line(ids, name), *b = id_line(had, name);
	size_t la, lb;

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
	int conf = proc_config_memfd(gw), rc;

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
				    "reconfigured in place", proc_label(gw, p),
				    nsent);
			else if (p->defs == NULL || strcmp(defs, p->defs) != 0)
				log_info("%s: secret definitions changed, "
				    "reconfigured in place", proc_label(gw, p));
			else
				log_info("%s: only sandboxes changed, "
				    "reconfigured in place", proc_label(gw, p));
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

/* Every worker, and every one still draining, gets the new configuration
 * (gw->cfg); each takes it in place or drains (reload_worker). */
void
proxy_reload(struct gw *gw)
{
	char *basis, *defs, *ids;
	int w;

	/* Workers still draining cut what the new configuration refuses. */
	for (w = 0; w < GW_MAX_DRAINING; w++)
		if (gw->draining[w].pid > 0 && gw->draining[w].ipc != -1)
			(void)send_reload(gw, gw->draining[w].ipc,
			    IPC_RELOAD_DRAIN);
	basis = proxy_basis(gw->cfg);	/* the same for every worker */
	defs = config_text_but_sandboxes(gw->cfg);	/* for the log */
	ids = proxy_secret_ids(gw->cfg);
	for (w = 0; w < GW_PROXY_MAX; w++)
		reload_worker(gw, (enum gw_proc_id)(PROC_PROXY + w), basis,
		    defs, ids);
	free(basis);
	free(defs);
	free(ids);
}

/* What a proxy worker, running or draining, may send: audit events and
 * budget requests (the role's table in parent_proc.c admits no other). */
void
proxy_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	if (m->h->type == IPC_AUDIT)
		audit_child(gw, p, m->data, m->len);
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
	if (n > 0 && (h.type == IPC_AUDIT || h.type == IPC_BUDGET_REQ)) {
		struct gw_msg m = { &h, buf, (size_t)n, NULL, 0 };

		proxy_dispatch(gw, &gw->procs[PROC_PROXY +
		    gw->draining[slot].worker], gw->draining[slot].ipc, &m);
		return;
	}
	if (n == -2 || n > 0)		/* malformed, or not its to send */
		kill(gw->draining[slot].pid, SIGKILL);
	close(gw->draining[slot].ipc);
	gw->draining[slot].ipc = -1;
}
