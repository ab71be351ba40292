/*
 * test_dnsd_mirror.c -- what dnsd knows its sets hold: an address covers
 * an answer only once its addition is confirmed, only for its sandbox,
 * only until its expiry, and a later addition in flight (which may set a
 * shorter timeout) uncovers it until that one is confirmed.  Eviction and
 * clearing only ever uncover.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "mirror.h"

static struct moat_addr
ip(int last)
{
	struct moat_addr a = { .family = 2 /* AF_INET */ };

	a.a[0] = 203; a.a[1] = 0; a.a[2] = 113; a.a[3] = (uint8_t)last;
	return a;
}

static void
confirmed_only(void **state)
{
	struct mirror *m = mirror_new(64);
	struct moat_addr a = ip(10);

	(void)state;
	assert_false(mirror_covers(m, "web", &a, 1, 1000));
	mirror_sent(m, "web", &a, 1, 0);
	assert_false(mirror_covers(m, "web", &a, 1, 1000));	/* in flight */
	mirror_acked(m, "web", &a, 1, 60000);
	assert_true(mirror_covers(m, "web", &a, 1, 60000));
	assert_false(mirror_covers(m, "web", &a, 1, 60001));	/* past expiry */
	assert_false(mirror_covers(m, "dev", &a, 1, 1000));	/* other sandbox */
	assert_false(mirror_covers(m, "web", &a, 0, 1000));	/* nothing to cover */
	mirror_free(m);
}

static void
later_request_wins(void **state)
{
	struct mirror *m = mirror_new(64);
	struct moat_addr a = ip(10);

	(void)state;
	mirror_sent(m, "web", &a, 1, 0);
	mirror_acked(m, "web", &a, 1, 300000);
	mirror_sent(m, "web", &a, 2, 0);		/* may carry a shorter timeout */
	assert_false(mirror_covers(m, "web", &a, 1, 1000));
	mirror_acked(m, "web", &a, 1, 300000);	/* a stale confirmation */
	assert_false(mirror_covers(m, "web", &a, 1, 1000));
	mirror_acked(m, "web", &a, 2, 60000);
	assert_true(mirror_covers(m, "web", &a, 1, 60000));
	assert_false(mirror_covers(m, "web", &a, 1, 60001));
	mirror_free(m);
}

static void
every_address(void **state)
{
	struct mirror *m = mirror_new(64);
	struct moat_addr a[3] = { ip(1), ip(2), ip(3) };
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		mirror_sent(m, "web", &a[i], 7, 0);
		mirror_acked(m, "web", &a[i], 7, 90000);
	}
	assert_true(mirror_covers(m, "web", a, 2, 90000));
	assert_false(mirror_covers(m, "web", a, 3, 1000));	/* .3 unknown */
	mirror_clear(m);
	assert_false(mirror_covers(m, "web", a, 1, 1000));
	mirror_free(m);
}

static void
eviction_uncovers(void **state)
{
	struct mirror *m = mirror_new(16);
	struct moat_addr a;
	int i, covered = 0;

	(void)state;
	/* Far more pairs than slots: each stays correct or is forgotten. */
	for (i = 0; i < 200; i++) {
		a = ip(i);
		mirror_sent(m, i % 2 ? "web" : "dev", &a, (uint32_t)i + 1, 0);
		mirror_acked(m, i % 2 ? "web" : "dev", &a, (uint32_t)i + 1,
		    100000 + (uint64_t)i);
	}
	for (i = 0; i < 200; i++) {
		a = ip(i);
		if (mirror_covers(m, i % 2 ? "web" : "dev", &a, 1, 100000))
			covered++;
		assert_false(mirror_covers(m, i % 2 ? "web" : "dev", &a, 1,
		    100001 + (uint64_t)i));
		assert_false(mirror_covers(m, i % 2 ? "dev" : "web", &a, 1, 0));
	}
	assert_true(covered > 0 && covered <= 16);
	mirror_free(m);
}

/* A later addition must never end sooner than what earlier answers were
 * promised, whether their request is confirmed yet or still in flight. */
static void
promise_kept(void **state)
{
	struct mirror *m = mirror_new(64);
	struct moat_addr a = ip(1), b[2] = { ip(1), ip(2) };

	(void)state;
	assert_int_equal(mirror_promised(m, "web", &a, 1), 0);
	mirror_sent(m, "web", &a, 1, 301000);
	assert_int_equal(mirror_promised(m, "web", &a, 1), 301000);
	mirror_sent(m, "web", &a, 2, 61000);	/* shorter, sent later */
	assert_int_equal(mirror_promised(m, "web", &a, 1), 301000);
	mirror_acked(m, "web", &a, 2, 61000);
	mirror_acked(m, "web", &a, 1, 301000);	/* stale, but relied on */
	assert_int_equal(mirror_promised(m, "web", &a, 1), 301000);
	assert_int_equal(mirror_promised(m, "web", b, 2), 301000);
	assert_int_equal(mirror_promised(m, "dev", &a, 1), 0);
	mirror_clear(m);	/* what is in the set: forgotten; promises: not */
	assert_false(mirror_covers(m, "web", &a, 1, 1000));
	assert_int_equal(mirror_promised(m, "web", &a, 1), 301000);
	mirror_acked(m, "web", &a, 2, 400000);	/* from before the clear */
	assert_false(mirror_covers(m, "web", &a, 1, 1000));
	mirror_free(m);
}

/* An answer may wait for a request in flight only if that request adds
 * every one of its addresses, is the last sent for each, and lasts long
 * enough. */
static void
inflight_joins(void **state)
{
	struct mirror *m = mirror_new(64);
	struct moat_addr b[3] = { ip(1), ip(2), ip(3) };

	(void)state;
	assert_int_equal(mirror_inflight(m, "web", b, 2, 1000), 0);
	mirror_sent(m, "web", &b[0], 5, 301000);
	mirror_sent(m, "web", &b[1], 5, 301000);
	assert_int_equal(mirror_inflight(m, "web", b, 2, 301000), 5);
	assert_int_equal(mirror_inflight(m, "web", b, 2, 301001), 0);	/* short */
	assert_int_equal(mirror_inflight(m, "web", b, 3, 1000), 0);	/* .3 not */
	assert_int_equal(mirror_inflight(m, "dev", b, 2, 1000), 0);
	mirror_sent(m, "web", &b[1], 6, 301000);	/* two requests */
	assert_int_equal(mirror_inflight(m, "web", b, 2, 1000), 0);
	assert_int_equal(mirror_inflight(m, "web", &b[1], 1, 1000), 6);
	mirror_acked(m, "web", &b[1], 6, 301000);	/* confirmed: covers */
	assert_int_equal(mirror_inflight(m, "web", &b[1], 1, 1000), 0);
	assert_true(mirror_covers(m, "web", &b[1], 1, 301000));
	mirror_clear(m);
	assert_int_equal(mirror_inflight(m, "web", b, 1, 1000), 0);
	mirror_free(m);
}

static enum mirror_fate
fates(const char *sandbox, void *arg)
{
	(void)arg;
	if (sandbox[0] == 'w')
		return MIRROR_KEEP;
	return sandbox[0] == 'd' ? MIRROR_RECHECK : MIRROR_GONE;
}

/* A gatewayd reload: kept sets stay covered; a changed allow list
 * uncovers its sandbox but keeps what was promised; a deleted set takes
 * its promises with it. */
static void
forget_by_fate(void **state)
{
	struct mirror *m = mirror_new(64);
	struct moat_addr a = ip(10);
	const char *sb[] = { "web", "dev", "gone" };
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		mirror_sent(m, sb[i], &a, (uint32_t)i + 1, 300000);
		mirror_acked(m, sb[i], &a, (uint32_t)i + 1, 300000);
	}
	assert_int_equal(mirror_forget(m, fates, NULL), 2);
	assert_true(mirror_covers(m, "web", &a, 1, 300000));
	assert_false(mirror_covers(m, "dev", &a, 1, 1000));
	assert_int_equal(mirror_promised(m, "dev", &a, 1), 300000);
	assert_false(mirror_covers(m, "gone", &a, 1, 1000));
	assert_int_equal(mirror_promised(m, "gone", &a, 1), 0);
	mirror_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forget_by_fate),
		cmocka_unit_test(confirmed_only),
		cmocka_unit_test(later_request_wins),
		cmocka_unit_test(every_address),
		cmocka_unit_test(eviction_uncovers),
		cmocka_unit_test(promise_kept),
		cmocka_unit_test(inflight_joins),
	};

	return cmocka_run_group_tests_name("dnsd_mirror", tests, NULL, NULL);
}
