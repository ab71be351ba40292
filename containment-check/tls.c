/*
 * tls.c -- the TLS client of the probes on ports the gateway's proxy may
 * answer (intercept.c judges what it gathers).
 *
 * It verifies nothing: it wants to see who answers.  A message callback
 * records what arrived before the handshake ended (ServerHello,
 * Certificate, the first alert), and a completed handshake's certificates
 * are compared with the gateway's CA (the file provision installs in the
 * guest, or --gateway-ca): only the proxy holds that CA's key.
 * OpenSSL is linked statically and started without reading its
 * configuration file, so nothing outside the binary is loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "cc.h"
#include "log.h"

struct cc_tls {
	SSL			*ssl;
	struct cc_tls_seen	 seen;
};

static SSL_CTX *ctx;
static STACK_OF(X509) *gateway_cas;

/* Before any other OpenSSL call: libcrypto's implicit start would read
 * the system's openssl.cnf (and load what it names). */
static void
tls_init(void)
{
	static bool done;

	if (!done && OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
		fatalx("cannot start OpenSSL");
	done = true;
}

int
tls_set_gateway_ca(const char *path)
{
	X509 *x;
	FILE *f;

	tls_init();
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	if (gateway_cas == NULL)
		gateway_cas = sk_X509_new_null();
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL)
		sk_X509_push(gateway_cas, x);
	ERR_clear_error();
	fclose(f);
	return sk_X509_num(gateway_cas) > 0 ? 0 : -1;
}

static SSL_CTX *
tls_ctx(void)
{
	if (ctx != NULL)
		return ctx;
	tls_init();
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		fatalx("cannot start OpenSSL's TLS client");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	/* Any server that answers counts; weak ones too. */
	SSL_CTX_set_security_level(ctx, 0);
	return ctx;
}

static void
on_msg(int write_p, int version, int type, const void *buf, size_t len,
    SSL *ssl, void *arg)
{
	struct cc_tls_seen *s = arg;
	const uint8_t *b = buf;

	(void)version;
	(void)ssl;
	if (write_p || len < 1)
		return;
	if (type == SSL3_RT_HEADER && (b[0] < SSL3_RT_CHANGE_CIPHER_SPEC ||
	    b[0] > SSL3_RT_APPLICATION_DATA))
		s->not_tls = true;
	else if (type == SSL3_RT_ALERT && len >= 2 && s->alert < 0)
		s->alert = b[1];
	else if (type == SSL3_RT_HANDSHAKE && b[0] == SSL3_MT_SERVER_HELLO)
		s->server_hello = true;
	else if (type == SSL3_RT_HANDSHAKE && b[0] == SSL3_MT_CERTIFICATE)
		s->certificate = true;
}

struct cc_tls *
tls_new(int fd, const char *sni)
{
	struct cc_tls *t = xcalloc(1, sizeof(*t));

	t->seen.alert = -1;
	if ((t->ssl = SSL_new(tls_ctx())) == NULL ||
	    SSL_set_fd(t->ssl, fd) != 1 ||
	    (sni != NULL && SSL_set_tlsext_host_name(t->ssl, sni) != 1)) {
		ERR_clear_error();
		tls_free(t);
		return NULL;
	}
	SSL_set_msg_callback(t->ssl, on_msg);
	SSL_set_msg_callback_arg(t->ssl, &t->seen);
	SSL_set_connect_state(t->ssl);
	return t;
}

static bool
from_gateway_ca(X509 *x)
{
	X509 *ca;
	int i;

	for (i = 0; gateway_cas != NULL && i < sk_X509_num(gateway_cas); i++) {
		ca = sk_X509_value(gateway_cas, i);
		if (X509_cmp(ca, x) == 0 ||
		    (X509_check_issued(ca, x) == X509_V_OK &&
		    X509_verify(x, X509_get0_pubkey(ca)) == 1))
			return true;
	}
	ERR_clear_error();
	return false;
}

static void
note_certs(struct cc_tls *t)
{
	STACK_OF(X509) *chain = SSL_get_peer_cert_chain(t->ssl);
	X509 *leaf = SSL_get0_peer_certificate(t->ssl);
	char cn[sizeof(t->seen.subject)] = "";
	size_t i;
	int n;

	for (n = 0; chain != NULL && n < sk_X509_num(chain); n++)
		if (from_gateway_ca(sk_X509_value(chain, n)))
			t->seen.gateway_cert = true;
	if (leaf == NULL)
		return;
	if (from_gateway_ca(leaf))
		t->seen.gateway_cert = true;
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(leaf),
	    NID_commonName, cn, sizeof(cn)) < 0)
		cn[0] = '\0';
	for (i = 0; cn[i] != '\0'; i++)		/* the far end chose it */
		t->seen.subject[i] = cn[i] > 0x20 && cn[i] < 0x7f ? cn[i] :
		    '?';
	t->seen.subject[i] = '\0';
}

static int
want(struct cc_tls *t, int r)
{
	switch (SSL_get_error(t->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return -1;
	case SSL_ERROR_WANT_WRITE:
		return -2;
	default:
		ERR_clear_error();
		return 0;
	}
}

int
tls_handshake(struct cc_tls *t)
{
	int r = SSL_do_handshake(t->ssl);

	if (r == 1) {
		t->seen.done = true;
		note_certs(t);
		return 1;
	}
	switch (want(t, r)) {
	case -1:
		return 0;
	case -2:
		return 2;
	default:
		return 1;
	}
}

int
tls_write(struct cc_tls *t, const void *buf, size_t len)
{
	int r = SSL_write(t->ssl, buf, (int)len);

	return r > 0 ? r : want(t, r);
}

int
tls_read(struct cc_tls *t, void *buf, size_t len)
{
	int r = SSL_read(t->ssl, buf, (int)len);

	return r > 0 ? r : want(t, r);
}

const struct cc_tls_seen *
tls_seen(const struct cc_tls *t)
{
	return &t->seen;
}

void
tls_free(struct cc_tls *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	free(t);
}

void
tls_cleanup(void)
{
	SSL_CTX_free(ctx);
	ctx = NULL;
	sk_X509_pop_free(gateway_cas, X509_free);
	gateway_cas = NULL;
}
