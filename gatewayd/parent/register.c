/*
 * parent/register.c -- the parent's side of the registration endpoint:
 * it binds the listening socket and reads the box's certificate and key
 * for the registration process (register.c), and answers that process's
 * typed requests.  Every decision is taken here, against the parent's own
 * configuration: the host is found by its key (the pin), its claim goes
 * through admit_registration(), the drop-in is written atomically in
 * sandboxes.d with the host's mark (never over a file that is not the
 * host's own drop-in, and under provision's lock on sandboxes.d), and
 * the change is applied like a reload (one transaction, deltas only).
 * "ok" goes back only after the kernel has it; a failed apply puts the
 * old drop-ins back exactly, as for every verb that writes the
 * configuration (lib/cfgtxn.h).  Refusals are audited and counted per
 * host.
 */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit_reg.h"
#include "cfgtxn.h"
#include "confpath.h"
#include "gw.h"
#include "reload.h"
#include "audit.h"
#include "reg.h"
#include "ctl.h"
#include "ha.h"
#include "log.h"
#include "smallfile.h"
#include "../register/register.h"

#define DROPIN_MAX	8192

/* A listening TCP socket on "ADDR:PORT" ("[V6]:PORT" too), which the
 * config loader checked; -1 with the reason logged. */
int
gw_listen_tcp(const char *l, const char *what)
{
	const char *colon = strrchr(l, ':');
	struct sockaddr_storage ss;
	struct moat_addr a;
	char host[64];
	socklen_t sl;
	int fd, one = 1;

	snprintf(host, sizeof(host), "%.*s", (int)(colon - l), l);
	if (host[0] == '[' && strlen(host) > 2) {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if (addr_parse(host, &a) == -1) {
		log_warnx("%s.listen: cannot use \"%s\"", what, l);
		return -1;
	}
	sl = addr_to_sockaddr(&a, (uint16_t)strtol(colon + 1, NULL, 10), &ss);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(fd, 16) == -1) {
		log_warn("%s: listen on %s", what, l);
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

int
reg_listen(struct gw *gw)
{
	const char *l = gw->cfg->gw.reg_listen;

	reg_of(gw)->regfd = -1;
	if (l == NULL)
		return 0;
	if ((reg_of(gw)->regfd = gw_listen_tcp(l, "registration")) == -1)
		return -1;
	log_info("registration endpoint %s: %zu hosts", l, gw->cfg->nhosts);
	return 0;
}

#define SLURP_MAX	16384	/* a drop-in, the endpoint's cert or key */

/* A whole small file (not a symlink) into a malloc'ed buffer; -1 if it
 * cannot be read, is empty or is SLURP_MAX bytes or more. */
static int
slurp(const char *path, char **buf, size_t *len)
{
	*buf = read_small_file(path, SLURP_MAX, len);
	if (*buf != NULL && *len > 0 && *len < SLURP_MAX)
		return 0;
	if (*buf != NULL) {
		explicit_bzero(*buf, *len);
		free(*buf);
	}
	*buf = NULL;
	*len = 0;
	return -1;
}

/* A TLS endpoint's certificate and key, read as root for a process that
 * cannot open them; what: the endpoint, for the message. */
int
reg_pem_load(const char *cert, const char *key, const char *what,
    struct reg_pem *pem)
{
	memset(pem, 0, sizeof(*pem));
	if (slurp(cert, &pem->cert, &pem->certlen) == -1 ||
	    slurp(key, &pem->key, &pem->keylen) == -1) {
		log_warnx("%s: cannot read %s or %s", what, cert, key);
		reg_pem_wipe(pem);
		return -1;
	}
	return 0;
}

int
reg_pem_read(const struct gw *gw, struct reg_pem *pem)
{
	return reg_pem_load(gw->cfg->gw.reg_cert, gw->cfg->gw.reg_key,
	    "registration", pem);
}

/* --- per-host state, kept across reloads by name ---------------------- */

static struct gw_hoststat *
hoststat(struct gw *gw, const char *name)
{
	size_t i;

	for (i = 0; i < reg_of(gw)->nhoststats; i++)
		if (strcmp(reg_of(gw)->hoststats[i].name, name) == 0)
			return &reg_of(gw)->hoststats[i];
	reg_of(gw)->hoststats = xreallocarray(reg_of(gw)->hoststats, reg_of(gw)->nhoststats + 1,
	    sizeof(*reg_of(gw)->hoststats));
	memset(&reg_of(gw)->hoststats[i], 0, sizeof(reg_of(gw)->hoststats[i]));
	snprintf(reg_of(gw)->hoststats[i].name, sizeof(reg_of(gw)->hoststats[i].name), "%s",
	    name);
	reg_of(gw)->nhoststats++;
	return &reg_of(gw)->hoststats[i];
}

/* --- drop-ins ----------------------------------------------------------- */

static void
dropin_path(const struct gw *gw, const char *name, char *buf, size_t len)
{
	char *p = confpath_sandbox(gw->cfg->path, name);

	snprintf(buf, len, "%s", p != NULL ? p : "");
	free(p);
}

/* Does the drop-in NAME, as it is on disk now, still carry host's mark?
 * -1: no such file; 0: a file that is not this host's (not a regular
 * file, not readable or another mark: a local sandbox, say, written and
 * not yet loaded).  Who registered what is known from the loaded config
 * (registered_by); this guards a write or an unlink against a file that
 * appeared or was replaced since the last load. */
static int
dropin_still_marked(const struct gw *gw, const char *name, const char *host)
{
	char path[4096], line[128], want[128];
	struct stat st;
	ssize_t n;
	int fd, own;

	dropin_path(gw, name, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY)) == -1)
		return errno == ENOENT ? -1 : 0;
	snprintf(want, sizeof(want), MOAT_REG_MARK "%s\n", host);
	own = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (n = read(fd, line, sizeof(line) - 1)) > 0) {
		line[n] = '\0';
		own = strncmp(line, want, strlen(want)) == 0;
	}
	close(fd);
	return own;
}

/*
 * provision's lock: the sandboxes.d folder itself, flock(2)ed (provision
 * create, destroy and the box sync take it around their drop-in's check
 * and write), so a registration never writes between another writer's
 * check and its write.  Never waited for: the root loop must not block
 * on provision; a busy box refuses and the host asks again.  The fd, or
 * -1 with why set.
 */
static int
sbdir_lock(struct gw *gw, char *why, size_t len)
{
	char *path = confpath_dir(gw->cfg->path, "sandboxes.d");
	int fd;

	if (mkdir(path, 0755) == -1 && errno != EEXIST)
		log_warn("mkdir %s", path);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		log_warn("registration: %s", path);
		snprintf(why, len, "the box cannot write its configuration");
		free(path);
		return -1;
	}
	free(path);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		snprintf(why, len, "the box is changing its configuration; "
		    "try again");
		close(fd);
		return -1;
	}
	return fd;
}

size_t
reg_count(const struct gw *gw, const struct moat_host *h)
{
	size_t i, n = 0;

	for (i = 0; i < gw->cfg->nsandboxes; i++)
		if (reg_owned(&gw->cfg->sandboxes[i], h))
			n++;
	return n;
}

static void
list_items(FILE *fp, const char *key, const char *list)
{
	const char *p = list, *c;

	if (*list == '\0')
		return;
	fprintf(fp, "%s = [ ", key);
	for (; ; p = c + 1) {
		c = strchr(p, ',');
		fprintf(fp, "\"%.*s\"%s", (int)(c ? c - p : (int)strlen(p)), p,
		    c ? ", " : " ];\n");
		if (c == NULL)
			break;
	}
}

/* The drop-in for an admitted claim: every value was checked by
 * admit_registration, so none can break out of its quotes. */
static char *
dropin_text(const struct moat_host *h, const struct reg_claim *c, size_t *len)
{
	char *buf = NULL, mac[18];
	FILE *fp = open_memstream(&buf, len);
	size_t i;

	if (fp == NULL)
		fatalx("out of memory");
	for (i = 0; i < sizeof(mac) - 1; i++)
		mac[i] = (char)(c->mac[i] | (c->mac[i] == ':' ? 0 : 0x20));
	mac[sizeof(mac) - 1] = '\0';
	fprintf(fp, MOAT_REG_MARK "%s\nname = \"%s\";\naddress = \"%s\";\n"
	    "mac = \"%s\";\ntap = \"%s\";\negress = \"%s\";\n", h->name,
	    c->name, c->address, mac, c->name, c->egress);
	list_items(fp, "allow", c->allow);
	list_items(fp, "secrets", c->secrets);
	fprintf(fp, "trunk = \"%s\";\n", h->trunk);
	fclose(fp);
	return buf;
}

/* Put the staged change in place and apply it like a reload: 0, or -1
 * with the first error in why and the old files back (lib/cfgtxn.h). */
static int
apply(struct gw *gw, struct cfgtxn *t, char *why, size_t len)
{
	char *errors = NULL;
	int rc = 0;

	if (cfgtxn_commit_and_check(t, gw_reload_check, gw, &errors) == -1) {
		snprintf(why, len, "the box could not apply it: %.*s",
		    errors ? (int)strcspn(errors, "\n") : 7, errors ? errors :
		    "unknown");
		rc = -1;
	}
	free(errors);
	cfgtxn_end(t);
	return rc;
}

/* --- the verbs -------------------------------------------------------------- */

struct reg_ctx {
	struct gw		*gw;
	const struct moat_host	*h;	/* until an apply replaces cfg */
	char			 host[IPC_NAME_LEN];	/* its name, after */
	const struct ipc_reg_req *m;
	char			 why[256];	/* a refusal's reason */
	FILE			*out;		/* list's body */
};

static int
do_register(struct reg_ctx *x)
{
	const struct ipc_reg_req *m = x->m;
	struct reg_claim c = { m->name, m->address, m->mac, m->egress,
	    m->text, m->secrets };
	struct cfgtxn *t;
	char path[4096], *text, *cur = NULL;
	size_t len, clen = 0;
	bool same;
	int own;

	if (admit_registration(x->gw->cfg, x->h, &c, x->why,
	    sizeof(x->why)) == -1)
		return -1;
	/* A file there that is not this host's own (a local sandbox
	 * written and not yet loaded, say) is never replaced. */
	if ((own = dropin_still_marked(x->gw, m->name, x->h->name)) == 0) {
		snprintf(x->why, sizeof(x->why), "name used by another "
		    "sandbox (sandboxes.d/%s.conf is not this host's)",
		    m->name);
		return -1;
	}
	text = dropin_text(x->h, &c, &len);
	dropin_path(x->gw, m->name, path, sizeof(path));
	if (own == 1 && slurp(path, &cur, &clen) == -1)
		cur = NULL;
	same = cur != NULL && clen == len && memcmp(cur, text, len) == 0 &&
	    config_sandbox_by_name(x->gw->cfg, m->name) != NULL;
	free(cur);
	if (same) {
		free(text);		/* already so, and applied */
		return 0;
	}
	t = cfgtxn_begin(x->gw->cfg->path);
	/* A new one is created, never written over a file that appears
	 * meanwhile; the host's own is replaced. */
	if ((own == 1 ? cfgtxn_stage_write : cfgtxn_stage_create)(t, path,
	    text, len, 0640, 0, 0) == -1) {
		snprintf(x->why, sizeof(x->why), "cannot write the drop-in");
		cfgtxn_end(t);
		free(text);
		return -1;
	}
	free(text);
	return apply(x->gw, t, x->why, sizeof(x->why));
}

static int
do_remove(struct reg_ctx *x)
{
	const struct moat_sandbox *sb;
	struct cfgtxn *t;
	char path[4096];

	/* The name becomes a path: nothing but a sandbox name gets there. */
	if (!reg_name_valid(x->m->name)) {
		snprintf(x->why, sizeof(x->why), "no such sandbox");
		return -1;
	}
	/* To a host, a sandbox no host registered is no sandbox at all. */
	if ((sb = config_sandbox_by_name(x->gw->cfg, x->m->name)) == NULL ||
	    sb->registered_by == NULL) {
		snprintf(x->why, sizeof(x->why), "no such sandbox");
		return -1;
	}
	if (!reg_owned(sb, x->h) ||
	    dropin_still_marked(x->gw, sb->name, x->h->name) != 1) {
		snprintf(x->why, sizeof(x->why), "not this host's sandbox");
		return -1;
	}
	dropin_path(x->gw, x->m->name, path, sizeof(path));
	t = cfgtxn_begin(x->gw->cfg->path);
	cfgtxn_stage_remove(t, path);
	return apply(x->gw, t, x->why, sizeof(x->why));
}

/* The host's full list ("-" for none): every sandbox it registered that
 * is not on it goes, in one apply.  Registering the listed ones is the
 * host's business, with register lines. */
static int
do_sync(struct reg_ctx *x)
{
	const struct moat_config *cfg = x->gw->cfg;
	struct cfgtxn *t = cfgtxn_begin(cfg->path);
	char **gone = xcalloc(cfg->nsandboxes + 1, sizeof(*gone));
	char path[4096];
	size_t i, n = 0;
	int rc = 0;

	for (i = 0; i < cfg->nsandboxes; i++) {
		const char *name = cfg->sandboxes[i].name;

		if (reg_list_has(x->m->text, name) ||
		    !reg_owned(&cfg->sandboxes[i], x->h) ||
		    dropin_still_marked(x->gw, name, x->h->name) != 1)
			continue;
		dropin_path(x->gw, name, path, sizeof(path));
		cfgtxn_stage_remove(t, path);
		gone[n++] = xstrdup(name);
	}
	if (n > 0)
		rc = apply(x->gw, t, x->why, sizeof(x->why));
	else
		cfgtxn_end(t);
	for (i = 0; i < n; i++) {
		if (rc == 0)
			audit_event(x->gw, "registration", "host", x->host,
			    "request", "sync", "removed", gone[i], NULL);
		free(gone[i]);
	}
	free(gone);
	return rc;
}

static int
do_list(struct reg_ctx *x)
{
	const struct moat_config *cfg = x->gw->cfg;
	char a[64];
	size_t i;

	for (i = 0; i < cfg->nsandboxes; i++)
		if (reg_owned(&cfg->sandboxes[i], x->h))
			fprintf(x->out, "%s %s\n", cfg->sandboxes[i].name,
			    addr_fmt(&cfg->sandboxes[i].address, a, sizeof(a)));
	return 0;
}

static int
do_hello(struct reg_ctx *x)
{
	(void)x;
	return 0;
}

static const struct {
	const char	*name;
	int		(*fn)(struct reg_ctx *);
	bool		 changes;
} reg_verbs[REG_VERB_MAX] = {
	[REG_HELLO] = { "connect", do_hello, false },
	[REG_REGISTER] = { "register", do_register, true },
	[REG_REMOVE] = { "remove", do_remove, true },
	[REG_SYNC] = { "sync", do_sync, false },	/* audits each */
	[REG_LIST] = { "list", do_list, false },
};

static void
reply(struct gw *gw, int fd, int32_t status, const char *text, size_t len)
{
	static union {
		struct ipc_reg_reply r;
		char raw[IPC_MAX_PAYLOAD];
	} u;

	if (len > sizeof(u.raw) - sizeof(u.r)) {
		status = 1;
		text = "the answer is too long";
		len = strlen(text);
	}
	u.r.status = status;
	memcpy(u.r.text, text, len);
	if (ipc_send(fd, IPC_REG_REPLY, 0, &u, sizeof(u.r) + len) == -1)
		log_warn("registration: reply");
	(void)gw;
}

static void
refused(struct gw *gw, const char *host, const char *verb,
    const char *sandbox, const char *why)
{
	log_warnx("registration from %s refused: %s%s%s: %s", host, verb,
	    sandbox[0] ? " " : "", sandbox, why);
	audit_event(gw, "registration-refused", "host", host, "request", verb,
	    "sandbox", sandbox, "reason", why, NULL);
}

static void
unknown_key(struct gw *gw, int fd, const struct ipc_reg_req *m)
{
	static const char why[] = "unknown host key";
	char hex[65];
	size_t i;

	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->key[i]);
	reg_of(gw)->reg_unknown++;
	refused(gw, hex, reg_verbs[m->verb].name, m->name, why);
	reply(gw, fd, 1, why, sizeof(why) - 1);
}

/* The verbs that may write sandboxes.d. */
static bool
writes(uint32_t verb)
{
	return verb == REG_REGISTER || verb == REG_REMOVE || verb == REG_SYNC;
}

void
reg_dispatch(struct gw *gw, struct gw_proc *p, int fd, const struct gw_msg *m)
{
	const struct ipc_reg_req *r = (const struct ipc_reg_req *)m->data;

	/* Applied here: the other box of a pair applies it too. */
	if (reg_message(gw, fd, r) == 0 && (r->verb == REG_REGISTER ||
	    r->verb == REG_REMOVE || r->verb == REG_SYNC))
		harepl_forward(gw, IPC_REG_REQ, r, m->len);
}

int
reg_message(struct gw *gw, int fd, const struct ipc_reg_req *m)
{
	struct reg_ctx x = { .gw = gw, .m = m };
	struct gw_hoststat *st;
	char *body = NULL;
	size_t blen = 0;
	int rc, lockfd;

	if ((x.h = admit_host_by_key(gw->cfg, m->key)) == NULL) {
		unknown_key(gw, fd, m);
		return -1;
	}
	snprintf(x.host, sizeof(x.host), "%s", x.h->name);
	st = hoststat(gw, x.host);
	st->last_seen = time(NULL);
	if ((x.out = open_memstream(&body, &blen)) == NULL)
		fatalx("out of memory");
	lockfd = -1;
	if (writes(m->verb) &&
	    (lockfd = sbdir_lock(gw, x.why, sizeof(x.why))) == -1)
		rc = -1;
	else
		rc = reg_verbs[m->verb].fn(&x);
	if (lockfd != -1)
		close(lockfd);
	fclose(x.out);
	x.h = NULL;	/* it may point into a configuration the apply freed */
	if (rc == -1) {
		hoststat(gw, x.host)->refusals++;
		refused(gw, x.host, reg_verbs[m->verb].name, m->name, x.why);
		reply(gw, fd, 1, x.why, strlen(x.why));
	} else {
		if (m->verb == REG_REGISTER)
			audit_event(gw, "registration", "host", x.host,
			    "request", "register", "sandbox", m->name,
			    "address", m->address, "egress", m->egress,
			    "secrets", m->secrets, NULL);
		else if (reg_verbs[m->verb].changes)
			audit_event(gw, "registration", "host", x.host,
			    "request", reg_verbs[m->verb].name, "sandbox",
			    m->name, NULL);
		reply(gw, fd, 0, body, blen);
	}
	free(body);
	return rc == -1 ? -1 : 0;
}

/* --- gatewayd ctl hosts -------------------------------------------------- */

static void
fingerprint(const struct moat_host *h, char *buf, size_t len)
{
	snprintf(buf, len, "sha256:%02x%02x%02x%02x%02x%02x%02x%02x", h->key[0],
	    h->key[1], h->key[2], h->key[3], h->key[4], h->key[5], h->key[6],
	    h->key[7]);
}

void
ctl_hosts(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	const struct moat_host *h;
	struct gw_hoststat *st;
	char fp[32], pool[64], seen[32];
	size_t i;

	if (r->json)
		ctl_reply(r, "[");
	for (i = 0; i < gw->cfg->nhosts; i++) {
		h = &gw->cfg->hosts[i];
		st = hoststat(gw, h->name);
		fingerprint(h, fp, sizeof(fp));
		prefix_fmt(&h->pool, pool, sizeof(pool));
		if (st->last_seen == 0)
			snprintf(seen, sizeof(seen), "never");
		else
			strftime(seen, sizeof(seen), "%Y-%m-%dT%H:%M:%SZ",
			    gmtime(&st->last_seen));
		if (r->json)
			ctl_reply(r, "%s{\"name\":\"%s\",\"key\":\"%s\",\"pool\":"
			    "\"%s\",\"trunk\":\"%s\",\"last_seen\":%s%s%s,"
			    "\"sandboxes\":%zu,\"refusals\":%llu}", i ? "," : "",
			    h->name, fp, pool, h->trunk,
			    st->last_seen ? "\"" : "",
			    st->last_seen ? seen : "null",
			    st->last_seen ? "\"" : "", reg_count(gw, h),
			    (unsigned long long)st->refusals);
		else
			ctl_reply(r, "%-16s %-24s %-18s %-10s %-20s %4zu %6llu\n",
			    h->name, fp, pool, h->trunk, seen,
			    reg_count(gw, h),
			    (unsigned long long)st->refusals);
	}
	if (!r->json)
		ctl_reply(r, "unknown keys refused: %llu\n",
		    (unsigned long long)reg_of(gw)->reg_unknown);
	ctl_reply(r, r->json ? "]\nok\n" : "ok\n");
}

static void
reg_init(void *state)
{
	struct gw_reg *st = state;

	st->regfd = -1;
}

static void
reg_stop(struct gw *gw)
{
	if (reg_of(gw)->regfd != -1)
		close(reg_of(gw)->regfd);
	reg_of(gw)->regfd = -1;
	free(reg_of(gw)->hoststats);
	reg_of(gw)->hoststats = NULL;
	reg_of(gw)->nhoststats = 0;
}

const struct gw_module reg_module = {
	.name = "reg",
	.size = sizeof(struct gw_reg),
	.init = reg_init,
	.start = reg_listen,
	.stop = reg_stop,
};
