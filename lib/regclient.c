/*
 * regclient.c -- the registration endpoint's client (regclient.h).
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "regclient.h"

#define REG_LINE_MAX	REG_REQUEST_MAX

struct regclient {
	int	 fd;
	SSL_CTX	*ctx;
	SSL	*ssl;
	char	 buf[REG_LINE_MAX];
	size_t	 len;			/* bytes in buf not yet returned */
};

/* Non-blocking connect bounded by timeout_s, then blocking I/O with
 * the same timeout on every read and write. */
static int
connect_timed(const struct addrinfo *ai, int timeout_s)
{
	struct timeval tv = { timeout_s, 0 };
	struct pollfd p;
	socklen_t sl = sizeof(int);
	int fd, err = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd == -1)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		p = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (errno != EINPROGRESS || poll(&p, 1, timeout_s * 1000) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) == -1 ||
		    err != 0) {
			close(fd);
			return -1;
		}
	}
	if (fcntl(fd, F_SETFL, 0) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
connect_box(const char *box, int timeout_s)
{
	char host[256], *colon;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_NUMERICSERV }, *ai;
	int fd;

	snprintf(host, sizeof(host), "%s", box);
	if ((colon = strrchr(host, ':')) == NULL)
		return -1;
	*colon = '\0';
	if (host[0] == '[' && colon[-1] == ']') {	/* [v6]:port */
		colon[-1] = '\0';
		memmove(host, host + 1, strlen(host));
	}
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	fd = connect_timed(ai, timeout_s);
	freeaddrinfo(ai);
	return fd;
}

/* With a pin the handshake still proves the box holds the certificate's
 * key (TLS 1.3 CertificateVerify); which key it is, is checked after it
 * (pin_ok), before any request is sent. */
static SSL_CTX *
client_ctx(const char *ca, const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    (ca != NULL && SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, ca != NULL ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
	    NULL);
	return ctx;
}

static bool
pin_ok(SSL *ssl, const uint8_t pin[32])
{
	X509 *peer = SSL_get1_peer_certificate(ssl);
	unsigned char *der = NULL, md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int len;
	bool ok = false;

	if (peer == NULL)
		return false;
	len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(peer), &der);
	if (len > 0 && EVP_Digest(der, (size_t)len, md, &mdlen, EVP_sha256(),
	    NULL) == 1 && mdlen == 32)
		ok = CRYPTO_memcmp(md, pin, 32) == 0;
	OPENSSL_free(der);
	X509_free(peer);
	return ok;
}

/* SIGPIPE held back around writes: a box that closes first (as it does
 * after refusing a host key) must not kill the tool. */
struct nosig {
	sigset_t	 pipe, old;
	int		 was_pending;
};

static void
nosig_begin(struct nosig *ns)
{
	sigset_t pending;

	sigemptyset(&ns->pipe);
	sigaddset(&ns->pipe, SIGPIPE);
	sigprocmask(SIG_BLOCK, &ns->pipe, &ns->old);
	sigpending(&pending);
	ns->was_pending = sigismember(&pending, SIGPIPE);
}

static void
nosig_end(struct nosig *ns)
{
	static const struct timespec now = { 0, 0 };
	sigset_t pending;

	sigpending(&pending);
	if (!ns->was_pending && sigismember(&pending, SIGPIPE))
		sigtimedwait(&ns->pipe, NULL, &now);
	sigprocmask(SIG_SETMASK, &ns->old, NULL);
}

static int
write_nosig(SSL *ssl, const char *buf, int len)
{
	struct nosig ns;
	int r;

	nosig_begin(&ns);
	r = SSL_write(ssl, buf, len);
	nosig_end(&ns);
	return r;
}

void
regclient_close(struct regclient *rc)
{
	if (rc == NULL)
		return;
	if (rc->ssl != NULL) {
		struct nosig ns;

		nosig_begin(&ns);
		if (SSL_write(rc->ssl, "quit\n", 5) > 0)
			SSL_shutdown(rc->ssl);
		nosig_end(&ns);
		SSL_free(rc->ssl);
	}
	SSL_CTX_free(rc->ctx);
	if (rc->fd != -1)
		close(rc->fd);
	free(rc);
}

/* Connect, handshake, check the pin: rc has its ctx. */
static struct regclient *
open_with(struct regclient *rc, const char *box, const char *ca,
    const uint8_t pin[32], int timeout_s, char *why, size_t whylen)
{
	if ((rc->fd = connect_box(box, timeout_s)) == -1) {
		snprintf(why, whylen, "cannot reach the box at %s", box);
		goto fail;
	}
	if ((rc->ssl = SSL_new(rc->ctx)) == NULL ||
	    SSL_set_fd(rc->ssl, rc->fd) != 1 || SSL_connect(rc->ssl) != 1) {
		snprintf(why, whylen, "TLS with %s failed (is the CA file "
		    "the box's certificate?)", box);
		SSL_free(rc->ssl);
		rc->ssl = NULL;
		goto fail;
	}
	if (ca == NULL && (pin == NULL || !pin_ok(rc->ssl, pin))) {
		snprintf(why, whylen, "the box at %s is not the one pinned "
		    "(its key's SHA-256 differs from box.pin)", box);
		SSL_free(rc->ssl);	/* nothing is said to an impostor */
		rc->ssl = NULL;
		goto fail;
	}
	return rc;
fail:
	ERR_clear_error();
	regclient_close(rc);
	return NULL;
}

struct regclient *
regclient_open(const char *box, const char *ca, const uint8_t pin[32],
    const char *cert, const char *key, int timeout_s, char *why,
    size_t whylen)
{
	struct regclient *rc = calloc(1, sizeof(*rc));

	if (rc == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	rc->fd = -1;
	if ((rc->ctx = client_ctx(ca, cert, key)) == NULL) {
		snprintf(why, whylen, "cannot load %s%s%s or %s (or the key "
		    "does not match the certificate)", ca ? ca : "", ca ? ", " :
		    "", cert, key);
		ERR_clear_error();
		regclient_close(rc);
		return NULL;
	}
	return open_with(rc, box, ca, pin, timeout_s, why, whylen);
}

struct regclient *
regclient_open_ctx(const char *box, const uint8_t pin[32], SSL_CTX *ctx,
    int timeout_s, char *why, size_t whylen)
{
	struct regclient *rc = calloc(1, sizeof(*rc));

	if (rc == NULL || SSL_CTX_up_ref(ctx) != 1) {
		free(rc);
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	rc->fd = -1;
	rc->ctx = ctx;
	return open_with(rc, box, NULL, pin, timeout_s, why, whylen);
}

SSL_CTX *
regclient_ctx_pem(const char *cert, size_t certlen, const char *key,
    size_t keylen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    regtls_use_pem(ctx, cert, certlen, key, keylen) == -1) {
		SSL_CTX_free(ctx);
		ERR_clear_error();
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);	/* pin_ok decides */
	return ctx;
}

/* The certificate chain and key, from PEM in memory. */
int
regtls_use_pem(SSL_CTX *ctx, const char *cert, size_t certlen,
    const char *key, size_t keylen)
{
	BIO *b = BIO_new_mem_buf(cert, (int)certlen);
	X509 *x;
	EVP_PKEY *k;
	int rc = -1;

	if (b == NULL || (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) == NULL)
		goto out;
	if (SSL_CTX_use_certificate(ctx, x) != 1) {
		X509_free(x);
		goto out;
	}
	X509_free(x);
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add_extra_chain_cert(ctx, x) != 1) {
			X509_free(x);
			goto out;
		}
	ERR_clear_error();	/* the end of the chain */
	BIO_free(b);
	if ((b = BIO_new_mem_buf(key, (int)keylen)) == NULL ||
	    (k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) == NULL)
		goto out;
	rc = SSL_CTX_use_PrivateKey(ctx, k) == 1 &&
	    SSL_CTX_check_private_key(ctx) == 1 ? 0 : -1;
	EVP_PKEY_free(k);
out:
	BIO_free(b);
	return rc;
}

/* One line from the box, without its newline, into out.  -1 when the
 * connection ends or times out first. */
static int
read_line(struct regclient *rc, char *out, size_t outlen)
{
	char *nl;
	int r;

	while ((nl = memchr(rc->buf, '\n', rc->len)) == NULL) {
		if (rc->len == sizeof(rc->buf))
			return -1;	/* longer than any answer */
		r = SSL_read(rc->ssl, rc->buf + rc->len,
		    (int)(sizeof(rc->buf) - rc->len));
		if (r <= 0)
			return -1;
		rc->len += (size_t)r;
	}
	*nl = '\0';
	snprintf(out, outlen, "%s", rc->buf);
	rc->len -= (size_t)(nl + 1 - rc->buf);
	memmove(rc->buf, nl + 1, rc->len);
	return 0;
}

int
regclient_request(struct regclient *rc, const char *line,
    void (*each_line)(const char *, void *), void *arg, char *why,
    size_t whylen)
{
	char req[REG_LINE_MAX + 1], ans[REG_LINE_MAX];
	int n;

	n = snprintf(req, sizeof(req), "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof(req) || strchr(line, '\n') != NULL) {
		snprintf(why, whylen, "request too long");
		return REG_REFUSED;
	}
	if (write_nosig(rc->ssl, req, n) != n) {
		snprintf(why, whylen, "the box closed the connection");
		return REG_UNREACHABLE;
	}
	for (;;) {
		if (read_line(rc, ans, sizeof(ans)) == -1) {
			snprintf(why, whylen, "no answer from the box (a "
			    "refused host key gets none)");
			return REG_UNREACHABLE;
		}
		if (strcmp(ans, "ok") == 0)
			return REG_OK;
		if (strncmp(ans, "error", 5) == 0 &&
		    (ans[5] == ' ' || ans[5] == '\0')) {
			snprintf(why, whylen, "%s", ans[5] ? ans + 6 :
			    "refused");
			return REG_REFUSED;
		}
		if (each_line != NULL)
			each_line(ans, arg);
	}
}
