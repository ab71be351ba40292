/*
 * register.c -- the registration process.  User moat-reg, no
 * capabilities, no_new_privs, seccomp without open() or socket(); forked
 * by the parent, which binds the listening socket (gateway.registration.
 * listen, on the box's management network) and reads the box's TLS
 * certificate and key, and hands both over.
 *
 * A KVM host connects over TLS with a client certificate; the process
 * takes the SHA-256 of the peer's public key and asks the parent whether
 * it is a pinned host (HELLO).  Then it reads the host's request lines,
 * parses each (reg_parse, a pure function, fuzzed) and sends the parent
 * one typed IPC_REG_REQ, stamped with the key: the parent finds the host
 * itself, decides, applies, and only then answers.  It writes no file
 * and decides nothing; one connection at a time, with socket timeouts,
 * a bounded line and a bounded lifetime per connection.
 *
 * Protocol, one line each way:
 *   register NAME ADDRESS MAC EGRESS [allow=N,N...] [secrets=S,S...]
 *                                     -> ok | error REASON
 *   remove NAME                       -> ok | error REASON
 *   sync NAME,NAME,... | sync -       -> ok (drops the host's others)
 *   list                              -> NAME ADDRESS ... then "ok"
 *   quit
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "register.h"
#include "seccomp_allow.h"

/* --- parsing ------------------------------------------------------------ */

static int
put(char *dst, size_t cap, const char *src, const char *what, char *err,
    size_t errlen)
{
	if (strlen(src) >= cap) {
		snprintf(err, errlen, "%s too long", what);
		return -1;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* register's optional words: allow=... and secrets=..., once each. */
static int
reg_options(struct ipc_reg_req *m, size_t room, char **w, int n, char *err,
    size_t errlen)
{
	int i;

	for (i = 0; i < n; i++) {
		if (strncmp(w[i], "allow=", 6) == 0 && m->text[0] == '\0') {
			if (put(m->text, room, w[i] + 6, "allow", err,
			    errlen) == -1)
				return -1;
		} else if (strncmp(w[i], "secrets=", 8) == 0 &&
		    m->secrets[0] == '\0') {
			if (put(m->secrets, sizeof(m->secrets), w[i] + 8,
			    "secrets", err, errlen) == -1)
				return -1;
		} else {
			snprintf(err, errlen, "register: expected NAME ADDRESS "
			    "MAC EGRESS [allow=NAME,...] [secrets=NAME,...]");
			return -1;
		}
	}
	return 0;
}

static int
reg_words(struct ipc_reg_req *m, size_t room, char **w, int n, char *err,
    size_t errlen)
{
	static const struct {
		const char	*verb;
		uint8_t		 code;
		int		 min, max;	/* words after the verb */
	} verbs[] = {
		{ "register", REG_REGISTER, 4, 6 }, { "remove", REG_REMOVE, 1, 1 },
		{ "sync", REG_SYNC, 1, 1 }, { "list", REG_LIST, 0, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(w[0], verbs[i].verb) == 0)
			break;
	if (i == sizeof(verbs) / sizeof(verbs[0])) {
		snprintf(err, errlen, "unknown request");
		return -1;
	}
	if (n - 1 < verbs[i].min || n - 1 > verbs[i].max) {
		snprintf(err, errlen, "%s: wrong number of words", w[0]);
		return -1;
	}
	m->verb = verbs[i].code;
	if (m->verb == REG_SYNC)
		return put(m->text, room, w[1], "list", err, errlen);
	if (m->verb == REG_LIST)
		return 0;
	if (put(m->name, sizeof(m->name), w[1], "name", err, errlen) == -1)
		return -1;
	if (m->verb == REG_REMOVE)
		return 0;
	if (put(m->address, sizeof(m->address), w[2], "address", err,
	    errlen) == -1 || put(m->mac, sizeof(m->mac), w[3], "mac", err,
	    errlen) == -1 || put(m->egress, sizeof(m->egress), w[4], "egress",
	    err, errlen) == -1)
		return -1;
	return reg_options(m, room, w + 5, n - 5, err, errlen);
}

int
reg_parse(const char *line, size_t len, struct ipc_reg_req *m, size_t room,
    size_t *mlen, char *err, size_t errlen)
{
	char buf[REG_LINE_MAX + 1], *w[8], *tok, *save = NULL;
	size_t i;
	int n = 0;

	memset(m, 0, sizeof(*m));
	m->text[0] = '\0';	/* room > sizeof(*m): the caller's promise */
	room -= sizeof(*m);
	if (room > IPC_REG_TEXT_MAX)
		room = IPC_REG_TEXT_MAX;
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len > REG_LINE_MAX) {
		snprintf(err, errlen, "request too long");
		return -1;
	}
	for (i = 0; i < len; i++)
		if (line[i] < 0x20 || line[i] > 0x7e) {
			snprintf(err, errlen, "malformed request");
			return -1;
		}
	memcpy(buf, line, len);
	buf[len] = '\0';
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save))
		if (n < 8)
			w[n++] = tok;
		else {
			snprintf(err, errlen, "too many words");
			return -1;
		}
	if (n == 0)
		return REG_PARSE_EMPTY;
	if (strcmp(w[0], "quit") == 0 && n == 1)
		return REG_PARSE_QUIT;
	if (reg_words(m, room, w, n, err, errlen) == -1)
		return -1;
	*mlen = sizeof(*m) + strlen(m->text) + 1;
	return 0;
}

/* --- TLS ------------------------------------------------------------------ */

/* Any certificate passes the handshake; the parent's pin decides. */
static int
accept_any(int ok, X509_STORE_CTX *x)
{
	(void)ok;
	(void)x;
	return 1;
}

/* The box's certificate chain and key, from PEM the parent read. */
static int
ctx_load(SSL_CTX *ctx, const struct reg_pem *pem)
{
	BIO *b = BIO_new_mem_buf(pem->cert, (int)pem->certlen);
	X509 *x;
	EVP_PKEY *k;
	int rc = -1;

	if (b == NULL || (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_certificate(ctx, x) != 1)
		goto out;
	X509_free(x);
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add_extra_chain_cert(ctx, x) != 1) {
			X509_free(x);
			goto out;
		}
	ERR_clear_error();	/* the end of the chain */
	BIO_free(b);
	if ((b = BIO_new_mem_buf(pem->key, (int)pem->keylen)) == NULL ||
	    (k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) == NULL)
		goto out;
	rc = SSL_CTX_use_PrivateKey(ctx, k) == 1 &&
	    SSL_CTX_check_private_key(ctx) == 1 ? 0 : -1;
	EVP_PKEY_free(k);
out:
	BIO_free(b);
	return rc;
}

static SSL_CTX *
reg_ctx(const struct reg_pem *pem)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    ctx_load(ctx, pem) == -1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	return ctx;
}

/* SHA-256 of the peer's SubjectPublicKeyInfo; -1 without one. */
static int
peer_key(SSL *ssl, uint8_t md[32])
{
	X509 *x = SSL_get1_peer_certificate(ssl);
	unsigned char *der = NULL;
	unsigned int mdlen = 0;
	int n;

	if (x == NULL)
		return -1;
	n = i2d_PUBKEY(X509_get0_pubkey(x), &der);
	X509_free(x);
	if (n <= 0)
		return -1;
	EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL);
	OPENSSL_free(der);
	return mdlen == 32 ? 0 : -1;
}

/* --- one connection ---------------------------------------------------------- */

/* The socket is non-blocking: every wait is a poll bounded by the
 * connection's deadline, the handshake's included, so that no peer holds
 * the endpoint longer than REG_CONN_MAX_S however it trickles bytes. */
struct conn {
	SSL		*ssl;
	int		 fd;
	int		 ipc;
	uint8_t		 key[32];
	int64_t		 deadline;	/* CLOCK_MONOTONIC milliseconds */
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* After an SSL call returned r: wait for what OpenSSL wants, within the
 * deadline and REG_IO_TIMEOUT_S.  true: call it again. */
static bool
io_retry(struct conn *c, int r)
{
	struct pollfd p = { c->fd, 0, 0 };
	int64_t left = c->deadline - now_ms();

	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		p.events = POLLIN;
		break;
	case SSL_ERROR_WANT_WRITE:
		p.events = POLLOUT;
		break;
	default:
		return false;
	}
	if (left <= 0)
		return false;
	if (left > REG_IO_TIMEOUT_S * 1000)
		left = REG_IO_TIMEOUT_S * 1000;
	return poll(&p, 1, (int)left) == 1;
}

static bool
tls_accept(struct conn *c)
{
	int r;

	while ((r = SSL_accept(c->ssl)) != 1)
		if (!io_retry(c, r))
			return false;
	return true;
}

static int
tls_read(struct conn *c, char *buf, int n)
{
	int r;

	while ((r = SSL_read(c->ssl, buf, n)) <= 0)
		if (!io_retry(c, r))
			return -1;
	return r;
}

static bool
say(struct conn *c, const char *s, size_t n)
{
	int r;

	if (n == 0)
		return true;
	while ((r = SSL_write(c->ssl, s, (int)n)) <= 0)
		if (!io_retry(c, r))
			return false;
	return true;
}

/* Ask the parent and wait for its answer; the host gets "ok" (after any
 * body) or "error REASON", but nothing for a HELLO the parent accepts.
 * 0 ok, 1 refused, -1 the host is gone.  The parent gone or broken ends
 * us. */
static int
ask(struct conn *c, struct ipc_reg_req *m, size_t mlen)
{
	static union {
		struct ipc_reg_reply r;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h;
	char err[256];
	ssize_t n;

	memcpy(m->key, c->key, sizeof(m->key));
	if (ipc_send(c->ipc, IPC_REG_REQ, 0, m, mlen) == -1)
		_exit(1);
	n = ipc_recv(c->ipc, &h, u.raw, sizeof(u.raw), err, sizeof(err));
	if (n <= 0 || h.type != IPC_REG_REPLY)
		_exit(n == 0 ? 0 : 1);
	n -= (ssize_t)sizeof(u.r);
	if (u.r.status == 0 && m->verb == REG_HELLO)
		return 0;
	if (u.r.status == 0)
		return say(c, u.r.text, (size_t)n) && say(c, "ok\n", 3) ? 0 : -1;
	return say(c, "error ", 6) && say(c, u.r.text, (size_t)n) &&
	    say(c, "\n", 1) ? 1 : -1;
}

static bool
line(struct conn *c, const char *buf, size_t len)
{
	static union {
		struct ipc_reg_req m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	char err[160], out[200];
	size_t mlen = 0;
	int rc;

	rc = reg_parse(buf, len, &u.m, sizeof(u.raw), &mlen, err, sizeof(err));
	if (rc == REG_PARSE_QUIT)
		return false;
	if (rc == REG_PARSE_EMPTY)
		return true;
	if (rc == -1) {
		snprintf(out, sizeof(out), "error %s\n", err);
		return say(c, out, strlen(out));
	}
	return ask(c, &u.m, mlen) != -1;
}

/* Lines of at most REG_LINE_MAX bytes; a longer one, or the connection's
 * time running out, ends it. */
static void
lines(struct conn *c)
{
	char buf[REG_LINE_MAX + 2];
	size_t n = 0;

	while (tls_read(c, buf + n, 1) == 1) {
		if (buf[n] != '\n' && ++n <= REG_LINE_MAX + 1)
			continue;
		if (buf[n > REG_LINE_MAX + 1 ? REG_LINE_MAX + 1 : n] != '\n') {
			say(c, "error request too long\n", 23);
			return;
		}
		if (!line(c, buf, n + 1))
			return;
		n = 0;
	}
}

static void
serve(SSL_CTX *ctx, int fd, int ipc)
{
	union {
		struct ipc_reg_req m;
		char raw[sizeof(struct ipc_reg_req) + 1];	/* text "" */
	} hello;
	int64_t start = now_ms();
	struct conn c = { .fd = fd, .ipc = ipc,
	    .deadline = start + REG_IO_TIMEOUT_S * 1000 };	/* handshake */
	char drain[256];
	int i;

	memset(&hello, 0, sizeof(hello));
	hello.m.verb = REG_HELLO;
	if ((c.ssl = SSL_new(ctx)) == NULL || SSL_set_fd(c.ssl, fd) != 1 ||
	    !tls_accept(&c) || peer_key(c.ssl, c.key) == -1)
		goto out;
	c.deadline = start + REG_CONN_MAX_S * 1000;
	if (ask(&c, &hello.m, sizeof(hello.m) + 1) != 0) {
		/* Unknown key: answered.  Read what it sent (bounded), as
		 * closing on unread data would reset the answer away. */
		for (i = 0; i < 8 && tls_read(&c, drain, sizeof(drain)) > 0;
		    i++)
			;
		goto out;
	}
	lines(&c);
out:
	if (c.ssl != NULL)
		SSL_shutdown(c.ssl);
	SSL_free(c.ssl);
	close(fd);
	ERR_clear_error();
}

/* --- the process ----------------------------------------------------------- */

static void
register_seccomp(void)
{
	static const int allowed[] = {
		SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(recvmsg),
		SCMP_SYS(sendmsg), SCMP_SYS(recvfrom), SCMP_SYS(sendto),
		SCMP_SYS(accept4), SCMP_SYS(poll), SCMP_SYS(ppoll),
		SCMP_SYS(getsockopt),
		SCMP_SYS(close), SCMP_SYS(shutdown), SCMP_SYS(brk),
		SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
		SCMP_SYS(madvise), SCMP_SYS(futex), SCMP_SYS(clock_gettime),
		SCMP_SYS(getrandom), SCMP_SYS(getpid), SCMP_SYS(exit),
		SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
		SCMP_SYS(restart_syscall), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
	};

	if (seccomp_allow(allowed, sizeof(allowed) / sizeof(allowed[0])) == -1)
		_exit(1);
}

/* Nothing is logged once narrowed: the filter allows no socket for
 * syslog.  What goes wrong ends the process; the parent logs it and
 * starts another. */
void
regproc_main(int listen, int ipc, pid_t parent, struct reg_pem *pem)
{
	unsigned char seed[16];
	SSL_CTX *ctx;
	int fd;

	OPENSSL_init_ssl(0, NULL);
	ctx = reg_ctx(pem);
	reg_pem_wipe(pem);
	if (ctx == NULL) {
		log_warnx("registration: cannot use the box's certificate and "
		    "key");
		_exit(1);
	}
	/* A host gone mid-answer is an error from write(), not a signal. */
	signal(SIGPIPE, SIG_IGN);
	/* Seeded while getrandom's fallbacks are still allowed. */
	if (RAND_bytes(seed, sizeof(seed)) != 1 || privdrop(REG_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	register_seccomp();
	for (;;) {
		fd = accept4(listen, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd == -1) {
			if (errno != EINTR && errno != ECONNABORTED &&
			    errno != EAGAIN)
				_exit(1);
			continue;
		}
		serve(ctx, fd, ipc);
	}
}

void
reg_pem_wipe(struct reg_pem *pem)
{
	if (pem->key != NULL) {
		explicit_bzero(pem->key, pem->keylen);
		free(pem->key);
	}
	free(pem->cert);
	pem->key = pem->cert = NULL;
	pem->keylen = pem->certlen = 0;
}
