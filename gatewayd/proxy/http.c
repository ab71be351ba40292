/*
 * http.c -- strict HTTP/1.1 head parser and chunked decoder (see http.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "hex.h"
#include "http.h"

static const char *const http_errs[] = {
	[HTTP_OK] = "ok",
	[HTTP_INCOMPLETE] = "incomplete head",
	[HTTP_E_TOOBIG] = "head too large",
	[HTTP_E_FIELDS] = "too many header fields",
	[HTTP_E_LINE] = "malformed request or status line",
	[HTTP_E_VERSION] = "unsupported HTTP version",
	[HTTP_E_CRLF] = "bare CR or LF",
	[HTTP_E_FOLD] = "obsolete line folding",
	[HTTP_E_FIELD] = "malformed header field",
	[HTTP_E_CLTE] = "Content-Length with Transfer-Encoding",
	[HTTP_E_CL] = "invalid or duplicate Content-Length",
	[HTTP_E_TE] = "unsupported Transfer-Encoding",
	[HTTP_E_HOST] = "missing or duplicate Host",
	[HTTP_E_TARGET] = "request target not allowed",
};

const char *
http_strerror(enum http_err e)
{
	if ((size_t)e >= sizeof(http_errs) / sizeof(http_errs[0]))
		return "?";
	return http_errs[e];
}

/* RFC 9110's reason phrases.  The proxy sends these, never the upstream's
 * own: a reason phrase is free text a server could fill with what it was
 * sent. */
static const struct {
	int		 code;
	const char	*reason;
} reasons[] = {
	{ 100, "Continue" }, { 101, "Switching Protocols" },
	{ 103, "Early Hints" },
	{ 200, "OK" }, { 201, "Created" }, { 202, "Accepted" },
	{ 203, "Non-Authoritative Information" }, { 204, "No Content" },
	{ 205, "Reset Content" }, { 206, "Partial Content" },
	{ 300, "Multiple Choices" }, { 301, "Moved Permanently" },
	{ 302, "Found" }, { 303, "See Other" }, { 304, "Not Modified" },
	{ 307, "Temporary Redirect" }, { 308, "Permanent Redirect" },
	{ 400, "Bad Request" }, { 401, "Unauthorized" },
	{ 402, "Payment Required" }, { 403, "Forbidden" },
	{ 404, "Not Found" }, { 405, "Method Not Allowed" },
	{ 406, "Not Acceptable" }, { 407, "Proxy Authentication Required" },
	{ 408, "Request Timeout" }, { 409, "Conflict" }, { 410, "Gone" },
	{ 411, "Length Required" }, { 412, "Precondition Failed" },
	{ 413, "Content Too Large" }, { 414, "URI Too Long" },
	{ 415, "Unsupported Media Type" }, { 416, "Range Not Satisfiable" },
	{ 417, "Expectation Failed" }, { 421, "Misdirected Request" },
	{ 422, "Unprocessable Content" }, { 425, "Too Early" },
	{ 426, "Upgrade Required" }, { 428, "Precondition Required" },
	{ 429, "Too Many Requests" },
	{ 431, "Request Header Fields Too Large" },
	{ 451, "Unavailable For Legal Reasons" },
	{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
	{ 502, "Bad Gateway" }, { 503, "Service Unavailable" },
	{ 504, "Gateway Timeout" }, { 505, "HTTP Version Not Supported" },
};

const char *
http_reason(int code)
{
	static const char *const classes[] = { "Informational", "Success",
	    "Redirection", "Client Error", "Server Error" };
	size_t i;

	for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == code)
			return reasons[i].reason;
	if (code >= 100 && code < 600)
		return classes[code / 100 - 1];
	return "Unknown";
}

static bool
is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field-value octets: VCHAR, obs-text, SP, HTAB. */
static bool
is_vchar(unsigned char c)
{
	return (c > 0x20 && c != 0x7f) || c == ' ' || c == '\t';
}

/* Length of the head (through CRLFCRLF), 0 if not complete, or -1 on a
 * bare CR or LF seen before the end.  Bare line ends are found here, once,
 * so that line parsing below can trust "\r\n". */
static long
head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == '\n')
			return -1;	/* LF not after CR */
		if (buf[i] != '\r')
			continue;
		if (i + 1 == len)
			return 0;
		if (buf[i + 1] != '\n')
			return -1;
		if (i + 3 < len && buf[i + 2] == '\r' && buf[i + 3] == '\n')
			return (long)(i + 4);
		if (i + 2 < len && buf[i + 2] == '\r' && i + 3 == len)
			return 0;
		i++;
	}
	return 0;
}

static bool
token_eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

bool
http_field_is(const struct http_field *f, const char *name)
{
	return token_eq(f->name, f->namelen, name);
}

int
http_field_find(const struct http_head *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->nfields; i++)
		if (http_field_is(&h->fields[i], name))
			return (int)i;
	return -1;
}

static enum http_err
parse_field(const char *p, size_t n, struct http_field *f)
{
	size_t i = 0, end;

	if (n > 0 && (p[0] == ' ' || p[0] == '\t'))
		return HTTP_E_FOLD;
	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i == n || p[i] != ':')
		return HTTP_E_FIELD;	/* includes "Name :" */
	f->name = p;
	f->namelen = i;
	for (i++; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	for (end = n; end > i && (p[end - 1] == ' ' || p[end - 1] == '\t');
	    end--)
		;
	f->value = p + i;
	f->valuelen = end - i;
	for (; i < end; i++)
		if (!is_vchar((unsigned char)p[i]))
			return HTTP_E_FIELD;
	return HTTP_OK;
}

/* Walk the comma-separated tokens of a Connection value. */
static void
connection_tokens(struct http_head *h, const struct http_field *f,
    bool *keepalive)
{
	const char *p = f->value, *e = f->value + f->valuelen, *t;

	while (p < e) {
		while (p < e && (*p == ',' || *p == ' ' || *p == '\t'))
			p++;
		for (t = p; p < e && *p != ',' && *p != ' ' && *p != '\t'; p++)
			;
		if (token_eq(t, (size_t)(p - t), "close"))
			h->close = true;
		else if (token_eq(t, (size_t)(p - t), "keep-alive"))
			*keepalive = true;
		else if (token_eq(t, (size_t)(p - t), "upgrade"))
			h->upgrade = true;
	}
}

static enum http_err
parse_length(const struct http_field *f, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (f->valuelen == 0 || f->valuelen > 18)
		return HTTP_E_CL;
	for (i = 0; i < f->valuelen; i++) {
		if (f->value[i] < '0' || f->value[i] > '9')
			return HTTP_E_CL;
		v = v * 10 + (uint64_t)(f->value[i] - '0');
	}
	*out = v;
	return HTTP_OK;
}

/* Framing and connection semantics shared by requests and responses. */
static enum http_err
semantics(struct http_head *h)
{
	bool keepalive = false, cl = false, te = false, upgrade = false;
	enum http_err e;
	size_t i;

	h->host = -1;
	for (i = 0; i < h->nfields; i++) {
		struct http_field *f = &h->fields[i];

		if (http_field_is(f, "content-length")) {
			if (cl)
				return HTTP_E_CL;
			cl = true;
			if ((e = parse_length(f, &h->length)) != HTTP_OK)
				return e;
		} else if (http_field_is(f, "transfer-encoding")) {
			if (te || !token_eq(f->value, f->valuelen, "chunked"))
				return HTTP_E_TE;
			te = true;
		} else if (http_field_is(f, "host")) {
			if (h->host >= 0)
				return HTTP_E_HOST;
			h->host = (int)i;
		} else if (http_field_is(f, "connection"))
			connection_tokens(h, f, &keepalive);
		else if (http_field_is(f, "upgrade"))
			upgrade = true;
		else if (http_field_is(f, "expect"))
			h->expect100 = token_eq(f->value, f->valuelen,
			    "100-continue");
	}
	if (cl && te)
		return HTTP_E_CLTE;
	if (te && h->minor == 0)
		return HTTP_E_TE;
	h->upgrade = h->upgrade && upgrade;
	if (h->minor == 0 && !keepalive)
		h->close = true;
	h->body = te ? BODY_CHUNKED : cl ? BODY_LENGTH : BODY_NONE;
	return HTTP_OK;
}

static enum http_err
parse_version(const char *p, size_t n, int *minor)
{
	if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0)
		return HTTP_E_VERSION;
	if (p[7] != '0' && p[7] != '1')
		return HTTP_E_VERSION;
	*minor = p[7] - '0';
	return HTTP_OK;
}

static enum http_err
parse_request_line(const char *p, size_t n, struct http_head *h)
{
	size_t i = 0, t;

	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i >= n || p[i] != ' ')
		return HTTP_E_LINE;
	h->method = p;
	h->methodlen = i;
	for (t = ++i; i < n && p[i] > 0x20 && p[i] < 0x7f; i++)
		;
	if (i == t || i >= n || p[i] != ' ')
		return HTTP_E_LINE;
	h->target = p + t;
	h->targetlen = i - t;
	return parse_version(p + i + 1, n - i - 1, &h->minor);
}

static enum http_err
parse_status_line(const char *p, size_t n, struct http_head *h)
{
	enum http_err e;
	size_t i;

	if (n < 12 || p[8] != ' ')
		return HTTP_E_LINE;
	if ((e = parse_version(p, 8, &h->minor)) != HTTP_OK)
		return e;
	for (i = 9; i < 12; i++)
		if (p[i] < '0' || p[i] > '9')
			return HTTP_E_LINE;
	h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (h->status < 100)
		return HTTP_E_LINE;
	if (n > 12 && p[12] != ' ')
		return HTTP_E_LINE;
	for (i = 13; i < n; i++)
		if (!is_vchar((unsigned char)p[i]))
			return HTTP_E_LINE;
	return HTTP_OK;
}

typedef enum http_err (*first_line_fn)(const char *, size_t,
    struct http_head *);

static enum http_err
parse_head(const char *buf, size_t len, struct http_head *h,
    first_line_fn first)
{
	const char *p, *eol, *end;
	enum http_err e;
	long hl;

	memset(h, 0, sizeof(*h));
	h->host = -1;
	hl = head_end(buf, len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD);
	if (hl < 0)
		return HTTP_E_CRLF;
	if (hl == 0)
		return len >= HTTP_MAX_HEAD ? HTTP_E_TOOBIG : HTTP_INCOMPLETE;
	h->headlen = (size_t)hl;
	end = buf + hl - 2;		/* the final empty line's CR */
	eol = memchr(buf, '\r', (size_t)(end - buf) + 1);
	if ((e = first(buf, (size_t)(eol - buf), h)) != HTTP_OK)
		return e;
	for (p = eol + 2; p < end; p = eol + 2) {
		eol = memchr(p, '\r', (size_t)(end - p) + 1);
		if (h->nfields == HTTP_MAX_FIELDS)
			return HTTP_E_FIELDS;
		e = parse_field(p, (size_t)(eol - p), &h->fields[h->nfields++]);
		if (e != HTTP_OK)
			return e;
	}
	return semantics(h);
}

enum http_err
http_parse_request(const char *buf, size_t len, struct http_head *h)
{
	enum http_err e;

	if ((e = parse_head(buf, len, h, parse_request_line)) != HTTP_OK)
		return e;
	if (h->minor == 1 && h->host < 0)
		return HTTP_E_HOST;
	if (h->upgrade && h->body != BODY_NONE)
		return HTTP_E_TARGET;
	return HTTP_OK;
}

enum http_err
http_parse_response(const char *buf, size_t len, bool head_request,
    struct http_head *h)
{
	enum http_err e;

	if ((e = parse_head(buf, len, h, parse_status_line)) != HTTP_OK)
		return e;
	h->host = -1;
	if (h->status < 200 || h->status == 204 || h->status == 304 ||
	    head_request)
		h->body = BODY_NONE;
	else if (h->body == BODY_NONE && http_field_find(h,
	    "content-length") < 0)
		h->body = BODY_CLOSE;
	if (h->body == BODY_LENGTH && h->length == 0)
		h->body = BODY_NONE;
	return HTTP_OK;
}

/* --- authority and absolute-form targets ------------------------------ */

static bool
is_hostchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

static int
parse_port(const char *s, size_t n, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
http_authority(const char *s, size_t len, char *host, size_t hostlen,
    uint16_t *port, uint16_t dport)
{
	const char *h = s, *colon = NULL;
	size_t hl, i;

	if (len > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', len);

		if (rb == NULL)
			return -1;
		h = s + 1;
		hl = (size_t)(rb - h);
		if (rb + 1 < s + len) {
			if (rb[1] != ':')
				return -1;
			colon = rb + 1;
		}
		for (i = 0; i < hl; i++)
			if (!(is_hostchar((unsigned char)h[i]) || h[i] == ':'))
				return -1;
	} else {
		colon = memchr(s, ':', len);
		hl = colon ? (size_t)(colon - s) : len;
		for (i = 0; i < hl; i++)
			if (!is_hostchar((unsigned char)h[i]))
				return -1;
	}
	if (hl == 0 || hl + 1 > hostlen)
		return -1;
	*port = dport;
	if (colon && parse_port(colon + 1, (size_t)(s + len - colon - 1),
	    port) < 0)
		return -1;
	for (i = 0; i < hl; i++)
		host[i] = (char)((h[i] >= 'A' && h[i] <= 'Z') ? h[i] + 32 :
		    h[i]);
	host[hl] = '\0';
	if (host[hl - 1] == '.')	/* "example.com." names the same host */
		host[hl - 1] = '\0';
	return host[0] ? 0 : -1;
}

int
http_absolute(const char *t, size_t len, const char **auth, size_t *authlen,
    const char **path, size_t *pathlen)
{
	static const char scheme[] = "http://";
	const char *a, *p;

	if (len < sizeof(scheme) || strncasecmp(t, scheme,
	    sizeof(scheme) - 1) != 0)
		return -1;
	a = t + sizeof(scheme) - 1;
	for (p = a; p < t + len && *p != '/' && *p != '?'; p++)
		if (*p == '@' || *p == '#')
			return -1;	/* userinfo or fragment: refuse */
	if (p == a)
		return -1;
	*auth = a;
	*authlen = (size_t)(p - a);
	*path = p;
	*pathlen = (size_t)(t + len - p);
	return 0;
}

/* --- chunked decoding ------------------------------------------------- */

static enum chunk_state
ch_size(struct chunked *c, uint8_t b)
{
	int v = hex_digit(b);

	if (v >= 0) {
		if (++c->digits > 15)	/* < 2^60: no overflow, no absurdity */
			return CH_ERROR;
		c->remain = c->remain * 16 + (uint64_t)v;
		return CH_SIZE;
	}
	if (c->digits == 0)
		return CH_ERROR;
	if (b == ';')
		return CH_EXT;
	return b == '\r' ? CH_SIZE_LF : CH_ERROR;
}

static enum chunk_state
ch_ext(struct chunked *c, uint8_t b)
{
	if (b == '\r')
		return CH_SIZE_LF;
	return (is_vchar(b) && b != '\n') ? CH_EXT : CH_ERROR;
}

static enum chunk_state
ch_size_lf(struct chunked *c, uint8_t b)
{
	if (b != '\n')
		return CH_ERROR;
	c->digits = 0;
	c->linelen = 0;
	if (c->remain == 0) {
		c->trailer_empty = true;
		return CH_TRAILER;
	}
	return CH_DATA;
}

static enum chunk_state
ch_trailer(struct chunked *c, uint8_t b)
{
	if (++c->trailer > HTTP_MAX_TRAILER)
		return CH_ERROR;
	if (b == '\r')
		return c->trailer_empty ? CH_END_LF : CH_TRAILER_LF;
	if (b == '\n' || (!is_vchar(b)))
		return CH_ERROR;
	if (c->trailer_empty && (b == ' ' || b == '\t'))
		return CH_ERROR;	/* obs-fold in the trailer */
	c->trailer_empty = false;
	return CH_TRAILER;
}

static enum chunk_state
ch_trailer_lf(struct chunked *c, uint8_t b)
{
	if (b != '\n')
		return CH_ERROR;
	c->trailer_empty = true;
	return CH_TRAILER;
}

enum chunk_ret
chunked_feed(struct chunked *c, const uint8_t *in, size_t len, uint8_t *out,
    size_t *outlen, size_t *used)
{
	size_t i = 0, n;

	*outlen = 0;
	while (i < len && c->st != CH_DONE && c->st != CH_ERROR) {
		uint8_t b = in[i];

		if (c->st == CH_DATA) {
			n = len - i;
			if (n > c->remain)
				n = (size_t)c->remain;
			if (out != NULL)
				memcpy(out + *outlen, in + i, n);
			*outlen += n;
			c->remain -= n;
			i += n;
			if (c->remain == 0)
				c->st = CH_DATA_CR;
			continue;
		}
		if ((c->st == CH_SIZE || c->st == CH_EXT) &&
		    ++c->linelen > HTTP_MAX_CHUNK_LINE) {
			c->st = CH_ERROR;
			break;
		}
		switch (c->st) {
		case CH_SIZE:	c->st = ch_size(c, b); break;
		case CH_EXT:	c->st = ch_ext(c, b); break;
		case CH_SIZE_LF: c->st = ch_size_lf(c, b); break;
		case CH_DATA_CR: c->st = b == '\r' ? CH_DATA_LF : CH_ERROR; break;
		case CH_DATA_LF: c->st = b == '\n' ? CH_SIZE : CH_ERROR; break;
		case CH_TRAILER: c->st = ch_trailer(c, b); break;
		case CH_TRAILER_LF: c->st = ch_trailer_lf(c, b); break;
		case CH_END_LF:	c->st = b == '\n' ? CH_DONE : CH_ERROR; break;
		default:	c->st = CH_ERROR; break;
		}
		i++;
	}
	*used = i;
	if (c->st == CH_ERROR)
		return CHUNK_ERROR;
	return c->st == CH_DONE ? CHUNK_DONE : CHUNK_MORE;
}

/* --- requests that could do more than their method and path say ------- */

/* Headers with which servers (and frameworks in front of them) let a
 * request say it is really another method: a rule checked against GET
 * would let DELETE through. */
static const char *const override_fields[] = {
	"x-http-method-override", "x-http-method", "x-method-override",
};

/* Is this query parameter name "_method" as a server may read it:
 * percent-decoded, in any case, and with '.', ' ', '+' or '[' for the
 * '_' (PHP reads those as '_')? */
static bool
method_param(const char *p, size_t len)
{
	char name[8];
	size_t i, n = 0;
	int hi, lo;
	char ch;

	for (i = 0; i < len; i++) {
		ch = p[i];
		if (ch == '%' && i + 2 < len && (hi = hex_digit(p[i + 1])) >= 0 &&
		    (lo = hex_digit(p[i + 2])) >= 0) {
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		if (n == sizeof(name))
			return false;
		name[n++] = ch;
	}
	return n == 7 && name[0] != '\0' && strchr("_. +[", name[0]) != NULL &&
	    strncasecmp(name + 1, "method", 6) == 0;
}

static bool
query_overrides(const char *q, size_t ql)
{
	size_t i = 0, start, name;

	while (i < ql) {
		start = i;
		while (i < ql && q[i] != '&' && q[i] != ';')
			i++;
		for (name = start; name < i && q[name] != '='; name++)
			;
		if (method_param(q + start, name - start))
			return true;
		i++;
	}
	return false;
}

const char *
http_sidestep(const struct http_head *hd, const char *path,
    size_t pathlen)
{
	const char *q = memchr(path, '?', pathlen);
	size_t i, plen = q ? (size_t)(q - path) : pathlen;

	for (i = 0; i < sizeof(override_fields) / sizeof(override_fields[0]);
	    i++)
		if (http_field_find(hd, override_fields[i]) >= 0)
			return "a method override header is not sent with a "
			    "secret";
	if (q != NULL && query_overrides(q + 1, pathlen - plen - 1))
		return "a method override in the query (_method) is not sent "
		    "with a secret";
	/* An origin written in C may end the path at the NUL. */
	for (i = 0; i + 2 < plen; i++)
		if (path[i] == '%' && path[i + 1] == '0' && path[i + 2] == '0')
			return "an encoded NUL (%00) in the path is not sent "
			    "with a secret";
	return NULL;
}
