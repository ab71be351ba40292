/*
 * test_gatewayd_seen.c -- the bounded views behind `gatewayd ctl refused`
 * and `ctl names`: entries group by destination with counts and times; a
 * full view gives its least recently met entry over and counts it; a
 * flood of a million unique names keeps the memory at the bound; views
 * of sandboxes no longer configured go; audit events of the nflog reader
 * and the proxy become refusals with the operator's reasons, and nothing
 * else does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../gatewayd/parent/seen.h"

static void
groups(void **state)
{
	struct seen_set s = { NULL, 0, 0 };
	struct seen_view *v;

	(void)state;
	seen_add(&s, "web", "a.example", SEEN_DNS, SEEN_WHY_LIST, 1, 100);
	seen_add(&s, "web", "a.example", SEEN_DNS, SEEN_WHY_LIST, 3, 105);
	seen_add(&s, "dev", "b.example", SEEN_DNS, SEEN_WHY_EGRESS_NONE, 1, 101);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.v[0].sandbox, "dev");	/* sorted */
	v = seen_find(&s, "web");
	assert_non_null(v);
	assert_int_equal(v->n, 1);
	assert_int_equal(v->e[0].count, 4);
	assert_int_equal(v->e[0].first, 100);
	assert_int_equal(v->e[0].last, 105);
	assert_string_equal(seen_why_str(v->e[0].why), "not on the allow list");
	assert_null(seen_find(&s, "other"));
	seen_add(&s, "", "x", SEEN_DNS, SEEN_WHY_LIST, 1, 1);	/* ignored */
	seen_add(&s, "web", "", SEEN_DNS, SEEN_WHY_LIST, 1, 1);
	assert_int_equal(s.n, 2);
	assert_int_equal(seen_find(&s, "web")->n, 1);
	seen_clear(&s);
}

static void
oldest_dropped(void **state)
{
	struct seen_set s = { NULL, 0, 0 };
	struct seen_view *v;
	char name[64];
	size_t i;

	(void)state;
	for (i = 0; i < SEEN_PER_SANDBOX; i++) {
		snprintf(name, sizeof(name), "n%zu.example", i);
		seen_add(&s, "web", name, SEEN_DNS, SEEN_WHY_LIST, 1,
		    (time_t)(1000 + i));
	}
	/* n0 is met again: n1 is now the least recently met. */
	seen_add(&s, "web", "n0.example", SEEN_DNS, SEEN_WHY_LIST, 1, 5000);
	seen_add(&s, "web", "new.example", SEEN_DNS, SEEN_WHY_LIST, 1, 5001);
	v = seen_find(&s, "web");
	assert_int_equal(v->n, SEEN_PER_SANDBOX);
	assert_int_equal(v->dropped, 1);
	for (i = 0; i < v->n; i++) {
		assert_string_not_equal(v->e[i].what, "n1.example");
		if (strcmp(v->e[i].what, "new.example") == 0) {
			assert_int_equal(v->e[i].count, 1);
			assert_int_equal(v->e[i].first, 5001);
		}
	}
	seen_clear(&s);
}

/* A guest flooding unique refused names: a million of them leave the
 * view at its bound, every one past it counted. */
static void
flood_bounded(void **state)
{
	struct seen_set s = { NULL, 0, 0 };
	char name[64];
	size_t i, bytes;

	(void)state;
	for (i = 0; i < 1000000; i++) {
		snprintf(name, sizeof(name), "x%zu.flood.example", i);
		seen_add(&s, "web", name, SEEN_DNS, SEEN_WHY_LIST, 1,
		    (time_t)(i / 1000));
	}
	bytes = seen_bytes(&s);
	assert_int_equal(seen_find(&s, "web")->n, SEEN_PER_SANDBOX);
	assert_int_equal(seen_find(&s, "web")->dropped,
	    1000000 - SEEN_PER_SANDBOX);
	assert_true(bytes <= sizeof(struct seen_view) +
	    SEEN_PER_SANDBOX * sizeof(struct seen_entry));
	print_message("1M unique names: %zu bytes held\n", bytes);
	seen_clear(&s);
}

/* With many sandboxes each view keeps fewer, the most recent. */
static void
limited(void **state)
{
	struct seen_set s = { NULL, 0, 0 };
	char name[64];
	size_t i;

	(void)state;
	for (i = 0; i < SEEN_PER_SANDBOX; i++) {
		snprintf(name, sizeof(name), "n%zu.example", i);
		seen_add(&s, "web", name, SEEN_DNS, SEEN_WHY_LIST, 1, (time_t)i);
	}
	seen_limit(&s, 5000);		/* 65536 / 5000: 13, so the floor */
	assert_int_equal(seen_per(&s), SEEN_PER_SANDBOX_MIN);
	assert_int_equal(seen_find(&s, "web")->n, SEEN_PER_SANDBOX_MIN);
	assert_int_equal(seen_find(&s, "web")->dropped,
	    SEEN_PER_SANDBOX - SEEN_PER_SANDBOX_MIN);
	for (i = 0; i < SEEN_PER_SANDBOX_MIN; i++)
		assert_true(seen_find(&s, "web")->e[i].last >=
		    SEEN_PER_SANDBOX - SEEN_PER_SANDBOX_MIN);
	seen_add(&s, "web", "new.example", SEEN_DNS, SEEN_WHY_LIST, 1, 9999);
	assert_int_equal(seen_find(&s, "web")->n, SEEN_PER_SANDBOX_MIN);
	seen_limit(&s, 500);		/* 131 */
	assert_int_equal(seen_per(&s), 131);
	seen_limit(&s, 3);
	assert_int_equal(seen_per(&s), SEEN_PER_SANDBOX);
	seen_clear(&s);
}

static bool
keep_web(void *arg, const char *sandbox)
{
	(void)arg;
	return strcmp(sandbox, "web") == 0;
}

static void
pruned(void **state)
{
	struct seen_set s = { NULL, 0, 0 };

	(void)state;
	seen_add(&s, "web", "a.example", SEEN_DNS, SEEN_WHY_LIST, 1, 1);
	seen_add(&s, "gone", "a.example", SEEN_DNS, SEEN_WHY_LIST, 1, 1);
	seen_prune(&s, keep_web, NULL);
	assert_int_equal(s.n, 1);
	assert_non_null(seen_find(&s, "web"));
	seen_clear(&s);
}

struct parsed {
	bool		 ok;
	char		 sandbox[33], what[SEEN_WHAT_LEN];
	enum seen_source src;
	enum seen_why	 why;
};

static struct parsed
parse(const char *json)
{
	struct parsed p;

	memset(&p, 0, sizeof(p));
	p.ok = seen_parse_audit(json, p.sandbox, sizeof(p.sandbox), p.what,
	    sizeof(p.what), &p.src, &p.why);
	return p;
}

static void
audit_events(void **state)
{
	struct parsed p;

	(void)state;
	p = parse("{\"source\":\"nflog\",\"event\":\"refusal\",\"reason\":"
	    "\"allowlist\",\"sandbox\":\"web\",\"src\":\"10.77.0.10\",\"dst\":"
	    "\"203.0.113.80\",\"proto\":\"tcp\",\"port\":443}");
	assert_true(p.ok);
	assert_string_equal(p.sandbox, "web");
	assert_string_equal(p.what, "203.0.113.80:443");
	assert_int_equal(p.src, SEEN_KERNEL);
	assert_int_equal(p.why, SEEN_WHY_LIST);
	p = parse("{\"source\":\"nflog\",\"event\":\"refusal\",\"reason\":"
	    "\"private\",\"sandbox\":\"web\",\"dst\":\"192.168.77.5\","
	    "\"proto\":\"udp\",\"port\":161}");
	assert_true(p.ok);
	assert_string_equal(p.what, "192.168.77.5:161/udp");
	assert_int_equal(p.why, SEEN_WHY_PRIVATE);
	/* Spoofing names no sandbox an operator could widen. */
	assert_false(parse("{\"source\":\"nflog\",\"event\":\"refusal\","
	    "\"reason\":\"spoof\",\"sandbox\":\"\",\"dst\":\"1.2.3.4\"}").ok);
	p = parse("{\"source\":\"proxy\",\"worker\":0,\"event\":\"refuse\","
	    "\"sandbox\":\"web\",\"src\":\"10.77.0.10\",\"host\":"
	    "\"evil.example\",\"port\":443,\"reason\":\"name not on the "
	    "allowlist\"}");
	assert_true(p.ok);
	assert_string_equal(p.what, "evil.example");
	assert_int_equal(p.src, SEEN_PROXY);
	assert_int_equal(p.why, SEEN_WHY_LIST);
	p = parse("{\"source\":\"proxy\",\"worker\":1,\"event\":\"refuse\","
	    "\"sandbox\":\"web\",\"host\":\"a.example\",\"port\":8443,"
	    "\"reason\":\"a port not in the sandbox's allow_ports\"}");
	assert_true(p.ok);
	assert_string_equal(p.what, "a.example:8443");
	assert_int_equal(p.why, SEEN_WHY_PORT);
	p = parse("{\"source\":\"proxy\",\"event\":\"request-refused\","
	    "\"sandbox\":\"web\",\"host\":\"api.example\",\"secret\":\"k\","
	    "\"reason\":\"no rule matches\"}");
	assert_true(p.ok);
	assert_int_equal(p.why, SEEN_WHY_RULE);
	/* A malformed request is not a refusal of the policy. */
	assert_false(parse("{\"source\":\"proxy\",\"event\":\"refuse\","
	    "\"sandbox\":\"web\",\"reason\":\"malformed Host\"}").ok);
	/* Other sources may not pass off refusals as the kernel's. */
	assert_false(parse("{\"source\":\"dnsd\",\"event\":\"refusal\","
	    "\"reason\":\"allowlist\",\"sandbox\":\"web\",\"dst\":\"1.2.3.4\"}").ok);
	/* A guest's name holding a key cannot forge another field. */
	p = parse("{\"source\":\"proxy\",\"event\":\"refuse\",\"sandbox\":"
	    "\"web\",\"host\":\"x\\\",\\\"sandbox\\\":\\\"dev\",\"reason\":"
	    "\"name not on the allowlist\"}");
	assert_true(p.ok);
	assert_string_equal(p.sandbox, "web");
	assert_string_equal(p.what, "x\",\"sandbox\":\"dev");
}

static void
json_fields(void **state)
{
	char out[16];

	(void)state;
	assert_true(seen_json_field("{\"a\":\"x\\u0041\\\\\"}", "a", out,
	    sizeof(out)));
	assert_string_equal(out, "xA\\");
	assert_true(seen_json_field("{\"n\":42}", "n", out, sizeof(out)));
	assert_string_equal(out, "42");
	assert_false(seen_json_field("{\"a\":\"unterminated", "a", out,
	    sizeof(out)));
	assert_false(seen_json_field("{\"a\":\"0123456789abcdefXYZ\"}", "a",
	    out, sizeof(out)));
	assert_false(seen_json_field("{\"b\":1}", "a", out, sizeof(out)));
}

/* Issue 40 finding 2: a name a guest resolved never reaches the list. */
static void
as_allow(void **state)
{
	const char *names[] = {
		"zzzz.evil.test\"]allow_ports=[\"tcp/22\",\"tcp/80\",\"tcp/443",
		"open.test", "A.github.test.", "a.github.test", "*.wide.test",
		"@go", "line\nbreak.test", "back\\slash.test", "b.test:tcp/22",
	};
	char *out, out2[64];

	(void)state;
	out = seen_as_allow(names, sizeof(names) / sizeof(names[0]));
	assert_string_equal(out,
	    "allow = [ \"a.github.test\", \"open.test\" ];\n"
	    "# left out, not valid allow entries (as resolved, escaped):\n"
	    "#   \"zzzz.evil.test\\\"]allow_ports=[\\\"tcp/22\\\",\\\"tcp/80\\\","
	    "\\\"tcp/443\"\n"
	    "#   \"*.wide.test\"\n"
	    "#   \"@go\"\n"
	    "#   \"line\\u000abreak.test\"\n"
	    "#   \"back\\\\slash.test\"\n"
	    "#   \"b.test:tcp/22\"\n");
	free(out);
	out = seen_as_allow(NULL, 0);
	assert_string_equal(out, "allow = [ ];\n");
	free(out);
	assert_true(seen_allow_name("Pypi.ORG", out2, sizeof(out2)));
	assert_string_equal(out2, "pypi.org");
	out = seen_shown("a\"b\\c\rd");
	assert_string_equal(out, "a\\\"b\\\\c\\u000dd");
	free(out);
}

static void
destinations(void **state)
{
	struct seen_entry e;
	struct parsed p;

	(void)state;
	memset(&e, 0, sizeof(e));
	e.source = SEEN_KERNEL;
	snprintf(e.what, sizeof(e.what), "10.77.0.1:22");
	assert_int_equal(seen_dst_len(&e), 9);
	snprintf(e.what, sizeof(e.what), "10.77.0.1:161/udp");
	assert_int_equal(seen_dst_len(&e), 9);
	snprintf(e.what, sizeof(e.what), "[2001:db8::1]:22");
	assert_int_equal(seen_dst_len(&e), 13);
	snprintf(e.what, sizeof(e.what), "2001:db8::1");
	assert_int_equal(seen_dst_len(&e), 11);
	e.source = SEEN_PROXY;
	snprintf(e.what, sizeof(e.what), "a.example:8443");
	assert_int_equal(seen_dst_len(&e), 14);
	p = parse("{\"source\":\"nflog\",\"event\":\"refusal\",\"reason\":"
	    "\"guest\",\"sandbox\":\"web\",\"dst\":\"2001:db8::7\","
	    "\"proto\":\"tcp\",\"port\":22}");
	assert_true(p.ok);
	assert_string_equal(p.what, "[2001:db8::7]:22");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(groups),
		cmocka_unit_test(oldest_dropped),
		cmocka_unit_test(flood_bounded),
		cmocka_unit_test(pruned),
		cmocka_unit_test(limited),
		cmocka_unit_test(audit_events),
		cmocka_unit_test(json_fields),
		cmocka_unit_test(as_allow),
		cmocka_unit_test(destinations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
