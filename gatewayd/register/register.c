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
 * and decides nothing.  Many connections are served at once in one event
 * loop (see "connections" below), each with a short deadline for its
 * handshake, a bounded line and a bounded lifetime, and few per address.
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

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
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

#include "ev.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "../harepl/harepl.h"
#include "register.h"
#include "sandbox.h"

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

static SSL_CTX *
reg_ctx(const struct reg_pem *pem)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    regtls_use_pem(ctx, pem->cert, pem->certlen, pem->key,
	    pem->keylen) == -1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
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

/* --- connections ------------------------------------------------------------ */

/*
 * Every connection is a state in the one event loop, so that no peer
 * holds the endpoint for anyone else: a TCP connection that never starts
 * its handshake costs a slot for REG_HANDSHAKE_S, and one address holds
 * at most REG_PER_SOURCE slots.  When all REG_CONNS_MAX are taken, the
 * oldest connection still in its handshake makes room: a real host
 * finishes its handshake in milliseconds.
 *
 *   HANDSHAKE  SSL_accept until done (REG_HANDSHAKE_S from accept), then
 *              the peer's key goes to the parent as a HELLO
 *   ASK        waiting for the parent: its answer goes out, then LINES
 *              (or, for a key it does not know, DRAIN)
 *   LINES      one request line at a time (REG_IO_TIMEOUT_S of silence
 *              ends it), each parsed here and asked of the parent
 *   DRAIN      after refusing a key: read what the host sent, a little,
 *              as closing on unread data would reset the answer away
 * A connection lives REG_CONN_MAX_S at most, all told.
 *
 * The parent answers requests one at a time in order: one is in flight,
 * the others wait in a queue here, so a send never waits on the parent.
 */
enum cstate { C_HANDSHAKE, C_ASK, C_LINES, C_DRAIN };

struct conn {
	struct ev	 ev;
	struct ev_timer	 timer;
	SSL		*ssl;
	int		 fd;
	enum cstate	 state;
	uint8_t		 key[32];
	uint8_t		 src[16];	/* the peer's address */
	uint64_t	 start, deadline;	/* ev clock, ms */
	uint64_t	 idle;		/* LINES, DRAIN: silence until */
	char		 in[REG_LINE_MAX + 2];
	size_t		 nin;
	char		*out;		/* to send, from outoff */
	size_t		 nout, outoff, capout;
	bool		 hello;		/* the key is with the parent */
	bool		 last;		/* close once out is sent */
	int		 drains;
	bool		 queued;	/* waiting for its turn to ask */
	struct conn	*qnext;
	struct conn	*prev, *next;	/* every connection */
};

static struct {
	SSL_CTX		*ctx;
	int		 ipc;
	struct ev	 listen, parent;
	struct conn	*conns;
	size_t		 nconns;
	struct conn	*qhead, *qtail;	/* waiting to ask */
	bool		 asking;	/* a request is with the parent */
	struct conn	*asker;		/* its connection; NULL when gone */
	bool		 ha;		/* the replication endpoint (harepl.h) */
} R;

static void	step(struct conn *);

/* The length of the complete line at the head of in, newline included. */
static size_t
head_line(const struct conn *c)
{
	const char *nl = memchr(c->in, '\n', c->nin);

	return nl ? (size_t)(nl - c->in) + 1 : 0;
}

static void
conn_free(void *arg)
{
	struct conn *c = arg;

	free(c->out);
	free(c);
}

static void
unqueue(struct conn *c)
{
	struct conn **p, *prev = NULL;

	for (p = &R.qhead; *p != NULL; prev = *p, p = &(*p)->qnext)
		if (*p == c) {
			*p = c->qnext;
			if (R.qtail == c)
				R.qtail = prev;
			break;
		}
	c->queued = false;
	c->qnext = NULL;
}

static void
conn_close(struct conn *c)
{
	if (c->queued)
		unqueue(c);
	if (R.asking && R.asker == c)
		R.asker = NULL;	/* the answer still comes, to no one */
	ev_del(&c->ev);
	ev_timer_del(&c->timer);
	if (c->state != C_HANDSHAKE)
		SSL_shutdown(c->ssl);
	SSL_free(c->ssl);
	close(c->fd);
	ERR_clear_error();
	if (c->prev)
		c->prev->next = c->next;
	else
		R.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	R.nconns--;
	ev_defer(conn_free, c);
}

static void
on_timer(void *arg)
{
	conn_close(arg);
}

/* The connection's timer: its end of life, or sooner its silence. */
static void
arm(struct conn *c)
{
	uint64_t when = c->deadline;

	if ((c->state == C_LINES || c->state == C_DRAIN) && c->idle < when)
		when = c->idle;
	ev_timer_set(&c->timer, when, on_timer, c);
}

/* Bytes moved: the silence allowed starts again. */
static void
heard(struct conn *c)
{
	c->idle = ev_now() + (R.ha ? HAREPL_IDLE_S : REG_IO_TIMEOUT_S) * 1000;
	arm(c);
}

static void
consume(struct conn *c, size_t len)
{
	memmove(c->in, c->in + len, c->nin - len);
	c->nin -= len;
}

static void
put_out(struct conn *c, const char *s, size_t n)
{
	if (c->nout + n > c->capout) {
		c->capout = c->nout + n + 256;
		c->out = xreallocarray(c->out, c->capout, 1);
	}
	memcpy(c->out + c->nout, s, n);
	c->nout += n;
}

/* After an SSL call returned r: wait for what OpenSSL wants (true), or
 * the connection is over (false). */
static bool
want(struct conn *c, int r)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		ev_set(&c->ev, EPOLLIN);
		return true;
	case SSL_ERROR_WANT_WRITE:
		ev_set(&c->ev, EPOLLOUT);
		return true;
	default:
		return false;
	}
}

/* Send what is pending: 1 all sent, 0 waiting, -1 over. */
static int
flush(struct conn *c)
{
	int r;

	while (c->outoff < c->nout) {
		r = SSL_write(c->ssl, c->out + c->outoff,
		    (int)(c->nout - c->outoff));
		if (r <= 0)
			return want(c, r) ? 0 : -1;
		c->outoff += (size_t)r;
		heard(c);
	}
	c->outoff = c->nout = 0;
	return 1;
}

static void
enqueue(struct conn *c)
{
	c->state = C_ASK;
	c->queued = true;
	c->qnext = NULL;
	if (R.qtail)
		R.qtail->qnext = c;
	else
		R.qhead = c;
	R.qtail = c;
	ev_set(&c->ev, 0);
}

/* The head of the queue asks the parent, if no request is with it. */
static void
ask_next(void)
{
	static union {
		struct ipc_reg_req m;
		union harepl_msg e;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	char err[160];
	size_t mlen;
	struct conn *c;
	int type;

	if (R.asking || (c = R.qhead) == NULL)
		return;
	if ((R.qhead = c->qnext) == NULL)
		R.qtail = NULL;
	c->queued = false;
	c->qnext = NULL;
	if (c->hello) {		/* the key, right after the handshake */
		memset(&u.m, 0, sizeof(u.m) + 1);
		u.m.verb = REG_HELLO;
		mlen = sizeof(u.m) + 1;
	} else if (R.ha) {	/* only after the parent took the key */
		if (harepl_parse(c->in, head_line(c), &u.e, &type, &mlen, err,
		    sizeof(err)) != 0 ||
		    ipc_send(R.ipc, (enum ipc_type)type, 0, &u.e, mlen) == -1)
			_exit(1);	/* parsed once already: cannot differ */
		goto sent;
	} else if (reg_parse(c->in, head_line(c), &u.m, sizeof(u.raw), &mlen,
	    err, sizeof(err)) != 0)
		_exit(1);	/* parsed once already: cannot differ */
	memcpy(u.m.key, c->key, sizeof(u.m.key));
	if (ipc_send(R.ipc, IPC_REG_REQ, 0, &u.m, mlen) == -1)
		_exit(1);
sent:
	R.asking = true;
	R.asker = c;
}

/* The parent's answer to the request in flight. */
static void
on_parent(struct ev *e, uint32_t events)
{
	static union {
		struct ipc_reg_reply r;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h;
	char err[256];
	ssize_t n;
	struct conn *c;
	bool hello;

	(void)e;
	(void)events;
	n = ipc_recv(R.ipc, &h, u.raw, sizeof(u.raw), err, sizeof(err));
	if (n <= 0 || h.type != IPC_REG_REPLY || !R.asking)
		_exit(n == 0 ? 0 : 1);
	n -= (ssize_t)sizeof(u.r);
	c = R.asker;
	R.asking = false;
	R.asker = NULL;
	if (c != NULL) {
		hello = c->hello;
		c->hello = false;
		if (u.r.status == 0 && !hello) {
			put_out(c, u.r.text, (size_t)n);
			put_out(c, "ok\n", 3);
		} else if (u.r.status != 0) {
			put_out(c, "error ", 6);
			put_out(c, u.r.text, (size_t)n);
			put_out(c, "\n", 1);
		}
		if (!hello)			/* the line is answered */
			consume(c, head_line(c));
		/* The other box's link, its key taken, lives as long as it
		 * pings (harepl.h); a host's REG_CONN_MAX_S. */
		if (hello && u.r.status == 0 && R.ha)
			c->deadline = UINT64_MAX;
		c->state = hello && u.r.status != 0 ? C_DRAIN : C_LINES;
		heard(c);
		step(c);
	}
	ask_next();
}

/* A complete line at the head of in: answer it here (a malformed line,
 * quit) or queue it for the parent. */
static void
line(struct conn *c, size_t len)
{
	static union {
		struct ipc_reg_req m;
		union harepl_msg e;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	char err[160], out[200];
	size_t mlen = 0;
	int rc, type;

	if (R.ha)
		rc = len <= 1 ?
		    REG_PARSE_EMPTY : harepl_parse(c->in, len, &u.e, &type,
		    &mlen, err, sizeof(err));
	else
		rc = reg_parse(c->in, len, &u.m, sizeof(u.raw), &mlen, err,
		    sizeof(err));
	if (rc == 0) {
		enqueue(c);
		ask_next();
		return;
	}
	consume(c, len);
	if (R.ha && rc == HAREPL_PING)	/* the link's heartbeat */
		put_out(c, "ok\n", 3);
	else if (rc == REG_PARSE_QUIT)
		c->last = true;
	else if (rc == -1) {
		snprintf(out, sizeof(out), "error %s\n", err);
		put_out(c, out, strlen(out));
	}
}

static bool
handshake(struct conn *c)
{
	int r = SSL_accept(c->ssl);

	if (r != 1)
		return want(c, r);
	if (peer_key(c->ssl, c->key) == -1)
		return false;
	c->deadline = c->start + REG_CONN_MAX_S * 1000;
	c->hello = true;
	enqueue(c);
	arm(c);
	ask_next();
	return true;
}

/* LINES: answer what is complete, else read more.  false: over. */
static bool
lines(struct conn *c)
{
	size_t len;
	int r;

	for (;;) {
		if ((r = flush(c)) != 1)
			return r == 0;
		if (c->last)
			return false;
		if ((len = head_line(c)) > 0) {
			line(c, len);
			if (c->state == C_ASK)
				return true;
			continue;
		}
		if (c->nin >= REG_LINE_MAX + 1) {
			put_out(c, "error request too long\n", 23);
			c->last = true;
			continue;
		}
		r = SSL_read(c->ssl, c->in + c->nin, (int)(sizeof(c->in) - 1 -
		    c->nin));
		if (r <= 0)
			return want(c, r);
		c->nin += (size_t)r;
		heard(c);
	}
}

static bool
drain(struct conn *c)
{
	char buf[256];
	int r;

	if ((r = flush(c)) != 1)
		return r == 0;
	while (c->drains < 8) {
		if ((r = SSL_read(c->ssl, buf, sizeof(buf))) <= 0)
			return want(c, r);
		c->drains++;
	}
	return false;
}

/* Move the connection on as far as it goes without waiting. */
static void
step(struct conn *c)
{
	bool alive = true;

	switch (c->state) {
	case C_HANDSHAKE:
		alive = handshake(c);
		break;
	case C_ASK:
		break;
	case C_LINES:
		alive = lines(c);
		break;
	case C_DRAIN:
		alive = drain(c);
		break;
	}
	if (!alive)
		conn_close(c);
}

static void
on_conn(struct ev *e, uint32_t events)
{
	struct conn *c = e->arg;

	/* Gone while its request is with the parent: no one to answer, and
	 * a hang-up would be reported again and again until then. */
	if (c->state == C_ASK && (events & (EPOLLERR | EPOLLHUP)))
		conn_close(c);
	else
		step(c);
}

static void
peer_addr(const struct sockaddr_storage *ss, uint8_t a[16])
{
	memset(a, 0, 16);
	if (ss->ss_family == AF_INET)
		memcpy(a, &((const struct sockaddr_in *)(const void *)ss)->
		    sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(a, &((const struct sockaddr_in6 *)(const void *)ss)->
		    sin6_addr, 16);
}

/* Room for a connection from src: false to turn it away. */
static bool
admit(const uint8_t src[16])
{
	struct conn *c, *oldest = NULL;
	size_t same = 0;

	for (c = R.conns; c != NULL; c = c->next) {
		if (memcmp(c->src, src, 16) == 0)
			same++;
		if (c->state == C_HANDSHAKE &&
		    (oldest == NULL || c->start < oldest->start))
			oldest = c;
	}
	if (same >= REG_PER_SOURCE)
		return false;
	if (R.nconns < REG_CONNS_MAX)
		return true;
	if (oldest == NULL)
		return false;
	conn_close(oldest);
	return true;
}

static void
on_accept(struct ev *e, uint32_t events)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct conn *c;
	uint8_t src[16];
	int fd;

	(void)events;
	for (;;) {
		sl = sizeof(ss);
		fd = accept4(e->fd, (struct sockaddr *)&ss, &sl,
		    SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EMFILE ||
			    errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				return;
			_exit(1);
		}
		peer_addr(&ss, src);
		if (!admit(src)) {
			close(fd);
			continue;
		}
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		memcpy(c->src, src, 16);
		c->start = ev_now_update();
		c->deadline = c->start + REG_HANDSHAKE_S * 1000;
		if ((c->ssl = SSL_new(R.ctx)) == NULL ||
		    SSL_set_fd(c->ssl, fd) != 1 ||
		    ev_add(&c->ev, fd, EPOLLIN, on_conn, c) == -1) {
			SSL_free(c->ssl);
			close(fd);
			free(c);
			ERR_clear_error();
			continue;
		}
		if ((c->next = R.conns) != NULL)
			c->next->prev = c;
		R.conns = c;
		R.nconns++;
		arm(c);
		step(c);
	}
}

/* --- the process ----------------------------------------------------------- */

/* Nothing is logged once narrowed: the filter allows no socket for
 * syslog.  What goes wrong ends the process; the parent logs it and
 * starts another. */
void
regproc_main(int listen, int ipc, pid_t parent, struct reg_pem *pem)
{
	unsigned char seed[16];
	int fl;

	OPENSSL_init_ssl(0, NULL);
	R.ctx = reg_ctx(pem);
	reg_pem_wipe(pem);
	if (R.ctx == NULL) {
		log_warnx("registration: cannot use the box's certificate and "
		    "key");
		_exit(1);
	}
	/* A host gone mid-answer is an error from write(), not a signal. */
	signal(SIGPIPE, SIG_IGN);
	R.ipc = ipc;
	if ((fl = fcntl(listen, F_GETFL)) == -1 ||
	    fcntl(listen, F_SETFL, fl | O_NONBLOCK) == -1 || ev_init() == -1 ||
	    ev_add(&R.listen, listen, EPOLLIN, on_accept, NULL) == -1 ||
	    ev_add(&R.parent, ipc, EPOLLIN, on_parent, NULL) == -1)
		_exit(1);
	/* Seeded while getrandom's fallbacks are still allowed. */
	if (RAND_bytes(seed, sizeof(seed)) != 1 || privdrop(REG_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_REGISTER) == -1)
		_exit(1);
	for (;;)
		if (ev_run_once(-1) == -1)
			_exit(1);
}

/* The same process, serving the other box of a pair: its lines are set
 * elements (harepl.h), each sent to the parent as a set addition. */
void
harepl_recv_main(int listen, int ipc, pid_t parent, struct reg_pem *pem)
{
	R.ha = true;
	regproc_main(listen, ipc, parent, pem);
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
