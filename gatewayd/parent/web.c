/*
 * web.c -- the parent's side of the web console.
 *
 * moat-web (gatewayd/web/) serves the pages and holds nothing else: no
 * right, no user, no session it could mint.  Here the parent
 *   - binds gateway.web.listen and reads (or makes, once, in state_dir)
 *     the console's own certificate, never the interception CA;
 *   - issues one-time login links to whoever runs `ctl web-login` (a
 *     control request, so its user is the one SO_PEERCRED proved);
 *   - turns a link into a session bound to that user, and every request
 *     moat-web sends for a session into a control request of that user,
 *     checked and answered by the same handlers as `gatewayd ctl`.
 * Secrets (links, sessions, CSRF tokens) are 32 random bytes, compared in
 * constant time; a link works once.  So a compromised moat-web can act
 * only with the sessions browsers present to it, for their remaining
 * time, and only as their users could from a shell.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "web.h"
#include "../register/register.h"
#include "audit.h"
#include "commit.h"
#include "ctl.h"
#include "proc.h"
#include "proxy.h"
#include "reg.h"
#include "refused.h"
#include "ipc.h"
#include "log.h"

#ifndef MOAT_DATADIR
#define MOAT_DATADIR	"/usr/share/moat"
#endif
#define SECRET_LEN	32

struct link {
	unsigned char	 secret[SECRET_LEN];
	uid_t		 uid;
	time_t		 expires;	/* 0: free */
	long		 session;	/* seconds the session will last */
};

struct session {
	unsigned char	 secret[SECRET_LEN];
	unsigned char	 csrf[SECRET_LEN];
	char		 id[13];	/* public: for lists and the audit */
	uid_t		 uid;
	char		 user[33];
	char		 from[IPC_WEB_FROM_LEN];
	time_t		 created, expires, last;	/* expires 0: free */
};

static struct {
	int		 fd;		/* the listener, -1: off */
	char		 fingerprint[3 * 32];
	char		 url[128];	/* https://ADDR:PORT */
	struct link	 links[WEB_MAX_LINKS];
	struct session	 sessions[WEB_MAX_SESSIONS];
	struct session	*current;	/* the session a request runs for */
} W = { .fd = -1 };

static void
hex(const unsigned char *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* 64 hex digits into SECRET_LEN bytes; -1 if it is not that. */
static int
unhex(const char *s, unsigned char *b)
{
	size_t i;
	int hi, lo;

	if (strlen(s) != 2 * SECRET_LEN)
		return -1;
	for (i = 0; i < SECRET_LEN; i++) {
		hi = OPENSSL_hexchar2int((unsigned char)s[2 * i]);
		lo = OPENSSL_hexchar2int((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* --- the certificate --------------------------------------------------- */

/* A self-signed P-256 certificate for the listener's address, made once
 * and kept in state_dir/web (the key 0600, root's). */
static int
cert_make(const char *host, const char *cert, const char *key)
{
	EVP_PKEY *pk = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *n;
	X509_EXTENSION *ext;
	char san[128];
	FILE *fp = NULL;
	int fd, rc = -1;

	if (pk == NULL || x == NULL)
		goto out;
	X509_set_version(x, 2);
	{
		unsigned char serial[16];
		BIGNUM *bn;

		RAND_bytes(serial, sizeof(serial));
		serial[0] &= 0x7f;
		bn = BN_bin2bn(serial, sizeof(serial), NULL);
		BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
		BN_free(bn);
	}
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 825L * 86400);
	X509_set_pubkey(x, pk);
	n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)"moat web console", -1, -1, 0);
	X509_set_issuer_name(x, n);
	snprintf(san, sizeof(san), "%s:%s", strchr(host, ':') ? "IP" :
	    strspn(host, "0123456789.") == strlen(host) ? "IP" : "DNS", host);
	if ((ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name,
	    san)) != NULL) {
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
	}
	if (X509_sign(x, pk, EVP_sha256()) == 0)
		goto out;
	if ((fd = open(key, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600))
	    == -1 || (fp = fdopen(fd, "w")) == NULL ||
	    PEM_write_PrivateKey(fp, pk, NULL, NULL, 0, NULL, NULL) != 1 ||
	    fclose(fp) != 0) {
		log_warn("web: cannot write %s", key);
		goto out;
	}
	if ((fp = fopen(cert, "we")) == NULL || PEM_write_X509(fp, x) != 1 ||
	    fclose(fp) != 0) {
		log_warn("web: cannot write %s", cert);
		goto out;
	}
	log_info("web: made a certificate of its own in %s", cert);
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(pk);
	return rc;
}

/* The certificate's files: the configured ones, else state_dir/web's,
 * made if missing. */
static int
cert_paths(struct gw *gw, char *cert, char *key, size_t room)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	char dir[512], host[64];
	const char *colon = strrchr(g->web_listen, ':');

	if (g->web_cert != NULL) {
		snprintf(cert, room, "%s", g->web_cert);
		snprintf(key, room, "%s", g->web_key);
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s/web", g->state_dir);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		log_warn("web: mkdir %s", dir);
		return -1;
	}
	snprintf(cert, room, "%s/cert.pem", dir);
	snprintf(key, room, "%s/key.pem", dir);
	if (access(cert, R_OK) == 0 && access(key, R_OK) == 0)
		return 0;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - g->web_listen),
	    g->web_listen);
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	return cert_make(host, cert, key);
}

static int
fingerprint(const char *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	unsigned char md[32];
	unsigned int n = sizeof(md), i;
	int rc = -1;

	if (x != NULL && X509_digest(x, EVP_sha256(), md, &n) == 1) {
		for (i = 0; i < n; i++)
			snprintf(W.fingerprint + 3 * i, 4, "%02X%s", md[i],
			    i + 1 < n ? ":" : "");
		rc = 0;
	}
	X509_free(x);
	BIO_free(b);
	return rc;
}

int
web_listen(struct gw *gw)
{
	const char *l = gw->cfg->gw.web_listen;
	struct web_boot b;

	if (l == NULL)
		return 0;
	if ((W.fd = gw_listen_tcp(l, "web")) == -1)
		return -1;
	snprintf(W.url, sizeof(W.url), "https://%s", l);
	/* Made or read now, so that a broken certificate stops the start
	 * and ctl web-login can print the fingerprint. */
	if (web_boot_prepare(gw, &b) == -1)
		return -1;
	web_boot_wipe(&b);
	log_info("web console %s/ (certificate SHA-256 %s)", W.url,
	    W.fingerprint);
	return 0;
}

bool
web_enabled(void)
{
	return W.fd != -1;
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

void
web_reload(struct gw *gw, const struct moat_config *old)
{
	const struct moat_gateway *o = &old->gw, *n = &gw->cfg->gw;
	struct gw_proc *p = &gw->procs[PROC_WEB];
	int fd = -1;

	if (same_str(o->web_listen, n->web_listen) &&
	    same_str(o->web_cert, n->web_cert) &&
	    same_str(o->web_key, n->web_key))
		return;
	if (!same_str(o->web_listen, n->web_listen)) {
		if (n->web_listen != NULL &&
		    (fd = gw_listen_tcp(n->web_listen, "web")) == -1) {
			log_warnx("web: cannot listen on %s; the console stays "
			    "%s", n->web_listen, W.fd != -1 ? W.url : "off");
			audit_event(gw, "web-moved", "result", "failed", "listen",
			    n->web_listen, NULL);
			return;
		}
		if (W.fd != -1)
			close(W.fd);
		W.fd = fd;
		if (fd != -1)
			snprintf(W.url, sizeof(W.url), "https://%s",
			    n->web_listen);
		log_info("web console %s", fd != -1 ? W.url : "closed");
	}
	/* A new process with the new listener and certificate; the
	 * sessions are the parent's and stay. */
	p->enabled = W.fd != -1;
	if (p->pid > 0)
		proc_restart(gw, PROC_WEB);
	else if (p->enabled)
		p->restart_at = time(NULL);
}

/* --- the pages --------------------------------------------------------- */

static const char *
mime(const char *name)
{
	static const struct { const char *ext, *type; } t[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
	};
	const char *dot = strrchr(name, '.');
	size_t i;

	for (i = 0; dot != NULL && i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(dot, t[i].ext) == 0)
			return t[i].type;
	return NULL;
}

/* The files of the pages' folder (MOAT_WEB_ROOT, for a build tree, else
 * the installed one), read here: the web process opens no file. */
static int
pages_read(struct web_boot *b)
{
	const char *root = getenv("MOAT_WEB_ROOT");
	struct dirent *e;
	struct stat st;
	char path[1024];
	DIR *d;
	int fd;

	if (root == NULL)
		root = MOAT_DATADIR "/web";
	if ((d = opendir(root)) == NULL) {
		log_warn("web: pages folder %s", root);
		return -1;
	}
	while ((e = readdir(d)) != NULL && b->nfiles < WEB_MAX_FILES) {
		struct web_file *f = &b->files[b->nfiles];

		if (e->d_name[0] == '.' || mime(e->d_name) == NULL ||
		    strlen(e->d_name) + 2 > sizeof(f->path))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
			continue;
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
		    st.st_size > WEB_MAX_FILE) {
			close(fd);
			continue;
		}
		f->len = (size_t)st.st_size;
		f->data = xmalloc(f->len + 1);
		if (read(fd, f->data, f->len) != (ssize_t)f->len) {
			free(f->data);
			close(fd);
			continue;
		}
		close(fd);
		/* "/NAME": its length was checked above. */
		f->path[0] = '/';
		memcpy(f->path + 1, e->d_name, strlen(e->d_name) + 1);
		f->type = mime(e->d_name);
		b->nfiles++;
	}
	closedir(d);
	return 0;
}

int
web_boot_prepare(struct gw *gw, struct web_boot *b)
{
	struct reg_pem pem;
	char cert[600], key[600];

	memset(b, 0, sizeof(*b));
	b->listen = W.fd;
	if (cert_paths(gw, cert, key, sizeof(cert)) == -1 ||
	    reg_pem_load(cert, key, "web", &pem) == -1)
		return -1;
	b->cert = pem.cert;
	b->certlen = pem.certlen;
	b->key = pem.key;
	b->keylen = pem.keylen;
	if (fingerprint(b->cert, b->certlen) == -1) {
		log_warnx("web: %s: not a PEM certificate", cert);
		web_boot_wipe(b);
		return -1;
	}
	if (pages_read(b) == -1) {
		web_boot_wipe(b);
		return -1;
	}
	return 0;
}

void
web_boot_wipe(struct web_boot *b)
{
	struct reg_pem pem = { b->cert, b->key, b->certlen, b->keylen };
	size_t i;

	reg_pem_wipe(&pem);
	for (i = 0; i < b->nfiles; i++)
		free(b->files[i].data);
	memset(b, 0, sizeof(*b));
	b->listen = -1;
}

/* --- links and sessions ------------------------------------------------ */

void
web_forget(void)
{
	explicit_bzero(W.links, sizeof(W.links));
	explicit_bzero(W.sessions, sizeof(W.sessions));
}

static void
expire(time_t now)
{
	size_t i;

	for (i = 0; i < WEB_MAX_LINKS; i++)
		if (W.links[i].expires != 0 && W.links[i].expires <= now)
			explicit_bzero(&W.links[i], sizeof(W.links[i]));
	for (i = 0; i < WEB_MAX_SESSIONS; i++)
		if (W.sessions[i].expires != 0 && W.sessions[i].expires <= now)
			explicit_bzero(&W.sessions[i], sizeof(W.sessions[i]));
}

/* The session whose secret this is, compared in constant time against
 * every live one; NULL if none. */
static struct session *
session_find(const char *token)
{
	unsigned char b[SECRET_LEN];
	struct session *found = NULL;
	size_t i;

	expire(time(NULL));
	if (unhex(token, b) == -1)
		return NULL;
	for (i = 0; i < WEB_MAX_SESSIONS; i++)
		if (W.sessions[i].expires != 0 &&
		    CRYPTO_memcmp(W.sessions[i].secret, b, SECRET_LEN) == 0)
			found = &W.sessions[i];
	explicit_bzero(b, sizeof(b));
	return found;
}

static struct session *
session_by_id(const char *id)
{
	size_t i;

	for (i = 0; i < WEB_MAX_SESSIONS; i++)
		if (W.sessions[i].expires != 0 &&
		    strcmp(W.sessions[i].id, id) == 0)
			return &W.sessions[i];
	return NULL;
}

/* A free slot, or the one that ends first. */
static struct session *
session_slot(void)
{
	struct session *s = &W.sessions[0];
	size_t i;

	for (i = 0; i < WEB_MAX_SESSIONS; i++) {
		if (W.sessions[i].expires == 0)
			return &W.sessions[i];
		if (W.sessions[i].expires < s->expires)
			s = &W.sessions[i];
	}
	return s;
}

static void
user_of(uid_t uid, char *out, size_t room)
{
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL && strlen(pw->pw_name) < room)
		snprintf(out, room, "%s", pw->pw_name);
	else
		snprintf(out, room, "#%u", (unsigned)uid);
}

/* web-login [--for DURATION] [--session DURATION]: how long the link is
 * good and how long the session it opens lasts; -1 on a usage error. */
static int
login_args(struct ctl_req *r, long *link, long *session)
{
	long v;
	int i;

	*link = WEB_LINK_S;
	*session = WEB_SESSION_S;
	for (i = 1; i < r->argc; i += 2) {
		if (i + 1 >= r->argc || gw_duration(r->argv[i + 1], &v) == -1 ||
		    v <= 0)
			return -1;
		if (strcmp(r->argv[i], "--for") == 0 && v <= WEB_LINK_MAX_S)
			*link = v;
		else if (strcmp(r->argv[i], "--session") == 0 &&
		    v <= WEB_SESSION_S)
			*session = v;
		else
			return -1;
	}
	return 0;
}

void
ctl_web_login(struct ctl_req *r)
{
	time_t now = time(NULL);
	struct link *l = NULL;
	char tok[2 * SECRET_LEN + 1], vs[24], ss[24];
	long secs, session;
	size_t i;

	if (W.fd == -1) {
		ctl_reply(r, "error: the web console is off: set "
		    "gateway.web.listen to a management address\n");
		return;
	}
	if (login_args(r, &secs, &session) == -1) {
		ctl_reply(r, "error: usage: web-login [--for DURATION] "
		    "[--session DURATION] (the link: at most %d minutes; the "
		    "session: at most %d hours)\n", WEB_LINK_MAX_S / 60,
		    WEB_SESSION_S / 3600);
		return;
	}
	expire(now);
	for (i = 0; i < WEB_MAX_LINKS && l == NULL; i++)
		if (W.links[i].expires == 0)
			l = &W.links[i];
	if (l == NULL) {
		ctl_reply(r, "error: %d login links are waiting to be used; "
		    "try again in a few minutes\n", WEB_MAX_LINKS);
		return;
	}
	if (RAND_bytes(l->secret, SECRET_LEN) != 1)
		fatalx("web: no randomness");
	l->uid = r->uid;
	l->expires = now + secs;
	l->session = session;
	hex(l->secret, SECRET_LEN, tok);
	snprintf(vs, sizeof(vs), "%ld", secs);
	snprintf(ss, sizeof(ss), "%ld", session);
	audit_event(r->gw, "web-link", "user", r->user, "valid_s", vs,
	    "session_s", ss, NULL);
	ctl_reply(r, "%s/login?t=%s\n", W.url, tok);
	ctl_reply(r, "one use, valid for %ld seconds; the certificate's "
	    "SHA-256 fingerprint is\n%s\n", secs, W.fingerprint);
	explicit_bzero(tok, sizeof(tok));
}

static void
sessions_list(struct ctl_req *r, time_t now)
{
	const char *sep = "";
	size_t i;

	if (r->json)
		ctl_reply(r, "[");
	for (i = 0; i < WEB_MAX_SESSIONS; i++) {
		const struct session *s = &W.sessions[i];

		if (s->expires == 0 || !ctl_may_see(r, s->user))
			continue;
		if (r->json) {
			ctl_reply(r, "%s{\"id\":\"%s\",\"user\":", sep, s->id);
			ctl_reply_jstr(r, s->user);
			ctl_reply(r, ",\"from\":");
			ctl_reply_jstr(r, s->from);
			ctl_reply(r, ",\"created\":%lld,\"last\":%lld,"
			    "\"expires\":%lld,\"ends_in_s\":%lld}",
			    (long long)s->created, (long long)s->last,
			    (long long)s->expires,
			    (long long)(s->expires - now));
			sep = ",";
		} else
			ctl_reply(r, "%s %-12s from %s, ends in %lldm\n", s->id,
			    s->user, s->from,
			    (long long)(s->expires - now + 59) / 60);
	}
	if (r->json)
		ctl_reply(r, "]\n");
}

/* The caller's own session, for the page (only through moat-web). */
static void
session_self(struct ctl_req *r, time_t now)
{
	const struct session *s = W.current;
	char csrf[2 * SECRET_LEN + 1];

	hex(s->csrf, SECRET_LEN, csrf);
	ctl_reply(r, "{\"id\":\"%s\",\"user\":", s->id);
	ctl_reply_jstr(r, s->user);
	ctl_reply(r, ",\"admin\":%s,\"csrf\":\"%s\",\"ends_in_s\":%lld}\n",
	    r->admin ? "true" : "false", csrf, (long long)(s->expires - now));
	explicit_bzero(csrf, sizeof(csrf));
}

void
ctl_web_sessions(struct ctl_req *r)
{
	time_t now = time(NULL);
	struct session *s;

	expire(now);
	if (r->argc == 1) {
		sessions_list(r, now);
		return;
	}
	if (r->argc == 2 && strcmp(r->argv[1], "self") == 0 &&
	    W.current != NULL) {
		session_self(r, now);
		return;
	}
	if (r->argc != 3 || strcmp(r->argv[1], "revoke") != 0) {
		ctl_reply(r, "error: usage: web-sessions [--json] | web-sessions "
		    "revoke ID\n");
		return;
	}
	if ((s = session_by_id(r->argv[2])) == NULL ||
	    !ctl_may_see(r, s->user)) {
		ctl_refuse(r, NULL, "no web session %s of yours", r->argv[2]);
		return;
	}
	audit_event(r->gw, "web-revoke", "user", r->user, "session", s->id,
	    "of", s->user, NULL);
	explicit_bzero(s, sizeof(*s));
	ctl_reply(r, "ok\n");
}

/* --- moat-web's requests ----------------------------------------------- */

static void
web_send(struct gw *gw, int fd, uint32_t id, const char *text, size_t len)
{
	static union {
		struct ipc_ctl_reply m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	const size_t room = sizeof(u.raw) - sizeof(u.m);
	size_t n;

	do {
		n = len > room ? room : len;
		memset(&u.m, 0, sizeof(u.m));
		u.m.end = (uint8_t)(n == len ? IPC_CTL_END : IPC_CTL_MORE);
		memcpy(u.m.text, text, n);
		if (ipc_send(fd, IPC_WEB_REPLY, id, &u.m, sizeof(u.m) + n) == -1) {
			proc_kill(gw, PROC_WEB, "it does not take its replies");
			return;
		}
		text += n;
		len -= n;
	} while (len > 0);
}

/* A link's token: its user's new session, or a refusal.  The link is
 * spent whatever follows. */
static void
web_login(struct gw *gw, int fd, uint32_t id, const struct ipc_web_req *m)
{
	unsigned char b[SECRET_LEN];
	struct link *l = NULL;
	struct session *s;
	time_t now = time(NULL);
	char out[512], sec[2 * SECRET_LEN + 1], idb[8];
	long life;
	size_t i;
	int n;

	expire(now);
	if (unhex(m->token, b) == 0)
		for (i = 0; i < WEB_MAX_LINKS; i++)
			if (W.links[i].expires != 0 &&
			    CRYPTO_memcmp(W.links[i].secret, b,
			    SECRET_LEN) == 0)
				l = &W.links[i];
	explicit_bzero(b, sizeof(b));
	if (l == NULL) {
		audit_event(gw, "web-login-refused", "from", m->from, "reason",
		    "unknown, used or expired link", NULL);
		n = snprintf(out, sizeof(out), "error: this login link is "
		    "unknown, used or expired; run gatewayd ctl web-login "
		    "again\n");
		web_send(gw, fd, id, out, (size_t)n);
		return;
	}
	s = session_slot();
	explicit_bzero(s, sizeof(*s));
	s->uid = l->uid;
	life = l->session;
	explicit_bzero(l, sizeof(*l));		/* one use */
	if (RAND_bytes(s->secret, SECRET_LEN) != 1 ||
	    RAND_bytes(s->csrf, SECRET_LEN) != 1 ||
	    RAND_bytes((unsigned char *)idb, 6) != 1)
		fatalx("web: no randomness");
	hex((unsigned char *)idb, 6, s->id);
	user_of(s->uid, s->user, sizeof(s->user));
	snprintf(s->from, sizeof(s->from), "%s", m->from);
	s->created = s->last = now;
	s->expires = now + life;
	hex(s->secret, SECRET_LEN, sec);
	audit_event(gw, "web-login", "user", s->user, "from", s->from,
	    "session", s->id, NULL);
	n = snprintf(out, sizeof(out), "ok %s %ld\n", sec, life);
	web_send(gw, fd, id, out, (size_t)n);
	explicit_bzero(sec, sizeof(sec));
	explicit_bzero(out, sizeof(out));
}

/* What a page may ask, and whether it changes anything (then it must
 * carry the session's CSRF token). */
static const struct {
	int	verb;
	bool	changes;
} web_verbs[] = {
	{ CTL_STATUS, false }, { CTL_SANDBOXES, false },
	{ CTL_REFUSED, false }, { CTL_GRANTS, false }, { CTL_LOG, false },
	{ CTL_ALLOW, true }, { CTL_UNALLOW, true },
	{ CTL_WEB_SESSIONS, false },
};

static int
web_verb(int verb)
{
	size_t i;

	for (i = 0; i < sizeof(web_verbs) / sizeof(web_verbs[0]); i++)
		if (web_verbs[i].verb == verb)
			return (int)i;
	return -1;
}

static void
web_ctl(struct gw *gw, int fd, uint32_t id, struct ipc_web_req *m,
    size_t len)
{
	struct ctl_req r = { .gw = gw, .id = id, .end = IPC_CTL_END,
	    .conn = -1 };
	unsigned char csrf[SECRET_LEN];
	struct session *s = session_find(m->token);
	struct passwd *pw;
	const char *why = NULL;
	char *w = m->req.data;
	int v = web_verb(m->req.verb), i;

	for (i = 0; i < m->req.argc; i++) {
		r.argv[r.argc++] = w;
		w += strlen(w) + 1;
	}
	if (s == NULL)
		why = "error: not logged in (the session ended or was revoked)\n";
	else if (v == -1)
		why = "error: the web console cannot do that\n";
	else if ((web_verbs[v].changes || (r.verb == CTL_WEB_SESSIONS &&
	    (r.argc != 2 || strcmp(r.argv[1], "self") != 0))) &&
	    (unhex(m->csrf, csrf) == -1 ||
	    CRYPTO_memcmp(csrf, s->csrf, SECRET_LEN) != 0))
		why = "error: the request lacks this session's CSRF token\n";
	if (why != NULL) {
		audit_event(gw, "web-refused", "from", m->from, "session",
		    s ? s->id : "", "verb", ipc_ctl_verb_name(m->req.verb),
		    "reason", why + 7, NULL);
		web_send(gw, fd, id, why, strlen(why));
		return;
	}
	s->last = time(NULL);
	r.uid = s->uid;
	r.gid = (pw = getpwuid(s->uid)) != NULL ? pw->pw_gid : (gid_t)-1;
	r.verb = m->req.verb;
	r.json = m->req.json;
	(void)len;
	if (web_verbs[v].changes || r.argc > 2)
		audit_event(gw, "web", "user", s->user, "from", m->from,
		    "session", s->id, "verb", r.argv[0], "sandbox",
		    r.argc > 1 ? r.argv[1] : "", NULL);
	ctl_req_open(&r);
	W.current = s;
	ctl_dispatch_as(&r);
	W.current = NULL;
	fclose(r.out);
	r.out = NULL;
	web_send(gw, fd, id, r.outbuf, r.outlen);
	free(r.outbuf);
}

void
web_dispatch(struct gw *gw, struct gw_proc *p, int fd, const struct gw_msg *m)
{
	struct ipc_web_req *w = m->data;
	struct session *s;

	switch (w->kind) {
	case IPC_WEB_LOGIN:
		web_login(gw, fd, m->h->id, w);
		break;
	case IPC_WEB_LOGOUT:
		if ((s = session_find(w->token)) != NULL) {
			audit_event(gw, "web-logout", "user", s->user, "from",
			    w->from, "session", s->id, NULL);
			explicit_bzero(s, sizeof(*s));
		}
		web_send(gw, fd, m->h->id, "ok\n", 3);
		break;
	default:
		web_ctl(gw, fd, m->h->id, w, m->len);
		break;
	}
	explicit_bzero(w->token, sizeof(w->token));
	explicit_bzero(w->csrf, sizeof(w->csrf));
}

/* After a change of the files: the console added, moved or gone. */
static void
web_on_commit(struct gw *gw, const struct gw_commit *c)
{
	if (c->file_changed)
		web_reload(gw, c->old);
}

const struct gw_module web_module = {
	.name = "web",
	.size = sizeof(char),
	.start = web_listen,
	.on_commit = web_on_commit,
};
