/*
 * test_gatewayd_promise.c -- gatewayd's record of what it promised each
 * allowlist set: a later, shorter addition is raised to what is still
 * promised, never cut; promises lapse when they expire; a reload voids
 * them only for the sandboxes whose sets it deleted; and the table stays
 * within its bounds, refusing rather than forgetting a live promise.
 */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "promise.h"

static struct moat_addr
ip(int third, int last)
{
	struct moat_addr a = { .family = AF_INET };

	a.a[0] = 203; a.a[1] = 0; a.a[2] = (uint8_t)third; a.a[3] = (uint8_t)last;
	return a;
}

/* plan then commit, as handle_set_add does; returns plan's result. */
static int
add(struct promises *p, const char *sb, const struct moat_addr *a, size_t n,
    uint32_t tmo, uint64_t now, uint32_t *out)
{
	int rc = promises_plan(p, sb, a, NULL, n, tmo, now, out);

	if (rc == 0)
		promises_commit(p, sb, a, NULL, n, out, now);
	return rc;
}

static void
never_shortened(void **state)
{
	struct promises *p = promises_new(1024, 1024);
	struct moat_addr a[2] = { ip(113, 14), ip(113, 15) };
	uint32_t out[2];

	(void)state;
	assert_int_equal(add(p, "web", a, 1, 3600000, 1000, out), 0);
	assert_int_equal(out[0], 3600000);
	/* Ten minutes on, a short answer for the same address and a new one. */
	assert_int_equal(add(p, "web", a, 2, 61000, 601000, out), 0);
	assert_int_equal(out[0], 3000000);	/* raised to what is left */
	assert_int_equal(out[1], 61000);	/* nothing promised: as asked */
	/* A longer one is sent as asked and becomes the promise. */
	assert_int_equal(add(p, "web", a, 1, 3600000, 700000, out), 0);
	assert_int_equal(out[0], 3600000);
	assert_int_equal(promises_left(p, "web", &a[0], 700000), 3600000);
	/* Per sandbox: dev's set is another set. */
	assert_int_equal(add(p, "dev", a, 1, 61000, 700000, out), 0);
	assert_int_equal(out[0], 61000);
	promises_free(p);
}

/* An IPv6 address is its own promise (allow6_), never confused with an
 * IPv4 address that shares its first four bytes. */
static void
v6_keyed(void **state)
{
	struct promises *p = promises_new(1024, 1024);
	struct moat_addr a[2] = { ip(113, 14), { .family = AF_INET6 } };
	uint32_t out[2];

	(void)state;
	memcpy(a[1].a, a[0].a, 4);		/* cb00:710e:: */
	a[1].a[15] = 1;
	assert_int_equal(add(p, "web", a, 1, 3600000, 1000, out), 0);
	assert_int_equal(promises_left(p, "web", &a[1], 1000), 0);
	assert_int_equal(add(p, "web", &a[1], 1, 61000, 1000, out), 0);
	assert_int_equal(out[0], 61000);	/* not the IPv4 hour */
	assert_int_equal(add(p, "web", &a[1], 1, 30000, 11000, out), 0);
	assert_int_equal(out[0], 51000);	/* its own promise, kept */
	assert_int_equal(promises_left(p, "web", &a[1], 11000), 51000);
	assert_int_equal(promises_left(p, "web", &a[0], 11000), 3590000);
	promises_free(p);
}

static void
lapse(void **state)
{
	struct promises *p = promises_new(1024, 1024);
	struct moat_addr a = ip(113, 14);
	uint32_t out;

	(void)state;
	assert_int_equal(add(p, "web", &a, 1, 61000, 0, &out), 0);
	assert_int_equal(promises_left(p, "web", &a, 60999), 1);
	assert_int_equal(promises_left(p, "web", &a, 61000), 0);
	assert_int_equal(add(p, "web", &a, 1, 5000, 61000, &out), 0);
	assert_int_equal(out, 5000);		/* the old promise is over */
	promises_free(p);
}

static struct moat_config *
config(const char *web_egress, bool with_dev)
{
	static struct moat_sandbox sbs[2][2];
	static struct moat_config cfgs[2];
	static int k;
	struct moat_config *c = &cfgs[k];
	struct moat_sandbox *s = sbs[k];

	k ^= 1;
	memset(c, 0, sizeof(*c));
	memset(s, 0, 2 * sizeof(*s));
	s[0].name = "web";
	s[0].egress = strcmp(web_egress, "open") == 0 ? EGRESS_OPEN :
	    EGRESS_ALLOWLIST;
	s[1].name = "dev";
	s[1].egress = EGRESS_ALLOWLIST;
	c->sandboxes = s;
	c->nsandboxes = with_dev ? 2 : 1;
	return c;
}

static void
reload_voids_deleted_sets_only(void **state)
{
	struct promises *p = promises_new(1024, 1024);
	struct moat_addr a = ip(113, 14);
	struct moat_config *old, *new;
	uint32_t out;

	(void)state;
	add(p, "web", &a, 1, 3600000, 0, &out);
	add(p, "dev", &a, 1, 3600000, 0, &out);
	/* web stays allowlist, dev is removed. */
	old = config("allowlist", true);
	new = config("allowlist", false);
	promises_reload(p, old, new);
	assert_int_equal(promises_left(p, "web", &a, 1000), 3599000);
	assert_int_equal(promises_left(p, "dev", &a, 1000), 0);
	assert_int_equal(promises_count(p), 1);
	/* web goes open: its set is deleted. */
	old = config("allowlist", false);
	new = config("open", false);
	promises_reload(p, old, new);
	assert_int_equal(promises_left(p, "web", &a, 1000), 0);
	assert_int_equal(promises_count(p), 0);
	promises_free(p);
}

/* An allow list that lost a name: gatewayd empties the set, so its
 * promises go; one that only gained names keeps them. */
static void
narrowed_voids(void **state)
{
	static char *two[] = { "pypi.org", "*.github.test" };
	static char *three[] = { "*.github.test", "open.test", "pypi.org" };
	struct moat_sandbox o = { .name = "web", .egress = EGRESS_ALLOWLIST,
	    .allow = { two, 2 } };
	struct moat_sandbox n = o;
	struct moat_config oc = { .sandboxes = &o, .nsandboxes = 1 };
	struct moat_config nc = { .sandboxes = &n, .nsandboxes = 1 };
	struct promises *p = promises_new(1024, 1024);
	struct moat_addr a = ip(113, 14);
	uint32_t out;

	(void)state;
	add(p, "web", &a, 1, 3600000, 0, &out);
	n.allow = (struct moat_strlist){ three, 3 };	/* widened */
	promises_reload(p, &oc, &nc);
	assert_int_equal(promises_left(p, "web", &a, 0), 3600000);
	o.allow = n.allow;
	n.allow = (struct moat_strlist){ two, 1 };	/* lost two names */
	promises_reload(p, &oc, &nc);
	assert_int_equal(promises_left(p, "web", &a, 0), 0);
	promises_free(p);
}

static void
bounded(void **state)
{
	struct promises *p = promises_new(64, 16);
	struct moat_addr a[20];
	uint32_t out[20];
	int i;

	(void)state;
	for (i = 0; i < 20; i++)
		a[i] = ip(113, i + 1);
	/* One sandbox may hold no more than its share... */
	assert_int_equal(add(p, "web", a, 16, 61000, 0, out), 0);
	assert_int_equal(add(p, "web", &a[16], 1, 61000, 0, out), -1);
	/* ...while an address it already has is still raised, not refused. */
	assert_int_equal(add(p, "web", a, 1, 1000, 1000, out), 0);
	assert_int_equal(out[0], 60000);
	/* The whole table: four sandboxes of 16 fill 64. */
	assert_int_equal(add(p, "dev", a, 16, 61000, 0, out), 0);
	assert_int_equal(add(p, "ci", a, 16, 61000, 0, out), 0);
	assert_int_equal(add(p, "lab", a, 16, 61000, 0, out), 0);
	assert_int_equal(promises_count(p), 64);
	assert_int_equal(add(p, "more", a, 1, 61000, 0, out), -1);
	/* Once they expire, room comes back. */
	assert_int_equal(add(p, "more", a, 1, 61000, 61000, out), 0);
	assert_true(promises_count(p) <= 64);
	promises_forget(p, "more");
	assert_int_equal(promises_left(p, "more", a, 61000), 0);
	promises_free(p);
}

static void
many_grow(void **state)
{
	struct promises *p = promises_new(PROMISE_MAX, PROMISE_PER_SANDBOX);
	struct moat_addr a;
	uint32_t out;
	int i;

	(void)state;
	for (i = 0; i < 10000; i++) {
		a = ip(i / 250, i % 250);
		assert_int_equal(add(p, "web", &a, 1, 60000 + (uint32_t)i, 0,
		    &out), 0);
	}
	assert_int_equal(promises_count(p), 10000);
	for (i = 0; i < 10000; i += 997) {
		a = ip(i / 250, i % 250);
		assert_int_equal(promises_left(p, "web", &a, 0),
		    60000 + (uint64_t)i);
	}
	promises_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(never_shortened),
		cmocka_unit_test(v6_keyed),
		cmocka_unit_test(lapse),
		cmocka_unit_test(reload_voids_deleted_sets_only),
		cmocka_unit_test(narrowed_voids),
		cmocka_unit_test(bounded),
		cmocka_unit_test(many_grow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
