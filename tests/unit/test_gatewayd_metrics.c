/*
 * test_gatewayd_metrics.c -- the metrics' label values taken from the
 * children's events are plain words or "other", the table of series
 * stays within its bound whatever the events say, and the scrape
 * endpoint's reading of a request head and its choice of a slot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "addr.h"
#include "../../gatewayd/metrics/metrics.h"
#include "ranges.h"

static void
test_label(void **state)
{
	char out[64];
	const char *j;

	(void)state;
	j = "{\"event\":\"dns-refused\",\"sandbox\":\"web\"}";
	metrics_label(j, strlen(j), "event", out, sizeof(out));
	assert_string_equal(out, "dns-refused");
	metrics_label(j, strlen(j), "secret", out, sizeof(out));
	assert_string_equal(out, "");
	/* Quotes, spaces, escapes, braces or newlines never reach a label. */
	j = "{\"event\":\"x\\\"} 1\\nmoat_up 0\",\"sandbox\":\"a b\"}";
	metrics_label(j, strlen(j), "event", out, sizeof(out));
	assert_string_equal(out, "other");
	metrics_label(j, strlen(j), "sandbox", out, sizeof(out));
	assert_string_equal(out, "other");
	/* Unterminated, or longer than a label may be. */
	j = "{\"event\":\"abc";
	metrics_label(j, strlen(j), "event", out, sizeof(out));
	assert_string_equal(out, "other");
	j = "{\"event\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}";
	metrics_label(j, strlen(j), "event", out, sizeof(out));
	assert_string_equal(out, "other");
}

static void
test_bound(void **state)
{
	struct metrics *m = metrics_new();
	char j[128];
	int i;

	(void)state;
	for (i = 0; i < 3 * METRICS_MAX_SERIES; i++) {
		int n = snprintf(j, sizeof(j), "{\"event\":\"refusal\","
		    "\"sandbox\":\"s%d\"}", i);
		metrics_count(m, "nflog", j, (size_t)n);
	}
	assert_int_equal(metrics_nseries(m), METRICS_MAX_SERIES);
	/* Known series still count once the table is full. */
	metrics_count(m, "nflog", "{\"event\":\"refusal\",\"sandbox\":\"s1\"}",
	    strlen("{\"event\":\"refusal\",\"sandbox\":\"s1\"}"));
	assert_int_equal(metrics_nseries(m), METRICS_MAX_SERIES);
	/* An event without a name is not counted. */
	metrics_count(m, "nflog", "{}", 2);
	metrics_free(m);
}

static void
test_request(void **state)
{
	static const struct {
		const char	*head;
		enum mreq	 want;
	} t[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", MREQ_METRICS },
		{ "GET /metrics?name[]=moat_up HTTP/1.1\r\n\r\n", MREQ_METRICS },
		{ "GET /metrics HTTP/1.0\n\n", MREQ_METRICS },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", MREQ_HEAD },
		{ "GET /metrics HTTP/1.1\r\n", MREQ_MORE },
		{ "POST /metrics HTTP/1.0\r\n", MREQ_MORE },
		/* gatewayd(8): any other path is 404, GET / too */
		{ "GET / HTTP/1.1\r\n\r\n", MREQ_NOT_FOUND },
		{ "GET /other HTTP/1.0\r\n\r\n", MREQ_NOT_FOUND },
		{ "GET /metricsx HTTP/1.0\r\n\r\n", MREQ_NOT_FOUND },
		{ "GET /metrics/ HTTP/1.0\r\n\r\n", MREQ_NOT_FOUND },
		/* any other method 405, whatever the path */
		{ "POST /metrics HTTP/1.0\r\n\r\n", MREQ_NOT_ALLOWED },
		{ "DELETE / HTTP/1.1\r\n\r\n", MREQ_NOT_ALLOWED },
		{ "OPTIONS * HTTP/1.1\r\n\r\n", MREQ_NOT_ALLOWED },
		/* and what is not an HTTP/1.x request line 400 */
		{ "GET /metrics\r\n\r\n", MREQ_BAD },
		{ "GET  HTTP/1.1\r\n\r\n", MREQ_BAD },
		{ "get /metrics HTTP/1.1\r\n\r\n", MREQ_BAD },
		{ "GET /metrics HTTP/2.0\r\n\r\n", MREQ_BAD },
		{ "GET /metrics HTTP/1.1 x\r\n\r\n", MREQ_BAD },
		{ "\r\n\r\n", MREQ_BAD },
		{ "\n\n", MREQ_BAD },
	};
	char big[METRICS_HEAD_MAX + 8];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (metrics_request(t[i].head, strlen(t[i].head)) != t[i].want)
			fail_msg("%s: got %d, want %d", t[i].head,
			    metrics_request(t[i].head, strlen(t[i].head)),
			    t[i].want);
	}
	/* A head that does not end within the bound is refused. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 27);
	assert_int_equal(metrics_request(big, METRICS_HEAD_MAX - 1), MREQ_MORE);
	assert_int_equal(metrics_request(big, METRICS_HEAD_MAX), MREQ_BAD);
}

static struct moat_addr
A(const char *s)
{
	struct moat_addr a;

	assert_int_equal(addr_parse(s, &a), 0);
	return a;
}

static struct moat_prefix
P(const char *s)
{
	struct moat_prefix p;

	assert_int_equal(prefix_parse(s, &p), 0);
	return p;
}

/* Fill n slots from src, each one accepted at the given time. */
static void
fill(struct mslot *s, size_t from, size_t n, const char *src, bool reading,
    uint64_t since)
{
	size_t i;

	for (i = from; i < from + n; i++)
		s[i] = (struct mslot){ true, reading, A(src), since + i };
}

static void
test_admit(void **state)
{
	struct mslot s[METRICS_CLIENTS];
	struct moat_prefix allow[2];
	struct moat_addr src;
	enum madmit why;
	size_t shared = METRICS_CLIENTS - METRICS_RESERVED;
	int i;

	(void)state;
	memset(s, 0, sizeof(s));
	/* No allow list: any source, the shared slots first. */
	src = A("192.168.100.9");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, NULL, 0, &src, &why),
	    0);
	/* One source holds at most METRICS_PER_SOURCE. */
	fill(s, 0, METRICS_PER_SOURCE, "192.168.100.9", true, 100);
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, NULL, 0, &src, &why),
	    -1);
	assert_int_equal(why, MADMIT_PER_SOURCE);
	/* An allow list refuses every other source, before any slot. */
	allow[0] = P("192.168.100.5");
	allow[1] = P("192.168.200.0/24");
	src = A("192.168.100.6");
	memset(s, 0, sizeof(s));
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    -1);
	assert_int_equal(why, MADMIT_SOURCE);
	src = A("2001:db8::5");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    -1);
	/* A network's member takes a shared slot, a named scraper a kept one. */
	src = A("192.168.200.7");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    0);
	src = A("192.168.100.5");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    (int)shared);
	/* Every shared slot held by sources that have sent their request:
	 * another network member is refused, the named scraper is not. */
	for (i = 0; i < (int)shared; i++) {
		char a[32];

		snprintf(a, sizeof(a), "192.168.200.%d", 10 + i);
		fill(s, (size_t)i, 1, a, false, 0);
	}
	src = A("192.168.200.7");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    -1);
	assert_int_equal(why, MADMIT_FULL);
	src = A("192.168.100.5");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    (int)shared);
	/* Slots whose head is still missing give way, the oldest first. */
	s[3].reading = true;
	s[3].since = 50;
	s[5].reading = true;
	s[5].since = 40;
	src = A("192.168.200.7");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    5);
	/* The kept slots all taken, a scraper takes a shared one (here the
	 * oldest unfinished). */
	fill(s, shared, METRICS_RESERVED, "192.168.100.5", false, 0);
	s[shared].src = A("192.168.100.4");
	allow[1] = P("192.168.100.4");
	src = A("192.168.100.5");
	assert_int_equal(metrics_admit(s, METRICS_CLIENTS, allow, 2, &src, &why),
	    5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_admit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
