/*
 * intercept.c -- telling the gateway's proxy from the far end.
 *
 * With interception on (moat.conf proxy.intercept), the gateway redirects
 * a guest's TCP to some ports of public addresses to its own transparent
 * proxy.  The proxy accepts the connection, reads what the guest sends
 * and only then decides, so a connection there says nothing about the far
 * end.  On those ports a probe speaks (plain HTTP, or TLS with an HTTP
 * request inside) and this file judges what came back:
 *
 *   - the proxy's refusal has a fixed shape: before any server message,
 *     one TLS alert access_denied; or an HTTP reply carrying the header
 *     X-Moat-Refused, which every reply the proxy writes itself carries:
 *     "refused by the gateway's proxy" (V_PROXY);
 *   - the far end shows itself by a TLS ServerHello, a completed
 *     handshake whose certificate is not from the gateway's CA, an HTTP
 *     reply the proxy did not write, a DNS answer, or any other bytes:
 *     reachable (V_REACHABLE);
 *   - a handshake with the gateway's CA certificate is the proxy
 *     terminating TLS: the HTTP reply inside decides as above;
 *   - a connection that closed or fell silent without any of these tells
 *     neither (V_CONNECTED), which a probe that must be refused counts as
 *     a breach and a positive control as a failure: fail closed both ways.
 *
 * Pure functions over the bytes received; fuzzed by fuzz/fuzz_cc_http.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cc.h"

/* The ports the gateway's proxy may answer for a redirected connection,
 * and what a probe speaks there.  A port the gateway starts redirecting
 * is one more row; everything else follows from it. */
static const struct {
	uint16_t	port;
	enum cc_app	app;
} intercepted[] = {
	{ 80, A_WEB },
	{ 443, A_TLS },
};

bool
cc_intercept_port(uint16_t port, enum cc_app *app)
{
	size_t i;

	for (i = 0; i < sizeof(intercepted) / sizeof(intercepted[0]); i++)
		if (intercepted[i].port == port) {
			*app = intercepted[i].app;
			return true;
		}
	return false;
}

static const struct {
	int		 code;
	const char	*name;
} alerts[] = {
	{ 0, "close_notify" }, { 10, "unexpected_message" },
	{ 20, "bad_record_mac" }, { 40, "handshake_failure" },
	{ 42, "bad_certificate" }, { 47, "illegal_parameter" },
	{ 48, "unknown_ca" }, { 49, "access_denied" }, { 50, "decode_error" },
	{ 51, "decrypt_error" }, { 70, "protocol_version" },
	{ 71, "insufficient_security" }, { 80, "internal_error" },
	{ 86, "inappropriate_fallback" }, { 109, "missing_extension" },
	{ 112, "unrecognized_name" }, { 120, "no_application_protocol" },
};

const char *
cc_tls_alert_name(int code)
{
	size_t i;

	for (i = 0; i < sizeof(alerts) / sizeof(alerts[0]); i++)
		if (alerts[i].code == code)
			return alerts[i].name;
	return "unknown";
}

/* --- the HTTP reply ------------------------------------------------------- */

/* Copies a header value the far end chose, printable ASCII only. */
static void
printable(char *dst, size_t dlen, const char *src, size_t slen)
{
	size_t i;

	if (dlen == 0)
		return;
	if (slen > dlen - 1)
		slen = dlen - 1;
	for (i = 0; i < slen; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[slen] = '\0';
}

static bool
header_is(const char *line, size_t len, const char *name, const char **val,
    size_t *vlen)
{
	size_t n = strlen(name);

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	*val = line + n + 1;
	*vlen = len - n - 1;
	while (*vlen > 0 && (**val == ' ' || **val == '\t')) {
		(*val)++;
		(*vlen)--;
	}
	while (*vlen > 0 && ((*val)[*vlen - 1] == ' ' ||
	    (*val)[*vlen - 1] == '\t'))
		(*vlen)--;
	return true;
}

static void
reply_header(struct cc_http_reply *r, const char *line, size_t len,
    long *clen)
{
	const char *v;
	size_t vlen;
	char num[16];

	if (header_is(line, len, "X-Moat-Refused", &v, &vlen)) {
		r->moat_refused = true;
		printable(r->reason, sizeof(r->reason), v, vlen);
	} else if (header_is(line, len, "Content-Length", &v, &vlen) &&
	    vlen > 0 && vlen < sizeof(num) && strspn(v, "0123456789") >= vlen) {
		memcpy(num, v, vlen);
		num[vlen] = '\0';
		*clen = strtol(num, NULL, 10);
	}
}

/*
 * 0: the head has ended (r->complete when the body is in too, by its
 * Content-Length; a reply without one is complete when the peer closes);
 * 1: an HTTP reply so far, incomplete; -1: not HTTP.
 */
int
cc_http_reply_parse(const uint8_t *buf, size_t len, struct cc_http_reply *r)
{
	const char *s = (const char *)buf, *nl;
	size_t off, l;
	long clen = -1;
	int st;
	char first[16];

	memset(r, 0, sizeof(*r));
	if (len < 5)
		return strncmp(s, "HTTP/", len) == 0 ? 1 : -1;
	if (memcmp(s, "HTTP/", 5) != 0)
		return -1;
	if (len < 12)		/* "HTTP/1.1 200" */
		return 1;
	memcpy(first, s, 12);
	first[12] = '\0';
	if (sscanf(first, "HTTP/1.%*1[01] %3d", &st) != 1 || st < 100 ||
	    st > 599)
		return -1;
	r->status = st;
	for (off = 0; off < len; off = (size_t)(nl - s) + 1) {
		nl = memchr(s + off, '\n', len - off);
		if (nl == NULL)
			return 1;
		l = (size_t)(nl - s) - off;
		if (l > 0 && s[off + l - 1] == '\r')
			l--;
		if (l == 0) {		/* the empty line: the head ends */
			r->body = (size_t)(nl - s) + 1;
			r->bodylen = len - r->body;
			r->complete = clen >= 0 && r->bodylen >= (size_t)clen;
			if (r->complete)
				r->bodylen = (size_t)clen;
			return 0;
		}
		if (off > 0)
			reply_header(r, s + off, l, &clen);
	}
	return 1;
}

/* --- the verdict ---------------------------------------------------------- */

/* pre: what went before, for the evidence; shown: the far end has shown
 * itself already (a TLS handshake with its own certificate). */
static enum cc_verdict
from_http(const uint8_t *reply, size_t len, uint16_t dnsid, bool timedout,
    const char *pre, bool shown, char *ev, size_t evlen)
{
	struct cc_http_reply r;
	struct cc_dns_reply d;
	int st = len > 0 ? cc_http_reply_parse(reply, len, &r) : -1;

	if (st >= 0 && r.moat_refused) {
		snprintf(ev, evlen, "refused by the gateway's proxy: %d %s",
		    r.status, r.reason);
		return V_PROXY;
	}
	if (st == 0 && cc_dns_parse(reply + r.body, r.bodylen, &d) == 0 &&
	    d.id == dnsid) {
		snprintf(ev, evlen, "%sDoH answer: %s, %zu answer%s", pre,
		    cc_dns_rcode_name(d.rcode), d.nanswer, d.nanswer == 1 ?
		    "" : "s");
		return V_REACHABLE;
	}
	if (st >= 0) {
		snprintf(ev, evlen, "%sHTTP %d, not written by the gateway's "
		    "proxy", pre, r.status);
		return V_REACHABLE;
	}
	if (len > 0) {
		snprintf(ev, evlen, "%s%zu bytes, not HTTP", pre, len);
		return V_REACHABLE;
	}
	if (shown) {
		snprintf(ev, evlen, "%sno HTTP reply", pre);
		return V_REACHABLE;
	}
	snprintf(ev, evlen, "%sconnected, %s without an answer (proxy or far "
	    "end?)", pre, timedout ? "silent" : "closed");
	return V_CONNECTED;
}

static enum cc_verdict
from_tls(const struct cc_tls_seen *t, const uint8_t *reply, size_t len,
    uint16_t dnsid, bool timedout, char *ev, size_t evlen)
{
	char pre[96];

	if (t->done && t->gateway_cert)	/* the proxy terminated TLS */
		return from_http(reply, len, dnsid, timedout,
		    "through the gateway's proxy: ", false, ev, evlen);
	if (t->done) {
		snprintf(pre, sizeof(pre), "TLS: CN=%s, not the gateway's CA; ",
		    t->subject[0] ? t->subject : "-");
		return from_http(reply, len, dnsid, timedout, pre, true, ev,
		    evlen);
	}
	if (t->server_hello || t->certificate) {
		snprintf(ev, evlen, "TLS ServerHello from the far end%s%s",
		    t->alert >= 0 ? ", then alert " : "",
		    t->alert >= 0 ? cc_tls_alert_name(t->alert) : "");
		return V_REACHABLE;
	}
	if (t->alert == CC_ALERT_ACCESS_DENIED) {
		snprintf(ev, evlen, "refused by the gateway's proxy: TLS alert "
		    "access_denied");
		return V_PROXY;
	}
	if (t->alert >= 0) {
		snprintf(ev, evlen, "TLS alert %s (%d), not the proxy's refusal",
		    cc_tls_alert_name(t->alert), t->alert);
		return V_REACHABLE;
	}
	if (t->not_tls) {
		snprintf(ev, evlen, "an answer that is not TLS");
		return V_REACHABLE;
	}
	snprintf(ev, evlen, "connected, %s without a TLS answer (proxy or far "
	    "end?)", timedout ? "silent" : "closed");
	return V_CONNECTED;
}

/*
 * The one rule for a probe on a port the proxy may answer.  tls: what the
 * handshake showed (NULL for plain HTTP); reply: the bytes read after it
 * (for TLS: inside the tunnel, or, when no handshake happened, the raw
 * bytes that were not TLS); timedout: the probe's time ran out.
 */
enum cc_verdict
cc_intercept_verdict(const struct cc_tls_seen *tls, const uint8_t *reply,
    size_t len, uint16_t dnsid, bool timedout, char *ev, size_t evlen)
{
	if (tls != NULL)
		return from_tls(tls, reply, len, dnsid, timedout, ev, evlen);
	return from_http(reply, len, dnsid, timedout, "", false, ev, evlen);
}

/* --- the DoH request ------------------------------------------------------ */

/* RFC 8484 GET: the query in base64url without padding. */
int
cc_doh_request(const uint8_t *q, size_t qlen, const char *host, char *buf,
    size_t len)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char enc[700];
	size_t i, o = 0;
	uint32_t v;
	int n;

	if (qlen > (sizeof(enc) - 1) / 4 * 3)
		return -1;
	for (i = 0; i < qlen; i += 3) {
		v = (uint32_t)q[i] << 16;
		if (i + 1 < qlen)
			v |= (uint32_t)q[i + 1] << 8;
		if (i + 2 < qlen)
			v |= q[i + 2];
		enc[o++] = b64[(v >> 18) & 63];
		enc[o++] = b64[(v >> 12) & 63];
		if (i + 1 < qlen)
			enc[o++] = b64[(v >> 6) & 63];
		if (i + 2 < qlen)
			enc[o++] = b64[v & 63];
	}
	enc[o] = '\0';
	n = snprintf(buf, len, "GET /dns-query?dns=%s HTTP/1.1\r\nHost: %s\r\n"
	    "Accept: application/dns-message\r\nConnection: close\r\n\r\n",
	    enc, host);
	return n < 0 || (size_t)n >= len ? -1 : n;
}
