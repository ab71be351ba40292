/*
 * test_proxy_http.c -- the strict HTTP/1.1 head parser and the chunked
 * decoder: good shapes parse with the right framing, every smuggling
 * shape is refused with its specific error.  The reason phrases the proxy
 * sends, and the requests it never sends with a secret (method overrides,
 * an encoded NUL in the path).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../gatewayd/proxy/http.h"

static struct http_head h;

static enum http_err
req(const char *s)
{
	return http_parse_request(s, strlen(s), &h);
}

static void
test_good_request(void **state)
{
	assert_int_equal(req("POST /v1/x HTTP/1.1\r\nHost: api.test\r\n"
	    "Content-Length: 12\r\nConnection: keep-alive\r\n\r\nbody"), HTTP_OK);
	assert_int_equal(h.body, BODY_LENGTH);
	assert_int_equal(h.length, 12);
	assert_false(h.close);
	assert_int_equal(h.headlen, strlen("POST /v1/x HTTP/1.1\r\nHost: "
	    "api.test\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n"));
	assert_int_equal(req("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
	    "chunked\r\nExpect: 100-continue\r\n\r\n"), HTTP_OK);
	assert_int_equal(h.body, BODY_CHUNKED);
	assert_true(h.expect100);
	assert_int_equal(req("GET / HTTP/1.0\r\n\r\n"), HTTP_OK);
	assert_true(h.close);
	assert_int_equal(req("GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade"
	    "\r\nUpgrade: websocket\r\n\r\n"), HTTP_OK);
	assert_true(h.upgrade);
}

static void
test_incomplete(void **state)
{
	assert_int_equal(req("GET / HTTP/1.1\r\nHost: a\r\n"), HTTP_INCOMPLETE);
	assert_int_equal(req("GET / HTTP/1.1\r\nHost: a\r\n\r"), HTTP_INCOMPLETE);
	assert_int_equal(req(""), HTTP_INCOMPLETE);
}

static void
test_smuggling(void **state)
{
	static const struct { const char *s; enum http_err e; } bad[] = {
	{ "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", HTTP_E_CLTE },
	{ "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	  "Content-Length: 1\r\n\r\n", HTTP_E_CL },
	{ "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", HTTP_E_CL },
	{ "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,1\r\n\r\n", HTTP_E_CL },
	{ "GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", HTTP_E_FOLD },
	{ "GET / HTTP/1.1\nHost: a\r\n\r\n", HTTP_E_CRLF },
	{ "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", HTTP_E_CRLF },
	{ "GET / HTTP/1.1\r\nHost : a\r\n\r\n", HTTP_E_FIELD },
	{ "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", HTTP_E_TE },
	{ "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", HTTP_E_TE },
	{ "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_E_TE },
	{ "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", HTTP_E_HOST },
	{ "GET / HTTP/1.1\r\n\r\n", HTTP_E_HOST },
	{ "GET / HTTP/2.0\r\n\r\n", HTTP_E_VERSION },
	{ "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_LINE },
	{ "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_LINE },
	{ "GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n", HTTP_E_FIELD },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("case %zu\n", i);
		assert_int_equal(req(bad[i].s), bad[i].e);
	}
}

static void
test_limits(void **state)
{
	char big[HTTP_MAX_HEAD + 100];
	size_t i, o;

	o = (size_t)sprintf(big, "GET / HTTP/1.1\r\nHost: a\r\n");
	for (i = 0; i < HTTP_MAX_FIELDS + 1; i++)
		o += (size_t)sprintf(big + o, "X%zu: 1\r\n", i);
	strcpy(big + o, "\r\n");
	assert_int_equal(req(big), HTTP_E_FIELDS);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	assert_int_equal(http_parse_request(big, sizeof(big), &h), HTTP_E_TOOBIG);
}

static void
test_response(void **state)
{
	const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";

	assert_int_equal(http_parse_response(r, strlen(r), false, &h), HTTP_OK);
	assert_int_equal(h.body, BODY_LENGTH);
	assert_int_equal(http_parse_response(r, strlen(r), true, &h), HTTP_OK);
	assert_int_equal(h.body, BODY_NONE);
	r = "HTTP/1.0 200 OK\r\n\r\n";
	assert_int_equal(http_parse_response(r, strlen(r), false, &h), HTTP_OK);
	assert_int_equal(h.body, BODY_CLOSE);
	r = "HTTP/1.1 204\r\n\r\n";
	assert_int_equal(http_parse_response(r, strlen(r), false, &h), HTTP_OK);
	assert_int_equal(h.body, BODY_NONE);
	assert_int_equal(h.status, 204);
}

static void
test_authority(void **state)
{
	char host[256];
	uint16_t port;
	const char *a, *p;
	size_t al, pl;

	assert_int_equal(http_authority("API.Test:8443", 13, host, sizeof(host),
	    &port, 443), 0);
	assert_string_equal(host, "api.test");
	assert_int_equal(port, 8443);
	assert_int_equal(http_authority("[::1]:80", 8, host, sizeof(host), &port,
	    0), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(http_authority("a.test:0", 8, host, sizeof(host), &port,
	    0), -1);
	assert_int_equal(http_authority("a b", 3, host, sizeof(host), &port, 0), -1);
	assert_int_equal(http_absolute("http://x.test/p?q", 17, &a, &al, &p, &pl), 0);
	assert_int_equal(al, 6);
	assert_int_equal(pl, 4);
	assert_int_equal(http_absolute("http://u@x.test/", 16, &a, &al, &p, &pl), -1);
}

static enum chunk_ret
feed_all(const char *s, char *out, size_t *outlen, size_t step)
{
	struct chunked c = { 0 };
	size_t i = 0, ol, used, total = 0;
	enum chunk_ret r = CHUNK_MORE;

	while (i < strlen(s) && r == CHUNK_MORE) {
		size_t n = strlen(s) - i < step ? strlen(s) - i : step;

		r = chunked_feed(&c, (const uint8_t *)s + i, n,
		    (uint8_t *)out + total, &ol, &used);
		total += ol;
		i += used;
	}
	*outlen = total;
	return r;
}

static void
test_chunked(void **state)
{
	char out[256];
	size_t ol, step;

	for (step = 1; step < 40; step++) {
		assert_int_equal(feed_all("5\r\nhello\r\n6;ext=1\r\n world\r\n"
		    "0\r\nTrailer: x\r\n\r\n", out, &ol, step), CHUNK_DONE);
		assert_int_equal(ol, 11);
		assert_memory_equal(out, "hello world", 11);
	}
	assert_int_equal(feed_all("-1\r\n", out, &ol, 64), CHUNK_ERROR);
	assert_int_equal(feed_all("5\nhello\r\n", out, &ol, 64), CHUNK_ERROR);
	assert_int_equal(feed_all("5\r\nhelloX\r\n", out, &ol, 64), CHUNK_ERROR);
	assert_int_equal(feed_all("1000000000000000\r\n", out, &ol, 64), CHUNK_ERROR);
	assert_int_equal(feed_all(" 5\r\nhello\r\n", out, &ol, 64), CHUNK_ERROR);
	assert_int_equal(feed_all("0\r\n folded\r\n\r\n", out, &ol, 64), CHUNK_ERROR);
	assert_int_equal(feed_all("5\r\nhel", out, &ol, 64), CHUNK_MORE);
}

/* Pipelined requests: each head parses on its own, its length says where
 * the next starts, and a body hides no request. */
static void
test_pipelined(void **state)
{
	const char *two = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
	    "DELETE /a HTTP/1.1\r\nHost: a\r\n\r\n";
	const char *body = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 31"
	    "\r\n\r\nDELETE /a HTTP/1.1\r\nHost: a\r\n\r\n";
	size_t first;

	(void)state;
	assert_int_equal(req(two), HTTP_OK);
	assert_memory_equal(h.method, "GET", 3);
	first = h.headlen;
	assert_int_equal(http_parse_request(two + first, strlen(two) - first,
	    &h), HTTP_OK);
	assert_int_equal(h.methodlen, 6);
	assert_int_equal(first + h.headlen, strlen(two));
	assert_int_equal(req(body), HTTP_OK);
	assert_int_equal(h.body, BODY_LENGTH);
	assert_int_equal(h.headlen + h.length, strlen(body));
}

static void
test_reason(void **state)
{
	(void)state;
	assert_string_equal(http_reason(200), "OK");
	assert_string_equal(http_reason(401), "Unauthorized");
	assert_string_equal(http_reason(429), "Too Many Requests");
	assert_string_equal(http_reason(101), "Switching Protocols");
	assert_string_equal(http_reason(299), "Success");
	assert_string_equal(http_reason(499), "Client Error");
	assert_string_equal(http_reason(599), "Server Error");
	assert_string_equal(http_reason(999), "Unknown");
}

/* sidestep TARGET [EXTRA FIELD LINE] -- http_sidestep's answer for a
 * GET of target. */
static const char *
sidestep(const char *target, const char *field)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "GET %s HTTP/1.1\r\nHost: a\r\n%s\r\n",
	    target, field);
	assert_int_equal(req(buf), HTTP_OK);
	return http_sidestep(&h, h.target, h.targetlen);
}

static void
test_sidestep(void **state)
{
	static const char *fields[] = {
		"X-HTTP-Method-Override: DELETE\r\n",
		"x-http-method: DELETE\r\n",
		"X-Method-Override: PUT\r\n",
		"X-HTTP-METHOD-OVERRIDE: GET\r\n",
	};
	static const char *queries[] = {
		"/a?_method=DELETE", "/a?x=1&_method=DELETE", "/a?x;_method=PUT",
		"/a?_method", "/a?%5Fmethod=DELETE", "/a?%5fMETHOD=x",
		"/a?_%6Dethod=x", "/a?.method=x", "/a?+method=x", "/a?%20method=x",
		"/a?[method=x",
	};
	static const char *fine[] = {
		"/a", "/a?method=DELETE", "/a?_methods=x", "/a?x_method=x",
		"/a?q=_method", "/a?%00=_method", "/a?q=%00", "/a%20b",
		"/a?_method%00=x",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		assert_non_null(strstr(sidestep("/a", fields[i]),
		    "method override header"));
	for (i = 0; i < sizeof(queries) / sizeof(queries[0]); i++)
		if (sidestep(queries[i], "") == NULL)
			fail_msg("%s: not refused", queries[i]);
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
		if (sidestep(fine[i], "X-HTTP-Method-Overrides: x\r\n") != NULL)
			fail_msg("%s: refused", fine[i]);
	assert_non_null(strstr(sidestep("/a%00/b", ""), "%00"));
	assert_non_null(strstr(sidestep("/a/x%00.json?q=1", ""), "%00"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_request),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_smuggling),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_response),
		cmocka_unit_test(test_authority),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_reason),
		cmocka_unit_test(test_sidestep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
