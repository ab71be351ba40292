/*
 * tls.c -- leaf certificate cache and TLS contexts.
 *
 * This process talks to guests, so it never holds the CA key: leaves
 * share one key generated here at start, and the signer process signs
 * a certificate for it per host name on request.  Leaves are cached per
 * host name for a day; they are valid for a week.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "ev.h"
#include "ipc.h"
#include "log.h"
#include "policy.h"
#include "tls.h"

#define LEAF_CACHE	1024
#define LEAF_REUSE_S	(24 * 3600)
#define SIGNER_WAIT_S	5
#define SIGN_PENDING_MAX 256	/* hosts being signed at once */
#define SIGN_PER_OWNER	8	/* of them asked for by one sandbox */

struct leaf {
	char		 host[256];
	X509		*cert;
	time_t		 made;
};

static EVP_PKEY *leaf_key;
static X509 *ca_cert;		/* public, from the signer's first answer */
static int signer_fd = -1;
static int signer_lost;
static uint32_t signer_id;
static SSL_CTX *guest_ctx, *up_ctx;
static struct leaf leaves[LEAF_CACHE];
static char errbuf[256];

/*
 * Upstream TLS sessions, for resumption: a new connection to an API host
 * offers the session (TLS 1.3: the ticket) of an earlier one, and both
 * sides skip the certificate exchange and its signatures.  A session is
 * only ever offered under the key it was made under: the sandbox, the
 * host name it was verified for, the port, the server name sent, and
 * the names of the secrets bound to that host for that sandbox.  So a
 * sandbox never resumes another's session, nor one made while other
 * secrets were bound.  Only sessions of handshakes whose certificate
 * was verified are kept; they expire with the session's own timeout.
 */
#define SESS_CACHE	256
#define SESS_KEY_LEN	640

struct sess {
	char		 key[SESS_KEY_LEN];	/* "": free */
	SSL_SESSION	*s;
	time_t		 until;
	time_t		 used;
};

static struct sess sessions[SESS_CACHE];
static int sess_idx = -1;		/* SSL ex_data: the connection's key */
static struct tls_stats stats;

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

/* A name OpenSSL's c_rehash gives a certificate: 8 hex digits, a dot,
 * a number (".rN" names are revocation lists, not read). */
static int
hashed_name(const char *s)
{
	int i;

	for (i = 0; i < 8; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	if (s[8] != '.' || s[9] == '\0')
		return 0;
	for (s += 9; *s != '\0'; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* Every certificate of one hashed directory; how many files loaded. */
static int
load_dir(X509_STORE *st, const char *dir, size_t len)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%.*s", (int)len, dir);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (hashed_name(e->d_name) && snprintf(path, sizeof(path),
		    "%.*s/%s", (int)len, dir, e->d_name) < (int)sizeof(path) &&
		    X509_STORE_load_file(st, path) == 1)
			n++;
	closedir(d);
	return n;
}

/*
 * The system's trust store, read whole now: OpenSSL's default file and
 * hashed directories (or $SSL_CERT_FILE and $SSL_CERT_DIR, a list split
 * by ':').  SSL_CTX_set_default_verify_paths would instead open a
 * directory's files while verifying, and once the proxy has narrowed
 * itself it may open no file (lib/sandbox.c).  How many files loaded.
 */
static int
system_trust(X509_STORE *st)
{
	const char *file = getenv(X509_get_default_cert_file_env());
	const char *dirs = getenv(X509_get_default_cert_dir_env());
	size_t len;
	int n = 0;

	if (file == NULL)
		file = X509_get_default_cert_file();
	if (dirs == NULL)
		dirs = X509_get_default_cert_dir();
	if (X509_STORE_load_file(st, file) == 1)
		n++;
	for (; *dirs != '\0'; dirs += len + (dirs[len] == ':')) {
		len = strcspn(dirs, ":");
		n += load_dir(st, dirs, len);
	}
	ERR_clear_error();	/* a missing file or directory is no error */
	return n;
}

/* --- upstream sessions ------------------------------------------------------ */

static void
sess_drop(struct sess *e)
{
	SSL_SESSION_free(e->s);
	memset(e, 0, sizeof(*e));
}

static void
key_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
    void *argp)
{
	free(ptr);
}

static struct sess *
sess_find(const char *key)
{
	time_t now = time(NULL);
	size_t i;

	for (i = 0; i < SESS_CACHE; i++) {
		if (sessions[i].key[0] == '\0')
			continue;
		if (sessions[i].until <= now) {
			sess_drop(&sessions[i]);
			continue;
		}
		if (strcmp(sessions[i].key, key) == 0)
			return &sessions[i];
	}
	return NULL;
}

/* A new session (TLS 1.3: a ticket, which may come after the handshake)
 * for the connection's key.  A copy is kept: OpenSSL marks the
 * connection's own session not resumable when the connection ends
 * without a close_notify, as upstreams' often do.  Always 0 (the
 * connection's reference stays OpenSSL's). */
static int
sess_new(SSL *ssl, SSL_SESSION *sess)
{
	const char *key = SSL_get_ex_data(ssl, sess_idx);
	struct sess *e, *victim = NULL;
	time_t now = time(NULL);
	SSL_SESSION *copy;
	long t;
	size_t i;

	/* A handshake that was not verified (it would have failed) or a
	 * session that cannot be resumed is not kept. */
	if (key == NULL || SSL_get_verify_result(ssl) != X509_V_OK ||
	    !SSL_SESSION_is_resumable(sess) ||
	    (t = SSL_SESSION_get_timeout(sess)) <= 0 ||
	    (copy = SSL_SESSION_dup(sess)) == NULL)
		return 0;
	if ((e = sess_find(key)) == NULL) {
		for (i = 0; i < SESS_CACHE; i++) {
			if (sessions[i].key[0] == '\0') {
				victim = &sessions[i];
				break;
			}
			if (victim == NULL || sessions[i].used < victim->used)
				victim = &sessions[i];
		}
		e = victim;
	}
	sess_drop(e);
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->s = copy;
	e->until = SSL_SESSION_get_time(sess) + t;
	if (e->until > now + 24 * 3600)
		e->until = now + 24 * 3600;
	e->used = now;
	return 0;
}

/* A handshake under this connection's key failed: its session goes. */
static void
sess_forget(SSL *ssl)
{
	const char *key = SSL_get_ex_data(ssl, sess_idx);
	struct sess *e;

	if (key != NULL && SSL_session_reused(ssl) &&
	    (e = sess_find(key)) != NULL)
		sess_drop(e);
}

void
tls_sessions_flush(void)
{
	size_t i;

	for (i = 0; i < SESS_CACHE; i++)
		if (sessions[i].key[0] != '\0')
			sess_drop(&sessions[i]);
}

/* Can this kernel take TLS records (the "tls" upper layer protocol)?
 * Asked on a socket that is not connected: a kernel with it refuses
 * with ENOTCONN, one without it with ENOENT. */
static int
ktls_probe(void)
{
	int fd, r;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	r = setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls"));
	r = r == 0 || errno == ENOTCONN || errno == EISCONN;
	close(fd);
	return r;
}

#define TLS13_SUITES	"TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:" \
			"TLS_CHACHA20_POLY1305_SHA256"

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
	/* perf: once a handshake is done, OpenSSL hands the record layer
	 * to the kernel (kernel TLS) where the kernel has it and the cipher
	 * allows; else records stay in user space as before. */
	SSL_CTX_set_options(guest_ctx, SSL_OP_ENABLE_KTLS);
	SSL_CTX_set_options(up_ctx, SSL_OP_ENABLE_KTLS);
	/* perf: upstream sessions are kept here (sess_new) and offered
	 * again (tls_upstream_ssl), never from OpenSSL's own cache, which
	 * knows no sandbox. */
	SSL_CTX_set_session_cache_mode(up_ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(up_ctx, sess_new);
	/* perf: every intercepted byte is decrypted and encrypted once more
	 * here.  AES-128-GCM is the cheapest AEAD with AES instructions
	 * (openssl speed on a gateway: 3.3 GB/s against 3.1 for AES-256-GCM
	 * and 2.9 for ChaCha20), so both sides ask for it first; towards a
	 * guest that lists ChaCha20 first (no AES instructions of its own)
	 * ChaCha20 stays its choice. */
	if (SSL_CTX_set_ciphersuites(guest_ctx, TLS13_SUITES) != 1 ||
	    SSL_CTX_set_ciphersuites(up_ctx, TLS13_SUITES) != 1)
		return -1;
	SSL_CTX_set_options(guest_ctx, SSL_OP_CIPHER_SERVER_PREFERENCE |
	    SSL_OP_PRIORITIZE_CHACHA);
	SSL_CTX_set_mode(guest_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_mode(up_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	/* perf: upstream records (bodies coming down) are read many at a
	 * time instead of header then body, two reads per record.  What
	 * OpenSSL buffered is drained by the pump, which reads until
	 * SSL_read wants more from the socket or its buffer is full. */
	SSL_CTX_set_read_ahead(up_ctx, 1);
	SSL_CTX_set_default_read_buffer_len(up_ctx, 64 * 1024);
	SSL_CTX_set_alpn_select_cb(guest_ctx, alpn_select, NULL);
	SSL_CTX_set_verify(up_ctx, SSL_VERIFY_PEER, NULL);
	if (system_trust(SSL_CTX_get_cert_store(up_ctx)) == 0)
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

/* One signing request in flight: the connections waiting for its leaf.
 * The worker's loop never waits for the signer: a connection that needs
 * a leaf not in the cache waits in its own state (S_SIGNING) while every
 * other connection goes on. */
struct pending {
	char		 host[256];	/* "": free */
	uint32_t	 id;
	uint64_t	 deadline;	/* ev clock, ms */
	char		 owner[IPC_NAME_LEN];	/* the sandbox that asked first */
	struct tls_wait	*waiters;
};

static struct pending pend[SIGN_PENDING_MAX];
static struct ev signer_ev;
static struct ev_timer signer_timer;

static void on_signer(struct ev *, uint32_t);

int
tls_init(int signer, const char *upstream_ca)
{
	int fl;

	signer_fd = signer;
	if ((fl = fcntl(signer_fd, F_GETFL)) == -1 ||
	    fcntl(signer_fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		log_warn("tls: signer socket");
		return -1;
	}
	if ((leaf_key = EVP_EC_gen("P-256")) == NULL)
		return -1;
	if (sess_idx == -1 && (sess_idx = SSL_get_ex_new_index(0, NULL, NULL,
	    NULL, key_free)) == -1)
		return -1;
	stats.ktls_kernel = ktls_probe();
	return contexts(upstream_ca);
}

/* After ev_init: the signer's answers arrive as events. */
int
tls_start(void)
{
	return ev_add(&signer_ev, signer_fd, EPOLLIN, on_signer, NULL);
}

int
tls_signer_lost(void)
{
	return signer_lost;
}

void
tls_free(void)
{
	size_t i;

	for (i = 0; i < LEAF_CACHE; i++)
		X509_free(leaves[i].cert);
	memset(leaves, 0, sizeof(leaves));
	tls_sessions_flush();
	SSL_CTX_free(guest_ctx);
	SSL_CTX_free(up_ctx);
	EVP_PKEY_free(leaf_key);
	X509_free(ca_cert);
	guest_ctx = up_ctx = NULL;
	leaf_key = NULL;
	ca_cert = NULL;
}

/* --- waiting connections ------------------------------------------------- */

static void
wait_link(struct pending *p, struct tls_wait *w)
{
	w->next = p->waiters;
	w->pprev = &p->waiters;
	if (p->waiters != NULL)
		p->waiters->pprev = &w->next;
	p->waiters = w;
}

void
tls_wait_cancel(struct tls_wait *w)
{
	if (w->pprev == NULL)
		return;
	*w->pprev = w->next;
	if (w->next != NULL)
		w->next->pprev = w->pprev;
	w->next = NULL;
	w->pprev = NULL;
}

/* The request is answered (ok) or given up: free its slot, then tell
 * every waiter, each of which may close or start its handshake. */
static void
pending_end(struct pending *p, int ok)
{
	struct tls_wait *w, *list = p->waiters;

	p->host[0] = '\0';
	p->waiters = NULL;
	if (list != NULL)
		list->pprev = &list;
	while ((w = list) != NULL) {
		tls_wait_cancel(w);
		w->done(w, ok);
	}
}

/* --- the leaf cache -------------------------------------------------------- */

static X509 *
leaf_cached(const char *host)
{
	time_t now = time(NULL);
	size_t i;

	for (i = 0; i < LEAF_CACHE; i++)
		if (leaves[i].cert && strcmp(leaves[i].host, host) == 0 &&
		    now - leaves[i].made < LEAF_REUSE_S)
			return leaves[i].cert;
	return NULL;
}

static void
leaf_put(const char *host, X509 *cert)
{
	struct leaf *victim = &leaves[0];
	size_t i;

	for (i = 0; i < LEAF_CACHE; i++)
		if (leaves[i].made < victim->made)
			victim = &leaves[i];
	X509_free(victim->cert);
	snprintf(victim->host, sizeof(victim->host), "%s", host);
	victim->cert = cert;
	victim->made = time(NULL);
}

/* --- the signer ------------------------------------------------------------ */

static void
signer_gone(const char *why)
{
	size_t i;

	if (!signer_lost)
		log_warnx("tls: the signer is gone%s", why);
	signer_lost = 1;
	ev_del(&signer_ev);
	for (i = 0; i < SIGN_PENDING_MAX; i++)
		if (pend[i].host[0] != '\0')
			pending_end(&pend[i], 0);
}

static int
sign_send(struct pending *p)
{
	static union {
		struct ipc_sign_req req;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	unsigned char *w;
	int klen;

	memset(&u.req, 0, sizeof(u.req));
	memcpy(u.req.host, p->host, strlen(p->host) + 1);	/* < IPC_HOST_LEN */
	if ((klen = i2d_PUBKEY(leaf_key, NULL)) <= 0 ||
	    klen > IPC_SIGN_MAX_KEY)
		return -1;
	w = u.req.key;
	i2d_PUBKEY(leaf_key, &w);
	u.req.keylen = (uint16_t)klen;
	p->id = ++signer_id;
	if (ipc_send(signer_fd, IPC_SIGN_REQ, p->id, &u.req,
	    sizeof(u.req) + (size_t)klen) == -1) {
		signer_gone("");
		return -1;
	}
	return 0;
}

static X509 *
leaf_from(const struct ipc_sign_cert *m, const char *host)
{
	const unsigned char *p;
	X509 *leaf, *ca;

	if (m->status != 0) {
		log_warnx("tls: the signer refused a leaf for %s", host);
		return NULL;
	}
	p = m->der;
	if ((leaf = d2i_X509(NULL, &p, m->leaflen)) == NULL)
		return NULL;
	if (ca_cert == NULL) {
		if ((ca = d2i_X509(NULL, &p, m->calen)) == NULL) {
			X509_free(leaf);
			return NULL;
		}
		ca_cert = ca;
	}
	return leaf;
}

static void
on_signer(struct ev *e, uint32_t events)
{
	static union {
		struct ipc_sign_cert cert;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h;
	char err[256], why[300];
	X509 *leaf;
	ssize_t n;
	size_t i;

	for (;;) {
		n = ipc_recv(signer_fd, &h, &u, sizeof(u), err, sizeof(err));
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR))
			return;
		if (n <= 0 || h.type != IPC_SIGN_CERT) {
			snprintf(why, sizeof(why), "%s%s", n == -2 ? ": " : "",
			    n == -2 ? err : "");
			signer_gone(why);
			return;
		}
		for (i = 0; i < SIGN_PENDING_MAX; i++)
			if (pend[i].host[0] != '\0' && pend[i].id == h.id)
				break;
		if (i == SIGN_PENDING_MAX)
			continue;	/* a late answer to a request given up */
		if ((leaf = leaf_from(&u.cert, pend[i].host)) != NULL)
			leaf_put(pend[i].host, leaf);
		pending_end(&pend[i], leaf != NULL);
	}
}

/* Requests the signer has not answered in time are given up. */
static void
signer_expire(void *arg)
{
	uint64_t now = ev_now(), next = 0;
	size_t i;

	for (i = 0; i < SIGN_PENDING_MAX; i++) {
		if (pend[i].host[0] == '\0')
			continue;
		if (pend[i].deadline <= now) {
			log_warnx("tls: the signer did not answer for %s in "
			    "%d s", pend[i].host, SIGNER_WAIT_S);
			pending_end(&pend[i], 0);
		} else if (next == 0 || pend[i].deadline < next)
			next = pend[i].deadline;
	}
	if (next != 0)
		ev_timer_set(&signer_timer, next, signer_expire, NULL);
}

int
tls_leaf_want(const char *host, struct tls_wait *w, const char *owner)
{
	struct pending *p = NULL;
	size_t i, mine = 0;

	if (leaf_cached(host) != NULL)
		return 1;
	if (signer_lost || strlen(host) >= IPC_HOST_LEN)
		return -1;
	for (i = 0; i < SIGN_PENDING_MAX; i++) {
		if (strcmp(pend[i].host, host) == 0) {
			wait_link(&pend[i], w);	/* asked already: join */
			return 0;
		}
		if (p == NULL && pend[i].host[0] == '\0')
			p = &pend[i];
		else if (pend[i].host[0] != '\0' &&
		    strcmp(pend[i].owner, owner) == 0)
			mine++;
	}
	/* One sandbox asking for many new hosts at once must leave the
	 * signer's queue to the others. */
	if (p == NULL || mine >= SIGN_PER_OWNER)
		return -1;
	snprintf(p->host, sizeof(p->host), "%s", host);
	snprintf(p->owner, sizeof(p->owner), "%s", owner);
	p->deadline = ev_now() + SIGNER_WAIT_S * 1000;
	if (sign_send(p) == -1) {
		p->host[0] = '\0';
		return -1;
	}
	wait_link(p, w);
	if (signer_timer.slot == 0)
		ev_timer_set(&signer_timer, p->deadline, signer_expire, NULL);
	return 0;
}

SSL *
tls_guest_ssl(int fd, const char *host)
{
	X509 *leaf = leaf_cached(host);
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
tls_upstream_ssl(int fd, const char *host, const char *key)
{
	struct moat_addr a;
	struct sess *e;
	char *k = NULL;
	SSL *ssl;

	if ((ssl = SSL_new(up_ctx)) == NULL)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, host) != 1 ||
	    (!policy_literal(host, &a) &&
	    SSL_set_tlsext_host_name(ssl, host) != 1) ||
	    (key != NULL && ((k = strdup(key)) == NULL ||
	    SSL_set_ex_data(ssl, sess_idx, k) != 1))) {
		free(k);
		SSL_free(ssl);
		return NULL;
	}
	/* The certificate and name were verified in the handshake that made
	 * the session, for this same host name (it is in the key). */
	if (k != NULL && (e = sess_find(k)) != NULL &&
	    SSL_set_session(ssl, e->s) == 1)
		e->used = time(NULL);
	SSL_set_connect_state(ssl);
	return ssl;
}

/* Is the kernel carrying this connection's records, either way? */
static void
ktls_count(SSL *ssl, int *send, int *recv)
{
	*send = BIO_get_ktls_send(SSL_get_wbio(ssl)) == 1;
	*recv = BIO_get_ktls_recv(SSL_get_rbio(ssl)) == 1;
}

const char *
tls_ktls_name(SSL *ssl)
{
	int snd, rcv;

	ktls_count(ssl, &snd, &rcv);
	return snd && rcv ? "kernel TLS" : snd ? "kernel TLS sending" :
	    rcv ? "kernel TLS receiving" : "user-space TLS";
}

const char *
tls_kernel_state(void)
{
	return stats.ktls_kernel ? "available" :
	    "not available (fallback: user space)";
}

void
tls_upstream_done(SSL *ssl, int ok)
{
	int snd, rcv;

	if (!ok) {
		sess_forget(ssl);
		return;
	}
	if (SSL_session_reused(ssl))
		stats.resumed++;
	else
		stats.full++;
	ktls_count(ssl, &snd, &rcv);
	stats.ktls_send += snd;
	stats.ktls_recv += rcv;
	stats.conns++;
}

void
tls_guest_done(SSL *ssl)
{
	int snd, rcv;

	ktls_count(ssl, &snd, &rcv);
	stats.ktls_send += snd;
	stats.ktls_recv += rcv;
	stats.conns++;
}

const struct tls_stats *
tls_stats(void)
{
	return &stats;
}
