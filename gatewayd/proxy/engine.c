/*
 * engine.c -- the HTTP/1.1 engine for plain HTTP and intercepted TLS.
 *
 * One request at a time per connection: its head is parsed strictly,
 * routed (every request names its host; an intercepted one must name the
 * host its TLS did, or 421), checked for placeholders that do not belong
 * to that host, rewritten with the real values where they do (in one
 * pass over the guest's bytes, so a value is never scanned for another
 * placeholder), and forwarded with its body framed exactly as the guest
 * framed it.  The response is streamed back as it arrives, with the
 * standard reason phrase, re-framed as chunked so that the real value,
 * wherever it appears, can be turned back into the placeholder even when
 * the lengths differ.
 *
 * A request's walk (h->rq, a table of steps): its head is parsed once
 * (RQ_HEAD; the explicit proxy's first head by conn.c, which hands it
 * over) and kept, with the host and port it names, in struct request;
 * it is routed (RQ_ROUTE: the connection dials when the upstream differs,
 * and resumes here), checked, and held while gatewayd charges a budget
 * (RQ_BUDGET, the connection in S_BUDGET), then sent (RQ_SEND), then its
 * body (RQ_BODY) until RQ_DONE.  The kept head points into the guest's
 * input buffer, which is not read until the head is sent, so no wait ever
 * parses it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "audit.h"
#include "conn.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "reqrule.h"

enum rq_state { RQ_HEAD, RQ_ROUTE, RQ_BUDGET, RQ_SEND, RQ_BODY, RQ_DONE,
	RQ_NSTATES };
enum rs_state { RS_IDLE, RS_HEAD, RS_BODY };

/* The request being handled: parsed once, kept until its head is sent. */
struct request {
	struct http_head hd;		/* points into the guest's input */
	char		 host[256];	/* what it names */
	uint16_t	 port;
	const char	*path;
	size_t		 pathlen;
	unsigned	 n;		/* its number on this connection */
};

struct http {
	enum rq_state	 rq;
	enum rs_state	 rs;
	struct request	 req;
	struct http_head rsp;		/* response parse scratch */
	enum http_body	 rqbody;
	uint64_t	 rqremain;
	struct chunked	 rqch;
	enum http_body	 rsbody;
	uint64_t	 rsremain;
	struct chunked	 rsch;
	bool		 rechunk;	/* chunked towards the guest */
	bool		 head_req, upgrade_req, close_after;
	bool		 injected;	/* a secret went up this connection */
	int		 req_minor;
	struct subst	*needles;	/* placeholders that do not belong */
	size_t		 nneedles;
	int		*needle_secret;	/* index into secrets */
	bool		*carried;	/* by index: injected into this head */
	struct subst	*fsub;		/* one field's substitutions */
	int		*fidx, *fhits;	/* ... their secrets, their matches */
	struct phwatch	 watch;
	struct secrets	*ss;		/* the generation it started with */
	struct scrub	 scrub;		/* what responses are scrubbed of */
	struct redactor	 red;
	uint8_t		*dec;		/* decode scratch */
	struct rr_req	 rr;		/* request rules, budgets, audit */
};

static void http_pump(struct conn *);
static void tunnel_pump(struct conn *);

static void
http_free(struct http *h)
{
	reqrule_forget(&h->rr);
	redactor_free(&h->red);
	scrub_free(&h->scrub);
	secrets_release(h->ss);
	phwatch_free(&h->watch);
	free(h->needles);
	free(h->needle_secret);
	free(h->carried);
	free(h->fsub);
	free(h->fidx);
	free(h->fhits);
	if (h->dec)
		explicit_bzero(h->dec, REDACT_CHUNK);
	free(h->dec);
	free(h);
}

static bool request_taken(struct conn *);

static void
http_start(struct conn *c, const struct http_head *first)
{
	struct http *h = xcalloc(1, sizeof(*h));
	struct secrets *ss = secrets_hold(proxy.secrets);

	c->h = h;
	c->st = S_HTTP;
	h->ss = ss;
	scrub_init(&h->scrub, ss, c->sb);
	redactor_init(&h->red, h->scrub.s, h->scrub.n);
	h->needles = xcalloc(ss->n + 1, sizeof(*h->needles));
	h->needle_secret = xcalloc(ss->n + 1, sizeof(int));
	h->carried = xcalloc(ss->n + 1, sizeof(bool));
	h->fsub = xcalloc(ss->n + 1, sizeof(*h->fsub));
	h->fidx = xcalloc(ss->n + 1, sizeof(int));
	h->fhits = xcalloc(ss->n + 1, sizeof(int));
	h->dec = xmalloc(REDACT_CHUNK);
	conn_set_deadline(c, TIMEOUT_HEAD_S);
	if (first != NULL) {		/* conn.c parsed it: taken as it is */
		h->req.hd = *first;
		if (!request_taken(c))
			return;		/* refused (answered) */
	}
	http_pump(c);
}

/* --- request head --------------------------------------------------------- */

/* Which host and port does this request name?  0, or -1 when answered. */
static int
request_target(struct conn *c, const struct http_head *hd, char *host,
    uint16_t *port, const char **path, size_t *pathlen)
{
	const struct http_field *hf = hd->host >= 0 ? &hd->fields[hd->host] :
	    NULL;
	char hh[256];
	const char *auth;
	size_t alen;
	uint16_t hp, dport = c->g.ssl ? 443 : 80;

	*path = hd->target;
	*pathlen = hd->targetlen;
	if (c->kind == K_EXPLICIT && c->g.ssl == NULL) {
		if (http_absolute(hd->target, hd->targetlen, &auth, &alen,
		    path, pathlen) < 0 || http_authority(auth, alen, host, 256,
		    port, 80) < 0) {
			conn_refuse(c, 400, "proxy requests need an absolute "
			    "http:// URI");
			return -1;
		}
		if (hf && (http_authority(hf->value, hf->valuelen, hh,
		    sizeof(hh), &hp, 80) < 0 || strcmp(hh, host) != 0 ||
		    hp != *port)) {
			conn_refuse(c, 400, "Host disagrees with the URI");
			return -1;
		}
		return 0;
	}
	if (hd->targetlen == 0 || (hd->target[0] != '/' &&
	    !(hd->targetlen == 1 && hd->target[0] == '*'))) {
		conn_refuse(c, 400, "expected an origin-form request target");
		return -1;
	}
	if (hf == NULL) {		/* HTTP/1.0 without Host */
		snprintf(host, 256, "%s", c->host);
		*port = c->port;
		return 0;
	}
	if (http_authority(hf->value, hf->valuelen, host, 256, port,
	    c->kind == K_TRANSPARENT && !c->g.ssl ? c->port : dport) < 0) {
		conn_refuse(c, 400, "malformed Host");
		return -1;
	}
	if (c->g.ssl != NULL && (strcmp(host, c->host) != 0 ||
	    *port != c->port)) {
		conn_refuse(c, 421, "Host disagrees with the TLS server name");
		return -1;
	}
	if (c->kind == K_TRANSPARENT && *port != c->port) {
		conn_refuse(c, 421, "Host port disagrees with the destination");
		return -1;
	}
	return 0;
}

/* May secret i be injected into this request?  Only over intercepted TLS
 * whose SNI named this host, to a host the secret is bound to, for a
 * sandbox entitled to it. */
static bool
injectable(const struct conn *c, const struct secret *s, const char *host)
{
	return c->g.ssl != NULL && c->u.ssl != NULL && c->sni_ok &&
	    c->sb != NULL && policy_secret_bound(c->sb, s->cfg, host);
}

static void
collect_needles(struct conn *c, const char *host)
{
	struct http *h = c->h;
	struct secrets *ss = h->ss;
	size_t i;

	h->nneedles = 0;
	for (i = 0; i < ss->n; i++) {
		if (injectable(c, &ss->v[i], host))
			continue;
		h->needle_secret[h->nneedles] = (int)i;
		h->needles[h->nneedles++] = (struct subst){
		    ss->v[i].cfg->placeholder,
		    strlen(ss->v[i].cfg->placeholder), NULL, 0 };
	}
	phwatch_free(&h->watch);
	phwatch_init(&h->watch, h->needles, h->nneedles);
}

static void
refuse_placeholder(struct conn *c, int idx, const char *host)
{
	const struct secret *s = &c->h->ss->v[c->h->needle_secret[idx]];

	audit("placeholder-blocked", "sandbox", c->sbname, "src", c->src,
	    "host", host, "secret", s->cfg->name, NULL);
	conn_refuse(c, 403, "placeholder sent to a host it is not bound to");
}

/* A placeholder that does not belong here, in the target or any field
 * value (raw, escaped, or inside Basic credentials)?  Index or -1. */
static int
head_has_needle(struct http *h, const struct http_head *hd)
{
	uint8_t dec[3 * HTTP_MAX_HEAD / 4 + 4];
	const struct http_field *f;
	ssize_t dl;
	size_t i;
	int r;

	if (h->nneedles == 0)
		return -1;
	if ((r = ph_find((const uint8_t *)hd->target, hd->targetlen,
	    h->needles, h->nneedles)) >= 0)
		return r;
	for (i = 0; i < hd->nfields; i++) {
		f = &hd->fields[i];
		if ((r = ph_find((const uint8_t *)f->value, f->valuelen,
		    h->needles, h->nneedles)) >= 0)
			return r;
		if (f->valuelen > 6 && strncasecmp(f->value, "Basic ", 6) == 0 &&
		    (dl = b64_decode(f->value + 6, f->valuelen - 6, dec)) > 0 &&
		    (r = ph_find(dec, (size_t)dl, h->needles,
		    h->nneedles)) >= 0)
			return r;
	}
	return -1;
}

static bool
hop_by_hop_request(const struct http_field *f)
{
	return http_field_is(f, "proxy-connection") ||
	    http_field_is(f, "proxy-authorization") ||
	    http_field_is(f, "keep-alive");
}

/* Fields that only go up a connection that has carried no secret: a
 * compressed echo could not be scrubbed, and after a protocol switch
 * nothing is.  No secret is ever injected into them. */
static bool
withheld_after_secret(const struct http_field *f)
{
	return http_field_is(f, "accept-encoding") ||
	    http_field_is(f, "upgrade");
}

/* The substitutions for field f: every secret that travels in a field of
 * that name and may be injected here (only those in only, if given), each
 * placeholder to its real value, or to itself when real is false.  Their
 * indexes go to h->fidx.  How many. */
static size_t
field_substs(struct conn *c, const struct http_field *f, const char *host,
    const bool *only, bool real)
{
	struct http *h = c->h;
	const struct secret *s;
	size_t i, n = 0;

	if (hop_by_hop_request(f) || withheld_after_secret(f))
		return 0;
	for (i = 0; i < h->ss->n; i++) {
		s = &h->ss->v[i];
		if (!http_field_is(f, s->cfg->header) ||
		    (only != NULL && !only[i]) || !injectable(c, s, host))
			continue;
		h->fidx[n] = (int)i;
		h->fsub[n++] = (struct subst){ s->cfg->placeholder,
		    strlen(s->cfg->placeholder), real ? s->value :
		    s->cfg->placeholder, real ? s->len :
		    strlen(s->cfg->placeholder) };
	}
	return n;
}

/*
 * Which secrets this head carries: h->carried[i] for secret i.  It is the
 * injection's own pass (put_field) with each placeholder put for itself,
 * so the request rules and budgets are checked for exactly the secrets
 * that will be injected.  The pass runs once over the guest's bytes: a
 * secret whose value holds another's placeholder sends that placeholder,
 * never the other secret.
 */
static void
head_carried(struct conn *c, const struct http_head *hd, const char *host)
{
	static char scratch[HTTP_MAX_HEAD * 2];
	struct http *h = c->h;
	const struct http_field *f;
	size_t i, j, n;
	int count;

	memset(h->carried, 0, h->ss->n * sizeof(bool));
	for (i = 0; i < hd->nfields; i++) {
		f = &hd->fields[i];
		if ((n = field_substs(c, f, host, NULL, false)) == 0 ||
		    subst_header_hits(f->value, f->valuelen, h->fsub, n,
		    scratch, sizeof(scratch), &count, h->fhits) < 0)
			continue;
		for (j = 0; j < n; j++)
			if (h->fhits[j] > 0)
				h->carried[h->fidx[j]] = true;
	}
}

/* Write one field to out, with the real values of the secrets it carries,
 * in one pass over the guest's bytes; each injection is audited by name.
 * -1 if out is full, -2 if the connection holds too many credential forms
 * to scrub. */
static int
put_field(struct conn *c, const struct http_field *f, const char *host)
{
	static char buf[HTTP_MAX_HEAD + SECRET_MAX_LEN * 4];
	struct http *h = c->h;
	const struct moat_secret *sc;
	const char *cur = f->value;
	size_t j, n, cl = f->valuelen, used = 0;
	ssize_t vl;
	int count = 0, rc;

	if ((n = field_substs(c, f, host, h->carried, true)) > 0) {
		if ((vl = subst_header_hits(f->value, f->valuelen, h->fsub, n,
		    buf, sizeof(buf), &count, h->fhits)) < 0) {
			explicit_bzero(buf, sizeof(buf));
			return -1;
		}
		/* perf: the substitution wrote at most buf[0, vl] (a Basic
		 * pair ends in a NUL), so that is all there is to wipe, not
		 * 32 KiB a request */
		used = (size_t)vl < sizeof(buf) ? (size_t)vl + 1 : sizeof(buf);
		if (count > 0) {
			cur = buf;
			cl = (size_t)vl;
			h->injected = true;
		}
		for (j = 0; j < n; j++) {
			sc = h->ss->v[h->fidx[j]].cfg;
			if (h->fhits[j] > 0)
				audit("inject", "sandbox", c->sbname, "src",
				    c->src, "host", host, "secret", sc->name,
				    "header", sc->header, NULL);
		}
	}
	/* A Basic pair sent re-encoded is a new form of the value. */
	if (cur != f->value && scrub_add_basic(&h->scrub, cur, cl,
	    f->value, f->valuelen) < 0)
		rc = -2;
	else
		rc = buf_field(&c->u.out, f->name, f->namelen, cur, cl);
	if (used > 0)
		explicit_bzero(buf, used);	/* held a real value */
	return rc;
}

static int
put_head(struct conn *c, const struct http_head *hd, const char *host,
    const char *path, size_t pathlen)
{
	const struct http_field *f;
	size_t i;
	int rc;

	if (buf_printf(&c->u.out, "%.*s %.*s HTTP/1.%d\r\n", (int)hd->methodlen,
	    hd->method, (int)pathlen, path, hd->minor) < 0)
		return -1;
	for (i = 0; i < hd->nfields; i++) {
		if (hop_by_hop_request(&hd->fields[i]) ||
		    withheld_after_secret(&hd->fields[i]))
			continue;
		if ((rc = put_field(c, &hd->fields[i], host)) < 0)
			return rc;
	}
	/* Only now is it known whether a secret went into this head. */
	for (i = 0; i < hd->nfields && !c->h->injected; i++) {
		f = &hd->fields[i];
		if (withheld_after_secret(f) && buf_field(&c->u.out,
		    f->name, f->namelen, f->value, f->valuelen) < 0)
			return -1;
	}
	return buf_put(&c->u.out, "\r\n", 2);
}

/* The responses' scrubber follows the forms this connection has sent. */
static void
scrub_refresh(struct http *h)
{
	redactor_reset(&h->red, h->scrub.s, h->scrub.n);
}

/* RQ_HEAD: parse the next head; request_taken keeps it (h->req) for the
 * steps after, which never parse it again. */
static bool
request_head(struct conn *c)
{
	struct http *h = c->h;
	enum http_err e;

	if (h->rs != RS_IDLE || c->g.in.len == 0 || c->u.out.len > 0)
		return false;
	e = http_parse_request((char *)c->g.in.d + c->g.in.off, c->g.in.len,
	    &h->req.hd);
	if (e == HTTP_INCOMPLETE) {
		if (buf_room(&c->g.in) == 0)
			conn_refuse(c, 431, "request head too large");
		return false;
	}
	if (e != HTTP_OK) {
		conn_refuse(c, e == HTTP_E_TOOBIG || e == HTTP_E_FIELDS ? 431 :
		    400, http_strerror(e));
		return false;
	}
	return request_taken(c);
}

/* A parsed head (h->req.hd, at the start of the guest's input): what
 * does it name?  Then RQ_ROUTE. */
static bool
request_taken(struct conn *c)
{
	struct http *h = c->h;
	struct request *rq = &h->req;
	struct http_head *hd = &rq->hd;

	log_debug("%s: request %u: head parsed (%zu bytes)", c->src, ++rq->n,
	    hd->headlen);
	if (hd->methodlen == 7 && memcmp(hd->method, "CONNECT", 7) == 0) {
		conn_refuse(c, 400, "CONNECT is not allowed here");
		return false;
	}
	if (request_target(c, hd, rq->host, &rq->port, &rq->path,
	    &rq->pathlen) < 0)
		return false;
	h->rq = RQ_ROUTE;
	return true;
}

/* RQ_ROUTE: to the host it names (dialling first when the upstream
 * differs: on_connected pumps again), then checked for placeholders that
 * do not belong there and against the rules of the secrets it carries. */
static bool
request_route(struct conn *c)
{
	struct http *h = c->h;
	struct request *rq = &h->req;
	int r;

	if (conn_route(c, rq->host, rq->port) <= 0)
		return false;		/* refused, or dialling */
	collect_needles(c, rq->host);
	if ((r = head_has_needle(h, &rq->hd)) >= 0) {
		refuse_placeholder(c, r, rq->host);
		return false;
	}
	head_carried(c, &rq->hd, rq->host);
	r = reqrule_check(c, &h->rr, h->ss, &rq->hd, rq->host, rq->path,
	    rq->pathlen, h->carried);
	if (r < 0)
		return false;		/* refused (answered) */
	if (r > 0) {
		h->rq = RQ_BUDGET;
		conn_budget_wait(c);	/* conn_budget_answer resumes it */
		return false;
	}
	h->rq = RQ_SEND;
	return true;
}

/* RQ_BUDGET: gatewayd answered (the only way the pump runs again). */
static bool
request_budget(struct conn *c)
{
	struct http *h = c->h;

	if (reqrule_answer(c, &h->rr) != 0)
		return false;		/* over budget (answered) */
	h->rq = RQ_SEND;
	return true;
}

/* RQ_SEND: the checked head goes up, with the real values.  An upstream
 * that went away during a wait is dialled again for the same host. */
static bool
request_send(struct conn *c)
{
	struct http *h = c->h;
	struct request *rq = &h->req;
	struct http_head *hd = &rq->hd;
	int r;

	if (conn_route(c, rq->host, rq->port) <= 0)
		return false;		/* refused, or dialling */
	if ((r = put_head(c, hd, rq->host, rq->path, rq->pathlen)) < 0) {
		buf_free(&c->u.out);
		if (r == -2)
			conn_refuse(c, 403, "too many distinct credentials on "
			    "one connection");
		else
			conn_refuse(c, 431, "request head too large after "
			    "injection");
		return false;
	}
	scrub_refresh(h);
	h->rqbody = hd->body;
	h->rqremain = hd->length;
	memset(&h->rqch, 0, sizeof(h->rqch));
	h->head_req = hd->methodlen == 4 && memcmp(hd->method, "HEAD", 4) == 0;
	h->upgrade_req = hd->upgrade && !h->injected;
	h->close_after = hd->close;
	h->req_minor = hd->minor;
	buf_consume(&c->g.in, hd->headlen);
	h->rq = h->rqbody == BODY_NONE ? RQ_DONE : RQ_BODY;
	h->rs = RS_HEAD;
	conn_set_deadline(c, TIMEOUT_IDLE_S);
	return true;
}

static bool
request_body(struct conn *c)
{
	struct http *h = c->h;
	size_t n = c->g.in.len, room = buf_room(&c->u.out), used, ol;
	const uint8_t *p = c->g.in.d + c->g.in.off, *data = p;
	enum chunk_ret cr = CHUNK_MORE;
	int r;

	if (n > room)
		n = room;
	if (n > REDACT_CHUNK)
		n = REDACT_CHUNK;	/* h->dec holds the decoded payload */
	if (n == 0)
		return false;
	if (h->rqbody == BODY_LENGTH) {
		if (n > h->rqremain)
			n = (size_t)h->rqremain;
		h->rqremain -= n;
		ol = n;
	} else {
		/* The watch sees the payload: a placeholder split by chunk
		 * framing is whole again. */
		cr = chunked_feed(&h->rqch, p, n, h->dec, &ol, &used);
		if (cr == CHUNK_ERROR) {
			conn_refuse(c, 400, "invalid chunked request body");
			return false;
		}
		n = used;
		data = h->dec;
	}
	if ((r = phwatch_feed(&h->watch, data, ol)) >= 0) {
		refuse_placeholder(c, r, c->host);
		return false;
	}
	buf_put(&c->u.out, p, n);
	buf_consume(&c->g.in, n);
	if ((h->rqbody == BODY_LENGTH && h->rqremain == 0) || cr == CHUNK_DONE)
		h->rq = RQ_DONE;
	return true;
}

static bool
request_done(struct conn *c)
{
	return false;
}

static bool (*const request_steps[RQ_NSTATES])(struct conn *) = {
	[RQ_HEAD] = request_head,
	[RQ_ROUTE] = request_route,
	[RQ_BUDGET] = request_budget,
	[RQ_SEND] = request_send,
	[RQ_BODY] = request_body,
	[RQ_DONE] = request_done,
};

/* Only in these is the guest read: in the others a kept head points into
 * its input buffer, which a read could move. */
static bool
reads_guest(const struct http *h)
{
	return h->rq == RQ_HEAD || h->rq == RQ_BODY;
}

/* --- response --------------------------------------------------------------- */

/* A field is passed on with every form of a value in it turned back into
 * the guest's; one whose name holds a value (any token can be a header
 * name) is dropped, since a placeholder need not be a valid name. */
static int
put_redacted_field(struct conn *c, const struct http_field *f)
{
	char val[HTTP_MAX_HEAD * 2];
	ssize_t vl;
	int count;

	if (subst_all(f->name, f->namelen, c->h->scrub.s, c->h->scrub.n, val,
	    sizeof(val), &count) < 0 || count > 0) {
		log_info("%s: %s: a response header's name held a secret's "
		    "value: dropped", c->src, c->host);
		return 0;
	}
	vl = subst_all(f->value, f->valuelen, c->h->scrub.s, c->h->scrub.n,
	    val, sizeof(val), NULL);
	if (vl < 0)
		return -1;
	return buf_field(&c->g.out, f->name, f->namelen, val, (size_t)vl);
}

static bool
framing_field(const struct http_field *f)
{
	return http_field_is(f, "content-length") ||
	    http_field_is(f, "transfer-encoding") ||
	    http_field_is(f, "connection") || http_field_is(f, "keep-alive");
}

static int
put_response_head(struct conn *c, const struct http_head *hd)
{
	struct http *h = c->h;
	bool passthrough = hd->status < 200 || hd->status == 101;
	size_t i;

	/* Our side of the guest's connection speaks HTTP/1.1 whatever the
	 * upstream spoke, with the standard reason phrase: the upstream's
	 * could echo anything it was sent. */
	if (buf_printf(&c->g.out, "HTTP/1.1 %03d %s\r\n", hd->status,
	    http_reason(hd->status)) < 0)
		return -1;
	for (i = 0; i < hd->nfields; i++) {
		if (!passthrough && framing_field(&hd->fields[i]))
			continue;
		if (put_redacted_field(c, &hd->fields[i]) < 0)
			return -1;
	}
	if (!passthrough) {
		if (h->rechunk && buf_printf(&c->g.out,
		    "Transfer-Encoding: chunked\r\n") < 0)
			return -1;
		if (h->rsbody == BODY_NONE && !h->head_req &&
		    hd->status != 204 && hd->status != 304 &&
		    buf_printf(&c->g.out, "Content-Length: 0\r\n") < 0)
			return -1;
		if (h->close_after && buf_printf(&c->g.out,
		    "Connection: close\r\n") < 0)
			return -1;
	}
	return buf_put(&c->g.out, "\r\n", 2);
}

static void
response_done(struct conn *c)
{
	struct http *h = c->h;

	reqrule_done(&h->rr);
	h->rs = RS_IDLE;
	redactor_reset(&h->red, h->scrub.s, h->scrub.n);
	if (h->rq != RQ_DONE)
		h->close_after = true;	/* answered before the body ended */
	if (h->close_after) {
		c->st = S_DRAIN;
		conn_set_deadline(c, 10);
		return;
	}
	h->rq = RQ_HEAD;
	conn_set_deadline(c, TIMEOUT_IDLE_S);
}

static void
start_tunnel(struct conn *c)
{
	c->st = S_TUNNEL;
	conn_set_deadline(c, TIMEOUT_IDLE_S);
}

/* A Content-Encoding other than identity: bytes the scrubber cannot
 * read. */
static bool
encoded(const struct http_head *hd)
{
	const struct http_field *f;
	size_t i;

	for (i = 0; i < hd->nfields; i++) {
		f = &hd->fields[i];
		if (http_field_is(f, "content-encoding") && !(f->valuelen ==
		    8 && strncasecmp(f->value, "identity", 8) == 0))
			return true;
	}
	return false;
}

static bool
response_head(struct conn *c)
{
	struct http *h = c->h;
	struct http_head *hd = &h->rsp;
	enum http_err e;

	if (c->u.in.len == 0 || c->g.out.len > 0)
		return false;
	e = http_parse_response((char *)c->u.in.d + c->u.in.off, c->u.in.len,
	    h->head_req, hd);
	if (e == HTTP_INCOMPLETE) {
		if (buf_room(&c->u.in) == 0)
			conn_refuse(c, 502, "upstream response head too large");
		return false;
	}
	if (e != HTTP_OK) {
		log_info("%s: %s: bad upstream response: %s", c->src, c->host,
		    http_strerror(e));
		conn_refuse(c, 502, "malformed upstream response");
		return false;
	}
	if (hd->status == 101 && !h->upgrade_req) {
		conn_refuse(c, 502, "upstream switched protocols unasked");
		return false;
	}
	if (h->injected && encoded(hd)) {
		conn_refuse(c, 502, "upstream compressed a response on a "
		    "connection that carried a secret");
		return false;
	}
	reqrule_status(&h->rr, hd->status);
	h->rsbody = hd->body;
	h->rsremain = hd->length;
	memset(&h->rsch, 0, sizeof(h->rsch));
	/* A body is re-framed as chunked for HTTP/1.1 guests, delimited by
	 * close for HTTP/1.0 ones. */
	h->rechunk = hd->body != BODY_NONE && hd->status >= 200 &&
	    h->req_minor == 1;
	if (hd->body != BODY_NONE && hd->status >= 200 && h->req_minor == 0)
		h->close_after = true;
	if (put_response_head(c, hd) < 0) {
		buf_free(&c->g.out);
		conn_refuse(c, 502, "upstream response head too large");
		return false;
	}
	buf_consume(&c->u.in, hd->headlen);
	if (hd->status == 101) {
		start_tunnel(c);
		return true;
	}
	if (hd->status < 200)
		return true;		/* interim: the final head follows */
	h->rs = hd->body == BODY_NONE ? RS_IDLE : RS_BODY;
	if (hd->close)
		c->u.shut = true;	/* do not reuse this upstream */
	if (h->rs == RS_IDLE)
		response_done(c);
	return true;
}

/* perf: the scrubber writes straight into the guest's output buffer, after
 * room for a fixed-width chunk-size line (leading zeros are valid chunk
 * sizes), instead of into scratch that was then copied. */
#define CHUNK_HDR	6	/* "%04zx\r\n": CONN_BUF fits in 4 hex digits */
#define CHUNK_TAIL	(2 + 5)	/* "\r\n" and the last-chunk "0\r\n\r\n" */
_Static_assert(CONN_BUF <= 0xffff, "chunk sizes are written in 4 hex digits");

/* Input bytes emit() can take now (0: wait for the guest to drain). */
static size_t
emit_room(struct conn *c)
{
	size_t room = buf_room(&c->g.out);

	if (room <= CHUNK_HDR + CHUNK_TAIL)
		return 0;
	return redact_inmax(&c->h->red, room - CHUNK_HDR - CHUNK_TAIL);
}

/* Emit redacted payload as one chunk (or raw when not re-chunking); n is
 * at most emit_room(). */
static void
emit(struct conn *c, const uint8_t *p, size_t n, bool final)
{
	struct http *h = c->h;
	struct buf *b = &c->g.out;
	uint8_t *at = b->d + b->off + b->len;
	size_t hdr = h->rechunk ? CHUNK_HDR : 0, o;
	char line[24];

	o = redact_feed(&h->red, p, n, at + hdr, final);
	if (o > 0 && h->rechunk) {
		(void)snprintf(line, sizeof(line), "%04zx\r\n", o);
		memcpy(at, line, CHUNK_HDR);
		memcpy(at + CHUNK_HDR + o, "\r\n", 2);
		o += CHUNK_HDR + 2;
	}
	if (o > 0 || !h->rechunk)
		b->len += o;
	if (final && h->rechunk) {
		memcpy(b->d + b->off + b->len, "0\r\n\r\n", 5);
		b->len += 5;
	}
}

static bool
response_body(struct conn *c)
{
	struct http *h = c->h;
	size_t n = c->u.in.len, used, dl = 0;
	const uint8_t *p = c->u.in.d + c->u.in.off, *data = p;
	enum chunk_ret cr = CHUNK_MORE;
	bool done = false;
	size_t lim = emit_room(c);

	if (lim == 0)
		return false;
	if (n > lim)
		n = lim;
	if (h->rsbody == BODY_CHUNKED) {
		cr = chunked_feed(&h->rsch, p, n, h->dec, &dl, &used);
		if (cr == CHUNK_ERROR) {
			log_info("%s: %s: bad chunked response", c->src,
			    c->host);
			conn_close(c);
			return false;
		}
		data = h->dec;
		n = used;
		done = cr == CHUNK_DONE;
	} else if (h->rsbody == BODY_LENGTH) {
		if (n > h->rsremain)
			n = (size_t)h->rsremain;
		dl = n;
		h->rsremain -= n;
		done = h->rsremain == 0;
	} else {
		dl = n;
		done = c->u.eof && n == c->u.in.len;
	}
	if (n == 0 && !done)
		return false;
	emit(c, data, dl, done);
	reqrule_bytes(&h->rr, dl);
	buf_consume(&c->u.in, n);
	if (done) {
		if (h->rsbody == BODY_CLOSE)
			c->u.shut = true;
		response_done(c);
	}
	return true;
}

static bool
response_step(struct conn *c)
{
	switch (c->h->rs) {
	case RS_HEAD:
		return response_head(c);
	case RS_BODY:
		return response_body(c);
	default:
		return false;
	}
}

/* --- the pump --------------------------------------------------------------- */

/* End-of-stream cases; true if the connection was closed or changed. */
static bool
eof_cases(struct conn *c)
{
	struct http *h = c->h;

	if (c->g.err) {
		conn_close(c);
		return true;
	}
	/* A guest may half-close after its last request: what it sent
	 * before is still served. */
	if (c->g.eof && c->g.in.len == 0 && (h->rq == RQ_BODY ||
	    (h->rq == RQ_HEAD && h->rs == RS_IDLE && c->g.out.len == 0))) {
		conn_close(c);
		return true;
	}
	if ((c->u.eof || c->u.err) && c->u.in.len == 0) {
		if (h->rs == RS_HEAD) {
			conn_refuse(c, 502, "upstream closed without answering");
			return true;
		}
		if (h->rs == RS_BODY && h->rsbody != BODY_CLOSE) {
			conn_close(c);	/* truncated: the guest sees it */
			return true;
		}
		if (h->rs == RS_IDLE && c->u.fd >= 0)
			c->u.shut = true;
	}
	return false;
}

static bool
upstream_usable(struct conn *c)
{
	return c->u.fd >= 0 && c->dialled && !c->u.err;
}

/* perf: read and re-frame up to RESPONSE_BATCH upstream reads before
 * flushing to the guest, so a body goes out in full 16 KiB TLS records
 * (one 8 KiB chunk per write made half-size records: twice the
 * records, writes and wakeups). */
#define RESPONSE_BATCH	4
static bool
response_batch(struct conn *c)
{
	bool moved = false, m;
	int k;

	for (k = 0; k < RESPONSE_BATCH; k++) {
		m = false;
		if (upstream_usable(c) && c->h->rs != RS_IDLE)
			m = side_fill(&c->u);
		m |= response_step(c);
		if (c->closed)
			return true;
		moved |= m;
		if (!m)
			break;
	}
	return moved;
}

static void
http_pump(struct conn *c)
{
	struct http *h = c->h;
	bool moved;

	c->g.want_r = c->g.want_w = c->u.want_r = c->u.want_w = false;
	do {
		moved = false;
		if (reads_guest(h))
			moved |= side_fill(&c->g);
		moved |= request_steps[h->rq](c);
		if (c->closed || c->st != S_HTTP)
			break;
		if (upstream_usable(c))
			moved |= side_flush(&c->u);
		moved |= response_batch(c);
		if (c->closed)
			return;
		moved |= h->rs == RS_BODY ? side_flush_records(&c->g) :
		    side_flush(&c->g);
		if (!moved)	/* nothing more to add for now: the tail goes */
			moved = side_flush(&c->g);
		if (c->st == S_HTTP && eof_cases(c))
			return;
		if (c->st == S_HTTP && h->rs == RS_IDLE && c->u.shut &&
		    c->u.fd >= 0) {
			/* not reusable: dial again for the next request */
			c->u.shut = false;
			c->dialled = false;
			if (c->u.ssl) {
				SSL_free(c->u.ssl);
				c->u.ssl = NULL;
			}
			ev_del(&c->u.ev);
			close(c->u.fd);
			c->u.fd = -1;
			buf_free(&c->u.in);
			buf_free(&c->u.out);
			c->u.eof = c->u.err = false;
		}
	} while (moved && c->st == S_HTTP);
	if (c->closed)
		return;
	switch (c->st) {
	case S_HTTP:
		side_interest(&c->g, reads_guest(h) && !c->g.eof &&
		    c->g.in.len < c->g.in.cap, false);
		if (upstream_usable(c))
			side_interest(&c->u, h->rs != RS_IDLE && !c->u.eof,
			    false);
		break;
	case S_DRAIN:
		side_flush(&c->g);
		if (c->g.out.len == 0 || c->g.err)
			conn_close(c);
		else
			side_interest(&c->g, false, true);
		if (!c->closed && c->u.fd >= 0)
			ev_set(&c->u.ev, 0);
		break;
	case S_TUNNEL:
		tunnel_pump(c);
		break;
	default:
		break;		/* dialling: the dial handlers take over */
	}
}

/* After a 101: bytes both ways, unparsed, until either side ends. */
static bool
copy_dir(struct side *from, struct side *to)
{
	size_t n = from->in.len;

	if (n == 0 || buf_put(&to->out, from->in.d + from->in.off, n) < 0)
		return false;
	buf_consume(&from->in, n);
	return true;
}

static void
tunnel_pump(struct conn *c)
{
	bool moved;

	c->g.want_r = c->g.want_w = c->u.want_r = c->u.want_w = false;
	do {
		moved = side_fill(&c->g);
		moved |= side_fill(&c->u);
		moved |= copy_dir(&c->g, &c->u);
		moved |= copy_dir(&c->u, &c->g);
		moved |= side_flush(&c->u);
		moved |= side_flush(&c->g);
	} while (moved);
	if (c->g.err || c->u.err || (c->g.eof && c->u.out.len == 0) ||
	    (c->u.eof && c->g.out.len == 0 && c->u.in.len == 0)) {
		conn_close(c);
		return;
	}
	conn_set_deadline(c, TIMEOUT_IDLE_S);
	side_interest(&c->g, c->g.in.len == 0, false);
	side_interest(&c->u, c->u.in.len == 0, false);
}

const struct conn_app http_app = {
	.start = http_start,
	.pump = http_pump,
	.tunnel = tunnel_pump,
	.free = http_free,
};
