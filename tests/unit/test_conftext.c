/*
 * test_conftext.c -- the list edits `gatewayd ctl allow` and `unallow`
 * make to a sandbox's file (conftext_list_edit): only the entries named
 * change; byte for byte everything else stays (comments, between entries
 * too, other keys, an allow_ports or a string that merely contains
 * "allow"); a file without the list gets one; text that cannot be read
 * as a drop-in is refused, not guessed at.
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

#include "conftext.h"

static char *
edit(const char *text, const char *add, const char *del, bool *found)
{
	const char *a[1] = { add }, *d[1] = { del };
	bool f = false;

	return conftext_list_edit(text, "allow", a, add ? 1 : 0, d,
	    del ? 1 : 0, found ? found : &f);
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
	    "allow = [ \"pypi.org\", /* c */ \"*.github.com\", \"open.test\" ];"
	    "  # tail\nowner = \"alice\";\n");
	free(out);
	/* Already there (in any case): unchanged list. */
	out = edit("allow: [ \"Open.test\" ];\n", "open.test", NULL, NULL);
	assert_string_equal(out, "allow: [ \"Open.test\" ];\n");
	free(out);
}

/* An admin's list, one entry a line with a comment each: a removal takes
 * its entry's line, every other comment stays where it was. */
static void
keeps_comments(void **state)
{
	const char *in = "# dev: hand-written\n"
	    "allow = [\n"
	    "  # the package index\n"
	    "  \"pypi.org\",          # index\n"
	    "  \"files.pythonhosted.org\", // files\n"
	    "  \"git.example.com:tcp/22\" /* ssh */\n"
	    "];\n"
	    "egress = \"allowlist\"; # end\n";
	const char *del[1] = { "files.pythonhosted.org" };
	const char *add[2] = { "open.test", "PyPI.org" };
	bool found[1];
	char *out;

	out = conftext_list_edit(in, "allow", add, 2, del, 1, found);
	assert_non_null(out);
	assert_true(found[0]);
	assert_string_equal(out, "# dev: hand-written\n"
	    "allow = [\n"
	    "  # the package index\n"
	    "  \"pypi.org\",          # index\n"
	    "  \"git.example.com:tcp/22\", \"open.test\" /* ssh */\n"
	    "];\n"
	    "egress = \"allowlist\"; # end\n");
	free(out);
	/* Taking the first out keeps what was before it. */
	del[0] = "pypi.org";
	out = conftext_list_edit(in, "allow", NULL, 0, del, 1, found);
	assert_true(found[0]);
	assert_string_equal(out, "# dev: hand-written\n"
	    "allow = [\n"
	    "  # the package index\n"
	    "  \"files.pythonhosted.org\", // files\n"
	    "  \"git.example.com:tcp/22\" /* ssh */\n"
	    "];\n"
	    "egress = \"allowlist\"; # end\n");
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
	out = edit("allow = [ \"a.test\", \"b.test\" ];\n", NULL, "B.test",
	    &found);
	assert_true(found);
	assert_string_equal(out, "allow = [ \"a.test\" ];\n");
	free(out);
	out = edit("allow = [ \"b.test\" ];\n", NULL, "a.test", &found);
	assert_false(found);
	assert_string_equal(out, "allow = [ \"b.test\" ];\n");
	free(out);
	out = edit("allow = [ \"b.test\" ];\n", NULL, "b.test", &found);
	assert_true(found);
	assert_string_equal(out, "allow = [ ];\n");
	free(out);
}

/* A name takes its entries with ports of their own; a name with ports
 * only that entry; a longer name that starts the same is another. */
static void
removes_ports(void **state)
{
	const char *in = "allow = [ \"a.test:tcp/22\", \"a.test.org\", "
	    "\"a.test:udp/53\", \"a.test\" ];\n";
	bool found;
	char *out;

	out = edit(in, NULL, "a.test", &found);
	assert_true(found);
	assert_string_equal(out, "allow = [ \"a.test.org\" ];\n");
	free(out);
	out = edit(in, NULL, "a.test:udp/53", &found);
	assert_true(found);
	assert_string_equal(out, "allow = [ \"a.test:tcp/22\", \"a.test.org\", "
	    "\"a.test\" ];\n");
	free(out);
	out = edit(in, NULL, "a.test:tcp/443", &found);
	assert_false(found);
	assert_string_equal(out, in);
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
	out = edit("allow = [];\n", "a.test", NULL, NULL);
	assert_string_equal(out, "allow = [ \"a.test\" ];\n");
	free(out);
	/* Escapes are read and written back. */
	out = edit("allow = [ \"a\\\\b\" ];\n", "q\"t", "a\\b", NULL);
	assert_string_equal(out, "allow = [ \"q\\\"t\" ];\n");
	free(out);
}

static void
refuses_unreadable(void **state)
{
	assert_null(edit("allow = [ \"a.test\" \n", "b", NULL, NULL));
	assert_null(edit("allow = \"a.test\";\n", "b", NULL, NULL));
	assert_null(edit("allow = [ 1, 2 ];\n", "b", NULL, NULL));
	assert_null(edit("allow = [ \"a\" \"b\", , \"c\" ];\n", "b", NULL,
	    NULL));
	assert_null(edit("/* open comment\nallow = [ ];\n", "b", NULL, NULL));
	assert_null(edit("mac = \"unterminated;\n", "b", NULL, NULL));
	assert_null(edit("x = ( 1, 2;\n", "b", NULL, NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(adds_in_place),
		cmocka_unit_test(keeps_comments),
		cmocka_unit_test(removes),
		cmocka_unit_test(removes_ports),
		cmocka_unit_test(appends_when_missing),
		cmocka_unit_test(refuses_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
