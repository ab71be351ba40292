/*
 * test_cc_args.c -- containment-check's option values: targets, host:port,
 * bounded numbers and modes, including everything that must be refused.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "../../containment-check/cc.h"

/* --quick bounds the gateway sweep: ports 1-1024, the proxy's, and the
 * well-known ones above (8080, 5432, ...), not all 65535. */
static void
quick_sweep(void **state)
{
	struct cc_opts o;
	struct cc_disc d;
	struct cc_probes full = { 0 }, quick = { 0 };
	bool p8080 = false, p3128 = false, p5432 = false, p40000 = false;
	size_t i;
	uint16_t port;

	(void)state;
	memset(&o, 0, sizeof(o));
	memset(&d, 0, sizeof(d));
	o.proxy_port = 3129;
	o.timeout_ms = 1500;
	assert_int_equal(addr_parse("10.77.0.1", &d.gateway), 0);
	plan_sweep(&full, &o, &d);
	assert_int_equal(full.n, 65535);
	o.quick = true;
	plan_sweep(&quick, &o, &d);
	assert_true(quick.n > 1024 && quick.n < 1100);
	for (i = 0; i < quick.n; i++) {
		port = ntohs(quick.v[i].dst.sin.sin_port);
		p8080 |= port == 8080;
		p3128 |= port == 3129;
		p5432 |= port == 5432;
		p40000 |= port == 40000;
	}
	assert_true(p8080 && p3128 && p5432 && !p40000);
	probes_free(&full);
	probes_free(&quick);
}

static void
targets(void **state)
{
	struct cc_target t;
	char b[INET6_ADDRSTRLEN];

	assert_int_equal(args_target("192.168.77.2", &t), 0);
	assert_int_equal(t.port, 0);
	assert_string_equal(addr_fmt(&t.addr, b, sizeof(b)), "192.168.77.2");
	assert_int_equal(args_target("10.0.0.1:22", &t), 0);
	assert_int_equal(t.port, 22);
	assert_int_equal(args_target("fd00::1", &t), 0);
	assert_int_equal(t.addr.family, AF_INET6);
	assert_int_equal(t.port, 0);
	assert_int_equal(args_target("[fd00::1]:443", &t), 0);
	assert_int_equal(t.port, 443);
	assert_string_equal(addr_fmt(&t.addr, b, sizeof(b)), "fd00::1");
}

static void
bad_targets(void **state)
{
	static const char *const bad[] = {
		"", "host.test", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536",
		"10.0.0.1:22x", "[fd00::1", "[fd00::1]x", "[]:22", "10.0.0/8",
		"10.0.0.256", "[10.0.0.1]:-1", ":22",
	};
	struct cc_target t;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (args_target(bad[i], &t) != -1)
			fail_msg("accepted bad target '%s'", bad[i]);
}

static void
hostports(void **state)
{
	static const char *const bad[] = {
		"example.test", "example.test:", "a b.test:80", "x;rm:80",
		"ex\"ample:80", "fd00::1:80x", ":80", "[fd00::1]",
	};
	struct cc_hostport hp;
	size_t i;

	assert_int_equal(args_hostport("example.test:443", &hp), 0);
	assert_string_equal(hp.host, "example.test");
	assert_int_equal(hp.port, 443);
	assert_int_equal(args_hostport("203.0.113.10:80", &hp), 0);
	assert_int_equal(args_hostport("[2001:db8::1]:80", &hp), 0);
	assert_string_equal(hp.host, "2001:db8::1");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (args_hostport(bad[i], &hp) != -1)
			fail_msg("accepted bad host:port '%s'", bad[i]);
}

static void
numbers_and_modes(void **state)
{
	unsigned u;
	enum cc_mode m;

	assert_int_equal(args_uint("1500", 50, 30000, &u), 0);
	assert_int_equal(u, 1500);
	assert_int_equal(args_uint("49", 50, 30000, &u), -1);
	assert_int_equal(args_uint("30001", 50, 30000, &u), -1);
	assert_int_equal(args_uint("-1", 0, 10, &u), -1);
	assert_int_equal(args_uint("+1", 0, 10, &u), -1);
	assert_int_equal(args_uint("1k", 0, 10000, &u), -1);
	assert_int_equal(args_uint("99999999999999999999", 0, 10, &u), -1);
	assert_int_equal(args_mode("allowlist", &m), 0);
	assert_int_equal(m, M_ALLOWLIST);
	assert_string_equal(args_mode_name(M_NONE), "none");
	assert_int_equal(args_mode("Open", &m), -1);
}

/* The targets file provision writes: one line at a time. */
static void
targets_file_lines(void **state)
{
	static struct cc_opts o;

	memset(&o, 0, sizeof(o));
	assert_int_equal(args_targets_line("# comment\n", &o), 0);
	assert_int_equal(args_targets_line("\n", &o), 0);
	assert_int_equal(args_targets_line("gateway 203.0.113.1\n", &o), 0);
	assert_int_equal(args_targets_line("gateway [2001:470::1]:22\n", &o), 0);
	assert_int_equal(o.ngwaddrs, 2);
	assert_int_equal(o.gwaddrs[1].port, 22);
	assert_int_equal(args_targets_line("exception 192.168.1.50:3142", &o), 0);
	assert_int_equal(o.nclosed, 1);
	assert_int_equal(o.closed[0].port, 3142);
	assert_int_equal(args_targets_line("lan 192.168.77.0/24\n", &o), 0);
	assert_int_equal(o.ntargets, 2);
	assert_int_equal(o.targets[0].addr.a[3], 1);
	assert_int_equal(o.targets[1].addr.a[3], 2);
	assert_int_equal(args_targets_line("gatewy 1.2.3.4", &o), -1);
	assert_int_equal(args_targets_line("gateway 1.2.3.4 extra", &o), -1);
	assert_int_equal(args_targets_line("gateway nothost", &o), -1);
	/* An IPv6 LAN prefix: ::1, ::2 and ::10 of it. */
	assert_int_equal(args_targets_line("lan 2001:db8:77::/64", &o), 0);
	assert_int_equal(o.ntargets, 5);
	assert_int_equal(o.targets[2].addr.family, AF_INET6);
	assert_int_equal(o.targets[2].addr.a[15], 1);
	assert_int_equal(o.targets[3].addr.a[15], 2);
	assert_int_equal(o.targets[4].addr.a[15], 0x10);
	assert_int_equal(o.targets[4].addr.a[5], 0x77);
	assert_int_equal(o.targets[4].port, 0);
	assert_int_equal(args_targets_line("lan 2001:db8::/121", &o), -1);
	assert_int_equal(args_targets_line("lan 2001:db8::1/64", &o), -1);
	assert_int_equal(args_targets_line("lan 192.168.1.0/31", &o), -1);
	assert_int_equal(o.ntargets, 5);
	/* A prefix that no longer fits changes nothing. */
	o.ntargets = CC_MAXLIST - 2;
	assert_int_equal(args_targets_line("lan fd00::/64", &o), -2);
	assert_int_equal(o.ntargets, CC_MAXLIST - 2);
	/* A routed IPv6 network: kept as a prefix, sampled by plan.c. */
	assert_int_equal(args_targets_line("routed 2001:db8:1b::/64\n", &o), 0);
	assert_int_equal(args_targets_line("routed 2001:db8:5600::/56", &o), 0);
	assert_int_equal(o.nrouted, 2);
	assert_int_equal(o.routed[0].plen, 64);
	assert_int_equal(o.routed[0].addr.a[5], 0x1b);
	assert_int_equal(o.routed[1].plen, 56);
	assert_int_equal(args_targets_line("routed 2001:db8:1b::1/64", &o), -1);
	assert_int_equal(args_targets_line("routed 192.168.1.0/24", &o), -1);
	assert_int_equal(args_targets_line("routed 2001:db8::/121", &o), -1);
	assert_int_equal(args_targets_line("routed 2000::/7", &o), -1);
	assert_int_equal(o.nrouted, 2);
	o.nrouted = CC_MAXLIST;
	assert_int_equal(args_targets_line("routed fd00::/64", &o), -2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quick_sweep),
		cmocka_unit_test(targets),
		cmocka_unit_test(targets_file_lines),
		cmocka_unit_test(bad_targets),
		cmocka_unit_test(hostports),
		cmocka_unit_test(numbers_and_modes),
	};
	return cmocka_run_group_tests_name("cc_args", tests, NULL, NULL);
}
