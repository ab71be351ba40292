/*
 * test_gatewayd_web.c -- what moat-web reads of a request itself: form
 * fields (percent-decoded, no control characters, bounded) and the
 * session cookie (exactly 64 hex digits, found among others).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "web/web.h"

static int
get(const char *body, const char *name, char *out, size_t room)
{
	return web_form_get(body, strlen(body), name, out, room);
}

static void
form_fields(void **state)
{
	char out[64];

	assert_int_equal(get("sandbox=dev&name=a.example.test&for=1h", "name",
	    out, sizeof(out)), 0);
	assert_string_equal(out, "a.example.test");
	assert_int_equal(get("sandbox=dev&name=x", "sandbox", out,
	    sizeof(out)), 0);
	assert_string_equal(out, "dev");
	assert_int_equal(get("ports=tcp%2F443%2Ctcp%2f8443", "ports", out,
	    sizeof(out)), 0);
	assert_string_equal(out, "tcp/443,tcp/8443");
	assert_int_equal(get("a=b+c", "a", out, sizeof(out)), 0);
	assert_string_equal(out, "b c");
	/* A prefix of a field's name is not the field. */
	assert_int_equal(get("names=x", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=", "name", out, sizeof(out)), 0);
	assert_string_equal(out, "");
}

static void
form_refusals(void **state)
{
	char out[8];

	assert_int_equal(get("name=a%0Ab", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=a%00b", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=a%7f", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=%4", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=%zz", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=12345678", "name", out, sizeof(out)), -1);
	assert_int_equal(get("name=1234567", "name", out, sizeof(out)), 0);
}

static void
cookie(void **state)
{
	char hex[65], tok[65], hdr[200];

	memset(hex, 'a', 64);
	hex[64] = '\0';
	snprintf(hdr, sizeof(hdr), "x=1; moat_session=%s; y=2", hex);
	assert_int_equal(web_cookie_session(hdr, strlen(hdr), tok), 0);
	assert_string_equal(tok, hex);
	snprintf(hdr, sizeof(hdr), "moat_session=%s", hex);
	assert_int_equal(web_cookie_session(hdr, strlen(hdr), tok), 0);
	snprintf(hdr, sizeof(hdr), "moat_session=%sa", hex);
	assert_int_equal(web_cookie_session(hdr, strlen(hdr), tok), -1);
	snprintf(hdr, sizeof(hdr), "moat_session=%.63sz", hex);
	assert_int_equal(web_cookie_session(hdr, strlen(hdr), tok), -1);
	snprintf(hdr, sizeof(hdr), "not_moat_session=%s", hex);
	assert_int_equal(web_cookie_session(hdr, strlen(hdr), tok), -1);
	assert_int_equal(web_cookie_session("", 0, tok), -1);
}

/* What the audit log gained between two reads of its last lines. */
static void
log_added(void **state)
{
	bool all;

	(void)state;
	/* Nothing yet: all of it. */
	assert_string_equal(web_log_added(NULL, "{a}\n{b}", &all), "{a}\n{b}");
	assert_true(all);
	/* Grown by a line, twice the same line, or nothing. */
	assert_string_equal(web_log_added("{a}\n{b}", "{a}\n{b}\n{c}", &all),
	    "{c}");
	assert_false(all);
	assert_string_equal(web_log_added("{a}\n{b}", "{a}\n{b}\n{b}", &all),
	    "{b}");
	assert_false(all);
	assert_string_equal(web_log_added("{a}\n{b}", "{a}\n{b}", &all), "");
	assert_false(all);
	/* The window moved on: the first line fell out of it. */
	assert_string_equal(web_log_added("{a}\n{b}\n{c}",
	    "{b}\n{c}\n{d}\n{e}", &all), "{d}\n{e}");
	assert_false(all);
	/* An empty log, then its first line. */
	assert_string_equal(web_log_added("", "{a}", &all), "{a}");
	assert_false(all);
	/* A rotated log, and a line that only begins like the old last. */
	assert_string_equal(web_log_added("{a}\n{b}", "{x}", &all), "{x}");
	assert_true(all);
	assert_string_equal(web_log_added("{a}\n{b}", "{a}\n{b}c", &all),
	    "{a}\n{b}c");
	assert_true(all);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(form_fields),
		cmocka_unit_test(form_refusals),
		cmocka_unit_test(cookie),
		cmocka_unit_test(log_added),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
