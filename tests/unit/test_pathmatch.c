/*
 * test_pathmatch.c -- request rules of a secret (lib/pathmatch.c): the
 * normal form of a path, the tricks that have none, and segment globs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pathmatch.h"

/* Does rule allow METHOD TARGET (a raw origin-form target)? */
static bool
allows(const char *rule, const char *method, const char *target)
{
	char path[PM_MAX_PATH];
	const char *q;
	size_t ql;
	int n;

	n = pm_normalise(target, strlen(target), path, sizeof(path), &q, &ql);
	if (n < 0)
		return false;
	return pm_rule_match(rule, method, strlen(method), path, (size_t)n, q,
	    ql);
}

static void
test_normal_form(void **state)
{
	static const struct { const char *in, *out; } ok[] = {
		{ "/", "/" },
		{ "/repos/acme/x", "/repos/acme/x" },
		{ "/repos/%61cme/x", "/repos/acme/x" },
		{ "/repos/acme/a%7eb", "/repos/acme/a~b" },
		{ "/a%2a", "/a%2A" },		/* reserved: kept, hex upper */
		{ "/a%20b", "/a%20b" },
		{ "/repos/acme/?x=1", "/repos/acme/" },
		{ "/a/.b/..c", "/a/.b/..c" },	/* not dot segments */
		{ "/a/%3b..", "/a/%3B.." },
		{ "/a/100%25", "/a/100%25" },	/* a '%' itself is fine */
		{ "/a/%25zz", "/a/%25zz" },
	};
	static const char *bad[] = {
		"/repos/acme/../other", "/repos/acme/%2e%2e/other",
		"/repos/acme/%2E%2e/other", "/repos/./acme", "//repos/other",
		"/repos//other", "/repos/acme%2fother", "/repos/acme%2Fx",
		"/a\\b", "/a%5cb", "/a%zz", "/a%2", "/a%", "/a b", "/a#f",
		"repos", "", "/a/..;/b", "/a/.", "/..",
		/* an encoded ';' before Tomcat-style path parameters */
		"/a/..%3b/b", "/a/..%3B", "/a/%2e%2e%3bx/b", "/a/.%3b",
		/* an escape of '%' that starts another escape: an origin
		 * that decodes twice reads "..", '/' or a NUL */
		"/a/%252e%252e", "/a/%252E%252E/b", "/a%252fb", "/a/%2500",
		"/a/%255c", "/a/%25%32%65",
	};
	char out[PM_MAX_PATH];
	const char *q;
	size_t i, ql;
	int n;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		n = pm_normalise(ok[i].in, strlen(ok[i].in), out, sizeof(out),
		    &q, &ql);
		assert_int_equal(n, (int)strlen(ok[i].out));
		assert_string_equal(out, ok[i].out);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = pm_normalise(bad[i], strlen(bad[i]), out, sizeof(out), &q,
		    &ql);
		if (n >= 0)
			fail_msg("\"%s\" has no normal form, got \"%s\"",
			    bad[i], out);
	}
	/* PM_MAX_SEGS segments and a trailing slash (fuzz_pathmatch). */
	memset(out, 0, sizeof(out));
	for (i = 0; i < PM_MAX_SEGS; i++)
		strcat(out, "/a");
	strcat(out, "/");
	assert_int_equal(pm_normalise(out, strlen(out), out + 1024, 1024, &q,
	    &ql), -1);
	/* A NUL inside the target (found by fuzz_pathmatch). */
	assert_int_equal(pm_normalise("/a/b\0c", 6, out, sizeof(out), &q, &ql),
	    -1);
}

static void
test_issue_examples(void **state)
{
	const char *get = "GET /repos/acme/*";
	const char *post = "POST /repos/acme/*/issues/*/comments";

	(void)state;
	assert_true(allows(get, "GET", "/repos/acme/widgets"));
	assert_true(allows(get, "GET", "/repos/acme/widgets?per_page=5"));
	assert_true(allows(get, "GET", "/repos/%61cme/widgets"));
	assert_false(allows(get, "POST", "/repos/acme/widgets"));
	assert_false(allows(get, "DELETE", "/repos/acme/widgets"));
	assert_false(allows(get, "get", "/repos/acme/widgets"));
	assert_false(allows(get, "GET", "/repos/other/widgets"));
	assert_false(allows(get, "GET", "/repos/acme/widgets/issues"));
	assert_false(allows(get, "GET", "/repos/acme"));
	assert_false(allows(get, "GET", "/repos/acme/"));
	assert_false(allows(get, "GET", "/repos/acme/../other"));
	assert_false(allows(get, "GET", "/repos/acme/x/../../other/y"));
	assert_false(allows(get, "GET", "/repos/acme/%2e%2e"));
	assert_false(allows(get, "GET", "//repos/acme/x"));
	assert_false(allows(get, "GET", "/Repos/acme/x"));
	assert_false(allows(get, "GET", "/repos/ACME/x"));
	assert_false(allows(get, "GET", "/repos/acme%2fother"));
	/* the tricks that held: a '*' never takes a dot segment, whatever
	 * its spelling */
	assert_false(allows(get, "GET", "/repos/acme/.."));
	assert_false(allows(get, "GET", "/repos/acme/%2E%2E"));
	assert_false(allows(get, "GET", "/repos/acme/.%2e"));
	assert_false(allows(get, "GET", "/repos/acme/..;"));
	assert_false(allows(get, "GET", "/repos/acme/..;x"));
	assert_false(allows(get, "GET", "/repos/acme/..%3b"));
	assert_false(allows(get, "GET", "/repos/acme/%252e%252e"));
	assert_false(allows(get, "GET", "/repos/acme%5cother"));
	assert_false(allows(get, "GET", "/repos/acme/x%5c..%5c..%5cadmin"));
	assert_false(allows(get, "GET", "/repos/acme\\x"));
	assert_false(allows(get, "GET", "/repos//acme/x"));
	assert_false(allows(get, "GET", "/repos/acme/x/"));
	assert_false(allows(get, "GET", "/REPOS/acme/x"));
	assert_false(allows(get, "GET", "/repos/acme/x#frag"));
	assert_true(allows(get, "GET", "/repos/acme/%2E%2Ex"));	/* not dots */
	assert_true(allows(post, "POST", "/repos/acme/w/issues/12/comments"));
	assert_false(allows(post, "POST", "/repos/acme/w/issues/12/comments/1"));
	assert_false(allows(post, "POST", "/repos/acme/w/pulls/12/comments"));
	assert_false(allows(post, "GET", "/repos/acme/w/issues/12/comments"));
}

static void
test_globs(void **state)
{
	(void)state;
	assert_true(allows("GET /repos/**", "GET", "/repos"));
	assert_true(allows("GET /repos/**", "GET", "/repos/a/b/c"));
	assert_false(allows("GET /repos/**", "GET", "/other/a"));
	assert_true(allows("GET /a/**/z", "GET", "/a/z"));
	assert_true(allows("GET /a/**/z", "GET", "/a/b/c/z"));
	assert_false(allows("GET /a/**/z", "GET", "/a/b/c/z/y"));
	assert_true(allows("GET /a/**/*/z", "GET", "/a/b/z"));
	assert_false(allows("GET /a/**/*/z", "GET", "/a/z"));
	assert_true(allows("GET /**/**/x", "GET", "/p/q/x"));
	assert_true(allows("* /v1/*", "PATCH", "/v1/x"));
	assert_true(allows("GET /", "GET", "/"));
	assert_false(allows("GET /", "GET", "/a"));
	assert_true(allows("GET /**", "GET", "/"));
	/* A query only when the pattern has one. */
	assert_true(allows("GET /s?q=*", "GET", "/s?q=moat"));
	assert_true(allows("GET /s?q=*", "GET", "/s?q=%6Doat"));
	assert_false(allows("GET /s?q=*", "GET", "/s?x=1"));
	assert_false(allows("GET /s?q=*", "GET", "/s"));
	assert_true(allows("GET /s?state=open", "GET", "/s?state=open"));
	assert_false(allows("GET /s?state=open", "GET", "/s?state=open&x"));
}

static void
test_rule_check(void **state)
{
	static const char *good[] = {
		"GET /repos/acme/*", "POST /repos/acme/*/issues/*/comments",
		"* /**", "GET /", "GET /a%20b", "GET /s?q=*", "DELETE /x/**/y",
	};
	static const char *bad[] = {
		"", "GET", "GET ", "/repos", "get /x", "GET  /x", "GET x",
		"GET /repos/ac*", "GET /repos/***", "GET /a/../b", "GET //a",
		"GET /a/", "GET /%61", "GET /a%2fb", "GET /a b", "G3T /x",
		"VERYLONGMETHODNAMEX /x", "GET /a%zz", "GET /s?a b",
	};
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (pm_rule_check(good[i], err, sizeof(err)) != 0)
			fail_msg("\"%s\": %s", good[i], err);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (pm_rule_check(bad[i], err, sizeof(err)) == 0)
			fail_msg("\"%s\" accepted", bad[i]);
		assert_true(err[0] != '\0');
		/* A bad rule matches nothing, whatever the request. */
		assert_false(pm_rule_match(bad[i], "GET", 3, "/x", 2, NULL, 0));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normal_form),
		cmocka_unit_test(test_issue_examples),
		cmocka_unit_test(test_globs),
		cmocka_unit_test(test_rule_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
