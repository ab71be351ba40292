/*
 * test_regclient.c -- lib/regclient.c against a scripted box on loopback:
 * the answers it understands ("ok", "error REASON", list lines), a box
 * that answers nothing or too much (bounded by the timeout), a box that
 * closes first (no SIGPIPE), and pinning (a box with another key is never
 * sent a request).  Keys and certificates are made in memory per run.
 */
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "regclient.h"

static char dir[] = "/tmp/moat-test-regclient.XXXXXX";
static char box_crt[128], box_key[128], host_crt[128], host_key[128];
static uint8_t box_pin[32];

/* A self-signed P-256 certificate and key as PEM files. */
static void
mkcert(const char *crt, const char *key, uint8_t pin[32])
{
	EVP_PKEY *pk = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	unsigned char *der = NULL;
	unsigned int mdlen;
	FILE *f;
	int len;

	assert_non_null(pk);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, pk);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)"moat-test", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	assert_true(X509_sign(x, pk, EVP_sha256()) > 0);
	assert_non_null(f = fopen(crt, "w"));
	PEM_write_X509(f, x);
	fclose(f);
	assert_non_null(f = fopen(key, "w"));
	PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	if (pin != NULL) {
		len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
		EVP_Digest(der, (size_t)len, pin, &mdlen, EVP_sha256(), NULL);
		OPENSSL_free(der);
	}
	X509_free(x);
	EVP_PKEY_free(pk);
}

enum script { S_OK, S_ERROR, S_LIST, S_SILENT, S_FLOOD, S_CLOSE, S_RESET };

static int
always_ok(X509_STORE_CTX *c, void *arg)
{
	return 1;
}

/* The box: one connection, one scripted answer per request line. */
static void
serve(int lfd, enum script sc)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char buf[256], big[2048];
	SSL *ssl;
	int fd;

	SSL_CTX_use_certificate_file(ctx, box_crt, SSL_FILETYPE_PEM);
	SSL_CTX_use_PrivateKey_file(ctx, box_key, SSL_FILETYPE_PEM);
	/* Any client certificate: pinning the host is the box's business. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_cert_verify_callback(ctx, always_ok, NULL);
	fd = accept(lfd, NULL, NULL);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		_exit(1);
	if (sc == S_CLOSE || sc == S_RESET) {
		SSL_write(ssl, "error unknown host key\n", 23);
		if (sc == S_CLOSE) {	/* reads the request first: no RST */
			shutdown(fd, SHUT_WR);
			SSL_read(ssl, buf, sizeof(buf));
		}
		close(fd);
		_exit(0);
	}
	while (SSL_read(ssl, buf, sizeof(buf)) > 0) {
		if (strncmp(buf, "quit", 4) == 0)
			break;
		switch (sc) {
		case S_OK: SSL_write(ssl, "ok\n", 3); break;
		case S_ERROR:
			SSL_write(ssl, "error address outside this host's pool\n", 39);
			break;
		case S_LIST:
			SSL_write(ssl, "a1 10.77.0.16\na2 10.77.0.17\nok\n", 31);
			break;
		case S_SILENT: sleep(5); break;
		case S_FLOOD:
			memset(big, 'x', sizeof(big));
			SSL_write(ssl, big, sizeof(big));
			break;
		default: break;
		}
	}
	_exit(0);
}

/* A box on 127.0.0.1 running script sc; its "ADDR:PORT" in box. */
static pid_t
box_start(enum script sc, char *box, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	getsockname(lfd, (struct sockaddr *)&sin, &sl);
	snprintf(box, len, "127.0.0.1:%u", ntohs(sin.sin_port));
	if ((pid = fork()) == 0)
		serve(lfd, sc);
	close(lfd);
	return pid;
}

static void
box_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void
count_line(const char *line, void *arg)
{
	(*(int *)arg)++;
}

/* One "list" request to a box running sc; the result, why and how many
 * lines came before the answer. */
static int
ask(enum script sc, const char *ca, const uint8_t *pin, char *why,
    size_t wl, int *nlines)
{
	char box[64];
	pid_t pid = box_start(sc, box, sizeof(box));
	struct regclient *rc;
	int r = REG_UNREACHABLE;

	*nlines = 0;
	rc = regclient_open(box, ca, pin, host_crt, host_key, 2, why, wl);
	if (rc != NULL) {
		r = regclient_request(rc, "list", count_line, nlines, why, wl);
		regclient_close(rc);
	}
	box_stop(pid);
	return r;
}

static void
t_answers(void **state)
{
	char why[256];
	int n;

	assert_int_equal(ask(S_OK, box_crt, NULL, why, sizeof(why), &n), REG_OK);
	assert_int_equal(n, 0);
	assert_int_equal(ask(S_LIST, box_crt, NULL, why, sizeof(why), &n),
	    REG_OK);
	assert_int_equal(n, 2);
	assert_int_equal(ask(S_ERROR, NULL, box_pin, why, sizeof(why), &n),
	    REG_REFUSED);
	assert_string_equal(why, "address outside this host's pool");
}

/* A box that answers without waiting for the request and closes (a
 * refused host key): the answer is read; a box that resets the
 * connection under the request is no answer, and kills nothing (no
 * SIGPIPE: this test would die of it). */
static void
t_box_closes(void **state)
{
	char why[256];
	int i, n;

	assert_int_equal(ask(S_CLOSE, box_crt, NULL, why, sizeof(why), &n),
	    REG_REFUSED);
	assert_string_equal(why, "unknown host key");
	for (i = 0; i < 20; i++)
		assert_int_not_equal(ask(S_RESET, box_crt, NULL, why,
		    sizeof(why), &n), REG_OK);
}

/* Silence costs the timeout, not more; a flood without a newline is no
 * answer. */
static void
t_bounded(void **state)
{
	char why[256];
	time_t t0 = time(NULL);
	int n;

	assert_int_equal(ask(S_SILENT, box_crt, NULL, why, sizeof(why), &n),
	    REG_UNREACHABLE);
	assert_true(time(NULL) - t0 <= 4);
	assert_int_equal(ask(S_FLOOD, box_crt, NULL, why, sizeof(why), &n),
	    REG_UNREACHABLE);
	assert_int_equal(n, 0);
}

/* Another key than the pinned one, or a certificate the CA file does not
 * verify: no connection, so no request is ever sent. */
static void
t_pinning(void **state)
{
	char why[256];
	uint8_t wrong[32];
	int n;

	memcpy(wrong, box_pin, sizeof(wrong));
	wrong[0] ^= 1;
	assert_int_equal(ask(S_OK, NULL, wrong, why, sizeof(why), &n),
	    REG_UNREACHABLE);
	assert_non_null(strstr(why, "not the one pinned"));
	assert_int_equal(ask(S_OK, host_crt, NULL, why, sizeof(why), &n),
	    REG_UNREACHABLE);
	assert_non_null(strstr(why, "TLS with"));
	assert_int_equal(ask(S_OK, NULL, NULL, why, sizeof(why), &n),
	    REG_UNREACHABLE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_answers),
		cmocka_unit_test(t_box_closes),
		cmocka_unit_test(t_bounded),
		cmocka_unit_test(t_pinning),
	};
	int rc;

	if (mkdtemp(dir) == NULL)
		return 3;
	snprintf(box_crt, sizeof(box_crt), "%s/box.crt", dir);
	snprintf(box_key, sizeof(box_key), "%s/box.key", dir);
	snprintf(host_crt, sizeof(host_crt), "%s/host.crt", dir);
	snprintf(host_key, sizeof(host_key), "%s/host.key", dir);
	mkcert(box_crt, box_key, box_pin);
	mkcert(host_crt, host_key, NULL);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(box_crt);
	unlink(box_key);
	unlink(host_crt);
	unlink(host_key);
	rmdir(dir);
	return rc;
}
