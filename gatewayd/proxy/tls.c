/*
 * tls.c -- gateway CA, leaf certificate cache and TLS contexts.
 *
 * The CA key is generated once (P-256) into state_dir with mode 0600 and
 * never leaves the gateway.  Leaves share one key generated at start and
 * are cached per host name for a day; they are valid for a week.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "policy.h"
#include "tls.h"

#define LEAF_CACHE	1024
#define LEAF_REUSE_S	(24 * 3600)
#define LEAF_VALID_S	(7 * 24 * 3600)

struct leaf {
	char		 host[256];
	X509		*cert;
	time_t		 made;
};

static EVP_PKEY *ca_key, *leaf_key;
static X509 *ca_cert;
static SSL_CTX *guest_ctx, *up_ctx;
static struct leaf leaves[LEAF_CACHE];
static char errbuf[256];

const char *
tls_errstr(void)
{
	unsigned long e = ERR_get_error();

	if (e == 0)
		return "unknown TLS error";
	ERR_error_string_n(e, errbuf, sizeof(errbuf));
	ERR_clear_error();
	return errbuf;
}

static int
add_ext(X509 *issuer, X509 *cert, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

static int
set_serial(X509 *x)
{
	unsigned char r[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(r, sizeof(r)) != 1)
		return -1;
	r[0] &= 0x7f;			/* positive */
	bn = BN_bin2bn(r, sizeof(r), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static X509 *
cert_new(EVP_PKEY *key, const char *cn, long from, long to)
{
	X509 *x = X509_new();
	X509_NAME *n;

	if (x == NULL || !X509_set_version(x, 2) || set_serial(x) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), from) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), to) ||
	    !X509_set_pubkey(x, key))
		goto bad;
	n = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
	    (const unsigned char *)"moat", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0))
		goto bad;
	return x;
bad:
	X509_free(x);
	return NULL;
}

static int
ca_create(const char *keypath, const char *certpath)
{
	FILE *fp;
	int fd;

	if ((ca_key = EVP_EC_gen("P-256")) == NULL)
		return -1;
	ca_cert = cert_new(ca_key, "moat gateway CA", -3600,
	    10L * 365 * 24 * 3600);
	if (ca_cert == NULL || !X509_set_issuer_name(ca_cert,
	    X509_get_subject_name(ca_cert)) ||
	    add_ext(ca_cert, ca_cert, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(ca_cert, ca_cert, NID_key_usage,
	    "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(ca_cert, ca_cert, NID_subject_key_identifier, "hash") < 0 ||
	    !X509_sign(ca_cert, ca_key, EVP_sha256()))
		return -1;
	/* O_EXCL: never overwrite a key that appeared meanwhile. */
	fd = open(keypath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || (fp = fdopen(fd, "w")) == NULL)
		fatal("%s", keypath);
	if (!PEM_write_PrivateKey(fp, ca_key, NULL, NULL, 0, NULL, NULL) ||
	    fclose(fp) != 0)
		fatalx("%s: cannot write the CA key", keypath);
	fd = open(certpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (fp = fdopen(fd, "w")) == NULL)
		fatal("%s", certpath);
	if (!PEM_write_X509(fp, ca_cert) || fclose(fp) != 0)
		fatalx("%s: cannot write the CA certificate", certpath);
	log_info("created the gateway CA in %s", certpath);
	return 0;
}

static int
ca_load(const char *keypath, const char *certpath)
{
	struct stat st;
	FILE *fp;

	if ((fp = fopen(keypath, "re")) == NULL)
		return -1;
	if (fstat(fileno(fp), &st) == 0 && (st.st_mode & 077) != 0)
		fatalx("%s: the CA key must be mode 0600", keypath);
	ca_key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	if ((fp = fopen(certpath, "re")) == NULL)
		fatal("%s", certpath);
	ca_cert = PEM_read_X509(fp, NULL, NULL, NULL);
	fclose(fp);
	if (ca_key == NULL || ca_cert == NULL ||
	    X509_check_private_key(ca_cert, ca_key) != 1)
		fatalx("%s, %s: unreadable or mismatched CA", keypath,
		    certpath);
	return 0;
}

static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";

	/* Only HTTP/1.1 is spoken after interception. */
	if (SSL_select_next_proto((unsigned char **)out, outlen, h11,
	    sizeof(h11) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	return SSL_TLSEXT_ERR_OK;
}

static int
contexts(const char *upstream_ca)
{
	static const unsigned char h11[] = "\x08http/1.1";

	guest_ctx = SSL_CTX_new(TLS_server_method());
	up_ctx = SSL_CTX_new(TLS_client_method());
	if (guest_ctx == NULL || up_ctx == NULL)
		return -1;
	SSL_CTX_set_min_proto_version(guest_ctx, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(up_ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(guest_ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
	SSL_CTX_set_options(up_ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(guest_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(up_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_alpn_select_cb(guest_ctx, alpn_select, NULL);
	SSL_CTX_set_verify(up_ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_default_verify_paths(up_ctx) != 1)
		log_warnx("tls: no system trust store");
	if (upstream_ca != NULL &&
	    SSL_CTX_load_verify_locations(up_ctx, upstream_ca, NULL) != 1) {
		log_warnx("tls: %s: %s", upstream_ca, tls_errstr());
		return -1;
	}
	if (SSL_CTX_set_alpn_protos(up_ctx, h11, sizeof(h11) - 1) != 0)
		return -1;
	return 0;
}

int
tls_init(const char *state_dir, const char *upstream_ca)
{
	char keypath[4096], certpath[4096];

	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		fatal("%s", state_dir);
	snprintf(keypath, sizeof(keypath), "%s/%s", state_dir, TLS_CA_KEY);
	snprintf(certpath, sizeof(certpath), "%s/%s", state_dir, TLS_CA_CERT);
	if (ca_load(keypath, certpath) < 0 && ca_create(keypath, certpath) < 0) {
		log_warnx("tls: cannot create the CA: %s", tls_errstr());
		return -1;
	}
	if ((leaf_key = EVP_EC_gen("P-256")) == NULL)
		return -1;
	return contexts(upstream_ca);
}

void
tls_free(void)
{
	size_t i;

	for (i = 0; i < LEAF_CACHE; i++)
		X509_free(leaves[i].cert);
	memset(leaves, 0, sizeof(leaves));
	SSL_CTX_free(guest_ctx);
	SSL_CTX_free(up_ctx);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(leaf_key);
	X509_free(ca_cert);
	guest_ctx = up_ctx = NULL;
	ca_key = leaf_key = NULL;
	ca_cert = NULL;
}

static X509 *
leaf_make(const char *host)
{
	struct moat_addr a;
	char san[300];
	X509 *x;

	x = cert_new(leaf_key, host, -3600, LEAF_VALID_S);
	snprintf(san, sizeof(san), "%s:%s", policy_literal(host, &a) ? "IP" :
	    "DNS", host);
	if (x == NULL || !X509_set_issuer_name(x,
	    X509_get_subject_name(ca_cert)) ||
	    add_ext(ca_cert, x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(ca_cert, x, NID_key_usage,
	    "critical,digitalSignature,keyEncipherment") < 0 ||
	    add_ext(ca_cert, x, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(ca_cert, x, NID_subject_alt_name, san) < 0 ||
	    add_ext(ca_cert, x, NID_authority_key_identifier, "keyid") < 0 ||
	    !X509_sign(x, ca_key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static X509 *
leaf_get(const char *host)
{
	struct leaf *victim = &leaves[0];
	time_t now = time(NULL);
	size_t i;

	for (i = 0; i < LEAF_CACHE; i++) {
		if (leaves[i].cert && strcmp(leaves[i].host, host) == 0 &&
		    now - leaves[i].made < LEAF_REUSE_S)
			return leaves[i].cert;
		if (leaves[i].made < victim->made)
			victim = &leaves[i];
	}
	X509_free(victim->cert);
	memset(victim, 0, sizeof(*victim));
	if ((victim->cert = leaf_make(host)) == NULL)
		return NULL;
	snprintf(victim->host, sizeof(victim->host), "%s", host);
	victim->made = now;
	return victim->cert;
}

SSL *
tls_guest_ssl(int fd, const char *host)
{
	X509 *leaf = leaf_get(host);
	SSL *ssl;

	if (leaf == NULL || (ssl = SSL_new(guest_ctx)) == NULL)
		return NULL;
	if (SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, leaf_key) != 1 ||
	    SSL_add1_chain_cert(ssl, ca_cert) != 1 ||
	    SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_accept_state(ssl);
	return ssl;
}

SSL *
tls_upstream_ssl(int fd, const char *host)
{
	struct moat_addr a;
	SSL *ssl;

	if ((ssl = SSL_new(up_ctx)) == NULL)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, host) != 1 ||
	    (!policy_literal(host, &a) &&
	    SSL_set_tlsext_host_name(ssl, host) != 1)) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_connect_state(ssl);
	return ssl;
}
