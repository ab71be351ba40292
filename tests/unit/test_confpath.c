/*
 * test_confpath.c -- the one place that names a sandbox's and a secret's
 * file: beside moat.conf as the loader reads them (a bare moat.conf has
 * its folders bare too), and never for a name that could lead out of the
 * folder or that the loader would refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "confpath.h"

static void
expect_path(char *got, const char *want)
{
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void
paths(void **state)
{
	expect_path(confpath_sandbox("/etc/moat/moat.conf", "web"),
	    "/etc/moat/sandboxes.d/web.conf");
	expect_path(confpath_secret("/etc/moat/moat.conf", "gh-token_2"),
	    "/etc/moat/secrets.d/gh-token_2.conf");
	expect_path(confpath_sandbox("moat.conf", "web"),
	    "sandboxes.d/web.conf");
	expect_path(confpath_sandbox("/moat.conf", "web"),
	    "/sandboxes.d/web.conf");
	expect_path(confpath_dir("etc/moat.conf", "secrets.d"),
	    "etc/secrets.d");
}

static void
names(void **state)
{
	static const char *bad[] = { "", "../web", "a/b", ".web", "-web",
	    "_web", "Web", "web.conf", "a b",
	    "abcdefghijklmnopqrstuvwxyz0123456" };
	size_t i;

	assert_true(confpath_name_valid("web"));
	assert_true(confpath_name_valid("1-a_b"));
	assert_true(confpath_name_valid("abcdefghijklmnopqrstuvwxyz012345"));
	assert_false(confpath_name_valid(NULL));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(confpath_name_valid(bad[i]));
		assert_null(confpath_sandbox("/etc/moat/moat.conf", bad[i]));
		assert_null(confpath_secret("/etc/moat/moat.conf", bad[i]));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(paths),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
