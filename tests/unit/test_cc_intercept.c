/*
 * test_cc_intercept.c -- telling the gateway's proxy from the far end on a
 * port the gateway may redirect to it (containment-check/intercept.c and
 * tls.c).  First the pure rule, cell by cell; then the engine against
 * real peers on loopback: the proxy's exact refusal bytes, a TLS server
 * with a certificate of its own (the far end: reachable), and one whose
 * certificate is from the gateway's CA (the proxy terminating TLS: its
 * HTTP answer decides).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "../../containment-check/cc.h"

/* Exactly what moat-proxy writes (gatewayd/proxy/conn.c). */
static const char proxy_403[] =
    "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
    "Content-Length: 27\r\nConnection: close\r\n"
    "X-Moat-Refused: not in the allowlist\r\n\r\nmoat: not in the allowlist\n";
static const uint8_t proxy_alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02,
    49 };

static char ev[120];

static enum cc_verdict
web(const char *reply)
{
	return cc_intercept_verdict(NULL, (const uint8_t *)reply,
	    strlen(reply), 0x1234, false, ev, sizeof(ev));
}

static enum cc_verdict
tls(const struct cc_tls_seen *t, const char *reply, bool timedout)
{
	return cc_intercept_verdict(t, (const uint8_t *)reply,
	    reply ? strlen(reply) : 0, 0x1234, timedout, ev, sizeof(ev));
}

static void
http_reply_parse(void **state)
{
	static const char odd[] =
	    "HTTP/1.0 502 Bad\r\nx-moat-refused:  dial\x01 failed \r\n\r\n";
	struct cc_http_reply r;

	(void)state;
	assert_int_equal(cc_http_reply_parse((const uint8_t *)proxy_403,
	    strlen(proxy_403), &r), 0);
	assert_int_equal(r.status, 403);
	assert_true(r.moat_refused);
	assert_true(r.complete);
	assert_string_equal(r.reason, "not in the allowlist");
	assert_int_equal(r.bodylen, 27);
	/* Incomplete: the head, then the body, arrive in pieces. */
	assert_int_equal(cc_http_reply_parse((const uint8_t *)proxy_403, 20,
	    &r), 1);
	assert_int_equal(cc_http_reply_parse((const uint8_t *)proxy_403,
	    strlen(proxy_403) - 3, &r), 0);
	assert_false(r.complete);
	assert_int_equal(cc_http_reply_parse((const uint8_t *)"HTT", 3, &r), 1);
	assert_int_equal(cc_http_reply_parse((const uint8_t *)"SSH-2.0-x\r\n",
	    11, &r), -1);
	assert_int_equal(cc_http_reply_parse((const uint8_t *)
	    "HTTP/1.1 999 X\r\n\r\n", 18, &r), -1);
	/* The header's name in any case; its value printable only. */
	assert_int_equal(cc_http_reply_parse((const uint8_t *)odd,
	    sizeof(odd) - 1, &r), 0);
	assert_true(r.moat_refused);
	assert_string_equal(r.reason, "dial? failed");
}

static void
web_verdicts(void **state)
{
	(void)state;
	assert_int_equal(web(proxy_403), V_PROXY);
	assert_string_equal(ev, "refused by the gateway's proxy: 403 not in "
	    "the allowlist");
	/* A 403 the proxy did not write is the far end answering. */
	assert_int_equal(web("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n"
	    "\r\n"), V_REACHABLE);
	assert_string_equal(ev, "HTTP 403, not written by the gateway's proxy");
	assert_int_equal(web("HTTP/1.1 200 OK\r\n\r\nhello"), V_REACHABLE);
	assert_int_equal(web("SSH-2.0-OpenSSH\r\n"), V_REACHABLE);
	assert_string_equal(ev, "17 bytes, not HTTP");
	/* Nothing to tell who answered: neither proof of reach nor of
	 * refusal (the judgement fails closed both ways). */
	assert_int_equal(web(""), V_CONNECTED);
	assert_int_equal(cc_intercept_verdict(NULL, NULL, 0, 0, true, ev,
	    sizeof(ev)), V_CONNECTED);
	assert_non_null(strstr(ev, "silent"));
}

static void
tls_verdicts(void **state)
{
	struct cc_tls_seen t = { .alert = -1 };

	(void)state;
	/* The proxy's refusal: access_denied before any server message. */
	t.alert = CC_ALERT_ACCESS_DENIED;
	assert_int_equal(tls(&t, NULL, false), V_PROXY);
	assert_string_equal(ev, "refused by the gateway's proxy: TLS alert "
	    "access_denied");
	/* Any other alert, or one after a ServerHello, is not its shape. */
	t.alert = 40;
	assert_int_equal(tls(&t, NULL, false), V_REACHABLE);
	t.alert = CC_ALERT_ACCESS_DENIED;
	t.server_hello = true;
	assert_int_equal(tls(&t, NULL, false), V_REACHABLE);
	/* A completed handshake with the far end's own certificate. */
	memset(&t, 0, sizeof(t));
	t.alert = -1;
	t.server_hello = t.certificate = t.done = true;
	snprintf(t.subject, sizeof(t.subject), "dns.example");
	assert_int_equal(tls(&t, NULL, true), V_REACHABLE);
	assert_string_equal(ev, "TLS: CN=dns.example, not the gateway's CA; "
	    "no HTTP reply");
	/* Even when the far end answers with a copy of the proxy's 403. */
	assert_int_equal(tls(&t, "HTTP/1.1 403 Forbidden\r\n\r\n", false),
	    V_REACHABLE);
	/* The gateway's CA: the proxy terminated TLS; its answer decides. */
	t.gateway_cert = true;
	assert_int_equal(tls(&t, proxy_403, false), V_PROXY);
	assert_int_equal(tls(&t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
	    "hi", false), V_REACHABLE);
	assert_string_equal(ev, "through the gateway's proxy: HTTP 200, not "
	    "written by the gateway's proxy");
	assert_int_equal(tls(&t, NULL, true), V_CONNECTED);
	/* Nothing but a closed connection; bytes that are not TLS. */
	memset(&t, 0, sizeof(t));
	t.alert = -1;
	assert_int_equal(tls(&t, NULL, false), V_CONNECTED);
	t.not_tls = true;
	assert_int_equal(tls(&t, NULL, false), V_REACHABLE);
}

/* A DNS answer over DoH is the far end, whoever carried it. */
static void
doh_answer(void **state)
{
	struct cc_tls_seen t = { .alert = -1, .server_hello = true,
	    .certificate = true, .done = true, .gateway_cert = true };
	uint8_t q[512], reply[1024];
	char req[1024];
	int n, hl;

	(void)state;
	n = cc_dns_query(".", 2, 0x1234, q, sizeof(q));
	assert_true(n > 12);
	assert_true(cc_doh_request(q, (size_t)n, "9.9.9.9", req,
	    sizeof(req)) > 0);
	assert_non_null(strstr(req, "GET /dns-query?dns=EjQBAAABAAAAAAAAAAAC"
	    "AAE HTTP/1.1\r\nHost: 9.9.9.9\r\n"));
	q[2] |= 0x80;		/* the query, turned into an empty answer */
	hl = snprintf((char *)reply, sizeof(reply), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/dns-message\r\nContent-Length: %d\r\n"
	    "\r\n", n);
	memcpy(reply + hl, q, (size_t)n);
	assert_int_equal(cc_intercept_verdict(&t, reply, (size_t)(hl + n),
	    0x1234, false, ev, sizeof(ev)), V_REACHABLE);
	assert_string_equal(ev, "through the gateway's proxy: DoH answer: "
	    "NOERROR, 0 answers");
	/* Another id is not our answer. */
	assert_int_equal(cc_intercept_verdict(&t, reply, (size_t)(hl + n),
	    0x4321, false, ev, sizeof(ev)), V_REACHABLE);
	assert_non_null(strstr(ev, "HTTP 200"));
}

static void
ports(void **state)
{
	enum cc_app app;

	(void)state;
	assert_true(cc_intercept_port(80, &app));
	assert_int_equal(app, A_WEB);
	assert_true(cc_intercept_port(443, &app));
	assert_int_equal(app, A_TLS);
	assert_false(cc_intercept_port(853, &app));
	assert_false(cc_intercept_port(22, &app));
	assert_string_equal(cc_tls_alert_name(49), "access_denied");
}

/* --- real peers on loopback ------------------------------------------------ */

static char dir[] = "/tmp/moat-test-cc-intercept.XXXXXX";
static char ca_crt[128], ca_key[128], gw_crt[128], gw_key[128], far_crt[128],
    far_key[128];

static EVP_PKEY *
read_key(const char *path)
{
	FILE *f = fopen(path, "r");
	EVP_PKEY *k;

	assert_non_null(f);
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	return k;
}

static X509 *
read_crt(const char *path)
{
	FILE *f = fopen(path, "r");
	X509 *x;

	assert_non_null(f);
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

/* A P-256 certificate for cn, signed by the CA in ca_crt/ca_key (by_ca)
 * or self-signed. */
static void
mkcert(const char *crt, const char *key, const char *cn, bool by_ca)
{
	EVP_PKEY *pk = EVP_EC_gen("P-256"), *ik = by_ca ? read_key(ca_key) : pk;
	X509 *x = X509_new(), *ca = by_ca ? read_crt(ca_crt) : NULL;
	FILE *f;

	assert_non_null(pk);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), by_ca ? 2 : 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, pk);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, by_ca ? X509_get_subject_name(ca) :
	    X509_get_subject_name(x));
	assert_true(X509_sign(x, ik, EVP_sha256()) > 0);
	assert_non_null(f = fopen(crt, "w"));
	PEM_write_X509(f, x);
	fclose(f);
	assert_non_null(f = fopen(key, "w"));
	PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	X509_free(x);
	X509_free(ca);
	if (by_ca)
		EVP_PKEY_free(ik);
	EVP_PKEY_free(pk);
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(ca_crt, sizeof(ca_crt), "%s/ca.crt", dir);
	snprintf(ca_key, sizeof(ca_key), "%s/ca.key", dir);
	snprintf(gw_crt, sizeof(gw_crt), "%s/gw.crt", dir);
	snprintf(gw_key, sizeof(gw_key), "%s/gw.key", dir);
	snprintf(far_crt, sizeof(far_crt), "%s/far.crt", dir);
	snprintf(far_key, sizeof(far_key), "%s/far.key", dir);
	mkcert(ca_crt, ca_key, "moat gateway test CA", false);
	mkcert(gw_crt, gw_key, "9.9.9.9", true);
	mkcert(far_crt, far_key, "dns.far.test", false);
	return tls_set_gateway_ca(ca_crt);
}

static int
teardown(void **state)
{
	char cmd[200];

	(void)state;
	tls_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

enum peer { P_ALERT, P_FAR, P_GW_403, P_GW_DOH, P_SILENT_CLOSE };

static void
peer_tls(int fd, enum peer pe)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	const char *crt = pe == P_FAR ? far_crt : gw_crt;
	const char *key = pe == P_FAR ? far_key : gw_key;
	char buf[2048], out[1024], *q;
	uint8_t dns[512];
	size_t n = 0;
	int r, hl, dl;
	SSL *ssl;

	SSL_CTX_use_certificate_file(ctx, crt, SSL_FILETYPE_PEM);
	SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM);
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		_exit(1);
	while (n < sizeof(buf) - 1 && (r = SSL_read(ssl, buf + n,
	    (int)(sizeof(buf) - 1 - n))) > 0) {
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			break;
	}
	if (pe == P_GW_403) {
		SSL_write(ssl, proxy_403, (int)strlen(proxy_403));
	} else if (pe == P_GW_DOH || pe == P_FAR) {
		/* Answer the DoH query with itself, flagged as a response. */
		assert_non_null(q = strstr(buf, "dns="));
		dl = cc_dns_query(".", 2, 0, dns, sizeof(dns));
		dns[0] = 0x12;		/* the id the probe used */
		dns[1] = 0x34;
		dns[2] |= 0x80;
		hl = snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\n"
		    "Content-Type: application/dns-message\r\n"
		    "Content-Length: %d\r\n\r\n", dl);
		memcpy(out + hl, dns, (size_t)dl);
		SSL_write(ssl, out, hl + dl);
	}
	SSL_shutdown(ssl);
	_exit(0);
}

static void
peer(int lfd, enum peer pe)
{
	char buf[512];
	int fd = accept(lfd, NULL, NULL);

	if (pe == P_ALERT) {	/* moat-proxy's refuse_tls */
		if (read(fd, buf, sizeof(buf)) > 0 &&
		    write(fd, proxy_alert, sizeof(proxy_alert)) < 0)
			_exit(1);
		close(fd);
		_exit(0);
	}
	if (pe == P_SILENT_CLOSE) {
		if (read(fd, buf, sizeof(buf)) < 0)
			_exit(1);
		close(fd);
		_exit(0);
	}
	peer_tls(fd, pe);
}

/* Runs one A_TLS DoH probe (id 0x1234) against a peer on 127.0.0.1. */
static enum cc_verdict
probe_peer(enum peer pe)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct cc_probe p;
	struct moat_addr a;
	uint8_t q[512];
	char req[1024];
	int lfd = socket(AF_INET, SOCK_STREAM, 0), n, len;
	pid_t pid;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	getsockname(lfd, (struct sockaddr *)&sin, &sl);
	if ((pid = fork()) == 0)
		peer(lfd, pe);
	close(lfd);

	memset(&p, 0, sizeof(p));
	p.kind = K_TCP;
	p.expect = E_DENY;
	p.timeout_ms = 3000;
	p.fd = -1;
	p.dnsid = 0x1234;
	assert_int_equal(addr_parse("127.0.0.1", &a), 0);
	sockaddr_set(&p.dst, &p.dstlen, &a, ntohs(sin.sin_port), 0);
	n = cc_dns_query(".", 2, p.dnsid, q, sizeof(q));
	len = cc_doh_request(q, (size_t)n, "127.0.0.1", req, sizeof(req));
	p.app = A_TLS;
	p.payload = malloc((size_t)len);
	memcpy(p.payload, req, (size_t)len);
	p.paylen = (size_t)len;
	assert_int_equal(engine_run(&p, 1, 1), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(p.payload);
	free(p.dns);
	snprintf(ev, sizeof(ev), "%s", p.evidence);
	return p.verdict;
}

static void
engine_proxy_alert(void **state)
{
	(void)state;
	assert_int_equal(probe_peer(P_ALERT), V_PROXY);
	assert_string_equal(ev, "refused by the gateway's proxy: TLS alert "
	    "access_denied");
}

static void
engine_far_end(void **state)
{
	(void)state;
	assert_int_equal(probe_peer(P_FAR), V_REACHABLE);
	assert_string_equal(ev, "TLS: CN=dns.far.test, not the gateway's CA; "
	    "DoH answer: NOERROR, 0 answers");
}

static void
engine_gateway_ca(void **state)
{
	(void)state;
	assert_int_equal(probe_peer(P_GW_403), V_PROXY);
	assert_string_equal(ev, "refused by the gateway's proxy: 403 not in "
	    "the allowlist");
	/* The proxy terminating TLS and then forwarding: the DNS answer. */
	assert_int_equal(probe_peer(P_GW_DOH), V_REACHABLE);
	assert_string_equal(ev, "through the gateway's proxy: DoH answer: "
	    "NOERROR, 0 answers");
}

static void
engine_closed(void **state)
{
	(void)state;
	assert_int_equal(probe_peer(P_SILENT_CLOSE), V_CONNECTED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(http_reply_parse),
		cmocka_unit_test(web_verdicts),
		cmocka_unit_test(tls_verdicts),
		cmocka_unit_test(doh_answer),
		cmocka_unit_test(ports),
		cmocka_unit_test(engine_proxy_alert),
		cmocka_unit_test(engine_far_end),
		cmocka_unit_test(engine_gateway_ca),
		cmocka_unit_test(engine_closed),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
