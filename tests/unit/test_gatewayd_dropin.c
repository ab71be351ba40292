/*
 * test_gatewayd_dropin.c -- the edit `gatewayd ctl allow` and `unallow`
 * make to a sandbox's file: only the top-level allow list changes, byte
 * for byte everything else stays (comments, other keys, an allow_ports or
 * a string that merely contains "allow"); a file without allow gets one;
 * text that cannot be read as a drop-in is refused, not guessed at.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../gatewayd/parent/dropin.h"

static char *
edit(const char *text, const char *add, const char *del, bool *found)
{
	const char *a[1] = { add }, *d[1] = { del };
	char why[256];
	bool f = false;

	return dropin_allow_edit(text, a, add ? 1 : 0, d, del ? 1 : 0,
	    found ? found : &f, why, sizeof(why));
}

static void
adds_in_place(void **state)
{
	const char *in = "# top comment, allow = [ \"x\" ] here is no key\n"
	    "mac = \"52:54:00:00:00:0d\";\nallow_ports = [ \"tcp/443\" ];\n"
	    "allow = [ \"pypi.org\", /* c */ \"*.github.com\" ];  # tail\n"
	    "owner = \"alice\";\n";
	char *out = edit(in, "open.test", NULL, NULL);

	assert_non_null(out);
	assert_string_equal(out, "# top comment, allow = [ \"x\" ] here is no "
	    "key\nmac = \"52:54:00:00:00:0d\";\nallow_ports = [ \"tcp/443\" ];\n"
	    "allow = [ \"pypi.org\", \"*.github.com\", \"open.test\" ];  # tail\n"
	    "owner = \"alice\";\n");
	free(out);
	/* Already there (in any case): unchanged list. */
	out = edit("allow: [ \"Open.test\" ];\n", "open.test", NULL, NULL);
	assert_string_equal(out, "allow: [ \"Open.test\" ];\n");
	free(out);
}

static void
removes(void **state)
{
	bool found;
	char *out;

	out = edit("allow = [ \"a.test\", \"b.test\" ];\n", NULL, "a.test",
	    &found);
	assert_true(found);
	assert_string_equal(out, "allow = [ \"b.test\" ];\n");
	free(out);
	out = edit("allow = [ \"b.test\" ];\n", NULL, "a.test", &found);
	assert_false(found);
	free(out);
}

static void
appends_when_missing(void **state)
{
	char *out = edit("egress = \"allowlist\";", "a.test", NULL, NULL);

	assert_string_equal(out, "egress = \"allowlist\";\nallow = [ \"a.test\" ];\n");
	free(out);
	/* allow inside a group is not the sandbox's top-level key. */
	out = edit("x = { allow = [ \"z\" ]; };\n", "a.test", NULL, NULL);
	assert_string_equal(out, "x = { allow = [ \"z\" ]; };\nallow = [ \"a.test\" ];\n");
	free(out);
}

static void
refuses_unreadable(void **state)
{
	assert_null(edit("allow = [ \"a.test\" \n", "b", NULL, NULL));
	assert_null(edit("allow = \"a.test\";\n", "b", NULL, NULL));
	assert_null(edit("allow = [ 1, 2 ];\n", "b", NULL, NULL));
	assert_null(edit("/* open comment\nallow = [ ];\n", "b", NULL, NULL));
	assert_null(edit("mac = \"unterminated;\n", "b", NULL, NULL));
	assert_null(edit("x = ( 1, 2;\n", "b", NULL, NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(adds_in_place),
		cmocka_unit_test(removes),
		cmocka_unit_test(appends_when_missing),
		cmocka_unit_test(refuses_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
