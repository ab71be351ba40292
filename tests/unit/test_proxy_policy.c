/*
 * test_proxy_policy.c -- refuse / splice / intercept, address literals in
 * every spelling, private addresses (also IPv4-mapped), allowlist
 * patterns and secret binding, on a config loaded from text.
 */
#include <netinet/in.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "../../gatewayd/proxy/policy.h"

static struct moat_config *cfg;
static char secretfile[] = "/tmp/moat-test-secret.XXXXXX";

/* %s: a secret file, which the loader wants regular, 0600, root's. */
static const char conf[] =
"gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";"
"  dns: { upstream = [ \"203.0.113.53\" ]; };"
"  treat_as_public = [ \"203.0.113.0/24\" ];"
"  exceptions = ( { to = \"192.168.1.50/32\"; proto = \"tcp\"; ports = [ 3142 ]; } ); };\n"
"secrets = ( { name = \"api\"; file = \"%s\"; hosts = [ \"api.test\" ];"
"  header = \"Authorization\"; placeholder = \"moat-PH-test\"; } );\n"
"sandboxes = (\n"
" { name = \"a\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\"; tap = \"t-a\";"
"   egress = \"allowlist\"; allow = [ \"*.example.test\", \"api.test\", \"git.test:tcp/22,tcp/443\", \"ssh.test:tcp/22\" ]; secrets = [ \"api\" ]; },\n"
" { name = \"o\"; mac = \"52:54:00:00:00:0b\"; address = \"10.77.0.11\"; tap = \"t-o\";"
"   egress = \"open\"; inspect = true; bypass = [ \"pinned.test\" ]; },\n"
" { name = \"n\"; mac = \"52:54:00:00:00:0c\"; address = \"10.77.0.12\"; tap = \"t-n\";"
"   egress = \"none\"; } );\n";

static int
setup(void **state)
{
	struct moat_errors errs = { 0 };
	char text[4096];
	int fd;

	if (geteuid() != 0)
		return 0;	/* the loader insists on root-owned secrets */
	if ((fd = mkstemp(secretfile)) < 0 || write(fd, "v\n", 2) != 2)
		return 1;
	close(fd);
	snprintf(text, sizeof(text), conf, secretfile);
	cfg = config_load_buffer("test.conf", text, "/nonexistent", &errs);
	if (cfg == NULL)
		config_errors_print(stderr, &errs);
	config_errors_free(&errs);
	return cfg == NULL;
}

static int
teardown(void **state)
{
	config_free(cfg);
	unlink(secretfile);
	return 0;
}

static void
need_cfg(void)
{
	if (cfg == NULL)
		skip();
}

static enum verdict
decide(const char *sb, const char *host)
{
	struct moat_addr lit;
	const char *reason = NULL;
	bool literal;

	return policy_decide(cfg, config_sandbox_by_name(cfg, sb), host, 443,
	    &literal, &lit, &reason);
}

static enum verdict
decide_port(const char *sb, const char *host, uint16_t port)
{
	struct moat_addr lit;
	const char *reason = NULL;
	bool literal;

	return policy_decide(cfg, config_sandbox_by_name(cfg, sb), host, port,
	    &literal, &lit, &reason);
}

/* A name with ports of its own is refused on any other port; a plain
 * name on a port outside allow_ports too. */
static void
test_decide_ports(void **state)
{
	struct moat_addr a;

	(void)state;
	need_cfg();
	assert_int_equal(decide_port("a", "git.test", 22), V_SPLICE);
	assert_int_equal(decide_port("a", "git.test", 443), V_SPLICE);
	assert_int_equal(decide_port("a", "ssh.test", 22), V_SPLICE);
	assert_int_equal(decide_port("a", "ssh.test", 443), V_REFUSE);
	assert_int_equal(decide_port("a", "ssh.test", 80), V_REFUSE);
	assert_int_equal(decide_port("a", "www.example.test", 22), V_REFUSE);
	assert_int_equal(decide_port("a", "www.example.test", 443), V_SPLICE);
	assert_int_not_equal(decide_port("o", "ssh.test", 25), V_REFUSE);
	/* The address check takes the widest port a's names open. */
	addr_parse("203.0.113.9", &a);
	assert_true(policy_addr_ok(cfg, config_sandbox_by_name(cfg, "a"),
	    NULL, &a, 22, NULL));
	assert_false(policy_addr_ok(cfg, config_sandbox_by_name(cfg, "a"),
	    NULL, &a, 25, NULL));
}

static void
test_decide(void **state)
{
	need_cfg();
	assert_int_equal(decide("a", "api.test"), V_INTERCEPT);
	assert_int_equal(decide("a", "www.example.test"), V_SPLICE);
	assert_int_equal(decide("a", "example.test"), V_REFUSE);
	assert_int_equal(decide("a", "evil.test"), V_REFUSE);
	assert_int_equal(decide("a", "203.0.113.5"), V_REFUSE);
	assert_int_equal(decide("a", NULL), V_REFUSE);
	assert_int_equal(decide("o", "anything.test"), V_INTERCEPT);
	assert_int_equal(decide("o", "pinned.test"), V_SPLICE);
	assert_int_equal(decide("o", "api.test"), V_INTERCEPT);
	assert_int_equal(decide("o", NULL), V_SPLICE);
	assert_int_equal(decide("n", "api.test"), V_REFUSE);
	assert_int_equal(policy_decide(cfg, NULL, "api.test", 443, &(bool){ 0 },
	    &(struct moat_addr){ 0 }, &(const char *){ NULL }), V_REFUSE);
}

/* The gateway host's own addresses, as rtnetlink would report them: a
 * public uplink address and a global IPv6 one. */
static struct admit_host host;

static void
need_host(void)
{
	struct moat_addr a;

	if (host.n > 0)
		return;
	assert_int_equal(addr_parse("203.0.113.99", &a), 0);
	admit_host_add(&host, &a);
	assert_int_equal(addr_parse("2001:470:1::99", &a), 0);
	admit_host_add(&host, &a);
}

static bool
ok_for(const char *sb, const char *s, uint16_t port)
{
	struct moat_addr a;

	need_host();
	assert_true(policy_literal(s, &a));
	return policy_addr_ok(cfg, config_sandbox_by_name(cfg, sb), &host,
	    &a, port, NULL);
}

static bool
ok(const char *s, uint16_t port)
{
	return ok_for("o", s, port);
}

static void
test_addresses(void **state)
{
	need_cfg();
	assert_true(ok("203.0.113.7", 443));
	assert_false(ok("127.0.0.1", 443));
	assert_false(ok("127.1", 443));
	assert_false(ok("0x7f.1", 443));
	assert_false(ok("2130706433", 443));
	assert_false(ok("017700000001", 443));
	assert_false(ok("169.254.169.254", 80));
	assert_false(ok("10.77.0.1", 3128));
	assert_false(ok("::1", 443));
	assert_false(ok("::ffff:192.168.77.2", 443));
	assert_false(ok("fe80::1", 443));
	assert_false(ok("64:ff9b::c0a8:4d02", 443));
	assert_false(ok("192.168.1.50", 443));
	assert_true(ok("192.168.1.50", 3142));	/* an exception */
	assert_true(ok("8.8.8.8", 443));
}

/* What the proxy may dial is what a guest of the sandbox may reach:
 * never the gateway host, the sandbox network or IPv6; exceptions only
 * for the sandboxes they apply to; allowlist only on allow_ports. */
static void
test_admission(void **state)
{
	const char *why = NULL;
	struct moat_addr a;

	need_cfg();
	assert_true(ok("203.0.113.7", 443));
	assert_false(ok("203.0.113.99", 2222));		/* the host's uplink */
	assert_false(ok("::ffff:203.0.113.99", 80));
	assert_false(ok("2001:470:1::99", 2223));	/* the host, IPv6 */
	assert_false(ok("2001:470:2::1", 2222));	/* a LAN host, IPv6 */
	assert_false(ok("fd12::1", 443));		/* ULA */
	assert_false(ok("10.77.0.12", 80));		/* another guest */
	assert_false(ok("10.77.0.1", 3128));		/* the gateway */
	assert_false(ok_for("n", "192.168.1.50", 3142));	/* none */
	assert_false(ok_for("a", "192.168.1.50", 3142));	/* not named */
	assert_true(ok_for("o", "192.168.1.50", 3142));		/* default */
	assert_true(ok_for("a", "203.0.113.7", 443));
	assert_false(ok_for("a", "203.0.113.7", 8443));	/* allow_ports */
	assert_int_equal(addr_parse("203.0.113.99", &a), 0);
	assert_false(policy_addr_ok(cfg, config_sandbox_by_name(cfg, "o"),
	    &host, &a, 80, &why));
	assert_string_equal(why, "an address of the gateway host");
	admit_host_del(&host, &a);
	assert_true(policy_addr_ok(cfg, config_sandbox_by_name(cfg, "o"),
	    &host, &a, 80, NULL));			/* RTM_DELADDR */
	admit_host_free(&host);
}

/* The one set-add admission both parents use (gatewayd and dnsd). */
static void
test_set_add(void **state)
{
	struct moat_addr in[4], ok[4];
	uint32_t t = 0xffffffffu;

	need_cfg();
	assert_int_equal(addr_parse("203.0.113.7", &in[0]), 0);
	assert_int_equal(addr_parse("192.168.1.50", &in[1]), 0);
	assert_int_equal(addr_parse("10.77.0.12", &in[2]), 0);
	assert_int_equal(addr_parse("2606:4700::1", &in[3]), 0);
	assert_int_equal(admit_set_add(cfg, "a", in, 4, ok, &t), 1);
	assert_int_equal(addr_cmp(&ok[0], &in[0]), 0);
	assert_int_equal(t, ADMIT_SET_TIMEOUT_MAX_MS);	/* ~49 days capped */
	t = 60000;
	assert_int_equal(admit_set_add(cfg, "a", in, 1, ok, &t), 1);
	assert_int_equal(t, 60000);
	assert_int_equal(admit_set_add(cfg, "o", in, 1, ok, &t), -1);
	assert_int_equal(admit_set_add(cfg, "n", in, 1, ok, &t), -1);
	assert_int_equal(admit_set_add(cfg, "nosuch", in, 1, ok, &t), -1);
}

static void
test_binding(void **state)
{
	const struct moat_secret *s;

	need_cfg();
	s = config_secret_by_name(cfg, "api");

	assert_true(policy_secret_bound(config_sandbox_by_name(cfg, "a"), s,
	    "api.test"));
	assert_false(policy_secret_bound(config_sandbox_by_name(cfg, "a"), s,
	    "www.api.test"));
	assert_false(policy_secret_bound(config_sandbox_by_name(cfg, "o"), s,
	    "api.test"));
}

/* With gateway.ipv6, a sandbox with IPv6 (secrets or not) may have
 * public IPv6 dialled for it, never the guests' /64, a private range,
 * the host or a network of the host's; one without IPv6 none at all. */
static void
test_admission6(void **state)
{
	static const char text6[] =
	"gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";"
	"  dns: { upstream = [ \"203.0.113.53\" ]; };"
	"  treat_as_public = [ \"2001:db8::/32\" ];"
	"  ipv6 = { network = \"fd77:0:0:1::/64\"; uplink_mode = \"nat66\";"
	"    site_prefixes = [ \"2001:db8:300::/48\" ]; }; };\n"
	"secrets = ( { name = \"api\"; file = \"%s\"; hosts = [ \"api.test\" ];"
	"  header = \"Authorization\"; placeholder = \"moat-PH-test\"; } );\n"
	"sandboxes = (\n"
	" { name = \"s\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\"; tap = \"t-s\";"
	"   egress = \"open\"; secrets = [ \"api\" ]; },\n"
	" { name = \"v4\"; mac = \"52:54:00:00:00:0b\"; address = \"10.77.0.11\"; tap = \"t-v4\";"
	"   egress = \"open\"; ipv6 = false; } );\n";
	struct moat_errors errs = { 0 };
	struct moat_config *c6;
	const struct moat_sandbox *sb, *v4;
	struct admit_host h = { 0 };
	struct moat_addr a;
	char text[4096];

	need_cfg();
	snprintf(text, sizeof(text), text6, secretfile);
	c6 = config_load_buffer("v6.conf", text, "/nonexistent", &errs);
	if (c6 == NULL)
		config_errors_print(stderr, &errs);
	config_errors_free(&errs);
	assert_non_null(c6);
	sb = config_sandbox_by_name(c6, "s");
	v4 = config_sandbox_by_name(c6, "v4");
	assert_int_equal(addr_parse("2001:db8:77:5::1", &a), 0);
	admit_host_add_net(&h, &a, 64);			/* a LAN's prefix */
	assert_int_equal(addr_parse("2001:db8:203::1", &a), 0);
	admit_host_add_net(&h, &a, 64);			/* the uplink's */
#define OK6(x, s)	(addr_parse((s), &a) == 0 && \
	    admit_addr(c6, (x), &h, &a, IPPROTO_TCP, 443) == ADMIT_OK)
#define WHY6(x, s)	(addr_parse((s), &a), \
	    admit_addr(c6, (x), &h, &a, IPPROTO_TCP, 443))
	assert_true(OK6(sb, "2606:4700:20::20"));
	assert_true(OK6(sb, "2001:db8:99::1"));		/* treat_as_public */
	assert_false(OK6(v4, "2606:4700:20::20"));
	assert_int_equal(WHY6(v4, "2606:4700:20::20"), ADMIT_IPV6);
	assert_int_equal(WHY6(sb, "2001:db8:77:5::2"), ADMIT_HOST_NET);
	assert_int_equal(WHY6(sb, "2001:db8:203::2"), ADMIT_HOST_NET);
	assert_int_equal(WHY6(sb, "2001:db8:203::1"), ADMIT_HOST);
	/* The site's own prefix, though the host has nothing of it. */
	assert_int_equal(WHY6(sb, "2001:db8:300:5::7"), ADMIT_HOST_NET);
	assert_true(OK6(sb, "2001:db8:301::7"));
	assert_int_equal(WHY6(sb, "fd77:0:0:1::b"), ADMIT_SANDBOX_NET);
	assert_int_equal(WHY6(sb, "fd77:0:0:1::1"), ADMIT_SANDBOX_NET);
	assert_int_equal(WHY6(sb, "fd00:99::2"), ADMIT_PRIVATE);
	assert_int_equal(WHY6(sb, "64:ff9b::c0a8:4d02"), ADMIT_PRIVATE);
	assert_int_equal(WHY6(sb, "fe80::1"), ADMIT_PRIVATE);
	assert_int_equal(WHY6(sb, "::ffff:192.168.77.2"), ADMIT_PRIVATE);
	/* RTM_DELADDR: the network goes with its address. */
	assert_int_equal(addr_parse("2001:db8:77:5::1", &a), 0);
	admit_host_del(&h, &a);
	assert_true(OK6(sb, "2001:db8:77:5::2"));
#undef OK6
#undef WHY6
	/* The proxy knows the sandbox by its IPv6 source. */
	assert_int_equal(addr_parse("fd77:0:0:1::a", &a), 0);
	assert_ptr_equal(config_sandbox_by_addr(c6, &a), sb);
	assert_int_equal(addr_parse("fd77:0:0:1::b", &a), 0);
	assert_null(config_sandbox_by_addr(c6, &a));
	admit_host_free(&h);
	config_free(c6);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_decide_ports),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_admission6),
		cmocka_unit_test(test_set_add),
		cmocka_unit_test(test_binding),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
