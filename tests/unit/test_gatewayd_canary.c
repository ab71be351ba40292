/*
 * test_gatewayd_canary.c -- the reader of the canary's scan report:
 * breaches counted and the first named, a failed control named only when
 * nothing breached, hostile bytes made printable and bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../gatewayd/parent/canary_report.h"

static void
parse(const char *s, struct canary_report *r)
{
	canary_report_parse(s, strlen(s), r);
}

static void
test_contained(void **state)
{
	struct canary_report r;

	(void)state;
	parse("containment-check: expect allowlist\n  ok     212 more probes "
	    "refused\n\n212 probes in 4.10 s: 0 breaches\n", &r);
	assert_int_equal(r.breaches, 0);
	assert_int_equal(r.failed, 0);
	assert_string_equal(r.first, "");
	assert_int_equal(r.summary, 1);
}

static void
test_breach_first(void **state)
{
	struct canary_report r;

	(void)state;
	parse("  FAILED udp   10.77.0.1:53     filtered   no reply\n"
	    "  BREACH tcp   192.168.77.2:80   connected  banner lan-http\n"
	    "  BREACH tcp   192.168.77.2:22   connected\n", &r);
	assert_int_equal(r.breaches, 2);
	assert_int_equal(r.failed, 1);
	assert_string_equal(r.first,
	    "BREACH tcp 192.168.77.2:80 connected banner lan-http");
	assert_int_equal(r.summary, 0);
}

static void
test_failed_only(void **state)
{
	struct canary_report r;

	(void)state;
	parse("  FAILED dns   allowed.test   timeout", &r);	/* no newline */
	assert_int_equal(r.breaches, 0);
	assert_int_equal(r.failed, 1);
	assert_string_equal(r.first, "FAILED dns allowed.test timeout");
}

static void
test_hostile(void **state)
{
	struct canary_report r;
	char buf[600];

	(void)state;
	memset(buf, 'A', sizeof(buf));
	memcpy(buf, "  BREACH \x1b[31m\r", 16);
	buf[sizeof(buf) - 1] = '\n';
	canary_report_parse(buf, sizeof(buf), &r);
	assert_int_equal(r.breaches, 1);
	assert_int_equal(strlen(r.first), CANARY_PROBE_LEN - 1);
	assert_memory_equal(r.first, "BREACH ?[31m?", 13);
	/* A line that only mentions a breach is no breach. */
	parse("x BREACH tcp 1.2.3.4:80\n BREACH\n", &r);
	assert_int_equal(r.breaches, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contained),
		cmocka_unit_test(test_breach_first),
		cmocka_unit_test(test_failed_only),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
