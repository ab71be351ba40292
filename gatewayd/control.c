/*
 * control.c -- the control socket: a unix stream socket, mode 0660, group
 * moat.  Only root and members of the moat group may connect (checked
 * again with SO_PEERCRED, not just by file mode).
 *
 * Protocol: the client sends one line "VERB [--json] [ARGS]" (words
 * percent-encoded, see ctl_word_decode); the server answers with body
 * lines and then one terminal line, "ok" or "error: MESSAGE".  "log -f"
 * streams audit lines until the client goes.  "secret set" is followed by
 * one more line, the secret's value, which is wiped from the buffer when
 * the connection ends.  Writes never block the daemon: a client that
 * cannot keep up is dropped.
 *
 * Every caller is named by SO_PEERCRED.  Members of group moat see and
 * manage only what they own; root and gateway.admin_group see everything.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

typedef void (*ctl_fn)(struct ctl_req *);

static void ctl_status(struct ctl_req *);
static void ctl_sandboxes(struct ctl_req *);
static void ctl_reload(struct ctl_req *);
static void ctl_counters(struct ctl_req *);
static void ctl_log(struct ctl_req *);
static void ctl_console(struct ctl_req *);

/* admin: root or gateway.admin_group only.  body: a second line (the
 * secret's value) follows the request.  json: the verb has a --json form
 * (for "secret", only "secret list" does; see secret.c). */
static const struct {
	const char	*verb;
	ctl_fn		 fn;
	bool		 admin;
	bool		 body;
	bool		 json;
} ctl_table[] = {
	{ "status", ctl_status, false, false, true },
	{ "sandboxes", ctl_sandboxes, false, false, true },
	{ "list", team_list, false, false, true },
	{ "reload", ctl_reload, false, false, false },
	{ "counters", ctl_counters, true, false, true },
	{ "log", ctl_log, true, false, true },
	{ "create", team_provision, false, false, false },
	{ "start", team_provision, false, false, false },
	{ "stop", team_provision, false, false, false },
	{ "destroy", team_provision, false, false, false },
	{ "secret", team_secret, false, true, true },
	{ "console", ctl_console, false, false, false },
};
#define NVERBS	(sizeof(ctl_table) / sizeof(ctl_table[0]))

/* The buffer may have held a secret's value: wipe it all, every time. */
static void
client_drop(struct gw_client *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
	c->follow = false;
	c->job = 0;
	explicit_bzero(c->buf, sizeof(c->buf));
}

static void
client_write(struct gw_client *c, const char *s, size_t n)
{
	ssize_t w;

	while (n > 0 && c->fd != -1) {
		w = send(c->fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			client_drop(c);	/* gone, or too slow to keep up */
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void
vreply(struct ctl_req *r, const char *fmt, va_list ap)
{
	char *s;
	int n;

	if ((n = vasprintf(&s, fmt, ap)) < 0)
		fatalx("out of memory");
	client_write(r->c, s, (size_t)n);
	free(s);
}

void
ctl_reply(struct ctl_req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreply(r, fmt, ap);
	va_end(ap);
}
#define reply ctl_reply

/* A JSON string (escaped), or null for NULL. */
void
ctl_reply_jstr(struct ctl_req *r, const char *s)
{
	char *e;

	if (s == NULL) {
		reply(r, "null");
		return;
	}
	e = json_escape(s);
	reply(r, "\"%s\"", e);
	free(e);
}

void
ctl_refuse(struct ctl_req *r, const char *sandbox, const char *fmt, ...)
{
	char uid[16], *msg;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	snprintf(uid, sizeof(uid), "%u", (unsigned)r->c->uid);
	audit_event(r->gw, "control-refused", "uid", uid, "user", r->user,
	    "verb", r->argv[0], "sandbox", sandbox ? sandbox : "",
	    "reason", msg, NULL);
	reply(r, "error: %s\n", msg);
	free(msg);
}

bool
ctl_may_see(const struct ctl_req *r, const char *owner)
{
	return r->admin || (owner != NULL && strcmp(owner, r->user) == 0);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int
ctl_word_decode(char *s)
{
	char *o = s;
	int hi, lo;

	for (; *s; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		if ((hi = hexval(s[1])) == -1 || (lo = hexval(s[2])) == -1 ||
		    (hi | lo) == 0)
			return -1;
		*o++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*o = '\0';
	return 0;
}

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
	gw->ctlfd = fd;
	return 0;
}

/* Root, or a member of the moat group (primary or supplementary). */
static bool
peer_allowed(struct gw *gw, uid_t uid, gid_t gid)
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

void
control_accept(struct gw *gw)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char uidbuf[16];
	int fd, i;

	fd = accept4(gw->ctlfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd == -1)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1 ||
	    !peer_allowed(gw, cred.uid, cred.gid)) {
		static const char msg[] = "error: permission denied: you are "
		    "not in group " GW_GROUP " (or root)\n";
		(void)!send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)cred.uid);
		audit_event(gw, "control-denied", "uid", uidbuf, NULL);
		close(fd);
		return;
	}
	for (i = 0; i < GW_MAX_CLIENTS; i++)
		if (gw->clients[i].fd == -1)
			break;
	if (i == GW_MAX_CLIENTS) {
		close(fd);
		return;
	}
	gw->clients[i].fd = fd;
	gw->clients[i].uid = cred.uid;
	gw->clients[i].gid = cred.gid;
	gw->clients[i].len = 0;
	gw->clients[i].job = 0;
	gw->clients[i].follow = false;
}

/* The caller's login name; a uid without one gets "#UID", which owns
 * nothing and matches no quota. */
static void
identify(struct gw *gw, struct gw_client *c, struct ctl_req *r)
{
	struct passwd *pw = getpwuid(c->uid);

	if (pw != NULL && strlen(pw->pw_name) < sizeof(c->user))
		snprintf(c->user, sizeof(c->user), "%s", pw->pw_name);
	else
		snprintf(c->user, sizeof(c->user), "#%u", (unsigned)c->uid);
	r->user = c->user;
	r->admin = team_is_admin(gw->cfg, c->uid, pw ? pw->pw_name : NULL);
}

static size_t
verb_index(const char *verb)
{
	size_t i;

	for (i = 0; i < NVERBS; i++)
		if (strcmp(ctl_table[i].verb, verb) == 0)
			break;
	return i;
}

static void
dispatch(struct gw *gw, struct gw_client *c, char *line, char *body)
{
	struct ctl_req r = { .gw = gw, .c = c, .body = body };
	char *tok, *save = NULL, uidbuf[16];
	size_t i;

	identify(gw, c, &r);
	for (tok = strtok_r(line, " \t", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t", &save)) {
		if (ctl_word_decode(tok) == -1) {
			reply(&r, "error: malformed request\n");
			return;
		}
		if (strcmp(tok, "--json") == 0)
			r.json = true;
		else if (r.argc == GW_CTL_MAX_ARGS) {
			reply(&r, "error: too many arguments\n");
			return;
		} else
			r.argv[r.argc++] = tok;
	}
	if (r.argc == 0) {
		reply(&r, "error: empty request\n");
		return;
	}
	i = verb_index(r.argv[0]);
	snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)c->uid);
	if (i == NVERBS) {
		reply(&r, "error: unknown command \"%.64s\" (status, sandboxes, "
		    "list, create, start, stop, destroy, console, secret, "
		    "reload, counters, log)\n", r.argv[0]);
		return;
	}
	/* Arguments are not audited: they may name files; "secret set"
	 * carries its value on the next line, which is never looked at
	 * here.  provision's verbs are audited once their sandbox is known
	 * (team.c). */
	if (strcmp(r.argv[0], "log") != 0 && ctl_table[i].fn != team_provision)
		audit_event(gw, "control", "uid", uidbuf, "user", r.user,
		    "verb", r.argv[0], "sandbox", "", NULL);
	if (r.json && !ctl_table[i].json) {
		reply(&r, "error: %s has no --json output\n", r.argv[0]);
		return;
	}
	if (ctl_table[i].admin && !r.admin) {
		ctl_refuse(&r, NULL, "%s is for root and the admin group only",
		    r.argv[0]);
		return;
	}
	ctl_table[i].fn(&r);
}

/* "secret set ..." is followed by the value's line. */
static bool
wants_body(const char *line)
{
	char verb[16];
	size_t n = strcspn(line, " \t");

	if (n == 0 || n >= sizeof(verb))
		return false;
	memcpy(verb, line, n);
	verb[n] = '\0';
	n = verb_index(verb);
	return n < NVERBS && ctl_table[n].body &&
	    strncmp(line + strlen(verb), " set", 4) == 0;
}

void
control_readable(struct gw *gw, int slot)
{
	struct gw_client *c = &gw->clients[slot];
	char *nl, *end, *body;
	ssize_t n;

	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len - 1, 0);
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			client_drop(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if (c->follow)		/* followers only listen */
		return;
	if ((nl = strchr(c->buf, '\n')) == NULL) {
		if (c->len == sizeof(c->buf) - 1) {
			client_write(c, "error: request too long\n", 24);
			client_drop(c);
		}
		return;
	}
	body = NULL;
	if (wants_body(c->buf)) {
		if ((end = strchr(nl + 1, '\n')) == NULL) {
			if (c->len == sizeof(c->buf) - 1) {
				client_write(c, "error: request too long\n", 24);
				client_drop(c);
			}
			return;		/* the value is still on its way */
		}
		*end = '\0';
		body = nl + 1;
	}
	*nl = '\0';
	if (nl > c->buf && nl[-1] == '\r')
		nl[-1] = '\0';
	dispatch(gw, c, c->buf, body);
	/* One request per connection, except followers and jobs, whose
	 * provision process still writes to it. */
	if (c->job > 0)
		explicit_bzero(c->buf, sizeof(c->buf));
	else if (!c->follow)
		client_drop(c);
	else
		c->len = 0;
}

bool
control_job_reaped(struct gw *gw, pid_t pid, int status)
{
	struct gw_client *c;
	char uid[16], code[16];
	int i;

	for (i = 0; i < GW_MAX_CLIENTS; i++)
		if (gw->clients[i].fd != -1 && gw->clients[i].job == pid)
			break;
	if (i == GW_MAX_CLIENTS)
		return false;
	c = &gw->clients[i];
	snprintf(uid, sizeof(uid), "%u", (unsigned)c->uid);
	snprintf(code, sizeof(code), "%d", WIFEXITED(status) ?
	    WEXITSTATUS(status) : 128 + WTERMSIG(status));
	audit_event(gw, "control-done", "uid", uid, "user", c->user, "verb",
	    c->verb, "sandbox", c->sandbox, "result", WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0 ? "ok" : "failed", "exit", code, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		client_write(c, "ok\n", 3);
	else {
		char msg[96];
		int n = snprintf(msg, sizeof(msg), "error: provision %s failed "
		    "(exit %s)\n", c->verb, code);
		client_write(c, msg, (size_t)n);
	}
	client_drop(c);
	return true;
}

void
control_broadcast_log(struct gw *gw, const char *line)
{
	int i;

	for (i = 0; i < GW_MAX_CLIENTS; i++)
		if (gw->clients[i].fd != -1 && gw->clients[i].follow)
			client_write(&gw->clients[i], line, strlen(line));
}

void
control_close_all(struct gw *gw)
{
	int i;

	for (i = 0; i < GW_MAX_CLIENTS; i++)
		client_drop(&gw->clients[i]);
	if (gw->ctlfd != -1) {
		close(gw->ctlfd);
		unlink(gw->opts.sock);
	}
	gw->ctlfd = -1;
}

/* --- commands --------------------------------------------------------- */

/* The current proxy's signer, or 0: it exits with its proxy, and is
 * reaped without bookkeeping, so ask the kernel. */
static pid_t
signer_alive(struct gw *gw)
{
	return gw->signer_pid > 0 && gw->procs[PROC_PROXY].pid > 0 &&
	    kill(gw->signer_pid, 0) == 0 ? gw->signer_pid : 0;
}

static void
ctl_status(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	time_t now = time(NULL);
	char refusals[320];
	bool fast;
	char *text;
	int i;

	fast = policy_refusals_state(gw->cfg, refusals, sizeof(refusals));
	if (r->json) {
		reply(r, "{\"config\":");
		ctl_reply_jstr(r, gw->cfg->path);
		reply(r, ",\"uptime\":%lld,\"sandboxes\":%zu,"
		    "\"reloads\":%u,\"reload_failures\":%u,\"set_adds\":%llu,"
		    "\"set_refused\":%llu,\"refusals_fast\":%s,"
		    "\"refusals\":\"%s\",\"audit\":{\"rotations\":%llu,"
		    "\"dropped_lines\":%llu,\"suppressed\":%llu,\"lost\":%llu},"
		    "\"children\":[",
		    (long long)(now - gw->started), gw->cfg->nsandboxes,
		    gw->reloads, gw->reload_failures,
		    (unsigned long long)gw->set_adds,
		    (unsigned long long)gw->set_refused,
		    fast ? "true" : "false", refusals,
		    (unsigned long long)gw->audit.rotations,
		    (unsigned long long)gw->audit.dropped,
		    (unsigned long long)gw->audit.suppressed,
		    (unsigned long long)gw->audit.lost);
		for (i = 0; i < PROC_MAX; i++)
			reply(r, "%s{\"name\":\"%s\",\"enabled\":%s,\"pid\":%d,"
			    "\"restarts\":%u}", i ? "," : "", gw->procs[i].name,
			    gw->procs[i].enabled ? "true" : "false",
			    (int)gw->procs[i].pid, gw->procs[i].restarts);
		reply(r, ",{\"name\":\"signer\",\"enabled\":%s,\"pid\":%d,"
		    "\"restarts\":0}],", gw->procs[PROC_PROXY].enabled ?
		    "true" : "false", (int)signer_alive(gw));
		net_status(r, &gw->net);
		reply(r, "}\nok\n");
		return;
	}
	reply(r, "config     %s\nuptime     %llds\nsandboxes  %zu\n"
	    "reloads    %u (%u refused)\npolicy     applied (inet moat, "
	    "bridge moat)\nrefusals   %s\n", gw->cfg->path,
	    (long long)(now - gw->started), gw->cfg->nsandboxes, gw->reloads,
	    gw->reload_failures, refusals);
	text = audit_counters(gw);
	reply(r, "%s", text);
	free(text);
	net_status(r, &gw->net);
	for (i = 0; i < PROC_MAX; i++) {
		if (!gw->procs[i].enabled)
			reply(r, "child      %-6s disabled\n", gw->procs[i].name);
		else if (gw->procs[i].pid > 0)
			reply(r, "child      %-6s running pid %d, %u restart(s)\n",
			    gw->procs[i].name, (int)gw->procs[i].pid,
			    gw->procs[i].restarts);
		else
			reply(r, "child      %-6s down, restart in %us\n",
			    gw->procs[i].name, gw->procs[i].backoff_s);
	}
	if (signer_alive(gw) > 0)
		reply(r, "child      signer running pid %d, with the proxy\n",
		    (int)gw->signer_pid);
	reply(r, "ok\n");
}

/* A member sees only the sandboxes they own; admins see all. */
static void
ctl_sandboxes(struct ctl_req *r)
{
	const struct moat_config *cfg = r->gw->cfg;
	char a[64];
	size_t i, shown = 0;

	if (r->json)
		reply(r, "[");
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *s = &cfg->sandboxes[i];
		if (!ctl_may_see(r, s->owner))
			continue;
		addr_fmt(&s->address, a, sizeof(a));
		if (r->json) {
			reply(r, "%s{\"name\":\"%s\",\"address\":\"%s\","
			    "\"tap\":\"%s\",\"egress\":\"%s\",\"owner\":",
			    shown ? "," : "", s->name, a, s->tap,
			    egress_name(s->egress));
			ctl_reply_jstr(r, s->owner);
			reply(r, ",\"allow\":%zu,\"secrets\":%zu}", s->allow.n,
			    s->secrets.n);
		}
		else
			reply(r, "%-16s %-15s %-10s %-9s %s\n", s->name, a, s->tap,
			    egress_name(s->egress), s->owner ? s->owner : "-");
		shown++;
	}
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
	reply(r, "%serror: configuration not reloaded; the previous policy "
	    "stays in force\n", errors ? errors : "");
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
		for (n = 0, j = 0; j < r->gw->ndnsdrops; j++)
			if (strcmp(r->gw->dnsdrops[j].sandbox, name) == 0)
				n = r->gw->dnsdrops[j].count;
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

	if (r->gw->audit_path != NULL &&
	    (fd = open(r->gw->audit_path, O_RDONLY | O_CLOEXEC)) != -1) {
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
			client_write(r->c, start, strlen(start));
		}
	}
	if (r->argc > 1 && strcmp(r->argv[1], "-f") == 0)
		r->c->follow = true;
	else
		reply(r, "ok\n");
}

/* "ok" with the descriptor attached (SCM_RIGHTS): the client's provision
 * console reads the guest's console from it directly. */
static int
reply_fd(struct ctl_req *r, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = "ok\n", .iov_len = 3 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;

	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(r->c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == 3 ? 0 : -1;
}

static void
ctl_console(struct ctl_req *r)
{
	struct ctl_creds who = { .uid = r->c->uid, .gid = r->c->gid,
	    .user = r->user, .admin = r->admin };
	char err[256], *run_dir, *slash;
	int fd;

	run_dir = xstrdup(r->gw->opts.sock);
	if ((slash = strrchr(run_dir, '/')) != NULL)
		*slash = '\0';
	fd = console_verb(r->gw->cfg, run_dir, r->argc, r->argv, &who, err,
	    sizeof(err));
	free(run_dir);
	if (fd == -1) {
		ctl_refuse(r, r->argc > 1 ? r->argv[1] : NULL, "%s", err);
		return;
	}
	if (reply_fd(r, fd) == -1)
		log_warn("console: passing the descriptor");
	close(fd);
}
