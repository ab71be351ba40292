/*
 * test_dnsd_policy.c -- dnsd's name matching: exact names, "*.suffix"
 * at any depth but not the suffix itself, case and trailing dot ignored,
 * labels never confused with dots inside a label; modes; sandbox lookup
 * by address; the rate limit.
 */
#include <sys/socket.h>
#include <netinet/in.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ldns/ldns.h>

#include "admit.h"
#include "config.h"
#include "policy.h"

static const char conf[] =
"gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
"  dns: { upstream = [ \"203.0.113.53\" ]; };\n"
"  proxy: { port = 3128; intercept = false; }; };\n"
"sandboxes = (\n"
"  { name = \"web\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\";\n"
"    tap = \"mt-web\"; egress = \"allowlist\";\n"
"    allow = [ \"pypi.org\", \"*.github.test\", \"Files.Example.COM\" ]; },\n"
"  { name = \"dev\"; mac = \"52:54:00:00:00:0b\"; address = \"10.77.0.11\";\n"
"    tap = \"mt-dev\"; egress = \"open\"; },\n"
"  { name = \"locked\"; mac = \"52:54:00:00:00:0c\"; address = \"10.77.0.12\";\n"
"    tap = \"mt-locked\"; egress = \"none\"; }\n"
");\n";

static struct moat_config *cfg;
static struct policy *pol;

static int
setup(void **state)
{
	struct moat_errors errs = { 0 };

	(void)state;
	cfg = config_load_buffer("test.conf", conf, "/nonexistent", &errs);
	if (cfg == NULL) {
		config_errors_print(stderr, &errs);
		return -1;
	}
	pol = policy_new(cfg);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	policy_free(pol);
	config_free(cfg);
	return 0;
}

static struct sbpolicy *
sandbox(const char *ip)
{
	struct moat_addr a;

	assert_int_equal(addr_parse(ip, &a), 0);
	return policy_sandbox(pol, &a);
}

/* Query names come from the wire; build them with ldns the same way. */
static enum verdict
check(const char *sb, const char *name)
{
	ldns_rdf *d = NULL;
	enum verdict v;

	assert_int_equal(ldns_str2rdf_dname(&d, name), LDNS_STATUS_OK);
	ldns_dname2canonical(d);
	v = policy_check(sandbox(sb), ldns_rdf_data(d), ldns_rdf_size(d));
	ldns_rdf_deep_free(d);
	return v;
}

static void
test_lookup_by_address(void **state)
{
	struct moat_addr mapped;

	(void)state;
	assert_non_null(sandbox("10.77.0.10"));
	assert_string_equal(sandbox("10.77.0.11")->sb->name, "dev");
	assert_null(sandbox("10.77.0.99"));
	assert_null(sandbox("10.77.0.1"));
	assert_int_equal(addr_parse("::ffff:10.77.0.12", &mapped), 0);
	assert_string_equal(policy_sandbox(pol, &mapped)->sb->name, "locked");
}

static void
test_exact(void **state)
{
	(void)state;
	assert_int_equal(check("10.77.0.10", "pypi.org"), V_ALLOW);
	assert_int_equal(check("10.77.0.10", "PyPI.ORG."), V_ALLOW);
	assert_int_equal(check("10.77.0.10", "files.example.com"), V_ALLOW);
	assert_int_equal(check("10.77.0.10", "www.pypi.org"), V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "pypi.org.evil.test"),
	    V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "ypi.org"), V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "org"), V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "."), V_DENY_LIST);
}

static void
test_wildcard(void **state)
{
	(void)state;
	assert_int_equal(check("10.77.0.10", "a.github.test"), V_ALLOW);
	assert_int_equal(check("10.77.0.10", "x.y.z.GitHub.Test."), V_ALLOW);
	/* The suffix itself is not covered by "*.github.test". */
	assert_int_equal(check("10.77.0.10", "github.test"), V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "agithub.test"), V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "github.test.evil"),
	    V_DENY_LIST);
}

/* A label that contains a dot ("x.github" as ONE label) is not below
 * github.test, and "evil.x\.github.test" must not match either. */
static void
test_escaped_dot(void **state)
{
	(void)state;
	/* labels: evil | x.github | test -- below "test", not github.test */
	assert_int_equal(check("10.77.0.10", "evil.x\\.github.test"),
	    V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "a.github\\.test"), V_DENY_LIST);
	assert_int_equal(check("10.77.0.10", "pypi\\.org"), V_DENY_LIST);
}

static void
test_modes(void **state)
{
	(void)state;
	assert_int_equal(check("10.77.0.11", "anything.example"), V_ALLOW);
	assert_int_equal(check("10.77.0.12", "pypi.org"), V_DENY_NONE);
}

static void
test_nameset_many(void **state)
{
	struct nameset *s = nameset_new(0);
	uint8_t wire[64];
	size_t i, len;
	bool wild;
	char name[32];

	(void)state;
	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "host%zu.example", i);
		len = pattern_to_wire(name, wire, sizeof(wire), &wild);
		assert_true(len > 0);
		nameset_add(s, wire, len);
		nameset_add(s, wire, len);	/* duplicates ignored */
	}
	assert_int_equal(nameset_count(s), 5000);
	len = pattern_to_wire("host4999.example", wire, sizeof(wire), &wild);
	assert_true(nameset_has(s, wire, len));
	len = pattern_to_wire("host5000.example", wire, sizeof(wire), &wild);
	assert_false(nameset_has(s, wire, len));
	assert_int_equal(pattern_to_wire("a.*.b", wire, sizeof(wire), &wild),
	    0);
	nameset_free(s);
}

static void
test_ratelimit(void **state)
{
	struct sbpolicy *sb = sandbox("10.77.0.11");
	int i, ok = 0;

	(void)state;
	for (i = 0; i < 100; i++)
		ok += policy_ratelimit(sb, 1000, 10, 20);
	assert_int_equal(ok, 20);			/* the burst */
	assert_false(policy_ratelimit(sb, 1050, 10, 20));
	assert_true(policy_ratelimit(sb, 1200, 10, 20));	/* refilled */
	assert_true(policy_ratelimit(sb, 1200, 0, 0));	/* unlimited */
}

/*
 * With gateway.ipv6: which sandboxes have IPv6 (AAAA answers forwarded),
 * a guest found by its one IPv6 address and by no other address of the
 * /64, and the set-add admission of AAAA addresses (admit_set_add): public
 * IPv6 for a sandbox with IPv6, never private, never the guests' /64,
 * nothing of IPv6 for a sandbox with ipv6 = false.
 */
static const char conf6[] =
"gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
"  dns: { upstream = [ \"203.0.113.53\" ]; };\n"
"  ipv6 = { network = \"fd77:0:0:1::/64\"; uplink_mode = \"nat66\"; }; };\n"
"sandboxes = (\n"
"  { name = \"web\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\";\n"
"    tap = \"mt-web\"; egress = \"allowlist\"; allow = [ \"pypi.org\" ]; },\n"
"  { name = \"web4\"; mac = \"52:54:00:00:00:0d\"; address = \"10.77.0.13\";\n"
"    tap = \"mt-web4\"; egress = \"allowlist\"; allow = [ \"pypi.org\" ];\n"
"    ipv6 = false; },\n"
"  { name = \"locked\"; mac = \"52:54:00:00:00:0c\"; address = \"10.77.0.12\";\n"
"    tap = \"mt-locked\"; egress = \"none\"; }\n"
");\n";

static void
test_v6_nat64(const struct moat_config *c6)
{
	static const struct {
		const char	*addr;
		enum admit_why	 why;
	} t[] = {
		{ "64:ff9b::9.9.9.9", ADMIT_OK },
		{ "64:ff9b::8.8.8.8", ADMIT_OK },
		{ "64:ff9b::10.1.2.3", ADMIT_PRIVATE },
		{ "64:ff9b::192.168.77.1", ADMIT_PRIVATE },
		{ "64:ff9b::169.254.169.254", ADMIT_PRIVATE },
		{ "64:ff9b::127.0.0.1", ADMIT_PRIVATE },
		{ "64:ff9b::10.77.0.1", ADMIT_SANDBOX_NET },	/* gateway */
		{ "64:ff9b::10.77.0.10", ADMIT_SANDBOX_NET },	/* a guest */
		{ "64:ff9b:1::9.9.9.9", ADMIT_PRIVATE },	/* local use */
		{ "64:ff9b::1:9.9.9.9", ADMIT_PRIVATE },	/* not the /96 */
	};
	const struct moat_sandbox *sb = config_sandbox_by_name(c6, "web");
	const struct moat_sandbox *sb4 = config_sandbox_by_name(c6, "web4");
	struct moat_addr in[10], ok[10], h4;
	struct admit_host host = { 0 };
	uint32_t tmo = 60000;
	size_t i;

	for (i = 0; i < 10; i++) {
		assert_int_equal(addr_parse(t[i].addr, &in[i]), 0);
		assert_int_equal(admit_addr(c6, sb, NULL, &in[i], IPPROTO_TCP,
		    443), t[i].why);
	}
	/* dnsd's set-add: the two public ones, and nothing of IPv6 for a
	 * sandbox without it. */
	assert_int_equal(admit_set_add(c6, "web", in, 10, ok, &tmo), 2);
	assert_int_equal(addr_cmp(&ok[0], &in[0]), 0);
	assert_int_equal(addr_cmp(&ok[1], &in[1]), 0);
	assert_int_equal(admit_set_add(c6, "web4", in, 10, ok, &tmo), 0);
	assert_int_equal(admit_addr(c6, sb4, NULL, &in[0], IPPROTO_TCP, 443),
	    ADMIT_IPV6);
	/* The host's own public IPv4, reached through the translator. */
	assert_int_equal(addr_parse("9.9.9.9", &h4), 0);
	admit_host_add(&host, &h4);
	assert_int_equal(admit_addr(c6, sb, &host, &in[0], IPPROTO_TCP, 443),
	    ADMIT_HOST);
	admit_host_free(&host);
}

static void
test_v6(void **state)
{
	struct moat_errors errs = { 0 };
	struct moat_config *c6;
	struct policy *p6;
	struct moat_addr a, in[5], ok[5];
	const struct moat_sandbox *sb;
	struct sbpolicy *sp;
	uint32_t t = 60000;
	size_t i;
	static const char *const addrs[] = { "2606:4700::1111", "fd00::1",
	    "fd77:0:0:1::b", "2001:db8::1", "9.9.9.9" };

	(void)state;
	c6 = config_load_buffer("v6.conf", conf6, "/nonexistent", &errs);
	if (c6 == NULL)
		config_errors_print(stderr, &errs);
	assert_non_null(c6);
	p6 = policy_new(c6);
	assert_true(policy_sandbox_at(p6, 0)->v6);
	assert_false(policy_sandbox_at(p6, 1)->v6);	/* ipv6 = false */
	assert_false(policy_sandbox_at(p6, 2)->v6);	/* egress none */
	assert_int_equal(addr_parse("fd77:0:0:1::a", &a), 0);
	assert_non_null(sp = policy_sandbox(p6, &a));
	assert_string_equal(sp->sb->name, "web");
	assert_int_equal(addr_parse("fd77:0:0:1::d", &a), 0);
	assert_null(policy_sandbox(p6, &a));		/* has no IPv6 */
	assert_int_equal(addr_parse("fd77:0:0:1:1::a", &a), 0);
	assert_null(policy_sandbox(p6, &a));		/* same low bits */
	assert_int_equal(addr_parse("fd77:0:0:2::a", &a), 0);
	assert_null(policy_sandbox(p6, &a));		/* another /64 */
	for (i = 0; i < 5; i++)
		assert_int_equal(addr_parse(addrs[i], &in[i]), 0);
	assert_int_equal(admit_set_add(c6, "web", in, 5, ok, &t), 2);
	assert_int_equal(addr_cmp(&ok[0], &in[0]), 0);
	assert_int_equal(addr_cmp(&ok[1], &in[4]), 0);
	assert_int_equal(admit_set_add(c6, "web4", in, 5, ok, &t), 1);
	assert_int_equal(addr_cmp(&ok[0], &in[4]), 0);
	/* The same judgement for a flow (reload cuts, the proxy). */
	sb = config_sandbox_by_name(c6, "web");
	assert_int_equal(admit_addr(c6, sb, NULL, &in[0], IPPROTO_TCP, 443),
	    ADMIT_OK);
	assert_int_equal(admit_addr(c6, sb, NULL, &in[0], IPPROTO_TCP, 22),
	    ADMIT_PORT);
	assert_int_equal(admit_addr(c6, sb, NULL, &in[1], IPPROTO_TCP, 443),
	    ADMIT_PRIVATE);
	assert_int_equal(admit_addr(c6, sb, NULL, &in[2], IPPROTO_TCP, 443),
	    ADMIT_SANDBOX_NET);
	assert_int_equal(admit_addr(c6, config_sandbox_by_name(c6, "web4"),
	    NULL, &in[0], IPPROTO_TCP, 443), ADMIT_IPV6);
	/* NAT64's well-known prefix is judged by the IPv4 it carries:
	 * public opens for a sandbox with IPv6; private, the guests'
	 * network, the gateway and the local-use /48 never do. */
	test_v6_nat64(c6);
	/* A guest is found by its IPv6 address too. */
	assert_int_equal(addr_parse("fd77:0:0:1::a", &a), 0);
	assert_ptr_equal(config_sandbox_by_addr(c6, &a), sb);
	assert_int_equal(addr_parse("fd77:0:0:1::d", &a), 0);
	assert_null(config_sandbox_by_addr(c6, &a));
	policy_free(p6);
	config_free(c6);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_by_address),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_wildcard),
		cmocka_unit_test(test_escaped_dot),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_nameset_many),
		cmocka_unit_test(test_ratelimit),
		cmocka_unit_test(test_v6),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
