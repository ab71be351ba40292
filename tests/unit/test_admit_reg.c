/*
 * test_admit_reg.c -- admit_registration(): what a KVM host may register
 * on a separate gateway box (lib/admit_reg.c), over a config in memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "admit_reg.h"
#include "config.h"

static char scratch[] = "/tmp/moat-test-admit-reg.XXXXXX";
static struct moat_config *cfg;
static const struct moat_host *ha, *hb;


static int
dropin(const char *dir, const char *name, const char *mark, const char *addr,
    const char *mac)
{
	char path[300];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s.conf", dir, name);
	if ((fp = fopen(path, "w")) == NULL)
		return -1;
	fprintf(fp, "%sname = \"%s\";\naddress = \"%s\";\nmac = \"%s\";\n"
	    "tap = \"%s\";\negress = \"none\";\n", mark, name, addr, mac, name);
	return fclose(fp);
}

static int
setup(void **state)
{
	char path[256], text[4096];
	struct moat_errors errs;
	FILE *fp;

	(void)state;
	if (mkdtemp(scratch) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/openai", scratch);
	if ((fp = fopen(path, "w")) == NULL)
		return -1;
	fputs("sk-not-a-real-key", fp);
	fclose(fp);
	chmod(path, 0600);
	snprintf(path, sizeof(path), "%s/sandboxes.d", scratch);
	mkdir(path, 0700);
	/* Host A registered "mine": its drop-in carries A's mark.  "odd"
	 * carries a mark that names no valid host: owned by nobody. */
	if (dropin(path, "mine", MOAT_REG_MARK "a\n", "10.77.0.9",
	    "52:54:00:00:0a:09") == -1 ||
	    dropin(path, "odd", MOAT_REG_MARK "a b\n", "10.77.0.8",
	    "52:54:00:00:0a:08") == -1)
		return -1;
	snprintf(text, sizeof(text),
	    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\"; "
	    "bridge = \"sb0\"; dns: { upstream = [ \"203.0.113.53\" ]; }; };\n"
	    "secrets = ( { name = \"openai\"; file = \"%s/openai\"; "
	    "hosts = [ \"api.openai.com\" ]; header = \"Authorization\"; "
	    "placeholder = \"moat-openai-PLACEHOLDER\"; },\n"
	    "  { name = \"other\"; file = \"%s/openai\"; "
	    "hosts = [ \"api.example.com\" ]; header = \"Authorization\"; "
	    "placeholder = \"moat-other-PLACEHOLDER\"; } );\n"
	    "hosts = ( { name = \"a\"; key = \"sha256:%064d\"; "
	    "pool = \"10.77.0.0/27\"; trunk = \"sb0\"; max_egress = \"open\"; "
	    "secrets = [ \"openai\" ]; },\n"
	    "  { name = \"b\"; key = \"sha256:%063d1\"; pool = \"10.77.0.32/27\"; "
	    "trunk = \"sb0\"; } );\n"
	    "sandboxes = ( { name = \"st\"; mac = \"52:54:00:00:0f:01\"; "
	    "address = \"10.77.0.30\"; tap = \"sttap\"; egress = \"none\"; } );\n",
	    scratch, scratch, 0, 0);
	cfg = config_load_buffer("test.conf", text, path, &errs);
	if (cfg == NULL) {
		config_errors_print(stderr, &errs);
		return -1;
	}
	config_errors_free(&errs);
	ha = &cfg->hosts[0];
	hb = &cfg->hosts[1];
	return 0;
}

static int
teardown(void **state)
{
	char cmd[300];

	(void)state;
	config_free(cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", scratch);
	return system(cmd) == 0 ? 0 : -1;
}

/* admit host h claim c: "" when admitted, else the reason. */
static const char *
admit(const struct moat_host *h, const char *name, const char *addr,
    const char *mac, const char *egress, const char *allow,
    const char *secrets)
{
	static char why[256];
	struct reg_claim c = { name, addr, mac, egress, allow, secrets };

	why[0] = '\0';
	if (admit_registration(cfg, h, &c, why, sizeof(why)) == 0)
		return "";
	assert_true(why[0] != '\0');
	return why;
}

#define MAC	"52:54:00:00:0a:01"

static void
admitted(void **state)
{
	(void)state;
	assert_string_equal(admit(ha, "a1", "10.77.0.21", MAC, "open", "", ""),
	    "");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "52:54:00:00:0A:01",
	    "allowlist", "example.com,*.example.org", "openai"), "");
	assert_string_equal(admit(hb, "b1", "10.77.0.33", MAC, "allowlist", "",
	    ""), "");
	assert_string_equal(admit(hb, "b1", "10.77.0.33", MAC, "none", "", ""),
	    "");
}

static void
address(void **state)
{
	(void)state;
	assert_string_equal(admit(ha, "a1", "10.77.0.40", MAC, "open", "", ""),
	    "address outside this host's pool");
	assert_string_equal(admit(hb, "b1", "10.77.0.21", MAC, "none", "", ""),
	    "address outside this host's pool");
	assert_string_equal(admit(ha, "a1", "10.77.0.1", MAC, "open", "", ""),
	    "address is the gateway's own");
	assert_string_equal(admit(ha, "a1", "10.77.0.0", MAC, "open", "", ""),
	    "address is the network's or its broadcast address");
	assert_string_equal(admit(ha, "a1", "10.77.0.21/32", MAC, "open", "",
	    ""), "address: expected an IPv4 address");
	assert_string_equal(admit(ha, "a1", "fd00::1", MAC, "open", "", ""),
	    "address: expected an IPv4 address");
}

static void
mac(void **state)
{
	(void)state;
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "53:54:00:00:0a:01",
	    "open", "", ""), "mac: expected a unicast address");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "00:00:00:00:00:00",
	    "open", "", ""), "mac: expected a unicast address");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "52:54:00:00:0a:1",
	    "open", "", ""), "mac: expected aa:bb:cc:dd:ee:ff");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "52-54-00-00-0a-01",
	    "open", "", ""), "mac: expected aa:bb:cc:dd:ee:ff");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "52:54:00:00:0a:0g",
	    "open", "", ""), "mac: expected aa:bb:cc:dd:ee:ff");
}

static void
egress(void **state)
{
	(void)state;
	assert_string_equal(admit(hb, "b1", "10.77.0.33", MAC, "open", "", ""),
	    "egress \"open\" is wider than this host's max_egress "
	    "\"allowlist\"");
	assert_string_equal(admit(hb, "b1", "10.77.0.33", MAC, "wide", "", ""),
	    "egress: expected open, allowlist or none");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", MAC, "open",
	    "example.com", ""), "allow only applies with egress allowlist");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", MAC, "allowlist",
	    "exa\"mple.com", ""), "allow: expected host names or *.names, at "
	    "most 64, got \"exa\"mple.com\"");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", MAC, "allowlist",
	    "example.com,", ""), "allow: expected host names or *.names, at "
	    "most 64, got \"\"");
}

static void
secrets(void **state)
{
	(void)state;
	assert_string_equal(admit(hb, "b1", "10.77.0.33", MAC, "allowlist", "",
	    "openai"), "secret \"openai\" is not one this host's sandboxes may "
	    "use");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", MAC, "allowlist", "",
	    "openai,other"), "secret \"other\" is not one this host's "
	    "sandboxes may use");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", MAC, "allowlist", "",
	    "nosuch"), "secret \"nosuch\" is not one this host's sandboxes "
	    "may use");
}

static void
collisions(void **state)
{
	(void)state;
	assert_string_equal(admit(ha, "st", "10.77.0.21", MAC, "none", "", ""),
	    "name used by another sandbox");
	assert_string_equal(admit(ha, "sttap", "10.77.0.21", MAC, "none", "",
	    ""), "name used by another sandbox's tap");
	assert_string_equal(admit(ha, "a1", "10.77.0.30", MAC, "none", "", ""),
	    "address used by another sandbox");
	assert_string_equal(admit(ha, "a1", "10.77.0.21", "52:54:00:00:0f:01",
	    "none", "", ""), "mac used by another sandbox");
	/* Its own sandbox is replaced, not a collision; but host B may not
	 * take it over. */
	assert_string_equal(admit(ha, "mine", "10.77.0.9", "52:54:00:00:0a:09",
	    "open", "", ""), "");
	assert_string_equal(admit(ha, "mine", "10.77.0.10", MAC, "open", "",
	    ""), "");
	assert_string_equal(admit(ha, "a1", "10.77.0.9", MAC, "open", "", ""),
	    "address used by another sandbox");
	assert_string_equal(admit(hb, "mine", "10.77.0.40", MAC, "none", "",
	    ""), "name used by another sandbox");
	/* The owner is the mark's host, read when the config was loaded; a
	 * mark naming no valid host makes nobody the owner. */
	assert_true(reg_owned(config_sandbox_by_name(cfg, "mine"), ha));
	assert_false(reg_owned(config_sandbox_by_name(cfg, "mine"), hb));
	assert_null(config_sandbox_by_name(cfg, "odd")->registered_by);
	assert_null(config_sandbox_by_name(cfg, "st")->registered_by);
	assert_string_equal(admit(ha, "odd", "10.77.0.8", "52:54:00:00:0a:08",
	    "none", "", ""), "name used by another sandbox");
}

static void
names(void **state)
{
	(void)state;
	assert_string_equal(admit(ha, "Upper", "10.77.0.21", MAC, "none", "",
	    ""), "name: expected 1 to 15 of a-z, 0-9, '-' and '_', starting "
	    "with a letter or digit");
	assert_string_not_equal(admit(ha, "a-very-long-name", "10.77.0.21", MAC,
	    "none", "", ""), "");
	assert_string_not_equal(admit(ha, "-a", "10.77.0.21", MAC, "none", "",
	    ""), "");
	assert_string_not_equal(admit(ha, "", "10.77.0.21", MAC, "none", "",
	    ""), "");
	assert_false(reg_name_valid("../../etc/x"));
	assert_false(reg_name_valid("a/b"));
	assert_true(reg_name_valid("a1"));
	assert_true(reg_list_has("a1,a2", "a2"));
	assert_false(reg_list_has("a1,a22", "a2"));
	assert_false(reg_list_has("-", "a2"));
	assert_non_null(admit_host_by_key(cfg, ha->key));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(admitted),
		cmocka_unit_test(address),
		cmocka_unit_test(mac),
		cmocka_unit_test(egress),
		cmocka_unit_test(secrets),
		cmocka_unit_test(collisions),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
