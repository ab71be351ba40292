/*
 * test_json.c -- lib/json.c: one escaping for every JSON moat writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"

static void
check(const char *in, const char *want)
{
	char *e = json_escape(in);

	assert_string_equal(e, want);
	free(e);
}

static void
escapes_quotes_and_backslash(void **state)
{
	(void)state;
	check("plain text", "plain text");
	check("a\"b", "a\\\"b");
	check("a\\b", "a\\\\b");
	check("\"\\\"", "\\\"\\\\\\\"");
	check("", "");
}

static void
control_chars_as_u00xx(void **state)
{
	(void)state;
	check("\n", "\\u000a");
	check("a\tb\rc", "a\\u0009b\\u000dc");
	check("\x01\x1f\x7f", "\\u0001\\u001f\\u007f");
}

static void
utf8_as_code_points(void **state)
{
	(void)state;
	check("caf\xc3\xa9", "caf\\u00e9");		/* é */
	check("\xe2\x82\xac", "\\u20ac");			/* € */
	check("\xf0\x9f\x98\x80", "\\ud83d\\ude00");	/* U+1F600 */
}

/* Broken UTF-8 keeps its bytes, each as \u00XX; nothing is replaced. */
static void
broken_utf8_bytewise(void **state)
{
	(void)state;
	check("\xff", "\\u00ff");
	check("\xc3", "\\u00c3");			/* truncated */
	check("\xc0\xaf", "\\u00c0\\u00af");		/* overlong '/' */
	check("\xed\xa0\x80", "\\u00ed\\u00a0\\u0080");	/* a surrogate */
	check("\xe2\x82x", "\\u00e2\\u0082x");
}

static void
output_is_printable_ascii(void **state)
{
	char in[256], *e;
	int i;

	(void)state;
	for (i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = '\0';
	e = json_escape(in);
	for (char *p = e; *p != '\0'; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	free(e);
}

static void
builder_objects(void **state)
{
	struct json j = JSON_INIT;

	(void)state;
	json_begin(&j);
	json_kstr(&j, "event", "dns-refused");
	json_kstr(&j, "name", "a\"b.example");
	json_kraw(&j, "port", "443");
	json_kstr(&j, "none", NULL);
	json_key(&j, "inner");
	json_begin(&j);
	json_kstr(&j, "k", "v");
	json_end(&j);
	json_kstr(&j, "after", "x");
	json_end(&j);
	assert_string_equal(j.buf, "{\"event\":\"dns-refused\","
	    "\"name\":\"a\\\"b.example\",\"port\":443,\"none\":null,"
	    "\"inner\":{\"k\":\"v\"},\"after\":\"x\"}");
	assert_int_equal(j.len, strlen(j.buf));
	json_free(&j);
	json_free(&j);		/* twice is harmless */
}

static void
fputs_quotes_and_null(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	json_fputs(f, "x\"y\n");
	fputc(' ', f);
	json_fputs(f, NULL);
	fclose(f);
	assert_string_equal(buf, "\"x\\\"y\\u000a\" null");
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes_quotes_and_backslash),
		cmocka_unit_test(control_chars_as_u00xx),
		cmocka_unit_test(utf8_as_code_points),
		cmocka_unit_test(broken_utf8_bytewise),
		cmocka_unit_test(output_is_printable_ascii),
		cmocka_unit_test(builder_objects),
		cmocka_unit_test(fputs_quotes_and_null),
	};
	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
