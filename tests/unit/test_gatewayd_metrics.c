/*
 * test_gatewayd_metrics.c -- the metrics' label values taken from the
 * children's events are plain words or "other", the table of series
 * stays within its bound whatever the events say, and the scrape
 * endpoint's reading of a request head.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

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
	static const char *const head[] = {
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n",
		"GET /other HTTP/1.0\r\n\r\n",
		"POST /metrics HTTP/1.0\r\n\r\n",
	};
	static const enum mreq want[] = { MREQ_METRICS, MREQ_MORE,
	    MREQ_NOT_FOUND, MREQ_BAD };
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(metrics_request(head[i], strlen(head[i])),
		    want[i]);
	(void)state;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
