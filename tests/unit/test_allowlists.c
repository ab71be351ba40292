/*
 * test_allowlists.c -- allow = [ "@NAME" ]: a list in allow.d beside the
 * configuration expands to its names (comments and blanks skipped, each
 * name once, checked as allow entries are); it is preferred over the
 * shipped lists; an unknown list, a bad line or a list naming a list is
 * an error at the config's file:line; and every list moat ships loads.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static char dir[64];

static void
put(const char *name, const char *text)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(fp = fopen(path, "w"));
	fputs(text, fp);
	fclose(fp);
}

/* A configuration with one allowlist sandbox whose allow is given. */
static struct moat_config *
load(const char *allow, struct moat_errors *errs)
{
	char text[2048], path[256];

	snprintf(text, sizeof(text),
	    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
	    "  dns: { upstream = [ \"203.0.113.53\" ]; };\n"
	    "  member_allow = [ \"@pypi\" ]; };\n"
	    "sandboxes = ( { name = \"web\"; mac = \"52:54:00:00:00:0a\";\n"
	    "  address = \"10.77.0.10\"; tap = \"mt-web\"; egress = \"allowlist\";\n"
	    "  allow = [ %s ]; } );\n", allow);
	put("moat.conf", text);
	snprintf(path, sizeof(path), "%s/moat.conf", dir);
	return config_load(path, NULL, errs);
}

static int
setup(void **state)
{
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/moat-lists.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/allow.d", dir);
	mkdir(path, 0755);
	put("allow.d/pypi.list", "# a comment\n\npypi.org   # the index\n"
	    "FILES.pythonhosted.org.\n pypi.org\n");
	put("allow.d/bad.list", "good.example\nbad..example\n");
	put("allow.d/nested.list", "@pypi\n");
	put("allow.d/broad.list", "*.com\n");
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
expands(void **state)
{
	struct moat_errors errs;
	struct moat_config *cfg = load("\"@pypi\", \"github.com\", \"pypi.org\"",
	    &errs);
	const struct moat_sandbox *sb;

	assert_non_null(cfg);
	sb = config_sandbox_by_name(cfg, "web");
	assert_int_equal(sb->allow.n, 3);
	assert_string_equal(sb->allow.v[0], "pypi.org");
	assert_string_equal(sb->allow.v[1], "files.pythonhosted.org");
	assert_string_equal(sb->allow.v[2], "github.com");
	/* gateway.member_allow takes lists too. */
	assert_int_equal(cfg->gw.member_allow.n, 2);
	assert_true(config_allow_covers(&cfg->gw.member_allow,
	    "files.pythonhosted.org"));
	config_errors_free(&errs);
	config_free(cfg);
}

static void
errors_at_file_line(void **state)
{
	struct moat_errors errs;
	char want[512];

	assert_null(load("\"@nosuch\"", &errs));
	assert_int_equal(errs.n, 1);
	snprintf(want, sizeof(want), "%s/moat.conf:6: sandbox \"web\": allow: "
	    "no list \"@nosuch\" (looked for %s/allow.d/nosuch.list and %s/"
	    "nosuch.list)", dir, dir, config_allow_datadir());
	assert_string_equal(errs.msg[0], want);
	config_errors_free(&errs);

	assert_null(load("\"@bad\"", &errs));
	assert_non_null(strstr(errs.msg[0], "moat.conf:6: sandbox \"web\": "
	    "allow: list \"@bad\": "));
	assert_non_null(strstr(errs.msg[0], "allow.d/bad.list:2: expected a "
	    "fully qualified host name"));
	config_errors_free(&errs);

	assert_null(load("\"@nested\"", &errs));
	assert_non_null(strstr(errs.msg[0], "nested.list:1: a list does not "
	    "name another list"));
	config_errors_free(&errs);

	assert_null(load("\"@broad\"", &errs));
	assert_non_null(strstr(errs.msg[0], "too broad"));
	config_errors_free(&errs);

	assert_null(load("\"@../etc/passwd\"", &errs));
	assert_non_null(strstr(errs.msg[0], "a list is named \"@NAME\""));
	config_errors_free(&errs);
}

/* Each list in data/allow.d loads and holds at least one name. */
static void
shipped_lists(void **state)
{
	static const char *const names[] = { "pypi", "npm", "github", "debian",
	    "crates", "go", "rubygems", "huggingface" };
	struct moat_strlist l;
	char ref[64], err[768];
	size_t i, j;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		memset(&l, 0, sizeof(l));
		snprintf(ref, sizeof(ref), "@%s", names[i]);
		/* "data/moat.conf": the lists beside it, in data/allow.d. */
		if (config_allow_list("data/moat.conf", ref, &l, err,
		    sizeof(err)) != 0)
			fail_msg("%s: %s", ref, err);
		assert_true(l.n > 0);
		for (j = 0; j < l.n; j++)
			free(l.v[j]);
		free(l.v);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(expands),
		cmocka_unit_test(errors_at_file_line),
		cmocka_unit_test(shipped_lists),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
