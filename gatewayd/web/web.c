/*
 * web.c -- moat-web: the web console's process (see web.h).
 *
 * HTTP and TLS are libh2o's (its own event loop, OpenSSL linked in).
 * This file routes: the pages from memory, /login?t= to the parent,
 * /api/... to the parent as one control request of the session's user,
 * /api/events as a stream (server-sent events) of the session's refused
 * names, asked for twice a second, and with ?audit=1 of the lines the
 * audit log gains (as the session's user may read it: the parent
 * decides), asked for twice a second too.  It checks what a browser can be
 * made to forge (the Origin of a change, its CSRF header) and bounds
 * what one address may ask; it decides nothing about rights.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <netdb.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <h2o.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "ipc.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"
#include "web.h"

#define PENDING_MAX	64
#define STREAMS_MAX	16
#define RATES_MAX	64
#define TICK_MS		50
#define STREAM_EVERY_MS	500
#define STREAM_QUEUE_MAX	(4 << 20)	/* bytes a slow page may owe */

enum pkind { P_FREE = 0, P_LOGIN, P_API, P_STREAM, P_AUDIT };

struct pending;
struct req_link {
	struct pending	*p;
};

struct pending {
	uint32_t	 id;
	enum pkind	 kind;
	h2o_req_t	*req;		/* NULL: the browser left */
	struct req_link	*link;
	struct stream	*st;
	char		*buf;
	size_t		 len;
};

struct stream {
	h2o_generator_t	 gen;		/* first: h2o hands it back */
	h2o_req_t	*req;		/* NULL: free */
	char		 token[65];
	bool		 ready;		/* h2o may take more */
	bool		 asking;	/* a request is with the parent */
	uint64_t	 next_ms;
	char		*last;		/* what the page has */
	char		*out;		/* what h2o is sending */
	char		*queued;	/* waiting for ready */
	bool		 audit;		/* the page follows the audit log */
	bool		 asking_audit;
	uint64_t	 audit_next_ms;
	char		*audit_last;	/* the last log text read */
};

struct rate {
	char		 addr[IPC_WEB_FROM_LEN];
	double		 tokens;
	uint64_t	 at_ms;
};

static struct {
	h2o_globalconf_t	 config;
	h2o_context_t		 ctx;
	h2o_accept_ctx_t	 accept;
	int			 ipc;
	uint32_t		 last_id;
	struct web_boot		*boot;
	struct pending		 pend[PENDING_MAX];
	struct stream		 streams[STREAMS_MAX];
	struct rate		 rates[RATES_MAX];
} S;

static const char CSP[] = "default-src 'none'; script-src 'self'; "
    "style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* h2o keeps the pointer: the value is copied into the request's pool. */
static void
hdr(h2o_req_t *req, const char *name, const char *value)
{
	h2o_iovec_t v = h2o_strdup(&req->pool, value, strlen(value));

	h2o_add_header_by_str(&req->pool, &req->res.headers, name,
	    strlen(name), 1, NULL, v.base, v.len);
}

/* Every answer: no framing, no sniffing, no referrer, strict CSP. */
static void
security_headers(h2o_req_t *req)
{
	hdr(req, "content-security-policy", CSP);
	hdr(req, "x-frame-options", "DENY");
	hdr(req, "x-content-type-options", "nosniff");
	hdr(req, "referrer-policy", "no-referrer");
	hdr(req, "strict-transport-security", "max-age=31536000");
	hdr(req, "cross-origin-opener-policy", "same-origin");
	hdr(req, "cross-origin-resource-policy", "same-origin");
}

static int
respond(h2o_req_t *req, int status, const char *reason, const char *type,
    const char *body, size_t len)
{
	req->res.status = status;
	req->res.reason = reason;
	security_headers(req);
	hdr(req, "content-type", type);
	hdr(req, "cache-control", "no-store");
	h2o_send_inline(req, body, len);
	return 0;
}

static int
respond_text(h2o_req_t *req, int status, const char *reason, const char *msg)
{
	return respond(req, status, reason, "text/plain; charset=utf-8", msg,
	    strlen(msg));
}

static void
peer(h2o_req_t *req, char *out, size_t room)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	snprintf(out, room, "?");
	sl = req->conn->callbacks->get_peername(req->conn,
	    (struct sockaddr *)&ss);
	if (sl > 0 && room >= NI_MAXHOST)
		h2o_socket_getnumerichost((struct sockaddr *)&ss, sl, out);
}

/* A token bucket per source address; the oldest entry makes room. */
static bool
rate_ok(const char *addr)
{
	uint64_t now = now_ms();
	struct rate *r = NULL, *old = &S.rates[0];
	size_t i;

	for (i = 0; i < RATES_MAX && r == NULL; i++) {
		if (strcmp(S.rates[i].addr, addr) == 0)
			r = &S.rates[i];
		else if (S.rates[i].at_ms < old->at_ms)
			old = &S.rates[i];
	}
	if (r == NULL) {
		r = old;
		snprintf(r->addr, sizeof(r->addr), "%.63s", addr);
		r->tokens = WEB_BURST;
		r->at_ms = now;
	}
	r->tokens += (double)(now - r->at_ms) * WEB_RATE / 1000.0;
	if (r->tokens > WEB_BURST)
		r->tokens = WEB_BURST;
	r->at_ms = now;
	if (r->tokens < 1)
		return false;
	r->tokens -= 1;
	return true;
}

/* --- requests to the parent -------------------------------------------- */

static void
on_req_dispose(void *p)
{
	struct req_link *l = p;

	if (l->p != NULL)
		l->p->req = NULL;
}

static struct pending *
pending_new(enum pkind kind, h2o_req_t *req)
{
	struct pending *p = NULL;
	size_t i;

	for (i = 0; i < PENDING_MAX && p == NULL; i++)
		if (S.pend[i].kind == P_FREE)
			p = &S.pend[i];
	if (p == NULL)
		return NULL;
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	if (++S.last_id == 0)
		S.last_id = 1;
	p->id = S.last_id;
	if (req != NULL) {
		p->req = req;
		p->link = h2o_mem_alloc_shared(&req->pool, sizeof(*p->link),
		    on_req_dispose);
		p->link->p = p;
	}
	return p;
}

static void
pending_free(struct pending *p)
{
	if (p->req != NULL && p->link != NULL)
		p->link->p = NULL;
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

/* Send a request of kind for token: words (argc of them) as a control
 * request, none for a login or logout. */
static int
ask(struct pending *p, int kind, const char *token, const char *csrf,
    const char *from, int verb, bool json, const char *const *words,
    int argc)
{
	static union {
		struct ipc_web_req m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	size_t len = IPC_WEB_REQ_HEAD, n;
	char *w;
	int i;

	memset(&u.m, 0, sizeof(u.m));
	u.m.kind = (uint8_t)kind;
	snprintf(u.m.token, sizeof(u.m.token), "%s", token);
	snprintf(u.m.csrf, sizeof(u.m.csrf), "%s", csrf ? csrf : "");
	snprintf(u.m.from, sizeof(u.m.from), "%s", from);
	if (kind == IPC_WEB_CTL) {
		u.m.req.verb = (uint8_t)verb;
		u.m.req.json = json;
		u.m.req.argc = (uint16_t)argc;
		len = sizeof(u.m);
		w = u.m.req.data;
		for (i = 0; i < argc; i++) {
			n = strlen(words[i]) + 1;
			if (len + n > sizeof(u.raw))
				return -1;
			memcpy(w, words[i], n);
			w += n;
			len += n;
		}
	}
	if (ipc_send(S.ipc, IPC_WEB_REQ, p->id, &u.m, len) == -1) {
		if (errno == EPIPE || errno == ECONNRESET)
			_exit(0);
		return -1;
	}
	explicit_bzero(u.m.token, sizeof(u.m.token));
	return 0;
}

/* --- the session's answers --------------------------------------------- */

/* A control reply is its body, then "ok" or "error: ..." as its last
 * line: the body stays, "ok" goes; an error is left alone.  True if ok. */
static bool
reply_ok(struct pending *p)
{
	char *last;

	if (p->buf == NULL)
		return false;
	while (p->len > 0 && p->buf[p->len - 1] == '\n')
		p->buf[--p->len] = '\0';
	last = strrchr(p->buf, '\n');
	last = last ? last + 1 : p->buf;
	if (strncmp(last, "error:", 6) == 0) {
		memmove(p->buf, last, strlen(last) + 1);
		p->len = strlen(p->buf);
		return false;
	}
	if (strcmp(last, "ok") == 0) {
		*last = '\0';
		p->len = (size_t)(last - p->buf);
		if (p->len == 0) {
			snprintf(p->buf, 3, "ok");
			p->len = 2;
		}
	}
	return true;
}

static void
login_done(struct pending *p)
{
	h2o_req_t *req = p->req;
	char cookie[256], tok[65];
	int secs;

	if (req == NULL)
		return;
	if (p->len < 3 || strncmp(p->buf, "ok ", 3) != 0 ||
	    sscanf(p->buf + 3, "%64s %d", tok, &secs) != 2) {
		respond_text(req, 403, "Forbidden", p->buf ? p->buf :
		    "error: refused\n");
		return;
	}
	snprintf(cookie, sizeof(cookie), "moat_session=%s; Path=/; Max-Age=%d; "
	    "Secure; HttpOnly; SameSite=Strict", tok, secs);
	explicit_bzero(tok, sizeof(tok));
	req->res.status = 303;
	req->res.reason = "See Other";
	security_headers(req);
	hdr(req, "set-cookie", cookie);
	hdr(req, "location", "/");
	hdr(req, "cache-control", "no-store");
	explicit_bzero(cookie, sizeof(cookie));
	h2o_send_inline(req, "", 0);
}

static void
api_done(struct pending *p)
{
	h2o_req_t *req = p->req;
	const char *b = p->buf ? p->buf : "";

	if (req == NULL)
		return;
	if (reply_ok(p))
		respond(req, 200, "OK", p->buf[0] == '{' || p->buf[0] == '[' ?
		    "application/json" : "text/plain; charset=utf-8", p->buf,
		    p->len);
	else if (strncmp(b, "error: not logged in", 20) == 0)
		respond(req, 401, "Unauthorized", "text/plain; charset=utf-8",
		    b, p->len);
	else
		respond(req, 403, "Forbidden", "text/plain; charset=utf-8", b,
		    p->len);
}

static void stream_push(struct stream *, char *);

/* An event of type: text's lines, one data line each ('\r' made a
 * space); one empty data line if there are none, so that it is seen. */
static char *
sse_event(const char *type, const char *text, size_t n)
{
	size_t i, lines = 1, len;
	char *ev, *o;

	for (i = 0; i < n; i++)
		if (text[i] == '\n')
			lines++;
	len = strlen("event: \n") + strlen(type) + n + lines * 7 + 2;
	if ((ev = malloc(len)) == NULL)
		return NULL;
	o = ev + sprintf(ev, "event: %s\ndata: ", type);
	for (i = 0; i < n; i++) {
		if (text[i] == '\n') {
			memcpy(o, "\ndata: ", 7);
			o += 7;
		} else
			*o++ = text[i] == '\r' ? ' ' : text[i];
	}
	memcpy(o, "\n\n", 3);
	return ev;
}

/* A stream's latest refused list: sent if it changed. */
static void
stream_done(struct pending *p)
{
	struct stream *st = p->st;
	char *ev;
	size_t i, n;

	if (st == NULL || st->req == NULL)
		return;
	st->asking = false;
	if (!reply_ok(p) || (p->buf[0] != '[' && p->buf[0] != '{'))
		return;
	if (st->last != NULL && strcmp(st->last, p->buf) == 0)
		return;
	free(st->last);
	st->last = strdup(p->buf);
	/* One event; the document's newlines are not the event's. */
	n = strlen(p->buf);
	ev = malloc(n + 32);
	if (ev == NULL)
		return;
	memcpy(ev, "event: refused\ndata: ", 21);
	for (i = 0; i < n; i++)
		ev[21 + i] = p->buf[i] == '\n' || p->buf[i] == '\r' ? ' ' :
		    p->buf[i];
	memcpy(ev + 21 + n, "\n\n", 3);
	stream_push(st, ev);
}

/* The audit log's last lines as the parent gave them: what the page has
 * not seen goes to it, as an "audit" event of the new lines, or, when
 * the text is not the old one grown (the log was rotated, or the page
 * has nothing yet), as an "audit-all" event of every line.  A session
 * that may not read the log gets the parent's refusal once, as
 * "audit-error", and the stream stops asking. */
static void
stream_audit_done(struct pending *p)
{
	struct stream *st = p->st;
	const char *text, *add;
	bool all;
	char *ev;

	if (st == NULL || st->req == NULL)
		return;
	st->asking_audit = false;
	if (!reply_ok(p)) {
		if (p->buf == NULL || strncmp(p->buf, "error:", 6) != 0)
			return;		/* busy: next time */
		st->audit = false;
		if ((ev = sse_event("audit-error", p->buf, p->len)) != NULL)
			stream_push(st, ev);
		return;
	}
	/* An empty log is answered "ok" alone. */
	text = strcmp(p->buf, "ok") == 0 ? "" : p->buf;
	add = web_log_added(st->audit_last, text, &all);
	if (!all && *add == '\0')
		return;
	ev = sse_event(all ? "audit-all" : "audit", add, strlen(add));
	free(st->audit_last);
	st->audit_last = strdup(text);
	if (ev == NULL || st->audit_last == NULL) {
		free(ev);
		free(st->audit_last);
		st->audit_last = NULL;		/* all of it, next time */
		return;
	}
	stream_push(st, ev);
}

static void
ipc_readable(void)
{
	static union {
		struct ipc_ctl_reply m;
		char raw[IPC_MAX_PAYLOAD + 1];
	} u;
	struct ipc_hdr h;
	struct pending *p;
	char err[128];
	ssize_t n;
	size_t i, tl;

	for (;;) {
		n = ipc_recv(S.ipc, &h, &u, IPC_MAX_PAYLOAD, err, sizeof(err));
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n == 0 && h.type == 0)
			_exit(0);		/* the parent is gone */
		if (n < 0 || h.type != IPC_WEB_REPLY) {
			log_warnx("web: from the parent: %s", n < 0 ? err :
			    "an unexpected message");
			_exit(1);
		}
		for (p = NULL, i = 0; i < PENDING_MAX && p == NULL; i++)
			if (S.pend[i].kind != P_FREE && S.pend[i].id == h.id)
				p = &S.pend[i];
		if (p == NULL)
			continue;
		tl = (size_t)n - sizeof(u.m);
		if ((p->buf = realloc(p->buf, p->len + tl + 1)) == NULL)
			_exit(1);
		memcpy(p->buf + p->len, u.m.text, tl);
		p->len += tl;
		p->buf[p->len] = '\0';
		if (u.m.end == IPC_CTL_MORE)
			continue;
		if (p->kind == P_LOGIN)
			login_done(p);
		else if (p->kind == P_API)
			api_done(p);
		else if (p->kind == P_AUDIT)
			stream_audit_done(p);
		else
			stream_done(p);
		if (p->buf != NULL)
			explicit_bzero(p->buf, p->len);
		pending_free(p);
	}
}

/* --- server-sent events ------------------------------------------------ */

static void
stream_send(struct stream *st, char *ev)
{
	h2o_iovec_t v = h2o_iovec_init(ev, strlen(ev));

	free(st->out);
	st->out = ev;
	st->ready = false;
	h2o_send(st->req, &v, 1, H2O_SEND_STATE_IN_PROGRESS);
}

/* Events wait in order while h2o sends; a page that owes too much
 * loses what waits and is sent everything afresh. */
static void
stream_push(struct stream *st, char *ev)
{
	size_t ql, el;
	char *q;

	if (st->ready) {
		stream_send(st, ev);
		return;
	}
	if (st->queued == NULL) {
		st->queued = ev;
		return;
	}
	ql = strlen(st->queued);
	el = strlen(ev);
	if (ql + el > STREAM_QUEUE_MAX ||
	    (q = realloc(st->queued, ql + el + 1)) == NULL) {
		free(st->queued);
		st->queued = NULL;
		free(st->last);
		st->last = NULL;
		free(st->audit_last);
		st->audit_last = NULL;
		free(ev);
		return;
	}
	memcpy(q + ql, ev, el + 1);
	st->queued = q;
	free(ev);
}

static void
stream_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	struct stream *st = (struct stream *)g;
	char *q = st->queued;

	st->ready = true;
	if (q != NULL) {
		st->queued = NULL;
		stream_send(st, q);
	}
}

static void
stream_stop(h2o_generator_t *g, h2o_req_t *req)
{
	struct stream *st = (struct stream *)g;
	size_t i;

	for (i = 0; i < PENDING_MAX; i++)
		if (S.pend[i].st == st)
			S.pend[i].st = NULL;
	free(st->last);
	free(st->out);
	free(st->queued);
	free(st->audit_last);
	explicit_bzero(st, sizeof(*st));
}

static void
streams_tick(void)
{
	static const char *const words[] = { "refused" };
	static const char *const log_words[] = { "log" };
	uint64_t now = now_ms();
	struct pending *p;
	size_t i;

	for (i = 0; i < STREAMS_MAX; i++) {
		struct stream *st = &S.streams[i];

		if (st->req == NULL || !st->audit || st->asking_audit ||
		    now < st->audit_next_ms)
			continue;
		if ((p = pending_new(P_AUDIT, NULL)) == NULL)
			return;
		p->st = st;
		st->audit_next_ms = now + STREAM_EVERY_MS;
		if (ask(p, IPC_WEB_CTL, st->token, NULL, "stream",
		    CTL_LOG, false, log_words, 1) == -1) {
			pending_free(p);
			continue;
		}
		st->asking_audit = true;
	}
	for (i = 0; i < STREAMS_MAX; i++) {
		struct stream *st = &S.streams[i];

		if (st->req == NULL || st->asking || now < st->next_ms)
			continue;
		if ((p = pending_new(P_STREAM, NULL)) == NULL)
			return;
		p->st = st;
		st->next_ms = now + STREAM_EVERY_MS;
		if (ask(p, IPC_WEB_CTL, st->token, NULL, "stream",
		    CTL_REFUSED, true, words, 1) == -1) {
			pending_free(p);
			continue;
		}
		st->asking = true;
	}
}

static int
stream_open(h2o_req_t *req, const char *token, bool audit)
{
	struct stream *st = NULL;
	size_t i;
	char *hello;

	for (i = 0; i < STREAMS_MAX && st == NULL; i++)
		if (S.streams[i].req == NULL)
			st = &S.streams[i];
	if (st == NULL)
		return respond_text(req, 503, "Busy", "too many live pages\n");
	memset(st, 0, sizeof(*st));
	st->gen.proceed = stream_proceed;
	st->gen.stop = stream_stop;
	st->req = req;
	st->audit = audit;
	snprintf(st->token, sizeof(st->token), "%s", token);
	req->res.status = 200;
	req->res.reason = "OK";
	security_headers(req);
	hdr(req, "content-type", "text/event-stream");
	hdr(req, "cache-control", "no-store");
	h2o_start_response(req, &st->gen);
	st->ready = true;
	if ((hello = strdup(": moat\n\n")) != NULL)
		stream_send(st, hello);
	return 0;
}

/* --- routing ------------------------------------------------------------ */

static bool
is(h2o_iovec_t v, const char *s)
{
	return v.len == strlen(s) && memcmp(v.base, s, v.len) == 0;
}

static int
session_of(h2o_req_t *req, char tok[65])
{
	ssize_t c = -1;

	while ((c = h2o_find_header(&req->headers, H2O_TOKEN_COOKIE, c)) != -1)
		if (web_cookie_session(req->headers.entries[c].value.base,
		    req->headers.entries[c].value.len, tok) == 0)
			return 0;
	return -1;
}

static bool
header_is(h2o_req_t *req, const char *name, const char *want, size_t wlen)
{
	ssize_t c = h2o_find_header_by_str(&req->headers, name, strlen(name),
	    -1);

	return c != -1 && req->headers.entries[c].value.len == wlen &&
	    memcmp(req->headers.entries[c].value.base, want, wlen) == 0;
}

/* A change must come from a page of this console: its Origin is ours
 * and, where the browser says, the fetch is same-origin. */
static bool
same_origin(h2o_req_t *req)
{
	char want[300];
	int n;
	ssize_t c;

	n = snprintf(want, sizeof(want), "https://%.*s",
	    (int)req->authority.len, req->authority.base);
	if (n <= 0 || (size_t)n >= sizeof(want) ||
	    !header_is(req, "origin", want, (size_t)n))
		return false;
	c = h2o_find_header_by_str(&req->headers, "sec-fetch-site", 14, -1);
	return c == -1 || header_is(req, "sec-fetch-site", "same-origin", 11);
}

static void
header_copy(h2o_req_t *req, const char *name, char *out, size_t room)
{
	ssize_t c = h2o_find_header_by_str(&req->headers, name, strlen(name),
	    -1);
	size_t n;

	out[0] = '\0';
	if (c == -1)
		return;
	n = req->headers.entries[c].value.len;
	if (n >= room)
		return;
	memcpy(out, req->headers.entries[c].value.base, n);
	out[n] = '\0';
}

/* A word from a form: present, printable, and not an option. */
static int
field(h2o_req_t *req, const char *name, char *out, size_t room)
{
	if (web_form_get(req->entity.base ? req->entity.base : "",
	    req->entity.len, name, out, room) == -1 || out[0] == '\0' ||
	    out[0] == '-' || strchr(out, ' ') != NULL)
		return -1;
	return 0;
}

static const struct {
	const char	*path;
	int		 verb;
	const char	*arg;
} api_gets[] = {
	{ "/api/whoami", CTL_WEB_SESSIONS, "self" },
	{ "/api/status", CTL_STATUS, NULL },
	{ "/api/sandboxes", CTL_SANDBOXES, NULL },
	{ "/api/refused", CTL_REFUSED, NULL },
	{ "/api/grants", CTL_GRANTS, NULL },
	{ "/api/log", CTL_LOG, NULL },
	{ "/api/sessions", CTL_WEB_SESSIONS, NULL },
};

/* POST /api/allow (sandbox, name, for: 1h|1d|ever, ports), /api/unallow
 * (sandbox, name), /api/revoke (id), /api/logout. */
static int
api_post(h2o_req_t *req, h2o_iovec_t path, const char *tok, const char *from)
{
	char sb[40], name[256], dur[16], ports[128], csrf[80];
	const char *w[8];
	struct pending *p;
	int argc = 0, verb;

	if (!same_origin(req))
		return respond_text(req, 403, "Forbidden", "error: a change must "
		    "come from this console's own page\n");
	header_copy(req, "x-csrf-token", csrf, sizeof(csrf));
	if (is(path, "/api/logout")) {
		if ((p = pending_new(P_API, req)) == NULL ||
		    ask(p, IPC_WEB_LOGOUT, tok, csrf, from, 0, false, NULL, 0)
		    == -1)
			return respond_text(req, 503, "Busy", "busy\n");
		return 0;
	}
	if (is(path, "/api/allow") || is(path, "/api/unallow")) {
		verb = is(path, "/api/allow") ? CTL_ALLOW : CTL_UNALLOW;
		if (field(req, "sandbox", sb, sizeof(sb)) == -1 ||
		    field(req, "name", name, sizeof(name)) == -1)
			return respond_text(req, 400, "Bad Request", "error: "
			    "expected sandbox and name\n");
		w[argc++] = verb == CTL_ALLOW ? "allow" : "unallow";
		w[argc++] = sb;
		w[argc++] = name;
		if (verb == CTL_ALLOW && field(req, "for", dur, sizeof(dur)) == 0 &&
		    strcmp(dur, "ever") != 0) {
			w[argc++] = "--for";
			w[argc++] = dur;
		}
		if (verb == CTL_ALLOW && field(req, "ports", ports,
		    sizeof(ports)) == 0) {
			w[argc++] = "--ports";
			w[argc++] = ports;
		}
	} else if (is(path, "/api/revoke")) {
		verb = CTL_WEB_SESSIONS;
		if (field(req, "id", sb, sizeof(sb)) == -1)
			return respond_text(req, 400, "Bad Request", "error: "
			    "expected id\n");
		w[argc++] = "web-sessions";
		w[argc++] = "revoke";
		w[argc++] = sb;
	} else
		return respond_text(req, 404, "Not Found", "no such action\n");
	if ((p = pending_new(P_API, req)) == NULL ||
	    ask(p, IPC_WEB_CTL, tok, csrf, from, verb, false, w, argc) == -1)
		return respond_text(req, 503, "Busy", "busy\n");
	return 0;
}

static int
api(h2o_req_t *req, h2o_iovec_t path, const char *from)
{
	char tok[65], sb[40], flag[4];
	const char *w[3];
	struct pending *p;
	size_t i;
	int argc;

	if (session_of(req, tok) == -1)
		return respond_text(req, 401, "Unauthorized", "error: not logged "
		    "in: run gatewayd ctl web-login\n");
	if (is(req->method, "POST"))
		return api_post(req, path, tok, from);
	if (!is(req->method, "GET"))
		return respond_text(req, 405, "Method Not Allowed", "GET or "
		    "POST\n");
	if (is(path, "/api/events"))
		return stream_open(req, tok, req->query_at != SIZE_MAX &&
		    web_form_get(req->path.base + req->query_at + 1,
		    req->path.len - req->query_at - 1, "audit", flag,
		    sizeof(flag)) == 0 && strcmp(flag, "1") == 0);
	for (i = 0; i < sizeof(api_gets) / sizeof(api_gets[0]); i++) {
		if (!is(path, api_gets[i].path))
			continue;
		argc = 0;
		w[argc++] = ipc_ctl_verb_name(api_gets[i].verb);
		if (api_gets[i].arg != NULL)
			w[argc++] = api_gets[i].arg;
		else if (api_gets[i].verb != CTL_WEB_SESSIONS &&
		    req->query_at != SIZE_MAX && web_form_get(
		    req->path.base + req->query_at + 1,
		    req->path.len - req->query_at - 1, "sandbox", sb,
		    sizeof(sb)) == 0 && sb[0] != '-' && sb[0] != '\0')
			w[argc++] = sb;
		if ((p = pending_new(P_API, req)) == NULL ||
		    ask(p, IPC_WEB_CTL, tok, NULL, from, api_gets[i].verb,
		    api_gets[i].arg == NULL, w, argc) == -1)
			return respond_text(req, 503, "Busy", "busy\n");
		return 0;
	}
	return respond_text(req, 404, "Not Found", "no such page\n");
}

static int
login(h2o_req_t *req, const char *from)
{
	char tok[80];
	struct pending *p;

	if (req->query_at == SIZE_MAX || web_form_get(req->path.base +
	    req->query_at + 1, req->path.len - req->query_at - 1, "t", tok,
	    sizeof(tok)) == -1 || strlen(tok) != 64)
		return respond_text(req, 403, "Forbidden", "error: this login "
		    "link is malformed\n");
	if ((p = pending_new(P_LOGIN, req)) == NULL ||
	    ask(p, IPC_WEB_LOGIN, tok, NULL, from, 0, false, NULL, 0) == -1)
		return respond_text(req, 503, "Busy", "busy\n");
	explicit_bzero(tok, sizeof(tok));
	return 0;
}

static int
on_req(h2o_handler_t *self, h2o_req_t *req)
{
	h2o_iovec_t path = req->path_normalized;
	char from[NI_MAXHOST];
	const char *qm;
	size_t i;

	peer(req, from, sizeof(from));
	if (!rate_ok(from))
		return respond_text(req, 429, "Too Many Requests", "slow down\n");
	if ((qm = memchr(path.base, '?', path.len)) != NULL)
		path.len = (size_t)(qm - path.base);
	if (path.len >= 5 && memcmp(path.base, "/api/", 5) == 0)
		return api(req, path, from);
	if (!is(req->method, "GET") && !is(req->method, "HEAD"))
		return respond_text(req, 405, "Method Not Allowed", "GET\n");
	if (is(path, "/login"))
		return login(req, from);
	if (is(path, "/"))
		path = h2o_iovec_init(H2O_STRLIT("/index.html"));
	for (i = 0; i < S.boot->nfiles; i++)
		if (is(path, S.boot->files[i].path)) {
			req->res.status = 200;
			req->res.reason = "OK";
			security_headers(req);
			hdr(req, "content-type", S.boot->files[i].type);
			hdr(req, "cache-control", "no-cache");
			h2o_send_inline(req, S.boot->files[i].data,
			    S.boot->files[i].len);
			return 0;
		}
	return respond_text(req, 404, "Not Found", "no such page\n");
}

/* --- start ------------------------------------------------------------- */

static void
on_accept(h2o_socket_t *listener, const char *err)
{
	h2o_socket_t *sock;

	if (err != NULL)
		return;
	if ((sock = h2o_evloop_socket_accept(listener)) == NULL)
		return;
	h2o_accept(&S.accept, sock);
}

static SSL_CTX *
tls_new(struct web_boot *b)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	BIO *bio;
	X509 *x;
	EVP_PKEY *k;

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
	bio = BIO_new_mem_buf(b->cert, (int)b->certlen);
	if ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_certificate(ctx, x) != 1)
		goto bad;
	X509_free(x);
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
		SSL_CTX_add_extra_chain_cert(ctx, x);
	ERR_clear_error();
	BIO_free(bio);
	bio = BIO_new_mem_buf(b->key, (int)b->keylen);
	if ((k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_PrivateKey(ctx, k) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1)
		goto bad;
	EVP_PKEY_free(k);
	BIO_free(bio);
	h2o_ssl_register_alpn_protocols(ctx, h2o_http2_alpn_protocols);
	return ctx;
bad:
	log_warnx("web: the certificate or key does not load");
	BIO_free(bio);
	SSL_CTX_free(ctx);
	return NULL;
}

void
web_main(int lfd, int ipc, pid_t parent, struct web_boot *b)
{
	h2o_hostconf_t *host;
	h2o_pathconf_t *path;
	h2o_handler_t *h;
	h2o_socket_t *sock;
	SSL_CTX *ssl;
	int fl;

	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_NAME, "moat-web");
	S.ipc = ipc;
	S.boot = b;
	if ((fl = fcntl(ipc, F_GETFL)) == -1 ||
	    fcntl(ipc, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    (fl = fcntl(lfd, F_GETFL)) == -1 ||
	    fcntl(lfd, F_SETFL, fl | O_NONBLOCK) == -1)
		_exit(1);
	OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS |
	    OPENSSL_INIT_LOAD_CONFIG, NULL);
	if ((ssl = tls_new(b)) == NULL)
		_exit(1);
	/* The key is in the TLS context now; the PEM copy goes. */
	explicit_bzero(b->key, b->keylen);
	h2o_config_init(&S.config);
	S.config.max_request_entity_size = WEB_MAX_BODY;
	host = h2o_config_register_host(&S.config,
	    h2o_iovec_init(H2O_STRLIT("default")), 65535);
	path = h2o_config_register_path(host, "/", 0);
	h = h2o_create_handler(path, sizeof(*h));
	h->on_req = on_req;
	h2o_context_init(&S.ctx, h2o_evloop_create(), &S.config);
	S.accept.ctx = &S.ctx;
	S.accept.hosts = S.config.hosts;
	S.accept.ssl_ctx = ssl;
	sock = h2o_evloop_socket_create(S.ctx.loop, lfd,
	    H2O_SOCKET_FLAG_DONT_READ);
	h2o_socket_read_start(sock, on_accept);
	if (privdrop(WEB_USER) == -1)
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_WEB) == -1)
		_exit(1);
	for (;;) {
		h2o_evloop_run(S.ctx.loop, TICK_MS);
		ipc_readable();
		streams_tick();
	}
}
