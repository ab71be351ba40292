/*
 * parent/ctl.c -- the parent's side of the control socket.  The parent
 * binds the socket (a unix stream socket, mode 0660, group moat) and hands
 * it to the control process (control.c), which parses what clients send
 * and forwards each request as one typed IPC_CTL_REQ with the client's
 * connection attached.  Everything is decided here, again, on the typed
 * request: the credentials are read from the connection and must match
 * the ones the message claims; then only root and members of group moat
 * get further; members see and manage only what they own, root and
 * gateway.admin_group see everything.  A control process that lies about
 * who is asking gets nothing a client connected to it could not get.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw.h"
#include "reload.h"
#include "dnsd.h"
#include "proxy.h"
#include "audit.h"
#include "reg.h"
#include "ctl.h"
#include "team.h"
#include "console.h"
#include "policy.h"
#include "refused.h"
#include "grant.h"
#include "network.h"
#include "drift.h"
#include "egress.h"
#include "ha.h"
#include "web.h"
#include "canary.h"
#include "log.h"
#include "nftrules.h"
#include "sockmap.h"
#include "privdrop.h"
#include "verdicts.h"

typedef void (*ctl_fn)(struct ctl_req *);

static void ctl_status(struct ctl_req *);
static void ctl_sandboxes(struct ctl_req *);
static void ctl_reload(struct ctl_req *);
static void ctl_counters(struct ctl_req *);
static void ctl_log(struct ctl_req *);
static void ctl_console(struct ctl_req *);
static bool console_reaped(struct gw *, struct gw_job *);

/* admin: root or gateway.admin_group only.  json: the verb has a --json
 * form (for "secret", only "secret list" does; see parent/secret.c). */
static const struct {
	ctl_fn		 fn;
	bool		 admin;
	bool		 json;
} ctl_table[CTL_VERB_MAX] = {
	[CTL_STATUS] = { ctl_status, false, true },
	[CTL_SANDBOXES] = { ctl_sandboxes, false, true },
	[CTL_LIST] = { team_list, false, true },
	[CTL_RELOAD] = { ctl_reload, false, false },
	[CTL_COUNTERS] = { ctl_counters, true, true },
	[CTL_LOG] = { ctl_log, true, true },
	[CTL_CREATE] = { team_provision, false, false },
	[CTL_START] = { team_provision, false, false },
	[CTL_STOP] = { team_provision, false, false },
	[CTL_DESTROY] = { team_provision, false, false },
	[CTL_SECRET] = { team_secret, false, true },
	[CTL_CONSOLE] = { ctl_console, false, false },
	[CTL_HOSTS] = { ctl_hosts, true, true },
	[CTL_REFUSED] = { ctl_refused, false, true },
	[CTL_NAMES] = { ctl_names, false, true },
	[CTL_ALLOW] = { ctl_allow, false, false },
	[CTL_UNALLOW] = { ctl_unallow, false, false },
	[CTL_HA] = { ctl_ha, true, false },
	[CTL_GRANTS] = { ctl_grants, false, true },
	[CTL_WEB_LOGIN] = { ctl_web_login, false, false },
	[CTL_WEB_SESSIONS] = { ctl_web_sessions, false, true },
	[CTL_CLEAR_QUARANTINE] = { ctl_clear_quarantine, true, false },
};

#define reply ctl_reply

int
control_listen(struct gw *gw)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = gw->opts.sock;
	char *dir, *slash;
	mode_t old;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control socket path too long: %s", path);
		return -1;
	}
	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) == -1 && errno != EEXIST)
			log_warn("mkdir %s", dir);
	}
	free(dir);
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -1;
	unlink(path);
	old = umask(0117);		/* srw-rw---- from the start */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 16) == -1) {
		umask(old);
		log_warn("control socket %s", path);
		close(fd);
		return -1;
	}
	umask(old);
	if (gw->moat_gid != (gid_t)-1 && chown(path, 0, gw->moat_gid) == -1)
		log_warn("chown %s", path);
	if (chmod(path, 0660) == -1)
		log_warn("chmod %s", path);
	ctl_of(gw)->ctlfd = fd;
	return 0;
}

void
control_unlink(struct gw *gw)
{
	if (ctl_of(gw)->ctlfd != -1) {
		close(ctl_of(gw)->ctlfd);
		unlink(gw->opts.sock);
	}
	ctl_of(gw)->ctlfd = -1;
}

/* Root, or a member of the moat group (primary or supplementary). */
static bool
peer_allowed(const struct gw *gw, uid_t uid, gid_t gid)
{
	struct passwd *pw;
	gid_t groups[256];
	int i, n = 256;

	if (uid == 0)
		return true;
	if (gw->moat_gid == (gid_t)-1)
		return false;
	if (gid == gw->moat_gid)
		return true;
	if ((pw = getpwuid(uid)) == NULL)
		return false;
	if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) == -1)
		return false;
	for (i = 0; i < n; i++)
		if (groups[i] == gw->moat_gid)
			return true;
	return false;
}

/*
 * The connection must be one accepted on our control socket, and its peer
 * the one the message names.  A control process could pass only what it
 * holds: its clients' connections, or sockets of its own, whose peer is
 * itself (or that have no name).
 */
static bool
creds_match(const struct gw *gw, int fd, uid_t uid, gid_t gid, pid_t pid)
{
	struct sockaddr_un sun;
	socklen_t sl = sizeof(sun), cl = sizeof(struct ucred), tl = sizeof(int);
	struct ucred cred;
	int type;

	memset(&sun, 0, sizeof(sun));
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == -1 ||
	    type != SOCK_STREAM ||
	    getsockname(fd, (struct sockaddr *)&sun, &sl) == -1 ||
	    sun.sun_family != AF_UNIX ||
	    strncmp(sun.sun_path, gw->opts.sock, sizeof(sun.sun_path)) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == -1)
		return false;
	return cred.uid == uid && cred.gid == gid && cred.pid == pid;
}

/* The caller's login name; a uid without one gets "#UID", which owns
 * nothing and matches no quota.  Neither that nor a name the loader
 * refuses (user@domain from a directory service) may be written as an
 * owner: it would make the configuration unloadable (ctl_may_own). */
static void
identify(struct gw *gw, struct ctl_req *r)
{
	struct passwd *pw = getpwuid(r->uid);

	r->has_login = pw != NULL;
	if (pw != NULL && strlen(pw->pw_name) < sizeof(r->userbuf))
		snprintf(r->userbuf, sizeof(r->userbuf), "%s", pw->pw_name);
	else
		snprintf(r->userbuf, sizeof(r->userbuf), "#%u",
		    (unsigned)r->uid);
	r->user = r->userbuf;
	r->may_own = pw != NULL && strcmp(r->user, pw->pw_name) == 0 &&
	    config_username_valid(r->user);
	r->admin = team_is_admin(gw->cfg, r->uid, pw ? pw->pw_name : NULL);
}

/* The message's words as argv; its shape was checked by ipc_check. */
static void
req_words(struct ctl_req *r, struct ipc_ctl_req *m, size_t len)
{
	char *w = m->data;
	int i;

	for (i = 0; i < m->argc; i++) {
		r->argv[r->argc++] = w;
		w += strlen(w) + 1;
	}
	r->body = m->bodylen ? (char *)m + len - m->bodylen : NULL;
}

/* Who is asking, checked; false if they were refused. */
static bool
admitted(struct ctl_req *r)
{
	char uidbuf[16];

	snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)r->uid);
	if (!creds_match(r->gw, r->conn, r->uid, r->gid, r->pid)) {
		audit_event(r->gw, "control-forged", "uid", uidbuf, "verb",
		    r->argv[0], NULL);
		reply(r, "error: permission denied: the request does not "
		    "match its connection\n");
		return false;
	}
	if (!peer_allowed(r->gw, r->uid, r->gid)) {
		audit_event(r->gw, "control-denied", "uid", uidbuf, NULL);
		reply(r, "error: permission denied: you are not in group "
		    GW_GROUP " (or root)\n");
		return false;
	}
	return true;
}

static void
dispatch(struct ctl_req *r, const int *fds, size_t nfds)
{
	char uidbuf[16];

	identify(r->gw, r);
	snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)r->uid);
	/* Arguments are not audited: they may name files; "secret set"
	 * carries its value in the body, which is never looked at here.
	 * provision's verbs are audited once their sandbox is known
	 * (team.c).  The web console's requests (no connection)
	 * are audited there, changes with the browser's address and
	 * session; its pages' reads, several a second, are not. */
	if (r->verb != CTL_LOG && ctl_table[r->verb].fn != team_provision &&
	    r->conn != -1)
		audit_event(r->gw, "control", "uid", uidbuf, "user", r->user,
		    "verb", r->argv[0], "sandbox", "", NULL);
	if (r->json && !ctl_table[r->verb].json) {
		reply(r, "error: %s has no --json output\n", r->argv[0]);
		return;
	}
	if (ctl_table[r->verb].admin && !r->admin) {
		ctl_refuse(r, NULL, "%s is for root and the admin group only",
		    r->argv[0]);
		return;
	}
	if (ctl_table[r->verb].fn == team_provision)
		team_provision_fds(r, fds, nfds);
	else
		ctl_table[r->verb].fn(r);
}

void
ctl_dispatch_as(struct ctl_req *r)
{
	char uidbuf[16];

	if (!peer_allowed(r->gw, r->uid, r->gid)) {
		snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)r->uid);
		audit_event(r->gw, "control-denied", "uid", uidbuf, NULL);
		reply(r, "error: permission denied: you are not in group "
		    GW_GROUP " (or root)\n");
		return;
	}
	dispatch(r, NULL, 0);
}

void
ctl_message(struct gw *gw, const struct ipc_hdr *h, void *payload,
    size_t len, int *fds, size_t nfds)
{
	struct ipc_ctl_req *m = payload;
	struct ctl_req r = { .gw = gw, .id = h->id, .end = IPC_CTL_END };
	size_t i;

	if (h->type == IPC_CTL_GONE) {
		if (ctl_of(gw)->ctl_followers > 0)
			ctl_of(gw)->ctl_followers--;
		goto out;
	}
	if (h->type != IPC_CTL_REQ || nfds != 1U + m->nfds)
		goto out;	/* the caller checked: cannot happen */
	r.uid = m->uid;
	r.gid = m->gid;
	r.pid = m->pid;
	r.conn = fds[0];
	r.verb = m->verb;
	r.json = m->json;
	req_words(&r, m, len);
	ctl_req_open(&r);
	if (admitted(&r))
		dispatch(&r, fds + 1, nfds - 1);
	if (r.job)
		r.end = IPC_CTL_MORE;	/* the verdict comes when it exits */
	else if (r.end == IPC_CTL_FOLLOW)
		ctl_of(gw)->ctl_followers++;
	ctl_req_flush(&r, r.end);
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	explicit_bzero(payload, len);	/* it may hold a secret's value */
}

bool
ctl_job_reaped(struct gw *gw, pid_t pid, int status)
{
	struct gw_job *j;
	char uid[16], code[16], msg[96];
	bool console;
	int i, n;

	for (i = 0; i < GW_MAX_CLIENTS; i++)
		if (ctl_of(gw)->jobs[i].pid == pid)
			break;
	if (i == GW_MAX_CLIENTS)
		return false;
	j = &ctl_of(gw)->jobs[i];
	console = j->console;
	if (console && !console_reaped(gw, j))
		status = 1 << 8;	/* no socket: it failed */
	snprintf(uid, sizeof(uid), "%u", (unsigned)j->uid);
	snprintf(code, sizeof(code), "%d", WIFEXITED(status) ?
	    WEXITSTATUS(status) : 128 + WTERMSIG(status));
	audit_event(gw, "control-done", "uid", uid, "user", j->user, "verb",
	    j->verb, "sandbox", j->sandbox, "result", WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0 ? "ok" : "failed", "exit", code, NULL);
	j->pid = 0;
	if (console)
		return true;	/* answered */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		n = snprintf(msg, sizeof(msg), "ok\n");
	else
		n = snprintf(msg, sizeof(msg), "error: provision %s failed "
		    "(exit %s)\n", j->verb, code);
	/* Only the control process that asked knows the request. */
	if (j->gen == ctl_of(gw)->ctl_gen)
		ctl_send(gw, j->id, IPC_CTL_END, msg, (size_t)n, -1);
	return true;
}

/* A child was stopped.  A console's runs as the guest's uid, so a guest
 * that escaped into its QEMU may stop it: it would never exit (its alarm
 * waits too) and would hold its job slot and leave the request
 * unanswered.  It is killed, and reaped as failed.  Any other child is
 * root's or a service user's, stopped by root: left alone. */
void
ctl_job_stopped(struct gw *gw, pid_t pid)
{
	int i;

	for (i = 0; i < GW_MAX_CLIENTS; i++)
		if (ctl_of(gw)->jobs[i].pid == pid && ctl_of(gw)->jobs[i].console) {
			kill(pid, SIGKILL);
			return;
		}
}

void
ctl_log_line(struct gw *gw, const char *line)
{
	int fd = gw->procs[PROC_CONTROL].ipc;

	if (ctl_of(gw)->ctl_followers > 0 && fd != -1 &&
	    ipc_send(fd, IPC_CTL_LOG, 0, line, strlen(line)) == -1 &&
	    errno != EMSGSIZE)
		ctl_of(gw)->ctl_followers = 0;	/* the control process is gone */
}

/* --- commands --------------------------------------------------------- */

/* A worker's signer, or 0: it exits with its worker, and is reaped
 * without bookkeeping, so ask the kernel. */
static pid_t
signer_alive(struct gw *gw, unsigned w)
{
	return proxy_of(gw)->signer_pid[w] > 0 && gw->procs[PROC_PROXY + w].pid > 0 &&
	    kill(proxy_of(gw)->signer_pid[w], 0) == 0 ? proxy_of(gw)->signer_pid[w] : 0;
}

/* Proxy workers past the configured number that are not running are
 * not shown. */
static bool
shown(struct gw *gw, int i)
{
	return !PROC_IS_PROXY(i) || (unsigned)(i - PROC_PROXY) < proxy_of(gw)->nworkers ||
	    gw->procs[i].pid > 0;
}

static void
status_json_children(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	const char *sep = "";
	int i;

	reply(r, "\"children\":[");
	for (i = 0; i < PROC_MAX; i++) {
		if (!shown(gw, i))
			continue;
		reply(r, "%s{\"name\":\"%s\",\"enabled\":%s,\"pid\":%d,"
		    "\"restarts\":%u", sep, gw->procs[i].name,
		    gw->procs[i].enabled ? "true" : "false",
		    (int)gw->procs[i].pid, gw->procs[i].restarts);
		if (PROC_IS_PROXY(i))
			reply(r, ",\"worker\":%d},{\"name\":\"signer\","
			    "\"enabled\":%s,\"pid\":%d,\"restarts\":0,"
			    "\"worker\":%d", i - PROC_PROXY,
			    gw->procs[i].enabled ? "true" : "false",
			    (int)signer_alive(gw, (unsigned)(i - PROC_PROXY)),
			    i - PROC_PROXY);
		reply(r, "}");
		sep = ",";
	}
	reply(r, "],\"proxy_workers\":%u,\"draining\":[", proxy_of(gw)->nworkers);
	sep = "";
	for (i = 0; i < GW_MAX_DRAINING; i++)
		if (gw->draining[i].pid > 0) {
			reply(r, "%s{\"worker\":%d,\"pid\":%d}", sep,
			    gw->draining[i].worker, (int)gw->draining[i].pid);
			sep = ",";
		}
	reply(r, "],");
}

static void
status_text_children(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	char name[16];
	time_t now = time(NULL);
	int i;

	for (i = 0; i < PROC_MAX; i++) {
		if (!shown(gw, i))
			continue;
		if (PROC_IS_PROXY(i))
			snprintf(name, sizeof(name), "proxy %d", i - PROC_PROXY);
		else
			snprintf(name, sizeof(name), "%s", gw->procs[i].name);
		if (!gw->procs[i].enabled)
			reply(r, "child      %-6s disabled\n", name);
		else if (gw->procs[i].pid > 0)
			reply(r, "child      %-6s running pid %d, %u restart(s)\n",
			    name, (int)gw->procs[i].pid, gw->procs[i].restarts);
		else
			reply(r, "child      %-6s down, restart in %us\n", name,
			    gw->procs[i].backoff_s);
		if (PROC_IS_PROXY(i) && signer_alive(gw, (unsigned)(i -
		    PROC_PROXY)) > 0)
			reply(r, "child      signer running pid %d, with proxy "
			    "%d\n", (int)proxy_of(gw)->signer_pid[i - PROC_PROXY],
			    i - PROC_PROXY);
	}
	for (i = 0; i < GW_MAX_DRAINING; i++)
		if (gw->draining[i].pid > 0)
			reply(r, "child      proxy %d draining pid %d, for %llds\n",
			    gw->draining[i].worker, (int)gw->draining[i].pid,
			    (long long)(now - gw->draining[i].since));
}

static void
ctl_status(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	time_t now = time(NULL);
	char refusals[320];
	bool fast;
	char *text;

	fast = policy_refusals_state(gw->cfg, refusals, sizeof(refusals));
	if (r->json) {
		reply(r, "{\"config\":");
		ctl_reply_jstr(r, gw->cfg->path);
		reply(r, ",\"uptime\":%lld,\"sandboxes\":%zu,"
		    "\"reloads\":%u,\"reload_failures\":%u,\"set_adds\":%llu,"
		    "\"set_refused\":%llu,\"refusals_fast\":%s,"
		    "\"refusals\":\"%s\",\"audit\":{\"rotations\":%llu,"
		    "\"dropped_lines\":%llu,\"suppressed\":%llu,\"lost\":%llu,"
		    "\"size_bytes\":%lld,\"max_bytes\":%lld},",
		    (long long)(now - gw->started), gw->cfg->nsandboxes,
		    reload_of(gw)->reloads, reload_of(gw)->reload_failures,
		    (unsigned long long)policy_of(gw)->set_adds,
		    (unsigned long long)policy_of(gw)->set_refused,
		    fast ? "true" : "false", refusals,
		    (unsigned long long)audit_of(gw)->audit.rotations,
		    (unsigned long long)audit_of(gw)->audit.dropped,
		    (unsigned long long)audit_of(gw)->audit.suppressed,
		    (unsigned long long)audit_of(gw)->audit.lost,
		    (long long)audit_of(gw)->audit.size,
		    (long long)gw->cfg->gw.audit_max_kb * 1024);
		gw_modules_status(r);
		status_json_children(r);
		net_status(r, &network_of(gw)->net);
		reply(r, "}\nok\n");
		return;
	}
	reply(r, "config     %s\nuptime     %llds\nsandboxes  %zu\n"
	    "reloads    %u (%u refused)\npolicy     applied (inet moat, "
	    "bridge moat)\nrefusals   %s\n", gw->cfg->path,
	    (long long)(now - gw->started), gw->cfg->nsandboxes, reload_of(gw)->reloads,
	    reload_of(gw)->reload_failures, refusals);
	gw_modules_status(r);
	text = audit_counters(gw);
	reply(r, "%s", text);
	free(text);
	net_status(r, &network_of(gw)->net);
	status_text_children(r);
	reply(r, "ok\n");
}

/* A sandbox's egress budget, after its traffic: bytes a window, spent
 * and left in this one, and whether its new flows are refused; then the
 * end of its line or object. */
static void
sandbox_budget(struct ctl_req *r, const struct gw_egress *e)
{
	unsigned long long b = e ? e->budget : 0, sp = e ? e->spent : 0;
	unsigned long long left = sp >= b ? 0 : b - sp;

	if (r->json) {
		if (b > 0)
			reply(r, ",\"egress_budget\":%llu,\"egress_spent\":%llu,"
			    "\"egress_left\":%llu,\"egress_refused\":%s", b, sp,
			    left, e->in_set ? "true" : "false");
		reply(r, "}");
	} else if (b > 0)
		reply(r, ", budget %llu B a day, spent %llu B, left %llu B%s\n",
		    b, sp, left, e->in_set ? " (spent: new flows refused)" : "");
	else
		reply(r, "\n");
}

/* A member sees only the sandboxes they own; admins see all.  Each with
 * its traffic, read from the kernel's accounting counters (zero where
 * they cannot be read: the listing is still worth having). */
static void
ctl_sandboxes(struct ctl_req *r)
{
	const struct moat_config *cfg = r->gw->cfg;
	struct nftr_acct *acct;
	uint32_t *live;
	bool live_known;
	char a[64];
	size_t i, shown = 0;

	acct = xcalloc(cfg->nsandboxes ? cfg->nsandboxes : 1, sizeof(*acct));
	live = xcalloc(cfg->nsandboxes ? cfg->nsandboxes : 1, sizeof(*live));
	live_known = policy_live_flows(cfg, live) == 0;
	if (r->gw->nft == NULL || nftr_acct_read(r->gw->nft, cfg, acct) == -1) {
		log_warnx("traffic accounting: %s", r->gw->nft ?
		    nftr_error(r->gw->nft) : "no netlink socket");
		memset(acct, 0, (cfg->nsandboxes ? cfg->nsandboxes : 1) *
		    sizeof(*acct));
	}
	if (r->json)
		reply(r, "[");
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *s = &cfg->sandboxes[i];
		const struct nftr_acct *t = &acct[i];

		if (!ctl_may_see(r, s->owner))
			continue;
		addr_fmt(&s->address, a, sizeof(a));
		if (r->json) {
			reply(r, "%s{\"name\":\"%s\",\"address\":\"%s\","
			    "\"tap\":\"%s\",\"egress\":\"%s\",\"owner\":",
			    shown ? "," : "", s->name, a, s->tap,
			    egress_name(s->egress));
			ctl_reply_jstr(r, s->owner);
			reply(r, ",\"allow\":%zu,\"secrets\":%zu,"
			    "\"bytes_in\":%llu,\"bytes_out\":%llu,"
			    "\"packets_in\":%llu,\"packets_out\":%llu,"
			    "\"conns_in\":%llu,\"conns_out\":%llu", s->allow.n,
			    s->secrets.n, (unsigned long long)t->bytes_in,
			    (unsigned long long)t->bytes_out,
			    (unsigned long long)t->packets_in,
			    (unsigned long long)t->packets_out,
			    (unsigned long long)t->conns_in,
			    (unsigned long long)t->conns_out);
			if (live_known)
				reply(r, ",\"connections_live\":%lu",
				    (unsigned long)live[i]);
			else
				reply(r, ",\"connections_live\":null");
		}
		else {
			reply(r, "%-16s %-15s %-10s %-9s %-10s in %llu B, out "
			    "%llu B, connections out %llu, in %llu", s->name,
			    a, s->tap, egress_name(s->egress),
			    s->owner ? s->owner : "-",
			    (unsigned long long)t->bytes_in,
			    (unsigned long long)t->bytes_out,
			    (unsigned long long)t->conns_out,
			    (unsigned long long)t->conns_in);
			if (live_known)
				reply(r, ", live %lu", (unsigned long)live[i]);
		}
		verdicts_sandbox(r, s->name);
		sandbox_budget(r, egress_of(r->gw, i));
		shown++;
	}
	free(acct);
	free(live);
	reply(r, r->json ? "]\nok\n" : "ok\n");
}

static void
ctl_reload(struct ctl_req *r)
{
	char *errors = NULL;

	if (gw_reload(r->gw, &errors) == 0) {
		reply(r, "ok\n");
		return;
	}
	ctl_reply_errors(r, errors, NULL, 0);
	reply(r, "error: configuration not reloaded; the previous policy "
	    "stays in force\n");
	free(errors);
}

/* Per sandbox: queries dnsd dropped over its rate (dns_rate). */
static void
dns_dropped(struct ctl_req *r)
{
	const struct moat_config *cfg = r->gw->cfg;
	uint64_t n;
	size_t i, j;

	for (i = 0; i < cfg->nsandboxes; i++) {
		const char *name = cfg->sandboxes[i].name;
		for (n = 0, j = 0; j < dnsd_of(r->gw)->ndnsdrops; j++)
			if (strcmp(dnsd_of(r->gw)->dnsdrops[j].sandbox, name) == 0)
				n = dnsd_of(r->gw)->dnsdrops[j].count;
		if (r->json)
			reply(r, "%s{\"sandbox\":\"%s\",\"queries\":%llu}",
			    i ? "," : "", name, (unsigned long long)n);
		else
			reply(r, "dns    %-10s %10llu queries dropped over the "
			    "sandbox's DNS rate\n", name, (unsigned long long)n);
	}
}

static void
ctl_counters(struct ctl_req *r)
{
	char *text = NULL;

	if (policy_counters(r->gw, r->json, &text) == -1) {
		reply(r, "error: cannot read counters\n");
		return;
	}
	if (r->json)
		reply(r, "{\"counters\":[%s],\"dns_dropped\":[", text);
	else {
		reply(r, "%s", text);
		free(text);
		text = audit_counters(r->gw);
		reply(r, "%s", text);
	}
	free(text);
	dns_dropped(r);
	reply(r, r->json ? "]}\nok\n" : "ok\n");
}

/* The last lines of the audit file, then (with -f) everything new. */
static void
ctl_log(struct ctl_req *r)
{
	char buf[65536];
	ssize_t n;
	off_t end;
	int fd;

	if (audit_of(r->gw)->audit_path != NULL &&
	    (fd = open(audit_of(r->gw)->audit_path, O_RDONLY | O_CLOEXEC)) != -1) {
		end = lseek(fd, 0, SEEK_END);
		if (end > (off_t)sizeof(buf) - 1)
			lseek(fd, end - (off_t)sizeof(buf) + 1, SEEK_SET);
		else
			lseek(fd, 0, SEEK_SET);
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			char *start = buf;
			buf[n] = '\0';
			if (end > n && (start = strchr(buf, '\n')) != NULL)
				start++;	/* skip a partial first line */
			else
				start = buf;
			reply(r, "%s", start);
		}
	}
	if (r->argc > 1 && strcmp(r->argv[1], "-f") == 0)
		r->end = IPC_CTL_FOLLOW;
	else
		reply(r, "ok\n");
}

/* "console NAME": the guest's serial console, connected as the guest's
 * own user (parent/console.c) by a child the parent does not wait for;
 * the fd goes back with "ok" when it exits (console_reaped), for its
 * owner (or an admin) only. */
static void
ctl_console(struct ctl_req *r)
{
	struct ctl_creds who = { .uid = r->uid, .gid = r->gid,
	    .user = r->user, .admin = r->admin };
	struct console_target t;
	struct gw_job *g = NULL;
	char err[256], *run_dir, *slash;
	int i, rc, back;
	pid_t pid;

	run_dir = xstrdup(r->gw->opts.sock);
	if ((slash = strrchr(run_dir, '/')) != NULL)
		*slash = '\0';
	rc = console_verb(r->gw->cfg, run_dir, r->argc, r->argv, &who, &t,
	    err, sizeof(err));
	free(run_dir);
	if (rc == -1) {
		ctl_refuse(r, r->argc > 1 ? r->argv[1] : NULL, "%s", err);
		return;
	}
	for (i = 0; i < GW_MAX_CLIENTS && g == NULL; i++)
		if (ctl_of(r->gw)->jobs[i].pid == 0)
			g = &ctl_of(r->gw)->jobs[i];
	if (g == NULL || (pid = connect_as_start(t.path, t.uid, t.gid,
	    &back)) == -1) {
		ctl_refuse(r, r->argv[1], "console: busy, try again later");
		return;
	}
	memset(g, 0, sizeof(*g));
	g->pid = pid;
	g->id = r->id;
	g->gen = ctl_of(r->gw)->ctl_gen;
	g->uid = r->uid;
	snprintf(g->user, sizeof(g->user), "%s", r->user);
	snprintf(g->verb, sizeof(g->verb), "console");
	snprintf(g->sandbox, sizeof(g->sandbox), "%s", r->argv[1]);
	g->console = true;
	g->back = back;
	g->peer = t.uid;
	r->job = true;
}

/* The console's child exited: its socket, if it made one whose server
 * is the QEMU user, goes to the client with "ok". */
static bool
console_reaped(struct gw *gw, struct gw_job *j)
{
	char msg[128], err[100];
	int fd = connect_as_take(j->back, j->peer);

	close(j->back);
	j->console = false;
	console_gone(j->sandbox, err, sizeof(err));
	if (fd == -1)
		snprintf(msg, sizeof(msg), "error: %s\n", err);
	else
		snprintf(msg, sizeof(msg), "ok\n");
	if (j->gen == ctl_of(gw)->ctl_gen)
		ctl_send(gw, j->id, IPC_CTL_END, msg, strlen(msg), fd);
	if (fd != -1)
		close(fd);
	return fd != -1;
}

static void
ctl_init(void *state)
{
	struct gw_ctl *st = state;

	st->ctlfd = -1;
}

const struct gw_module ctl_module = {
	.name = "ctl",
	.size = sizeof(struct gw_ctl),
	.init = ctl_init,
	.start = control_listen,
	.stop = control_unlink,
};
