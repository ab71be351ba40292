/*
 * test_gatewayd_delta.c -- what a reload changed, decided once in the
 * parent (conf_delta): whether more than sandboxes and secrets changed,
 * which sandboxes in both have other settings (not those added or
 * removed), which secrets the proxy must cut for (redefined, removed, or
 * with a new file) and whose values it must be sent (new, or a new file).
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../gatewayd/parent/gw.h"
#include "../../gatewayd/parent/proc.h"
#include "../../gatewayd/parent/reload.h"
#include "../../gatewayd/parent/dnsd.h"
#include "../../gatewayd/parent/proxy.h"
#include "../../gatewayd/parent/audit.h"
#include "../../gatewayd/parent/reg.h"
#include "../../gatewayd/parent/ctl.h"
#include "../../gatewayd/parent/team.h"
#include "../../gatewayd/parent/console.h"
#include "../../gatewayd/parent/policy.h"
#include "../../gatewayd/parent/refused.h"
#include "../../gatewayd/parent/grant.h"
#include "../../gatewayd/parent/network.h"
#include "../../gatewayd/parent/drift.h"
#include "../../gatewayd/parent/hostnet.h"
#include "../../gatewayd/parent/egress.h"
#include "../../gatewayd/parent/budgets.h"
#include "../../gatewayd/parent/metrics.h"
#include "../../gatewayd/parent/ha.h"

static char dir[64];
static struct gw gw;

#define GATEWAY \
    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n" \
    "  bridge = \"moat0\"; dns: { upstream = [ \"203.0.113.53\" ]; };\n" \
    "  proxy: { port = 3128; per_sandbox = @P; }; };\n"
#define SECRET(n, host) \
    "  { name = \"" n "\"; file = \"@D/" n "\"; hosts = [ \"" host "\" ];" \
    " placeholder = \"moat-" n "-PLACEHOLDER\"; }"
#define SANDBOX(n, a, allow, sec) \
    "  { name = \"" n "\"; mac = \"52:54:00:00:00:" a "\";" \
    " address = \"10.77.0." a "\"; tap = \"mt-" n "\";" \
    " egress = \"allowlist\"; allow = [ " allow " ]; secrets = [ " sec " ]; }"

static void
write_file(const char *name, const char *text)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* The configuration: per_sandbox, then the secrets' and the sandboxes'
 * text; "@D" is the folder of the secret files, "@P" per_sandbox. */
static struct moat_config *
load(int per, const char *secrets, const char *sandboxes)
{
	char raw[8192], text[8192], path[128], *o = text;
	const char *p;
	struct moat_errors errs;
	struct moat_config *cfg;

	snprintf(raw, sizeof(raw), "%ssecrets = (\n%s\n);\n"
	    "sandboxes = (\n%s\n);\n", GATEWAY, secrets, sandboxes);
	for (p = raw; *p != '\0'; p++) {
		if (strncmp(p, "@D", 2) == 0)
			o += sprintf(o, "%s", dir), p++;
		else if (strncmp(p, "@P", 2) == 0)
			o += sprintf(o, "%d", per), p++;
		else
			*o++ = *p;
	}
	*o = '\0';
	write_file("moat.conf", text);
	snprintf(path, sizeof(path), "%s/moat.conf", dir);
	if ((cfg = config_load(path, NULL, &errs)) == NULL)
		config_errors_print(stderr, &errs);
	assert_non_null(cfg);
	return cfg;
}

static bool
has(char **v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

static int
setup(void **state)
{
	(void)state;
	memset(&gw, 0, sizeof(gw));
	snprintf(dir, sizeof(dir), "/tmp/moat-delta.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	write_file("api", "sk-api-1\n");
	write_file("gh", "sk-gh-1\n");
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	free(proxy_of(&gw)->secret_ids);
	proxy_of(&gw)->secret_ids = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	gw_modules_free(&gw);	/* each module's state, made on first use */
	return system(cmd) == 0 ? 0 : -1;
}

static const char two_secrets[] = SECRET("api", "api.test") ",\n"
    SECRET("gh", "api.github.test");
static const char sandboxes[] =
    SANDBOX("web", "10", "\"pypi.org\"", "\"api\"") ",\n"
    SANDBOX("dev", "11", "\"pypi.org\"", "\"gh\"");

/* Nothing changed: nothing to tell, no value to send again. */
static void
unchanged(void **state)
{
	struct moat_config *a = load(8, two_secrets, sandboxes);
	struct moat_config *b = load(8, two_secrets, sandboxes);
	struct gw_delta d;

	(void)state;
	proxy_of(&gw)->secret_ids = conf_secret_ids(a, &proxy_of(&gw)->nsecret_ids);
	conf_delta(&gw, a, b, &d);
	assert_false(d.basis);
	assert_false(d.secret_defs);
	assert_int_equal(d.nsandboxes, 0);
	assert_int_equal(d.nsecrets, 0);
	assert_int_equal(d.nvalues, 0);
	assert_int_equal(d.nids, 2);
	conf_delta_free(&d);
	/* Workers that never had values (none started) get every one. */
	free(proxy_of(&gw)->secret_ids);
	proxy_of(&gw)->secret_ids = NULL;
	conf_delta(&gw, a, b, &d);
	assert_int_equal(d.nvalues, 2);
	assert_int_equal(d.nsecrets, 2);
	conf_delta_free(&d);
	config_free(a);
	config_free(b);
}

/* web's list changed, dev removed, lab added: only web is named (the
 * proxy finds removed ones itself, and added ones have no connection). */
static void
sandboxes_changed(void **state)
{
	struct moat_config *a = load(8, two_secrets, sandboxes);
	struct moat_config *b = load(8, two_secrets,
	    SANDBOX("web", "10", "\"pypi.org\", \"x.test\"", "\"api\"") ",\n"
	    SANDBOX("lab", "12", "\"pypi.org\"", ""));
	struct gw_delta d;

	(void)state;
	proxy_of(&gw)->secret_ids = conf_secret_ids(a, &proxy_of(&gw)->nsecret_ids);
	conf_delta(&gw, a, b, &d);
	assert_false(d.basis);
	assert_false(d.secret_defs);
	assert_int_equal(d.nsandboxes, 1);
	assert_string_equal(d.sandboxes[0], "web");
	assert_int_equal(d.nsecrets, 0);
	assert_int_equal(d.nvalues, 0);
	conf_delta_free(&d);
	config_free(a);
	config_free(b);
}

/* A gateway setting: the basis changed (the workers drain). */
static void
basis_changed(void **state)
{
	struct moat_config *a = load(8, two_secrets, sandboxes);
	struct moat_config *b = load(9, two_secrets, sandboxes);
	struct gw_delta d;

	(void)state;
	proxy_of(&gw)->secret_ids = conf_secret_ids(a, &proxy_of(&gw)->nsecret_ids);
	conf_delta(&gw, a, b, &d);
	assert_true(d.basis);
	assert_int_equal(d.nsandboxes, 0);
	assert_int_equal(d.nsecrets, 0);
	conf_delta_free(&d);
	config_free(a);
	config_free(b);
}

/* A secret's file rewritten: its value goes again and its connections
 * are cut; its definition did not change. */
static void
secret_file_changed(void **state)
{
	struct moat_config *a = load(8, two_secrets, sandboxes);
	struct moat_config *b;
	struct gw_delta d;

	(void)state;
	proxy_of(&gw)->secret_ids = conf_secret_ids(a, &proxy_of(&gw)->nsecret_ids);
	write_file("gh", "sk-gh-2-longer\n");
	b = load(8, two_secrets, sandboxes);
	conf_delta(&gw, a, b, &d);
	assert_false(d.basis);
	assert_false(d.secret_defs);
	assert_int_equal(d.nsecrets, 1);
	assert_string_equal(d.secrets[0], "gh");
	assert_int_equal(d.nvalues, 1);
	assert_string_equal(b->secrets[d.values[0]].name, "gh");
	assert_int_equal(d.nsandboxes, 0);
	conf_delta_free(&d);
	config_free(a);
	config_free(b);
}

/* api given another host, gh removed, new added: api and gh are cut
 * for, new's value is sent (no connection can hold it yet). */
static void
secrets_redefined(void **state)
{
	struct moat_config *a = load(8, two_secrets, sandboxes);
	struct moat_config *b;
	struct gw_delta d;

	(void)state;
	write_file("new", "sk-new-1\n");
	b = load(8, SECRET("api", "api2.test") ",\n" SECRET("new", "new.test"),
	    SANDBOX("web", "10", "\"pypi.org\"", "\"api\"") ",\n"
	    SANDBOX("dev", "11", "\"pypi.org\"", "\"new\""));
	proxy_of(&gw)->secret_ids = conf_secret_ids(a, &proxy_of(&gw)->nsecret_ids);
	conf_delta(&gw, a, b, &d);
	assert_false(d.basis);
	assert_true(d.secret_defs);
	assert_int_equal(d.nsecrets, 2);
	assert_true(has(d.secrets, d.nsecrets, "api"));
	assert_true(has(d.secrets, d.nsecrets, "gh"));
	assert_int_equal(d.nvalues, 1);
	assert_string_equal(b->secrets[d.values[0]].name, "new");
	/* dev holds another secret now: its settings changed */
	assert_int_equal(d.nsandboxes, 1);
	assert_string_equal(d.sandboxes[0], "dev");
	conf_delta_free(&d);
	config_free(a);
	config_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(sandboxes_changed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(basis_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(secret_file_changed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(secrets_redefined, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
