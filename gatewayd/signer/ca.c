/*
 * ca.c -- the gateway CA (see ca.h).  Runs in the process that loads the
 * CA (gatewayd's parent, or a stand-alone proxy's signer) and in the
 * signer.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "log.h"
#include "smallfile.h"

static const char *
ca_err(void)
{
	static char buf[256];
	unsigned long e = ERR_get_error();

	if (e == 0)
		return "unknown OpenSSL error";
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
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
ca_create(struct ca *ca, const char *keypath, const char *certpath)
{
	FILE *fp;
	int fd;

	if ((ca->key = EVP_EC_gen("P-256")) == NULL)
		return -1;
	ca->cert = cert_new(ca->key, "moat gateway CA", -3600,
	    10L * 365 * 24 * 3600);
	if (ca->cert == NULL || !X509_set_issuer_name(ca->cert,
	    X509_get_subject_name(ca->cert)) ||
	    add_ext(ca->cert, ca->cert, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_key_usage,
	    "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_subject_key_identifier,
	    "hash") < 0 ||
	    !X509_sign(ca->cert, ca->key, EVP_sha256()))
		return -1;
	/* O_EXCL: never overwrite a key that appeared meanwhile. */
	fd = open(keypath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || (fp = fdopen(fd, "w")) == NULL) {
		log_warn("%s", keypath);
		return -1;
	}
	if (!PEM_write_PrivateKey(fp, ca->key, NULL, NULL, 0, NULL, NULL) ||
	    fclose(fp) != 0) {
		log_warnx("%s: cannot write the CA key", keypath);
		return -1;
	}
	fd = open(certpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (fp = fdopen(fd, "w")) == NULL) {
		log_warn("%s", certpath);
		return -1;
	}
	if (!PEM_write_X509(fp, ca->cert) || fclose(fp) != 0) {
		log_warnx("%s: cannot write the CA certificate", certpath);
		return -1;
	}
	log_info("created the gateway CA in %s", certpath);
	return 0;
}

/* 1 loaded, 0 no key yet, -1 a key that cannot be used.  The key's text
 * passes through our own buffer only, wiped after use: no stdio buffer
 * keeps a copy in the process that forks the signer. */
static int
ca_load(struct ca *ca, const char *keypath, const char *certpath)
{
	char pem[8192];
	struct stat st;
	ssize_t n;
	BIO *bio;
	FILE *fp;
	int fd;

	if ((fd = open(keypath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return errno == ENOENT ? 0 : (log_warn("%s", keypath), -1);
	if (fstat(fd, &st) == 0 && (st.st_mode & 077) != 0) {
		close(fd);
		log_warnx("%s: the CA key must be mode 0600", keypath);
		return -1;
	}
	n = read_whole_fd(fd, pem, sizeof(pem));
	close(fd);
	if (n > 0 && (size_t)n < sizeof(pem) && (bio = BIO_new_mem_buf(pem, (int)n)) != NULL) {
		ca->key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
		BIO_free(bio);
	}
	explicit_bzero(pem, sizeof(pem));
	if ((fp = fopen(certpath, "re")) != NULL) {
		ca->cert = PEM_read_X509(fp, NULL, NULL, NULL);
		fclose(fp);
	}
	if (ca->key == NULL || ca->cert == NULL ||
	    X509_check_private_key(ca->cert, ca->key) != 1) {
		log_warnx("%s, %s: unreadable or mismatched CA", keypath,
		    certpath);
		return -1;
	}
	return 1;
}

int
ca_open(const char *state_dir, struct ca *ca)
{
	char keypath[4096], certpath[4096];
	int rc;

	ca->key = NULL;
	ca->cert = NULL;
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST) {
		log_warn("%s", state_dir);
		return -1;
	}
	snprintf(keypath, sizeof(keypath), "%s/%s", state_dir, CA_KEY_FILE);
	snprintf(certpath, sizeof(certpath), "%s/%s", state_dir, CA_CERT_FILE);
	if ((rc = ca_load(ca, keypath, certpath)) == 0 &&
	    ca_create(ca, keypath, certpath) == -1) {
		log_warnx("cannot create the gateway CA: %s", ca_err());
		rc = -1;
	}
	if (rc == -1)
		ca_close(ca);
	return rc == -1 ? -1 : 0;
}

void
ca_close(struct ca *ca)
{
	EVP_PKEY_free(ca->key);
	X509_free(ca->cert);
	ca->key = NULL;
	ca->cert = NULL;
}

int
ca_host_ok(const char *host)
{
	unsigned char a[16];
	size_t n = strlen(host);

	if (inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1)
		return 1;
	return n > 0 && n < 254 && host[0] != '.' && host[0] != '-' &&
	    strspn(host, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == n;
}

X509 *
ca_sign_leaf(const struct ca *ca, const char *host, EVP_PKEY *pub)
{
	unsigned char a[16];
	char san[300];
	X509 *x;
	int ip;

	if (!ca_host_ok(host))
		return NULL;
	ip = inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", host);
	x = cert_new(pub, host, -3600, CA_LEAF_VALID_S);
	if (x == NULL || !X509_set_issuer_name(x,
	    X509_get_subject_name(ca->cert)) ||
	    add_ext(ca->cert, x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(ca->cert, x, NID_key_usage,
	    "critical,digitalSignature,keyEncipherment") < 0 ||
	    add_ext(ca->cert, x, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(ca->cert, x, NID_subject_alt_name, san) < 0 ||
	    add_ext(ca->cert, x, NID_authority_key_identifier, "keyid") < 0 ||
	    !X509_sign(x, ca->key, EVP_sha256())) {
		X509_free(x);
		ERR_clear_error();
		return NULL;
	}
	return x;
}
