/*
 * register.c -- a separate gateway box's registration endpoint: KVM
 * hosts register, change and remove their sandboxes over TLS, each host
 * known only by the SHA-256 of its certificate's public key (hosts = in
 * moat.conf).  A request becomes a drop-in in sandboxes.d, checked by
 * loading the whole config, and a SIGHUP to the parent, whose reload is
 * incremental.
 *
 * The TLS handshake and the line parsing run in a child forked at start,
 * not in the parent.  The child still runs as root (it writes
 * sandboxes.d); it serves one connection at a time with socket timeouts.
 *
 * Protocol, one line each way:
 *   register NAME ADDRESS MAC EGRESS  -> ok | error REASON
 *   remove NAME                       -> ok | error REASON
 *   sync NAME,NAME,... | sync -       -> ok (drops the host's others)
 *   list                              -> NAME ADDRESS ... then "ok"
 *   quit
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gatewayd.h"
#include "log.h"
#include "ranges.h"

#define REG_MARK	"# registered by host "
#define REG_LINE_MAX	512

static int reg_fd = -1;
static pid_t reg_pid = -1;

int
reg_listen(struct gw *gw)
{
	const char *l = gw->cfg->gw.reg_listen;
	char host[64];
	const char *colon;
	struct moat_addr a;
	struct sockaddr_storage ss;
	socklen_t sl;
	long port;
	int one = 1;

	if (l == NULL)
		return 0;
	colon = strrchr(l, ':');
	port = strtol(colon + 1, NULL, 10);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - l), l);
	if (addr_parse(host, &a) == -1 || port < 1 || port > 65535) {
		log_warnx("registration.listen: cannot use \"%s\"", l);
		return -1;
	}
	sl = addr_to_sockaddr(&a, (uint16_t)port, &ss);
	reg_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (reg_fd == -1 ||
	    setsockopt(reg_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(reg_fd, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(reg_fd, 16) == -1) {
		log_warn("registration: listen on %s", l);
		return -1;
	}
	return 0;
}

/* Any certificate passes the handshake; the pin decides afterwards. */
static int
accept_any(int ok, X509_STORE_CTX *x)
{
	(void)ok;
	(void)x;
	return 1;
}

static SSL_CTX *
reg_ctx(const struct moat_gateway *g)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, g->reg_cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, g->reg_key, SSL_FILETYPE_PEM) != 1) {
		log_warnx("registration: cannot load %s / %s", g->reg_cert,
		    g->reg_key);
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
	    accept_any);
	return ctx;
}

/* The host whose pinned key is the peer's, or NULL. */
static const struct moat_host *
peer_host(const struct moat_config *cfg, SSL *ssl, char *hex, size_t hexlen)
{
	X509 *x = SSL_get1_peer_certificate(ssl);
	unsigned char *der = NULL, md[32];
	unsigned int mdlen = 0;
	int n;
	size_t i;

	hex[0] = '\0';
	if (x == NULL)
		return NULL;
	n = i2d_PUBKEY(X509_get0_pubkey(x), &der);
	X509_free(x);
	if (n <= 0)
		return NULL;
	EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL);
	OPENSSL_free(der);
	for (i = 0; i < 32 && 2 * i + 2 < hexlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	for (i = 0; i < cfg->nhosts; i++)
		if (mdlen == 32 && memcmp(cfg->hosts[i].key, md, 32) == 0)
			return &cfg->hosts[i];
	return NULL;
}

static void
dropin_path(const struct gw *gw, const char *name, char *buf, size_t len)
{
	char *c = strdup(gw->opts.conf);

	snprintf(buf, len, "%s/sandboxes.d/%s.conf", c ? dirname(c) : ".", name);
	free(c);
}

/* Does the drop-in NAME belong to host h?  -1: no such file. */
static int
dropin_owned(const struct gw *gw, const char *name, const struct moat_host *h)
{
	char path[4096], line[256], want[256];
	FILE *fp;
	int own;

	dropin_path(gw, name, path, sizeof(path));
	if ((fp = fopen(path, "r")) == NULL)
		return -1;
	snprintf(want, sizeof(want), REG_MARK "%s\n", h->name);
	own = fgets(line, sizeof(line), fp) != NULL && strcmp(line, want) == 0;
	fclose(fp);
	return own;
}

static bool
word_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && strspn(s,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
	    == n;
}

/* Checks the claim against the host's pool and every other sandbox. */
static const char *
claim_refused(const struct moat_config *cfg, const struct moat_host *h,
    const char *name, const char *addr, const char *mac, const char *egress)
{
	struct moat_addr a;
	const struct moat_sandbox *x;
	unsigned m[6];
	size_t i;

	if (!word_ok(name, 15))
		return "name: expected up to 15 letters, digits, '-' or '_'";
	if (addr_parse(addr, &a) == -1 || a.family != AF_INET)
		return "address: expected an IPv4 address";
	if (!prefix_contains(&h->pool, &a))
		return "address outside this host's pool";
	if (sscanf(mac, "%2x:%2x:%2x:%2x:%2x:%2x", &m[0], &m[1], &m[2], &m[3],
	    &m[4], &m[5]) != 6 || strlen(mac) != 17)
		return "mac: expected aa:bb:cc:dd:ee:ff";
	if (strcmp(egress, "open") && strcmp(egress, "allowlist") &&
	    strcmp(egress, "none"))
		return "egress: expected open, allowlist or none";
	for (i = 0; i < cfg->nsandboxes; i++) {
		x = &cfg->sandboxes[i];
		if (strcmp(x->name, name) == 0)
			continue;	/* its own entry: checked by owner */
		if (addr_eq(&x->address, &a))
			return "address used by another sandbox";
		if (x->mac[0] == m[0] && x->mac[1] == m[1] && x->mac[2] == m[2] &&
		    x->mac[3] == m[3] && x->mac[4] == m[4] && x->mac[5] == m[5])
			return "mac used by another sandbox";
	}
	return NULL;
}

/* Load the whole config as the parent would; NULL and why on error. */
static struct moat_config *
load_now(const struct gw *gw, char *why, size_t len)
{
	struct moat_errors errs;
	struct moat_config *cfg = config_load(gw->opts.conf, NULL, &errs);

	if (cfg == NULL)
		snprintf(why, len, "the box's config does not load (%zu errors)",
		    errs.n);
	config_errors_free(&errs);
	return cfg;
}

static const char *
do_register(struct gw *gw, const struct moat_host *h, char **argv)
{
	static char why[128];
	struct moat_config *cfg;
	const char *r;
	char path[4096], tmp[4200];
	FILE *fp;

	if ((cfg = load_now(gw, why, sizeof(why))) == NULL)
		return why;
	r = claim_refused(cfg, h, argv[1], argv[2], argv[3], argv[4]);
	if (r == NULL && config_sandbox_by_name(cfg, argv[1]) != NULL &&
	    dropin_owned(gw, argv[1], h) != 1)
		r = "name used by another sandbox";
	config_free(cfg);
	if (r != NULL)
		return r;
	dropin_path(gw, argv[1], path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	if ((fp = fopen(tmp, "w")) == NULL)
		return "cannot write the drop-in";
	fprintf(fp, REG_MARK "%s\nname = \"%s\";\naddress = \"%s\";\n"
	    "mac = \"%s\";\ntap = \"%s\";\negress = \"%s\";\n", h->name,
	    argv[1], argv[2], argv[3], argv[1], argv[4]);
	if (fclose(fp) != 0 || rename(tmp, path) == -1) {
		unlink(tmp);
		return "cannot write the drop-in";
	}
	if ((cfg = load_now(gw, why, sizeof(why))) == NULL) {
		unlink(path);	/* never leave a config the box cannot load */
		return why;
	}
	config_free(cfg);
	return NULL;
}

static const char *
do_remove(struct gw *gw, const struct moat_host *h, const char *name)
{
	char path[4096];

	if (!word_ok(name, 15))
		return "name: expected up to 15 letters, digits, '-' or '_'";
	switch (dropin_owned(gw, name, h)) {
	case -1:
		return "no such sandbox";
	case 0:
		return "not this host's sandbox";
	}
	dropin_path(gw, name, path, sizeof(path));
	return unlink(path) == -1 ? "cannot remove the drop-in" : NULL;
}

static void
do_list(struct gw *gw, const struct moat_host *h, SSL *ssl)
{
	struct moat_config *cfg;
	char why[128], line[256], a[64];
	size_t i;

	if ((cfg = load_now(gw, why, sizeof(why))) == NULL)
		return;
	for (i = 0; i < cfg->nsandboxes; i++)
		if (dropin_owned(gw, cfg->sandboxes[i].name, h) == 1) {
			snprintf(line, sizeof(line), "%s %s\n",
			    cfg->sandboxes[i].name,
			    addr_fmt(&cfg->sandboxes[i].address, a, sizeof(a)));
			SSL_write(ssl, line, (int)strlen(line));
		}
	config_free(cfg);
}

static bool
in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/* The host's full list (NAME,NAME,... or "-" for none): remove every
 * sandbox it registered earlier that is not on it.  Registering the
 * listed ones is the host's business, with register lines before. */
static const char *
do_sync(struct gw *gw, const struct moat_host *h, const char *list)
{
	static char why[128];
	struct moat_config *cfg;
	char path[4096];
	size_t i;

	if ((cfg = load_now(gw, why, sizeof(why))) == NULL)
		return why;
	for (i = 0; i < cfg->nsandboxes; i++) {
		const char *name = cfg->sandboxes[i].name;

		if (in_list(list, name) || dropin_owned(gw, name, h) != 1)
			continue;
		dropin_path(gw, name, path, sizeof(path));
		if (unlink(path) == 0)
			audit_event(gw, "registration", "host", h->name,
			    "request", "sync", "removed", name, NULL);
	}
	config_free(cfg);
	return NULL;
}

static void
refuse(struct gw *gw, const char *host, const char *what, const char *why)
{
	log_warnx("registration from %s refused: %s: %s", host, what, why);
	audit_event(gw, "registration-refused", "host", host, "request", what,
	    "reason", why, NULL);
}

/* One request line; false to end the connection. */
static bool
handle_line(struct gw *gw, const struct moat_host *h, SSL *ssl, char *line)
{
	char *argv[6], *save = NULL, *w, reply[200];
	const char *err = "unknown request";
	int argc = 0;
	bool changed = false;

	line[strcspn(line, "\r\n")] = '\0';
	for (w = strtok_r(line, " ", &save); w != NULL && argc < 6;
	    w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	if (argc == 0)
		return true;
	if (strcmp(argv[0], "quit") == 0)
		return false;
	if (strcmp(argv[0], "register") == 0 && argc == 5)
		changed = (err = do_register(gw, h, argv)) == NULL;
	else if (strcmp(argv[0], "remove") == 0 && argc == 2)
		changed = (err = do_remove(gw, h, argv[1])) == NULL;
	else if (strcmp(argv[0], "sync") == 0 && argc == 2)
		changed = (err = do_sync(gw, h, argv[1])) == NULL;
	else if (strcmp(argv[0], "list") == 0 && argc == 1) {
		do_list(gw, h, ssl);
		err = NULL;
	}
	if (changed) {
		audit_event(gw, "registration", "host", h->name, "request",
		    argv[0], "sandbox", argv[1], NULL);
		kill(getppid(), SIGHUP);
	}
	if (err != NULL)
		refuse(gw, h->name, argv[0], err);
	snprintf(reply, sizeof(reply), err ? "error %s\n" : "ok\n", err);
	return SSL_write(ssl, reply, (int)strlen(reply)) > 0;
}

static void
serve(struct gw *gw, SSL_CTX *ctx, int fd)
{
	struct timeval tv = { 10, 0 };
	const struct moat_host *h;
	char line[REG_LINE_MAX], hex[65];
	size_t n = 0;
	int r;
	SSL *ssl = SSL_new(ctx);

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1) {
		refuse(gw, "?", "handshake", "TLS handshake failed");
		goto out;
	}
	if ((h = peer_host(gw->cfg, ssl, hex, sizeof(hex))) == NULL) {
		refuse(gw, hex[0] ? hex : "?", "connect", "unknown host key");
		SSL_write(ssl, "error unknown host key\n", 23);
		/* Drain what it sent (bounded): closing on unread data would
		 * reset the connection and lose the answer. */
		for (r = 0; r < 8 && (n = (size_t)SSL_read(ssl, line,
		    sizeof(line) - 1)) > 0 && n <= sizeof(line) - 1; r++) {
			line[n] = '\0';
			if (strstr(line, "quit\n") != NULL)
				break;
		}
		SSL_shutdown(ssl);
		goto out;
	}
	/* Lines of at most REG_LINE_MAX bytes; a longer one ends it. */
	while ((r = SSL_read(ssl, line + n, 1)) == 1) {
		if (line[n] != '\n' && ++n < sizeof(line) - 1)
			continue;
		if (line[n] != '\n')
			break;
		line[n + 1] = '\0';
		n = 0;
		if (!handle_line(gw, h, ssl, line))
			break;
	}
	SSL_shutdown(ssl);
out:
	SSL_free(ssl);
	close(fd);
}

static void
reg_child(struct gw *gw)
{
	sigset_t none;
	SSL_CTX *ctx;
	int fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	log_init("gatewayd-register", !gw->opts.foreground, gw->opts.verbose + 1);
	if ((ctx = reg_ctx(&gw->cfg->gw)) == NULL)
		_exit(1);
	for (;;) {
		fd = accept4(reg_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno != EINTR && errno != ECONNABORTED)
				log_warn("registration: accept");
			continue;
		}
		serve(gw, ctx, fd);
	}
}

void
reg_start(struct gw *gw)
{
	if (reg_fd == -1)
		return;
	if ((reg_pid = fork()) == -1) {
		log_warn("registration: fork");
		return;
	}
	if (reg_pid == 0)
		reg_child(gw);
	log_info("registration endpoint %s: %zu hosts", gw->cfg->gw.reg_listen,
	    gw->cfg->nhosts);
}

bool
reg_reaped(pid_t pid)
{
	if (pid != reg_pid || pid == -1)
		return false;
	log_warnx("registration endpoint exited; hosts cannot register");
	reg_pid = -1;
	return true;
}

void
reg_stop(void)
{
	if (reg_pid > 0)
		kill(reg_pid, SIGTERM);
	if (reg_fd != -1)
		close(reg_fd);
}
